"""Labels a careless table carries: each one class, or a named error.

A blank label was accepted and broke the report's class tables; labels that
only spaces tell apart were two classes shown alike; and a column of objects
named two classes alike (``1`` and ``"1"``) or one class two ways (``1`` and
``1.0``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mueval.data.table import table_from_frame
from mueval.errors import DataError


def _frame(users: object, labels: object) -> pd.DataFrame:
    return pd.DataFrame({"userid": users, "label": labels, "f": np.arange(6.0)})


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_label_is_refused(blank: str) -> None:
    frame = _frame([1, 1, 2, 2, 3, 3], ["a", "b", "a", blank, "a", "b"])
    with pytest.raises(DataError, match=r"1 blank label\(s\) .* row position 3"):
        table_from_frame(frame)


def test_labels_that_differ_only_in_spaces_are_refused() -> None:
    frame = _frame([1, 1, 2, 2, 3, 3], ["walk", "run", "walk ", "run", "walk", "run"])
    with pytest.raises(DataError, match="labels 'walk' and 'walk ' .* differ only in surrounding"):
        table_from_frame(frame)


@pytest.mark.parametrize(
    ("labels", "says"),
    [
        ([1, "1", 2, 1, "1", 2], r"'1' \(int\) and '1' \(str\) are two values written alike"),
        ([1, 1.0, 2, 1, 1.0, 2], r"'1' \(int\) and '1.0' \(float\) are one value written two"),
    ],
)
def test_labels_of_mixed_types_that_text_would_mistake_are_refused(labels, says) -> None:
    frame = _frame([1, 1, 1, 2, 2, 2], pd.Series(labels, dtype=object))
    with pytest.raises(DataError, match=says):
        table_from_frame(frame)
