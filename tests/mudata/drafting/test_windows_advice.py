"""init's window advice once 2 users pass, and before the rate is given (issue 28, 4 and 9).

* Short recordings give a 3 s window few windows: the filter may keep 2 users
  where a shorter window keeps clearly more (HMP: 2 of 16 at 3 s, 3 at 2.5 s).
  init names the shorter window with both counts; where it would keep no more
  users, or too few more, it says nothing.
* Files without a time column need ``--sampling-rate``: init previews the draft
  at the rate the documentation states (else 50 Hz, said to be assumed) and
  names the rate and the window in one refusal, so that a release needing both
  takes two attempts, not three (UTD-MHAD).

Windows are counted here by hand from the lengths written (the recipe's
``ceil(n / w) - 1`` windows per recording, :func:`mudata.building.windowing.window_count`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mudata.cli import main
from mudata.drafting.rates import PREVIEW_RATE, documented_rate
from mudata.drafting.windows import window_report


def _windows(n: int, w: int) -> int:
    return max(math.ceil(n / w) - 1, 0)


def _frame(lengths: dict[str, int], recordings: int) -> pd.DataFrame:
    """Per user, ``recordings`` recordings of each of two classes of ``lengths[user]`` samples."""
    rows = []
    rec = 0
    for user, n in lengths.items():
        for _ in range(recordings):
            for label in ("a", "b"):
                rows += [(user, label, rec)] * n
                rec += 1
    return pd.DataFrame(rows, columns=["userid", "label", "recording"])


@pytest.mark.parametrize(("rate", "recordings"), [(32.0, 3), (50.0, 5), (20.0, 2)])
def test_a_shorter_window_keeping_clearly_more_users_is_named_with_both_counts(rate, recordings):
    # Two users of long recordings, three of recordings of 1.6 s: at 3 s only the first two pass.
    short, long = round(1.6 * rate), round(10 * rate)
    lengths = {"u1": long, "u2": long, "u3": short, "u4": short, "u5": short}
    frame = _frame(lengths, recordings)
    window = round(3 * rate)
    report = window_report(frame, window, rate, ["a", "b"], min_per_class=recordings)
    text = "\n".join(report.lines)
    kept_now = sum(
        recordings * _windows(n, window) >= recordings for n in lengths.values()
    )  # windows per class per user: recordings x windows per recording
    assert kept_now == 2
    # The longest window in steps of 0.5 s that gives the short users a window per recording.
    expected = max(
        s / 2
        for s in range(1, 6)
        if recordings * _windows(short, max(2, round(s / 2 * rate))) >= recordings
    )
    assert report.proposed_seconds == expected
    assert (
        f"2 of 5 users have {recordings} windows of every class at 3 s; "
        f"--window {expected:g} keeps 5" in text
    )


@pytest.mark.parametrize("extra", [0, 1])
def test_no_shorter_window_is_named_when_it_keeps_too_few_more(extra):
    # 4 users pass at 3 s; a shorter window adds at most one more (less than half again).
    rate = 50.0
    lengths = {f"u{i}": 600 for i in range(4)} | {f"s{i}": 80 for i in range(extra)}
    report = window_report(_frame(lengths, 5), 150, rate, ["a", "b"], min_per_class=5)
    assert report.proposed_seconds is None
    assert not any("--window" in line and "keeps" in line for line in report.lines)


def _release(root: Path, rng: np.random.Generator, users: int, n: int, doc: str | None) -> Path:
    """Whitespace integer files ``a{label}_s{user}_t{trial}.txt`` without time, ``n`` samples."""
    root.mkdir()
    for u in range(1, users + 1):
        for label in (1, 2, 3):
            for trial in (1, 2, 3, 4, 5):
                values = np.round(30 + np.cumsum(rng.normal(0, 1, (n, 3)), axis=0)).astype(int)
                np.savetxt(root / f"a{label}_s{u}_t{trial}.txt", values, fmt="%d")
    if doc is not None:
        (root / "README.txt").write_text(doc)
    return root


def _init(tmp_path: Path, folder: Path, *options: str) -> tuple[int, str]:
    args = ["init", str(folder), "--name", "r", "-o", str(tmp_path / "r.toml"), "--force"]
    result = CliRunner().invoke(main, [*args, *options])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("doc", "rate"),
    [
        ("Accelerometer sampled at 32 Hz, 3 axes.\nThe 32Hz stream is raw.", 32.0),
        ("The sensor runs at 100 Hz.", 100.0),
        (None, PREVIEW_RATE),
    ],
)
def test_without_a_rate_the_refusal_names_the_rate_and_the_window_at_once(tmp_path, doc, rate):
    # Trials of 2.2 s at the previewed rate: a 3 s window gives none, 1.5 s or less one each.
    n = round(2.2 * rate)
    folder = _release(tmp_path / "rel", np.random.default_rng(int(rate)), 3, n, doc)
    code, output = _init(tmp_path, folder)
    assert code != 0
    assert "--sampling-rate HZ" in output
    assert f"previewed at --sampling-rate {rate:g}" in output
    if doc is None:
        assert "no file here states a rate" in output.lower()
    else:
        assert f"README.txt states {rate:g} Hz" in output
    expected = max(s / 2 for s in range(1, 6) if _windows(n, max(2, round(s / 2 * rate))) >= 1)
    match = re.search(r"--window (\S+) is the longest window", output)
    assert match and float(match.group(1)) == expected, output
    # The two options it named build the draft: 3 users, 5 windows of every class each.
    code, output = _init(
        tmp_path, folder, "--sampling-rate", f"{rate:g}", "--window", match.group(1)
    )
    assert code == 0, output
    assert "user filter (at least 5 windows of every class): 3 kept, 0 dropped" in output


def test_the_documented_rate_is_the_one_stated_most():
    assert documented_rate({"a.md": "50 Hz", "b.txt": "sampled at 50 Hz; filtered to 20 Hz"}) == (
        50.0,
        "a.md",
    )
    assert documented_rate({"a.md": "a 5 kHz clock, 2.4 GHz radio"}) is None
    assert documented_rate({}) is None
