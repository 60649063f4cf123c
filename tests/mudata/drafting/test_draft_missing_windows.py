"""Windows lost to missing cells, counted as the build loses them (issue 28, 6).

PAMAP2 drops a packet now and then: a row of NaN in every channel. A window
holding one gets undefined features and the build drops it, but init's
window proposal counted windows from the sequence lengths, so it advised a
window that kept no user, and the user filter's line left out a user with no
window at all. The releases are written here with the share of missing rows,
the users, the classes and the window varied; the windows each keeps are
counted in the test from the rows written.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from mudata.drafting.draft import draft_entry
from mudata.drafting.records import Choices
from mudata.errors import MudataUsageError as UsageError

RATE = 100.0


def _write(root, users, n_classes, rows_per_class, every, rng):
    """PAMAP2's shape: time, class code, six channels; a NaN row where ``every[user]`` says.

    Returns the rows with a missing value, per (user, class), as places in that sequence.
    """
    root.mkdir()
    gaps = {}
    for user in users:
        lines = []
        for code in range(1, n_classes + 1):
            missing = every[user](rng, rows_per_class)
            gaps[(user, str(code))] = np.flatnonzero(missing)
            for i in range(rows_per_class):
                values = np.sin(i * 0.05 * code + np.arange(6)) + 0.1 * rng.standard_normal(6)
                cells = ["NaN"] * 6 if missing[i] else [f"{v:.5f}" for v in values]
                t = ((code - 1) * rows_per_class + i) / RATE
                lines.append(" ".join([f"{t:.2f}", str(code), *cells]))
        (root / f"subject{user}.dat").write_text("\n".join(lines) + "\n")
    return gaps


SPAN = 10  # the recipe's moving average (docs/datasets.md, "The windowing recipe")


def _kept(rows: int, places: np.ndarray, window: int) -> int:
    """Windows [k w, (k+1) w) for k < ceil(rows / w) - 1 whose smoothed samples use no
    missing row: the mean at 0-based place i takes rows i-SPAN+1..i once i >= SPAN-1,
    else rows i..i+SPAN-1 (mudata.building.windowing.moving_average)."""
    n = max(0, -(-rows // window) - 1)
    bad = set(places.tolist())
    kept = 0
    for k in range(n):
        used = set()
        for i in range(k * window, (k + 1) * window):
            lo, hi = (i - SPAN + 1, i) if i >= SPAN - 1 else (i, i + SPAN - 1)
            used.update(range(lo, hi + 1))
        kept += not (used & bad)
    return kept


@pytest.mark.parametrize(
    ("share", "users", "n_classes"), [(0.01, (101, 102, 103), 3), (0.004, (1, 2, 3, 4), 2)]
)
def test_the_preview_counts_the_windows_the_build_keeps(tmp_path, share, users, n_classes):
    rng = np.random.default_rng(int(share * 100) + len(users))
    rows = 2000
    every = {u: (lambda r, n: r.random(n) < share) for u in users}
    # The last user loses a row in every 50: no window of 3 s survives.
    every[users[-1]] = lambda r, n: np.arange(n) % 50 == 7
    gaps = _write(tmp_path / "release", users, n_classes, rows, every, rng)
    draft = draft_entry(
        [tmp_path / "release"], "gaps", output=tmp_path / "d.toml", sampling_rate_hz=RATE
    )
    assert draft.entry.recipe.smoothing == SPAN
    report = "\n".join(draft.report)
    window = 300
    for user in users:
        expected = ", ".join(
            f"{c}={_kept(rows, gaps[(user, str(c))], window)}" for c in range(1, n_classes + 1)
        )
        assert f"subject{user}: {expected}" in report, report
    made = len(users) * n_classes * (-(-rows // window) - 1)
    kept = sum(_kept(rows, g, window) for g in gaps.values())
    assert (
        f"{made - kept} of {made} windows dropped for missing values in columns c3, c4, c5, c6, c7, c8"
        in report
    )
    # The user with no window at all is named by the filter.
    assert f"dropped subject{users[-1]}: no windows of a kept class left" in report
    dropped = re.search(r"(\d+) kept, (\d+) dropped", report)
    assert dropped and int(dropped.group(1)) + int(dropped.group(2)) == len(users)
    # The window proposed keeps as many users in the build as the preview says.
    proposal = re.search(r"--window (\S+) is the longest window .* keeps (\d+) users", report)
    assert proposal, report
    seconds, promised = float(proposal.group(1)), int(proposal.group(2))
    w = round(seconds * RATE)
    counted = [
        u
        for u in users
        if all(_kept(rows, gaps[(u, str(c))], w) >= 5 for c in range(1, n_classes + 1))
    ]
    assert len(counted) == promised
    again = draft_entry(
        [tmp_path / "release"],
        "gaps",
        output=tmp_path / "e.toml",
        sampling_rate_hz=RATE,
        choices=Choices(window=seconds),
    )
    assert f"{promised} kept" in "\n".join(again.report)


@pytest.mark.parametrize(("period", "n_users"), [(97, 3), (83, 2)])
def test_no_window_left_names_the_missing_values(tmp_path, period, n_users):
    """Every 3 s window holds a missing row: init says so (not "no recording is that
    long") and names the shorter window the build keeps users with."""
    rng = np.random.default_rng(n_users)
    users = tuple(range(1, n_users + 1))
    every = {u: (lambda r, n: np.arange(n) % period == int(r.integers(0, 40))) for u in users}
    gaps = _write(tmp_path / "release", users, 2, 3000, every, rng)
    assert all(_kept(3000, g, 300) == 0 for g in gaps.values())
    with pytest.raises(UsageError) as caught:
        draft_entry(
            [tmp_path / "release"], "gaps", output=tmp_path / "d.toml", sampling_rate_hz=RATE
        )
    message = str(caught.value)
    made = n_users * 2 * (-(-3000 // 300) - 1)
    assert f"({made} of {made} windows dropped for missing values in columns c3," in message
    seconds = float(re.search(r"--window (\S+) is the longest", message).group(1))
    w = round(seconds * RATE)
    assert all(_kept(3000, g, w) >= 5 for g in gaps.values())
    assert not all(_kept(3000, g, w + 50) >= 5 for g in gaps.values())
