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
from mudata.building.options import BuildOptions
from mudata.cli import main as mudata_main
from mudata.errors import ParseError
from mudata.readers.delimited import check_no_repeated_header, sniff_delimited
from mudata.registry.lookup import load_entry_file
from tests.conftest import SHARED_DATA
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
    # A short head tolerates no line without it.
    assert sniff_delimited(_head(",", 2, n=6)) == (None, ".")
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
    release = SHARED_DATA / "releases" / "chest_accel_casale_p1-8.tar.gz"
    if not release.is_file():
        pytest.skip(f"shared release not found at {release}")
    with tarfile.open(release) as tf:
        tf.extractall(tmp_path / "x", filter="data")
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
