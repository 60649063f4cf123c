"""Set statistics on hand-made sets with known answers (the correlation review's examples)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mueval.errors import DataError
from mueval.report import setstats as S

A, B, C = 0, 1, 2


def sets_of(rows: list[set[int]], k: int) -> np.ndarray:
    z = np.zeros((len(rows), k), dtype=bool)
    for r, members in enumerate(rows):
        z[r, list(members)] = True
    return z


def test_cooccurrence_counts_pairs_with_zero_diagonal():
    z = sets_of([{A, B}, {A, B, C}, {C}, set(), {A}], 3)
    counts = S.cooccurrence_matrix(z)
    expected = np.array([[0, 2, 1], [2, 0, 1], [1, 1, 0]])
    np.testing.assert_array_equal(counts, expected)
    # Column-normalised: column A is (0, 2/3, 1/3).
    np.testing.assert_allclose(S.column_normalise(counts)[:, A], [0, 2 / 3, 1 / 3])


def test_column_normalise_leaves_empty_columns_undefined():
    m = S.column_normalise(np.array([[1, 0], [3, 0]]))
    np.testing.assert_allclose(m[:, 0], [0.25, 0.75])
    assert np.isnan(m[:, 1]).all()


def test_example1_opposite_confusions_give_the_same_cooccurrence():
    """Review, example 1 (non-randomized): every set is {top-ranked, true}."""
    y = np.array([A, B, C] * 4)
    pred1 = np.array([C, A, B] * 4)  # model 1: A->C, B->A, C->B
    pred2 = np.array([B, C, A] * 4)  # model 2: the cycle the other way
    sets1 = sets_of([{t, p} for t, p in zip(y, pred1)], 3)
    sets2 = sets_of([{t, p} for t, p in zip(y, pred2)], 3)
    np.testing.assert_array_equal(S.cooccurrence_matrix(sets1), S.cooccurrence_matrix(sets2))
    np.testing.assert_allclose(S.phi_matrix(sets1).phi, S.phi_matrix(sets2).phi)
    cm1 = S.confusion_matrix_colnorm(y, pred1, 3)
    cm2 = S.confusion_matrix_colnorm(y, pred2, 3)
    # Rows predicted, columns true: model 1 puts every true A in row C.
    expected1 = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float)
    np.testing.assert_array_equal(cm1, expected1)
    np.testing.assert_array_equal(cm2, expected1.T)
    # Both accuracies are zero: the zero-diagonal matrix equals the confusion matrix.
    np.testing.assert_array_equal(
        S.confusion_matrix_colnorm(y, pred1, 3, zero_diagonal=True), expected1
    )
    # The coverage confusion matrix, being directional, tells them apart.
    cc1, cc2 = S.coverage_confusion(sets1, y), S.coverage_confusion(sets2, y)
    np.testing.assert_array_equal(cc1, np.eye(3) + expected1.T)
    np.testing.assert_array_equal(cc2, np.eye(3) + expected1)


def test_example2_neighbour_sets_give_minus_half():
    """Review, example 2: every set is the true class and one neighbour."""
    z = sets_of([{A, B}, {B, C}, {C, A}], 3)
    phi = S.phi_matrix(z).phi
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose(phi[off], -0.5)
    np.testing.assert_allclose(np.diag(phi), 1.0)


def test_example3_zero_correlation_with_99_percent_directional_confusion():
    """Review, example 3 with eps = 0.01 on 200 rows: 99, 1, 99, 1 rows of four kinds."""
    kinds = [({A, B}, A, B, 99), ({A}, A, A, 1), ({B}, B, B, 99), ({C}, C, C, 1)]
    rows, y, yp, proba = [], [], [], []
    for members, true, pred, n in kinds:
        rows += [members] * n
        y += [true] * n
        yp += [pred] * n
        p = np.full(3, 0.1)
        p[pred] = 0.8
        proba += [p] * n
    z = sets_of(rows, 3)
    y, yp, proba = np.array(y), np.array(yp), np.array(proba)
    # p_A = (1 - eps)/2 + eps/2, p_B = 1 - eps, p_C = eps/2.
    np.testing.assert_allclose(S.inclusion_rate(z), [0.5, 0.99, 0.005])
    np.testing.assert_allclose(S.comembership_rate(z)[A, B], 0.495)
    assert S.phi_matrix(z).phi[A, B] == pytest.approx(0.0, abs=1e-12)
    # Yet 99% of true A are predicted B (rows predicted, columns true) ...
    assert S.confusion_matrix_colnorm(y, yp, 3)[B, A] == pytest.approx(0.99)
    # ... the coverage confusion shows B in 99% of A's sets ...
    assert S.coverage_confusion(z, y)[A, B] == pytest.approx(0.99)
    # ... and the soft confusion E[p_B | y = A] = 0.99 * 0.8 + 0.01 * 0.1.
    assert S.soft_confusion(proba, y)[A, B] == pytest.approx(0.99 * 0.8 + 0.01 * 0.1)
    # Coverage is 100%: every set holds its true class.
    np.testing.assert_allclose(np.diag(S.coverage_confusion(z, y)), 1.0)


@pytest.mark.parametrize("n_together, n", [(1, 1_000_000), (1, 100), (40, 100)])
def test_example4_perfect_correlation_whatever_the_co_occurrence(n_together, n):
    """Review, example 4: T in every set, A and B added together in n_together of n."""
    z = np.zeros((n, 3), dtype=bool)
    z[:, 2] = True  # T
    z[:n_together, :2] = True
    res = S.phi_matrix(z)
    assert res.phi[A, B] == pytest.approx(1.0)
    assert S.comembership_rate(z)[A, B] == pytest.approx(n_together / n)
    # T is in every set: its entries are undefined, and flagged.
    assert np.isnan(res.phi[2]).all() and np.isnan(res.phi[:, 2]).all()
    np.testing.assert_array_equal(res.undefined, [False, False, True])


def test_example5_difficulty_alone_gives_a_quarter():
    """Review, example 5: half the rows get all three classes, half their own."""
    z = sets_of([{A, B, C}] * 3 + [{A}, {B}, {C}], 3)
    phi = S.phi_matrix(z).phi
    np.testing.assert_allclose(phi[~np.eye(3, dtype=bool)], 0.25)


def test_example6_pooling_two_clients_creates_correlation_and_is_flagged():
    """Review, example 6: A and B independent on each client, rates 0.9 and 0.1."""
    t = 2

    def client(rate_a: float, rate_b: float, n: int = 100) -> np.ndarray:
        # Exact independence: the four cells in proportion rate_a x rate_b.
        rows = []
        for a, pa in ((True, rate_a), (False, 1 - rate_a)):
            for b, pb in ((True, rate_b), (False, 1 - rate_b)):
                members = {t} | ({A} if a else set()) | ({B} if b else set())
                rows += [members] * round(n * pa * pb)
        return sets_of(rows, 3)

    c1, c2 = client(0.9, 0.9), client(0.1, 0.1)
    per_user = {1: S.phi_matrix(c1).phi, 2: S.phi_matrix(c2).phi}
    assert per_user[1][A, B] == pytest.approx(0.0, abs=1e-12)
    assert per_user[2][A, B] == pytest.approx(0.0, abs=1e-12)
    pooled = S.phi_matrix(np.vstack([c1, c2])).phi
    assert pooled[A, B] == pytest.approx(0.64)
    warnings = S.pooled_vs_per_user(pooled, per_user)
    flagged = {w.index for w in warnings}
    assert flagged == {(A, B), (B, A)}
    w = next(w for w in warnings if w.index == (A, B))
    assert w.kind == "inflation"
    assert w.pooled == pytest.approx(0.64) and w.user_max == pytest.approx(0.0, abs=1e-12)
    assert "larger than every user's value" in w.describe(["A", "B", "T"])

    # Reversed rates on one client: the pooled entry becomes -0.64.
    d1, d2 = client(0.9, 0.1), client(0.1, 0.9)
    assert S.phi_matrix(np.vstack([d1, d2])).phi[A, B] == pytest.approx(-0.64)


def test_pooling_reversal_is_flagged_as_reversal():
    """Both users negative, pooled positive (hand-computed below)."""
    # User 1: {A,B} x4, {A} x3, {B} x3: p = 0.7, E[AB] = 0.4, phi = -0.09/0.21.
    u1 = sets_of([{A, B}] * 4 + [{A}] * 3 + [{B}] * 3, 3)
    # User 2: {A} x1, {B} x1, {C} x8: p = 0.1, E[AB] = 0, phi = -0.01/0.09.
    u2 = sets_of([{A}, {B}] + [{C}] * 8, 3)
    phi1, phi2 = S.phi_matrix(u1).phi, S.phi_matrix(u2).phi
    assert phi1[A, B] == pytest.approx(-0.09 / 0.21)
    assert np.isnan(phi1[A, C])  # C never in user 1's sets
    assert phi2[A, B] == pytest.approx(-0.01 / 0.09)
    # Pooled: p = 0.4, E[AB] = 0.2, phi = 0.04 / 0.24.
    pooled = S.phi_matrix(np.vstack([u1, u2])).phi
    assert pooled[A, B] == pytest.approx(0.04 / 0.24)
    warnings = S.pooled_vs_per_user(pooled, np.stack([phi1, phi2]))
    ab = [w for w in warnings if w.index == (A, B)]
    assert len(ab) == 1 and ab[0].kind == "reversal"
    # A vs C is defined for user 2 only: not judged.
    assert not any(w.index == (A, C) for w in warnings)


def test_pooled_within_the_users_range_is_not_flagged():
    pooled = np.array([0.3, -0.2])
    users = np.array([[0.1, -0.4], [0.5, -0.1]])
    assert S.pooled_vs_per_user(pooled, users) == []


def test_example7_never_co_occurring_pairs_sit_at_the_floor():
    """Review, example 7: cats get {cat, dog}, dogs {dog}, planes {plane}."""
    cat, dog, plane = 0, 1, 2
    z = sets_of([{cat, dog}, {dog}, {plane}], 3)
    res = S.phi_matrix(z)
    assert res.phi[cat, dog] == pytest.approx(0.5)
    assert res.phi[cat, plane] == pytest.approx(-0.5)
    assert res.phi[dog, plane] == pytest.approx(-1.0)
    # The floor -sqrt(r_i r_j / ((1 - r_i)(1 - r_j))) with r = (1/3, 2/3, 1/3).
    assert res.floor[cat, plane] == pytest.approx(-np.sqrt((1 / 9) / (4 / 9)))
    assert res.floor[dog, plane] == pytest.approx(-1.0)
    assert res.floor[cat, dog] == pytest.approx(-1.0)  # a floor the pair does not sit at


@pytest.mark.parametrize("n", [10, 1000])
def test_example8_moving_one_label_moves_phi_from_one_to_floor(n):
    together = np.zeros((n, 3), dtype=bool)
    together[:, 2] = True
    together[0, :2] = True
    apart = together.copy()
    apart[0, B] = False
    apart[1, B] = True
    assert S.phi_matrix(together).phi[A, B] == pytest.approx(1.0)
    res = S.phi_matrix(apart)
    assert res.phi[A, B] == pytest.approx(-1 / (n - 1))
    assert res.floor[A, B] == pytest.approx(-1 / (n - 1))


def test_soft_confusion_rows_are_true_classes():
    proba = np.array([[0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.1, 0.1, 0.8]])
    y = np.array([A, A, C])
    soft = S.soft_confusion(proba, y)
    np.testing.assert_allclose(soft[A], [0.6, 0.3, 0.1])
    assert np.isnan(soft[B]).all()  # no row of class B
    np.testing.assert_allclose(soft[C], [0.1, 0.1, 0.8])


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible():
    rng = np.random.default_rng(1)
    z = rng.random((400, 3)) < np.array([0.2, 0.5, 0.8])
    lo, hi = S.bootstrap_ci(S.inclusion_rate, z, n_boot=300, seed=3)
    est = S.inclusion_rate(z)
    assert np.all(lo <= est) and np.all(est <= hi)
    # Roughly +- 2 binomial standard errors.
    se = np.sqrt(est * (1 - est) / 400)
    np.testing.assert_allclose(hi - lo, 2 * 1.96 * se, rtol=0.3)
    lo2, hi2 = S.bootstrap_ci(S.inclusion_rate, z, n_boot=300, seed=3)
    np.testing.assert_array_equal(lo, lo2)
    np.testing.assert_array_equal(hi, hi2)


def test_cluster_bootstrap_is_wider_when_users_differ():
    # Two users with very different inclusion rates: resampling users must show it.
    z = np.vstack([np.ones((200, 1), bool), np.zeros((200, 1), bool)])
    groups = np.repeat([1, 2], 200)
    lo_r, hi_r = S.bootstrap_ci(S.inclusion_rate, z, n_boot=200, seed=0)
    lo_g, hi_g = S.bootstrap_ci(S.inclusion_rate, z, n_boot=200, seed=0, groups=groups)
    assert (hi_g - lo_g)[0] == pytest.approx(1.0)
    assert (hi_r - lo_r)[0] < 0.15


def _reference_intervals(z, y, proba, groups, n_boot, seed):
    """Each statistic resampled on its own, row by row, by bootstrap_ci."""
    kw = {"n_boot": n_boot, "seed": seed, "groups": groups}
    return {
        "inclusion": S.bootstrap_ci(S.inclusion_rate, z, **kw),
        "co-membership": S.bootstrap_ci(S.comembership_rate, z, **kw),
        "phi": S.bootstrap_ci(lambda s: S.phi_matrix(s).phi, z, **kw),
        "soft": S.bootstrap_ci(S.soft_confusion, proba, y, **kw),
        "coverage confusion": S.bootstrap_ci(S.coverage_confusion, z, y, **kw),
    }


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(5, 60),
    k=st.integers(2, 5),
    n_groups=st.sampled_from([None, 1, 2, 7]),
)
def test_set_statistics_from_group_totals_match_resampling_the_rows(seed, n, k, n_groups):
    """The report's one-pass bootstrap draws the same resamples as bootstrap_ci and
    gives the same intervals: exactly for the 0/1 statistics, to rounding for the
    soft confusion matrix (floating-point probabilities summed in another order)."""
    rng = np.random.default_rng(seed)
    # Some classes in every set or in none, some true classes absent: NaN entries too.
    z = rng.random((n, k)) < rng.choice([0.0, 0.3, 0.7, 1.0], size=k)
    y = rng.integers(0, max(1, k - 1), size=n)
    proba = rng.dirichlet(np.ones(k), size=n)
    groups = None if n_groups is None else rng.integers(0, n_groups, size=n).astype(str)
    found = S.bootstrap_set_statistics(z, y, proba, n_boot=30, seed=seed, groups=groups)
    expected = _reference_intervals(z, y, proba, groups, 30, seed)
    assert set(found) == set(S.SET_STATISTICS) == set(expected)
    for name, (lo, hi) in expected.items():
        if name == "soft":
            np.testing.assert_allclose(found[name][0], lo, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(found[name][1], hi, rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_array_equal(found[name][0], lo, err_msg=name)
            np.testing.assert_array_equal(found[name][1], hi, err_msg=name)


def test_set_statistics_bootstrap_names_mismatched_inputs():
    z = np.zeros((4, 3), dtype=bool)
    with pytest.raises(DataError, match=r"scores: expected shape \(4, 3\)"):
        S.bootstrap_set_statistics(z, np.zeros(4, int), np.zeros((4, 2)))
    with pytest.raises(DataError, match=r"found 4 and 3"):
        S.bootstrap_set_statistics(z, np.zeros(3, int), np.zeros((4, 3)))
    with pytest.raises(DataError, match=r"groups: expected 4 rows"):
        S.bootstrap_set_statistics(z, np.zeros(4, int), np.zeros((4, 3)), groups=[1, 2])


def test_bad_inputs_name_what_was_expected():
    with pytest.raises(DataError, match=r"sets must be a 2-D boolean array"):
        S.cooccurrence_matrix(np.zeros(3, dtype=bool))
    with pytest.raises(DataError, match=r"class indices in 0..2"):
        S.confusion_matrix_colnorm(np.array([0, 3]), np.array([0, 1]), 3)
    with pytest.raises(DataError, match=r"same length"):
        S.confusion_matrix_colnorm(np.array([0, 1]), np.array([0]), 3)


@settings(max_examples=60, deadline=None)
@given(arrays(bool, st.tuples(st.integers(2, 40), st.integers(2, 6))))
def test_phi_properties(z):
    res = S.phi_matrix(z)
    finite = np.isfinite(res.phi)
    assert np.all(np.abs(res.phi[finite]) <= 1.0)
    np.testing.assert_allclose(res.phi, res.phi.T, equal_nan=True)
    com = S.comembership_rate(z)
    # A pair that never shares a set sits exactly at its floor.
    never = (com == 0) & finite
    np.fill_diagonal(never, False)
    np.testing.assert_allclose(res.phi[never], res.floor[never])
    # The co-occurrence matrix is the co-membership count off the diagonal.
    counts = S.cooccurrence_matrix(z)
    off = ~np.eye(z.shape[1], dtype=bool)
    np.testing.assert_allclose(counts[off], (com * z.shape[0])[off])
