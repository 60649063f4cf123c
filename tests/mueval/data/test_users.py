"""``user_texts`` converts each distinct id once: the same texts as ``user_text`` row by row."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mueval.data.users import user_text, user_texts

IDS = st.one_of(
    st.none(),
    st.just(float("nan")),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.text(max_size=4),
    st.booleans(),
    st.decimals(allow_nan=False, allow_infinity=False, places=1),
)


def _row_by_row(values: pd.Series) -> pd.Series:
    """The reference: :func:`user_text` called on every row, as pandas maps it."""
    return values.astype(object).map(user_text)


@given(st.lists(IDS, max_size=30))
def test_user_texts_equal_user_text_of_every_row(values: list) -> None:
    series = pd.Series(values, dtype=object, index=np.arange(len(values)) * 3 + 1)
    pd.testing.assert_series_equal(user_texts(series), _row_by_row(series))


@pytest.mark.parametrize(
    "values",
    [
        [7, Decimal("7.0"), 7.0],  # equal values of other types that read differently
        [Decimal("7.0"), 7],
        [1, True, 1.0, " 1 ", "1"],
        [None, np.nan, pd.NA, ""],
        [np.int64(12), 12.0, -0.0, 0],
    ],
)
def test_equal_values_that_read_differently_keep_their_own_text(values: list) -> None:
    series = pd.Series(values, dtype=object)
    pd.testing.assert_series_equal(user_texts(series), _row_by_row(series))


@pytest.mark.parametrize("dtype", ["int64", "float64", "string", "Int64"])
def test_typed_columns(dtype: str) -> None:
    series = pd.Series(
        [3, 1, 3, None, 2] if dtype in ("string", "Int64", "float64") else [3, 1, 3, 2]
    )
    series = series.astype(dtype if dtype != "string" else "string")
    pd.testing.assert_series_equal(user_texts(series), _row_by_row(series))
