"""The WISDM ARFF reader and the user filter on small files in the official format."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mudata.building.labelled import build_table
from mudata.building.userfilter import filter_users
from mudata.errors import EmptyResultError, ParseError
from mudata.readers import Sources
from mudata.readers.wisdm import read_wisdm_arff
from mudata.registry.lookup import get_entry

ATTRIBUTES = (
    ["UNIQUE_ID", "user"]
    + [f"{a}{i}" for a in "XYZ" for i in range(10)]
    + ["XAVG", "YAVG", "ZAVG", "XPEAK", "YPEAK", "ZPEAK", "XABSOLDEV", "YABSOLDEV", "ZABSOLDEV"]
    + ["XSTANDDEV", "YSTANDDEV", "ZSTANDDEV", "RESULTANT"]
)
CLASSES = ["Walking", "Jogging", "Upstairs", "Downstairs", "Sitting", "Standing"]


def arff_text(rows: list[str], users: list[int]) -> str:
    """An ARFF with the official header's shape (CRLF, quoted names, `class{...}`)."""
    lines = ["@relation activity_recognition_labeled", ""]
    for name in ATTRIBUTES:
        if name == "user":
            values = " , ".join(f'"{u}"' for u in users)
            lines.append(f'@attribute "user" {{{values}}}')
        else:
            lines.append(f'@attribute "{name}" numeric')
    lines.append("@attribute class{ " + " , ".join(f'"{c}"' for c in CLASSES) + " }")
    lines += ["", "@data", *rows]
    return "\r\n".join(lines) + "\r\n"


def row(uid: int, user: int, label: str, value: float = 0.5, peak: str = "?") -> str:
    features = [f"{value + i / 100:.2f}" for i in range(30)]
    return ",".join(
        [
            str(uid),
            str(user),
            *features,
            "0",
            "8.4",
            "1.76",
            peak,
            "293.94",
            peak,
            "3.29",
            "7.21",
            "4",
            "4.05",
            "8.17",
            "4",
            "9.1",
            label,
        ]
    )


def write(tmp_path: Path, text: str) -> Sources:
    folder = tmp_path / "WISDM_ar_v1.1"
    folder.mkdir(exist_ok=True)
    (folder / "WISDM_ar_v1.1_transformed.arff").write_bytes(text.encode("utf-8"))
    return Sources([tmp_path])


def test_reads_crlf_quoted_header_and_question_marks(tmp_path: Path) -> None:
    rows = [
        row(1, 33, "Walking", peak="?"),
        row(2, 33, "Jogging", peak="2075"),
        row(3, 7, "Sitting"),
    ]
    raw = read_wisdm_arff(get_entry("wisdm"), write(tmp_path, arff_text(rows, [33, 7]))).frame
    assert list(raw["userid"]) == [33, 33, 7]
    assert list(raw["label"]) == ["Walking", "Jogging", "Sitting"]
    assert (
        "XPEAK" not in raw.columns and "XAVG" not in raw.columns and "UNIQUE_ID" not in raw.columns
    )
    assert raw.shape[1] == 2 + 39
    assert raw["X0"].tolist() == [0.5, 0.5, 0.5]
    assert raw["RESULTANT"].tolist() == [9.1, 9.1, 9.1]


def test_ragged_row_is_named_by_line(tmp_path: Path) -> None:
    rows = [row(1, 33, "Walking"), "2,33,0.1,0.2,Walking"]
    with pytest.raises(ParseError, match=r"line 52: expected 46 comma-separated values, found 5"):
        read_wisdm_arff(get_entry("wisdm"), write(tmp_path, arff_text(rows, [33])))


def test_non_numeric_feature_is_named(tmp_path: Path) -> None:
    bad = row(1, 33, "Walking").replace("0.50,", "abc,", 1)
    with pytest.raises(ParseError, match=r"attribute 'X0' has non-numeric value 'abc'"):
        read_wisdm_arff(get_entry("wisdm"), write(tmp_path, arff_text([bad], [33])))


def test_missing_data_section(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="no '@data' line"):
        read_wisdm_arff(
            get_entry("wisdm"), write(tmp_path, "@relation x\r\n@attribute a numeric\r\n")
        )


def test_missing_value_in_a_kept_feature_drops_the_row(tmp_path: Path) -> None:
    """A `?` in a kept column cannot enter the table: the row is dropped and counted."""
    rows = []
    for label in ["Downstairs", "Jogging", "Sitting", "Standing", "Upstairs", "Walking"]:
        rows += [row(len(rows) + i, 5, label) for i in range(5)]
    holed = row(999, 5, "Walking").replace("0.50,", "?,", 1)
    # one user: the test is about the dropped row, so the floor of two users is lowered
    table, drops = build_table(
        get_entry("wisdm"), write(tmp_path, arff_text([*rows, holed], [5])), min_users=1
    )
    assert len(table) == 30
    assert drops["rows_dropped_missing_values"] == 1
    assert table["X0"].notna().all()


def test_user_missing_a_class_is_dropped_by_rule() -> None:
    frame = pd.DataFrame(
        {
            "userid": [1] * 4 + [2] * 5 + [3] * 10,
            "label": ["a", "a", "b", "b"] + ["a"] * 5 + ["a"] * 5 + ["b"] * 5,
            "f": range(19),
        }
    )
    kept, report = filter_users(frame, ["a", "b"], 2, dataset="toy")
    assert report.kept == ["1", "3"]  # user ids are text
    assert report.dropped == {"2": "fewer than 2 rows of b: 0"}
    assert report.rows_dropped == {"2": 5}
    assert kept["userid"].tolist() == [1] * 4 + [3] * 10


def test_no_user_passing_is_an_error() -> None:
    frame = pd.DataFrame({"userid": [1, 2], "label": ["a", "b"], "f": [0.0, 1.0]})
    with pytest.raises(
        EmptyResultError, match=r"0 user\(s\) \[\] have at least 5 rows of every class"
    ):
        filter_users(frame, ["a", "b"], 5, dataset="toy")
