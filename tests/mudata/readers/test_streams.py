"""Multiplexed streams: several devices and sensor types in one file (issue 28, item 4).

Files are written here as loggers write them (:mod:`tests.stream_shapes`):
streams keyed by columns, each at its own rate with a jittered clock, rows
delivered in bursts so that time goes back across streams but not inside
one. Window counts are computed by a second implementation of the
alignment (Python's bisect, sample by sample) from the samples written.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
from mudata.building.labelled import build_table
from mudata.cli import main
from mudata.drafting.sensors import group_channels, stream_sensors
from mudata.errors import ParseError, RegistryError
from mudata.readers.long_stream import stream_long_signals
from mudata.readers.sources import Sources
from mudata.readers.streams import resample_linear
from mudata.readers.tabular import read_long_signals
from mudata.records.entry import TRI_AXIAL
from tests.entries import entry
from tests.project.test_release_shapes import walk
from tests.stream_shapes import Stream, Written, kept_samples, stream_label, write_multiplexed

AB = [("a", "a"), ("b", "b")]
KEYS = ["Sensor ID", "Sensor Type"]


def _entry(streams: dict, channels=("x [Sensor Type=0]", "y [Sensor Type=0]", "z [Sensor Type=0]")):
    options = {
        "members": "*.csv",
        "user_col": "user",
        "label_col": "label",
        "time_col": "t",
        "channels": ["x", "y", "z"],
        "streams": streams,
    }
    return entry("long-signals", options, AB, channels=channels)


def _csv(path: Path, rows: list[tuple]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    lines = ["Sensor Type,t,x,y,z,user,label"] + [",".join(map(str, r)) for r in rows]
    (path / "rec.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------- the alignment, by hand


def test_resample_linear_by_hand():
    time = np.array([5.0, 15.0, 25.0, 35.0])
    values = np.array([[0.0, 1.0], [10.0, 1.0], [20.0, 3.0], [30.0, 3.0]])
    grid = np.array([0.0, 10.0, 15.0, 20.0, 35.0, 40.0])
    out, inside, before, after = resample_linear(grid, time, values)
    # 10 lies a half-way between 5 (0) and 15 (10); 15 and 35 are samples; 0 and 40 outside
    np.testing.assert_array_equal(inside, [False, True, True, True, True, False])
    np.testing.assert_allclose(out[inside], [[5.0, 1.0], [10.0, 1.0], [15.0, 2.0], [30.0, 3.0]])
    assert np.isnan(out[~inside]).all()
    assert before[1:5].tolist() == [0, 1, 1, 3] and after[1:5].tolist() == [1, 1, 2, 3]
    # samples sharing one time: the first of them is used
    out, inside, before, _ = resample_linear(
        np.array([5.0]), np.array([0.0, 0.0, 10.0]), np.array([[1.0], [9.0], [11.0]])
    )
    assert out[0, 0] == pytest.approx(6.0) and before[0] == 0


def test_slowest_alignment_on_a_hand_case(tmp_path):
    # type 1 every 20 ms (the slowest: the grid), type 0 every 10 ms at 5, 15, ... with x = t.
    rows = [(1, t, 100 + t, 0, 0, "u", "a") for t in (0, 20, 40, 60)]
    rows += [(0, t, t, 2 * t, 1, "u", "a") for t in (5, 15, 25, 35)]
    rows += [(0, 45, 45, 90, 1, "u", "b"), (0, 55, 55, 110, 1, "u", "b")]
    rows.sort(key=lambda r: (r[1] // 30, r[0]))  # bursts: time goes back across streams
    files = _csv(tmp_path / "d", rows)
    frame = read_long_signals(_entry({"keys": ["Sensor Type"]}), Sources([files])).frame
    # t=0: before type 0's first sample (dropped); t=20: between 15 and 25 (x 20, y 40);
    # t=40: between 35 (label a) and 45 (label b), two classes (dropped); t=60: after 55 (dropped)
    assert frame["x [Sensor Type=0]"].tolist() == [20.0]
    assert frame["y [Sensor Type=0]"].tolist() == [40.0]
    assert frame["x [Sensor Type=1]"].tolist() == [120.0]
    info = frame.attrs["streams"]["rec.csv"]
    assert info["reference"] == "Sensor Type=1"
    assert (info["outside"], info["mixed"], info["rows"]) == (2, 1, 1)
    assert info["streams"]["Sensor Type=0"] == {"rows": 6, "step": 10.0}


# ------------------------------------------------------------- hostile input


def test_time_going_back_inside_one_stream_names_the_stream_and_the_row(tmp_path):
    rows = [(0, 0, 1, 1, 1, "u", "a"), (1, 0, 1, 1, 1, "u", "a"), (0, 10, 1, 1, 1, "u", "a")]
    rows += [(1, 20, 1, 1, 1, "u", "a"), (0, 5, 1, 1, 1, "u", "a"), (1, 40, 1, 1, 1, "u", "a")]
    files = _csv(tmp_path / "d", rows)
    with pytest.raises(ParseError) as caught:
        read_long_signals(_entry({"keys": ["Sensor Type"]}), Sources([files]))
    message = str(caught.value)
    assert "rec.csv, row 4 (line 6)" in message and "row 2" in message
    assert "stream 'Sensor Type=0' of user 'u'" in message
    assert "never inside one" in message


def test_a_selected_stream_that_does_not_exist_lists_the_streams_found(tmp_path):
    rows = [(s, t, 1, 1, 1, "u", "a") for t in (0, 10, 20) for s in (0, 1)]
    files = _csv(tmp_path / "d", rows)
    streams = {"keys": ["Sensor Type"], "select": ["Sensor Type=2"]}
    with pytest.raises(ParseError, match=r"no stream matches .*'Sensor Type=2'") as caught:
        read_long_signals(_entry(streams), Sources([files]))
    assert "['Sensor Type=0', 'Sensor Type=1']" in str(caught.value)


def test_a_stream_with_too_few_rows_is_refused(tmp_path):
    rows = [(0, t, 1, 1, 1, "u", "a") for t in (0, 10, 20, 30)] + [(1, 5, 1, 1, 1, "u", "a")]
    files = _csv(tmp_path / "d", rows)
    with pytest.raises(ParseError, match=r"stream 'Sensor Type=1' has 1 row\(s\) of user 'u'"):
        read_long_signals(_entry({"keys": ["Sensor Type"]}), Sources([files]))
    # leaving it out with select reads the other one alone
    streams = {"keys": ["Sensor Type"], "select": ["Sensor Type=0"]}
    frame = read_long_signals(_entry(streams), Sources([files])).frame
    assert len(frame) == 4


@pytest.mark.parametrize(
    ("streams", "message"),
    [
        ({"keys": []}, r"streams.keys': \[\] should be non-empty"),
        ({"keys": ["Sensor Type"], "align": "fastest"}, "'fastest' is not one of"),
        (
            {"keys": ["Sensor Type"], "select": ["Sensor Type"]},
            r"select\[0\]': 'Sensor Type' does not",
        ),
        ({"keys": ["Sensor Type"], "select": ["Model=3"]}, "'Model', not a stream key"),
        ({"keys": ["Sensor Type"], "select": ["Sensor Type=1,Sensor Type=2"]}, "twice"),
        ({"keys": ["Sensor Type"], "pivot": True}, "'pivot' was unexpected"),
        ({"keys": ["x"]}, "column 'x' is a channel"),
        ({"keys": ["user"]}, "column 'user' is the user column"),
    ],
)
def test_bad_stream_options_are_registry_errors(tmp_path, streams, message):
    rows = [(s, t, 1, 1, 1, "u", "a") for t in (0, 10, 20) for s in (0, 1)]
    files = _csv(tmp_path / "d", rows)
    with pytest.raises(RegistryError, match=message):
        read_long_signals(_entry(streams), Sources([files]))


def test_the_schema_refuses_a_bad_align_at_register(tmp_path):
    toml = tmp_path / "x.toml"
    toml.write_text(
        'name = "x"\ntitle = "x"\nversion = "1"\nhomepage = "https://example.org"\n'
        'licence = "CC-BY-4.0"\ncitation = "c"\nsampling_rate_hz = 50\nreader = "long-signals"\n'
        '[reader_options]\nstreams = { keys = ["t"], align = "fastest" }\n'
        '[recipe]\nname = "study-window"\nwindow = 10\n'
        '[[sensors]]\nname = "s"\nchannels = ["x", "y", "z"]\n'
        '[[classes]]\ncode = 1\nname = "a"\n[[classes]]\ncode = 2\nname = "b"\n'
        '[[files]]\nname = "d"\npath = "d"\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["register", str(toml), "--data-home", str(tmp_path / "h")])
    assert result.exit_code != 0
    assert "reader_options.streams.align" in result.output, result.output
    assert "fastest" in result.output


# ------------------------------------------------------------- generated releases


def _release(root: Path, shape: str, rng: np.random.Generator) -> tuple[Written, dict]:
    """One generated release of ``shape``; what it holds, and what init should find."""
    written = Written()
    if shape == "sensor-id-type":
        # One file per user; the accelerometer at 100 Hz and the gyroscope at 50 Hz.
        streams = [Stream({"Sensor ID": 1, "Sensor Type": 0}, 100.0),
                   Stream({"Sensor ID": 1, "Sensor Type": 1}, 50.0, 3.0)]  # fmt: skip
        for user in ("p01", "p02", "p03", "p04"):
            write_multiplexed(
                root / f"subject_{user}.csv", users=[user], user_col=None, streams=streams,
                classes=[1, 2, 3], seconds=12, rng=rng, written=written,
                header=["timestamp", "Sensor ID", "Sensor Type", "x", "y", "z", "label"],
            )  # fmt: skip
        expect = {"keys": ["Sensor Type"], "slowest": 1}
    elif shape == "hhar-devices":
        # HHAR's Phones_accelerometer.csv: every user and device in one file, text keys.
        streams = [Stream({"Model": "nexus4", "Device": "nexus4_1"}, 100.0),
                   Stream({"Model": "nexus4", "Device": "nexus4_2"}, 100.0, 1.0),
                   Stream({"Model": "s3mini", "Device": "s3mini_1"}, 40.0, 2.0)]  # fmt: skip
        write_multiplexed(
            root / "Phones_accelerometer.csv", users=["a", "b", "c", "d"], user_col="User",
            label_col="gt", time_col="Arrival_Time", clock_col="Creation_Time",
            index_col="Index", epoch=1_424_696_633.0, streams=streams,
            classes=["walk", "sit", "stand"], seconds=12, rng=rng, written=written,
            header=["Index", "Arrival_Time", "Creation_Time", "x", "y", "z", "User", "Model",
                    "Device", "gt"],
        )  # fmt: skip
        expect = {"keys": ["Device"], "slowest": 2}
    elif shape == "time-sorted":
        # The logger sorted the rows by time: it never goes back, the streams still interleave.
        streams = [Stream({"sensor_type": 1}, 100.0), Stream({"sensor_type": 4}, 50.0, 2.0)]
        for user in ("u1", "u2", "u3"):
            write_multiplexed(
                root / f"{user}.csv", users=[user], user_col="user", streams=streams, burst=1,
                classes=[0, 1], seconds=12, rng=rng, written=written, time_col="ts",
                header=["ts", "sensor_type", "x", "y", "z", "user", "label"],
            )  # fmt: skip
        expect = {"keys": ["sensor_type"], "slowest": 1}
    else:  # "device-ns": keys last, time in nanoseconds, other channel names
        streams = [Stream({"device": "wrist", "sensor": "acc"}, 64.0),
                   Stream({"device": "wrist", "sensor": "gyr"}, 32.0, 2.0),
                   Stream({"device": "hip", "sensor": "acc"}, 64.0, 4.0)]  # fmt: skip
        for user in ("s1", "s2", "s3", "s4"):
            write_multiplexed(
                root / user / "signals.csv", users=[user], user_col="subject", label_col="activity",
                time_col="timestamp(ns)", time_unit=1e9, channels=("ax", "ay", "az"),
                streams=streams, classes=["run", "walk", "rest"], seconds=12, rng=rng,
                written=written, burst=13,
                header=["subject", "timestamp(ns)", "ax", "ay", "az", "activity", "device", "sensor"],
            )  # fmt: skip
        expect = {"keys": ["device", "sensor"], "slowest": 1}
    return written, {**expect, "streams": streams}


SHAPES = ["sensor-id-type", "hhar-devices", "device-ns", "time-sorted"]


def files_of(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.csv"))


@pytest.mark.parametrize("shape", SHAPES)
def test_init_finds_the_streams_and_the_table_holds_the_windows_they_give(tmp_path, shape):
    files = tmp_path / "release"
    written, expect = _release(files, shape, np.random.default_rng(SHAPES.index(shape)))
    toml = tmp_path / "mux.toml"
    runner = CliRunner()
    args = ["init", str(files), "--name", "mux", "-o", str(toml), "--min-per-class", "1"]
    init = runner.invoke(main, [*args, "--window", "1"])
    assert init.exit_code == 0, init.output
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    options = draft["reader_options"]
    # the unit the rates read the time in: the column's name says ns, else milliseconds
    unit = "ns" if shape == "device-ns" else "ms"
    assert options["streams"] == {
        "keys": expect["keys"],
        "select": [],
        "align": "slowest",
        "time_unit": unit,
    }
    streams = expect["streams"]
    # a stream is named by the keys init found (a constant column names none)
    shown = [",".join(f"{k}={st.key[k]}" for k in expect["keys"]) for st in streams]
    # init states each stream with its rows and rate, and the slowest one
    lines = init.output.splitlines()
    for name, stream in zip(shown, streams, strict=True):
        line = next(line for line in lines if line.startswith(f"  {name}: "))
        rate = float(line.split(", ")[-1].removesuffix(" Hz"))
        assert abs(rate - stream.rate_hz) <= 0.05 * stream.rate_hz, line
        rows = sum(len(samples[stream_label(stream)]) for samples in written.samples.values())
        first = next(iter(written.samples.values()))
        in_first = len(first[stream_label(stream)]) if len(files_of(files)) > 1 else rows
        assert line.startswith(f"  {name}: {in_first:,} rows"), line
    slowest = streams[expect["slowest"]]
    assert draft["sampling_rate_hz"] == pytest.approx(slowest.rate_hz, rel=0.05)
    sensors = {tuple(s["channels"]) for s in draft["sensors"]}
    assert sensors == {tuple(f"{c} [{n}]" for c in options["channels"]) for n in shown}
    for key in expect["keys"]:
        assert key not in options["channels"]
    home = str(tmp_path / "home")
    assert (
        runner.invoke(main, ["register", str(toml), "--data-home", home, "--draft-ok"]).exit_code
        == 0
    )
    fetched = runner.invoke(main, ["fetch", "mux", "--data-home", home])
    assert fetched.exit_code == 0, fetched.output
    table = mudata.load("mux", data_home=home).frame
    expected = _expected_windows(written, stream_label(slowest), draft["recipe"]["window"])
    got = table.groupby(["userid", "label"]).size()
    assert {(str(u), str(c)): int(n) for (u, c), n in got.items()} == expected
    assert sorted(table["userid"].astype(str).unique()) == sorted(map(str, written.samples))


def test_per_stream_windows_each_stream_on_its_own(tmp_path):
    files = tmp_path / "release"
    written, _ = _release(files, "hhar-devices", np.random.default_rng(5))
    toml = tmp_path / "mux.toml"
    runner = CliRunner()
    args = ["init", str(files), "--name", "mux", "-o", str(toml), "--min-per-class", "1"]
    init = runner.invoke(
        main,
        [*args, "--window", "1", "--stream-align", "per-stream", "--stream", "Device=nexus4_1",
         "--stream", "Device=nexus4_2"],
    )  # fmt: skip
    assert init.exit_code == 0, init.output
    assert "each stream is a recording of its own" in init.output
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    assert draft["reader_options"]["streams"] == {
        "keys": ["Device"],
        "select": ["Device=nexus4_1", "Device=nexus4_2"],
        "align": "per-stream",
        "time_unit": "ms",
    }
    assert [s["channels"] for s in draft["sensors"]] == [["x", "y", "z"]]
    home = str(tmp_path / "home")
    assert (
        runner.invoke(main, ["register", str(toml), "--data-home", home, "--draft-ok"]).exit_code
        == 0
    )
    assert runner.invoke(main, ["fetch", "mux", "--data-home", home]).exit_code == 0
    table = mudata.load("mux", data_home=home).frame
    window = draft["recipe"]["window"]
    expected = {}
    for user, streams in written.samples.items():
        for name in ("Model=nexus4,Device=nexus4_1", "Model=nexus4,Device=nexus4_2"):
            labels = pd.Series([label for _, label, _ in streams[name]])
            for label, n in labels.value_counts().items():  # one sequence per stream
                key = (user, str(label))
                expected[key] = expected.get(key, 0) + max(0, math.ceil(n / window) - 1)
    got = {
        (str(u), str(c)): int(n) for (u, c), n in table.groupby(["userid", "label"]).size().items()
    }
    assert got == expected


def test_init_refuses_a_stream_that_is_not_there_listing_those_found(tmp_path):
    files = tmp_path / "release"
    _release(files, "hhar-devices", np.random.default_rng(6))
    result = CliRunner().invoke(
        main,
        ["init", str(files), "--name", "mux", "-o", str(tmp_path / "m.toml"), "--stream", "Device=lgwatch_1"],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "--stream 'Device=lgwatch_1' matches no stream" in result.output
    assert "'Model=nexus4,Device=nexus4_1'" in result.output or "Device=nexus4_1" in result.output


def test_the_chunked_reader_gives_the_whole_table(tmp_path):
    files = tmp_path / "release"
    _release(files, "device-ns", np.random.default_rng(7))
    names = ["device=wrist,sensor=acc", "device=wrist,sensor=gyr", "device=hip,sensor=acc"]
    options = {
        "members": "*/*.csv",
        "user_col": "subject",
        "label_col": "activity",
        "time_col": "timestamp(ns)",
        "channels": ["ax", "ay", "az"],
        "streams": {"keys": ["device", "sensor"]},
    }
    classes = [("run", "run"), ("walk", "walk"), ("rest", "rest")]
    own = entry(
        "long-signals", options, classes, channels=tuple(f"a{c} [{names[1]}]" for c in "xyz")
    )
    whole = read_long_signals(own, Sources([files])).frame
    chunks = pd.concat(
        [c.frame for c in stream_long_signals(own, Sources([files]))], ignore_index=True
    )
    pd.testing.assert_frame_equal(chunks, whole)
    assert sorted(c for c in whole.columns if "[" in c) == sorted(
        f"a{c} [{n}]" for n in names for c in "xyz"
    )
    _, counts = build_table(own, Sources([files]))
    assert counts["rows_read"] == len(whole)


def _expected_windows(written: Written, reference: str, window: int) -> dict:
    """Windows per (user, class) of the aligned samples, from the second implementation."""
    expected = {}
    for user in written.samples:
        kept = pd.Series([label for _, label in kept_samples(written, reference, user)])
        for label, n in kept.value_counts().items():
            if math.ceil(n / window) - 1 > 0:
                expected[(str(user), str(label))] = math.ceil(n / window) - 1
    return expected


def test_a_generated_release_goes_init_register_fetch_evaluate(tmp_path):
    files = tmp_path / "release"
    written, expect = _release(files, "sensor-id-type", np.random.default_rng(8))
    # plain init: no option names the streams; mueval evaluates one iteration on the table
    draft, report, _ = walk(tmp_path, files, "mux-e2e", ["--window", "0.5"], "mm")
    assert "streams: keys 'Sensor Type'" in report
    assert draft["reader_options"]["streams"]["keys"] == ["Sensor Type"]
    assert draft["sampling_rate_hz"] == pytest.approx(50, rel=0.05)
    assert len(draft["sensors"]) == 2
    table = mudata.load("mux-e2e", data_home=str(tmp_path / "home")).frame
    reference = stream_label(expect["streams"][expect["slowest"]])
    expected = _expected_windows(written, reference, draft["recipe"]["window"])
    got = {
        (str(u), str(c)): int(n) for (u, c), n in table.groupby(["userid", "label"]).size().items()
    }
    assert got == expected
    assert len({u for u, _ in got}) == 4 and len({c for _, c in got}) == 3
    # the provenance counts each file's streams and the timestamps aligning kept
    record = mudata.provenance("mux-e2e", data_home=tmp_path / "home")
    found = record["counts"]["streams"]
    assert sorted(found) == [f"subject_{u}.csv" for u in ("p01", "p02", "p03", "p04")]
    for member, info in found.items():
        user = member.removeprefix("subject_").removesuffix(".csv")
        assert info["reference"] == "Sensor Type=1"
        assert info["rows"] == len(kept_samples(written, reference, user))
        assert {n: v["rows"] for n, v in info["streams"].items()} == {
            "Sensor Type=0": len(written.samples[user]["Sensor ID=1,Sensor Type=0"]),
            "Sensor Type=1": len(written.samples[user]["Sensor ID=1,Sensor Type=1"]),
        }


def test_a_column_of_few_values_in_one_stream_is_no_stream_key(tmp_path):
    # One stream at 50 Hz, time in order, and a quantised signal of 5 values: its rows
    # of each value are a random subset of the file's, with no clock of their own.
    rng = np.random.default_rng(9)
    files = tmp_path / "release"
    files.mkdir()
    for user in ("u1", "u2"):
        n = 1200
        frame = pd.DataFrame(
            {
                "timestamp": np.arange(n) * 20 + rng.integers(0, 2, n),
                "level": rng.integers(0, 5, n),
                "x": rng.normal(size=n).round(3),
                "y": rng.normal(size=n).round(3),
                "z": rng.normal(size=n).round(3),
                "label": np.repeat([1, 2], n // 2),
            }
        )
        frame.to_csv(files / f"{user}.csv", index=False)
    toml = tmp_path / "one.toml"
    result = CliRunner().invoke(
        main, ["init", str(files), "--name", "one", "-o", str(toml), "--min-per-class", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "streams" not in tomllib.loads(toml.read_text(encoding="utf-8"))["reader_options"]
    assert "streams:" not in result.output


def test_numeric_keys_compare_as_numbers_as_init_reads_them(tmp_path):
    # "00" and "01" in the file: read as text by the reader, as numbers by init
    rows = [(f"0{s}", t + s, 1, 1, 1, "u", "a") for t in (0, 10, 20, 30) for s in (0, 1)]
    files = _csv(tmp_path / "d", rows)
    streams = {"keys": ["Sensor Type"], "select": ["Sensor Type=01", "Sensor Type=0"]}
    frame = read_long_signals(_entry(streams), Sources([files])).frame
    assert sorted(frame.attrs["streams"]["rec.csv"]["streams"]) == [
        "Sensor Type=0",
        "Sensor Type=1",
    ]
    assert "x [Sensor Type=1]" in frame.columns


def test_keys_that_name_thousands_of_streams_are_refused(tmp_path):
    rows = [(t, t, 1, 1, 1, "u", "a") for t in range(1_200)]  # a key column that is a time
    files = _csv(tmp_path / "d", rows)
    with pytest.raises(ParseError, match="1,200 combinations of values, more than the 1,000"):
        read_long_signals(_entry({"keys": ["Sensor Type"]}), Sources([files]))


def test_files_holding_other_streams_are_refused_naming_the_file(tmp_path):
    both = [(s, t + s, 1, 1, 1, "u", "a") for t in (0, 10, 20) for s in (0, 1)]
    files = _csv(tmp_path / "d", both)
    lines = ["Sensor Type,t,x,y,z,user,label"] + [f"0,{t},1,1,1,v,a" for t in (0, 10, 20)]
    (files / "rec2.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"rec2.csv: holds the streams \['Sensor Type=0'\]"):
        read_long_signals(_entry({"keys": ["Sensor Type"]}), Sources([files]))
    # selecting the stream both hold reads both files
    streams = {"keys": ["Sensor Type"], "select": ["Sensor Type=0"]}
    frame = read_long_signals(_entry(streams), Sources([files])).frame
    assert sorted(frame["userid"].unique()) == ["u", "v"]


def test_recordings_one_after_the_other_are_no_streams(tmp_path):
    # A column "block" whose every value is one run of rows, each restarting the clock:
    # recordings in sequence, not streams side by side; init drafts no streams for it.
    rng = np.random.default_rng(10)
    files = tmp_path / "release"
    files.mkdir()
    for user in ("u1", "u2"):
        parts = [
            pd.DataFrame(
                {
                    "timestamp": np.arange(300) * 20,
                    "block": block,
                    "x": rng.normal(size=300).round(3),
                    "y": rng.normal(size=300).round(3),
                    "z": rng.normal(size=300).round(3),
                    "label": np.repeat([1, 2], 150),
                }
            )
            for block in (1, 2, 3)
        ]
        pd.concat(parts).to_csv(files / f"{user}.csv", index=False)
    result = CliRunner().invoke(
        main, ["init", str(files), "--name", "seq", "-o", str(tmp_path / "s.toml")]
    )
    assert "streams:" not in result.output
    # the reader's advice, told as the init option that tells recordings apart
    assert "goes back" in result.output and "--recording COL" in result.output
    assert "recording_col" not in result.output
    ok = CliRunner().invoke(
        main,
        ["init", str(files), "--name", "seq", "-o", str(tmp_path / "s.toml"), "--recording",
         "block", "--window", "1"],
    )  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert "streams:" not in ok.output


def test_the_sensors_of_aligned_streams_are_named_after_their_stream():
    """Each stream gets its own copy of every group of the columns, named after the stream."""
    one = group_channels(["x", "y", "z"], True)
    sensors = stream_sensors(one, ["Sensor Type=0", "Sensor ID=2,Sensor Type=4"])
    assert [(s.name, s.channels, s.features) for s in sensors] == [
        (
            "sensor_type_0",
            ("x [Sensor Type=0]", "y [Sensor Type=0]", "z [Sensor Type=0]"),
            TRI_AXIAL,
        ),
        (
            "sensor_id_2_sensor_type_4",
            tuple(f"{c} [Sensor ID=2,Sensor Type=4]" for c in "xyz"),
            TRI_AXIAL,
        ),
    ]
    # several groups per stream: each named after its columns, then the stream; the
    # numbered channels are grouped by their own names, as without streams
    several = group_channels(["acc_x", "acc_y", "acc_z", "emg1", "emg2"], True)
    names = [s.name for s in stream_sensors(several, ["device=wrist", "device=hip"])]
    assert names == ["acc_device_wrist", "emg_device_wrist", "acc_device_hip", "emg_device_hip"]
    # streams whose names slug alike still give unique names
    clash = [s.name for s in stream_sensors(one, ["a=1", "A=1"])]
    assert clash == ["a_1", "a_1_2"]


def test_init_names_the_drafted_sensors_after_the_streams(tmp_path):
    """A file of two sensor types interleaved: the draft's sensors are one per stream, so named."""
    files = tmp_path / "release"
    files.mkdir()
    rng = np.random.default_rng(4)
    streams = [Stream({"Sensor Type": 0}, 100.0), Stream({"Sensor Type": 4}, 50.0, 2.0)]
    for user in ("u1", "u2", "u3"):
        write_multiplexed(
            files / f"{user}.csv", users=[user], user_col="user", streams=streams,
            classes=[0, 1], seconds=12, rng=rng, time_col="ts",
            header=["ts", "Sensor Type", "x", "y", "z", "user", "label"],
        )  # fmt: skip
    toml = tmp_path / "mux.toml"
    result = CliRunner().invoke(
        main, ["init", str(files), "--name", "mux", "-o", str(toml), "--window", "1"]
    )
    assert result.exit_code == 0, result.output
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    assert draft["reader_options"]["streams"]["keys"] == ["Sensor Type"]
    assert {s["name"]: s["channels"] for s in draft["sensors"]} == {
        f"sensor_type_{k}": [f"{c} [Sensor Type={k}]" for c in "xyz"] for k in (0, 4)
    }
