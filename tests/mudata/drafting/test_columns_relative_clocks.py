"""Clocks without a header or a unit: time since the recording's start (issue 28, in the wild).

PAMAP2 writes seconds (``5.64 5.65 ...``, 100 Hz) as its first column, Daphnet
milliseconds floored to whole ticks (``15 31 46 62``, 64 Hz), other releases
microseconds or nanoseconds from a device's boot. Generated here at rates of
1 to 2000 Hz, in each unit, printed with few digits, with gaps (dropped
samples) and a start that is not zero; a row counter, a rounded counter, a
cumulative signal and a clock implying no plausible rate are not clocks. The
rate each clock implies is computed here from the rate it was generated at.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mudata.drafting.columns import (
    CLOCK_UNITS,
    clock_step,
    find_roles,
    relative_clock,
    unitless_seconds,
)
from mudata.drafting.draft import draft_entry

#: A unit's ticks per second, and how the generated values are printed in it.
PRINTED = {"seconds": "{:.4f}", "milliseconds": "{:.0f}", "microseconds": "{:.0f}", "nanoseconds": "{:.0f}"}  # fmt: skip


def generated_clock(rate: float, unit: str, n: int, rng: np.random.Generator, gaps: float = 0.0):
    """``n`` sample times at ``rate`` Hz in ``unit``, from a random start, printed as a
    release prints them (whole ticks: floored), with a fraction ``gaps`` of samples dropped."""
    start = rng.uniform(0, 50)
    seconds = start + np.arange(n) / rate
    keep = rng.random(n) >= gaps
    ticks = seconds[keep] / CLOCK_UNITS[unit]
    printed = [PRINTED[unit].format(np.floor(t) if unit != "seconds" else t) for t in ticks]
    return pd.Series(printed).astype(float)


def implied_rate(values: pd.Series) -> float:
    step = clock_step(values.to_numpy(dtype=float))
    assert step is not None
    seconds, _ = unitless_seconds(step)
    return 1.0 / seconds


@pytest.mark.parametrize(
    ("rate", "unit"),
    [
        (100, "seconds"),
        (50, "seconds"),
        (2, "seconds"),
        (64, "milliseconds"),
        (52, "milliseconds"),
        (128, "milliseconds"),
        (500, "milliseconds"),
        (100, "microseconds"),
        (400, "microseconds"),
        (25, "microseconds"),
        (50, "nanoseconds"),
        (200, "nanoseconds"),
    ],
)
@pytest.mark.parametrize("gaps", [0.0, 0.01])
def test_a_clock_at_any_plausible_rate_and_unit_is_found_with_its_rate(rate, unit, gaps):
    rng = np.random.default_rng(rate)
    values = generated_clock(rate, unit, 3000, rng, gaps)
    why = relative_clock(values)
    assert why is not None and why.startswith("a clock from the recording's start"), why
    assert f"read as {unit}" in why
    # Whole ticks (64 Hz in ms steps by 15 and 16) and the printed digits move the
    # median step; the rate stays within 0.5 %.
    assert implied_rate(values) == pytest.approx(rate, rel=5e-3)


@pytest.mark.parametrize(
    ("step", "unit", "rate"),
    [(1.5, "milliseconds", 666.667), (500, "milliseconds", 2), (800, "milliseconds", 1.25),
     (2000, "microseconds", 500), (5e4, "microseconds", 20), (2e7, "nanoseconds", 50)],
)  # fmt: skip
def test_a_step_without_a_unit_is_read_in_the_unit_the_note_names(step, unit, rate):
    """The same bytes may be two clocks (500: 2 Hz in milliseconds, 2000 Hz in
    microseconds): below 1 seconds, up to 1e4 milliseconds, beyond nanoseconds,
    unless that reading is no plausible rate (1 to 2000 Hz) and another unit's is."""
    seconds, how = unitless_seconds(step)
    assert how == f"read as {unit}"
    assert 1 / seconds == pytest.approx(rate, rel=1e-3)


def test_the_rounding_of_a_millisecond_clock_does_not_move_the_rate():
    """Daphnet's bytes: floor(15 + i * 15.625): steps of 15 and 16, the median 16 (62.5 Hz)."""
    values = pd.Series(np.floor(15 + np.arange(6400) * 1000 / 64))
    assert float(np.median(np.diff(values))) == 16.0
    assert implied_rate(values) == pytest.approx(64.0, abs=0.01)


def test_a_jittering_clock_keeps_its_nominal_rate():
    """A phone's timestamps (geotec's shape): steps of 5 to 14 ms around a nominal
    10 ms, whose mean is 9.7: the median, 100 Hz, not the mean's 103 Hz."""
    rng = np.random.default_rng(9)
    steps = rng.choice([5, 7, 8, 9, 10, 10, 10, 10, 11, 12, 13], size=3000)
    values = pd.Series(1_657_534_605_376 + np.cumsum(steps), dtype=float)
    assert float(np.mean(steps)) < 9.8
    assert implied_rate(values) == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("row counter", np.arange(1, 5001, dtype=float)),
        ("row counter from 0", np.arange(0, 5000, dtype=float)),
        # R's write.csv past 99,999: 5 significant digits (1e+05, 1.0001e+05, ...)
        (
            "rounded counter",
            np.array([float(f"{v:.5g}") for v in np.arange(95_000, 110_000)]),
        ),
        ("10 kHz in seconds", np.arange(5000) * 1e-4),
        ("0.5 Hz in nanoseconds, or slower in any unit", np.arange(500) * 2e9),
        ("a cumulative signal", np.cumsum(np.random.default_rng(1).exponential(1.0, 4000))),
        ("a sorted clock that goes back", np.r_[np.arange(1000) * 0.01, np.arange(1000) * 0.01]),
        ("a clock that counts down", 100.0 - np.arange(2000) * 0.01),
    ],
)
def test_counters_and_other_monotone_columns_are_no_clock(name, values):
    assert relative_clock(values) is None, name


def test_the_first_headerless_clock_is_the_time_and_the_others_stay_out():
    rng = np.random.default_rng(3)
    n = 2000
    table = pd.DataFrame(
        {
            "c1": np.arange(1, n + 1),  # a row counter first
            "c2": np.round(7.3 + np.arange(n) / 100, 2),  # seconds at 100 Hz
            "c3": rng.normal(size=n),
            "c4": np.repeat([1, 2], n // 2),
        }
    )
    roles = find_roles(table, header=False, given={})
    assert roles.time == "c2"
    assert roles.left_out["c1"].startswith("a row counter")
    assert any(note.startswith("time: column 'c2', a clock") for note in roles.notes)
    # With a header, a column's name speaks for it: no clock is taken by its values alone.
    named = find_roles(table.set_axis(["n", "t2", "x", "y"], axis=1), header=True, given={})
    assert named.time is None


def _release(root: Path, rate: float, unit: str, separator: str, rng: np.random.Generator):
    """Headerless files ``time code x y z`` per subject, code 0 between the activities."""
    root.mkdir(parents=True)
    for subject in (101, 102, 103):
        codes = [0, 1, 0, 2, 0, 3, 0]
        labels = np.concatenate([np.full(int(rate * (6 if c else 2)), c) for c in codes])
        n = len(labels)
        clock = generated_clock(rate, unit, n, rng)
        xyz = rng.normal(size=(n, 3)) * (1 + labels[:, None])
        lines = [
            separator.join([PRINTED[unit].format(t), str(code), *(f"{v:.5f}" for v in row)])
            for t, code, row in zip(clock, labels, xyz, strict=True)
        ]
        (root / f"subject{subject}.dat").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("rate", "unit", "separator"),
    [
        (100, "seconds", " "),
        (64, "milliseconds", " "),
        (50, "milliseconds", "\t"),
        (40, "microseconds", ","),
    ],
)
def test_init_drafts_the_rate_of_a_headerless_clock(tmp_path, rate, unit, separator):
    rng = np.random.default_rng(int(rate))
    _release(tmp_path / "release", rate, unit, separator, rng)
    draft = draft_entry([tmp_path / "release"], "clocked", output=tmp_path / "c.toml")
    assert draft.entry.sampling_rate_hz == pytest.approx(rate, rel=5e-3)
    assert draft.entry.reader_options["time_col"] == "c1"
    assert draft.entry.reader_options["label_col"] == "c2"
    assert draft.entry.reader_options["channels"] == ["c3", "c4", "c5"]
    assert any(f"read as {unit}" in line for line in draft.report if line.startswith("time:"))
