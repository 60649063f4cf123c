"""Per-user coverage intervals: hand-computed values, independent references, simulations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats

from mueval.errors import DataError, UsageError
from mueval.guarantees.intervals import clopper_pearson, coverage_summary, per_user_coverage

# ---------------------------------------------------------------------------
# Clopper-Pearson
# ---------------------------------------------------------------------------


def _cp_by_root_finding(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The exact interval from its definition: tail probabilities of the binomial."""
    tail = (1 - confidence) / 2
    if k == 0:
        low = 0.0
    else:  # P(X >= k | p) = tail
        low = optimize.brentq(
            lambda p: stats.binom.sf(k - 1, n, p) - tail, 1e-15, 1 - 1e-15, xtol=1e-14
        )
    if k == n:
        high = 1.0
    else:  # P(X <= k | p) = tail
        high = optimize.brentq(
            lambda p: stats.binom.cdf(k, n, p) - tail, 1e-15, 1 - 1e-15, xtol=1e-14
        )
    return low, high


def test_clopper_pearson_known_values():
    # 5 of 10: the textbook interval (0.1871, 0.8129).
    low, high = clopper_pearson(5, 10)
    assert low == pytest.approx(0.187086, abs=1e-6)
    assert high == pytest.approx(0.812914, abs=1e-6)
    # k = 0: the upper bound solves (1 - p)^n = 0.025, i.e. 1 - 0.025^(1/n).
    assert clopper_pearson(0, 10) == (0.0, pytest.approx(1 - 0.025 ** (1 / 10)))
    # k = n: the lower bound solves p^n = 0.025.
    assert clopper_pearson(10, 10) == (pytest.approx(0.025 ** (1 / 10)), 1.0)
    # n = 1, k = 1 at 90 %: p >= 0.05.
    assert clopper_pearson(1, 1, confidence=0.9) == (pytest.approx(0.05), 1.0)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 30])
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_clopper_pearson_matches_root_finding(n, confidence):
    for k in range(n + 1):
        low, high = clopper_pearson(k, n, confidence)
        ref_low, ref_high = _cp_by_root_finding(k, n, confidence)
        assert low == pytest.approx(ref_low, abs=1e-9), (k, n)
        assert high == pytest.approx(ref_high, abs=1e-9), (k, n)


def test_clopper_pearson_matches_scipy_binomtest():
    for k, n in [(0, 7), (3, 7), (7, 7), (178, 200), (950, 1000)]:
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        assert clopper_pearson(k, n) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_clopper_pearson_vectorised_and_empty():
    k = np.array([[0, 1, 2], [0, 0, 3]])
    n = np.array([[2, 2, 2], [0, 3, 3]])
    low, high = clopper_pearson(k, n)
    assert low.shape == high.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            if n[i, j] == 0:
                assert math.isnan(low[i, j]) and math.isnan(high[i, j])
            else:
                assert (low[i, j], high[i, j]) == clopper_pearson(int(k[i, j]), int(n[i, j]))
    assert all(math.isnan(v) for v in clopper_pearson(0, 0))
    # Broadcasting a scalar n.
    low, high = clopper_pearson(np.arange(4), 3)
    assert low[0] == 0.0 and high[3] == 1.0


@given(
    n=st.integers(min_value=1, max_value=5000),
    frac=st.floats(min_value=0, max_value=1),
    confidence=st.floats(min_value=0.5, max_value=0.999),
)
def test_clopper_pearson_invariants(n, frac, confidence):
    k = round(frac * n)
    low, high = clopper_pearson(k, n, confidence)
    assert 0.0 <= low <= k / n <= high <= 1.0
    # Symmetry: swapping successes and failures mirrors the interval.
    mirror_low, mirror_high = clopper_pearson(n - k, n, confidence)
    assert low == pytest.approx(1 - mirror_high, abs=1e-9)
    assert high == pytest.approx(1 - mirror_low, abs=1e-9)
    # More confidence, wider interval.
    wide_low, wide_high = clopper_pearson(k, n, min(0.9999, confidence + 0.0005))
    assert wide_low <= low + 1e-12 and wide_high >= high - 1e-12


@pytest.mark.parametrize(
    ("k", "n", "confidence", "needle"),
    [
        (3, 2, 0.95, "k must not exceed n"),
        (-1, 2, 0.95, "non-negative integers"),
        (1.5, 2, 0.95, "non-negative integers"),
        (1, 2, 1.0, "confidence"),
        (1, 2, 0.0, "confidence"),
        ("a", 2, 0.95, "k and n"),
    ],
)
def test_clopper_pearson_rejects_bad_input(k, n, confidence, needle):
    with pytest.raises(UsageError, match=needle):
        clopper_pearson(k, n, confidence)


# ---------------------------------------------------------------------------
# per_user_coverage
# ---------------------------------------------------------------------------


def _rows(spec: dict[tuple[str, str, int, int], tuple[int, int]], user_col: str = "user"):
    """Test rows from {(strategy, classifier, iteration, user): (n, n_covered)}."""
    keys = list(spec)
    n = np.array([spec[key][0] for key in keys])
    k = np.array([spec[key][1] for key in keys])
    names = ["strategy", "classifier", "iteration", user_col]
    columns = zip(*keys, strict=True)
    frame = pd.DataFrame(
        {name: np.repeat(np.array(values), n) for name, values in zip(names, columns, strict=True)}
    )
    # Within each block of n rows, the first k are covered.
    position = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    frame["covered"] = position < np.repeat(k, n)
    return frame


def test_per_user_exact_counts_and_flags():
    spec = {
        ("UCM", "RF", 0, 1): (50, 48),
        ("UCM", "RF", 1, 1): (50, 47),
        ("UCM", "RF", 0, 2): (50, 30),
        ("UCM", "RF", 1, 2): (50, 35),
        ("UIM", "KNN", 0, 1): (20, 20),
    }
    table = per_user_coverage(_rows(spec), alpha=0.1)
    assert list(table[["strategy", "classifier", "user"]].itertuples(index=False, name=None)) == [
        ("UCM", "RF", 1),
        ("UCM", "RF", 2),
        ("UIM", "KNN", 1),
    ]
    assert table["n"].tolist() == [100, 100, 20]
    assert table["n_covered"].tolist() == [95, 65, 20]
    assert table["n_iterations"].tolist() == [2, 2, 1]
    assert table["coverage"].tolist() == [0.95, 0.65, 1.0]
    for row in table.itertuples():
        ci = stats.binomtest(row.n_covered, row.n).proportion_ci(method="exact")
        assert (row.low, row.high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    # 65/100 has upper bound ~0.74 < 0.9; 95/100 and 20/20 are not below.
    assert table["below"].tolist() == [False, True, False]
    assert set(table["method"]) == {"exact"}


def test_per_user_user_col_and_int_covered():
    rows = _rows({("UCM", "RF", 0, 4): (10, 9)}, user_col="userid")
    rows["covered"] = rows["covered"].astype(int)
    table = per_user_coverage(rows, alpha=0.1, user_col="userid")
    assert table.loc[0, "user"] == 4 and table.loc[0, "n_covered"] == 9


def test_per_user_errors_name_the_problem():
    rows = _rows({("UCM", "RF", 0, 1): (5, 5)})
    with pytest.raises(DataError, match="'covered'"):
        per_user_coverage(rows.drop(columns="covered"), alpha=0.1)
    with pytest.raises(DataError, match="'userid'"):
        per_user_coverage(rows, alpha=0.1, user_col="userid")
    with pytest.raises(UsageError, match="alpha"):
        per_user_coverage(rows, alpha=1.5)
    with pytest.raises(UsageError, match="coverage_summary"):
        per_user_coverage(rows, alpha=0.1, method="bootstrap-users")
    with pytest.raises(UsageError, match="'exact', 'bootstrap-iterations'"):
        per_user_coverage(rows, alpha=0.1, method="wilson")
    bad = rows.assign(covered=["yes"] * len(rows))
    with pytest.raises(DataError, match="bool"):
        per_user_coverage(bad, alpha=0.1)
    missing_user = rows.assign(user=[None] + [1] * (len(rows) - 1))
    with pytest.raises(DataError, match="missing value"):
        per_user_coverage(missing_user, alpha=0.1)


def test_bootstrap_iterations_hand_computed():
    # Two iterations of 10 rows, 8 and 10 covered. Resampled pairs give 0.8
    # (p=1/4), 0.9 (p=1/2) or 1.0 (p=1/4): the 2.5 % and 97.5 % percentiles of
    # 4000 replicates are 0.8 and 1.0.
    # User 0, listed after user 1 in the rows, has 3 of 10 in both
    # iterations: its interval is [0.3, 0.3]; each user keeps its own.
    spec = {
        ("UCM", "RF", 0, 1): (10, 8),
        ("UCM", "RF", 1, 1): (10, 10),
        ("UCM", "RF", 0, 0): (10, 3),
        ("UCM", "RF", 1, 0): (10, 3),
    }
    table = per_user_coverage(_rows(spec), alpha=0.1, method="bootstrap-iterations", n_boot=4000)
    assert table["user"].tolist() == [0, 1]
    assert table["coverage"].tolist() == [0.3, 0.9]
    assert (table.loc[0, "low"], table.loc[0, "high"]) == (pytest.approx(0.3),) * 2
    assert (table.loc[1, "low"], table.loc[1, "high"]) == (pytest.approx(0.8), pytest.approx(1.0))
    # Iterations that agree leave nothing to resample: the interval collapses.
    same = {("UCM", "RF", i, 1): (20, 15) for i in range(5)}
    table = per_user_coverage(_rows(same), alpha=0.1, method="bootstrap-iterations")
    assert (table.loc[0, "low"], table.loc[0, "high"]) == (pytest.approx(0.75),) * 2
    assert bool(table.loc[0, "below"])


def test_bootstrap_iterations_weighs_iterations_by_their_rows():
    # Iterations of 10 rows (all covered) and 30 rows (15 covered). Half the
    # resamples hold one of each, whose coverage is 25/40 = 0.625 (covered rows
    # over rows; the mean of the two ratios would be 0.75). A 20 % interval
    # spans the 40th to 60th percentiles, inside that middle half.
    spec = {("UCM", "RF", 0, 1): (10, 10), ("UCM", "RF", 1, 1): (30, 15)}
    table = per_user_coverage(
        _rows(spec), alpha=0.1, confidence=0.2, method="bootstrap-iterations", n_boot=4000
    )
    assert table.loc[0, "coverage"] == 0.625
    assert (table.loc[0, "low"], table.loc[0, "high"]) == (pytest.approx(0.625),) * 2


@given(
    blocks=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(1, 30), st.floats(0, 1)),
        min_size=1,
        max_size=12,
    )
)
def test_per_user_invariants(blocks):
    spec = {}
    for user, iteration, n, frac in blocks:
        spec["S", "C", iteration, user] = (n, round(frac * n))
    rows = _rows(spec)
    table = per_user_coverage(rows, alpha=0.1)
    assert table["n"].sum() == len(rows) and table["n_covered"].sum() == rows["covered"].sum()
    assert ((table["low"] <= table["coverage"]) & (table["coverage"] <= table["high"])).all()
    boot = per_user_coverage(rows, alpha=0.1, method="bootstrap-iterations", n_boot=200)
    defined = boot["low"].notna()
    assert (defined == (boot["n_iterations"] >= 2)).all()
    cov = boot.loc[defined]
    assert ((cov["low"] <= cov["high"]) & (cov["low"] >= 0) & (cov["high"] <= 1)).all()


def test_bootstrap_iterations_single_iteration_is_undefined():
    table = per_user_coverage(
        _rows({("UCM", "RF", 0, 1): (100, 10)}), alpha=0.1, method="bootstrap-iterations"
    )
    assert math.isnan(table.loc[0, "low"]) and math.isnan(table.loc[0, "high"])
    assert not table.loc[0, "below"]


def _overdispersed_rows(rng, n_users, n_iter, n_rows, a, b):
    """Each user's iterations have their own coverage p_i ~ Beta(a, b)."""
    p = rng.beta(a, b, size=(n_users, n_iter))
    k = rng.binomial(n_rows, p)
    spec = {("S", "C", i, u): (n_rows, int(k[u, i])) for u in range(n_users) for i in range(n_iter)}
    return _rows(spec)


def test_bootstrap_iterations_reproducible_with_seed():
    rows = _overdispersed_rows(np.random.default_rng(1), 5, 6, 30, 18, 2)
    first = per_user_coverage(rows, alpha=0.1, method="bootstrap-iterations", seed=7)
    again = per_user_coverage(rows, alpha=0.1, method="bootstrap-iterations", seed=7)
    other = per_user_coverage(rows, alpha=0.1, method="bootstrap-iterations", seed=8)
    pd.testing.assert_frame_equal(first, again)
    assert not np.allclose(first["low"], other["low"])


def test_bootstrap_iterations_covers_when_exact_does_not():
    # Iterations vary in coverage (Beta(18, 2), mean 0.9) on top of binomial
    # noise, as when iterations refit models on reused rows. Each "user" is an
    # independent replicate. The exact interval treats the 1000 rows as
    # independent and misses the mean 0.9 far more often than 5 %; the cluster
    # bootstrap over 20 iterations comes close to its nominal 95 %.
    rows = _overdispersed_rows(np.random.default_rng(2026), 300, 20, 50, 18, 2)
    exact = per_user_coverage(rows, alpha=0.1)
    boot = per_user_coverage(rows, alpha=0.1, method="bootstrap-iterations", n_boot=1000, seed=3)
    hit_exact = ((exact["low"] <= 0.9) & (exact["high"] >= 0.9)).mean()
    hit_boot = ((boot["low"] <= 0.9) & (boot["high"] >= 0.9)).mean()
    assert hit_exact < 0.85
    assert 0.88 <= hit_boot <= 0.99


# ---------------------------------------------------------------------------
# coverage_summary
# ---------------------------------------------------------------------------


def _per_user(strategy, classifier, counts):
    """A per-user table from [(user, n, n_covered)], with exact intervals."""
    users, n, k = (np.array(x) for x in zip(*counts, strict=True))
    low, high = clopper_pearson(k, n)
    return pd.DataFrame(
        {
            "strategy": strategy,
            "classifier": classifier,
            "user": users,
            "n": n,
            "n_covered": k,
            "coverage": k / n,
            "low": low,
            "high": high,
        }
    )


def test_summary_hand_computed():
    per_user = pd.concat(
        [
            _per_user("UCM", "RF", [(1, 100, 95), (2, 100, 60), (3, 200, 150), (4, 50, 45)]),
            _per_user("UIM", "RF", [(1, 30, 30)]),
        ],
        ignore_index=True,
    )
    summary = coverage_summary(per_user, alpha=0.1)
    assert summary[["strategy", "classifier"]].values.tolist() == [["UCM", "RF"], ["UIM", "RF"]]
    ucm = summary.iloc[0]
    # 60/100 (high ~0.70) and 150/200 (high ~0.81) lie below 0.9; 95/100, 45/50 do not.
    assert (ucm["n_users"], ucm["n_below"], ucm["share_below"]) == (4, 2, 0.5)
    assert (ucm["worst_user"], ucm["worst_n"], ucm["worst_coverage"]) == (2, 100, 0.6)
    ci = stats.binomtest(60, 100).proportion_ci(method="exact")
    assert (ucm["worst_low"], ucm["worst_high"]) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert ucm["mean_coverage"] == pytest.approx((0.95 + 0.6 + 0.75 + 0.9) / 4)
    assert ucm["mean_low"] <= ucm["mean_coverage"] <= ucm["mean_high"]
    # Pooled: 350 of 450 rows.
    assert (ucm["pooled_n"], ucm["pooled_covered"]) == (450, 350)
    assert ucm["pooled_coverage"] == pytest.approx(350 / 450)
    ci = stats.binomtest(350, 450).proportion_ci(method="exact")
    assert ucm["pooled_low"] == pytest.approx(ci.low)
    assert ucm["pooled_high"] == pytest.approx(ci.high)
    assert bool(ucm["pooled_below"])
    uim = summary.iloc[1]
    assert (uim["n_users"], uim["n_below"], uim["worst_user"]) == (1, 0, 1)
    assert math.isnan(uim["mean_low"]) and math.isnan(uim["mean_high"])  # one user
    assert not uim["pooled_below"]


def test_summary_worst_user_tie_break():
    # Equal coverage 0.5: user 9 has more rows, hence the lower upper bound.
    per_user = _per_user("S", "C", [(3, 10, 5), (9, 100, 50), (5, 20, 19)])
    assert coverage_summary(per_user, alpha=0.1).loc[0, "worst_user"] == 9


def test_summary_reproducible_and_errors():
    per_user = _per_user("S", "C", [(u, 40, 30 + u % 10) for u in range(12)])
    a = coverage_summary(per_user, alpha=0.1, seed=5)
    b = coverage_summary(per_user, alpha=0.1, seed=5)
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(DataError, match="'n_covered'"):
        coverage_summary(per_user.drop(columns="n_covered"), alpha=0.1)
    with pytest.raises(UsageError, match="alpha"):
        coverage_summary(per_user, alpha=0)
    with pytest.raises(UsageError, match="n_boot"):
        coverage_summary(per_user, alpha=0.1, n_boot=0)


def test_summary_accepts_undefined_user_intervals():
    rows = _rows({("S", "C", 0, 1): (10, 9), ("S", "C", 0, 2): (10, 4)})
    per_user = per_user_coverage(rows, alpha=0.1, method="bootstrap-iterations")
    summary = coverage_summary(per_user, alpha=0.1)
    assert summary.loc[0, "n_below"] == 0  # undefined intervals are never "below"
    assert summary.loc[0, "worst_user"] == 2 and math.isnan(summary.loc[0, "worst_high"])


def test_bootstrap_users_covers_the_mean_in_simulation():
    # 300 independent runs of 40 users whose coverages follow Beta(18, 2); the
    # mean over users estimates 0.9, and a 95 % interval should hold it in
    # about 95 % of the runs (the percentile interval runs a little short).
    rng = np.random.default_rng(11)
    parts = []
    for r in range(300):
        n = rng.integers(30, 200, size=40)
        k = rng.binomial(n, rng.beta(18, 2, size=40))
        parts.append(_per_user(f"run{r:03d}", "C", list(zip(range(40), n, k, strict=True))))
    summary = coverage_summary(pd.concat(parts, ignore_index=True), alpha=0.1, n_boot=1000)
    hits = ((summary["mean_low"] <= 0.9) & (summary["mean_high"] >= 0.9)).mean()
    assert 0.9 <= hits <= 0.99
