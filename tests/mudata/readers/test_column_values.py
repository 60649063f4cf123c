"""Signal columns as numbers: a value that is no float is refused by row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mudata.errors import ParseError
from mudata.readers.column_values import numeric_columns


def test_a_whole_number_past_float64_is_refused_by_row() -> None:
    """A parser that kept a 400-digit field as a Python int made pandas' to_numeric
    raise OverflowError, an internal error of init and fetch."""
    huge = int("9" * 400)
    table = pd.DataFrame({"x": pd.Series([1502, 1503, huge], dtype=object)})
    with pytest.raises(
        ParseError, match=r"2.csv: column 'x' must be numeric; row 12 holds .*too large"
    ):
        numeric_columns(table, ["x"], "2.csv", row_shift=10)


def test_text_numbers_and_large_floats_are_read() -> None:
    table = pd.DataFrame({"x": ["1.5", "1e300", "-2"], "y": pd.Series([1, 2**60, 3], dtype=object)})
    out = numeric_columns(table, ["x", "y"], "m.csv")
    np.testing.assert_array_equal(out["x"], [1.5, 1e300, -2.0])
    np.testing.assert_array_equal(out["y"], [1.0, float(2**60), 3.0])
