"""``mudata init``, step 1': an annotation table of labels among the files left out.

A release such as UCI HAPT keeps its labels in a table of intervals
(``RawData/labels.txt``: ``experiment user activity start end``) beside
signal files without labels (``acc_exp01_user01.txt``). The table's columns
differ from the signal files', so the selection would leave it out as a
metadata sheet. :func:`find_annotation` recognises it instead, when:

* two numeric columns bound an interval on every row (``start <= end``, never
  negative; by name, such as ``start``/``end``, ``begin``/``stop``,
  ``t_start``/``t_end``, or else the last such pair);
* a column takes a few whole-number or word values, the class codes (by name,
  such as ``activity``, or else the first column left);
* at least one other column is a key: its values are the numbers in one place
  of the signal files' paths (``exp01``, ``user01``: ``1`` to ``6``), or it
  names a column of the signal files (a ``session`` column);
* the class codes repeat (at most one distinct code per two rows), and so do
  the keys (a recording holds several intervals): a sheet of one row per
  subject or recording (age, height, weight) is not an annotation table.

It also finds a table of class names (``activity_labels.txt``: a code and a
word per line), whose codes are the annotation's labels.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from mudata.drafting.columns import LABEL_NAMES, USER_NAMES
from mudata.drafting.shapes import text_shape
from mudata.readers.intervals import key_text

START_NAMES = re.compile(
    r"^(start|begin|from|onset|start_?(time|sample|index|idx|s|ms)?|t_?start|t0|(time|sample)_?start"
    r"|begin_?(ms|s)?)$",
    re.IGNORECASE,
)
END_NAMES = re.compile(
    r"^(end|stop|to|offset|end_?(time|sample|index|idx|s|ms)?|t_?end|t1|(time|sample)_?end"
    r"|stop_?(ms|s)?)$",
    re.IGNORECASE,
)
#: Words before a number in a path that name the user (``user01``, ``subject3``, ``s07``).
USER_WORDS = re.compile(
    r"^(user|users|subject|subj|sub|s|u|p|participant|person|volunteer|id)$", re.I
)
#: Short words before a number in a path and the key name they stand for.
KEY_WORDS = {"exp": "experiment", "e": "experiment", "rec": "recording", "r": "run", "t": "trial"}
#: The head of a table read (:func:`mudata.readers.decode.head`): a longer table is cut here.
_HEAD = 1 << 16


@dataclass
class Annotation:
    """An annotation table found among the files, and how to read it.

    Attributes
    ----------
    member : str
        Its path in the release.
    fmt, separator, header : str, str, bool
        How it is written (``"csv"`` or ``"text"``).
    table : DataFrame
        Its rows (of the head read), columns named as the reader's ``labels`` names them.
    columns : dict of str to int or str
        ``labels.columns``: name to column number (no header) or header name.
    keys : list of str
        The key names, in the table's order.
    path_keys : dict of str to int
        Key name to the place of its number among the numbers of a signal path.
    start, end, label : str
        Names of the bounds and of the class codes.
    whole : bool
        Whether every bound is a whole number (sample indices are).
    names : dict of str to str
        Class code to name, from a table of class names (``activity_labels.txt``).
    names_file : str or None
        That table.
    separate : bool
        Whether the entry lists the table as a file of its own (no one glob
        selects it with the signal files).
    notes : list of str
        The evidence, for the report.
    """

    member: str
    fmt: str
    separator: str
    header: bool
    table: pd.DataFrame
    columns: dict[str, int | str]
    keys: list[str]
    path_keys: dict[str, int]
    start: str
    end: str
    label: str
    whole: bool
    names: dict[str, str] = field(default_factory=dict)
    names_file: str | None = None
    notes: list[str] = field(default_factory=list)
    #: Pinned as a file of its own: no glob selects it with the signal files.
    separate: bool = False


def path_numbers(member: str) -> list[tuple[str, str]]:
    """The numbers in a path, each with the word before it: ``acc_exp01_user01.txt`` ->
    ``[("exp", "01"), ("user", "01")]`` (digits in the suffix, ``.mp4``, left out)."""
    stem = member[: len(member) - len(PurePosixPath(member).suffix)]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"([A-Za-z]*)[_-]?(\d+)", stem)]


def _parse(data: bytes) -> tuple[pd.DataFrame, str, str, bool] | None:
    """A small delimited table from its head: the rows, its format, separator and header."""
    if len(data) >= _HEAD:
        data = data[: data.rfind(b"\n") + 1]  # the last line may be cut
    text = data.decode("utf-8", "replace").lstrip("\ufeff")
    shape = text_shape(text)
    if not shape.fields or shape.comment or shape.skip_lines or shape.line_end:
        return None
    sep = shape.separator
    try:
        table = pd.read_csv(
            io.StringIO(text),
            sep=sep or r"\s+",
            header=0 if shape.header else None,
            dtype=str,
            skipinitialspace=True,
        )
    except (ValueError, pd.errors.ParserError):
        return None
    if len(table) < 2 or table.shape[1] < 3:
        return None
    if not shape.header:
        table.columns = [f"c{i + 1}" for i in range(table.shape[1])]
    table.columns = [str(c).strip() for c in table.columns]
    return table, ("text" if sep is None else "csv"), sep or ",", shape.header


def _numbers(values: pd.Series) -> np.ndarray | None:
    numbers = pd.to_numeric(values.str.strip(), errors="coerce").to_numpy(dtype=float)
    return None if np.isnan(numbers).any() else numbers


def _bounds(table: pd.DataFrame, taken: set[str]) -> tuple[str, str] | None:
    """The start and end columns: by name, or else the last numeric pair with start <= end."""
    numeric = {
        c: v for c in table.columns if c not in taken and (v := _numbers(table[c])) is not None
    }
    pairs = [
        (a, b)
        for i, a in enumerate(numeric)
        for b in list(numeric)[i + 1 :]
        if (numeric[a] >= 0).all()
        and (numeric[a] <= numeric[b]).all()
        and (numeric[a] < numeric[b]).mean() > 0.5
    ]
    named = [(a, b) for a, b in pairs if START_NAMES.match(a) and END_NAMES.match(b)]
    if named:
        return named[0]
    adjacent = [
        (a, b) for a, b in pairs if list(table.columns).index(b) == list(table.columns).index(a) + 1
    ]
    return adjacent[-1] if adjacent else None


def _key_places(column: pd.Series, members: list[str]) -> list[tuple[int, float]]:
    """The places among the numbers of the paths where a column's values are found, each
    with its fit: the share of the rows whose value is there, times the share of the
    place's values the column holds.

    Rows of keys no file has are allowed (a release may publish the labels of recordings
    it leaves out), up to half of them.
    """
    numbers = [path_numbers(m) for m in members]
    if not numbers or len({len(n) for n in numbers}) != 1:
        return []
    texts = column.dropna().map(key_text)
    values = set(texts)
    places = []
    for k in range(len(numbers[0])):
        found = {key_text(n[k][1]) for n in numbers}
        rows = float(texts.isin(found).mean()) if len(texts) else 0.0
        # A place of one value (one user) must hold every row: a code 1 on half the rows is no key.
        if rows >= 0.5 and (len(found) > 1 or rows == 1.0):
            places.append((k, rows * len(values & found) / len(found)))
    return places


#: Assignments of columns to the places of the paths' numbers tried at most.
_MAX_ASSIGNMENTS = 512


def _overlapping(groups: list[tuple], start: np.ndarray, end: np.ndarray) -> int:
    """Rows whose interval starts before an earlier one of their group ends."""
    order = sorted(range(len(groups)), key=lambda i: (groups[i], start[i]))
    count, last, reach = 0, None, -np.inf
    for i in order:
        if groups[i] != last:
            last, reach = groups[i], -np.inf
        count += bool(start[i] < reach)
        reach = max(reach, end[i])
    return count


def _assign(
    table: pd.DataFrame,
    candidates: list[str],
    members: list[str],
    bounds: tuple[str, str],
    keyed: list[str],
) -> list[tuple[str, int]]:
    """The columns that are the numbers of the paths, each with its place.

    Jointly: the assignment under which most rows of the table name a recording
    whose path holds all of their numbers and no interval overlaps another of
    its recording (a key left out merges recordings, whose intervals then
    overlap); among equal ones, the one with more keys, then the one whose
    columns are named as the words before the numbers (``exp``, ``user``). One
    column at a time would take a user column (1-3) for the experiment (1-6)
    once some experiments are missing. ``keyed``: the key columns that are
    columns of the signal files (a session), which also tell recordings apart.
    """
    numbers = [path_numbers(m) for m in members]
    if not numbers or len({len(n) for n in numbers}) != 1:
        return []
    options: dict[int, list[str | None]] = {k: [None] for k in range(len(numbers[0]))}
    for column in candidates:
        for place, _ in _key_places(table[column], members):
            options[place].append(column)
    texts = {c: table[c].map(key_text).to_numpy() for c in [*candidates, *keyed]}
    start, end = (_numbers(table[c]) for c in bounds)
    assert start is not None and end is not None  # _bounds chose two numeric columns
    best: tuple[float, int, int] | None = None
    chosen: list[tuple[str, int]] = []
    for tried, pick in enumerate(itertools.product(*options.values())):
        if tried >= _MAX_ASSIGNMENTS:
            break
        pairs = [(c, k) for k, c in zip(options, pick, strict=True) if c is not None]
        if not pairs or len({c for c, _ in pairs}) != len(pairs):
            continue
        recordings = {tuple(key_text(n[k][1]) for _, k in pairs) for n in numbers}
        rows = list(zip(*(texts[c] for c, _ in pairs), strict=True))
        found = [r in recordings for r in rows]
        groups = list(zip(rows, *(texts[c] for c in keyed), strict=True))
        share = (sum(found) - _overlapping(groups, start, end)) / len(rows)
        named = sum(
            bool(w := numbers[0][k][0].lower())
            and (c.lower().startswith(w) or bool(USER_WORDS.match(w) and USER_NAMES.match(c)))
            for c, k in pairs
        )
        score = (round(share, 9), len(pairs), named)
        if share >= 0.5 and (best is None or score > best):
            best, chosen = score, pairs
    return chosen


def _key_name(column: str, header: bool, word: str, taken: set[str], k: int) -> str:
    name = column if header else word
    name = re.sub(r"\W", "_", name.strip()).strip("_").lower() if name else ""
    if USER_NAMES.match(name) or USER_WORDS.match(name):
        name = "user"
    name = KEY_WORDS.get(name, name) or f"key{k + 1}"
    if not re.fullmatch(r"[A-Za-z_]\w*", name) or name in taken or name in ("label", "sensor"):
        name = f"key{k + 1}"
    return name


def find_annotation(
    candidates: list[str],
    members: list[str],
    read_head: Callable[[str], bytes],
    data_columns: list[str] | None = None,
) -> Annotation | None:
    """The annotation table among ``candidates`` (files left out), or None.

    Parameters
    ----------
    candidates : list of str
        Delimited text files the selection left out (not documentation by name).
    members : list of str
        The signal files.
    read_head : callable
        ``name -> bytes``, the first bytes of a file.
    data_columns : list of str, optional
        The header of the signal files, for keys that are their columns.
    """
    found = None
    for name in candidates:
        parsed = _parse(read_head(name))
        if parsed is None:
            continue
        table, fmt, separator, header = parsed
        annotation = _analyse(name, table, fmt, separator, header, members, data_columns or [])
        if annotation is not None:
            found = annotation
            break
    if found is None:
        return None
    find_class_names(found, [n for n in candidates if n != found.member], read_head)
    return found


def find_class_names(
    annotation: Annotation, candidates: list[str], read_head: Callable[[str], bytes]
) -> None:
    """Fill ``annotation.names`` from the first of ``candidates`` that is a table of
    ``code name`` lines naming every class code of the annotation."""
    for name in candidates:
        if not annotation.names:
            _class_names(annotation, name, read_head(name))


def _analyse(
    name: str,
    table: pd.DataFrame,
    fmt: str,
    separator: str,
    header: bool,
    members: list[str],
    data_columns: list[str],
) -> Annotation | None:
    numbers = path_numbers(members[0]) if members else []
    keys: list[str] = []
    path_keys: dict[str, int] = {}
    columns: dict[str, int | str] = {}
    renamed: dict[str, str] = {}
    notes: list[str] = []
    bounds = _bounds(table, set())
    if bounds is None:
        return None
    start, end = bounds
    roles = (LABEL_NAMES, START_NAMES, END_NAMES)
    candidates = [
        c
        for c in table.columns
        if c not in bounds and not (header and any(r.match(c) for r in roles))
    ]
    chosen: list[tuple[str, int | None, set[str]]] = [
        (c, None, {key_text(v) for v in table[c].dropna()})
        for c in candidates
        if header and c in data_columns
    ]
    taken = {c for c, _, _ in chosen}
    others = [c for c in candidates if c not in taken]
    for column, found in _assign(table, others, members, (start, end), sorted(taken)):
        chosen.append((column, found, {key_text(v) for v in table[column].dropna()}))
    for column, place, values in sorted(chosen, key=lambda c: list(table.columns).index(c[0])):
        word = numbers[place][0] if place is not None else column
        key = _key_name(column, header, word, set(keys), len(keys))
        if place is None:
            notes.append(f"key {key!r}: column {column!r}, also a column of the signal files")
        else:
            path_keys[key] = place
            notes.append(
                f"key {key!r}: column {column!r}, the number after {word!r} in the signal "
                f"files' names ({len(values)} values)"
            )
        keys.append(key)
        renamed[column] = key
    if not keys:
        return None
    rest = [c for c in table.columns if c not in renamed and c not in bounds]
    # Class codes repeat (a sheet of one row per subject holds ages, weights: few repeats).
    codes = [c for c in rest if 2 <= table[c].nunique() <= min(100, len(table) / 2)]
    label = next((c for c in codes if LABEL_NAMES.match(c)), codes[0] if codes else None)
    if label is None:
        return None
    if not table.duplicated(subset=list(renamed)).any():
        return None  # one row per recording: a sheet describing them, not intervals in them
    start_name = start if header else "start"
    end_name = end if header else "end"
    label_name = label if header else "label"
    for column, key in renamed.items():
        if header and key != column:
            columns[key] = column
        elif not header:
            columns[key] = int(column[1:])
    if not header:
        columns.update(
            {start_name: int(start[1:]), end_name: int(end[1:]), label_name: int(label[1:])}
        )
    out = table.rename(columns={**renamed, start: start_name, end: end_name, label: label_name})
    # Both bounds are numeric columns (_bounds chose them), so _numbers gives numbers.
    whole = all(bool(np.all(np.mod(_numbers(table[c]), 1) == 0)) for c in (start, end))  # type: ignore[arg-type]
    notes.append(
        f"intervals: {start_name!r} to {end_name!r} ({'whole numbers' if whole else 'numbers'}), "
        f"class codes in {label_name!r} ({table[label].nunique()} values), {len(table)} rows"
    )
    return Annotation(
        name, fmt, separator, header, out, columns, keys, path_keys, start_name, end_name,
        label_name, whole, notes=notes,
    )  # fmt: skip


def _class_names(annotation: Annotation, name: str, data: bytes) -> None:
    """Class names from a table of ``code name`` lines whose codes are the annotation's labels."""
    text = data.decode("utf-8", "replace").lstrip("\ufeff")
    pairs = [line.split(None, 1) for line in text.splitlines() if line.strip()]
    if not pairs or any(len(p) != 2 for p in pairs):
        pairs = [
            re.split(r"\s*[,;\t]\s*", line.strip(), maxsplit=1)
            for line in text.splitlines()
            if line.strip()
        ]
    if not pairs or any(len(p) != 2 for p in pairs):
        return
    if not re.fullmatch(r"\d+", pairs[0][0].strip()):
        pairs = pairs[1:]  # a header line
    names = {key_text(code): label.strip() for code, label in pairs}
    codes = {key_text(c) for c in annotation.table[annotation.label].dropna()}
    if names and codes <= set(names) and all(names.values()) and not annotation.names:
        annotation.names = names
        annotation.names_file = name
        annotation.notes.append(f"class names: from {name} ({len(names)} codes)")


__all__ = [
    "END_NAMES",
    "KEY_WORDS",
    "START_NAMES",
    "USER_WORDS",
    "Annotation",
    "find_annotation",
    "find_class_names",
    "path_numbers",
]
