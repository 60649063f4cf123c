"""Inputs that would take gigabytes once read end in a clear error naming the count and the cap.

Each hostile input is built here, small on disk: a CSV header of 100,001
columns, a table of 10,001 classes, a cohorts file of too many columns, a
run folder whose splits declare 200 million calibration rows, zips of more
members than a table may be stacked from.
"""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from mudata.bounds.parquet import MAX_PARQUET_COLUMNS, check_csv_header
from mudata.errors import LimitError, ParseError
from mudata.readers.members import MAX_TABLE_MEMBERS, parse_member
from mudata.readers.sources import Sources
from mudata.readers.tabular import read_feature_table, read_long_signals
from mudata.registry.lookup import MAX_CLASSES as REGISTRY_MAX_CLASSES
from mudata.registry.lookup import parse_entry
from mueval.cli.main import main
from mueval.data.cohorts import read_cohorts_file, resolve_cohorts
from mueval.data.table import MAX_CLASSES, MAX_SCORE_CELLS, load_data
from mueval.errors import DataError, UsageError
from tests.hostile_inputs import many_classes_csv, many_member_zip, wide_csv
from tests.mudata.readers.test_decode import signals_entry, tiny_entry_data
from tests.user_tables import make_frame


def _mueval(*args: str):
    return CliRunner().invoke(main, list(args))


def test_mueval_caps_classes_as_the_mudata_registry_does() -> None:
    assert MAX_CLASSES == REGISTRY_MAX_CLASSES


def test_data_with_more_classes_than_the_cap_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "classes.csv"
    many_classes_csv(data, MAX_CLASSES + 1)
    result = _mueval("evaluate", "--data", str(data), "-s", "mm", "-c", "nb", "--no-progress")
    assert result.exit_code == 1, result.output
    assert "holds 10,001 classes, more than the 10,000 a table may hold" in result.output


def test_rows_times_classes_past_the_cap_is_refused_before_the_arrays() -> None:
    classes = 4_000
    rows = MAX_SCORE_CELLS // classes + 1
    frame = pd.DataFrame(
        {"userid": np.arange(rows) % 3, "label": np.arange(rows) % classes, "f": 0.0}
    )
    with pytest.raises(DataError, match=f"{rows:,} rows x 4,000 classes make"):
        load_data(frame)
    load_data(frame.head(MAX_SCORE_CELLS // classes))  # at the cap: read


def test_the_score_cap_is_set_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = pd.DataFrame({"userid": [1, 2, 1, 2], "label": [0, 1, 1, 0], "f": 1.0})
    monkeypatch.setenv("MUEVAL_MAX_SCORES", "7")
    with pytest.raises(DataError, match="4 rows x 2 classes make 8 scores .*MUEVAL_MAX_SCORES"):
        load_data(frame)
    monkeypatch.setenv("MUEVAL_MAX_SCORES", "8")
    assert load_data(frame).X.shape == (4, 1)
    monkeypatch.setenv("MUEVAL_MAX_SCORES", "lots")
    with pytest.raises(UsageError, match="MUEVAL_MAX_SCORES is 'lots'"):
        load_data(frame)


def test_a_csv_header_past_the_column_cap_is_refused_unread(tmp_path: Path) -> None:
    data = tmp_path / "wide.csv"
    wide_csv(data, MAX_PARQUET_COLUMNS + 1)
    result = _mueval("evaluate", "--data", str(data), "-s", "mm", "-c", "nb", "--no-progress")
    assert result.exit_code == 1, result.output
    assert "first line holds 100,001 columns, more than the 100,000" in result.output
    entry = parse_entry(
        {**tiny_entry_data(), "reader_options": {"user_col": "userid", "label_col": "label"}}
    )
    with pytest.raises(LimitError, match="wide.csv: its first line holds 100,001 columns"):
        parse_member(data.read_bytes(), "wide.csv", "csv", entry)


def test_the_header_count_skips_separators_inside_quotes_and_needs_a_line_break() -> None:
    quoted = b'"' + b"," * (MAX_PARQUET_COLUMNS + 5) + b'",b\n1,2\n'
    assert check_csv_header(quoted, "q.csv") == 2
    assert check_csv_header(b"a\tb\tc\n", "t.tsv", separator="\t") == 3
    assert check_csv_header(b"a  b c\n", "t.txt", separator=None) == 3
    assert (
        check_csv_header("a;b\n".encode("utf-16"), "u.csv", separator=";", encoding="utf-16") == 2
    )


def test_cohorts_files_past_the_caps_are_refused(tmp_path: Path) -> None:
    wide = tmp_path / "wide_cohorts.csv"
    wide_csv(wide, MAX_PARQUET_COLUMNS + 1)
    with pytest.raises(DataError, match="first line holds 100,001 columns"):
        read_cohorts_file(wide)
    users = MAX_CLASSES + 1
    frame = pd.DataFrame({"userid": np.repeat(np.arange(users), 2), "label": [0, 1] * users})
    frame["f"] = 1.0
    table = load_data(frame)
    cohorts = pd.DataFrame({"userid": np.arange(users).astype(str), "band": np.arange(users)})
    with pytest.raises(DataError, match="10,001 cohorts, more than the 10,000"):
        resolve_cohorts(table, cohorts, by_cohort=True, column="band")


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("counts")
    data = base / "table.csv"
    make_frame(n_users=3).to_csv(data, index=False)
    result = _mueval("evaluate", "--data", str(data), "-s", "mm,udm", "-c", "nb",
                     "--iterations", "2", "--out", str(base / "run"), "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    return base / "run"


@pytest.mark.parametrize(
    ("column", "value", "found"),
    [
        ("n_cal", 200_000_000, "n_cal 200,000,000, n_test .* add up to more than dataset.n_rows"),
        ("n_train", 10**12, "n_train 1,000,000,000,000, .* add up to more than"),
        ("n_test", 2**40, "add up to more than dataset.n_rows"),
        ("n_cal", -1, "n_cal is -1.0; expected a whole number"),
    ],
)
def test_run_folder_counts_past_the_rows_they_describe_are_refused(
    run_folder: Path, tmp_path: Path, column: str, value: int, found: str
) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(run_folder, bad)
    table = pq.read_table(bad / "splits.parquet")
    splits = table.to_pandas()
    splits.loc[0, column] = value
    pq.write_table(pa.Table.from_pandas(splits, schema=table.schema), bad / "splits.parquet")
    result = _mueval("report", str(bad), "--out", str(tmp_path / "report"))
    assert result.exit_code == 1, result.output
    assert "splits.parquet: row 0:" in result.output
    assert pd.Series([result.output]).str.contains(found).all(), result.output


def test_a_feature_table_of_more_members_than_the_cap_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "features.zip"
    many_member_zip(archive, MAX_TABLE_MEMBERS + 1, b"userid,label,f\n1,a,0.5\n")
    entry = parse_entry(
        {**tiny_entry_data(), "reader_options": {"user_col": "userid", "label_col": "label"}}
    )
    with pytest.raises(LimitError, match="5,001 files match '\\*.csv', more than the 5,000"):
        read_feature_table(entry, Sources([archive]))


def test_long_signals_of_more_members_than_the_cap_are_refused(tmp_path: Path) -> None:
    archive = tmp_path / "signals.zip"
    rows = b"user,label,t,x,y,z\nu1,a,0,1,1,1\nu1,a,20,1,1,1\nu1,a,40,1,1,1\n"
    many_member_zip(archive, MAX_TABLE_MEMBERS + 1, rows)
    with pytest.raises(LimitError, match="5,001 files match '\\*.csv', more than the 5,000"):
        read_long_signals(signals_entry({"members": "*.csv"}), Sources([archive]))


def test_small_feature_table_members_sharing_a_header_are_read_as_one(tmp_path: Path) -> None:
    members = {
        "p/a.csv": b"userid,label,f\n1,a,0.5\n2,b,1.5\n",
        "p/b.csv": b"userid,label,f\n01,b,2.5",  # no final line break; "01" stays its own user
        "p/c.csv": b"label,userid,f\na,3,3.5\n",  # another header: parsed on its own
        "p/d.csv": b"label,userid,f\nb,4,4.5\n",
    }
    archive = tmp_path / "parts.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    entry = parse_entry(
        {**tiny_entry_data(), "reader_options": {"user_col": "userid", "label_col": "label"}}
    )
    frame = read_feature_table(entry, Sources([archive])).frame
    # Each member read alone, then stacked: what the reader must give.
    alone = [pd.read_csv(io.BytesIO(body), dtype={"userid": str}) for body in members.values()]
    expected = pd.concat(alone, ignore_index=True)
    assert frame["userid"].tolist() == expected["userid"].tolist() == ["1", "2", "01", "3", "4"]
    assert frame["label"].tolist() == expected["label"].tolist()
    assert frame["f"].tolist() == expected["f"].tolist()


def test_an_error_in_joined_members_names_the_first_and_how_many_more(tmp_path: Path) -> None:
    archive = tmp_path / "parts.zip"
    many_member_zip(archive, 3, b"userid,label\n1,a\n")
    entry = parse_entry(
        {
            **tiny_entry_data(),
            "reader_options": {"user_col": "userid", "label_col": "label", "feature_cols": ["f"]},
        }
    )
    with pytest.raises(ParseError, match=r"parts/part0.csv \(and 2 more files with its header\)"):
        read_feature_table(entry, Sources([archive]))
