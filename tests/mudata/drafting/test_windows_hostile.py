"""Window counts of files a careless release carries: counted, or a named error.

Found by feeding ``mudata init`` mutated copies of the six shared releases:
a ``missing`` column with no missing value left (its row was of a class left
out) stopped ``sequence_lengths`` with a ValueError from zip, and a user with
no row of a class stopped ``kept_users`` on int(NaN).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mudata.drafting.windows import kept_users, sequence_lengths


def test_a_missing_column_without_a_missing_value_leaves_no_gap() -> None:
    # As init built it for the chest release with one line cut to one field: the
    # row with the missing value was of a class left out, so no kept row had one.
    frame = pd.DataFrame(
        {
            "userid": ["u"] * 5,
            "label": ["a", "a", "b", "b", "b"],
            "recording": [0] * 5,
            "missing": [False] * 5,
        }
    )
    frame.attrs["smoothing"] = 10
    lengths = sequence_lengths(frame)
    assert lengths[["label", "length"]].values.tolist() == [["a", 2], ["b", 3]]
    assert [g.tolist() for g in lengths["gaps"]] == [[], []]


def test_gaps_are_still_placed_in_their_sequence() -> None:
    frame = pd.DataFrame(
        {
            "userid": ["u"] * 6,
            "label": ["a", "a", "a", "b", "b", "b"],
            "missing": [False, True, False, False, False, True],
        }
    )
    lengths = sequence_lengths(frame)
    assert [g.tolist() for g in lengths["gaps"]] == [[1], [2]]


def test_a_class_a_user_has_no_row_of_counts_as_none() -> None:
    table = pd.DataFrame({"a": [6.0, 7.0], "b": [np.nan, 5.0]}, index=["u1", "u2"])
    assert kept_users(table, 5) == ["u2"]


def test_a_table_of_no_class_keeps_no_user() -> None:
    # As init counted it for GeoTec with --recording naming a signal column.
    assert kept_users(pd.DataFrame(index=["u1", "u2"]), 5) == []
