"""The small files beside a feature table: its labels, users, column names and class legend.

Owns the parsing, and every refusal, of the text files a feature table's rows
are described by when the table itself holds only numbers, as in UCI-HAR:

* :func:`side_column` -- a file of one integer per line, aligned row by row
  with the table (``y_train.txt``: the class codes; ``subject_train.txt``:
  the users);
* :func:`feature_names` -- the names of the table's columns, one per line
  (``features.txt``: ``1 tBodyAcc-mean()-X``), made unique by
  :func:`unique_names`;
* :func:`label_legend` -- class code to name (``activity_labels.txt``:
  ``1 WALKING``).

Each takes a file's (decompressed, pinned) bytes and its member name, and
refuses what it cannot read as a :class:`~mudata.errors.ParseError` naming the
file, the line and what is wrong, with the setting that names the file as its
reason. How many lines a file may hold is bounded before it is parsed: a side
file by the table's rows, a names file by the table's columns, a legend by
:data:`MAX_LEGEND_LINES`.
"""

from __future__ import annotations

import re

import numpy as np

from mudata.errors import ParseError, Reason, excerpt
from mudata.readers._text import decode_text, whitespace_field_counts
from mudata.readers.roles import RESERVED

__all__ = [
    "MAX_LEGEND_LINES",
    "MAX_NAMES_LINES",
    "feature_names",
    "label_legend",
    "line_count",
    "side_column",
    "unique_names",
]

#: Lines of a class legend, at most (a release has some tens of classes).
MAX_LEGEND_LINES = 10_000
#: Lines of a file of column names, at most (as many columns as a Parquet file may have).
MAX_NAMES_LINES = 100_000

#: A whole number, as a side file's token (an int64 holds it: :func:`_whole`).
_INTEGER = re.compile(rb"[+-]?\d+")
#: A code of a legend or the number of a names file's line.
_CODE = re.compile(r"[+-]?\d{1,18}")


def line_count(data: bytes) -> int:
    """Lines of ``data``: its line breaks, and a last line without one.

    Counted on the bytes alone, so that a file is measured before it is parsed.
    """
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _whole(token: bytes) -> bool:
    """Whether ``token`` is a whole number an int64 holds."""
    return _INTEGER.fullmatch(token) is not None and -(2**63) <= int(token) < 2**63


def side_column(data: bytes, member: str, rows: int, table: str, setting: str) -> np.ndarray:
    """The integers of a side file, one per line, as many as ``table`` has rows.

    Parameters
    ----------
    data : bytes
        The file's bytes (LF or CRLF line ends).
    member : str
        The file, for messages.
    rows : int
        The rows of the table it describes.
    table : str
        That table's member name, for messages.
    setting : str
        The option naming the file (``label_file``, ``user_file``): the reason's setting.

    Returns
    -------
    ndarray of int64, shape (rows,)

    Raises
    ------
    ParseError
        Another count of lines than the table's rows (both files and both
        counts named; checked before the file is parsed), a blank line, a line
        of several fields, or a value that is not a whole number (its line named).
    """
    lines = line_count(data)
    if lines != rows:
        message = (
            f"{member}: holds {lines:,} line(s), but the table it describes, {table}, holds "
            f"{rows:,} row(s); a side file ({setting}) has one line per row of its table, "
            f"in the same order"
        )
        raise ParseError(message, reason=Reason("differs", setting))
    if not data.isascii():
        decode_text(data, member, "ascii")  # refused, naming the line and the byte
    counts = whitespace_field_counts(data)
    odd = np.flatnonzero(counts != 1)
    if odd.size:
        line = int(odd[0]) + 1
        found = "is blank" if counts[odd[0]] == 0 else f"holds {int(counts[odd[0]])} fields"
        message = (
            f"{member}, line {line}: {found}; a side file ({setting}) holds one whole number "
            f"per line ({odd.size:,} such line(s) in all)"
        )
        raise ParseError(message, reason=Reason("unreadable", setting))
    tokens = np.array(data.split())
    try:
        values = tokens.astype(np.int64)
    except (ValueError, OverflowError):
        values = None
    if values is None:
        bad = next(i for i, t in enumerate(tokens) if not _whole(t))
        message = (
            f"{member}, line {bad + 1}: {excerpt(tokens[bad].decode('ascii'))} is not a whole "
            f"number; a side file ({setting}) holds one whole number per line"
        )
        raise ParseError(message, reason=Reason("not-numeric", setting))
    return values


def _numbered_lines(data: bytes, member: str, setting: str) -> list[tuple[int, str]]:
    """The non-blank lines of a small text file, with their 1-based numbers."""
    text = decode_text(data, member, "utf-8")
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def unique_names(names: list[str]) -> list[str]:
    """``names`` made unique: a name's 2nd, 3rd ... occurrence gets ``_2``, ``_3`` ...

    The first occurrence keeps its name. A suffixed name that another column
    already has (``a_2`` beside two ``a``) takes the next free number, so the
    result depends on the order of the names alone.

    Examples
    --------
    >>> unique_names(["a", "b", "a", "a_2", "a"])
    ['a', 'b', 'a_3', 'a_2', 'a_4']
    """
    taken = set(names)
    seen: dict[str, int] = {}
    out = []
    for name in names:
        count = seen.get(name, 0) + 1
        seen[name] = count
        if count == 1:
            out.append(name)
            continue
        number = count
        while f"{name}_{number}" in taken:
            number += 1
        seen[name] = number
        taken.add(f"{name}_{number}")
        out.append(f"{name}_{number}")
    return out


def feature_names(data: bytes, member: str, columns: int, table: str) -> list[str]:
    """The names of a table's ``columns``, from a file of one name per line, made unique.

    Lines are ``N name`` (``N`` = 1, 2, ... in order; the name is the rest of
    the line), or a name alone on each line; blank lines are skipped. Names
    repeated are made unique by :func:`unique_names`.

    Raises
    ------
    ParseError
        Another count of names than the table's columns (checked on the line
        count first), a line numbered out of order, or a name mudata gives a
        column of its own (``userid``, ``label``, ``segment``).
    """
    setting = "feature_names_file"
    if line_count(data) > max(MAX_NAMES_LINES, columns + 1_000):
        message = (
            f"{member}: holds {line_count(data):,} lines, far more than the {columns:,} "
            f"columns of {table} it names"
        )
        raise ParseError(message, reason=Reason("differs", setting))
    lines = _numbered_lines(data, member, setting)
    if len(lines) != columns:
        message = (
            f"{member}: names {len(lines):,} column(s), but {table} holds {columns:,}; "
            f"{setting} names each column of the table once, in order"
        )
        raise ParseError(message, reason=Reason("differs", setting))
    parts = [line.split(None, 1) for _, line in lines]
    numbered = all(len(p) == 2 and _CODE.fullmatch(p[0]) for p in parts)
    names = []
    for position, ((number, line), part) in enumerate(zip(lines, parts, strict=True), 1):
        if numbered and int(part[0]) != position:
            message = (
                f"{member}, line {number}: numbers its column {part[0]}, where column "
                f"{position} is expected; the lines name the columns in order"
            )
            raise ParseError(message, reason=Reason("invalid", setting))
        name = part[1].strip() if numbered else line
        if name in RESERVED:
            message = (
                f"{member}, line {number}: names a column {name!r}, a column mudata adds to "
                f"every table; rename it in a copy of the file"
            )
            raise ParseError(message, reason=Reason("taken", setting))
        names.append(name)
    return unique_names(names)


def label_legend(data: bytes, member: str) -> dict[int, str]:
    """Class code to name, from lines ``code name`` (``1 WALKING``); blank lines skipped.

    Raises
    ------
    ParseError
        More than :data:`MAX_LEGEND_LINES` lines, a line whose first field is
        not a whole number or that has no name, or a code given twice.
    """
    setting = "label_names_file"
    if line_count(data) > MAX_LEGEND_LINES:
        message = (
            f"{member}: holds {line_count(data):,} lines, more than the "
            f"{MAX_LEGEND_LINES:,} a legend of classes may have"
        )
        raise ParseError(message, reason=Reason("invalid", setting))
    legend: dict[int, str] = {}
    for number, line in _numbered_lines(data, member, setting):
        part = line.split(None, 1)
        if len(part) != 2 or not _CODE.fullmatch(part[0]):
            message = (
                f"{member}, line {number}: {excerpt(line)} is not 'CODE NAME' (a whole number, "
                f"then the class's name)"
            )
            raise ParseError(message, reason=Reason("invalid", setting))
        code = int(part[0])
        if code in legend:
            message = (
                f"{member}, line {number}: code {code} is named twice ({legend[code]!r} and "
                f"{part[1].strip()!r})"
            )
            raise ParseError(message, reason=Reason("invalid", setting))
        legend[code] = part[1].strip()
    if not legend:
        message = f"{member}: names no class (no line 'CODE NAME')"
        raise ParseError(message, reason=Reason("empty", setting))
    return legend
