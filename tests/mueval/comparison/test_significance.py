"""Significance tests between strategies: hand-computed statistics."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mueval.comparison.significance import (
    CORRECTED_TEST,
    STUDY_TEST,
    WILCOXON_TEST,
    compare_strategies,
    corrected_resampled_t_test,
    resampling_ratio,
    star_label,
    study_t_test,
    wilcoxon_over_users,
)


@pytest.mark.parametrize(
    "p, stars",
    [
        (0.2, "ns"),
        (0.0500001, "ns"),
        (0.05, "*"),
        (0.02, "*"),
        (0.01, "**"),
        (0.001, "***"),
        (0.0009, "***"),
        (0.0001, "****"),
        (1e-9, "****"),
        (float("nan"), "n/a"),
    ],
)
def test_star_levels_are_the_studys(p, stars):
    assert star_label(p) == stars


def test_study_test_is_welch_by_hand():
    a = [0.95, 0.96, 0.94, 0.97]
    b = [0.90, 0.93, 0.91, 0.89, 0.92]
    # Welch: t = (ma - mb) / sqrt(va/na + vb/nb), Welch-Satterthwaite df.
    ma, mb = np.mean(a), np.mean(b)
    va, vb = np.var(a, ddof=1), np.var(b, ddof=1)
    se2 = va / 4 + vb / 5
    t = (ma - mb) / math.sqrt(se2)
    df = se2**2 / ((va / 4) ** 2 / 3 + (vb / 5) ** 2 / 4)
    res = study_t_test(a, b)
    assert res.test == STUDY_TEST
    assert res.statistic == pytest.approx(t)
    assert res.df == pytest.approx(df)
    assert res.p_value == pytest.approx(2 * stats.t.sf(abs(t), df))
    # And it agrees with scipy's Welch test.
    assert res.p_value == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)


def test_corrected_test_reduces_to_the_paired_t_test_without_overlap():
    a = np.array([0.95, 0.96, 0.94, 0.97, 0.95])
    b = np.array([0.93, 0.95, 0.90, 0.96, 0.92])
    res = corrected_resampled_t_test(a, b, 0.0)
    ref = stats.ttest_rel(a, b)
    assert res.statistic == pytest.approx(ref.statistic)
    assert res.p_value == pytest.approx(ref.pvalue)


def test_corrected_test_by_hand():
    a = np.array([0.95, 0.96, 0.94, 0.97, 0.95])
    b = np.array([0.93, 0.95, 0.90, 0.96, 0.92])
    # d = (0.02, 0.01, 0.04, 0.01, 0.03); mean 0.022; sum of squares about the mean
    # 0.0002^... computed term by term: (-0.002)^2 + (-0.012)^2 + 0.018^2 + (-0.012)^2 + 0.008^2
    ss = 0.002**2 + 0.012**2 + 0.018**2 + 0.012**2 + 0.008**2
    var = ss / 4  # = 0.00017
    assert var == pytest.approx(0.00017)
    ratio = 0.2 / 0.6  # MM: n_test / n_train = 20% / 60%
    t = 0.022 / math.sqrt((1 / 5 + ratio) * var)
    res = corrected_resampled_t_test(a, b, ratio)
    assert res.test == CORRECTED_TEST
    assert res.statistic == pytest.approx(t)
    assert res.df == 4
    assert res.p_value == pytest.approx(2 * stats.t.sf(t, 4))
    # The correction can only make the test more cautious.
    assert res.p_value > corrected_resampled_t_test(a, b, 0.0).p_value


def test_corrected_test_constant_differences_are_undefined_not_infinite():
    res = corrected_resampled_t_test([0.9, 0.8], [0.8, 0.7], 0.3)
    assert math.isnan(res.p_value) and res.stars == "n/a"


def test_wilcoxon_over_users_pairs_by_user():
    a = {1: 0.95, 2: 0.91, 3: 0.97, 4: 0.88, 5: 0.99, 9: 0.5}
    b = {1: 0.90, 2: 0.93, 3: 0.92, 4: 0.80, 5: 0.96}  # user 9 absent: dropped
    res = wilcoxon_over_users(a, b)
    assert res.test == WILCOXON_TEST
    assert res.n == 5
    # Differences 0.05, -0.02, 0.05, 0.08, 0.03: ranks of |d| are 3.5, 1, 3.5, 5, 2;
    # the negative-rank sum is 1, the statistic min(W+, W-) = 1.
    assert res.statistic == pytest.approx(1.0)
    ref = stats.wilcoxon([0.95, 0.91, 0.97, 0.88, 0.99], [0.90, 0.93, 0.92, 0.80, 0.96])
    assert res.p_value == pytest.approx(ref.pvalue)


def test_wilcoxon_needs_two_users():
    assert wilcoxon_over_users({1: 0.9}, {1: 0.8}).stars == "n/a"


def test_train_ratio_from_the_protocol_fractions():
    mm = pd.DataFrame({"n_test": [200, 200], "n_cal": [200, 200]})
    ratio, how = resampling_ratio("mm", mm, 1000)
    assert ratio == pytest.approx(200 / 600)
    assert "n_rows - n_test - n_cal" in how
    udm = pd.DataFrame({"n_test": [10, 20], "n_cal": [10, 20]})
    assert resampling_ratio("udm", udm, 1000)[0] == pytest.approx(30 / (1.5 * 60))
    given = pd.DataFrame({"n_test": [10], "n_cal": [10], "n_train": [40]})
    assert resampling_ratio("uam", given, 1000) == (0.25, "n_train from splits.parquet")


def test_compare_strategies_table():
    rows = []
    for it in (1, 2, 3, 4):
        rows.append(
            {
                "strategy": "mm",
                "classifier": "nb",
                "iteration": it,
                "user": pd.NA,
                "n_test": 20,
                "n_cal": 20,
                "coverage": 0.95 + 0.01 * (it % 2),
            }
        )
        for u in (1, 2, 3):
            rows.append(
                {
                    "strategy": "ucm",
                    "classifier": "nb",
                    "iteration": it,
                    "user": u,
                    "n_test": 5,
                    "n_cal": 5,
                    "coverage": 0.9 + 0.01 * u + 0.002 * it,
                }
            )
    splits = pd.DataFrame(rows)
    splits["user"] = splits["user"].astype("Int64")
    table = compare_strategies(splits, None, 100)
    assert list(table.test) == [STUDY_TEST, CORRECTED_TEST, WILCOXON_TEST]
    # Means over iterations of the per-iteration means.
    assert table.mean_a.iloc[0] == pytest.approx(0.955)
    assert table.mean_b.iloc[0] == pytest.approx(0.92 + 0.002 * 2.5)
    # MM has no users in its splits and no predictions were given: Wilcoxon is n/a.
    assert table.stars.iloc[2] == "n/a"
    # The corrected test used the larger of the two ratios: UCM 5 / (0.6 * 90).
    assert "larger of the two" in table.note.iloc[1]
    d = np.array([0.96, 0.95, 0.96, 0.95]) - (0.92 + 0.002 * np.arange(1, 5))
    ratio = max(20 / 60, 5 / (0.6 * 90))
    t = d.mean() / math.sqrt((1 / 4 + ratio) * d.var(ddof=1))
    assert table.statistic.iloc[1] == pytest.approx(t)


def _two_strategy_splits(seeds_a, seeds_b, cov_a, cov_b):
    rows = [
        {
            "strategy": "mm",
            "classifier": "nb",
            "iteration": i + 1,
            "seed": s,
            "user": pd.NA,
            "n_test": 20,
            "n_cal": 20,
            "n_train": 60,
            "coverage": c,
        }
        for i, (s, c) in enumerate(zip(seeds_a, cov_a))
    ]
    rows += [
        {
            "strategy": "ucm",
            "classifier": "nb",
            "iteration": i + 1,
            "seed": s,
            "user": 1,
            "n_test": 20,
            "n_cal": 20,
            "n_train": 60,
            "coverage": c,
        }
        for i, (s, c) in enumerate(zip(seeds_b, cov_b))
    ]
    splits = pd.DataFrame(rows)
    splits["user"] = splits["user"].astype("Int64")
    return splits


def test_corrected_test_pairs_iterations_by_seed_across_runs():
    # Two runs merged by `mueval compare`, the second with --seed-base 101: its
    # iteration 1 used seed 102, the first run's iteration 2. Only seeds 102..104
    # are shared, and they must be paired with each other.
    cov_a = [0.90, 0.95, 0.93, 0.96]  # seeds 101..104
    cov_b = [0.94, 0.90, 0.95, 0.91]  # seeds 102..105
    splits = _two_strategy_splits([101, 102, 103, 104], [102, 103, 104, 105], cov_a, cov_b)
    row = compare_strategies(splits, None, 100).query(f"test == {CORRECTED_TEST!r}").iloc[0]
    d = np.array([0.95 - 0.94, 0.93 - 0.90, 0.96 - 0.95])  # seeds 102, 103, 104
    t = d.mean() / math.sqrt((1 / 3 + 20 / 60) * d.var(ddof=1))
    assert row.n == 3
    assert row.statistic == pytest.approx(t)


def test_corrected_test_is_undefined_when_no_seed_is_shared():
    splits = _two_strategy_splits(
        [101, 102, 103], [201, 202, 203], [0.90, 0.95, 0.93], [0.94, 0.90, 0.95]
    )
    row = compare_strategies(splits, None, 100).query(f"test == {CORRECTED_TEST!r}").iloc[0]
    assert row.n == 0 and row.stars == "n/a"
