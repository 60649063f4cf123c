"""The long-signals reader: users, labels and recordings from paths; time within a recording.

Issue 10, points 2 and 6. Files are written by the tests in the layouts real
datasets use (one file per recording named after subject and activity,
whitespace-separated text without a header, clocks restarting per recording).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mudata.building.labelled import build_table
from mudata.errors import ParseError, RegistryError
from mudata.readers.sources import Sources
from mudata.readers.tabular import read_long_signals
from tests.entries import entry

WALK_SIT = [("walk", "walking"), ("sit", "sitting")]


def write_recordings(root, rng, n=30, users=("f1", "m2"), labels=("walk", "sit")) -> None:
    """One whitespace text file per (user, activity, trial), no header, no time column."""
    for user in users:
        for label in labels:
            for trial in (1, 2):
                folder = root / label
                folder.mkdir(parents=True, exist_ok=True)
                values = rng.normal(size=(n, 3))
                text = "\n".join(" ".join(f"{v:.5f}" for v in row) for row in values)
                (folder / f"{user}_t{trial}.txt").write_text(text + "\n", encoding="utf-8")


PATH_OPTIONS = {
    "format": "text",
    "members": "*.txt",
    "header": False,
    "columns": {"ax": 1, "ay": 2, "az": 3},
    "path_pattern": r"(?P<label>[a-z]+)/(?P<user>[a-z]+\d+)_t(?P<recording>\d+)\.txt$",
}


def test_path_pattern_gives_user_label_and_recording(tmp_path):
    write_recordings(tmp_path, np.random.default_rng(0))
    frame = read_long_signals(
        entry("long-signals", PATH_OPTIONS, WALK_SIT), Sources([tmp_path])
    ).frame
    assert len(frame) == 2 * 2 * 2 * 30
    assert sorted(frame["userid"].unique()) == ["f1", "m2"]  # text ids stay as written
    assert sorted(frame["label"].unique()) == ["sit", "walk"]
    assert frame["recording"].nunique() == 8  # one per file
    first = np.loadtxt(tmp_path / "sit" / "f1_t1.txt")
    np.testing.assert_allclose(frame[["ax", "ay", "az"]].to_numpy()[:30], first)


def test_files_without_time_are_windowed_in_sample_order_per_recording(tmp_path):
    write_recordings(tmp_path, np.random.default_rng(1), n=25)
    table, counts = build_table(entry("long-signals", PATH_OPTIONS, WALK_SIT), Sources([tmp_path]))
    # 25 samples a recording, window 10: starts 1, 11, 21, the last dropped -> 2 windows
    assert len(table) == 2 * 2 * 2 * 2
    assert counts["samples_outside_windows"] == 8 * 5


def test_windows_never_cross_a_recording(tmp_path):
    rng = np.random.default_rng(2)
    # Two recordings of one user and class, far apart in value: a window spanning
    # both would have a mean near 50.
    for trial, level in ((1, 0.0), (2, 100.0)):
        for user in ("u1", "u2"):
            for label in ("walk", "sit"):
                folder = tmp_path / label
                folder.mkdir(exist_ok=True)
                values = level + rng.normal(size=(25, 3))
                np.savetxt(folder / f"{user}_t{trial}.txt", values)
    options = {
        **PATH_OPTIONS,
        "path_pattern": r"(?P<label>[a-z]+)/(?P<user>u\d)_t(?P<recording>\d)",
    }
    table, _ = build_table(entry("long-signals", options, WALK_SIT), Sources([tmp_path]))
    means = table["meanX"].to_numpy()
    assert len(means) == 2 * 2 * 2 * 2
    assert ((means < 5) | (means > 95)).all(), means


def test_path_pattern_errors_name_the_file_and_the_option(tmp_path):
    write_recordings(tmp_path, np.random.default_rng(3))
    (tmp_path / "walk" / "notes.txt").write_text("1 2 3\n", encoding="utf-8")
    with pytest.raises(
        ParseError, match=r"walk/notes\.txt: the path does not match reader_options\.path_pattern"
    ):
        read_long_signals(entry("long-signals", PATH_OPTIONS, WALK_SIT), Sources([tmp_path]))
    bad = {**PATH_OPTIONS, "path_pattern": r"(?P<subject>\w+)"}
    with pytest.raises(RegistryError, match=r"path_pattern': unknown group\(s\) \['subject'\]"):
        read_long_signals(entry("long-signals", bad, WALK_SIT), Sources([tmp_path]))
    both = {**PATH_OPTIONS, "user_col": "ax"}
    with pytest.raises(
        RegistryError,
        match="user from reader_options.user_col or from a 'user' group of path_pattern; both given",
    ):
        read_long_signals(entry("long-signals", both, WALK_SIT), Sources([tmp_path]))


def _long_csv(path, t, trial=None, user="S01") -> None:
    n = len(t)
    frame = pd.DataFrame(
        {
            "subject": user,
            "t": t,
            "activity": ["walk", "sit"] * (n // 2),
            "ax": np.arange(n, dtype=float),
            "ay": 1.0,
            "az": 2.0,
        }
    )
    if trial is not None:
        frame.insert(1, "trial", trial)
    frame.to_csv(path, index=False)


CSV_OPTIONS = {"format": "csv", "user_col": "subject", "label_col": "activity", "time_col": "t"}


def test_duplicated_time_inside_a_recording_names_file_and_row(tmp_path):
    # Two trials in one file, each restarting its clock at 0: without a recording
    # column they would interleave; they are an error naming the file and row.
    _long_csv(tmp_path / "all.csv", [0, 1, 2, 3, 0, 1, 2, 3], trial=[1, 1, 1, 1, 2, 2, 2, 2])
    with pytest.raises(
        ParseError,
        match=r"all\.csv, row 4 \(line 6\): time column 't' goes back from the time of row 3 inside one recording.*recording_col",
    ):
        read_long_signals(entry("long-signals", CSV_OPTIONS, WALK_SIT), Sources([tmp_path]))
    frame = read_long_signals(
        entry("long-signals", {**CSV_OPTIONS, "recording_col": "trial"}, WALK_SIT),
        Sources([tmp_path]),
    ).frame
    assert frame["recording"].tolist() == [0] * 4 + [1] * 4
    assert frame["ax"].tolist() == list(range(8))  # not interleaved by time


def test_decreasing_time_is_an_error(tmp_path):
    _long_csv(tmp_path / "s.csv", [0.0, 0.02, 0.01, 0.03])
    with pytest.raises(
        ParseError,
        match=r"s\.csv, row 2 \(line 4\): time column 't' goes back from the time of row 1",
    ):
        read_long_signals(entry("long-signals", CSV_OPTIONS, WALK_SIT), Sources([tmp_path]))


def test_text_timestamps_are_parsed_as_datetimes(tmp_path):
    # As text, "10:00:00" sorts before "9:59:59"; as times it comes after.
    _long_csv(tmp_path / "s.csv", ["9:59:58", "9:59:59", "10:00:00", "10:00:01"])
    frame = read_long_signals(
        entry("long-signals", CSV_OPTIONS, WALK_SIT), Sources([tmp_path])
    ).frame
    assert frame["ax"].tolist() == [0.0, 1.0, 2.0, 3.0]
    _long_csv(
        tmp_path / "s.csv",
        [
            "2019-01-12 00:00:00.000",
            "2019-01-12 00:00:00.020",
            "2019-01-12 00:00:00.040",
            "2019-01-12 00:00:00.040",
        ],
    )
    # A repeated time is real data (two samples in one millisecond): kept, counted.
    repeated = read_long_signals(
        entry("long-signals", CSV_OPTIONS, WALK_SIT), Sources([tmp_path])
    ).frame
    assert repeated["ax"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert repeated.attrs["time_repeats"] == {"s.csv": 1}
    _long_csv(tmp_path / "s.csv", ["9:00", "soon", "10:00", "11:00"])
    with pytest.raises(
        ParseError,
        match=r"s\.csv: time column 't', row 1: 'soon' is neither a number nor a date/time",
    ):
        read_long_signals(entry("long-signals", CSV_OPTIONS, WALK_SIT), Sources([tmp_path]))


def test_restarting_clocks_keep_features_of_each_recording(tmp_path):
    """The issue's case: recordings restarting at 0 were interleaved and a mean feature moved."""
    rng = np.random.default_rng(4)
    parts = []
    for trial, level in ((1, 0.0), (2, 10.0)):
        labels = ["walk"] * 25 + ["sit"] * 25
        parts.append(
            pd.DataFrame(
                {
                    "subject": "S1",
                    "trial": trial,
                    "t": np.arange(50) / 50,
                    "activity": labels,
                    "ax": level + rng.normal(size=50),
                    "ay": rng.normal(size=50),
                    "az": rng.normal(size=50),
                }
            )
        )
    frame = pd.concat(parts)
    frame.to_csv(tmp_path / "S1.csv", index=False)
    frame.assign(subject="S2").to_csv(tmp_path / "S2.csv", index=False)
    options = {**CSV_OPTIONS, "recording_col": "trial"}
    table, _ = build_table(entry("long-signals", options, WALK_SIT), Sources([tmp_path]))
    means = table["meanX"].to_numpy()
    assert len(means) == 2 * 2 * 2 * 2
    assert ((means < 3) | (means > 7)).all(), means
    # The control: without time and recording columns, each file is one recording
    # and a window spans the two trials.
    plain = {"format": "csv", "user_col": "subject", "label_col": "activity"}
    table, _ = build_table(entry("long-signals", plain, WALK_SIT), Sources([tmp_path]))
    assert ((table["meanX"] > 3) & (table["meanX"] < 7)).any()
