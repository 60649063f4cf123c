"""MHEALTH, PAMAP2, HARTH and MotionSense end to end (issue 10, point 9).

Each built-in entry is fetched from a real HTTP server on 127.0.0.1 serving a
small archive built in the official format (tests/official_formats_more.py),
then windowed, filtered, validated and published; the window counts are
checked against the written samples.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mudata
from mudata.building.labelled import row_balance
from mudata.building.windowing import window_count
from mudata.errors import MudataUsageError as UsageError
from mudata.records.classes import user_sort_key
from mudata.registry.lookup import get_entry
from tests.official_formats_more import (
    make_harth_zip,
    make_mhealth_zip,
    make_motionsense_zip,
    make_pamap2_zip,
)


def fetch(name: str, tmp_path: Path, http_server) -> tuple[pd.DataFrame, dict]:
    """Fetch like a user without published hashes: refused, then --allow-unverified."""
    with pytest.raises(UsageError, match="allow_unverified"):
        mudata.fetch(name, data_home=tmp_path, mirror=http_server.url, progress=False)
    frame = mudata.load(
        name, data_home=tmp_path, mirror=http_server.url, allow_unverified=True, progress=False
    ).frame
    record = mudata.provenance(name, data_home=tmp_path)
    balance = row_balance(record["counts"])
    assert balance["raw_in"] == balance["raw_out"], record["counts"]
    assert balance["features_in"] == balance["features_out"], record["counts"]
    (file_record,) = record["files"]
    served = http_server.root / get_entry(name).files[0].name
    assert file_record["sha256"] == hashlib.sha256(served.read_bytes()).hexdigest()
    assert file_record["verified_at_build"] is False
    return frame, record


def expected_rows(
    windows: dict[tuple[str, str], int], min_per_class: int = 5
) -> tuple[list[str], int]:
    users = user_sort_key({u for u, _ in windows})
    classes = sorted({c for _, c in windows})
    kept = [u for u in users if all(windows.get((u, c), 0) >= min_per_class for c in classes)]
    return kept, sum(windows[(u, c)] for u in kept for c in classes)


def test_mhealth(tmp_path, http_server):
    entry = get_entry("mhealth")
    written = make_mhealth_zip(
        http_server.root / "mhealth+dataset.zip", (1, 2, 10), np.random.default_rng(1)
    )
    frame, record = fetch("mhealth", tmp_path, http_server)
    codes = {int(c.code): c.name for c in entry.classes}
    windows = {
        (str(u), name): int(window_count(int((table[:, 23] == code).sum()), 150))
        for u, table in written.items()
        for code, name in codes.items()
    }
    kept, rows = expected_rows(windows)
    assert sorted(frame["userid"].unique(), key=int) == kept and len(kept) >= 2
    assert len(frame) == rows
    assert set(frame["label"]) == set(codes.values())
    # the null class and the 20-repetition activities are counted, not silently lost
    null = sum(int((t[:, 23] == 0).sum()) for t in written.values())
    assert record["counts"]["rows_dropped_by_class_code"]["0"] == null
    # the ankle sensor is columns 6-8: its first mean is the mean of those samples
    first = frame.iloc[0]
    user = int(first["userid"])
    table = written[user]
    rows_of_class = table[table[:, 23] == next(c for c, n in codes.items() if n == first["label"])]
    assert abs(first["meanX"] - rows_of_class[:150, 5].mean()) < 0.5  # smoothed, same scale


# Slow (tens of seconds): .ci/run runs it with -m slow; the default run stays under 5 min.
@pytest.mark.slow
def test_pamap2_reads_protocol_sessions_and_counts_missing_windows(tmp_path, http_server):
    entry = get_entry("pamap2")
    written = make_pamap2_zip(
        http_server.root / "PAMAP2_Dataset.zip",
        (101, 102, 105),
        np.random.default_rng(2),
        n_samples=40000,
        missing=3,
    )
    frame, record = fetch("pamap2", tmp_path, http_server)
    codes = {int(c.code): c.name for c in entry.classes}
    assert set(frame["label"]) == set(codes.values())
    assert frame.shape[1] == 2 + 3 * 16  # hand, chest and ankle
    assert set(frame["userid"]) <= {"101", "102", "105"} and frame["userid"].nunique() >= 2
    counts = record["counts"]
    # three samples of the hand accelerometer are NaN in every file: their windows
    # are dropped with a reason, or the sample lies in a class not kept
    assert counts["windows_dropped"].get("missing value", 0) >= 1
    # the Optional folder (activity 9, watching TV) is not read
    assert "9" not in counts["rows_dropped_by_class_code"]
    assert counts["rows_read"] == sum(len(t) for t in written.values())


def test_harth_keeps_subject_ids_as_text(tmp_path, http_server):
    entry = get_entry("harth")
    written = make_harth_zip(
        http_server.root / "harth.zip", ("S006", "S008", "S029"), np.random.default_rng(3)
    )
    frame, _ = fetch("harth", tmp_path, http_server)
    codes = {int(c.code): c.name for c in entry.classes}
    windows = {
        (u, name): int(window_count(int((data["label"] == code).sum()), 150))
        for u, data in written.items()
        for code, name in codes.items()
    }
    kept, rows = expected_rows(windows)
    assert sorted(frame["userid"].unique()) == kept and kept[0].startswith("S0")
    assert len(frame) == rows


def test_motionsense_takes_user_activity_and_trial_from_paths(tmp_path, http_server):
    written = make_motionsense_zip(
        http_server.root / "A_DeviceMotion_data.zip", (1, 2, 24), np.random.default_rng(4)
    )
    frame, record = fetch("motionsense", tmp_path, http_server)
    names = {c.code: c.name for c in get_entry("motionsense").classes}
    # one recording per file: windows are counted per file, never across two trials
    windows: dict[tuple[str, str], int] = {}
    for (activity, _trial, user), data in written.items():
        key = (str(user), names[activity])
        windows[key] = windows.get(key, 0) + int(window_count(len(data), 150))
    kept, rows = expected_rows(windows)
    assert sorted(frame["userid"].unique(), key=int) == kept == ["1", "2", "24"]
    assert len(frame) == rows
    assert record["counts"]["rows_dropped_by_class_code"] == {}
