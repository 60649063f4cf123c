"""A header line again among the rows (files joined with their headers): refused
by name in `mudata init` and `mudata fetch`, where it made a user ``user`` and
a class ``act`` of one row each; the WLE release, joined as users do it, too."""

from __future__ import annotations

import gzip
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
import mudata.building.pipeline
from mudata.bounds.parquet import check_first_row
from mudata.building.options import BuildOptions
from mudata.cli import main as mudata_main
from mudata.errors import ParseError
from mudata.readers.delimited import check_no_repeated_header, sniff_delimited
from mudata.registry.lookup import load_entry_file
from tests.conftest import SHARED_DATA, extract_release
from tests.mudata.drafting.test_layout_cut_lines import init_motionsense_with
from tests.mudata.readers.test_members import entry_text, write_users

SEPARATORS = {"comma": ",", "semicolon": ";", "tab": "\t"}


def joined(folder: Path, sep: str, *, quoted: bool = False) -> Path:
    """Three users' CSV files joined as ``cat`` joins them, each header kept."""
    write_users(folder / "parts", ["u1", "u2", "u3"], np.random.default_rng(4))
    quoting = 2 if quoted else 0  # csv.QUOTE_NONNUMERIC quotes the header too
    parts = [
        pd.read_csv(p).to_csv(sep=sep, index=False, quoting=quoting)
        for p in sorted((folder / "parts").glob("*.csv"))
    ]
    for p in (folder / "parts").glob("*.csv"):
        p.unlink()
    (folder / "parts").rmdir()
    out = folder / "all.csv"
    out.write_text("".join(parts), encoding="utf-8")
    return out


def test_a_row_that_is_the_header_again_is_named() -> None:
    table = pd.DataFrame({"user": ["1", "2", "user", "3"], "x": ["0.5", "1", "x", "2"]})
    with pytest.raises(ParseError, match=r"^f.csv: data row 3 repeats the header line"):
        check_no_repeated_header(table, "f.csv")


def test_a_class_or_user_named_like_its_column_is_no_header() -> None:
    # One column holding its own name is a value, not the header line.
    labels = pd.DataFrame({"act": ["act", "b"], "x": [0.5, 0.7]})
    check_no_repeated_header(labels, "f.csv")
    # Text columns that hold their names on different rows are no header line.
    apart = pd.DataFrame({"user": ["user", "u2"], "act": ["a", "act"]})
    check_no_repeated_header(apart, "f.csv")
    # pandas' names for an empty header cell and a name given twice are not compared.
    made_up = pd.DataFrame(
        {"Unnamed: 0": [None, None], "x": ["1", "x"], "x.1": ["2", "x"], "y": ["3", "y"]}
    )
    with pytest.raises(ParseError, match=r"data row 2 repeats the header line \('x', 'y'\)"):
        check_no_repeated_header(made_up, "f.csv")


@pytest.mark.parametrize("quoted", [False, True], ids=["bare", "quoted"])
@pytest.mark.parametrize("sep", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_init_names_the_repeated_header(tmp_path: Path, sep: str, quoted: bool) -> None:
    data = joined(tmp_path / "release", sep, quoted=quoted)
    toml = tmp_path / "x.toml"
    result = CliRunner().invoke(
        mudata_main, ["init", str(data.parent), "--name", "x", "-o", str(toml)]
    )
    assert result.exit_code != 0
    # Rows 1-10 are u1's; row 11 is u2's header.
    assert "all.csv: data row 11 repeats the header line ('user', 'act', 'f1', 'f2')" in (
        result.output
    ), result.output
    assert not toml.exists()


@pytest.mark.parametrize("sep", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_fetch_names_the_repeated_header(tmp_path: Path, sep: str) -> None:
    data = joined(tmp_path / "data", sep)
    toml = tmp_path / "globbed.toml"
    text = entry_text("data", "*.csv").replace(
        "[reader_options]\n", f"[reader_options]\nseparator = {sep!r}\n".replace("'", '"'), 1
    )
    toml.write_text(text.replace('"\t"', '"\\t"'), encoding="utf-8")
    entry = load_entry_file(toml)
    home = tmp_path / "home"
    with pytest.raises(ParseError, match=r"all.csv: data row 11 repeats the header line"):
        mudata.building.pipeline.build(entry, BuildOptions(data_home=home, allow_unverified=True))
    assert not list(home.rglob("*.parquet"))
    # The same rows, one header: built, three users.
    data.write_text(
        "".join(
            line
            for i, line in enumerate(data.read_text().splitlines(keepends=True))
            if i == 0 or not line.startswith("user")
        )
    )
    path = mudata.building.pipeline.build(
        entry, BuildOptions(data_home=home, allow_unverified=True)
    )
    assert sorted(pd.read_parquet(path)["userid"].unique()) == ["u1", "u2", "u3"]


@pytest.mark.release
def test_the_wle_release_joined_with_its_header_twice(tmp_path: Path) -> None:
    """pml-training.csv with its own header line again after 9,000 rows, as
    ``cat`` leaves it: init named a user ``user_name`` and a class ``classe``."""
    release = SHARED_DATA / "releases" / "wle_pml.tar.gz"
    if not release.is_file():
        pytest.skip(f"shared release not found at {release}")
    with tarfile.open(release) as tf:
        raw = tf.extractfile("pml-training.csv.gz")
        assert raw is not None
        lines = gzip.decompress(raw.read()).decode().splitlines(keepends=True)
    (tmp_path / "wle").mkdir()
    (tmp_path / "wle" / "train.csv").write_text("".join([*lines[:9001], lines[0], *lines[9001:]]))
    result = CliRunner().invoke(
        mudata_main,
        ["init", str(tmp_path / "wle"), "--name", "wle", "-o", str(tmp_path / "w.toml")],
    )
    assert result.exit_code != 0
    assert "train.csv: data row 9,001 repeats the header line ('user_name'," in result.output
    assert "user_name: fewer than" not in result.output


def _head(sep: str, cut: int, n: int = 20) -> str:
    """``n`` lines of ``t,x,y,z,label`` with line ``cut`` cut to its first field."""
    lines = [sep.join(["t", "x", "y", "z", "label"])]
    lines += [sep.join([str(i), "0.5", "1.5", "-2.0", "3"]) for i in range(1, n)]
    lines[cut] = lines[cut].split(sep)[0]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("cut", [1, 2, 9, 17])
@pytest.mark.parametrize("sep", [",", ";", "\t", "|"], ids=["comma", "semicolon", "tab", "pipe"])
def test_one_line_cut_short_does_not_make_a_file_one_column(sep: str, cut: int) -> None:
    assert sniff_delimited(_head(sep, cut)) == (sep, ".")


def test_a_separator_missing_from_more_lines_is_not_taken() -> None:
    # Two lines in twenty without it: no separator, as before.
    text = _head(",", 3)
    lines = text.splitlines()
    lines[6] = lines[6].split(",")[0]
    assert sniff_delimited("\n".join(lines) + "\n") == (None, ".")
    # A head of four lines (the last of a head may be cut) tolerates none.
    assert sniff_delimited(_head(",", 2, n=5)) == (None, ".")
    assert sniff_delimited(_head(",", 2, n=6)) == (",", ".")
    # Whitespace-separated numbers with a comma in one line stay whitespace-separated.
    spaced = "\n".join(f"{i} 0.5 1.5" for i in range(20)).replace("0 0.5", "0 0,5", 1)
    assert sniff_delimited(spaced + "\n") == (None, ".")


@pytest.mark.release
@pytest.mark.parametrize("line", [3, 12, 19])
def test_chest_release_with_a_line_cut_short_in_its_first_file(tmp_path: Path, line: int) -> None:
    """1.csv of the chest release with one line cut to its first field (the
    counter): init made the file one column and called it a metadata sheet;
    it now drafts the five columns, counts the row without a label, and the
    draft builds."""
    extract_release("chest_accel_casale_p1-8", tmp_path / "x")
    first = next((tmp_path / "x").rglob("1.csv"))
    lines = first.read_text().splitlines(keepends=True)
    lines[line] = lines[line].split(",")[0] + "\n"
    first.write_text("".join(lines))
    toml = tmp_path / "c.toml"
    result = CliRunner().invoke(
        mudata_main,
        ["init", str(first.parent), "--name", "c", "-o", str(toml), "--sampling-rate", "52"],
    )
    assert result.exit_code == 0, result.output
    assert "label: column 5 (c5), whole numbers with 8 distinct values, 1 row(s) without one" in (
        result.output
    )
    home = tmp_path / "home"
    for step in (["register", str(toml), "--draft-ok"], ["fetch", "c"]):
        done = CliRunner().invoke(mudata_main, [*step, "--data-home", str(home)])
        assert done.exit_code == 0, done.output
    assert mudata.load("c", data_home=home).frame["userid"].nunique() == 8


def test_first_row_longer_than_the_header_is_refused_unless_every_row_is() -> None:
    # Row names (R's write.table): every row one field more; read as before.
    check_first_row(b"a,b\n1,2,3\n4,5,6\n\n7,8,9\n", "r.csv")
    check_first_row(b"a b\nr1 2 3\nr2 5 6\n", "r.txt", separator=None)
    # Separators and line breaks inside quotes are no fields.
    check_first_row(b'a,b\n"x,y",2\n"p\nq",5\n', "q.csv")
    with pytest.raises(ParseError, match=r"data row 1 holds 3 fields and data row 3 holds 2"):
        check_first_row(b"a,b\n1,2,3\n4,5,6\n7,8\n", "f.csv")
    with pytest.raises(ParseError, match=r"the header names 2 columns, data row 1 holds 3"):
        check_first_row(b"a;b\n1;2;3\n4;5\n", "f.csv", separator=";")
    with pytest.raises(ParseError, match=r"data row 1 holds 3 fields and data row 2 holds 2"):
        check_first_row(
            "a\tb\n1\t2\t3\n4\t5\n".encode("utf-16"), "f.tsv", separator="\t", encoding="utf-16"
        )


@pytest.mark.parametrize("sep", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_a_field_too_many_in_the_first_row_is_refused_by_init_and_fetch(
    tmp_path: Path, sep: str
) -> None:
    """pandas took the first column as a row index and moved every name one
    column to the right: ``f2`` was dropped as mostly missing, ``f1`` held
    ``f2``'s numbers."""
    data = tmp_path / "data"
    write_users(data, ["u1", "u2", "u3"], np.random.default_rng(5))
    for csv in data.glob("*.csv"):
        lines = pd.read_csv(csv).to_csv(sep=sep, index=False).splitlines()
        lines[1] += f"{sep}0.5"
        csv.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(
        mudata_main, ["init", str(data), "--name", "x", "-o", str(tmp_path / "x.toml")]
    )
    assert result.exit_code != 0
    assert (
        "u1.csv: the header names 4 columns, data row 1 holds 5 fields and data row 2 holds 4"
        in (result.output)
    ), result.output
    toml = tmp_path / "globbed.toml"
    options = f"[reader_options]\nseparator = {sep!r}\n".replace("'", '"').replace("\t", "\\t")
    toml.write_text(entry_text("data", "*.csv").replace("[reader_options]\n", options, 1))
    with pytest.raises(
        ParseError, match=r"u1.csv.*: the header names 4 columns, data row 1 holds 5"
    ):
        mudata.building.pipeline.build(
            load_entry_file(toml), BuildOptions(data_home=tmp_path / "home", allow_unverified=True)
        )


def test_row_names_without_a_header_cell_are_read_as_before(tmp_path: Path) -> None:
    """R's write.table: a header of N names over rows of a row name and N fields."""
    data = tmp_path / "data"
    write_users(data, ["u1", "u2", "u3"], np.random.default_rng(5))
    expected = {}
    for csv in data.glob("*.csv"):
        frame = pd.read_csv(csv)
        expected[csv.stem] = frame
        lines = frame.to_csv(index=False).splitlines()
        csv.write_text(
            "\n".join([lines[0], *(f'"{i}",{x}' for i, x in enumerate(lines[1:], 1))]) + "\n"
        )
    toml = tmp_path / "globbed.toml"
    toml.write_text(entry_text("data", "*.csv"))
    path = mudata.building.pipeline.build(
        load_entry_file(toml), BuildOptions(data_home=tmp_path / "home", allow_unverified=True)
    )
    built = pd.read_parquet(path)
    u1 = built[built["userid"] == "u1"]
    assert np.allclose(np.sort(u1["f1"]), np.sort(expected["u1"]["f1"]))
    assert np.allclose(np.sort(u1["f2"]), np.sort(expected["u1"]["f2"]))


@pytest.mark.release
@pytest.mark.parametrize("field", ["9", ""])
def test_motionsense_with_a_field_too_many_in_its_first_row(tmp_path: Path, field: str) -> None:
    """sub_1.csv of MotionSense with one more field on its first data row: init
    dropped userAcceleration.z (its column mostly missing) and named the
    channels one column off."""
    result = init_motionsense_with(tmp_path, 1, lambda text: f"{text},{field}")
    assert result.exit_code != 0
    assert (
        "sub_1.csv: the header names 13 columns, data row 1 holds 14 fields and data row 2 holds 13"
        in result.output
    ), result.output


@pytest.mark.parametrize("sep", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_the_header_twice_at_the_top_is_named(tmp_path: Path, sep: str) -> None:
    """Two header lines first: init took the file for one without a header
    (no line of numbers under the names) and asked for a label column."""
    data = tmp_path / "data"
    write_users(data, ["u1", "u2", "u3"], np.random.default_rng(5))
    for csv in data.glob("*.csv"):
        lines = pd.read_csv(csv).to_csv(sep=sep, index=False).splitlines()
        csv.write_text("\n".join([lines[0], *lines]) + "\n")
    result = CliRunner().invoke(
        mudata_main, ["init", str(data), "--name", "x", "-o", str(tmp_path / "x.toml")]
    )
    assert result.exit_code != 0
    assert "u1.csv: data row 1 repeats the header line ('user', 'act', 'f1', 'f2')" in (
        result.output
    ), result.output
