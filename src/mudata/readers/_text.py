"""Shared helpers of the text readers: encodings, field counting and CSV error locations."""

from __future__ import annotations

import codecs
import io
from typing import overload

import numpy as np
import pandas as pd

from mudata.entry import DatasetEntry
from mudata.errors import ParseError, Reason, RegistryError

DEFAULT_ENCODING = "utf-8"


def text_encoding(entry: DatasetEntry) -> str:
    """The entry's ``reader_options.encoding`` (default utf-8), checked to be a known codec."""
    encoding = entry.reader_options.get("encoding", DEFAULT_ENCODING)
    try:
        if not isinstance(encoding, str):
            raise LookupError(encoding)
        codecs.lookup(encoding)
    except LookupError:
        where = f" ({entry.source})" if entry.source else ""
        message = (
            f"invalid registry entry '{entry.name}'{where}: field 'reader_options.encoding': "
            f"unknown text encoding {str(encoding)[:50]!r} (e.g. 'utf-8', 'latin-1', 'cp1252')"
        )
        raise RegistryError(message, reason=Reason("invalid", "encoding")) from None
    return encoding


def decode_text(
    data: bytes,
    member: str,
    encoding: str = DEFAULT_ENCODING,
    *,
    line_shift: int = 0,
    offset_shift: int = 0,
) -> str:
    """``data`` decoded; a byte the encoding cannot decode is a ParseError naming it.

    The message gives the file, the line, the byte and the encoding, and how to
    name another encoding (``reader_options.encoding``). When ``data`` is a
    part of the file, ``line_shift`` and ``offset_shift`` turn its line
    numbers and byte offsets into the file's.
    """
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1 + line_shift
        message = (
            f"{member}, line {line}: byte {data[exc.start]:#04x} at offset "
            f"{exc.start + offset_shift} is not "
            f"valid {encoding} text; if the file uses another encoding, name it in the "
            f"registry entry as reader_options.encoding (e.g. 'latin-1')"
        )
        raise ParseError(message, reason=Reason("unreadable", "encoding")) from None


def check_encoding(
    data: bytes,
    member: str,
    encoding: str = DEFAULT_ENCODING,
    *,
    line_shift: int = 0,
    offset_shift: int = 0,
) -> None:
    """Raise the :func:`decode_text` error when ``data`` is not valid ``encoding`` text."""
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8") and data.isascii():
        return  # the common case, checked without building a string
    decode_text(data, member, encoding, line_shift=line_shift, offset_shift=offset_shift)


_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[ord(" "), ord("\t"), ord("\r"), ord("\n"), ord("\v"), ord("\f")]] = True


def _line_starts(raw: np.ndarray) -> np.ndarray:
    """Index of the first byte of each line of ``raw`` (which ends with a newline)."""
    newline = np.flatnonzero(raw == ord("\n"))
    return np.concatenate([[0], newline[:-1] + 1])


def _per_line(marks: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """Number of ``True`` in ``marks`` on each line of ``raw`` (newline-terminated).

    Takes the positions of the marks and of the newlines in one sorted array:
    the marks of a line are the entries between two newlines. Cheaper than a
    cumulative sum or a reduction over every byte.
    """
    newline = raw == ord("\n")
    events = np.flatnonzero(marks | newline)
    ends = np.flatnonzero(newline[events])
    return np.diff(ends, prepend=-1) - 1


def whitespace_field_counts(data: bytes) -> np.ndarray:
    """Number of whitespace-separated fields on each line of ``data``.

    Vectorised over the bytes with per-line reductions (no Python loop, no
    cumulative sums as large as the file), so a 50 MB file is checked in a
    fraction of a second. CRLF and LF line ends are both handled; a final line
    without a newline counts as a line.

    Parameters
    ----------
    data : bytes
        The file content.

    Returns
    -------
    ndarray of int, shape (n_lines,)
        Line ``k`` (0-based) has ``counts[k]`` fields; a blank line has 0.
    """
    if not data:
        return np.zeros(0, dtype=np.int64)
    if not data.endswith(b"\n"):
        data = data + b"\n"
    raw = np.frombuffer(data, dtype=np.uint8)
    word = ~_WHITESPACE[raw]
    # A field starts where a non-space byte follows a space (or the file start).
    field_start = word.copy()
    field_start[1:] &= ~word[:-1]
    return _per_line(field_start, raw)


def check_field_counts(counts: np.ndarray, expected: int, describe_line) -> None:
    """Raise :class:`ParseError` at the first non-blank line without ``expected`` fields.

    Parameters
    ----------
    counts : ndarray of int
        From :func:`whitespace_field_counts`.
    expected : int
        Required number of fields.
    describe_line : callable
        Maps a 0-based line index to text naming the file and 1-based line,
        e.g. ``"S1-ADL1.dat, line 7"``.
    """
    bad = np.flatnonzero((counts != expected) & (counts != 0))
    if bad.size:
        first = int(bad[0])
        message = (
            f"{describe_line(first)}: expected {expected} space-separated fields, "
            f"found {int(counts[first])} ({bad.size} such line(s) in all)"
        )
        raise ParseError(message, reason=Reason("unreadable", "members"))


def csv_line_of_row(data: bytes, row: int, header_lines: int = 1) -> int:
    """1-based line number of data row ``row`` (0-based) of a CSV, skipping blank lines.

    Only used to report errors, so a plain scan is fine.
    """
    seen = -1
    for number, line in enumerate(io.BytesIO(data), start=1):
        if number <= header_lines:
            continue
        if line.strip():
            seen += 1
            if seen == row:
                return number
    return header_lines + row + 1


def first_non_numeric(column: pd.Series) -> int | None:
    """Index (0-based position) of the first value that is not a number, else None."""
    numeric = pd.to_numeric(column, errors="coerce")
    bad = np.flatnonzero(numeric.isna().to_numpy() & column.notna().to_numpy())
    return int(bad[0]) if bad.size else None


def delimited_field_counts(data: bytes, delimiter: bytes = b",") -> np.ndarray:
    """Number of ``delimiter``-separated fields on each line; 0 for a blank line.

    Parameters
    ----------
    data : bytes
        The file content (CRLF or LF line ends).
    delimiter : bytes
        One byte.

    Returns
    -------
    ndarray of int, shape (n_lines,)
    """
    if not data:
        return np.zeros(0, dtype=np.int64)
    if not data.endswith(b"\n"):
        data = data + b"\n"
    raw = np.frombuffer(data, dtype=np.uint8)
    starts = _line_starts(raw)
    counts = _per_line(raw == delimiter[0], raw) + 1
    # Lines without a delimiter are blank or hold one field: look at those few only.
    ends = np.concatenate([starts[1:], [raw.size]])
    for line in np.flatnonzero(counts == 1):
        if not data[starts[line] : ends[line]].strip():
            counts[line] = 0
    return counts


def _option_error(entry: DatasetEntry, key: str, expected: str, value: object) -> RegistryError:
    where = f" ({entry.source})" if entry.source else ""
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "..."
    message = (
        f"invalid registry entry '{entry.name}'{where}: field 'reader_options.{key}': "
        f"expected {expected}, found {shown}"
    )
    return RegistryError(message, reason=Reason("invalid", key))


def int_option(entry: DatasetEntry, key: str, default: int, minimum: int = 0) -> int:
    """``reader_options[key]`` as an int of at least ``minimum`` (a RegistryError naming it otherwise)."""
    value = entry.reader_options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _option_error(entry, key, f"an integer >= {minimum}", value)
    return value


@overload
def str_option(entry: DatasetEntry, key: str, default: str) -> str: ...
@overload
def str_option(entry: DatasetEntry, key: str, default: str | None) -> str | None: ...
def str_option(entry: DatasetEntry, key: str, default: str | None) -> str | None:
    """``reader_options[key]`` as text (None only when absent and ``default`` is None)."""
    value = entry.reader_options.get(key, default)
    # An option set to None where it has a text default is no text either.
    if (value is not None or default is not None) and not isinstance(value, str):
        raise _option_error(entry, key, "text", value)
    return value


def list_option(entry: DatasetEntry, key: str, default: list, item: type = str) -> list:
    """``reader_options[key]`` as a list whose items are all of type ``item``."""
    value = entry.reader_options.get(key, default)
    if not isinstance(value, list | tuple) or not all(
        isinstance(v, item) and not isinstance(v, bool) for v in value
    ):
        raise _option_error(entry, key, f"a list of {item.__name__}", value)
    return list(value)


def columns_option(entry: DatasetEntry, key: str, default: dict[str, int]) -> dict[str, int]:
    """``reader_options[key]``: channel name to 1-based column number."""
    value = entry.reader_options.get(key, default)
    if not isinstance(value, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value.values()
    ):
        raise _option_error(entry, key, "a table of channel = column number (>= 1)", value)
    return dict(value)
