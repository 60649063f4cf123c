"""Tests of the feature recipes (mudata.building.features) and of the windowing helpers.

The vectorised recipes are checked against a plain per-window reference written
here from the text of DATASETS.md, and against values computed by hand.
"""

from __future__ import annotations

import math
import zipfile
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mudata.building.feature_maths import (
    REASON_CONSTANT,
    REASON_MISSING,
    REASON_SHORT,
    feature_columns,
    sensor_features,
)
from mudata.building.features import featurize
from mudata.building.windowing import DIRECT_MAX_SPAN, moving_average, running_means, window_count
from mudata.errors import RegistryError
from mudata.readers.base import SignalTable
from mudata.readers.gestures import read_gestures
from mudata.readers.har70 import read_har70
from mudata.readers.sources import Sources
from tests.conftest import GESTURES_ZIP
from tests.official_formats import gestures_entry, har70_entry, make_har70_zip

# --------------------------------------------------------------------------
# Reference implementation: one window at a time, following DATASETS.md
# --------------------------------------------------------------------------


def ref_moving_average(seq: np.ndarray, span: int) -> np.ndarray:
    """1-based i >= span: mean of i-span+1..i; i < span: mean of i..i+span-1 (NaN past the end)."""
    length = len(seq)
    out = np.full(seq.shape, np.nan)
    for i in range(1, length + 1):
        lo, hi = (i - span + 1, i) if i >= span else (i, i + span - 1)
        if hi <= length:
            out[i - 1] = np.mean(seq[lo - 1 : hi], axis=0)
    return out


def ref_sensor(x, y, z, *, ddof, auc, meandif):
    def cor(a, b):
        if np.ptp(a) == 0 or np.ptp(b) == 0:
            return np.nan
        return np.corrcoef(a, b)[0, 1]

    m = np.sqrt(x**2 + y**2 + z**2)
    area = float(np.sum(m)) if auc == "sum" else float(np.trapezoid(m))
    dif = float(np.sum(np.diff(m))) if meandif == "net" else float(np.mean(np.diff(m)))
    return [
        np.mean(x),
        np.mean(y),
        np.mean(z),
        np.std(x, ddof=ddof),
        np.std(y, ddof=ddof),
        np.std(z, ddof=ddof),
        np.max(x),
        np.max(y),
        np.max(z),
        cor(x, y),
        cor(x, z),
        cor(y, z),
        np.mean(m),
        np.std(m, ddof=ddof),
        area,
        dif,
    ]


def ref_study_window(frame: pd.DataFrame, entry) -> pd.DataFrame:
    recipe = entry.recipe
    channels = [list(s.channels) for s in entry.sensors]
    rows = []
    for user in sorted(frame["userid"].unique()):
        for spec in entry.classes:
            part = frame[(frame["userid"] == user) & (frame["label"].astype(str) == str(spec.code))]
            seq = part[[c for group in channels for c in group]].to_numpy(dtype=float)
            smooth = ref_moving_average(seq, recipe.smoothing)
            starts = list(range(1, len(seq) + 1, recipe.window))[:-1]  # the last start is dropped
            for start in starts:
                window = smooth[start - 1 : start - 1 + recipe.window]
                assert len(window) == recipe.window
                feats = []
                for k in range(len(channels)):
                    x, y, z = window[:, 3 * k], window[:, 3 * k + 1], window[:, 3 * k + 2]
                    feats += ref_sensor(
                        x, y, z, ddof=recipe.sd_ddof, auc=recipe.auc, meandif=recipe.meandif
                    )
                if not np.isnan(feats).any():
                    rows.append([user, part["label"].iloc[0], *feats])
    return pd.DataFrame(rows, columns=["userid", "label", *feature_columns(len(channels))])


def signals_from(records: list[tuple[int, int, list[float]]], channels: list[str]) -> SignalTable:
    frame = pd.DataFrame(
        [[u, c, *v] for u, c, v in records], columns=["userid", "label", *channels]
    )
    frame.insert(2, "segment", 0)
    return SignalTable(frame)


def tiny_entry(window: int, smoothing: int = 1, n_sensors: int = 1, **recipe):
    entry = har70_entry(window=window, smoothing=smoothing, **recipe)
    sensors = entry.sensors[:n_sensors]
    return type(entry)(**{**entry.__dict__, "sensors": sensors})


# --------------------------------------------------------------------------
# Moving average and window count
# --------------------------------------------------------------------------


def test_moving_average_by_hand():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    # span 3: i=1 -> mean(1,2,4); i=2 -> mean(2,4,8); i>=3 -> mean of the last three
    expected = [7 / 3, 14 / 3, 7 / 3, 14 / 3, 28 / 3]
    np.testing.assert_allclose(moving_average(x, 3), expected, rtol=1e-15)


def test_moving_average_nan_spreads_to_every_mean_that_includes_it():
    x = np.array([1.0, 2.0, np.nan, 4.0, 5.0, 6.0, 7.0])
    got = moving_average(x, 3)
    # i=1 (1..3), i=2 (2..4), i=3..5 (backward) include sample 3; i=6, 7 do not.
    assert np.isnan(got[:5]).all()
    np.testing.assert_allclose(got[5:], [5.0, 6.0])


def test_moving_average_past_the_end_is_undefined():
    # span 3, length 3: i=2 would need samples 2..4 -> undefined; i=1 and i=3 are 1..3.
    got = moving_average(np.array([3.0, 6.0, 9.0]), 3)
    np.testing.assert_allclose(got[[0, 2]], [6.0, 6.0])
    assert np.isnan(got[1])
    assert np.isnan(moving_average(np.array([1.0, 2.0]), 3)).all()


@given(
    values=st.lists(st.floats(-1e3, 1e3), min_size=0, max_size=40),
    span=st.integers(1, 12),
)
def test_moving_average_matches_reference(values, span):
    x = np.array(values, dtype=float).reshape(-1, 1)
    np.testing.assert_allclose(
        moving_average(x, span), ref_moving_average(x, span), rtol=1e-12, atol=1e-9
    )


@given(length=st.integers(0, 5000), window=st.integers(2, 300))
def test_window_count_is_starts_minus_the_dropped_last(length, window):
    starts = list(range(1, length + 1, window))  # 1, 1+w, ... up to L
    kept = starts[:-1]
    assert window_count(length, window) == len(kept) == max(0, math.ceil(length / window) - 1)
    # every kept window is complete
    assert all(s + window - 1 <= length for s in kept)


@given(lengths=st.lists(st.integers(0, 60), min_size=1, max_size=5), window=st.integers(2, 9))
def test_recipe_row_count_is_sum_of_window_counts(lengths, window):
    rng = np.random.default_rng(sum(lengths) + window)
    records = []
    for code, length in zip([1, 3, 6, 7, 8], lengths, strict=False):
        records += [(501, code, list(rng.normal(size=3))) for _ in range(length)]
    table = featurize(signals_from(records, ["back_x", "back_y", "back_z"]), tiny_entry(window))
    assert len(table) == sum(window_count(n, window) for n in lengths)


# --------------------------------------------------------------------------
# study-window: hand-computed values
# --------------------------------------------------------------------------

# Three samples with magnitudes 7, 9, 11 (see the expectations below).
HAND_WINDOW = [[2.0, 3.0, 6.0], [1.0, 4.0, 8.0], [2.0, 6.0, 9.0]]


def test_study_window_features_by_hand():
    rest = [[5.0, 1.0, 2.0], [3.0, 2.0, 2.0], [4.0, 4.0, 1.0], [9.0, 9.0, 9.0]]
    records = [(501, 1, v) for v in HAND_WINDOW + rest]  # 7 samples, window 3: starts 1, 4, 7
    table = featurize(signals_from(records, ["back_x", "back_y", "back_z"]), tiny_entry(3))
    assert len(table) == 2  # the start at 7 is dropped
    row = table.iloc[0]
    s7 = math.sqrt(7)
    expected = {
        "meanX": 5 / 3, "meanY": 13 / 3, "meanZ": 23 / 3,
        "sdX": math.sqrt(1 / 3), "sdY": math.sqrt(7 / 3), "sdZ": math.sqrt(7 / 3),
        "maxX": 2.0, "maxY": 6.0, "maxZ": 9.0,
        "corXY": 1 / (2 * s7), "corXZ": -1 / (2 * s7), "corYZ": 13 / 14,
        "meanMagnitude": 9.0, "sdMagnitude": 2.0, "auc": 27.0, "meanDif": 4.0,
    }  # fmt: skip
    for name, value in expected.items():
        assert row[name] == pytest.approx(value, rel=1e-13, abs=1e-13), name
    assert row["userid"] == 501 and row["label"] == 1


def test_segment_variants_by_hand():
    # ddof 0, trapezoid area and mean successive difference on the same three samples.
    out = sensor_features(
        np.array(HAND_WINDOW), np.array([3]), sd_ddof=0, auc="trapezoid", meandif="mean"
    )[0]
    np.testing.assert_allclose(
        out[3:6], [math.sqrt(2 / 9), math.sqrt(14 / 9), math.sqrt(14 / 9)], rtol=1e-14
    )
    np.testing.assert_allclose(
        out[12:], [9.0, math.sqrt(8 / 3), (7 + 9) / 2 + (9 + 11) / 2, 2.0], rtol=1e-14
    )


def test_last_start_dropped_even_when_its_window_is_complete():
    records = [(501, 1, [float(i), float(i * i), 1.0 + i % 2]) for i in range(6)]  # L = 6, w = 3
    assert len(featurize(signals_from(records, ["back_x", "back_y", "back_z"]), tiny_entry(3))) == 1
    assert (
        len(featurize(signals_from(records[:2], ["back_x", "back_y", "back_z"]), tiny_entry(3)))
        == 0
    )


def test_smoothing_is_applied_before_windowing():
    # 10-sample smoothing of a ramp 0..29: sample i (1-based, >= 10) becomes i - 5.5.
    records = [(501, 1, [float(i), 2.0 * i, (i % 3) * 1.0]) for i in range(30)]
    table = featurize(
        signals_from(records, ["back_x", "back_y", "back_z"]), tiny_entry(10, smoothing=10)
    )
    # starts 1, 11, 21 -> windows 1..10 and 11..20; window 2 is samples 11..20 -> values 5.5..14.5
    assert len(table) == 2
    assert table["meanX"].iloc[1] == pytest.approx(10.0, rel=1e-14)
    assert table["maxX"].iloc[1] == pytest.approx(14.5, rel=1e-14)
    # window 1: positions 1..9 take the forward mean (= 4.5 .. 12.5), position 10 = 4.5
    assert table["maxX"].iloc[0] == pytest.approx(12.5, rel=1e-14)


# --------------------------------------------------------------------------
# study-window: undefined windows
# --------------------------------------------------------------------------


def test_constant_channel_window_dropped_and_counted():
    rng = np.random.default_rng(1)
    varying = [list(rng.normal(size=3)) for _ in range(4)]
    constant = [[0.1, float(v), float(w)] for v, w in rng.normal(size=(4, 2))]
    records = [
        (501, 1, v) for v in varying + constant + varying
    ]  # windows: ok, constant x, (dropped start)
    table = featurize(signals_from(records, ["back_x", "back_y", "back_z"]), tiny_entry(4))
    assert len(table) == 1
    assert table.attrs["dropped"] == {REASON_CONSTANT: 1}


def test_missing_value_drops_every_window_it_reaches():
    rng = np.random.default_rng(2)
    values = rng.normal(size=(40, 3))
    values[14, 1] = (
        np.nan
    )  # sample 15: smoothed positions 15..17 (span 3) -> window 3 (11..15) and 4 (16..20)
    records = [(501, 1, list(v)) for v in values]
    table = featurize(
        signals_from(records, ["back_x", "back_y", "back_z"]), tiny_entry(5, smoothing=3)
    )
    assert len(table) == window_count(40, 5) - 2
    assert table.attrs["dropped"] == {REASON_MISSING: 2}


def test_sequence_too_short_for_the_smoothing_is_dropped_with_its_reason():
    # L = 12, span 10: positions 4..9 need samples past 12 -> both windows (w = 5) undefined.
    rng = np.random.default_rng(3)
    records = [(501, 1, list(v)) for v in rng.normal(size=(12, 3))]
    table = featurize(
        signals_from(records, ["back_x", "back_y", "back_z"]), tiny_entry(5, smoothing=10)
    )
    assert len(table) == 0
    assert table.attrs["dropped"] == {REASON_SHORT: 2}


# --------------------------------------------------------------------------
# study-window against the reference on a recording with every complication
# --------------------------------------------------------------------------


def complicated_recording(rng: np.random.Generator) -> pd.DataFrame:
    parts = []
    for user in (503, 501, 502):  # file order is not user order
        n = 700
        labels = np.repeat(rng.choice([1, 3, 4, 6, 7, 8], size=35), 20)[:n]
        values = np.cumsum(rng.normal(0, 0.1, size=(n, 6)), axis=0) + rng.normal(0, 1, size=6)
        values[rng.random((n, 6)) < 0.002] = np.nan
        values[100:130, 2] = 0.25  # a constant stretch
        if user == 502:
            labels[labels == 8] = 7  # user 502 never lies down
            labels[:13] = 8  # ... except in a 13-sample sequence
        frame = pd.DataFrame(
            values, columns=["back_x", "back_y", "back_z", "thigh_x", "thigh_y", "thigh_z"]
        )
        frame.insert(0, "userid", user)
        frame.insert(1, "label", labels)
        frame.insert(2, "segment", user)
        parts.append(frame)
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize("window,smoothing", [(7, 10), (20, 3), (5, 1)])
def test_study_window_matches_reference(window, smoothing):
    frame = complicated_recording(np.random.default_rng(window))
    entry = har70_entry(window=window, smoothing=smoothing)
    got = featurize(SignalTable(frame), entry)
    want = ref_study_window(frame, entry)
    assert len(want) > 50
    assert list(got.columns) == list(want.columns)
    np.testing.assert_array_equal(got["userid"].to_numpy(), want["userid"].to_numpy())
    np.testing.assert_array_equal(got["label"].to_numpy(), want["label"].to_numpy())
    np.testing.assert_allclose(
        got.iloc[:, 2:].to_numpy(), want.iloc[:, 2:].to_numpy(), rtol=1e-12, atol=1e-12
    )
    assert sum(got.attrs["dropped"].values()) > 0


def test_har70_archive_to_features_matches_reference(tmp_path):
    path = tmp_path / "har70.zip"
    make_har70_zip(path, users=(502, 501), n_samples=2500, rng=np.random.default_rng(5))
    entry = har70_entry()
    signals = read_har70(entry, Sources([path]))
    got = featurize(signals, entry)
    want = ref_study_window(signals.frame, entry)
    assert len(got) == len(want) > 10
    assert got["userid"].tolist() == sorted(got["userid"].tolist())
    ranks = got["label"].map({1: 0, 3: 1, 6: 2, 7: 3, 8: 4})
    assert (ranks.groupby(got["userid"]).diff().dropna() >= 0).all()
    np.testing.assert_allclose(
        got.iloc[:, 2:].to_numpy(), want.iloc[:, 2:].to_numpy(), rtol=1e-12, atol=1e-12
    )


def test_unknown_recipe_and_missing_channels_are_reported():
    records = [(501, 1, [1.0, 2.0, 3.0])]
    entry = tiny_entry(3)
    precomputed = type(entry)(
        **{**entry.__dict__, "recipe": type(entry.recipe)(name="precomputed")}
    )
    with pytest.raises(RegistryError, match="precomputed"):
        featurize(signals_from(records, ["back_x", "back_y", "back_z"]), precomputed)
    with pytest.raises(RegistryError, match="back_z"):
        featurize(signals_from(records, ["back_x", "back_y", "other"]), entry)


# --------------------------------------------------------------------------
# study-segment
# --------------------------------------------------------------------------


def ref_segment_rows(frame: pd.DataFrame, ddof=0, auc="trapezoid", meandif="mean") -> np.ndarray:
    rows = []
    for _, part in frame.groupby("segment", sort=False):
        xyz = part[["x", "y", "z"]].to_numpy()
        d = np.diff(xyz, axis=0)
        rows.append(
            ref_sensor(*xyz.T, ddof=ddof, auc=auc, meandif=meandif)
            + ref_sensor(*d.T, ddof=ddof, auc=auc, meandif=meandif)
        )
    return np.array(rows)


def test_study_segment_matches_reference_on_ragged_segments():
    rng = np.random.default_rng(7)
    lengths = rng.integers(3, 60, size=40)
    frame = pd.DataFrame(
        {
            "userid": np.repeat(np.arange(40) // 10 + 1, lengths),
            "label": np.repeat(np.arange(40) % 20 + 1, lengths),
            "segment": np.repeat(np.arange(40), lengths),
        }
    )
    frame[["x", "y", "z"]] = rng.normal(0, 3, size=(lengths.sum(), 3))
    got = featurize(SignalTable(frame), gestures_entry())
    assert got.shape == (40, 34)
    np.testing.assert_allclose(
        got.iloc[:, 2:].to_numpy(), ref_segment_rows(frame), rtol=1e-12, atol=1e-12
    )
    assert got["label"].tolist() == list(np.arange(40) % 20 + 1)


def test_study_segment_on_the_real_gestures_archive():
    if not GESTURES_ZIP.is_file():
        pytest.skip(f"official gestures archive not found at {GESTURES_ZIP}")
    entry = gestures_entry()
    signals = read_gestures(entry, Sources([GESTURES_ZIP]))
    table = featurize(signals, entry)
    assert table.shape == (3200, 34)
    assert len(feature_columns(2)) == 32 and list(table.columns[2:]) == feature_columns(2)
    assert sorted(table["userid"].unique()) == list(range(1, 9))
    assert sorted(table["label"].unique()) == list(range(1, 21))
    assert table.attrs["dropped"] == {}
    # ordered by user, gesture, repetition: 20 rows per (user, gesture), in order
    assert table["userid"].tolist() == sorted(table["userid"].tolist())
    assert table["label"].tolist()[:40] == [1] * 20 + [2] * 20

    # One file by hand: U03/07/05 is row (3-1)*400 + (7-1)*20 + (5-1).
    with zipfile.ZipFile(GESTURES_ZIP) as zf:
        text = zf.read("gestures-dataset/U03/07/05.txt").decode()
    xyz = np.array(
        [[float(v) for v in line.split()[3:]] for line in text.splitlines() if line.strip()]
    )
    x, y, z = xyz.T
    n = len(x)
    m = [math.sqrt(a * a + b * b + c * c) for a, b, c in xyz]
    mean_x = sum(x) / n
    sd_x = math.sqrt(sum((v - mean_x) ** 2 for v in x) / n)
    mean_y = sum(y) / n
    cov_xy = sum((a - mean_x) * (b - mean_y) for a, b in zip(x, y, strict=True))
    cor_xy = cov_xy / math.sqrt(
        sum((a - mean_x) ** 2 for a in x) * sum((b - mean_y) ** 2 for b in y)
    )
    trapezoid = sum((m[i] + m[i + 1]) / 2 for i in range(n - 1))
    mean_dif = (m[-1] - m[0]) / (n - 1)
    dx = [x[i + 1] - x[i] for i in range(n - 1)]
    row = table.iloc[(3 - 1) * 400 + (7 - 1) * 20 + (5 - 1)]
    assert (row["userid"], row["label"]) == (3, 7)
    assert row["meanX"] == pytest.approx(mean_x, rel=1e-12)
    assert row["sdX"] == pytest.approx(sd_x, rel=1e-12)
    assert row["maxZ"] == max(z)
    assert row["corXY"] == pytest.approx(cor_xy, rel=1e-11)
    assert row["auc"] == pytest.approx(trapezoid, rel=1e-12)
    assert row["meanDif"] == pytest.approx(mean_dif, rel=1e-9, abs=1e-12)
    assert row["meanX2"] == pytest.approx(sum(dx) / (n - 1), rel=1e-9, abs=1e-12)
    assert row["maxX2"] == pytest.approx(max(dx), rel=1e-12)

    # and a sample of files against the numpy reference
    picks = np.random.default_rng(0).choice(3200, size=60, replace=False)
    frame = signals.frame[signals.frame["segment"].isin(picks)]
    np.testing.assert_allclose(
        table.iloc[np.sort(picks), 2:].to_numpy(), ref_segment_rows(frame), rtol=1e-12, atol=1e-12
    )


# --------------------------------------------------------------------------
# study-window's windowed layout against a brute-force loop and the flat layout
# --------------------------------------------------------------------------


def brute_force_window(x: list[float], y: list[float], z: list[float], ddof, auc, meandif):
    """The 16 features of one window with plain Python loops, from their definitions."""
    n = len(x)

    def mean(v):
        return sum(v) / n

    def sd(v):
        mu = mean(v)
        return math.sqrt(sum((a - mu) ** 2 for a in v) / (n - ddof))

    def cor(a, b):
        if max(a) == min(a) or max(b) == min(b):
            return math.nan
        ma, mb = mean(a), mean(b)
        num = sum((p - ma) * (q - mb) for p, q in zip(a, b, strict=True))
        return num / math.sqrt(sum((p - ma) ** 2 for p in a) * sum((q - mb) ** 2 for q in b))

    m = [math.sqrt(a * a + b * b + c * c) for a, b, c in zip(x, y, z, strict=True)]
    steps = [m[i + 1] - m[i] for i in range(n - 1)]
    area = sum(m) if auc == "sum" else sum((m[i] + m[i + 1]) / 2 for i in range(n - 1))
    dif = sum(steps) if meandif == "net" else sum(steps) / len(steps)
    return [
        mean(x), mean(y), mean(z), sd(x), sd(y), sd(z), max(x), max(y), max(z),
        cor(x, y), cor(x, z), cor(y, z), mean(m), sd(m), area, dif,
    ]  # fmt: skip


@pytest.mark.parametrize(
    "ddof,auc,meandif", [(1, "sum", "net"), (0, "trapezoid", "mean"), (1, "trapezoid", "net")]
)
def test_windowed_features_match_a_brute_force_loop(ddof, auc, meandif):
    # No smoothing: window k of each (user, class) sequence is raw samples k*w .. k*w+w-1.
    rng = np.random.default_rng(11)
    width, records = 6, []
    for user, code, length in [(502, 1, 40), (501, 3, 25), (501, 1, 31), (502, 8, 6)]:
        values = rng.normal(0, 2, size=(length, 3)) + rng.normal(0, 5, size=3)
        records += [(user, code, list(v)) for v in values]
    signals = signals_from(records, ["back_x", "back_y", "back_z"])
    got = featurize(signals, tiny_entry(width, sd_ddof=ddof, auc=auc, meandif=meandif))

    want = []
    frame = signals.frame
    for user, code in [(501, 1), (501, 3), (502, 1), (502, 8)]:  # users up, classes in order
        part = frame[(frame["userid"] == user) & (frame["label"] == code)]
        xyz = part[["back_x", "back_y", "back_z"]].to_numpy().tolist()
        for k in range(window_count(len(xyz), width)):
            window = xyz[k * width : (k + 1) * width]
            x, y, z = ([row[i] for row in window] for i in range(3))
            want.append([user, code, *brute_force_window(x, y, z, ddof, auc, meandif)])
    want = np.array(want)
    assert got.shape == (len(want), 18) and len(want) == 6 + 4 + 5 + 0
    np.testing.assert_array_equal(got[["userid", "label"]].to_numpy(), want[:, :2])
    np.testing.assert_allclose(got.iloc[:, 2:].to_numpy(), want[:, 2:], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("smoothing,second_sensor", [(1, None), (4, None), (4, "diff")])
def test_windowed_layout_gives_the_bits_of_the_flat_layout(smoothing, second_sensor):
    # The flat (bincount) layout of sensor_features, fed the same smoothed windows,
    # must give the same bits: the feature tables' hashes rest on it.
    rng = np.random.default_rng(12)
    n, width = 400, 8
    values = np.round(rng.normal(0, 1, size=(n, 3)), 2)
    values[40:60, 0] = 0.5  # constant windows
    values[100:120] = -0.0  # windows of signed zeros
    values[200, 1] = np.nan
    records = [(501, 1, list(v)) for v in values]
    entry = tiny_entry(width, smoothing=smoothing, second_sensor=second_sensor)
    got = featurize(signals_from(records, ["back_x", "back_y", "back_z"]), entry)
    count = window_count(n, width)
    smooth = moving_average(values, smoothing)[: count * width]
    flat = sensor_features(smooth, np.full(count, width))
    if second_sensor == "diff":
        steps = np.diff(smooth.reshape(count, width, 3), axis=1).reshape(-1, 3)
        flat = np.hstack([flat, sensor_features(steps, np.full(count, width - 1))])
    kept = ~np.isnan(flat).any(axis=1)
    assert 0 < kept.sum() < count
    assert got.iloc[:, 2:].to_numpy().tobytes() == flat[kept].tobytes()


def test_running_means_of_sequences_laid_end_to_end_are_those_of_each_sequence():
    # Longer than one computing block, so block boundaries are crossed.
    rng = np.random.default_rng(13)
    values = rng.normal(0, 1e3, size=40_000)
    cut = 23_456
    whole = running_means(values, 10)
    np.testing.assert_array_equal(whole[: cut - 9], running_means(values[:cut], 10))
    np.testing.assert_array_equal(whole[cut:], running_means(values[cut:], 10))
    # Each mean, with Python floats: sequential sum / span, plus the mean deviation.
    for j in [0, 1, 16_383, 16_384, 16_385, 32_767, 32_768, len(whole) - 1]:
        window = [float(v) for v in values[j : j + 10]]
        total = window[0]
        for v in window[1:]:
            total += v
        mean = total / 10
        correction = window[0] - mean
        for v in window[1:]:
            correction += v - mean
        assert whole[j] == mean + correction / 10
    assert running_means(values[:5], 10).shape == (0,)


def exact_mean(window: np.ndarray) -> float:
    """The correctly rounded mean of ``window`` (NaN if it holds a NaN or an infinity)."""
    if not np.isfinite(window).all():
        return math.nan
    return float(sum(Fraction(float(v)) for v in window) / len(window))


@given(
    values=st.lists(
        st.one_of(
            st.floats(allow_nan=False, allow_infinity=False),
            st.floats(-1e3, 1e3).map(lambda v: round(v, 6)),
            st.sampled_from([0.0, -0.0, 5e-324, math.nan, math.inf, -math.inf]),
        ),
        min_size=DIRECT_MAX_SPAN + 1,
        max_size=DIRECT_MAX_SPAN + 60,
    ),
    extra=st.integers(1, 40),
)
def test_long_spans_give_the_correctly_rounded_mean_of_each_window(values, extra):
    # Above DIRECT_MAX_SPAN the means come from exact sums: each is the mean of
    # its samples rounded once, whatever their magnitudes (huge, tiny, subnormal).
    x = np.array(values)
    span = min(DIRECT_MAX_SPAN + extra, len(x))
    got = running_means(x, span)
    assert got.shape == (len(x) - span + 1,)
    expected = np.array([exact_mean(x[j : j + span]) for j in range(len(got))])
    np.testing.assert_array_equal(got, expected)


def test_long_spans_stay_exact_across_the_blocks_of_a_long_sequence():
    # The exact path works through a long sequence a block at a time, carrying
    # its prefix sums: means on both sides of every block boundary are checked.
    rng = np.random.default_rng(17)
    span = DIRECT_MAX_SPAN + 1
    x = np.round(rng.normal(0, 1, size=150_000), 6)
    x[70_000] = np.nan
    got = running_means(x, span)
    for j in [0, 65_535, 65_536, 65_537, 69_800, 131_071, 131_072, len(got) - 1]:
        expected = exact_mean(x[j : j + span])
        assert got[j] == expected or (math.isnan(expected) and math.isnan(got[j])), j
    assert np.isnan(got[70_000 - span + 1 : 70_001]).all()
    assert not np.isnan(got[: 70_000 - span + 1]).any() and not np.isnan(got[70_001:]).any()


def test_long_spans_keep_the_edges_and_the_missing_samples_of_the_moving_average():
    # The exact path changes how a mean is summed, not which samples it takes.
    rng = np.random.default_rng(15)
    span = DIRECT_MAX_SPAN + 44
    x = np.round(rng.normal(0, 1, size=(3 * span, 2)), 6)
    x[span + 7, 1] = np.nan
    got = moving_average(x, span)
    reference = ref_moving_average(x, span)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(reference))
    np.testing.assert_allclose(got, reference, rtol=1e-13, atol=1e-13)
    for i in [0, span - 2, span - 1, 2 * span, 3 * span - 1]:  # both edges, both paths
        lo = i - span + 1 if i >= span - 1 else i
        assert got[i, 0] == exact_mean(x[lo : lo + span, 0])
    short = moving_average(x[: 2 * span - 3], span)  # forward means run past the end
    assert np.isnan(short[span - 2 : span - 1]).all() and not np.isnan(short[span - 1]).any()


def test_spans_up_to_the_direct_limit_keep_the_sequential_sums():
    # The registry's spans (10) take the direct sums: the tables' bits rest on it.
    rng = np.random.default_rng(16)
    values = np.round(rng.normal(0, 1, size=2_000), 6)
    means = running_means(values, DIRECT_MAX_SPAN)
    for j in [0, 1, 999, len(means) - 1]:
        window = [float(v) for v in values[j : j + DIRECT_MAX_SPAN]]
        total = window[0]
        for v in window[1:]:
            total += v
        mean = total / DIRECT_MAX_SPAN
        correction = window[0] - mean
        for v in window[1:]:
            correction += v - mean
        assert means[j] == mean + correction / DIRECT_MAX_SPAN


def test_recording_codes_of_any_size_give_the_same_windows():
    # Codes too far apart for one combined sort key take the three-key sort instead.
    frame = complicated_recording(np.random.default_rng(14))
    frame["recording"] = (np.arange(len(frame)) // 500) % 4  # four recordings, interleaved
    entry = har70_entry(window=7, smoothing=3)
    compact = featurize(SignalTable(frame), entry)
    spread = featurize(SignalTable(frame.assign(recording=frame["recording"] * 2**61)), entry)
    whole = featurize(SignalTable(frame.drop(columns="recording")), entry)
    assert len(compact) > 50 and len(compact) < len(whole)  # no window spans two recordings
    assert compact.to_numpy().tobytes() == spread.to_numpy().tobytes()
