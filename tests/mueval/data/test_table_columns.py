"""A column name given twice is refused, whatever the format: pandas renamed a CSV's
second ``label`` to ``label.1`` and used it as a feature (the label among the
features), a DataFrame's second ``userid`` failed with a TypeError, and a Parquet
file's repeated name with a pyarrow dump."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mueval.data.synthetic import make_users
from mueval.data.table import load_file, table_from_frame
from mueval.errors import DataError, UsageError


@pytest.fixture
def frame():
    return make_users(4, n_classes=3, rows_per_user=30, n_features=3, seed=1)


@pytest.mark.parametrize("again", ["label", "userid", "f1"])
def test_a_csv_header_naming_a_column_twice_is_refused(tmp_path, frame, again: str) -> None:
    path = tmp_path / "users.csv"
    frame.assign(extra=frame[again]).rename(columns={"extra": again}).to_csv(path, index=False)
    with pytest.raises(DataError, match=rf"users.csv: column name\(s\) {again} appear more than"):
        load_file(path)


def test_a_csv_with_a_bom_and_crlf_is_read(tmp_path, frame) -> None:
    path = tmp_path / "users.csv"
    path.write_bytes(b"\xef\xbb\xbf" + frame.to_csv(index=False, lineterminator="\r\n").encode())
    assert load_file(path).features == ["f0", "f1", "f2"]


@pytest.mark.parametrize("again", ["userid", "f0"])
def test_a_dataframe_naming_a_column_twice_is_refused(frame, again: str) -> None:
    columns = list(frame.columns)
    columns[-1] = again
    with pytest.raises(DataError, match=rf"column name\(s\) {again} appear more than once"):
        table_from_frame(frame.set_axis(columns, axis=1))


def test_a_parquet_file_naming_a_column_twice_is_refused(tmp_path, frame) -> None:
    names = [*frame.columns, "f0"]
    arrays = [pa.array(frame[c]) for c in frame.columns] + [pa.array(frame["f0"])]
    pq.write_table(pa.table(arrays, names=names), tmp_path / "t.parquet")
    with pytest.raises(DataError, match=r"^t.parquet: column name\(s\) f0 appear more than once"):
        load_file(tmp_path / "t.parquet")


def test_a_complex_feature_is_refused(frame) -> None:
    """Taken as a float, it lost its imaginary part with only a ComplexWarning."""
    with pytest.raises(DataError, match="not numeric: f0"):
        table_from_frame(frame.assign(f0=frame["f0"] + 1j))


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_a_file_separated_otherwise_says_so(tmp_path, frame, sep: str) -> None:
    path = tmp_path / "users.csv"
    frame.to_csv(path, sep=sep, index=False)
    with pytest.raises(UsageError, match="is the file separated by ';', tabs or '|'"):
        load_file(path)


def test_a_csv_holding_its_header_again_says_so(tmp_path, frame) -> None:
    """Files joined with their headers: the first text cell of a feature is named."""
    path = tmp_path / "joined.csv"
    text = frame.to_csv(index=False)
    lines = text.splitlines(keepends=True)
    path.write_text("".join([*lines[:11], lines[0], *lines[11:]]))
    with pytest.raises(DataError) as caught:
        load_file(path)
    first = frame.columns[2]
    assert f"'{first}' holds '{first}' at row position 10: the header line again" in str(
        caught.value
    )


def test_a_stray_text_cell_in_a_feature_is_named(tmp_path, frame) -> None:
    path = tmp_path / "stray.csv"
    stray = frame.astype({frame.columns[3]: object})
    stray.iloc[7, 3] = "n/a?"
    stray.to_csv(path, index=False)
    with pytest.raises(
        DataError, match=rf"'{frame.columns[3]}' holds 'n/a\?' at row position 7 \("
    ):
        load_file(path)


def test_a_field_too_many_in_the_first_row_is_refused(tmp_path, frame) -> None:
    """pandas took the user column as a row index and moved every name one
    column to the right; the last feature was then missing on every row but one."""
    path = tmp_path / "shifted.csv"
    lines = frame.to_csv(index=False).splitlines()
    lines[1] += ",0.5"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        DataError,
        match=r"shifted.csv: the header names 5 columns, data row 1 holds 6 fields and data row 2 holds 5",
    ):
        load_file(path)


def test_row_names_without_a_header_cell_are_read_aligned(tmp_path, frame) -> None:
    """R's write.table: every row starts with a row name the header does not name."""
    path = tmp_path / "rownames.csv"
    lines = frame.to_csv(index=False).splitlines()
    path.write_text(
        "\n".join([lines[0], *(f'"{i}",{x}' for i, x in enumerate(lines[1:], 1))]) + "\n"
    )
    table = load_file(path)
    plain = tmp_path / "plain.csv"
    frame.to_csv(plain, index=False)
    assert table.X.tolist() == load_file(plain).X.tolist()
