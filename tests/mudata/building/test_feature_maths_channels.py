"""Sensors of any arity (issue 28, item 5): the per-channel features and the entry format.

Each per-channel feature (``docs/datasets.md``, "Sensors that are not
tri-axial") is checked against a hand computation with numpy on generated
windows; a tri-axial sensor beside per-channel ones keeps its 16 features bit
for bit; registry entries say which channels form which sensor, and old
entries read as they did.
"""

from __future__ import annotations

import tomllib

import numpy as np
import pandas as pd
import pytest

from mudata._resources import builtin_registry_dir
from mudata.building.feature_maths import (
    CHANNEL_FEATURE_NAMES,
    FEATURE_NAMES,
    channel_columns,
    channel_features,
    sensor_columns,
)
from mudata.building.features import featurize
from mudata.building.study_windows import StudyWindows
from mudata.building.windowing import moving_average, window_count
from mudata.errors import RegistryError
from mudata.readers.base import SignalTable
from mudata.records.entry import PER_CHANNEL, TRI_AXIAL, Sensor
from mudata.registry.lookup import load_entry_file, parse_entry

EMG = [f"channel{i}" for i in range(1, 9)]


def entry_data(
    sensors: list[dict], *, window: int = 6, smoothing: int = 1, **recipe: object
) -> dict:
    return {
        "name": "arity",
        "title": "Sensors of any arity",
        "version": "1",
        "homepage": "https://example.org",
        "licence": "CC-BY-4.0",
        "citation": "Own, 2026.",
        "sampling_rate_hz": 100.0,
        "reader": "long-signals",
        "reader_options": {"format": "csv", "user_col": "userid", "label_col": "label"},
        "recipe": {"name": "study-window", "window": window, "smoothing": smoothing, **recipe},
        "min_per_class": 1,
        "classes": [{"code": 1, "name": "one"}, {"code": 2, "name": "two"}],
        "files": [{"name": "data", "path": "data"}],
        "sensors": sensors,
    }


def signals(rng: np.random.Generator, channels: list[str], lengths: dict) -> SignalTable:
    """Rows of (user, class) runs of the given lengths, signed values around a level."""
    parts = []
    for (user, code), n in lengths.items():
        values = rng.normal(0, 3, size=(n, len(channels))) + rng.normal(0, 2, size=len(channels))
        part = pd.DataFrame(np.round(values, 3), columns=channels)
        part.insert(0, "label", code)
        part.insert(0, "userid", str(user))
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True)
    frame.insert(2, "segment", 0)
    return SignalTable(frame)


def hand_channel(c: np.ndarray, *, ddof: int, auc: str, meandif: str) -> list[float]:
    """The five per-channel features of one window ``c``, from their definitions."""
    a = np.abs(c)  # the magnitude of one axis
    area = a.sum() if auc == "sum" else ((a[1:] + a[:-1]) / 2).sum()
    steps = a[1:] - a[:-1]
    dif = steps.sum() if meandif == "net" else steps.mean()
    return [c.mean(), c.std(ddof=ddof), c.max(), area, dif]


# ------------------------------------------------------------------ the features


@pytest.mark.parametrize(
    "ddof,auc,meandif", [(1, "sum", "net"), (0, "trapezoid", "mean"), (1, "trapezoid", "net")]
)
def test_each_per_channel_feature_matches_a_hand_computation(ddof, auc, meandif):
    rng = np.random.default_rng(5)
    counts = np.array([7, 2, 12, 3])
    values = rng.normal(0, 4, size=(counts.sum(), 3))
    got = channel_features(values, counts, sd_ddof=ddof, auc=auc, meandif=meandif)
    assert got.shape == (4, 15)
    edges = np.concatenate([[0], np.cumsum(counts)])
    for s in range(4):
        window = values[edges[s] : edges[s + 1]]
        for k in range(3):
            want = hand_channel(window[:, k], ddof=ddof, auc=auc, meandif=meandif)
            # column order: each feature for the three channels in turn
            np.testing.assert_allclose(got[s, k::3], want, rtol=1e-13, atol=1e-13)


def test_a_signed_channel_gives_the_area_and_net_change_of_its_absolute_value():
    # By hand: c = -2, 1, 3, -4 -> |c| = 2, 1, 3, 4.
    c = np.array([-2.0, 1.0, 3.0, -4.0])
    (summed,) = channel_features(c, np.array([4]))
    assert summed.tolist() == [
        -0.5,
        pytest.approx(np.sqrt((1.5**2 + 1.5**2 + 3.5**2 + 3.5**2) / 3)),
        3.0,
        10.0,  # auc = 2 + 1 + 3 + 4
        2.0,  # meanDif (net) = 4 - 2
    ]
    (trapezoid,) = channel_features(c, np.array([4]), sd_ddof=0, auc="trapezoid", meandif="mean")
    assert trapezoid[3] == (2 + 1) / 2 + (1 + 3) / 2 + (3 + 4) / 2
    assert trapezoid[4] == pytest.approx(2.0 / 3)


def test_windows_of_an_eight_channel_sensor_match_a_hand_computation():
    rng = np.random.default_rng(8)
    table = signals(rng, EMG, {(1, 1): 40, (1, 2): 25, (2, 1): 31, (2, 2): 13})
    entry = parse_entry(entry_data([{"name": "emg", "channels": EMG}], window=6, smoothing=3))
    got = featurize(table, entry)
    assert list(got.columns) == [
        "userid",
        "label",
        *[f"{name}_{c}" for name in CHANNEL_FEATURE_NAMES for c in EMG],
    ]
    frame, want = table.frame, []
    for user, code in [("1", 1), ("1", 2), ("2", 1), ("2", 2)]:
        part = frame[(frame["userid"] == user) & (frame["label"] == code)]
        smooth = moving_average(part[EMG].to_numpy(), 3)
        for k in range(window_count(len(part), 6)):
            window = smooth[6 * k : 6 * k + 6]
            per = [hand_channel(window[:, i], ddof=1, auc="sum", meandif="net") for i in range(8)]
            want.append([value for feature in zip(*per, strict=True) for value in feature])
    assert len(want) == 6 + 4 + 5 + 2
    np.testing.assert_allclose(got.iloc[:, 2:].to_numpy(), want, rtol=1e-12, atol=1e-12)


def test_a_constant_single_channel_is_kept_with_sd_zero():
    # Per-channel features take no correlation: a flat temperature is a value, not undefined.
    rng = np.random.default_rng(9)
    table = signals(rng, ["temp"], {(1, 1): 30, (2, 2): 30})
    table.frame.loc[:11, "temp"] = 36.5
    entry = parse_entry(entry_data([{"name": "temp", "channels": ["temp"]}]))
    got = featurize(table, entry)
    assert len(got) == 2 * (window_count(30, 6))
    assert got["sd_temp"].iloc[0] == 0.0 and got["mean_temp"].iloc[0] == 36.5
    assert got.attrs["dropped"] == {}


def test_a_tri_axial_sensor_keeps_its_16_features_bit_for_bit_beside_others():
    rng = np.random.default_rng(10)
    channels = ["acc_x", "acc_y", "acc_z", "temp", "emg1", "emg2", "gyro_x", "gyro_y", "gyro_z"]
    table = signals(rng, channels, {(1, 1): 50, (1, 2): 45, (2, 1): 33, (2, 2): 20})
    acc = {"name": "acc", "channels": channels[:3]}
    gyro = {"name": "gyro", "channels": channels[6:]}
    mixed = parse_entry(
        entry_data(
            [
                acc,
                {"name": "temp", "channels": ["temp"]},
                {"name": "emg", "channels": ["emg1", "emg2"]},
                gyro,
            ],
            smoothing=4,
        )
    )
    alone = parse_entry(entry_data([acc, gyro], smoothing=4))
    got, want = featurize(table, mixed), featurize(table, alone)
    # The tri-axial sensors are numbered among themselves: their names are unchanged.
    assert list(want.columns[2:]) == [*FEATURE_NAMES, *(f"{n}2" for n in FEATURE_NAMES)]
    assert list(got.columns[2:]) == sensor_columns(mixed.sensors)
    assert sensor_columns(mixed.sensors) == [
        *FEATURE_NAMES,
        *channel_columns(["temp"]),
        *channel_columns(["emg1", "emg2"]),
        *(f"{n}2" for n in FEATURE_NAMES),
    ]
    assert len(got) == len(want) > 0
    for column in want.columns:
        assert got[column].to_numpy().tobytes() == want[column].to_numpy().tobytes(), column


def test_chunked_windows_give_the_bits_of_the_whole_table_for_any_arity(tmp_path):
    rng = np.random.default_rng(11)
    channels = ["acc_x", "acc_y", "acc_z", "ecg", *EMG[:5]]
    table = signals(rng, channels, {(1, 1): 70, (2, 1): 64, (1, 2): 50, (2, 2): 41})
    entry = parse_entry(
        entry_data(
            [
                {"name": "acc", "channels": channels[:3]},
                {"name": "ecg", "channels": ["ecg"]},
                {"name": "emg", "channels": EMG[:5]},
            ],
            window=8,
            smoothing=5,
        )
    )
    whole = featurize(table, entry)
    windows = StudyWindows(entry, spool_dir=tmp_path)
    frame = table.frame
    for lo in range(0, len(frame), 17):
        windows.add(SignalTable(frame.iloc[lo : lo + 17].reset_index(drop=True)))
    chunked = windows.finish()
    assert list(chunked.columns) == list(whole.columns)
    assert chunked.iloc[:, 2:].to_numpy().tobytes() == whole.iloc[:, 2:].to_numpy().tobytes()


def test_segments_of_a_two_channel_sensor_match_a_hand_computation():
    rng = np.random.default_rng(12)
    lengths = [9, 14, 11]
    values = rng.normal(0, 2, size=(sum(lengths), 2))
    frame = pd.DataFrame(values, columns=["a1", "a2"])
    frame.insert(0, "segment", np.repeat(np.arange(3), lengths))
    frame.insert(0, "label", 1)
    frame.insert(0, "userid", "1")
    data = entry_data([{"name": "a", "channels": ["a1", "a2"]}])
    data["recipe"] = {"name": "study-segment", "sd_ddof": 0, "auc": "trapezoid", "meandif": "mean"}
    got = featurize(SignalTable(frame), parse_entry(data))
    edges = np.cumsum([0, *lengths])
    for s in range(3):
        window = values[edges[s] : edges[s + 1]]
        per = [hand_channel(window[:, i], ddof=0, auc="trapezoid", meandif="mean") for i in (0, 1)]
        want = [value for feature in zip(*per, strict=True) for value in feature]
        np.testing.assert_allclose(got.iloc[s, 2:].to_numpy(float), want, rtol=1e-13)


def test_differences_of_a_per_channel_first_sensor_are_refused_naming_it():
    rng = np.random.default_rng(13)
    table = signals(rng, ["a1", "a2"], {(1, 1): 20, (2, 2): 20})
    data = entry_data([{"name": "a", "channels": ["a1", "a2"]}], second_sensor="diff")
    with pytest.raises(
        RegistryError, match="tri-axial first sensor; the first sensor is per-channel"
    ):
        featurize(table, parse_entry(data))


# ------------------------------------------------------------------ the entry format


@pytest.mark.parametrize(
    "sensor,features",
    [
        ({"channels": ["x", "y", "z"]}, TRI_AXIAL),
        ({"channels": ["a"]}, PER_CHANNEL),
        ({"channels": ["a", "b"]}, PER_CHANNEL),
        ({"channels": EMG}, PER_CHANNEL),
        ({"channels": ["e1", "e2", "e3"], "features": "per-channel"}, PER_CHANNEL),
    ],
)
def test_a_sensor_has_any_arity_and_says_its_features(sensor, features):
    (parsed,) = parse_entry(entry_data([{"name": "s", **sensor}])).sensors
    assert parsed.channels == tuple(sensor["channels"])
    assert parsed.features == features


@pytest.mark.parametrize(
    "sensors,message",
    [
        ([{"name": "s", "channels": ["a", "b"], "features": "tri-axial"}], "sensors[0].channels"),
        ([{"name": "s", "channels": []}], "sensors[0].channels"),
        ([{"name": "s", "channels": ["a", "a"]}], "sensors[0].channels"),
        ([{"name": "s", "channels": ["a"], "features": "axes"}], "sensors[0].features"),
        (
            [{"name": "s", "channels": ["a", "b"]}, {"name": "t", "channels": ["b"]}],
            "channel 'b' is in sensor 's' and in sensor 't'",
        ),
    ],
)
def test_a_bad_sensor_is_refused_naming_the_field(sensors, message):
    with pytest.raises(RegistryError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_entry(entry_data(sensors))


def test_the_built_in_entries_read_unchanged():
    # Every built-in sensor is tri-axial, by default: no 'features' key, the same
    # content (hence fingerprint) as an entry whose sensors had no arity to say.
    for path in sorted(builtin_registry_dir().glob("*.toml")):
        entry = load_entry_file(path)
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for sensor, raw in zip(entry.sensors, data.get("sensors", []), strict=True):
            assert sensor.tri_axial and len(sensor.channels) == 3
            assert "features" not in raw and sensor.as_dict() == raw
        # The fingerprint hashes to_dict(): its sensors are the TOML's, as before.
        assert entry.to_dict()["sensors"] == data.get("sensors", [])


def test_a_sensor_built_in_code_takes_the_default_of_its_arity_and_refuses_a_false_one():
    assert Sensor("acc", ("x", "y", "z")).tri_axial
    assert Sensor("emg", tuple(EMG)).features == PER_CHANNEL
    with pytest.raises(ValueError, match="a tri-axial sensor has 3 channels, not 8"):
        Sensor("emg", tuple(EMG), TRI_AXIAL)
    with pytest.raises(ValueError, match="features 'axes' is not one of"):
        Sensor("emg", tuple(EMG), "axes")
