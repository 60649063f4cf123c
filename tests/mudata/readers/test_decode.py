"""Files read as published (issue 16, points 4 and 5): compressed streams, MATLAB
files, semicolon and tab separated text, repeated and decreasing times."""

from __future__ import annotations

import bz2
import gzip
import lzma
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.io import savemat

from mudata.errors import LimitError, ParseError, RegistryError
from mudata.readers.decode import decompress
from mudata.readers.delimited import sniff_delimited
from mudata.readers.matlab import read_mat
from mudata.readers.sources import Sources
from mudata.readers.tabular import read_long_signals
from mudata.registry.lookup import parse_entry
from tests.hostile_inputs import mat_bomb


def tiny_entry_data() -> dict:
    """A valid entry document without reader options (the tests add theirs)."""
    return {
        "name": "decoded",
        "title": "Decoded",
        "version": "1",
        "homepage": "https://example.org/decoded",
        "licence": "CC0-1.0",
        "citation": "Someone (2026).",
        "sampling_rate_hz": 50,
        "reader": "feature-table",
        "recipe": {"name": "precomputed"},
        "classes": [{"code": "a", "name": "a"}, {"code": "b", "name": "b"}],
        "files": [{"name": "f", "path": "f.csv"}],
    }


def signals_entry(options: dict, **extra) -> object:
    data = tiny_entry_data()
    data.update(
        {
            "reader": "long-signals",
            "recipe": {"name": "study-window", "window": 4},
            "sensors": [{"name": "acc", "channels": ["x", "y", "z"]}],
            "classes": [{"code": "a", "name": "a"}, {"code": "b", "name": "b"}],
            "reader_options": {"user_col": "user", "label_col": "label", **options},
            **extra,
        }
    )
    return parse_entry(data)


def table(n: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "user": ["u1"] * n,
            "label": ["a"] * (n // 2) + ["b"] * (n - n // 2),
            "t": np.arange(n) * 20,
            "x": rng.normal(size=n).round(3),
            "y": rng.normal(size=n).round(3),
            "z": rng.normal(size=n).round(3),
        }
    )


@pytest.mark.parametrize(
    "suffix, compress", [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)]
)
def test_compressed_single_files_are_read_whole(tmp_path, suffix, compress):
    path = tmp_path / f"u1.csv{suffix}"
    path.write_bytes(compress(table().to_csv(index=False).encode()))
    entry = signals_entry({"members": f"*.csv{suffix}"})
    frame = read_long_signals(entry, Sources([path])).frame
    assert len(frame) == 12 and list(frame["x"]) == list(table()["x"])


def test_compressed_members_of_an_archive_are_read(tmp_path):
    archive = tmp_path / "release.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("data/u1.csv.gz", gzip.compress(table().to_csv(index=False).encode()))
    entry = signals_entry({"members": "*.csv.gz"})
    assert len(read_long_signals(entry, Sources([archive])).frame) == 12


def test_a_stream_expanding_past_the_cap_is_refused(tmp_path):
    # Past the cap's floor (64 MiB, as for archives) and 100 bytes per byte: refused.
    bomb = gzip.compress(bytes(65 << 20), compresslevel=1)
    with pytest.raises(LimitError, match="x.csv.gz: the gzip stream expands to more than"):
        decompress(bomb, "x.csv.gz")
    assert len(decompress(bomb, "x.csv.gz", ratio=float("inf"))) == 65 << 20


def test_a_corrupt_stream_is_a_parse_error_naming_the_file():
    with pytest.raises(ParseError, match="x.txt.gz: not a readable gzip stream"):
        decompress(gzip.compress(b"1 2 3\n" * 100)[:30], "x.txt.gz")


def test_matlab_v5_arrays_are_found_or_named(tmp_path):
    path = tmp_path / "a.mat"
    savemat(path, {"d_iner": np.arange(12.0).reshape(4, 3), "label": "text is not an array"})
    frame = read_mat(path.read_bytes(), "a.mat")
    assert frame.shape == (4, 3) and frame.iloc[1, 0] == 3.0
    savemat(path, {"acc": np.zeros((4, 3)), "gyro": np.ones((4, 3))})
    with pytest.raises(ParseError, match="2 numeric 2-D variables.*reader_options.variable"):
        read_mat(path.read_bytes(), "a.mat")
    assert read_mat(path.read_bytes(), "a.mat", "gyro").iloc[0, 0] == 1.0
    with pytest.raises(ParseError, match="no numeric 2-D variable 'mag'"):
        read_mat(path.read_bytes(), "a.mat", "mag")


def test_matlab_v73_files_are_refused_naming_the_format():
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64".ljust(512, b" ")
    data = header + b"\x89HDF\r\n\x1a\n" + bytes(100)
    with pytest.raises(ParseError, match=r"a MATLAB v7.3 \(HDF5\) file"):
        read_mat(data, "trial.mat")


def test_semicolons_with_decimal_commas_and_tabs_are_detected():
    assert sniff_delimited("user;x;y\nu1;1,5;2,25\nu1;1,0;2,0\n") == (";", ",")
    assert sniff_delimited("user\tx\ty\nu1\t1.5\t2\nu1\t1\t2\n") == ("\t", ".")
    assert sniff_delimited("1 2 3\n4 5 6\n") == (None, ".")
    assert sniff_delimited('"a","b"\n"1","2,5"\n"3","4"\n') == (",", ".")


def test_semicolon_csv_with_decimal_commas_is_read(tmp_path):
    text = table().to_csv(index=False, sep=";", decimal=",")
    (tmp_path / "u1.csv").write_text(text)
    entry = signals_entry({"separator": ";", "decimal": ","})
    frame = read_long_signals(entry, Sources([tmp_path / "u1.csv"])).frame
    assert np.allclose(frame["x"], table()["x"])
    with pytest.raises(RegistryError, match="separator"):
        parse_entry({**tiny_entry_data(), "reader_options": {"separator": ":"}})


def test_repeated_times_are_kept_and_counted_decreasing_ones_refused(tmp_path):
    frame = table()
    frame.loc[5, "t"] = frame.loc[4, "t"]
    frame.to_csv(tmp_path / "u1.csv", index=False)
    entry = signals_entry({"time_col": "t"})
    read = read_long_signals(entry, Sources([tmp_path / "u1.csv"])).frame
    assert len(read) == 12 and read.attrs["time_repeats"] == {"u1.csv": 1}
    frame.loc[8, "t"] = 0
    frame.to_csv(tmp_path / "u1.csv", index=False)
    with pytest.raises(ParseError, match=r"u1.csv, row 8 \(line 10\): time column 't' goes back"):
        read_long_signals(entry, Sources([tmp_path / "u1.csv"]))
    in_file_order = signals_entry({"time_col": "t", "time_order": "file"})
    assert len(read_long_signals(in_file_order, Sources([tmp_path / "u1.csv"])).frame) == 12
    with pytest.raises(RegistryError, match="time_order"):
        parse_entry(
            {**tiny_entry_data(), "reader_options": {"time_order": "sorted"}},
            source=Path("e.toml"),
        )


def test_a_matlab_array_declared_past_the_cap_is_refused_before_decompressing(tmp_path):
    # The file declares 400 million doubles (3.2 GB) and holds ten: refused from
    # its declared shape, with a LimitError, never decompressed (reading it
    # would end in a ParseError, the stream being short).
    path = tmp_path / "bomb.mat"
    mat_bomb(path, 400_000_000, written=10)
    assert path.stat().st_size < 1000
    with pytest.raises(LimitError, match=r"bomb.mat: variable 'x' declares a 400000000x1 double"):
        read_mat(path.read_bytes(), "bomb.mat")
    with pytest.raises(LimitError, match="3,200,000,000 bytes as float64"):
        read_mat(path.read_bytes(), "bomb.mat", "x", ratio=1e6)
    # A lifted cap lets scipy try, which finds the stream short.
    with pytest.raises(ParseError, match="cannot be read as a MATLAB .mat file"):
        read_mat(path.read_bytes(), "bomb.mat", ratio=float("inf"))


def test_a_matlab_array_within_the_cap_is_read_and_others_are_left_unread(tmp_path):
    path = tmp_path / "a.mat"
    mat_bomb(path, 4)
    assert read_mat(path.read_bytes(), "a.mat").shape == (4, 1)
    # A second, hostile array is skipped (never decompressed) when another is named.
    savemat(path, {"acc": np.ones((3, 2))})
    bomb = tmp_path / "b.mat"
    mat_bomb(bomb, 400_000_000, written=10, name="big")
    both = path.read_bytes() + bomb.read_bytes()[128:]  # one v5 file, two variables
    assert read_mat(both, "c.mat", "acc").iloc[0, 1] == 1.0
