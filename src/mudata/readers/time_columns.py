"""A member's time column: as numbers, blank-checked, and checked not to go back.

Owns :func:`time_values` and its parts (:func:`time_text`,
:func:`time_numbers`, :func:`check_time_blank`), numbers as they are and text
parsed as date/times (:mod:`mudata.readers.times`), and :func:`check_time`
with its error :func:`time_goes_back`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mudata.errors import ParseError, Reason, excerpt
from mudata.readers._text import first_non_numeric
from mudata.readers.times import ParsedTimes, check_offsets, parse_times

__all__ = [
    "check_time",
    "check_time_blank",
    "time_goes_back",
    "time_numbers",
    "time_text",
    "time_values",
]


def time_values(values: pd.Series, member: str, column: str) -> np.ndarray:
    """Time as numbers: numeric columns as they are, text parsed as datetimes (ns).

    Raises
    ------
    ParseError
        A value is neither a number nor a date/time, or is blank (row named).
    """
    numbers = time_numbers(values, member, column)
    check_time_blank(numbers, member, column)
    return numbers


def check_time_blank(numbers: np.ndarray, member: str, column: str, row_shift: int = 0) -> None:
    """A blank time (NaN in :func:`time_numbers`) is an error naming the row."""
    missing = np.flatnonzero(np.isnan(numbers))
    if missing.size:
        message = f"{member}: time column '{column}' is blank at row {int(missing[0]) + row_shift}"
        raise ParseError(message, reason=Reason("blank", "time_col"))


def time_numbers(
    values: pd.Series,
    member: str,
    column: str,
    *,
    row_shift: int = 0,
    numeric: bool | None = None,
) -> np.ndarray:
    """:func:`time_values` with blank times left as NaN.

    Text is read as numbers when every value of it is one, else as date/times
    (:mod:`mudata.readers.times`: offsets converted to UTC, and a mix of
    times with and without one refused). For a part of a file, ``numeric``
    gives that decision, taken over the whole file, and ``row_shift`` rows of
    the file come before ``values``.

    Raises
    ------
    ParseError
        A value is neither a number nor a date/time, or carries a UTC offset
        where the first time does not, or the reverse (row named).
    """
    numbers, parsed = time_text(values, member, column, row_shift=row_shift, numeric=numeric)
    if parsed is not None:
        check_offsets(parsed, values, member, column, row_shift=row_shift)
    return numbers


def time_text(
    values: pd.Series,
    member: str,
    column: str,
    *,
    row_shift: int = 0,
    numeric: bool | None = None,
    stray: tuple[int, object] | None = None,
) -> tuple[np.ndarray, ParsedTimes | None]:
    """:func:`time_numbers` without the check of offsets, and the parsed date/times (None for numbers).

    ``stray``: for a part of a file (``numeric`` given), the file's first value
    that is not a number and its row, when numbers come before it: a number of
    the part that is no date/time either then names that value, as the whole
    file's read does.

    Raises
    ------
    ParseError
        A value is neither a number nor a date/time (row named), or a column of
        numbers holds a value that is not one (that value's row named).
    """
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return values.to_numpy(dtype=np.float64), None
    first = first_non_numeric(values) if numeric is None else None
    if numeric if numeric is not None else first is None:
        return pd.to_numeric(values).to_numpy(dtype=np.float64), None
    if first is not None and first > 0:
        stray = (first + row_shift, values.iloc[first])
    # Text timestamps: "9:00" must come before "10:00", so compare instants, not text.
    parsed = parse_times(values)
    bad = np.flatnonzero(parsed.bad)
    if bad.size:
        row = int(bad[0])
        if stray is not None and row + row_shift < stray[0]:
            # Numbers up to the stray value: a column of numbers, and the stray is
            # the row to name (not this number, which is no date/time either).
            message = (
                f"{member}: time column '{column}', row {stray[0]}: "
                f"{excerpt(stray[1])} is not a number, as the times before it are "
                f"(row {row + row_shift}: {excerpt(values.iloc[row])})"
            )
        else:
            message = (
                f"{member}: time column '{column}', row {row + row_shift}: "
                f"{excerpt(values.iloc[row])} is neither a number nor a date/time"
            )
        raise ParseError(message, reason=Reason("not-numeric", "time_col"))
    return parsed.numbers, parsed


def check_time(
    time: np.ndarray, recording: np.ndarray, member: str, column: str, header: int
) -> int:
    """Time must not go back inside a recording; return how many times repeat.

    Equal consecutive times are real data (a phone or watch clock gives two
    samples the same millisecond): they are kept in file order and counted.
    A time that goes back inside one recording is an error naming the file and
    the row.

    Parameters
    ----------
    time : ndarray of float, shape (n,)
        The time column as numbers (:func:`time_values`).
    recording : ndarray of int, shape (n,)
        The recording of each row.
    member, column : str
        The file and the time column, for the message.
    header : int
        Lines before the first row (1 with a header line), for the line number.

    Returns
    -------
    int
        Rows whose time equals the previous row's of the same recording.

    Raises
    ------
    ParseError
        Time goes back inside a recording.
    """
    order = np.lexsort((np.arange(time.size), recording))
    same = recording[order][1:] == recording[order][:-1]
    step = np.diff(time[order])
    bad = np.flatnonzero(same & (step < 0))
    if bad.size:
        row = int(order[bad[0] + 1])
        before = int(order[bad[0]])
        raise time_goes_back(member, column, row, before, header, np.unique(recording).size)
    return int(np.count_nonzero(same & (step == 0)))


def time_goes_back(
    member: str, column: str, row: int, before: int, header: int, recordings: int
) -> ParseError:
    """The error of :func:`check_time`: time at ``row`` is before the time at ``before``.

    ``recordings`` is the number of recordings in the file, ``header`` the
    lines before its first row.
    """
    message = (
        f"{member}, row {row} (line {row + 1 + header}): time column '{column}' goes "
        f"back from the time of row {before} inside one recording "
        f"({recordings} recording(s) in this file). If the file holds "
        f"several recordings that each restart their clock, name the column that tells "
        f"them apart as reader_options.recording_col, or a 'recording' group in "
        f'path_pattern; if the rows are in the right order already, set time_order = "file".'
    )
    return ParseError(message, reason=Reason("goes-back", "recording_col"))
