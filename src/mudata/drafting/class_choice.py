"""``mudata init``: the classes of a draft, and those it leaves out.

Owns the ``[[classes]]`` drafted from every label the reader sees (with its
count, and the labels written differently one code stands for), and the
classes left out of them: flagged as no activity
(:func:`mudata.drafting.nulls.null_classes`), named by ``--drop-class``, or
held by fewer than 2 users; ``--keep-class`` keeps one back; and how the
report says why.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from mudata.display import shown
from mudata.drafting.nulls import Flagged, class_runs, null_classes
from mudata.drafting.preview import as_built
from mudata.drafting.records import Choices
from mudata.drafting.windows import classes_of_too_few_users
from mudata.errors import MudataUsageError as UsageError
from mudata.readers import get_reader
from mudata.readers.base import RawTable
from mudata.readers.sources import Sources
from mudata.records.classes import (
    code_text,
    folded_codes,
    is_numeric_column,
    user_sort_key,
)
from mudata.records.entry import DatasetEntry
from mudata.registry.lookup import parse_entry

__all__ = [
    "FEW_USERS",
    "classes_of_few_users",
    "drafted_classes",
    "left_out_classes",
    "left_out_note",
]


def _code_value(text: str, numeric: bool) -> str | int:
    """A class code as the draft writes it: a whole number in a numeric column, else text."""
    if numeric and re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def drafted_classes(
    entry_data: dict[str, Any], sources: Sources
) -> tuple[list[dict[str, Any]], dict[str, int], RawTable, dict[str, list[str]]]:
    """Every label the reader sees, with its count, as ``[[classes]]`` (code = name);
    the reader's table (the reader reads the same whatever the classes); and the labels
    written differently that one code stands for (:func:`mudata.records.classes.folded_codes`)."""
    probe = parse_entry(
        {**entry_data, "classes": [{"code": "_a", "name": "_a"}, {"code": "_b", "name": "_b"}]}
    )
    raw = get_reader(probe.reader)(probe, sources)
    labels = raw.frame["label"]
    numeric = is_numeric_column(labels)
    # Each distinct label named once (a release has millions of rows, a few labels).
    codes, uniques = pd.factorize(labels)
    names = [
        code_text(v) if not (numeric and isinstance(v, str)) else code_text(float(v))
        for v in uniques
    ]
    texts = pd.Series(np.array([*names, code_text(None)], dtype=object)[codes])
    counts = texts.value_counts()
    order = user_sort_key([c for c in counts.index if c != "<blank>"])
    classes = [{"code": _code_value(c, numeric), "name": c} for c in order]
    folded = folded_codes(uniques, numeric)
    return classes, {str(k): int(v) for k, v in counts.items()}, raw, folded


def _given_codes(given: tuple[str, ...], seen: list[str], option: str) -> list[str]:
    """The codes named by ``--drop-class``/``--keep-class``, as the draft writes them."""
    codes = []
    for code in given:
        text = code_text(_code_value(code.strip(), True))
        if text not in seen:
            shown_codes = ", ".join(seen)
            message = (
                f"mudata init: {option} {code!r}: no class has this code; the classes the "
                f"files hold: {shown_codes}"
            )
            raise UsageError(message)
        codes.append(text)
    return codes


def left_out_classes(
    classes: list[dict[str, Any]],
    counts: dict[str, int],
    documents: dict[str, str],
    choices: Choices,
    frame: pd.DataFrame | None = None,
) -> dict[str, str]:
    """Code (as text) to why the draft leaves the class out of ``[[classes]]``.

    Flagged classes (:func:`mudata.drafting.nulls.null_classes`) are left out
    unless ``--keep-class`` names them; ``--drop-class`` leaves out any other.
    """
    seen = [code_text(c["code"]) for c in classes]
    keep = _given_codes(choices.keep_class, seen, "--keep-class")
    drop = _given_codes(choices.drop_class, seen, "--drop-class")
    both = sorted(set(keep) & set(drop))
    if both:
        message = f"mudata init: class {both[0]} is given to both --keep-class and --drop-class"
        raise UsageError(message)
    kept_counts = {code: counts[code] for code in seen}
    # The reader's samples in file order: the runs of each class, per recording.
    runs = class_runs(frame["label"], frame.get("recording")) if frame is not None else None
    flagged: list[Flagged] = null_classes(kept_counts, documents, runs)
    left_out = {f.code: f.reason for f in flagged if f.code not in keep}
    if len(set(seen) - set(left_out)) < 2:
        # A guess that would leave no two classes to tell apart is not taken
        # (a two-class release whose code 0 holds most rows is not a null class);
        # only what the user asked for can then refuse the draft.
        left_out = {}
    left_out.update(dict.fromkeys(drop, "--drop-class"))
    if len(seen) < 2:
        # No option can help: a table of one class has nothing to tell apart.
        where = f" in column {shown(choices.label)}" if choices.label else ""
        message = (
            f"mudata init: the files hold one class{where} ({', '.join(seen) or 'none'}); "
            f"a dataset needs at least 2 classes to tell apart. Add the files of the other "
            f"classes, or name the column that holds the activity with --label COL"
        )
        raise UsageError(message)
    if len(seen) - len(left_out) < 2:
        message = (
            f"mudata init: leaving out class(es) {', '.join(left_out)} keeps fewer than 2 "
            f"classes of {', '.join(seen)}; keep one with --keep-class CODE"
        )
        raise UsageError(message)
    return left_out


#: How the reason of a class left out by :func:`classes_of_few_users` begins.
FEW_USERS = "fewer than 2 users have"


def classes_of_few_users(
    frame: pd.DataFrame,
    entry: DatasetEntry,
    rate: float,
    classes: list[dict[str, Any]],
    choices: Choices,
) -> dict[str, str]:
    """Code (as text) to why: the classes no window lets 2 users keep.

    The user filter keeps a user only with ``min_per_class`` windows of every
    class, and the build needs 2 users: a class that fewer than 2 users have
    enough windows of, even of 0.5 s (:func:`classes_of_too_few_users`),
    makes every table fail, whatever the window. Such classes are left out
    (``--keep-class`` keeps one), if at least 2 classes remain; an activity
    that one volunteer alone recorded cannot be tested on another user.
    """
    if not entry.recipe.window or entry.min_per_class < 1:
        return {}
    names = {c["name"]: code_text(c["code"]) for c in classes}
    keep = set(_given_codes(choices.keep_class, list(names.values()), "--keep-class"))
    few = classes_of_too_few_users(
        as_built(frame, entry), rate, entry.class_names, entry.min_per_class
    )
    few = {name: users for name, users in few.items() if names[name] not in keep}
    if not few or len(classes) - len(few) < 2:
        return {}
    return {
        names[name]: (
            f"{FEW_USERS} {entry.min_per_class} windows of it, even of 0.5 s "
            f"({'only ' + users[0] if users else 'no user'}): no window lets 2 users pass "
            f"the filter with it"
        )
        for name, users in few.items()
    }


def left_out_note(reason: str | None, code: object) -> str:
    if reason is None:
        return ""
    if reason == "--drop-class":
        return " (left out: --drop-class)"
    if reason.startswith(FEW_USERS):
        return f" (left out: {reason}; --keep-class {code} keeps it)"
    return f" (left out, not an activity: {reason}; --keep-class {code} keeps it)"
