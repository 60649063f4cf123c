"""``mudata init``, step 5: the drafted entry as TOML, with the evidence as comments.

Written by hand rather than with a TOML library, so that each choice carries
its comment (a class's count, the sampling rate's evidence, the hashes' kind).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mudata.display import plain
from mudata.records.classes import code_text


def toml_value(value: Any) -> str:
    """``value`` (bool, number, text, list or table) as an inline TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string, every unprintable character as a ``\\u`` escape.

    JSON's escapes are TOML's for C0 controls; DEL, C1 controls and bidi or other
    format characters (a label, a column name) are escaped as well, which TOML
    requires of DEL and which keeps the draft readable in an editor.
    """
    body = json.dumps(text, ensure_ascii=False)
    if body.isprintable():
        return body
    return "".join(
        c if c.isprintable() else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
        for c in body
    )


def toml_key(key: str) -> str:
    """``key`` bare when TOML allows it, else quoted."""
    return key if re.match(r"^[A-Za-z0-9_-]+$", key) else _toml_string(key)


def _table(
    header: str, values: dict[str, Any], comments: dict[str, str] | None = None
) -> list[str]:
    lines = [header] if header else []
    for key, value in values.items():
        note = f"  # {plain(comments[key])}" if comments and key in comments else ""
        lines.append(f"{toml_key(key)} = {toml_value(value)}{note}")
    return lines


def _evidence(lines: list[str], most: int = 60) -> list[str]:
    """What init left out and why, as comments (the first ``most`` lines)."""
    # A column name may hold a line break or a control, which TOML refuses in a
    # comment (and a line break would end it): escaped (display.plain).
    shown = ["# " + plain(line) for line in lines[:most]]
    if len(lines) > most:
        shown.append(f"#   ... and {len(lines) - most} more lines: see the report of mudata init")
    return shown


def to_toml(data: dict[str, Any], counts: dict[str, int], notes: dict[str, Any]) -> str:
    """The entry as TOML, with comments carrying the evidence for each choice.

    ``notes``: ``from`` (the files), ``rate`` (the rate's evidence) and,
    optionally, ``options`` (a comment per reader option), ``evidence``
    (lines saying what was left out and why, written after the reader options)
    and ``sensors`` (why each sensor was grouped so, beside its ``features``).
    """
    top = {k: v for k, v in data.items() if not isinstance(v, dict | list)}
    licence = data["licence"]
    lines = [
        f"# Drafted by `mudata init` from {plain(notes['from'])}. Check every value, edit, then:",
        f"#   mudata register {data['name']}.toml",
        *_table(
            "",
            top,
            {
                "sampling_rate_hz": notes["rate"],
                "min_per_class": "the user filter keeps users with this many rows (windows) of every class",
            },
        ),
        'licence = {{ name = "{}", title = "{}" }}'.format(licence["name"], licence["title"])
        + '  # an SPDX id such as "CC-BY-4.0", or the terms as a LicenseRef table',
        "",
        *_table("[reader_options]", data["reader_options"], notes.get("options")),
        *_evidence(notes.get("evidence", [])),
        "",
        *_table("[recipe]", data["recipe"]),
    ]
    reasons = notes.get("sensors", [])
    for number, sensor in enumerate(data.get("sensors", [])):
        why = {"features": reasons[number]} if number < len(reasons) else None
        lines += ["", *_table("[[sensors]]", sensor, why)]
    for spec in data["classes"]:
        lines += [
            "",
            *_table("[[classes]]", spec, {"name": f"{counts[code_text(spec['code'])]} rows"}),
        ]
    left_out = notes.get("left_out", [])
    if left_out:
        lines += [
            "",
            "# Classes left out: `mudata fetch` drops the rows of every code not listed",
            "# above (and counts them). To keep one, move it back into [[classes]].",
        ]
        for spec in left_out:
            count = counts[code_text(spec["code"])]
            lines += [
                f"# [[classes]]  # {count} rows; {plain(spec['why'])}",
                f"# code = {toml_value(spec['code'])}",
                f"# name = {toml_value(spec['name'])}",
            ]
    for spec in data["files"]:
        members = spec.get("members", [])
        fields = {k: v for k, v in spec.items() if k != "members"}
        lines += [
            "",
            *_table(
                "[[files]]",
                fields,
                {"hashes": "pinned on first use by mudata init, not published hashes"},
            ),
        ]
        for member in members:
            lines += ["", *_table("[[files.members]]", member)]
    return "\n".join(lines) + "\n"


__all__ = ["to_toml", "toml_key", "toml_value"]
