"""Run warnings: each rule triggered and not triggered on hand-made tables."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mueval.conformal.thresholds import min_calibration_size
from mueval.errors import DataError, UsageError
from mueval.guarantees.intervals import coverage_summary, per_user_coverage
from mueval.guarantees.run_warnings import (
    RunWarning,
    calibration_warnings,
    collect_warnings,
    coverage_warnings,
    degenerate_set_warnings,
    empty_set_warnings,
)
from mueval.metrics.set_sizes import set_statistics


def _summary(**overrides):
    """One coverage-summary row: 36 users, none below, pooled 0.91 [0.905, 0.915]."""
    row = {
        "strategy": "UCM",
        "classifier": "RF",
        "n_users": 36,
        "n_below": 0,
        "share_below": 0.0,
        "worst_user": 17,
        "worst_n": 300,
        "worst_coverage": 0.86,
        "worst_low": 0.816,
        "worst_high": 0.896,
        "mean_coverage": 0.91,
        "mean_low": 0.9,
        "mean_high": 0.92,
        "pooled_n": 10800,
        "pooled_covered": 9828,
        "pooled_coverage": 0.91,
        "pooled_low": 0.905,
        "pooled_high": 0.915,
    }
    row.update(overrides)
    return pd.DataFrame([row])


# ---------------------------------------------------------------------------
# Coverage rules
# ---------------------------------------------------------------------------


def test_no_coverage_warning_when_intervals_reach_target():
    # A point estimate below target (0.895) is noise when the interval reaches 0.9.
    summary = _summary(pooled_coverage=0.895, pooled_low=0.889, pooled_high=0.9001)
    assert coverage_warnings(summary, alpha=0.1) == []


def test_pooled_below_target_without_a_test_is_the_interval_rule_and_a_warning():
    # Without the exact pooled test (no table, or a strategy without one) the
    # interval rule is all there is: it treats re-tested rows as independent, so
    # it is at no stated level, says so, and is no error.
    summary = _summary(pooled_coverage=0.713, pooled_low=0.70, pooled_high=0.8999, pooled_n=5000)
    (warning,) = coverage_warnings(summary, alpha=0.1)
    assert isinstance(warning, RunWarning)
    assert (warning.strategy, warning.classifier) == ("UCM", "RF")
    assert (warning.kind, warning.severity) == ("pooled-below-target", "warning")
    assert "0.713 [0.700, 0.900]" in warning.message
    assert "5000 test rows" in warning.message and "0.900" in warning.message
    assert warning.message.startswith("UCM / RF:")
    assert "no test at a stated level" in warning.message
    assert "beyond sampling error" not in warning.message


def _pooled(p_value: float, p_adjusted: float, below: bool) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "strategy": ["UCM"],
            "classifier": ["RF"],
            "p_value": [p_value],
            "p_adjusted": [p_adjusted],
            "below": [below],
            "combine": ["bonferroni"],
        }
    )


def test_pooled_below_target_follows_the_exact_test_not_the_interval():
    summary = _summary(pooled_coverage=0.713, pooled_low=0.70, pooled_high=0.8999, pooled_n=5000)
    # The interval lies below 0.9, but the exact test does not reject: no warning.
    assert coverage_warnings(summary, alpha=0.1, pooled=_pooled(0.2, 0.4, False)) == []
    (warning,) = coverage_warnings(
        summary, alpha=0.1, user_level=0.05, user_family="run", pooled=_pooled(1e-4, 2e-3, True)
    )
    assert (warning.kind, warning.severity) == ("pooled-below-target", "error")
    assert "at level 0.05" in warning.message and "p = 0.0001" in warning.message
    assert "adjusted 0.002" in warning.message
    assert "every strategy and classifier of the run" in warning.message
    assert "beyond sampling error" not in warning.message
    (per_pair,) = coverage_warnings(
        summary, alpha=0.1, user_family="pair", pooled=_pooled(1e-4, 1e-4, True)
    )
    assert "one test for this strategy and classifier" in per_pair.message
    # A strategy without an exact test (p nan) falls back to the interval rule.
    (fallback,) = coverage_warnings(summary, alpha=0.1, pooled=_pooled(np.nan, np.nan, False))
    assert fallback.severity == "warning"


def test_users_below_target_warning_then_error():
    few = _summary(
        n_below=3,
        share_below=3 / 36,
        worst_user=17,
        worst_coverage=0.61,
        worst_low=0.552,
        worst_high=0.666,
    )
    (warning,) = coverage_warnings(few, alpha=0.1)
    assert (warning.kind, warning.severity) == ("users-below-target", "warning")
    for needle in ("3 of 36 users", "8.3 %", "user 17", "0.610 [0.552, 0.666]", "300 test rows"):
        assert needle in warning.message
    # Half of the users or more: an error.
    half = _summary(n_below=18, share_below=0.5)
    assert coverage_warnings(half, alpha=0.1)[0].severity == "error"
    under_half = _summary(n_below=17, share_below=17 / 36)
    assert coverage_warnings(under_half, alpha=0.1)[0].severity == "warning"


def test_coverage_target_follows_alpha():
    # pooled_high 0.915: below 0.95 (alpha 0.05), not below 0.9 (alpha 0.1).
    assert coverage_warnings(_summary(), alpha=0.1) == []
    assert [w.kind for w in coverage_warnings(_summary(), alpha=0.05)] == ["pooled-below-target"]


def test_coverage_warnings_with_undefined_worst_interval():
    summary = _summary(n_below=1, worst_low=math.nan, worst_high=math.nan)
    (warning,) = coverage_warnings(summary, alpha=0.1)
    assert "interval undefined" in warning.message


def test_coverage_warnings_errors():
    with pytest.raises(DataError, match="'pooled_high'"):
        coverage_warnings(_summary().drop(columns="pooled_high"), alpha=0.1)
    with pytest.raises(UsageError, match="alpha"):
        coverage_warnings(_summary(), alpha=-0.1)


# ---------------------------------------------------------------------------
# Degenerate sets
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mean_size", "share_full", "fires"),
    [
        (7.0, 1.0, True),  # every set holds all 7 classes
        (6.3, 0.0, True),  # exactly 90 % of 7
        (6.29, 0.0, False),  # just under 90 %
        (4.0, 0.5, False),  # half the sets full is not "most"
        (4.0, 0.51, True),  # more than half
        (1.4, 0.02, False),  # ordinary sets
    ],
)
def test_degenerate_sets_thresholds(mean_size, share_full, fires):
    stats_ = pd.DataFrame(
        {
            "strategy": ["UCM"],
            "classifier": ["KNN"],
            "mean_size": [mean_size],
            "share_full": [share_full],
        }
    )
    found = degenerate_set_warnings(stats_, n_classes=7)
    assert bool(found) is fires
    if fires:
        assert found[0].kind == "degenerate-sets" and found[0].severity == "warning"
        assert f"mean size {mean_size:.2f} of 7 classes" in found[0].message
        assert "UCM / KNN" in found[0].message


def test_set_statistics_hand_computed():
    rows = pd.DataFrame(
        {
            "strategy": ["A"] * 5 + ["B"] * 3,
            "classifier": "RF",
            "set_size": [0, 1, 3, 3, 3, 0, 0, 2],
        }
    )
    table = set_statistics(rows, n_classes=3)
    a, b = table.iloc[0], table.iloc[1]
    assert (a["n"], a["mean_size"], a["n_full"], a["share_full"]) == (5, 2.0, 3, 0.6)
    assert (a["n_empty"], a["share_empty"]) == (1, 0.2)
    assert (b["n"], b["n_full"], b["n_empty"]) == (3, 0, 2)
    assert b["mean_size"] == pytest.approx(2 / 3)
    with pytest.raises(DataError, match="'set_size'"):
        set_statistics(rows.rename(columns={"set_size": "size"}), n_classes=3)
    with pytest.raises(DataError, match="non-negative integers"):
        set_statistics(rows.assign(set_size=-1), n_classes=3)


# ---------------------------------------------------------------------------
# Empty sets
# ---------------------------------------------------------------------------


def _critical_count(n: int, p: Fraction, level: Fraction) -> int:
    """Smallest k with P(X >= k) < level for X ~ Binomial(n, p), in exact arithmetic."""
    pmf = [math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n + 1)]
    tail = Fraction(0)
    for k in range(n, -1, -1):  # tail = P(X >= k), growing as k falls
        tail += pmf[k]
        if tail >= level:
            return k + 1
    return 0


@pytest.mark.parametrize(("n", "alpha"), [(200, "1/10"), (60, "1/20"), (1000, "1/10")])
def test_empty_sets_fire_exactly_at_the_critical_count(n, alpha):
    p = Fraction(alpha)
    critical = _critical_count(n, p, Fraction(1, 20))
    alpha_f = float(p)

    def fires(k):
        stats_ = pd.DataFrame({"strategy": ["S"], "classifier": ["C"], "n": [n], "n_empty": [k]})
        return empty_set_warnings(stats_, alpha=alpha_f)

    assert fires(critical)
    assert not fires(critical - 1)
    (warning,) = fires(critical)
    assert (warning.kind, warning.severity) == ("excess-empty-sets", "warning")
    assert f"{critical} of {n} sets are empty" in warning.message
    assert f"alpha = {alpha_f:g}" in warning.message


def test_empty_sets_from_share_and_none_when_rare():
    stats_ = pd.DataFrame(
        {
            "strategy": ["S", "T"],
            "classifier": "C",
            "n": [200, 200],
            "share_empty": [0.16, 0.05],
        }
    )
    found = empty_set_warnings(stats_, alpha=0.1)
    assert [w.strategy for w in found] == ["S"]
    assert "32 of 200" in found[0].message
    # A stricter level lets 32 of 200 pass only if its p-value is above it:
    # P(X >= 32 | n=200, p=0.1) is about 0.005.
    assert empty_set_warnings(stats_, alpha=0.1, level=0.001) == []


def test_empty_sets_errors():
    with pytest.raises(DataError, match="'n'"):
        empty_set_warnings(
            pd.DataFrame({"strategy": ["S"], "classifier": ["C"], "n_empty": [1]}), alpha=0.1
        )
    with pytest.raises(UsageError, match="level"):
        empty_set_warnings(
            pd.DataFrame({"strategy": ["S"], "classifier": ["C"], "n": [5], "n_empty": [1]}),
            alpha=0.1,
            level=2,
        )


# ---------------------------------------------------------------------------
# Calibration sizes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alpha", "expected"),
    [(0.1, 10), (0.05, 20), (0.2, 5), (0.3, 4), (0.5, 2), (0.01, 100), (0.99, 100), (0.9, 10)],
)
def test_min_calibration_size_hand_computed(alpha, expected):
    assert min_calibration_size(alpha) == expected


@given(alpha=st.floats(min_value=1e-3, max_value=1 - 1e-3))
def test_min_calibration_size_is_the_smallest_integer_above_the_bound(alpha):
    bound = max(1 / alpha, 1 / (1 - alpha))
    size = min_calibration_size(alpha)
    assert size >= bound - 1e-6
    assert size - 1 < bound


def test_calibration_warnings_fire_below_minimum_only():
    cal = pd.DataFrame(
        {
            "strategy": "UCM",
            "classifier": "RF",
            "user": [1, 2, 3, 4],
            "iteration": [0, 0, 1, 1],
            "n_cal": [10, 9, 40, np.nan],
        }
    )
    (warning,) = calibration_warnings(cal, alpha=0.1)
    assert (warning.kind, warning.severity) == ("calibration-too-small", "error")
    assert "1 of 3 calibration sets" in warning.message  # the missing n_cal is ignored
    assert "fewer than 10 rows" in warning.message
    assert "user 2 iteration 0 (9 rows)" in warning.message
    assert calibration_warnings(cal.assign(n_cal=[10, 10, 40, np.nan]), alpha=0.1) == []
    # At alpha = 0.05 the minimum is 20, so 10 and 9 are both too small.
    (strict,) = calibration_warnings(cal, alpha=0.05)
    assert "2 of 3 calibration sets" in strict.message and "fewer than 20" in strict.message


def test_calibration_warnings_list_the_smallest_five():
    cal = pd.DataFrame(
        {"strategy": "S", "classifier": "C", "user": range(8), "n_cal": [9, 3, 8, 7, 6, 5, 4, 50]}
    )
    (warning,) = calibration_warnings(cal, alpha=0.1)
    assert "7 of 8" in warning.message
    assert (
        "user 1 (3 rows), user 6 (4 rows), user 5 (5 rows), user 4 (6 rows), user 3 (7 rows)"
        in warning.message
    )
    assert "and 2 more" in warning.message


def test_calibration_warnings_errors():
    with pytest.raises(DataError, match="'n_cal'"):
        calibration_warnings(pd.DataFrame({"strategy": ["S"], "classifier": ["C"]}), alpha=0.1)
    with pytest.raises(DataError, match="non-negative integers"):
        calibration_warnings(
            pd.DataFrame({"strategy": ["S"], "classifier": ["C"], "n_cal": [2.5]}), alpha=0.1
        )


# ---------------------------------------------------------------------------
# All rules together, from test rows
# ---------------------------------------------------------------------------


def test_collect_warnings_end_to_end():
    # UIM/RF: 3 users each covered 80 of 100 -> pooled and every user below 0.9.
    # UCM/KNN: every set holds all 4 classes, coverage 1 -> degenerate only.
    # UCM/RF: 6 empty sets (misses) per user, 89 of 100 covered, 18 empty of
    # 300 -> no warning (0.89 is within noise of 0.9; 18/300 < 0.1).
    frames = []
    for strategy, classifier, k, size, n_empty in [
        ("UIM", "RF", 80, 1, 0),
        ("UCM", "KNN", 100, 4, 0),
        ("UCM", "RF", 95, 1, 20),
    ]:
        for user in (1, 2, 3):
            covered = np.arange(100) < k
            set_size = np.full(100, size)
            set_size[: n_empty // 3] = 0
            covered[: n_empty // 3] = False
            frames.append(
                pd.DataFrame(
                    {
                        "strategy": strategy,
                        "classifier": classifier,
                        "iteration": 0,
                        "user": user,
                        "covered": covered,
                        "set_size": set_size,
                    }
                )
            )
    rows = pd.concat(frames, ignore_index=True)
    summary = coverage_summary(per_user_coverage(rows, alpha=0.1), alpha=0.1)
    set_stats = set_statistics(rows, n_classes=4)
    cal = pd.DataFrame(
        {"strategy": ["UCM", "UIM"], "classifier": "RF", "user": [1, 1], "n_cal": [50, 6]}
    )
    found = collect_warnings(summary, set_stats, alpha=0.1, n_classes=4, calibration=cal)
    assert [(w.strategy, w.classifier, w.kind) for w in found] == [
        ("UCM", "KNN", "degenerate-sets"),
        ("UIM", "RF", "pooled-below-target"),
        ("UIM", "RF", "users-below-target"),
        ("UIM", "RF", "calibration-too-small"),
    ]
    assert "3 of 3 users" in found[2].message
