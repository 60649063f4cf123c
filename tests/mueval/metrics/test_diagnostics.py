"""Tests of mueval.metrics.diagnostics: conditional-coverage diagnostics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LinearRegression

from mueval.metrics import (
    MetricInputError,
    coverage_gap,
    excess_risk_target_coverage,
    hsic,
    size_stratified_coverage,
    weighted_coverage_gap,
    worst_slab_coverage,
)

# --- size-stratified coverage ----------------------------------------------


def test_size_stratified_coverage_by_hand() -> None:
    covered = np.array([True, False, True, True, False, True])
    sizes = np.array([1, 1, 2, 2, 0, 3])
    # size 0: row 4 (uncovered); size 1: rows 0,1 -> 1/2; size 2: rows 2,3 -> 1; size 3: row 5 -> 1
    assert size_stratified_coverage(covered, sizes) == {
        0: (0.0, 1),
        1: (0.5, 2),
        2: (1.0, 2),
        3: (1.0, 1),
    }


def test_size_stratified_coverage_rejects_float_sizes() -> None:
    with pytest.raises(
        MetricInputError, match="set_size must be a 1-D integer array; found dtype float64"
    ):
        size_stratified_coverage([True], np.array([1.0]))


# --- coverage gaps ---------------------------------------------------------


@pytest.mark.parametrize(
    "groups",
    [
        np.array(["u1", "u1", "u1", "u1", "u2", "u2"]),
        np.array([7, 7, 7, 7, 3, 3]),
        np.array([("a", 1)] * 4 + ["b"] * 2, dtype=object),  # mixed hashables
    ],
)
def test_coverage_gaps_by_hand(groups: np.ndarray) -> None:
    covered = np.array([True, True, False, True, True, True])
    # target 0.75; group 1 coverage 3/4 (gap 0), group 2 coverage 2/2 (gap 0.25)
    assert coverage_gap(covered, groups, alpha=0.25) == pytest.approx((0 + 0.25) / 2)
    assert weighted_coverage_gap(covered, groups, alpha=0.25) == pytest.approx(
        4 / 6 * 0 + 2 / 6 * 0.25
    )


def test_coverage_gap_single_group_is_marginal_gap() -> None:
    covered = np.array([True] * 9 + [False])
    # coverage 0.9 against 0.95
    assert coverage_gap(covered, np.zeros(10, int), 0.05) == pytest.approx(0.05)
    assert weighted_coverage_gap(covered, np.zeros(10, int), 0.05) == pytest.approx(0.05)


def test_coverage_gap_rejects_mismatched_groups() -> None:
    with pytest.raises(
        MetricInputError,
        match="groups must have one label per row of covered \\(3\\); found shape \\(2,\\)",
    ):
        coverage_gap([True, False, True], [0, 1], 0.1)


# --- HSIC ------------------------------------------------------------------


def _brute_force_hsic(x: np.ndarray, c: np.ndarray) -> float:
    """trace(K H L H) / n^2 with explicit n x n matrices and median-heuristic widths."""
    n = len(x)

    def width(v: np.ndarray) -> float:
        d = np.abs(v[:, None] - v[None, :])[np.triu_indices(n, 1)]
        d = np.sort(d[d > 0])
        return 1.0 if d.size == 0 else float(d[int(np.ceil(d.size / 2)) - 1])  # lower median

    c = c.astype(float)
    K = np.exp(-((x[:, None] - x[None, :]) ** 2) / (2 * width(x) ** 2))
    L = np.exp(-((c[:, None] - c[None, :]) ** 2) / (2 * width(c) ** 2))
    H = np.eye(n) - np.ones((n, n)) / n
    return float(np.trace(K @ H @ L @ H) / n**2)


def test_hsic_two_points_by_hand() -> None:
    # x = (0, 1), c = (0, 1): both widths 1, K = L = [[1, k], [k, 1]] with k = exp(-1/2).
    # HKH = (1 - k) H, so trace(HKHL) = (1 - k)^2 trace(H) = (1 - k)^2; divided by n^2 = 4.
    k = math.exp(-0.5)
    assert hsic(np.array([0, 1]), np.array([False, True])) == pytest.approx((1 - k) ** 2 / 4)


def test_hsic_zero_under_empirical_independence_and_constant_coverage() -> None:
    # joint table of (size, covered) is the product of its marginals
    sizes = np.array([1, 1, 2, 2, 1, 1, 2, 2])
    covered = np.array([True, False, True, False, True, False, True, False])
    assert hsic(sizes, covered) == pytest.approx(0.0, abs=1e-15)
    assert hsic(np.array([1, 2, 3]), np.array([True, True, True])) == pytest.approx(0.0, abs=1e-15)


def test_hsic_equals_explicit_matrices() -> None:
    rng = np.random.default_rng(3)
    sizes = rng.integers(0, 6, 80)
    covered = rng.random(80) < 1 / (1 + sizes)  # dependent on size
    expected = _brute_force_hsic(sizes.astype(float), covered)
    assert hsic(sizes, covered) == pytest.approx(expected, rel=1e-10)
    assert expected > 1e-3


def test_hsic_subsamples_deterministically_above_the_cap() -> None:
    rng = np.random.default_rng(4)
    widths = rng.random(300)  # 300 distinct values > cap of 50
    covered = widths < 0.5
    first = hsic(widths, covered, max_distinct=50, random_state=1)
    assert first == hsic(widths, covered, max_distinct=50, random_state=1)
    assert first > 0
    # without the cap it is the exact full-sample statistic
    assert hsic(widths, covered) == pytest.approx(_brute_force_hsic(widths, covered), rel=1e-10)


# --- worst-slab coverage ---------------------------------------------------


def test_wsc_mapie_doc_example() -> None:
    # MAPIE's doctest: x = 0..3, intervals cover the first three rows -> covered [1,1,1,0];
    # delta = 0.5 (>= 2 rows): the slab {2, 3} covers 1 of 2 -> 0.5
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    assert worst_slab_coverage(X, [True, True, True, False], delta=0.5, n_directions=5) == 0.5


def test_wsc_keeps_tied_rows_together() -> None:
    # projections 0,0,0,1,1 (any direction in 1-D); covered 0,1,1 | 1,0.
    # Slabs: {x=0} 2/3, {x=1} 1/2, both 3/5 -> 1/2. Splitting ties would give 0.
    X = np.array([[0.0], [0.0], [0.0], [1.0], [1.0]])
    covered = np.array([False, True, True, True, False])
    assert worst_slab_coverage(X, covered, delta=0.2, n_directions=3) == 0.5


def _brute_force_wsc_1d(x: np.ndarray, covered: np.ndarray, min_rows: int) -> float:
    best = math.inf
    values = np.unique(x)
    for a in values:
        for b in values[values >= a]:
            inside = (x >= a) & (x <= b)
            if inside.sum() >= min_rows:
                best = min(best, covered[inside].mean())
    return best


@pytest.mark.parametrize("seed", range(4))
def test_wsc_equals_brute_force_in_one_dimension(seed: int) -> None:
    # In 1-D every unit direction is +-1, so the slabs are the intervals of x.
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 15, 40).astype(float)  # many ties
    covered = rng.random(40) < 0.8
    expected = _brute_force_wsc_1d(x, covered, min_rows=8)  # delta 0.2 * 40
    assert worst_slab_coverage(x[:, None], covered, delta=0.2, n_directions=4) == expected


def test_wsc_finds_a_planted_undercovered_region() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    covered = X[:, 0] < 1.0  # rows with x0 >= 1 (about 16%) are never covered
    value = worst_slab_coverage(X, covered, delta=0.1, n_directions=200)
    assert value < 0.3 < covered.mean()


def test_wsc_rejects_bad_delta() -> None:
    with pytest.raises(
        MetricInputError, match="delta must be a fraction of rows in \\(0, 1\\]; found 0"
    ):
        worst_slab_coverage(np.zeros((3, 1)), [True, True, False], delta=0)


@settings(max_examples=50, deadline=None)
@given(
    data=st.integers(2, 40).flatmap(
        lambda n: st.tuples(
            arrays(np.float64, (n, 2), elements=st.integers(-3, 3).map(float)),
            arrays(np.bool_, n),
        )
    ),
    delta=st.floats(0.05, 1.0),
)
def test_wsc_is_a_coverage_below_the_marginal(data, delta) -> None:
    X, covered = data
    value = worst_slab_coverage(X, covered, delta=delta, n_directions=10)
    assert 0.0 <= value <= 1.0
    assert value <= covered.mean()


# --- excess risk of the target coverage -----------------------------------


def test_ert_all_covered_is_alpha_squared_brier() -> None:
    X = np.random.default_rng(0).standard_normal((50, 2))
    # every fold trains on c = 1 only -> h = 1; Brier: (0.95 - 1)^2 - (1 - 1)^2 = 0.0025
    assert excess_risk_target_coverage(X, np.ones(50, bool), 0.05) == pytest.approx(0.0025)
    # log loss: -log(0.95) - (-log(1 - 1e-12)) (h is clipped to 1 - 1e-12)
    expected = -math.log(0.95) + math.log(1 - 1e-12)
    assert excess_risk_target_coverage(X, np.ones(50, bool), 0.05, loss="log") == pytest.approx(
        expected
    )


def test_ert_detects_feature_dependent_coverage() -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 3))
    covered = X[:, 0] > -0.5  # about 69% covered, decided by x0
    # the constant 0.95 has Brier risk about 0.31*0.9025 + 0.69*0.0025 = 0.28;
    # a good h has far less, so ERT is large and positive, but below the constant's risk
    target_risk = np.mean((0.95 - covered) ** 2)
    ert = excess_risk_target_coverage(X, covered, 0.05)
    assert 0.15 < ert < target_risk
    hgb = HistGradientBoostingClassifier(max_iter=15, max_depth=2)  # kept small for speed
    assert excess_risk_target_coverage(X, covered, 0.05, model=hgb, n_splits=3) > 0.15


def test_ert_small_without_signal() -> None:
    rng = np.random.default_rng(2)
    X = rng.standard_normal((400, 3))
    covered = rng.random(400) < 0.95  # independent of X, at the target rate
    assert abs(excess_risk_target_coverage(X, covered, 0.05)) < 0.01


def test_ert_is_deterministic_and_validates() -> None:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 2))
    covered = rng.random(60) < 0.8
    assert excess_risk_target_coverage(X, covered, 0.1) == excess_risk_target_coverage(
        X, covered, 0.1
    )
    with pytest.raises(
        MetricInputError,
        match="model must be a classifier with predict_proba; found LinearRegression",
    ):
        excess_risk_target_coverage(X, covered, 0.1, model=LinearRegression())
    with pytest.raises(
        MetricInputError, match="n_splits must be an integer in \\[2, n=60\\]; found 1"
    ):
        excess_risk_target_coverage(X, covered, 0.1, n_splits=1)
    with pytest.raises(MetricInputError, match="X has 59, covered has 60"):
        excess_risk_target_coverage(X[:59], covered, 0.1)
