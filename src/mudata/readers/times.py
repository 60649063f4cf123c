"""Date/time text of a time column as numbers, by one rule for every path that reads it.

A time written with a UTC offset (``Z``, ``+01:00``, ``-0500``, ``UTC``...)
stands for an instant: it is converted to UTC, as ``pandas.to_datetime(...,
utc=True)`` does, so that the hour a daylight-saving change repeats or skips
keeps time going forward. A time without one is taken as it is written. The
times of one file must all carry an offset or none: a naive time cannot be
placed beside an instant, so a mix is an error naming the file and the first
row that differs from the file's first time.

The rule is applied to a whole file or to its parts in turn (the streamed
reader): :func:`parse_times` parses a part, :func:`check_offsets` compares
it with the file's first time, carried from part to part, so that where a
file is cut never changes the outcome.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mudata.errors import ParseError, Reason, excerpt

# Naive times are read in this zone by the probe of :func:`_aware`: its times
# differ from their UTC reading by exactly this much, an aware time's do not.
_PROBE_SHIFT = pd.Timedelta(hours=1)
_PROBE = datetime.timezone(datetime.timedelta(hours=1))
# Nanoseconds in one unit of each datetime64 resolution pandas gives.
_NS_PER = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
#: A time followed by a written UTC offset: pandas reads every such value as an
#: instant. Others ("UTC", "+01" or no offset) are asked of pandas (:func:`_aware`).
_OFFSET = re.compile(r"\d:\d\d(?::\d\d(?:[.,]\d+)?)?\s*(?:Z|[+-]\d\d:?\d\d)\s*$")
#: Words pandas reads as the current time, refused as times of a recording.
_CLOCK = ("now", "today")


@dataclass(frozen=True)
class ParsedTimes:
    """The times of a column, or of a part of it.

    Attributes
    ----------
    numbers : ndarray of float, shape (n,)
        Nanoseconds since 1970 (UTC for a time with an offset); NaN where the
        value is blank or no date/time.
    aware : ndarray of bool, shape (n,)
        Whether each time carries a UTC offset (False where ``numbers`` is NaN).
    bad : ndarray of bool, shape (n,)
        A value is there but is no date/time.
    """

    numbers: np.ndarray
    aware: np.ndarray
    bad: np.ndarray


@dataclass(frozen=True)
class FirstTime:
    """The first time of a file: whether it carries an offset, its row and its text."""

    aware: bool
    row: int
    text: str


def parse_times(values: pd.Series) -> ParsedTimes:
    """Parse date/time text (``format="mixed"``), offsets converted to UTC.

    Parameters
    ----------
    values : Series
        The values of a time column (text; blanks as missing).

    Returns
    -------
    ParsedTimes
    """
    n = len(values)
    # pandas reads "now" and "today" as the clock of the run, with or without
    # an offset as the values beside them have one: no recorded time, and a
    # reading that would change with the parts a file is cut into.
    clock = values.isin(_CLOCK).to_numpy()
    if clock.any():
        values = values.mask(clock)
    marked = _marked(values)
    if marked.any():
        # Offsets written out: read as UTC in one pass (pandas refuses one zone
        # for several offsets); only the values without one need the probe.
        parsed = pd.to_datetime(values, errors="coerce", format="mixed", utc=True)
        aware = marked | _aware(values, parsed, ~marked)
    else:
        try:
            parsed = pd.to_datetime(values, errors="coerce", format="mixed")
            aware = np.full(n, parsed.dt.tz is not None)
        except ValueError:
            # Several zones by name ("UTC", "GMT+1"), or names beside naive
            # times: read each as UTC, then tell which values carried one.
            parsed = pd.to_datetime(values, errors="coerce", format="mixed", utc=True)
            aware = _aware(values, parsed, np.ones(n, dtype=bool))
    if parsed.dt.tz is not None:
        parsed = parsed.dt.tz_convert(None)
    present = parsed.notna().to_numpy()
    # Floats from the native resolution: one rounding whatever the resolution
    # pandas chose for this part, and no overflow past the years of nanoseconds.
    native = parsed.to_numpy()
    unit = np.datetime_data(native.dtype)[0]
    numbers = native.view(np.int64).astype(np.float64) * _NS_PER[unit]
    numbers[~present] = np.nan
    return ParsedTimes(numbers, aware & present, (~present & values.notna().to_numpy()) | clock)


def _marked(values: pd.Series) -> np.ndarray:
    """The values that end in a time and a written offset (``10:00:00+01:00``, ``10:00Z``)."""
    if not (pd.api.types.is_string_dtype(values) or values.dtype == object):
        return np.zeros(len(values), dtype=bool)  # already datetimes: pandas knows their zone
    try:
        # Arrow's RE2, on the column's own buffers: several times pandas' str.contains.
        found = pc.match_substring_regex(pa.array(values), _OFFSET.pattern)
        return found.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
    except (pa.ArrowException, TypeError):  # not all text: Python's re, value by value
        return values.str.contains(_OFFSET, na=False).to_numpy(dtype=bool)


def _aware(values: pd.Series, utc: pd.Series, asked: np.ndarray) -> np.ndarray:
    """Which of the ``asked`` values carry a UTC offset, given their reading with naive times as UTC."""
    aware = np.zeros(len(values), dtype=bool)
    present = np.flatnonzero(utc.notna().to_numpy() & asked)
    if not present.size:
        return aware
    text = values.iloc[present].to_numpy(dtype=object)
    unknown = present
    try:
        # Naive times read in another zone move by the zone's offset; instants do not.
        probe = pd.DatetimeIndex(text, tz=_PROBE).tz_convert("UTC")
        step = probe - pd.DatetimeIndex(utc.iloc[present])
        aware[present] = step == pd.Timedelta(0)
        unknown = present[(step != pd.Timedelta(0)) & (step != -_PROBE_SHIFT)]
    except (ValueError, TypeError, OverflowError):
        pass
    for i in unknown:
        # The probe read this value otherwise than to_datetime: ask it alone.
        one = pd.to_datetime(values.iloc[i : i + 1], errors="coerce", format="mixed")
        aware[i] = one.dt.tz is not None
    return aware


def check_offsets(
    parsed: ParsedTimes,
    values: pd.Series,
    member: str,
    column: str,
    *,
    row_shift: int = 0,
    first: FirstTime | None = None,
) -> FirstTime | None:
    """Refuse times with and without a UTC offset in one file.

    Parameters
    ----------
    parsed : ParsedTimes
        :func:`parse_times` of ``values``.
    values : Series
        The text, for the message.
    member, column : str
        The file and the time column, for the message.
    row_shift : int, optional
        Rows of the file before ``values``.
    first : FirstTime, optional
        The file's first time, when a part before this one held it.

    Returns
    -------
    FirstTime or None
        The file's first time so far (None while every time was blank).

    Raises
    ------
    ParseError
        A time carries an offset and the file's first one does not, or the
        reverse (file, row and both values named).
    """
    present = ~np.isnan(parsed.numbers)
    rows = np.flatnonzero(present)
    if not rows.size:
        return first
    if first is None:
        row = int(rows[0])
        first = FirstTime(bool(parsed.aware[row]), row + row_shift, str(values.iloc[row]))
    other = np.flatnonzero(present & (parsed.aware != first.aware))
    if other.size:
        row = int(other[0])
        has, had = ("has no", "has one") if first.aware else ("has a", "has none")
        message = (
            f"{member}: time column '{column}', row {row + row_shift}: "
            f"{excerpt(values.iloc[row])} {has} UTC offset, but row {first.row} "
            f"({excerpt(first.text)}) {had}; times with an offset are converted to UTC, "
            f"times without one cannot be placed beside them: give every time of the "
            f"file an offset, or none"
        )
        raise ParseError(message, reason=Reason("invalid", "time_col"))
    return first
