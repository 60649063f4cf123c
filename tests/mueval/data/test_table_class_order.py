"""Class order of a user's own table: a label encoder's order (PROTOCOL.md, Input)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mueval.data.table import table_from_frame


def test_numeric_labels_are_ordered_by_value() -> None:
    frame = pd.DataFrame(
        {"userid": [1, 1, 2, 2, 2], "label": [10, 2, 1, 10, 2], "f": np.arange(5.0)}
    )
    table = table_from_frame(frame)
    # LabelEncoder on integers sorts 1 < 2 < 10; as text "10" would come before "2"
    assert table.classes == ["1", "2", "10"]
    assert table.y.tolist() == [2, 1, 0, 2, 1]


def test_text_labels_are_ordered_alphabetically() -> None:
    frame = pd.DataFrame(
        {"userid": [1, 1, 2], "label": ["walk", "Sit", "lie"], "f": [0.0, 1.0, 2.0]}
    )
    table = table_from_frame(frame)
    assert table.classes == ["Sit", "lie", "walk"]
    assert table.y.tolist() == [2, 0, 1]
