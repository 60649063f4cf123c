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


def test_float_labels_are_coded_by_value_not_by_their_text(tmp_path) -> None:
    """-0.0 and 0.0 are one class; a float32 label is named by its own short text.

    Coding the rows by their text after naming the classes by value stopped
    both with an internal KeyError ('0.0', '0.1').
    """
    from mueval.data.table import load_file

    f = np.arange(6.0)
    signed = pd.DataFrame(
        {"userid": [1, 1, 1, 2, 2, 2], "label": [-0.0, 0.0, 1.0, 0.0, -0.0, 1.0], "f": f}
    )
    table = table_from_frame(signed)
    assert table.classes == ["0.0", "1.0"]
    assert table.y.tolist() == [0, 0, 1, 0, 0, 1]
    narrow = signed.assign(label=np.array([0.1, 0.2, 0.3, 0.1, 0.2, 0.3], dtype=np.float32))
    table = table_from_frame(narrow)
    assert table.classes == ["0.1", "0.2", "0.3"]
    assert table.y.tolist() == [0, 1, 2, 0, 1, 2]
    # The same through a Parquet file, which keeps float32 as it is.
    narrow.to_parquet(tmp_path / "t.parquet", index=False)
    assert load_file(tmp_path / "t.parquet").classes == ["0.1", "0.2", "0.3"]
    # Nullable integers (no value missing) as plain ones.
    whole = signed.assign(label=pd.array([3, 1, 2, 3, 1, 2], dtype="Int64"))
    assert table_from_frame(whole).classes == ["1", "2", "3"]
