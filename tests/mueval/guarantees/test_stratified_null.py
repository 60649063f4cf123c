"""The exact null of the covered count under a class-stratified split
(mueval.guarantees.stratified_null), against brute force.

Three independent checks: exact enumeration of every stratified split of tiny
pools, the Beta-Binomial (a different formula) for one class, and the real
splitter (scikit-learn's stratified ``train_test_split`` through
``mueval.evaluation.row_splits.split_rows``) with the real threshold code on fixed
scores. Each law check is paired with the wrong law (the Beta-Binomial where
classes differ) that the same check rejects.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from mueval.conformal.thresholds import lac_threshold
from mueval.evaluation.row_splits import split_rows
from mueval.guarantees.covered_law import covered_pmf, lower_pvalue, threshold_rank
from mueval.guarantees.stratified_null import (
    hypergeom_pmf,
    pooled_classes,
    stratified_pmf,
    stratified_pvalue,
)
from tests.mueval.guarantees.test_user_level import chi_square_pvalue


def enumerate_pmf(order: np.ndarray, sizes: np.ndarray, k: int) -> np.ndarray:
    """Every way of choosing ``sizes[c]`` calibration rows in each class, equally
    likely: the law of the number of test rows before the k-th calibration row."""
    n = int(sizes.sum())
    m = len(order) - n
    counts = np.zeros(m + 1)
    places = [np.flatnonzero(order == c) for c in range(len(sizes))]
    choices = [list(itertools.combinations(p, int(s))) for p, s in zip(places, sizes, strict=True)]
    for pick in itertools.product(*choices):
        cal = np.zeros(len(order), dtype=bool)
        for rows in pick:
            cal[list(rows)] = True
        if k > n:
            counts[m] += 1
            continue
        t = np.flatnonzero(cal)[k - 1]
        counts[int((~cal[:t]).sum())] += 1
    return counts / counts.sum()


def test_hypergeometric_matches_scipy():
    for total, marked, draws in [(10, 3, 4), (7, 7, 2), (9, 0, 5), (12, 5, 12), (30, 12, 17)]:
        expected = stats.hypergeom.pmf(np.arange(marked + 1), total, marked, draws)
        np.testing.assert_allclose(hypergeom_pmf(total, marked, draws), expected, atol=1e-13)


def test_exact_enumeration_of_every_stratified_split():
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(40):
        n_classes = int(rng.integers(1, 4))
        order = rng.integers(0, n_classes, int(rng.integers(4, 11)))
        totals = np.bincount(order, minlength=n_classes)
        sizes = np.array([rng.integers(0, t + 1) for t in totals])
        n = int(sizes.sum())
        if n == 0 or n == len(order):
            continue
        for k in range(1, n + 2):
            np.testing.assert_allclose(
                stratified_pmf(order, sizes, k), enumerate_pmf(order, sizes, k), atol=1e-12
            )
            checked += 1
    assert checked > 100


@pytest.mark.parametrize(("n", "m"), [(19, 21), (40, 39), (100, 100)])
def test_one_class_is_the_beta_binomial_whatever_the_order(n, m):
    for rule in ("study", "mapie"):
        k = threshold_rank(n, 0.05, rule)
        got = stratified_pmf(np.zeros(n + m, dtype=int), [n], k)
        np.testing.assert_allclose(got, covered_pmf(m, n, k), atol=1e-12)


def test_classes_apart_are_narrower_than_the_beta_binomial():
    # 20 classes whose scores do not overlap, 10 rows each, half calibrating:
    # the threshold falls in the top class, and only its rows vary.
    order = np.repeat(np.arange(20), 10)
    sizes = np.full(20, 5)
    k = threshold_rank(100, 0.05, "study")
    exact = stratified_pmf(order, sizes, k)
    beta = covered_pmf(100, 100, k)
    x = np.arange(101)
    var = lambda p: float((p * x**2).sum() - (p * x).sum() ** 2)  # noqa: E731
    assert var(exact) < var(beta) / 3
    # The classes interleaved at random: close to the Beta-Binomial again.
    mixed = stratified_pmf(np.random.default_rng(0).permutation(order), sizes, k)
    assert abs(var(mixed) - var(beta)) < var(beta) / 3


def simulate_splitter(scores: np.ndarray, y: np.ndarray, reps: int) -> np.ndarray:
    """UCM's split (test first, half of each class) of one user's fixed scores,
    ``reps`` seeds, thresholded by the study rule's code: covered counts."""
    idx = np.arange(len(y))
    counts = []
    for seed in range(reps):
        test, cal = split_rows(idx, y, 0.5, seed, what="test")
        q = lac_threshold(scores[cal], 0.05, rule="study")
        counts.append(int((scores[test] <= q).sum()))
    return np.array(counts)


def test_the_real_splitter_follows_the_exact_law_and_not_the_beta_binomial():
    rng = np.random.default_rng(11)
    y = np.repeat(np.arange(4), [30, 20, 20, 10])  # even counts: the split sizes are fixed
    # Classes with different score levels (a model better on some classes), overlapping.
    scores = rng.normal(loc=np.array([0.0, 1.0, 2.5, 4.0])[y], scale=0.7)
    reps = 1000
    counts = simulate_splitter(scores, y, reps)
    order = pooled_classes(scores, y, np.empty(0), np.empty(0, dtype=int))
    sizes = np.bincount(y) // 2
    k = threshold_rank(40, 0.05, "study")
    exact = stratified_pmf(order, sizes, k)
    observed = np.bincount(counts, minlength=41)
    assert chi_square_pvalue(observed, exact) > 1e-3
    assert chi_square_pvalue(observed, covered_pmf(40, 40, k)) < 1e-6


def test_pooled_classes_ignore_roles_and_break_ties_by_class():
    cal, cal_y = np.array([0.2, 0.5, 0.5]), np.array([1, 0, 1])
    test, test_y = np.array([0.5, 0.1]), np.array([0, 1])
    first = pooled_classes(cal, cal_y, test, test_y)
    # The same pooled rows with the roles swapped: the same sequence.
    swapped = pooled_classes(test, test_y, cal, cal_y)
    assert first.tolist() == swapped.tolist() == [1, 1, 0, 0, 1]


@pytest.mark.slow
def test_level_under_the_null_and_power_against_the_beta_binomial():
    """Valid users (rows exchangeable within class), 20 iterations of UCM's split,
    convolved: the false-flag rate at 0.05 is at most 0.05 (plus Monte Carlo
    error), and the exact null's p-values are never far above the
    Beta-Binomial's in this case of classes with different score levels."""
    rng = np.random.default_rng(5)
    y = np.repeat(np.arange(5), 16)
    users, level, flags_exact, flags_beta = 150, 0.05, 0, 0
    for _ in range(users):
        scores = rng.normal(loc=1.5 * y, scale=0.5)
        idx = np.arange(len(y))
        pmfs, covered, m, n, k = [], 0, [], [], []
        for seed in rng.integers(0, 2**31, 20):
            test, cal = split_rows(idx, y, 0.5, int(seed), what="test")
            rank = threshold_rank(len(cal), 0.05, "study")
            covered += int((scores[test] <= np.sort(scores[cal])[rank - 1]).sum())
            order = pooled_classes(scores[cal], y[cal], scores[test], y[test])
            pmfs.append(stratified_pmf(order, np.bincount(y[cal], minlength=5), rank))
            m, n, k = [*m, len(test)], [*n, len(cal)], [*k, rank]
        flags_exact += stratified_pvalue(covered, pmfs) <= level
        flags_beta += lower_pvalue(covered, m, n, k) <= level
    # One-sided binomial bound: 0.05 of 150 users is 7.5, 99.9 % upper bound 17.
    assert flags_exact <= stats.binom.ppf(0.999, users, level)
    assert flags_beta <= flags_exact + 3


def test_the_exact_null_flags_a_shifted_user_more_often():
    """The same user with its test rows' scores raised by 0.1 (a user who
    changed between the calibration and the test rows), 5 iterations: the exact null flags it far more often
    than the Beta-Binomial."""
    rng = np.random.default_rng(8)
    y = np.repeat(np.arange(5), 16)
    runs, exact_flags, beta_flags = 60, 0, 0
    for _ in range(runs):
        idx = np.arange(len(y))
        pmfs, covered, m, n, k = [], 0, [], [], []
        for seed in rng.integers(0, 2**31, 5):
            scores = rng.normal(loc=1.5 * y, scale=0.3)
            test, cal = split_rows(idx, y, 0.5, int(seed), what="test")
            rank = threshold_rank(len(cal), 0.05, "study")
            shifted = scores[test] + 0.1
            covered += int((shifted <= np.sort(scores[cal])[rank - 1]).sum())
            order = pooled_classes(scores[cal], y[cal], scores[test], y[test])
            pmfs.append(stratified_pmf(order, np.bincount(y[cal], minlength=5), rank))
            m, n, k = [*m, len(test)], [*n, len(cal)], [*k, rank]
        exact_flags += stratified_pvalue(covered, pmfs) <= 0.05
        beta_flags += lower_pvalue(covered, m, n, k) <= 0.05
    # Seeded: 16 of 60 against 7 of 60.
    assert exact_flags >= 2 * beta_flags
    assert exact_flags >= beta_flags + 6


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match="class codes"):
        stratified_pmf([0, 3], [1, 0], 1)
    with pytest.raises(ValueError, match="exceeds"):
        stratified_pmf([0, 0, 1], [3, 0], 1)
    with pytest.raises(ValueError, match="k <= n"):
        stratified_pmf([0, 0, 1], [1, 0], 3)
    with pytest.raises(ValueError, match="covered"):
        stratified_pvalue(3, [np.array([0.5, 0.5])])
    with pytest.raises(ValueError, match="nan"):
        pooled_classes(np.array([np.nan]), np.array([0]), np.empty(0), np.empty(0, dtype=int))


def test_decoded_orders_renumber_classes_and_bad_files_are_data_errors():
    import pandas as pd

    from mueval.errors import DataError
    from mueval.guarantees.stratified_null import cell_laws, decode_order, task_pmf

    order, sizes, m = decode_order([5, -(10**12) - 1, -6, 10**12])
    assert order.tolist() == [0, 1, 0, 1] and sizes.tolist() == [1, 1] and m == 2
    np.testing.assert_allclose(
        task_pmf([5, -(10**12) - 1, -6, 10**12], 2), task_pmf([0, -2, -1, 1], 2)
    )
    cells = pd.DataFrame(
        {
            "strategy": "ucm",
            "classifier": "nb",
            "user": [1, 2, 3],
            "iteration": 1,
            "n_cal": [2, 2, 2],
            "n_test": [2, 2, 2],
            "pooled_order": [[0, 1, -2, -1], None, [0, -1, -1, -2]],
        }
    )
    with pytest.raises(DataError, match="user 3: pooled_order holds 1 calibration and 3 test"):
        cell_laws(cells, [2, 2, 2])
    laws = cell_laws(cells.iloc[:2], [2, 2])
    assert laws[1] is None and laws[0].round(4).tolist() == [0.25, 0.25, 0.5]
    with pytest.raises(DataError, match="outside -2..1"):
        cell_laws(cells.iloc[:1].assign(pooled_order=[[0, 7, -1, -2]]), [2], n_classes=2)
    with pytest.raises(DataError, match="whole class codes"):
        cell_laws(cells.iloc[:1].assign(pooled_order=[[0.5, 1.0, -1.0, -2.0]]), [2])
