"""Sensors of headerless columns, grouped by their scales (issue 28, releases in the wild).

PAMAP2 writes per IMU 17 columns: temperature, two accelerometers, a
gyroscope, a magnetometer (x, y, z each) and 4 orientation values; MHEALTH 23:
an accelerometer, 2 ECG leads, then accelerometer, gyroscope and magnetometer
of two places. Threes counted from the first column are out of step with such
sensors. Generated here in other orders, counts and scales: the draft must
read in threes only runs of columns of one scale whose length is a multiple of
three, from their first column, and give every other run per-channel
features. The expected groups are written from the generating layout.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from mudata.drafting.sensors import SCALE_BREAK, group_channels, scale_runs

#: Sensor kinds: channels, and the standard deviation of their values.
KINDS = {
    "acc": (3, 4.0),
    "acc6": (3, 4.0),  # a second accelerometer beside the first: one scale
    "gyro": (3, 0.6),
    "mag": (3, 25.0),
    "temp": (1, 0.01),
    "ecg": (2, 0.15),
    "orient": (4, 0.0012),
    "emg": (8, 1e-5),
}


def layout_table(kinds: list[str], rng: np.random.Generator, rows: int = 3000) -> pd.DataFrame:
    """Columns ``c1 ..`` of the given sensors in order, each axis its own noise and offset."""
    parts = []
    for kind in kinds:
        count, sd = KINDS[kind]
        # The axes of one sensor differ in spread by up to 1.6x, never by SCALE_BREAK.
        spread = sd * rng.uniform(1.0, 1.6, count)
        parts.append(rng.normal(size=(rows, count)) * spread + rng.uniform(-3, 3, count) * sd)
    values = np.hstack(parts)
    return pd.DataFrame(values, columns=[f"c{i}" for i in range(1, values.shape[1] + 1)])


def expected(kinds: list[str]) -> list[tuple[tuple[str, ...], str]]:
    """The sensors of a layout: runs of kinds of one scale, in threes where they can be."""
    out, at, run = [], 1, []
    scales = [KINDS[k][1] for k in kinds]
    for i, kind in enumerate(kinds):
        count = KINDS[kind][0]
        run += [f"c{at + j}" for j in range(count)]
        at += count
        last = i + 1 == len(kinds) or scales[i + 1] != scales[i]
        if last:
            if len(run) % 3 == 0:
                out += [(tuple(run[j : j + 3]), "tri-axial") for j in range(0, len(run), 3)]
            else:
                out.append((tuple(run), "per-channel"))
            run = []
    return out


LAYOUTS = {
    "pamap2 imu": ["temp", "acc", "acc6", "gyro", "mag", "orient"],
    "pamap2 three imus": ["temp", "acc", "acc6", "gyro", "mag", "orient"] * 3,
    "mhealth": ["acc", "ecg", "acc", "gyro", "mag", "acc", "gyro", "mag"],
    "temp last": ["acc", "gyro", "temp"],
    "usc-had": ["acc", "gyro"],
    "daphnet": ["acc", "acc6", "acc"],
    "emg beside acc": ["emg", "acc"],
}


@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_headerless_columns_are_grouped_by_their_scales(name, seed):
    kinds = LAYOUTS[name]
    table = layout_table(kinds, np.random.default_rng(seed))
    found = group_channels(list(table.columns), header=False, table=table)
    assert [(g.channels, g.features) for g in found] == expected(kinds)
    assert sorted(c for g in found for c in g.channels) == sorted(table.columns)
    assert len({g.name for g in found}) == len(found)
    for group in found:
        assert group.why.startswith("no header line") and re.search(r"\(sd \d", group.why)


def test_a_column_left_out_between_two_cuts_the_run():
    table = layout_table(["acc", "acc"], np.random.default_rng(4))
    channels = ["c1", "c2", "c4", "c5", "c6"]  # c3 left out (empty, constant, ...)
    runs, _, cuts = scale_runs(channels, table)
    assert runs == [["c1", "c2"], ["c4", "c5", "c6"]]
    assert cuts == {"c4": "a column left out before c4"}
    found = group_channels(channels, header=False, table=table)
    assert [(g.channels, g.features) for g in found] == [
        (("c1", "c2"), "per-channel"),
        (("c4", "c5", "c6"), "tri-axial"),
    ]


def test_one_scale_not_in_threes_is_one_per_channel_sensor_and_without_values_threes():
    table = layout_table(["emg"], np.random.default_rng(5))
    (group,) = group_channels(list(table.columns), header=False, table=table)
    assert group.channels == tuple(table.columns) and group.features == "per-channel"
    six = [f"c{i}" for i in range(1, 7)]
    assert [g.channels for g in group_channels(six, header=False)] == [
        tuple(six[:3]),
        tuple(six[3:]),
    ]


@pytest.mark.parametrize("ratio", [SCALE_BREAK * 1.3, SCALE_BREAK * 10])
def test_the_break_is_the_ratio_of_neighbouring_spreads(ratio):
    rng = np.random.default_rng(6)
    values = np.hstack([rng.normal(size=(5000, 3)), rng.normal(size=(5000, 3)) * ratio])
    table = pd.DataFrame(values, columns=[f"c{i}" for i in range(1, 7)])
    runs, _, _ = scale_runs(list(table.columns), table)
    assert runs == [["c1", "c2", "c3"], ["c4", "c5", "c6"]]
    # Within SCALE_BREAK: one run, whose six columns are read in threes all the same.
    close = pd.DataFrame(
        np.hstack([values[:, :3], values[:, 3:] / ratio * SCALE_BREAK * 0.7]),
        columns=table.columns,
    )
    assert scale_runs(list(close.columns), close)[0] == [list(close.columns)]
