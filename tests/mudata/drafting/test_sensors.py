"""``mudata init`` on releases whose channels do not come in threes (issue 28, item 5).

The model is UCI's "EMG data for gestures": a folder per subject, a
tab-separated file per series, ``time channel1 .. channel8 class`` at 1000 Hz,
class 0 unmarked. Such releases are generated here with 1, 2, 4, 5 or 8
channels, named ``channel1..``, ``emg1..`` or ``ch_1..``, alone or beside a
tri-axial accelerometer. init groups the channels into sensors from their
names and says so; the draft registers, builds a table with the expected
feature columns and the windows counted here, and ``mueval evaluate`` runs on it.
"""

from __future__ import annotations

import re
import tomllib

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mudata.building.feature_maths import (
    FEATURE_NAMES,
    channel_columns,
)
from mudata.building.windowing import window_count
from mudata.cli import main as mudata_main
from mudata.drafting.draft import draft_entry
from mudata.drafting.records import Choices
from mudata.drafting.sensors import group_channels
from mudata.errors import MudataUsageError as UsageError
from mudata.registry.lookup import parse_entry
from tests.project.test_release_shapes import walk
from tests.release_shapes import EMG_NAMES, emg_gesture_series

EMG8 = EMG_NAMES["channel"](8)


def groups(channels: list[str], header: bool = True) -> list[tuple[str, tuple[str, ...], str]]:
    return [(g.name, g.channels, g.features) for g in group_channels(channels, header)]


@pytest.mark.parametrize(
    "channels,expected",
    [
        (EMG8, [("channel", tuple(EMG8), "per-channel")]),
        (EMG_NAMES["emg"](8), [("emg", tuple(EMG_NAMES["emg"](8)), "per-channel")]),
        (EMG_NAMES["ch_"](8), [("ch", tuple(EMG_NAMES["ch_"](8)), "per-channel")]),
        (["EMG 1", "EMG 2"], [("EMG", ("EMG 1", "EMG 2"), "per-channel")]),
        # three numbered channels are not axes
        (["emg1", "emg2", "emg3"], [("emg", ("emg1", "emg2", "emg3"), "per-channel")]),
        (
            ["acc_x", "acc_y", "acc_z", "temp"],
            [("acc", ("acc_x", "acc_y", "acc_z"), "tri-axial"), ("temp", ("temp",), "per-channel")],
        ),
        (
            ["ecg", "x_gyro", "y_gyro", "z_gyro"],
            [
                ("ecg", ("ecg",), "per-channel"),
                ("gyro", ("x_gyro", "y_gyro", "z_gyro"), "tri-axial"),
            ],
        ),
        # the axes in any order in the file, and in any case
        (["accZ", "accX", "accY"], [("acc", ("accX", "accY", "accZ"), "tri-axial")]),
        (["X-Axis", "Y-Axis", "Z-Axis"], [("Axis", ("X-Axis", "Y-Axis", "Z-Axis"), "tri-axial")]),
        (
            [
                "attitude.roll",
                "attitude.pitch",
                "attitude.yaw",
                "gravity.x",
                "gravity.y",
                "gravity.z",
            ],
            [
                ("attitude", ("attitude.roll", "attitude.pitch", "attitude.yaw"), "tri-axial"),
                ("gravity", ("gravity.x", "gravity.y", "gravity.z"), "tri-axial"),
            ],
        ),
        # an axis and a number: the axis wins, the number names the device
        (
            ["acc_x_1", "acc_y_1", "acc_z_1", "acc_x_2", "acc_y_2", "acc_z_2"],
            [
                ("acc_1", ("acc_x_1", "acc_y_1", "acc_z_1"), "tri-axial"),
                ("acc_2", ("acc_x_2", "acc_y_2", "acc_z_2"), "tri-axial"),
            ],
        ),
        (["x", "y", "z"], [("sensor1", ("x", "y", "z"), "tri-axial")]),
        # two of three axes are no tri-axial sensor: two channels of their own
        (
            ["acc_x", "acc_y"],
            [("acc_x", ("acc_x",), "per-channel"), ("acc_y", ("acc_y",), "per-channel")],
        ),
    ],
)
def test_sensors_are_grouped_from_the_channel_names(channels, expected):
    assert groups(channels) == expected
    assert sorted(c for _, members, _ in expected for c in members) == sorted(channels)


@given(
    st.lists(
        st.text(alphabet="xyzXYZab_1-2 .", min_size=1, max_size=6).filter(str.strip),
        min_size=1,
        max_size=12,
        unique=True,
    )
)
def test_every_channel_ends_in_exactly_one_sensor_the_registry_accepts(channels):
    found = group_channels(channels, header=True)
    members = [c for g in found for c in g.channels]
    assert sorted(members) == sorted(channels)
    names = [g.name for g in found]
    assert len(set(names)) == len(names) and all(names)
    for group in found:
        assert (group.features == "tri-axial") == (len(group.channels) == 3 and "tri" in group.why)
    # The draft's [[sensors]] are a valid entry, with the channels the draft lists.
    data = {
        "name": "property",
        "title": "t",
        "version": "1",
        "homepage": "https://example.org",
        "licence": "CC-BY-4.0",
        "citation": "c",
        "sampling_rate_hz": 50,
        "reader": "long-signals",
        "reader_options": {
            "format": "csv",
            "user_col": "u",
            "label_col": "l",
            "channels": channels,
        },
        "recipe": {"name": "study-window", "window": 10},
        "classes": [{"code": 1, "name": "a"}, {"code": 2, "name": "b"}],
        "files": [{"name": "data", "path": "data"}],
        "sensors": [g.as_entry() for g in found],
    }
    entry = parse_entry(data)
    assert [s.channels for s in entry.sensors] == [g.channels for g in found]


def test_without_names_threes_are_tri_axial_and_other_counts_one_per_channel_sensor():
    six = [f"c{i}" for i in range(2, 8)]
    assert groups(six, header=False) == [
        ("sensor1", tuple(six[:3]), "tri-axial"),
        ("sensor2", tuple(six[3:]), "tri-axial"),
    ]
    eight = [f"c{i}" for i in range(2, 10)]
    assert groups(eight, header=False) == [("sensor1", tuple(eight), "per-channel")]


def expected_windows(counts: dict[tuple[str, int, int], int], width: int) -> int:
    """Windows of every (subject, gesture, series): counted from what was written."""
    return sum(window_count(n, width) for (_, code, _), n in counts.items() if code != 0)


def test_an_eight_channel_emg_release_registers_builds_and_evaluates(tmp_path):
    files, counts = emg_gesture_series(tmp_path / "EMG_data", np.random.default_rng(28), EMG8)
    draft, report, _ = walk(
        tmp_path,
        files,
        "emg-gestures",
        ["--path-pattern", "{user}/*.txt", "--window", "0.1"],
        "mm",
    )
    # Class 0 ("unmarked") runs before each of the 3 gestures of every file: 3 runs
    # a file, 2 of them between two gestures. init leaves it out, saying why.
    files_written = len({(subject, series) for subject, _, series in counts})
    between, runs = 2 * files_written, 3 * files_written
    assert re.search(
        rf"\n +0: \d+ \(left out, not an activity: code 0 runs between the other classes, "
        rf"as transitions do: {between} of its {runs} runs lie between two activities",
        report,
    ), report
    assert [c["code"] for c in draft["classes"]] == [1, 2, 3]
    # One sensor of 8 channels, said so; no channel dropped or paired into threes.
    assert draft["reader_options"]["channels"] == EMG8
    assert draft["sensors"] == [{"name": "channel", "channels": EMG8, "features": "per-channel"}]
    assert "sensors: 1 from 8 channels (0 tri-axial, 1 per-channel" in report
    assert "  channel: channel1 .. channel8 (8 channels numbered alike" in report
    assert "threes" not in report and report.count("left out") == 1

    table = pd.read_parquet(tmp_path / "home" / "emg-gestures" / "emg-gestures.parquet")
    assert list(table.columns) == ["userid", "label", *channel_columns(EMG8)]
    assert len(table.columns) == 2 + 5 * 8
    width = draft["recipe"]["window"]
    assert width == 100
    assert len(table) == expected_windows(counts, width)
    assert sorted(table["userid"].unique()) == ["01", "02", "03", "04"]
    assert sorted(table["label"].astype(str).unique()) == ["1", "2", "3"]
    info = CliRunner().invoke(
        mudata_main, ["info", "emg-gestures", "--data-home", str(tmp_path / "home")]
    )
    assert info.exit_code == 0, info.output
    assert "channel (channel1, channel2, " in info.output
    assert "channel8; 8 channel(s), per-channel features)" in info.output


def test_a_tri_axial_sensor_beside_a_single_channel_registers_builds_and_evaluates(tmp_path):
    channels = ["acc_x", "acc_y", "acc_z", "ecg"]
    files, counts = emg_gesture_series(
        tmp_path / "release", np.random.default_rng(29), channels, subjects=3
    )
    draft, report, _ = walk(
        tmp_path,
        files,
        "acc-ecg",
        ["--path-pattern", "{user}/*.txt", "--window", "0.1"],
        "mm",
        drop_classes=("0",),
    )
    assert draft["sensors"] == [
        {"name": "acc", "channels": channels[:3], "features": "tri-axial"},
        {"name": "ecg", "channels": ["ecg"], "features": "per-channel"},
    ]
    assert "  acc: acc_x, acc_y, acc_z (tri-axial: x, y, z in the names" in report
    assert "  ecg: ecg (1 channel, grouped with none by its name" in report
    table = pd.read_parquet(tmp_path / "home" / "acc-ecg" / "acc-ecg.parquet")
    assert list(table.columns) == ["userid", "label", *FEATURE_NAMES, *channel_columns(["ecg"])]
    assert len(table) == expected_windows(counts, draft["recipe"]["window"])


@pytest.mark.parametrize(
    "channels,header,sensors",
    [
        (["channel1"], True, [("channel1", ["channel1"], "per-channel")]),
        (EMG_NAMES["emg"](2), True, [("emg", EMG_NAMES["emg"](2), "per-channel")]),
        (EMG_NAMES["ch_"](4), True, [("ch", EMG_NAMES["ch_"](4), "per-channel")]),
        (EMG_NAMES["channel"](5), True, [("channel", EMG_NAMES["channel"](5), "per-channel")]),
        (
            ["acc_x", "acc_y", "acc_z", "temp"],
            True,
            [("acc", ["acc_x", "acc_y", "acc_z"], "tri-axial"), ("temp", ["temp"], "per-channel")],
        ),
        # no header: time is column 1, the class the last; 8 channels, one sensor
        (EMG8, False, [("sensor1", [f"c{i}" for i in range(2, 10)], "per-channel")]),
    ],
)
def test_init_drafts_every_channel_of_any_count_into_sensors(tmp_path, channels, header, sensors):
    files, _ = emg_gesture_series(
        tmp_path / "release",
        np.random.default_rng(len(channels)),
        channels,
        subjects=2,
        series=1,
        header=header,
    )
    draft = draft_entry(
        [files],
        "arity",
        output=tmp_path / "arity.toml",
        sampling_rate_hz=None if header else 1000,
        choices=Choices(path_pattern="{user}/*.txt", window=0.1),
    )
    entry = draft.entry
    assert [(s.name, list(s.channels), s.features) for s in entry.sensors] == sensors
    drafted = [c for _, members, _ in sensors for c in members]
    assert entry.reader_options["channels"] == drafted
    assert tomllib.loads(draft.toml)["sensors"] == [
        {"name": n, "channels": c, "features": f} for n, c, f in sensors
    ]
    assert any(line.startswith("sensors: ") for line in draft.report)


def test_channels_given_in_any_count_are_grouped_by_their_names(tmp_path):
    channels = ["acc_x", "acc_y", "acc_z", "temp", "emg1", "emg2"]
    files, _ = emg_gesture_series(
        tmp_path / "release", np.random.default_rng(3), channels, subjects=2, series=1
    )
    choices = Choices(path_pattern="{user}/*.txt", window=0.1, channels=("temp", "emg2", "emg1"))
    draft = draft_entry([files], "given", output=tmp_path / "given.toml", choices=choices)
    assert draft.entry.reader_options["channels"] == ["temp", "emg2", "emg1"]
    assert [(s.name, s.channels) for s in draft.entry.sensors] == [
        ("temp", ("temp",)),
        ("emg", ("emg2", "emg1")),
    ]


def test_a_channel_given_twice_is_refused(tmp_path):
    files, _ = emg_gesture_series(
        tmp_path / "release", np.random.default_rng(4), EMG8[:2], subjects=2, series=1
    )
    choices = Choices(path_pattern="{user}/*.txt", channels=("channel1", "2"))
    with pytest.raises(UsageError, match="--channels names 'channel1' more than once"):
        draft_entry([files], "twice", output=tmp_path / "twice.toml", choices=choices)


def test_the_command_line_takes_channels_in_any_count(tmp_path):
    files, _ = emg_gesture_series(
        tmp_path / "release", np.random.default_rng(6), EMG8, subjects=2, series=1, header=False
    )
    toml = tmp_path / "four.toml"
    args = ["init", str(files), "--name", "four", "-o", str(toml), "--channels", "2,3,4,5"]
    args += ["--sampling-rate", "1000", "--window", "0.1", "--path-pattern", "{user}/*.txt"]
    result = CliRunner().invoke(mudata_main, args)
    assert result.exit_code == 0, result.output
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    assert draft["reader_options"]["channels"] == ["c2", "c3", "c4", "c5"]
    assert draft["sensors"] == [
        {"name": "sensor1", "channels": ["c2", "c3", "c4", "c5"], "features": "per-channel"}
    ]
    assert "no header line, and 4 columns are not a multiple of three" in result.output
