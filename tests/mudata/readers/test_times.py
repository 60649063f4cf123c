"""The rule for date/time text in a time column (:mod:`mudata.readers.times`).

The reference is pandas itself, asked about one value at a time: a time with
a UTC offset is the instant ``pandas.Timestamp(text)`` names, converted to
UTC; a time without one is read as written. Values are built here from
instants, so the expected numbers do not come from the code under test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudata.errors import ParseError
from mudata.readers.times import _aware as aware_of
from mudata.readers.times import check_offsets, parse_times


def _ns(instant: pd.Timestamp) -> float:
    return float(instant.as_unit("ns").value)


def test_a_daylight_saving_change_keeps_time_going_forward():
    # Paris leaves summer time at 01:00 UTC on 2021-10-31: the local hour 02:xx repeats.
    instants = pd.date_range("2021-10-31T00:30Z", periods=6, freq="15min")
    text = pd.Series([t.tz_convert("Europe/Paris").isoformat() for t in instants], dtype="str")
    assert text.str[-6:].tolist() == ["+02:00"] * 2 + ["+01:00"] * 4
    parsed = parse_times(text)
    assert parsed.numbers.tolist() == [_ns(t) for t in instants]
    assert np.all(np.diff(parsed.numbers) > 0)
    assert parsed.aware.all() and not parsed.bad.any()
    assert check_offsets(parsed, text, "s.csv", "t").aware


@pytest.mark.parametrize(
    "text",
    [
        "2021-03-28T01:59:00Z",
        "2021-03-28 03:00:00+02:00",
        "2021-03-28T01:59:00.125-0130",
        "2020-01-01 10:00 UTC",
        "Thu, 01 Jan 2020 10:00:00 GMT",
    ],
)
def test_an_offset_is_converted_to_utc_as_pandas_reads_the_value_alone(text):
    values = pd.Series([text, "2021-03-28T01:00:00+05:00"], dtype="str")
    parsed = parse_times(values)
    assert parsed.numbers[0] == _ns(pd.Timestamp(text).tz_convert("UTC"))
    assert parsed.aware.tolist() == [True, True]


def test_naive_times_are_read_as_written():
    values = pd.Series(["2021-03-28 01:59:00", "2021-03-28 03:00:00.5", None], dtype="str")
    parsed = parse_times(values)
    assert parsed.numbers[:2].tolist() == [_ns(pd.Timestamp(v)) for v in values[:2]]
    assert np.isnan(parsed.numbers[2])
    assert parsed.aware.tolist() == [False, False, False]
    assert parsed.bad.tolist() == [False, False, False]


@pytest.mark.parametrize(
    ("values", "row", "has", "first", "had"),
    [
        (["2021-03-28T01:00:00Z", None, "2021-03-28T01:00:01Z", "2021-03-28 01:00:02"], 3,
         "has no UTC offset", 0, "has one"),
        ([None, "2021-03-28 01:00:00", "2021-03-28T01:00:01+01:00"], 2,
         "has a UTC offset", 1, "has none"),
    ],
)  # fmt: skip
def test_times_with_and_without_an_offset_are_refused_naming_the_row(values, row, has, first, had):
    text = pd.Series(values, dtype="str")
    parsed = parse_times(text)
    with pytest.raises(ParseError) as error:
        check_offsets(parsed, text, "data/s.csv", "stamp", row_shift=100)
    message = str(error.value)
    assert message.startswith(f"data/s.csv: time column 'stamp', row {row + 100}: ")
    assert f"{values[row]!r} {has}, but row {first + 100} ({values[first]!r}) {had}" in message


def test_the_first_time_of_an_earlier_part_decides():
    first = check_offsets(*_parsed(["2021-03-28T01:00:00Z"]), "s.csv", "t")
    assert first is not None and first.aware and first.row == 0
    # The next part alone is naive throughout, and fine; after an aware part it is not.
    check_offsets(*_parsed(["2021-03-28 01:00:01"]), "s.csv", "t", row_shift=1)
    with pytest.raises(ParseError, match=r"row 1: '2021-03-28 01:00:01' has no UTC offset"):
        check_offsets(*_parsed(["2021-03-28 01:00:01"]), "s.csv", "t", row_shift=1, first=first)
    # A part of blank times carries the first time on.
    assert check_offsets(*_parsed([None]), "s.csv", "t", first=first) is first


def _parsed(values):
    text = pd.Series(values, dtype="str")
    return parse_times(text), text


def test_the_clock_words_are_no_recorded_time():
    # pandas reads "now" as the run's clock, aware or not as its neighbours are.
    for values in (["now", "2020-01-01T00:00Z"], ["2020-01-01", "today"]):
        parsed = parse_times(pd.Series(values, dtype="str"))
        assert parsed.bad.tolist() == [v in ("now", "today") for v in values]


def test_a_value_the_probe_reads_otherwise_is_asked_alone():
    values = pd.Series(["2021-03-28T01:00:00Z", "2021-03-28 01:00:00"], dtype="str")
    utc = pd.to_datetime(values, format="mixed", utc=True)
    assert aware_of(values, utc, np.ones(2, dtype=bool)).tolist() == [True, False]
    # A reading neither equal to the probe's nor an hour from it: each value asked alone.
    assert aware_of(values, utc + pd.Timedelta(minutes=7), np.ones(2, dtype=bool)).tolist() == [
        True,
        False,
    ]


def _alone(text: str) -> tuple[bool, float]:
    """pandas on one value: whether it carries an offset, and its instant in UTC (ns)."""
    one = pd.to_datetime(pd.Series([text], dtype="str"), format="mixed")
    instant = one.dt.tz_convert("UTC") if one.dt.tz is not None else one
    return one.dt.tz is not None, float(instant.dt.tz_localize(None).dt.as_unit("ns").iloc[0].value)


OFFSETS = st.sampled_from(["", "Z", "+01:00", "-0530", "+02", " UTC", " GMT", "+00:00", " +0100"])
TIMES = st.builds(
    lambda day, hour, minute, second, fraction, sep, offset: (
        f"2021-03-{day:02d}{sep}{hour:02d}:{minute:02d}"
        + (f":{second:02d}" if second is not None else "")
        + (f".{fraction}" if fraction is not None and second is not None else "")
        + offset
    ),
    st.integers(1, 28),
    st.integers(0, 23),
    st.integers(0, 59),
    st.one_of(st.none(), st.integers(0, 59)),
    st.one_of(st.none(), st.integers(0, 999_999)),
    st.sampled_from(["T", " "]),
    OFFSETS,
)


@given(st.lists(TIMES, min_size=1, max_size=12))
@settings(max_examples=60, deadline=None)
def test_each_value_reads_as_pandas_reads_it_alone(texts):
    parsed = parse_times(pd.Series(texts, dtype="str"))
    alone = [_alone(t) for t in texts]
    assert parsed.aware.tolist() == [a for a, _ in alone]
    assert parsed.numbers.tolist() == [n for _, n in alone]
    assert not parsed.bad.any()
