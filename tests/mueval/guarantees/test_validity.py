"""Per-user validity: one-sided KS on true-label p-values, with Benjamini-Hochberg."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from mueval.errors import DataError, UsageError
from mueval.guarantees.validity import benjamini_hochberg, rank_ks_test, user_validity

# ---------------------------------------------------------------------------
# Benjamini-Hochberg
# ---------------------------------------------------------------------------


def test_bh_hand_computed():
    # Sorted 0.01, 0.03, 0.04, 0.5 (m = 4): scaled 0.04, 0.06, 0.0533, 0.5;
    # step-up minimum from the top: 0.04, 0.0533, 0.0533, 0.5.
    adjusted = benjamini_hochberg([0.01, 0.04, 0.03, 0.5])
    np.testing.assert_allclose(adjusted, [0.04, 0.16 / 3, 0.16 / 3, 0.5])
    np.testing.assert_allclose(benjamini_hochberg([0.9, 0.8]), [0.9, 0.9])
    assert benjamini_hochberg([]).size == 0
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        benjamini_hochberg([0.1, 1.2])


@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=60))
def test_bh_matches_scipy(pvalues):
    ours = benjamini_hochberg(pvalues)
    np.testing.assert_allclose(
        ours, stats.false_discovery_control(pvalues, method="bh"), atol=1e-12
    )
    assert (ours >= np.asarray(pvalues) - 1e-15).all() and (ours <= 1).all()


# ---------------------------------------------------------------------------
# KS statistic and p-value, checked by hand and by the exact one-sided formula
# ---------------------------------------------------------------------------


def _one_sided_ks_pvalue(d: float, n: int) -> float:
    """P(D+_n >= d) under uniformity (Birnbaum and Tingey, 1951)."""
    if d <= 0:
        return 1.0
    total = sum(
        math.comb(n, j) * (1 - d - j / n) ** (n - j) * (d + j / n) ** (j - 1)
        for j in range(math.floor(n * (1 - d)) + 1)
    )
    return d * total


def _rows(p_by_user: dict[int, list[float]], iteration: int = 0, strategy: str = "UCM"):
    users = np.repeat(list(p_by_user), [len(v) for v in p_by_user.values()])
    return pd.DataFrame(
        {
            "strategy": strategy,
            "classifier": "RF",
            "iteration": iteration,
            "user": users,
            "p_true": np.concatenate([np.asarray(v, dtype=float) for v in p_by_user.values()]),
        }
    )


def test_statistic_and_pvalue_hand_computed():
    # D+ = max(i/n - p_(i)) = max(1/3 - 0.1, 2/3 - 0.2, 1 - 0.3) = 0.7.
    table = user_validity(_rows({5: [0.3, 0.1, 0.2]}))
    row = table.iloc[0]
    assert (row["user"], row["n"]) == (5, 3)
    assert row["statistic"] == pytest.approx(0.7)
    assert row["pvalue"] == pytest.approx(_one_sided_ks_pvalue(0.7, 3))
    # p-values all above their uniform quantiles: D+ = max(i/4 - p_(i)) < 0 -> 0,
    # the p-value is 1.
    high = user_validity(_rows({1: [0.5, 0.6, 0.8, 1.0]})).iloc[0]
    assert high["statistic"] == pytest.approx(0.0, abs=1e-12)
    assert high["pvalue"] == pytest.approx(1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pvalue_matches_exact_formula(seed):
    p = np.random.default_rng(seed).uniform(size=25) ** 1.3
    row = user_validity(_rows({1: list(p)})).iloc[0]
    d = max(np.arange(1, 26) / 25 - np.sort(p))
    assert row["statistic"] == pytest.approx(d)
    assert row["pvalue"] == pytest.approx(_one_sided_ks_pvalue(d, 25), rel=1e-6)


# ---------------------------------------------------------------------------
# Simulated split conformal: exchangeable users pass, shifted users are flagged
# ---------------------------------------------------------------------------


def _conformal_p(cal_scores: np.ndarray, test_scores: np.ndarray) -> np.ndarray:
    """Split-conformal p-value (1 + #{cal >= s}) / (n_cal + 1), discrete in 1/(n_cal+1)."""
    cal = np.sort(cal_scores)
    at_least = cal.size - np.searchsorted(cal, test_scores, side="left")
    return (1 + at_least) / (cal.size + 1)


def _simulated_run(rng, n_users, shifts, n_cal=200, n_test=100, n_iter=1):
    parts = []
    for it in range(n_iter):
        for user in range(n_users):
            cal = rng.normal(size=n_cal)
            test = rng.normal(loc=shifts.get(user, 0.0), size=n_test)
            parts.append(
                pd.DataFrame(
                    {
                        "strategy": "UCM",
                        "classifier": "RF",
                        "iteration": it,
                        "user": user,
                        "p_true": _conformal_p(cal, test),
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def test_exchangeable_users_are_not_flagged_and_shifted_ones_are():
    # Users 0 and 1: test scores larger than calibration scores (nonconformity
    # grows: the model fits them worse than calibration suggests). User 2:
    # smaller scores, over-coverage, which a one-sided test must not flag.
    rng = np.random.default_rng(2024)
    rows = _simulated_run(rng, 30, {0: 0.8, 1: 0.5, 2: -0.8})
    table = user_validity(rows)
    assert len(table) == 30 and (table["n"] == 100).all()
    assert table.loc[table["user"] == 0, "flagged"].item()
    assert table.loc[table["user"] == 1, "flagged"].item()
    assert not table.loc[table["user"] == 2, "flagged"].item()
    assert table.loc[table["user"] == 2, "pvalue"].item() > 0.5
    assert table.loc[table["user"] >= 3, "flagged"].sum() == 0
    # BH never lowers a p-value.
    assert (table["pvalue_bh"] >= table["pvalue"] - 1e-15).all()


def test_false_flag_rate_under_exchangeability_is_small():
    # 20 runs of 20 exchangeable users with many calibration rows per test
    # row (500 vs 60), where the one-sample test is nearly valid: raw
    # rejections near 5 % (about 6.5 % in a long simulation), and BH, which
    # under a global null controls the chance of any flag in a run at 5 %,
    # leaves few runs with a flag (Binomial(20, 0.07) exceeds 4 with
    # probability under 1 %).
    rng = np.random.default_rng(7)
    raw, runs_with_flag, total = 0, 0, 0
    for _ in range(20):
        table = user_validity(_simulated_run(rng, 20, {}, n_cal=500, n_test=60))
        raw += int((table["pvalue"] <= 0.05).sum())
        runs_with_flag += int(table["flagged"].any())
        total += len(table)
    assert raw / total <= 0.10
    assert runs_with_flag <= 4


def test_iterations_pooled_or_apart():
    rng = np.random.default_rng(3)
    rows = _simulated_run(rng, 4, {1: 1.0}, n_iter=3, n_test=40)
    pooled = user_validity(rows)
    assert (pooled["n"] == 120).all() and "iteration" not in pooled.columns
    apart = user_validity(rows, pool_iterations=False)
    assert len(apart) == 12 and (apart["n"] == 40).all()
    assert apart.loc[apart["user"] == 1, "flagged"].all()
    # The adjustment runs over the 12 tests of the strategy and classifier.
    np.testing.assert_allclose(apart["pvalue_bh"], benjamini_hochberg(apart["pvalue"]))


def test_adjustment_is_within_strategy_and_classifier():
    rows = pd.concat(
        [
            _rows({1: [0.02, 0.04, 0.3], 2: [0.5, 0.7, 0.9]}, strategy="A"),
            _rows({1: [0.5, 0.6, 0.7]}, strategy="B"),
        ],
        ignore_index=True,
    )
    table = user_validity(rows)
    a = table[table["strategy"] == "A"]
    np.testing.assert_allclose(a["pvalue_bh"], benjamini_hochberg(a["pvalue"]))
    b = table[table["strategy"] == "B"]
    assert b["pvalue_bh"].item() == pytest.approx(b["pvalue"].item())


def test_errors_name_the_problem():
    rows = _rows({1: [0.2, 0.4]})
    with pytest.raises(DataError, match="'p_true'"):
        user_validity(rows.drop(columns="p_true"))
    with pytest.raises(DataError, match="outside"):
        user_validity(rows.assign(p_true=[0.2, 1.5]))
    with pytest.raises(DataError, match="missing value"):
        user_validity(rows.assign(p_true=[0.2, np.nan]))
    with pytest.raises(UsageError, match="level"):
        user_validity(rows, level=0)
    with pytest.raises(DataError, match="'target_user'"):
        user_validity(rows, user_col="target_user")


# ---------------------------------------------------------------------------
# method="rank": the two-sample test recovered from p-values and n_cal
# ---------------------------------------------------------------------------


def _rank_rows(rng, n_users, n_cal, n_test, shifts=None, n_iter=1):
    """Rows with p_true and n_cal, plus the raw scores of each (user, iteration)."""
    shifts = shifts or {}
    parts, raw = [], {}
    for it in range(n_iter):
        for user in range(n_users):
            cal = rng.normal(size=n_cal)
            test = rng.normal(loc=shifts.get(user, 0.0), size=n_test)
            raw[user, it] = (cal, test)
            parts.append(
                pd.DataFrame(
                    {
                        "strategy": "UCM",
                        "classifier": "RF",
                        "iteration": it,
                        "user": user,
                        "p_true": _conformal_p(cal, test),
                        "n_cal": n_cal,
                    }
                )
            )
    return pd.concat(parts, ignore_index=True), raw


def test_rank_method_equals_two_sample_test_on_the_scores():
    # The statistic depends only on how test scores interleave with the
    # calibration scores, which the p-values and n_cal determine.
    rows, raw = _rank_rows(np.random.default_rng(5), 4, 30, 25, {1: 0.7})
    table = user_validity(rows, method="rank", pool_iterations=False)
    for row in table.itertuples():
        cal, test = raw[row.user, row.iteration]
        ref = stats.ks_2samp(cal, test, alternative="greater")
        assert row.statistic == pytest.approx(ref.statistic)
        assert row.pvalue == pytest.approx(ref.pvalue)


def test_rank_method_keeps_its_level_where_uniform_does_not():
    # 300 exchangeable users with small calibration sets (50) and many test
    # rows (200): the one-sample test against uniform rejects far more than
    # 5 % (about 45 %), the two-sample test about 5 % or less.
    rows, _ = _rank_rows(np.random.default_rng(9), 300, 50, 200)
    uniform = user_validity(rows)
    rank = user_validity(rows, method="rank")
    assert (uniform["pvalue"] <= 0.05).mean() > 0.25
    assert (rank["pvalue"] <= 0.05).mean() <= 0.08
    assert rank["flagged"].sum() == 0


def test_rank_method_flags_shifted_users():
    rows, _ = _rank_rows(np.random.default_rng(4), 20, 100, 100, {3: 0.8, 4: -0.8})
    table = user_validity(rows, method="rank")
    assert table.loc[table["flagged"], "user"].tolist() == [3]


def test_rank_method_bonferroni_over_iterations():
    rows, _ = _rank_rows(np.random.default_rng(8), 3, 40, 30, {0: 0.6}, n_iter=4)
    apart = user_validity(rows, method="rank", pool_iterations=False)
    pooled = user_validity(rows, method="rank")
    for row in pooled.itertuples():
        mine = apart[apart["user"] == row.user]
        assert row.n_iterations == 4 and row.n == 120
        assert row.pvalue == pytest.approx(min(1.0, 4 * mine["pvalue"].min()))
        assert row.statistic == pytest.approx(mine["statistic"].max())
    np.testing.assert_allclose(pooled["pvalue_bh"], benjamini_hochberg(pooled["pvalue"]))


def test_rank_method_errors():
    rows, _ = _rank_rows(np.random.default_rng(0), 2, 10, 5)
    with pytest.raises(DataError, match="'n_cal'"):
        user_validity(rows.drop(columns="n_cal"), method="rank")
    with pytest.raises(DataError, match=r"\(1 \+ c\) / \(n_cal \+ 1\)"):
        user_validity(rows.assign(n_cal=13), method="rank")
    varying = rows.copy()
    varying.loc[0, "n_cal"] = 11
    with pytest.raises(DataError, match="one calibration size"):
        user_validity(varying, method="rank")
    with pytest.raises(UsageError, match="'uniform', 'rank'"):
        user_validity(rows, method="two-sided")


def test_rank_method_answers_empty_calibration_sets():
    # A strategy whose every result is a --small-cal full-set answer over an empty
    # calibration set (UIM under a cohort holding only the target): every
    # true-label p-value is (1 + 0) / (0 + 1) = 1. That is no excess over the
    # uniform CDF (D+ = 0, p-value 1, as the "uniform" method finds), not an
    # undefined test whose NaN stopped the Benjamini-Hochberg step.
    rows = pd.DataFrame(
        {
            "strategy": "uim",
            "classifier": "nb",
            "iteration": np.repeat([1, 2], 6),
            "user": np.tile(np.repeat([1, 2], 3), 2),
            "p_true": 1.0,
            "n_cal": 0,
        }
    )
    table = user_validity(rows, method="rank")
    assert table["statistic"].tolist() == [0.0, 0.0]
    assert table["pvalue"].tolist() == [1.0, 1.0]
    assert table["pvalue_bh"].tolist() == [1.0, 1.0]
    assert not table["flagged"].any()
    assert table["n"].tolist() == [6, 6]
    uniform = user_validity(rows, method="uniform")
    assert uniform["pvalue"].tolist() == table["pvalue"].tolist()
    # One empty iteration beside a tested one: the empty one adds p = 1 to the
    # Bonferroni minimum over two iterations.
    rng = np.random.default_rng(3)
    tested, _ = _rank_rows(rng, 2, 30, 20)
    tested = tested.assign(strategy="uim", classifier="nb", iteration=2, user=tested["user"] + 1)
    mixed = pd.concat([rows[rows["iteration"] == 1], tested], ignore_index=True)
    alone = user_validity(tested, method="rank")
    both = user_validity(mixed, method="rank")
    assert both["n_iterations"].tolist() == [2, 2]
    np.testing.assert_allclose(both["pvalue"], np.minimum(1.0, 2 * alone["pvalue"]))
    assert rank_ks_test(0, np.array([0.5, 0.5])) == (0.0, 1.0)


# ---------------------------------------------------------------------------
# rank_ks_test against scipy's ks_2samp on the whole calibration sample
# ---------------------------------------------------------------------------


def _scipy_rank_test(n_cal, positions):
    """The brute-force reference: scipy on all ``n_cal`` calibration positions."""
    result = stats.ks_2samp(np.arange(1.0, n_cal + 1), positions, alternative="greater")
    return float(result.statistic), float(result.pvalue)


@pytest.mark.parametrize("n_cal", [25, 10_000, 10_001, 12_347, 60_000])
@pytest.mark.parametrize(
    "counts",
    [
        [0],  # one test row, above every calibration score
        ["n"],  # one test row, below every calibration score
        [0] * 40,  # ties among test rows at the top
        ["n"] * 40,  # ties at the bottom: the largest D+
        [1, 1, 2, "n", "n"],
        "random",
        "random-many",
    ],
)
def test_rank_ks_test_equals_scipy_bit_for_bit(n_cal, counts):
    rng = np.random.default_rng(n_cal)
    if counts == "random":
        counts = rng.integers(0, n_cal + 1, 30)
    elif counts == "random-many":
        # More test rows than scipy computes exactly: its asymptotic branch.
        counts = rng.integers(0, n_cal + 1, 10_003)
    else:
        counts = np.array([n_cal if c == "n" else c for c in counts])
    positions = n_cal - counts + 0.5
    assert rank_ks_test(n_cal, positions) == _scipy_rank_test(n_cal, positions)


@given(
    st.integers(min_value=10_001, max_value=40_000),
    st.lists(st.integers(min_value=0, max_value=40_000), min_size=1, max_size=50),
)
def test_rank_ks_test_equals_scipy_on_any_sample(n_cal, raw):
    positions = n_cal - np.minimum(np.array(raw), n_cal) + 0.5
    assert rank_ks_test(n_cal, positions) == _scipy_rank_test(n_cal, positions)


@given(
    st.integers(min_value=19, max_value=80),
    st.lists(st.integers(min_value=0, max_value=80), min_size=1, max_size=40),
)
def test_rank_ks_test_reuses_exact_pvalues_only_where_scipy_agrees(n_cal, raw):
    # Small sizes: scipy's exact branch, whose result is kept per (sizes, D+);
    # many samples share sizes and D+, so later ones are answered from there.
    positions = n_cal - np.minimum(np.array(raw), n_cal) + 0.5
    assert rank_ks_test(n_cal, positions) == _scipy_rank_test(n_cal, positions)
