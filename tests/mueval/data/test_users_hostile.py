"""User ids a careless table carries: each one user, or a named error.

Found by feeding ``mueval evaluate`` hostile tables: ids past int64 as floats
merged into one user, a blank id was accepted and broke the report, and a
column of objects named two users alike, or one user two ways.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mueval.data.table import load_file, table_from_frame
from mueval.data.users import user_ids
from mueval.errors import DataError


def _frame(users: object, labels: object) -> pd.DataFrame:
    return pd.DataFrame({"userid": users, "label": labels, "f": np.arange(6.0)})


def test_float_ids_past_int64_stay_distinct(tmp_path) -> None:
    ids = pd.Series([1.0, 1e19, 2e19, 1e19])
    big, bigger = "10000000000000000000", "20000000000000000000"
    assert user_ids(ids).tolist() == ["1", big, bigger, big]
    frame = _frame([1e19, 1e19, 2e19, 2e19, 3.0, 3.0], ["a", "b"] * 3)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    table = load_file(tmp_path / "t.parquet")
    assert len(set(table.users)) == 3
    # Within int64 they are numbers, as before.
    assert user_ids(pd.Series([3.0, -2.0, 2.0**62])).tolist() == [3, -2, 2**62]


@pytest.mark.parametrize("blank", ["", " ", "\t"])
def test_a_blank_user_id_is_refused(blank: str) -> None:
    frame = _frame(["u1", "u1", blank, blank, "u2", "u2"], ["a", "b"] * 3)
    with pytest.raises(DataError, match=r"2 user id\(s\) are blank .* row position 2"):
        table_from_frame(frame)


@pytest.mark.parametrize(
    ("ids", "says"),
    [
        ([1, 1, "1", "1", 2, 2], r"'1' \(int\) and '1' \(str\) are two values written alike"),
        ([1, 1, 1.0, 1.0, 2, 2], r"'1' \(int\) and '1.0' \(float\) are one value written two"),
    ],
)
def test_user_ids_of_mixed_types_that_text_would_mistake_are_refused(ids, says) -> None:
    frame = _frame(pd.Series(ids, dtype=object), ["a", "b"] * 3)
    with pytest.raises(DataError, match=says):
        table_from_frame(frame)


def test_mixed_types_that_text_tells_apart_are_kept() -> None:
    frame = _frame(pd.Series([1, 1, "u2", "u2", 3, 3], dtype=object), ["a", "b"] * 3)
    assert sorted(set(table_from_frame(frame).users)) == ["1", "3", "u2"]
