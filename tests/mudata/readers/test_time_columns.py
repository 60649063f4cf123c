"""A time column of numbers with a stray value names that value's row.

The column was then parsed as date/times, which its first number is not either:
the message named row 0 and a valid time (GeoTec's epoch milliseconds with five
rows set to '12:00:00' in the middle of a file).
"""

from __future__ import annotations

import pandas as pd
import pytest

from mudata.errors import ParseError
from mudata.readers.time_columns import time_values


def test_a_stray_value_among_numbers_is_named_by_its_row() -> None:
    values = pd.Series(["1657534570154", "1657534570174", "12:00:00", "1657534570214"])
    with pytest.raises(ParseError) as caught:
        time_values(values, "s02_01_sp.csv", "timestamp")
    message = str(caught.value)
    assert "time column 'timestamp', row 2: '12:00:00' is not a number" in message
    assert "as the times before it are (row 0: '1657534570154')" in message


def test_date_times_that_do_not_parse_are_named_as_before() -> None:
    values = pd.Series(["2024-01-01 10:00:00", "yesterday", "2024-01-01 10:00:02"])
    with pytest.raises(ParseError, match=r"row 1: 'yesterday' is neither a number nor a date/time"):
        time_values(values, "a.csv", "t")


def test_numbers_as_text_are_read() -> None:
    assert time_values(pd.Series(["1", "2.5", "4"]), "a.csv", "t").tolist() == [1.0, 2.5, 4.0]
