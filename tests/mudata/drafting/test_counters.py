"""Row counters and clocks are never signals, whatever their notation (issue 28, item 1).

The bytes are written here exactly as the programs that publish such files
write them: R's 5 significant digits (``99999``, ``1e+05``, ``1.0001e+05``),
6 digits, scientific notation, floats, gaps, restarts. Expected values come
from how the files were built (which column is the counter), never from the
code under test.
"""

from __future__ import annotations

import io
import tarfile
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
from mudata.cli import main
from mudata.drafting.columns import non_signal_reason, time_unit
from mudata.drafting.counters import (
    counter_evidence,
    monotone_channels,
    monotone_evidence,
    significant_digits,
)
from mudata.drafting.draft import draft_entry
from tests.conftest import SHARED_DATA

CHEST = SHARED_DATA / "releases" / "chest_accel_casale_p1-8.tar.gz"


def _column(lines: list[str]) -> pd.Series:
    """One column of text parsed as the drafting reads it (pandas' CSV parser)."""
    return pd.read_csv(io.StringIO("\n".join(lines) + "\n"), header=None)[0]


def _rows(start: int, n: int, gaps: dict[int, int] | None = None) -> np.ndarray:
    """Row numbers ``start ...``, skipping ``gaps[i]`` numbers after row ``i``."""
    steps = np.ones(n, dtype=np.int64)
    steps[0] = start
    for at, skipped in (gaps or {}).items():
        steps[at] += skipped
    return np.cumsum(steps)


@pytest.mark.parametrize("digits", [5, 6])
@pytest.mark.parametrize("start", [0, 1, 99_000, 250_000])
def test_a_counter_rounded_to_significant_digits_is_a_row_counter(digits, start):
    rows = _rows(start, 30_000)
    text = [f"{r:.{digits}g}" for r in rows]
    if start == 99_000 and digits == 5:
        assert text[999:1002] == ["99999", "1e+05", "1e+05"]
        assert "1.0001e+05" in text
    values = _column(text)
    printed = min(digits, len(str(rows[-1])))  # 29,999 is written with 5 digits
    assert significant_digits(values.to_numpy(dtype=float)) == printed
    why = non_signal_reason("c1", values)
    assert why is not None and why.startswith("a row counter"), why
    flat = values.iloc[-1] != rows[-1]  # rounded at the end: said so
    assert (f"rounding of its {printed} significant digits" in why) == flat


@pytest.mark.parametrize(
    "fmt", ["{:.6e}", "{:.1f}", "{:.3f}", "{:E}", "{:d}"], ids=["sci", "f1", "f3", "SCI", "int"]
)
def test_counters_in_scientific_notation_or_as_floats(fmt):
    values = _column([fmt.format(r) for r in _rows(1, 500)])
    assert counter_evidence(values) == "a row counter (whole numbers stepping by 1, 1 to 500)"


def test_gaps_and_restarts_are_counted_in_the_evidence():
    gapped = _rows(0, 2000, gaps={300: 5, 1200: 40})
    why = counter_evidence(_column([str(r) for r in gapped]))
    assert why == "a row counter (whole numbers stepping by 1, 0 to 2044, 2 gap(s))"
    # two recordings in one file, each counting from 1
    restarted = np.concatenate([_rows(1, 800), _rows(1, 700)])
    why = counter_evidence(_column([str(r) for r in restarted]))
    assert why == "a row counter (whole numbers stepping by 1, 1 to 700, 1 restart(s))"


def test_columns_that_do_not_track_the_row_number_are_no_row_counters():
    rng = np.random.default_rng(0)
    every_other = pd.Series(np.arange(0, 2000, 2))
    assert counter_evidence(every_other) is None
    assert non_signal_reason("c1", every_other).startswith("a time or a counter (never decreases")
    # a 1 in 10 restart rate is not a counter that restarts: it is a sawtooth signal
    saw = pd.Series(np.tile(np.arange(10), 100))
    assert counter_evidence(saw) is None
    # a counter that is flat for 10 rows where its digits allow no rounding: not the row number
    assert counter_evidence(pd.Series(np.repeat(np.arange(1000, 1100), 10))) is None
    assert counter_evidence(pd.Series(rng.normal(size=1000))) is None


def test_a_signal_trending_upward_stays_a_signal():
    rng = np.random.default_rng(1)
    n = 5000
    trend = 0.05 * np.arange(n) + rng.normal(0, 1.0, n)
    assert non_signal_reason("c2", pd.Series(trend)) is None
    # integers drifting up by about one per row, but going back now and then
    drift = np.cumsum(rng.choice([-1, 1, 1, 2], size=n))
    assert non_signal_reason("c2", pd.Series(drift)) is None
    # a slow integer signal whose first rows happen to rise
    assert non_signal_reason("c3", pd.Series(np.r_[np.arange(40), 39 - np.arange(40)])) is None


def test_monotone_columns_are_a_time_or_a_counter_never_a_signal():
    rng = np.random.default_rng(2)
    clock = np.cumsum(rng.uniform(0.015, 0.025, 3000))  # seconds, no unit in the name
    why = non_signal_reason("c4", pd.Series(clock))
    assert why.startswith("a time or a counter (never decreases through the file")
    countdown = pd.Series(np.linspace(100, 0, 600))
    assert monotone_evidence(countdown).startswith("a time or a counter (never increases")
    still = pd.Series([31] * 50 + [32] * 50)  # a still sensor stepping once
    assert monotone_evidence(still) is None


@pytest.mark.parametrize(
    ("name", "unit"),
    [
        ("timestamp(ns)", ("ns", 1e-9)),
        ("TimeStamp", None),
        ("time_ms", ("ms", 1e-3)),
        ("t [s]", ("s", 1.0)),
        ("Time (us)", ("us", 1e-6)),
        ("elapsed_sec", ("sec", 1.0)),
    ],
)
def test_time_columns_by_a_unit_in_their_name(name, unit):
    assert time_unit(name) == unit
    values = pd.Series(np.random.default_rng(3).normal(size=100))  # whatever the values
    assert non_signal_reason(name, values) == f"time, by its name ({name!r})"
    assert non_signal_reason("t_x", values) is None and time_unit("theta") is None


def test_the_channels_of_every_recording_are_checked_for_counters():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {
            "recording": np.repeat([0, 1, 2], 200),
            "a": np.tile(np.arange(200.0), 3),  # restarts in every recording
            "b": rng.normal(size=600),
            "c": np.tile(np.r_[np.arange(100.0), np.arange(100.0)[::-1]], 3),
        }
    )
    assert monotone_channels(frame, ["a", "b", "c"]) == {
        "a": "a time or a counter (never decreases within any of the 3 recordings, 597 changes)"
    }


def _participants(root: Path, fmt, rows_of, n: int = 1500, files: int = 3) -> Path:
    """``1.csv`` ... no header, ``seq,x,y,z,label`` with ``seq`` written by ``fmt``."""
    rng = np.random.default_rng(5)
    root.mkdir(parents=True)
    for user in range(1, files + 1):
        labels = np.repeat([1, 2], n // 2)
        xyz = np.round(1900 + 30 * rng.normal(size=(n, 3)) + 20 * labels[:, None])
        seq = rows_of(user, n)
        lines = [
            f"{fmt(s)},{x:.0f},{y:.0f},{z:.0f},{label}"
            for s, (x, y, z), label in zip(seq, xyz, labels, strict=True)
        ]
        (root / f"{user}.csv").write_bytes(("\n".join(lines) + "\n").encode())
    return root


@pytest.mark.parametrize(
    ("fmt", "rows_of"),
    [
        # R's 5 digits past 99,999 in every file, each file counting on
        (lambda s: f"{s:.5g}", lambda user, n: _rows(99_000 + user, n)),
        # a float counter restarting at 0 in every file
        (lambda s: f"{s:.1f}", lambda user, n: _rows(0, n)),
        # 6 digits, with a gap in each file
        (lambda s: f"{s:.6g}", lambda user, n: _rows(999_000, n, gaps={700: 3 * user})),
    ],
    ids=["r5-counting-on", "float-restarts", "r6-gaps"],
)
def test_init_drafts_the_counter_out_and_the_draft_builds(tmp_path, fmt, rows_of):
    files = _participants(tmp_path / "accel", fmt, rows_of)
    toml = tmp_path / "accel.toml"
    draft = draft_entry([files], "accel", output=toml, sampling_rate_hz=52, min_per_class=2)
    options = draft.entry.reader_options
    assert options["channels"] == ["c2", "c3", "c4"] and options["label_col"] == "c5"
    assert any(line.startswith("  c1: a row counter (") for line in draft.report)
    toml.write_text(draft.toml, encoding="utf-8")
    home = str(tmp_path / "home")
    runner = CliRunner()
    registered = runner.invoke(main, ["register", str(toml), "--data-home", home, "--draft-ok"])
    assert registered.exit_code == 0, registered.output
    fetched = runner.invoke(main, ["fetch", "accel", "--data-home", home])
    assert fetched.exit_code == 0, fetched.output
    frame = mudata.load("accel", data_home=home).frame
    # 750 rows of each class per file, windows of 156: 4 windows per user and class
    assert len(frame) == 3 * 2 * (750 // 156) and sorted(frame["userid"].unique()) == [
        "1",
        "2",
        "3",
    ]
    # the first sensor's x is c2 (about 1900 + 20 * label), not the counter
    assert frame["meanX"].between(1900, 1960).all(), frame["meanX"].describe()


def test_a_counter_the_first_file_is_too_short_to_show_is_found_in_all_files(tmp_path):
    """The first file's 8 rows say nothing; every recording of all the files does.

    The column is then a clock in seconds (steps of 0.02 s, jittered by up to
    4 ms): the time column, at the rate given, never a channel."""
    rng = np.random.default_rng(6)
    root = tmp_path / "short"
    root.mkdir()
    for user, n in ((1, 8), (2, 900), (3, 900)):
        clock = np.round(np.arange(n) * 0.02 + rng.uniform(0, 0.004, n), 4)  # seconds
        xyz = rng.normal(size=(n, 3)).round(3)
        labels = np.repeat([1, 2], n // 2)
        lines = [
            f"{t:.4f},{x},{y},{z},{label}"
            for t, (x, y, z), label in zip(clock, xyz, labels, strict=True)
        ]
        (root / f"p{user}.csv").write_text("\n".join(lines) + "\n")
    draft = draft_entry([root], "short", output=tmp_path / "short.toml", sampling_rate_hz=50)
    assert draft.entry.reader_options["channels"] == ["c2", "c3", "c4"]
    data = tomllib.loads(draft.toml)
    assert data["reader_options"]["columns"] == {"c1": 1, "c5": 5, "c2": 2, "c3": 3, "c4": 4}
    assert data["reader_options"]["time_col"] == "c1"
    assert any(
        line.startswith(
            "time: column 'c1', a clock from the recording's start (step 0.02, read as seconds: 50 Hz"
        )
        for line in draft.report
    ), draft.report
    assert "sampling rate: 50 Hz, as given (the time column agrees)" in draft.report


def _chest_members() -> dict[str, pd.DataFrame]:
    if not CHEST.is_file():
        pytest.skip(f"the chest accelerometer release is not at {CHEST}")
    with tarfile.open(CHEST) as tar:
        return {
            m.name: pd.read_csv(tar.extractfile(m), header=None)
            for m in tar.getmembers()
            if m.name.endswith(".csv")
        }


def test_the_seq_column_of_the_chest_release_is_a_row_counter():
    """Real bytes: ``seq`` counts rows, written by R with 5 significant digits past 99,999."""
    tables = _chest_members()
    assert len(tables) == 8
    for member, table in tables.items():
        why = non_signal_reason("c1", table[0])
        assert why.startswith("a row counter (the row number within the rounding of its 5 "), (
            member,
            why,
        )
        for column in (1, 2, 3):  # x, y, z
            assert non_signal_reason(f"c{column + 1}", table[column]) is None, (member, column)
