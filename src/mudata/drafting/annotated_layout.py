"""``mudata init``, step 3': the reader options of signals labelled by an annotation table.

When the selection found an annotation table (:mod:`mudata.drafting.annotations`),
the signal files hold no label: the draft reads them with ``annotated-signals``
(:mod:`mudata.readers.annotations`). Here:

* the ``path_pattern`` names the numbers of the signal paths that are keys
  (``exp01`` -> ``experiment``, ``user01`` -> ``user``), and the part of the
  names that differs between files of one recording as the ``sensor``
  (``acc_``/``gyro_``: their channels are laid side by side);
* the channels are the signal columns of the first file, per sensor;
* the ``unit`` of the intervals is the one under which the first recording's
  intervals fall inside its samples and cover most of them: sample indices
  (1-based, or 0-based when an interval starts at 0), or the time column's
  clock;
* ``labels`` is written with every column the table needs.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from mudata.drafting.annotations import Annotation, path_numbers
from mudata.drafting.columns import find_roles, time_unit
from mudata.drafting.layout import time_rate
from mudata.drafting.records import Choices, Layout, Sniffed
from mudata.drafting.selection import Selection
from mudata.drafting.sensors import group_channels, report_lines
from mudata.errors import MudataUsageError as UsageError
from mudata.readers.intervals import key_text
from mudata.readers.time_columns import time_values

READER = "annotated-signals"


def _shared_ends(values: list[str]) -> tuple[str, str]:
    first, last = min(values), max(values)
    size = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), 0)
    prefix = first[:size]
    rest = [v[size:] for v in values]
    lo, hi = min(v[::-1] for v in rest), max(v[::-1] for v in rest)
    tail = next((i for i, (a, b) in enumerate(zip(lo, hi, strict=False)) if a != b), 0)
    return prefix, lo[:tail][::-1]


def path_pattern(members: list[str], annotation: Annotation) -> tuple[str, list[str], list[str]]:
    """The ``path_pattern`` of the signal files: key groups, and a ``sensor`` group
    when files of one recording differ by a word; the sensors; and the notes."""
    stems = [m[: len(m) - len(PurePosixPath(m).suffix)] for m in members]
    suffixes = {PurePosixPath(m).suffix for m in members}
    split = [re.split(r"(\d+)", s) for s in stems]
    if len({len(p) for p in split}) != 1:
        message = (
            f"mudata init: the signal files' names do not share one shape of numbers "
            f"({members[0]}, {members[-1]}), so the keys of {annotation.member} cannot be "
            f"found in them; give --path-pattern"
        )
        raise UsageError(message)
    places = {place: key for key, place in annotation.path_keys.items()}
    keys = [tuple(key_text(p[2 * k + 1]) for k in sorted(places)) for p in split]
    parts: list[str] = []
    sensors: list[str] = []
    notes: list[str] = []
    for j in range(len(split[0])):
        values = [p[j] for p in split]
        if j % 2:  # a number
            key = places.get(j // 2)
            parts.append(rf"(?P<{key}>\d+)" if key else r"\d+")
            continue
        if len(set(values)) == 1:
            parts.append(re.escape(values[0]))
            continue
        prefix, tail = _shared_ends(values)
        middles = [v[len(prefix) : len(v) - len(tail)] for v in values]
        by_middle: dict[str, set] = {}
        for middle, recording in zip(middles, keys, strict=True):
            by_middle.setdefault(middle, set()).add(recording)
        shared = len(by_middle) > 1 and len({frozenset(k) for k in by_middle.values()}) == 1
        simple = all(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", m) for m in by_middle)
        if shared and simple and not sensors:
            sensors = sorted(by_middle)
            parts.append(re.escape(prefix) + r"(?P<sensor>[A-Za-z][A-Za-z0-9]*?)" + re.escape(tail))
            notes.append(
                f"sensor: the word {'/'.join(sensors)} in the file names; the files of one "
                f"recording are laid side by side (channels <sensor>_<column>)"
            )
        else:
            parts.append(re.escape(prefix) + r"[^/]*?" + re.escape(tail))
    ext = "(?:" + "|".join(re.escape(s) for s in sorted(suffixes)) + ")"
    return r"(?:^|/)" + "".join(parts) + ext + "$", sensors, notes


def _unit(
    annotation: Annotation, first: pd.DataFrame, member: str, time_col: str | None
) -> tuple[str, int | None, str]:
    """The unit of the intervals (and the first sample's index), from the first recording."""
    table = annotation.table
    numbers = path_numbers(member)
    mask = np.ones(len(table), dtype=bool)
    for key, place in annotation.path_keys.items():
        mask &= table[key].map(key_text).to_numpy() == key_text(numbers[place][1])
    rows = np.ones(len(first), dtype=bool)
    for key in annotation.keys:
        column = annotation.columns.get(key, key)
        if key not in annotation.path_keys and column in first.columns:
            # A key that is a column: the first recording is its first value's rows.
            value = key_text(first[column].iloc[0])
            mask &= table[key].map(key_text).to_numpy() == value
            rows &= first[column].map(key_text).to_numpy() == value
    first = first[rows]
    mine = table[mask]
    if mine.empty:
        return "sample", 1, f"unit: sample indices (no interval names {member} to check)"
    start = pd.to_numeric(mine[annotation.start]).to_numpy(dtype=float)
    end = pd.to_numeric(mine[annotation.end]).to_numpy(dtype=float)
    n = len(first)
    fits: dict[str, float] = {}
    base = 0 if (pd.to_numeric(table[annotation.start]) == 0).any() else 1
    if annotation.whole and start.min() >= base and end.max() <= n - 1 + base:
        fits["sample"] = float(np.sum(end - start + 1)) / n
    clock = "s"
    if time_col:
        t = time_values(first[time_col], member, time_col)
        step = float(np.median(np.diff(t))) if n > 1 else 0.0
        named = time_unit(time_col)
        clock = named[0].lower() if named else ("s" if step < 1 else "ms")
        clock = {"sec": "s", "secs": "s", "seconds": "s", "msec": "ms", "millis": "ms"}.get(
            clock, clock
        )
        clock = clock if clock in ("s", "ms", "us", "ns") else "s"
        if start.min() >= t[0] - step and end.max() <= t[-1] + 1.5 * step:
            inside = np.zeros(n, dtype=bool)
            for lo, hi in zip(start, end, strict=True):
                inside |= (t >= lo) & (t < hi)
            fits[clock] = float(inside.mean())
    if not fits:
        message = (
            f"mudata init: the intervals of {annotation.member} for {member} (up to "
            f"{end.max():g}) fall outside its {n:,} samples"
            + (f" and its time column {time_col!r}" if time_col else "")
            + "; check that the table's keys name the right files"
        )
        raise UsageError(message)
    unit = max(fits, key=lambda u: fits[u])
    share = f"{100 * fits[unit]:.0f} % of {member}'s samples inside its intervals"
    if unit == "sample":
        how = (
            "0-based: an interval starts at 0"
            if base == 0
            else "1-based as no interval starts at 0; set labels.first = 0 if the release "
            "counts from 0"
        )
        note = f"unit: sample indices, {how}, both ends included ({share})"
    else:
        note = f"unit: {unit}, times of column {time_col!r}, start <= t < end ({share})"
    others = [u for u in fits if u != unit]
    if others:
        note += f"; read as {others[0]} they would cover {100 * fits[others[0]]:.0f} %"
    return unit, base if unit == "sample" else None, note


def propose_annotated_layout(
    first: pd.DataFrame,
    sniffed: Sniffed,
    members: list[str],
    selection: Selection,
    choices: Choices | None = None,
    ruled_out: dict[str, str] | None = None,
) -> Layout:
    """The ``annotated-signals`` options for signal files labelled by ``selection.annotation``.

    ``ruled_out``: columns found not to be signals in all the files, with the reason.

    Raises
    ------
    UsageError
        The file names do not hold the keys in one shape, or the first
        recording's intervals fall outside its samples.
    """
    choices = choices or Choices()
    annotation = selection.annotation
    assert annotation is not None
    header = sniffed.header
    given = {"user": choices.user, "label": None, "time": choices.time, "recording": None}
    roles = find_roles(first, header, given, max_missing=choices.max_missing, ruled_out=ruled_out)
    keyed = [k for k in annotation.keys if k not in annotation.path_keys]
    signals = [
        c for c in [*roles.signals, *([roles.recording] if roles.recording else [])]
        if c not in keyed and c not in (roles.user, roles.time, roles.label)
    ]  # fmt: skip
    if choices.channels:
        signals = list(choices.channels)
    pattern, sensors, notes = path_pattern(members, annotation)
    options: dict[str, Any] = {**sniffed.options(), "members": selection.glob}
    options["path_pattern"] = pattern
    if "user" not in annotation.path_keys:
        if not roles.user:
            message = (
                f"mudata init: no key of {annotation.member} is the user ({annotation.keys}) "
                f"and {members[0]} has no user column; name it with --user COL"
            )
            raise UsageError(message)
        options["user_col"] = roles.user
    names = signals
    if not header:
        names = ["x", "y", "z"] if len(signals) == 3 else signals
        options["header"] = False
        options["columns"] = {n: int(c[1:]) for n, c in zip(names, signals, strict=True)}
    if roles.time:
        options["time_col"] = roles.time
    channels = [f"{s}_{n}" for s in sensors for n in names] if sensors else list(names)
    options["channels"] = channels
    unit, base, unit_note = _unit(annotation, first, members[0], roles.time)
    labels: dict[str, Any] = {"file": annotation.member}
    if annotation.fmt == "csv":
        labels["format"] = "csv"
        if annotation.separator != ",":
            labels["separator"] = annotation.separator
    else:
        labels["format"] = "text"
    labels["header"] = annotation.header
    if annotation.columns:
        labels["columns"] = annotation.columns
    labels.update(
        key=annotation.keys,
        start=annotation.start,
        end=annotation.end,
        label=annotation.label,
        unit=unit,
    )
    if unit == "sample" and base != 1:
        labels["first"] = base
    options["labels"] = labels
    notes = [
        f"format: {sniffed.fmt}, {'with' if header else 'without'} a header line",
        *roles.notes,
        f"labels: intervals of {annotation.member} joined by {annotation.keys}; samples "
        f"outside every interval are unlabelled and dropped",
        unit_note,
        *notes,
        "layout: raw signals labelled by an annotation table (reader annotated-signals)",
    ]
    rate, rate_note = time_rate(first, roles.time, members[0]) if roles.time else (None, "")
    notes += report_lines(group_channels(channels, header))
    return Layout(
        "signals",
        sniffed.fmt,
        header,
        options,
        channels,
        rate,
        notes,
        rate_note,
        roles,
        {"labels": unit_note, **sniffed.line_notes},
        group_channels(channels, header),
        reader=READER,
    )


def named_classes(
    classes: list[dict[str, Any]], annotation: Annotation | None
) -> list[dict[str, Any]]:
    """``classes`` with the names of the table of class names, where it names their codes."""
    if annotation is None or not annotation.names:
        return classes
    return [{**c, "name": annotation.names.get(key_text(c["code"]), c["name"])} for c in classes]


def annotation_report(frame: pd.DataFrame) -> list[str]:
    """What the reader dropped: the unlabelled samples, and the intervals of no recording."""
    lines = []
    unlabelled = frame.attrs.get("unlabelled") or {}
    if unlabelled:
        total = sum(unlabelled.values())
        share = 100 * total / (total + len(frame))
        lines.append(
            f"unlabelled: {total:,} samples ({share:.1f} %) outside every interval in "
            f"{len(unlabelled)} recording(s), dropped"
        )
    unmatched = frame.attrs.get("unmatched_intervals") or []
    if unmatched:
        shown = ", ".join(map(str, unmatched[:10])) + (" ..." if len(unmatched) > 10 else "")
        lines.append(
            f"intervals of no recording: {len(unmatched)} line(s) of the annotation table "
            f"name a key no signal file has (lines {shown}); not used"
        )
    return lines


__all__ = [
    "READER",
    "annotation_report",
    "named_classes",
    "path_pattern",
    "propose_annotated_layout",
]
