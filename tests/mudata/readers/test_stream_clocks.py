"""The clocks of multiplexed streams: one rate per release, one per window (issue 28, item 4).

Windows are sized from the entry's one ``sampling_rate_hz``, while a
multiplexed file is windowed on the clock of its reference stream (the one
resampled at, or per stream). These tests write releases whose files disagree
(another slowest stream, a rate 20 % off, streams of two rates windowed per
stream) and check that the reader refuses them naming what differs, and that
what stays within 10 % (a 5 % difference, a jittered clock) is read. The
steps the messages must name are computed here from the written files with
numpy, not by the reader. Streams sharing one clock (a row per stream at each
timestamp) are drafted as streams, not as a feature table. The detector's
verdicts are also checked on the shared real releases that have a time column.
"""

from __future__ import annotations

import math
import tarfile
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
from mudata.cli import main
from mudata.drafting import streams as drafting_streams
from mudata.drafting.columns import find_roles
from mudata.errors import ParseError
from mudata.readers.sources import Sources
from mudata.readers.tabular import read_long_signals
from tests.conftest import SHARED_DATA
from tests.entries import entry
from tests.stream_shapes import Stream, write_multiplexed, write_shared_clock

RELEASES = SHARED_DATA / "releases"

# Variants: the key column, the separator, the time column and its unit (per second).
VARIANTS = [
    ("Sensor Type", ",", "t", 1e3),
    ("sensor", ";", "timestamp", 1e3),
    ("Device", ",", "time_ns", 1e9),
]


def _write(
    root: Path, rates: list[list[float]], variant: tuple, seed: int, jitter: float = 0.05
) -> list[Path]:
    """One file per user, ``rates[i]`` the rates of the streams (key values 0, 1, ...) of file i."""
    key, sep, time_col, unit = variant
    rng = np.random.default_rng(seed)
    paths = []
    for i, file_rates in enumerate(rates):
        streams = [Stream({key: k}, r, float(k)) for k, r in enumerate(file_rates)]
        path = root / f"rec{i + 1}.csv"
        write_multiplexed(
            path, users=[f"u{i + 1}"], streams=streams, classes=["a", "b"], seconds=8, rng=rng,
            header=[time_col, key, "x", "y", "z", "user", "label"], time_col=time_col,
            time_unit=unit, separator=sep, jitter=jitter,
        )  # fmt: skip
        paths.append(path)
    return paths


def _entry(variant: tuple, rate: float, align: str = "slowest", **streams: object):
    key, sep, time_col, _ = variant
    options = {
        "members": "*.csv",
        "user_col": "user",
        "label_col": "label",
        "time_col": time_col,
        "separator": sep,
        "channels": ["x", "y", "z"],
        "streams": {"keys": [key], "align": align, **streams},
    }
    channels = tuple(f"{c} [{key}=0]" for c in "xyz") if align == "slowest" else ("x", "y", "z")
    return entry(
        "long-signals", options, [("a", "a"), ("b", "b")], channels=channels, sampling_rate_hz=rate
    )


def _steps(path: Path, variant: tuple) -> dict[str, float]:
    """Each stream's median positive time step in the file, by numpy on the written text."""
    key, sep, time_col, _ = variant
    frame = pd.read_csv(path, sep=sep)
    steps = {}
    for value, rows in frame.groupby(key, sort=True):
        step = np.diff(rows[time_col].to_numpy(dtype=float))
        steps[f"{key}={value}"] = float(np.median(step[step > 0]))
    return steps


# ------------------------------------------------------------- each file's clock


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_file_whose_slowest_stream_differs_is_refused_naming_both(tmp_path, variant):
    key = variant[0]
    # file 1: stream 1 (50 Hz) is the slowest; file 2: stream 0 (40 Hz) is
    first, second = _write(tmp_path / "d", [[100, 50], [40, 50]], variant, 1)
    with pytest.raises(ParseError) as caught:
        read_long_signals(_entry(variant, 50), Sources([tmp_path / "d"]))
    message = str(caught.value)
    one, two = _steps(first, variant), _steps(second, variant)
    assert message.startswith("rec2.csv: its slowest stream is ")
    assert f"'{key}=0' (median time step {two[f'{key}=0']:g})" in message
    assert f"rec1.csv's is '{key}=1' (step {one[f'{key}=1']:g})" in message


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("factor", [1.2, 0.8])
def test_a_file_whose_reference_rate_differs_by_20_percent_is_refused(tmp_path, variant, factor):
    key = variant[0]
    paths = _write(tmp_path / "d", [[100, 50], [100, 50 * factor], [100, 50]], variant, 2)
    with pytest.raises(ParseError) as caught:
        read_long_signals(_entry(variant, 50), Sources([tmp_path / "d"]))
    message = str(caught.value)
    second, first = _steps(paths[1], variant), _steps(paths[0], variant)
    assert message.startswith(f"rec2.csv: stream '{key}=1' steps by {second[f'{key}=1']:g} ")
    assert f"where stream '{key}=1' of rec1.csv steps by {first[f'{key}=1']:g}" in message
    assert "more than 10 % apart" in message


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_five_percent_difference_and_a_jittered_clock_are_read(tmp_path, variant):
    key = variant[0]
    _write(tmp_path / "d", [[100, 50], [105, 52.5], [95, 47.5]], variant, 3, jitter=0.3)
    frame = read_long_signals(_entry(variant, 50), Sources([tmp_path / "d"])).frame
    assert sorted(frame["userid"].unique()) == ["u1", "u2", "u3"]
    found = frame.attrs["streams"]
    assert {m: info["reference"] for m, info in found.items()} == dict.fromkeys(
        ["rec1.csv", "rec2.csv", "rec3.csv"], f"{key}=1"
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_reference_is_checked_against_the_entry_rate_when_the_unit_is_known(tmp_path, variant):
    key, _, _, per_second = variant
    unit = {1e3: "ms", 1e9: "ns"}[per_second]
    (first,) = _write(tmp_path / "d", [[100, 50]], variant, 4)
    sources = Sources([tmp_path / "d"])
    assert len(read_long_signals(_entry(variant, 50, time_unit=unit), sources).frame)
    # without the unit, the rate cannot be compared: the file is read
    assert len(read_long_signals(_entry(variant, 60), sources).frame)
    step = _steps(first, variant)[f"{key}=1"]
    for rate, given in ((60, unit), (50, "s")):
        with pytest.raises(ParseError) as caught:
            read_long_signals(_entry(variant, rate, time_unit=given), sources)
        message = str(caught.value)
        assert message.startswith(f"rec1.csv: stream '{key}=1' steps by {step:g} (median; ")
        assert f"has sampling_rate_hz = {rate:g}" in message


def test_date_time_text_is_checked_against_the_entry_rate_without_a_unit(tmp_path):
    variant = VARIANTS[0]
    (path,) = _write(tmp_path / "d", [[100, 50]], variant, 5)
    frame = pd.read_csv(path)
    frame["t"] = pd.to_datetime(frame["t"], unit="ms").dt.strftime("%Y-%m-%d %H:%M:%S.%f")
    frame.to_csv(path, index=False)
    sources = Sources([tmp_path / "d"])
    assert len(read_long_signals(_entry(variant, 50), sources).frame)
    with pytest.raises(ParseError, match=r"has sampling_rate_hz = 40 "):
        read_long_signals(_entry(variant, 40), sources)


def test_init_refuses_a_file_of_another_rate_and_drafts_the_unit(tmp_path):
    """End to end: the draft is taken from the first file; a later file 20 % off cannot be
    built, and init says which, with the option that leaves it out."""
    variant = ("Sensor Type", ",", "timestamp", 1e3)
    files = tmp_path / "release"
    _write(files, [[100, 50], [100, 50], [100, 50], [100, 60]], variant, 6)
    toml = tmp_path / "mux.toml"
    runner = CliRunner()
    args = ["init", str(files), "--name", "mux", "-o", str(toml), "--window", "1"]
    result = runner.invoke(main, [*args, "--min-per-class", "1"])
    assert "rec4.csv: stream 'Sensor Type=1' steps by " in result.output, result.output
    assert "where stream 'Sensor Type=1' of rec1.csv steps by " in result.output
    assert "leave it out (--include/--exclude)" in result.output
    # the three files of one rate build, and the draft names the unit it read the times in
    (files / "rec4.csv").unlink()
    result = runner.invoke(main, [*args, "--min-per-class", "1", "--force"])
    assert result.exit_code == 0, result.output
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    assert draft["reader_options"]["streams"]["time_unit"] == "ms"
    assert draft["sampling_rate_hz"] == pytest.approx(50, rel=0.05)


# ------------------------------------------------------------- per-stream windows


@pytest.mark.parametrize("variant", VARIANTS)
def test_per_stream_windows_of_streams_at_two_rates_are_refused(tmp_path, variant):
    key = variant[0]
    (path,) = _write(tmp_path / "d", [[100, 50]], variant, 7)
    with pytest.raises(ParseError) as caught:
        read_long_signals(_entry(variant, 100, "per-stream"), Sources([tmp_path / "d"]))
    message = str(caught.value)
    steps = _steps(path, variant)
    assert message.startswith('rec1.csv: align = "per-stream" windows every stream')
    shown = f"{key}=0: {steps[f'{key}=0']:g}, {key}=1: {steps[f'{key}=1']:g}"
    assert shown in message
    assert f"a window of '{key}=1' would last" in message and 'align = "slowest"' in message


@pytest.mark.parametrize("variant", VARIANTS)
def test_per_stream_windows_of_streams_of_one_rate_are_read(tmp_path, variant):
    _write(tmp_path / "d", [[100, 104], [98, 100]], variant, 8)
    frame = read_long_signals(_entry(variant, 100, "per-stream"), Sources([tmp_path / "d"])).frame
    # one recording per (file, stream): two files of two streams
    assert frame["recording"].nunique() == 4


def test_init_refuses_per_stream_windows_of_two_rates(tmp_path):
    variant = ("Device", ",", "ts", 1e3)
    _write(tmp_path / "release", [[100, 50], [100, 50]], variant, 9)
    result = CliRunner().invoke(
        main,
        ["init", str(tmp_path / "release"), "--name", "mux", "-o", str(tmp_path / "m.toml"),
         "--stream-align", "per-stream"],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "--stream-align per-stream windows every stream of rec1.csv" in result.output
    assert "'Device=1' steps" in result.output and "--stream" in result.output
    assert not (tmp_path / "m.toml").exists()


# ------------------------------------------------------------- streams sharing one clock

SHARED = [
    # keys of each stream, separator, time column, rate
    ([{"device": "left"}, {"device": "right"}], ",", "timestamp", 50.0),
    ([{"Sensor ID": 1}, {"Sensor ID": 2}, {"Sensor ID": 3}], ";", "ts", 32.0),
    (
        [
            {"phone": "p1", "sensor": "acc"},
            {"phone": "p1", "sensor": "gyr"},
            {"phone": "p2", "sensor": "acc"},
        ],
        "\t",
        "time_ms",
        100.0,
    ),
]


@pytest.mark.parametrize(("keys", "sep", "time_col", "rate"), SHARED)
def test_streams_sharing_one_clock_are_drafted_as_streams(tmp_path, keys, sep, time_col, rate):
    files = tmp_path / "release"
    rng = np.random.default_rng(len(keys))
    key_columns = list(keys[0])
    header = [time_col, *key_columns, "x", "y", "z", "user", "label"]
    per_class = {
        user: write_shared_clock(
            files / f"{user}.{'tsv' if sep == chr(9) else 'csv'}",
            user=user,
            keys=keys,
            rate_hz=rate,
            classes=[1, 2],
            seconds=40,
            rng=rng,
            header=header,
            separator=sep,
            time_col=time_col,
        )
        for user in ("s1", "s2", "s3")
    }
    # time repeats on most rows of the file, never inside one stream
    first = pd.read_csv(next(iter(sorted(files.iterdir()))), sep=sep)
    assert np.mean(np.diff(first[time_col]) == 0) >= 0.5
    toml = tmp_path / "shared.toml"
    runner = CliRunner()
    init = runner.invoke(
        main,
        ["init", str(files), "--name", "shared", "-o", str(toml), "--window", "1",
         "--min-per-class", "1"],
    )  # fmt: skip
    assert init.exit_code == 0, init.output
    assert "layout: raw signals" in init.output
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    assert draft["reader"] == "long-signals"
    streams = draft["reader_options"]["streams"]
    assert streams == {"keys": key_columns, "select": [], "align": "slowest", "time_unit": "ms"}
    assert draft["sampling_rate_hz"] == pytest.approx(rate, rel=0.05)
    names = [",".join(f"{k}={v}" for k, v in key.items()) for key in keys]
    assert {c for s in draft["sensors"] for c in s["channels"]} == {
        f"{c} [{n}]" for n in names for c in "xyz"
    }
    home = str(tmp_path / "home")
    registered = runner.invoke(main, ["register", str(toml), "--data-home", home, "--draft-ok"])
    assert registered.exit_code == 0, registered.output
    fetched = runner.invoke(main, ["fetch", "shared", "--data-home", home])
    assert fetched.exit_code == 0, fetched.output
    # every timestamp is every stream's: aligning keeps all, and windows cut each class
    window = draft["recipe"]["window"]
    expected = {
        (user, str(label)): math.ceil(n / window) - 1
        for user, counts in per_class.items()
        for label, n in counts.items()
    }
    table = mudata.load("shared", data_home=home).frame
    got = {
        (str(u), str(c)): int(n) for (u, c), n in table.groupby(["userid", "label"]).size().items()
    }
    assert got == expected


def test_one_column_of_streams_sharing_one_clock_is_no_key_alone():
    """Two keys: the rows of one phone (two sensors at one clock) repeat every time, so
    'phone' alone names no stream; both keys do."""
    rng = np.random.default_rng(0)
    n = 400
    ticks = np.arange(n) * 10
    keys = [("p1", "acc"), ("p1", "gyr"), ("p2", "acc")]
    frame = pd.DataFrame(
        {
            "t": np.repeat(ticks, 3),
            "phone": [p for _ in ticks for p, _s in keys],
            "sensor": [s for _ in ticks for _p, s in keys],
            "x": rng.normal(size=3 * n),
            "label": np.repeat([1, 2], 3 * n // 2),
        }
    )
    roles = find_roles(
        frame, True, {"user": None, "label": "label", "time": "t", "recording": None}
    )
    found = drafting_streams.detect_streams(frame, roles, "f.csv", (), None)
    assert found is not None
    assert found[0].keys == ["phone", "sensor"]
    assert found[0].repeats == 0.0


# ------------------------------------------------------------- the detector on real bytes


def _members(archive: str, suffix: str) -> dict[str, pd.DataFrame]:
    path = RELEASES / archive
    if not path.is_file():
        pytest.skip(f"the shared release is not at {path}")
    with tarfile.open(path) as tar:
        return {
            m.name: pd.read_csv(
                tar.extractfile(m),
                low_memory=False,
                compression="gzip" if m.name.endswith(".gz") else None,
            )
            for m in tar.getmembers()
            if m.isfile() and m.name.endswith(suffix)
        }


def _short_steps(time: np.ndarray) -> float:
    """Part of a file's steps shorter than half the median positive step (zero steps too)."""
    steps = np.diff(time)
    return float(np.mean(steps < 0.5 * np.median(steps[steps > 0])))


def test_the_geotec_recordings_are_one_stream_each():
    """GeoTec's sp/sw files: epoch-ms time in order, repeating; no stream keys.

    The phone's clock ('_sp') delivers samples in pairs a millisecond apart:
    8 % to 30 % of its steps are short (below half the median), on either side
    of :data:`SHORT_STEPS` (10 %), as interleaved streams' are; the watch's
    ('_sw') are steady. So the file-wide test alone cannot tell one bursty
    clock from streams: no column keeps a clock of its own, and no streams are
    drafted, whichever side of the threshold a file falls.
    """
    members = _members("geotec_sp_sw_har_s01-s09.tar.gz", ".csv")
    data = {m: t for m, t in members.items() if m.endswith(("_sp.csv", "_sw.csv"))}
    # 85 executions of 9 subjects (6 to 11 each), one file per device
    assert len(data) == 170
    interleaved = {"sp": 0, "sw": 0}
    for member, table in data.items():
        roles = find_roles(
            table, True, {"user": None, "label": None, "time": None, "recording": None}
        )
        assert roles.time == "timestamp"
        time = table["timestamp"].to_numpy(dtype=float)
        assert bool(np.all(np.diff(time) >= 0)), member  # time in order through each file
        one = np.zeros(time.size, dtype=np.int64)
        short = _short_steps(time)
        verdict = drafting_streams._interleaved(time, one)
        assert verdict == (short > drafting_streams.SHORT_STEPS), member
        interleaved[member[-6:-4]] += verdict
        assert drafting_streams._candidates(table, roles) == [], member
        assert drafting_streams.detect_streams(table, roles, member, (), None) is None, member
    # every phone file has the paired clock, no watch file does
    # 81 of the 85 phone files lie above the threshold (4 of s03/s04 below), no watch file
    assert interleaved == {"sp": 81, "sw": 0}


def test_the_wle_table_goes_back_in_time_and_no_column_explains_it():
    """WLE's training table: sorted by class, its epoch-second time goes back; its one
    candidate, 'new_window' (yes/no), does not keep time in order: no streams."""
    (table,) = _members("wle_pml.tar.gz", "pml-training.csv.gz").values()
    roles = find_roles(table, True, {"user": None, "label": None, "time": None, "recording": None})
    assert (roles.time, roles.user, roles.label) == ("raw_timestamp_part_1", "user_name", "classe")
    time = table["raw_timestamp_part_1"].to_numpy(dtype=float)
    by_user = table["user_name"].factorize()[0].astype(np.int64)
    assert bool(np.any(np.diff(time) < 0))
    assert not drafting_streams._monotone(time, by_user)
    assert drafting_streams._candidates(table, roles) == ["new_window"]
    codes = drafting_streams._codes(table, ["user_name", "new_window"])
    assert not drafting_streams._monotone(time, codes)
    assert drafting_streams.detect_streams(table, roles, "pml-training.csv", (), None) is None
