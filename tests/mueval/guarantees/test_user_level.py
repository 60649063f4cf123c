"""The exact per-user null (mueval.guarantees.user_level) and the statements of the docs
that rest on threshold ranks.

Simulations are seeded and sized to run in about a second each; every
comparison with a simulation allows for its Monte Carlo error, and each null
check is paired with a wrong null that the same check rejects.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mueval.conformal.pvalues import conformal_pvalues
from mueval.conformal.sets import conformalize
from mueval.conformal.thresholds import lac_sets, lac_threshold, min_calibration_size
from mueval.guarantees.adjustment import adjust_pvalues, verdict_label
from mueval.guarantees.covered_law import covered_pmf, lower_pvalue, null_pmf, threshold_rank
from mueval.guarantees.user_level import NO_VERDICT_STRATEGIES, default_combine, user_verdicts

ALPHAS = (0.01, 0.05, 0.1, 0.2, 0.5, 0.6, 0.9, 0.99)


def chi_square_pvalue(observed: np.ndarray, pmf: np.ndarray) -> float:
    """Pearson's chi-square goodness of fit, cells with expected < 5 merged
    into their neighbours (so the asymptotic law holds)."""
    expected = pmf * observed.sum()
    obs_bins, exp_bins, o, e = [], [], 0.0, 0.0
    for oi, ei in zip(observed, expected, strict=True):
        o, e = o + oi, e + ei
        if e >= 5:
            obs_bins.append(o)
            exp_bins.append(e)
            o, e = 0.0, 0.0
    if exp_bins:
        obs_bins[-1] += o
        exp_bins[-1] += e
    obs_arr, exp_arr = np.array(obs_bins), np.array(exp_bins)
    statistic = float(((obs_arr - exp_arr) ** 2 / exp_arr).sum())
    return float(stats.chi2.sf(statistic, len(exp_arr) - 1))


def simulate_counts(rng: np.random.Generator, n: int, k: int, m: int, reps: int) -> np.ndarray:
    """Brute force: ``reps`` fresh calibration sets of ``n`` continuous scores,
    each with ``m`` test rows; the number of test scores at most the k-th smallest."""
    cal = rng.normal(size=(reps, n))
    q = np.partition(cal, k - 1, axis=1)[:, k - 1]
    test = rng.normal(size=(reps, m))
    return (test <= q[:, None]).sum(axis=1)


# ---------------------------------------------------------------------------
# The null distribution
# ---------------------------------------------------------------------------


def test_beta_binomial_matches_brute_force_and_binomial_does_not():
    rng = np.random.default_rng(19)
    n, m, reps = 39, 40, 20_000
    k = threshold_rank(n, 0.05, "study")  # 39: the largest score
    counts = simulate_counts(rng, n, k, m, reps)
    observed = np.bincount(counts, minlength=m + 1)
    assert chi_square_pvalue(observed, covered_pmf(m, n, k)) > 1e-3
    # The old null: rows as independent draws, at 1 - alpha or even at the
    # right mean coverage k / (n + 1). The same check rejects both.
    assert chi_square_pvalue(observed, stats.binom.pmf(np.arange(m + 1), m, 0.95)) < 1e-6
    same_mean = stats.binom.pmf(np.arange(m + 1), m, k / (n + 1))
    assert chi_square_pvalue(observed, same_mean) < 1e-6


def test_hand_computed_cases():
    # n = 1, k = 1: coverage is Beta(1, 1), uniform; the count of m rows is
    # uniform on 0..m.
    np.testing.assert_allclose(covered_pmf(4, 1, 1), np.full(5, 0.2))
    # One test row: covered with probability k / (n + 1).
    for n, k in [(19, 19), (20, 20), (39, 38), (5, 1)]:
        assert covered_pmf(1, n, k)[1] == pytest.approx(k / (n + 1))
    # No finite threshold: covered surely.
    assert covered_pmf(3, 7, 8).tolist() == [0, 0, 0, 1]
    assert lower_pvalue(3, [3], [7], [8]) == 1.0
    # Two rows, Beta(2, 1): P(none) = E[(1 - t)^2] = 2 * B(2, 3) / ... = 1/6.
    assert covered_pmf(2, 2, 2)[0] == pytest.approx(1 / 6)
    assert lower_pvalue(0, [2, 0], [2, 5], [2, 3]) == pytest.approx(1 / 6)


def test_convolution_matches_independent_iterations():
    rng = np.random.default_rng(7)
    plan = [(20, 20, 15), (39, 39, 10), (60, 58, 12)]  # (n, k, m) per iteration
    reps = 20_000
    total = sum(simulate_counts(rng, n, k, m, reps) for n, k, m in plan)
    m_total = sum(m for _, _, m in plan)
    pmf = null_pmf([m for *_, m in plan], [n for n, _, _ in plan], [k for _, k, _ in plan])
    assert pmf.size == m_total + 1
    assert pmf.sum() == pytest.approx(1.0)
    observed = np.bincount(total, minlength=m_total + 1)
    assert chi_square_pvalue(observed, pmf) > 1e-3
    # One iteration's law scaled up is not the law of the sum.
    wrong = null_pmf([m_total], [20], [20])
    assert chi_square_pvalue(observed, wrong) < 1e-6


def _split_counts(rng, pool_size, n, m, iterations, reps, fixed_target):
    """Sum over iterations of covered counts, with the user's rows fixed per run.

    ``fixed_target=False``: each iteration splits the user's own pool at
    random into calibration and test (UCM). ``True``: the user's test rows are
    one fixed pool reused in every iteration (as in UIM, where they recur),
    calibrated on fresh rows of other users.
    """
    totals = np.zeros(reps, dtype=int)
    for r in range(reps):
        pool = rng.normal(size=pool_size)
        for _ in range(iterations):
            if fixed_target:
                q = np.partition(rng.normal(size=n), n - 1)[n - 1]
                test = rng.choice(pool, size=m, replace=False)
            else:
                perm = rng.permutation(pool)
                q = np.partition(perm[:n], n - 1)[n - 1]
                test = perm[n : n + m]
            totals[r] += int((test <= q).sum())
    return totals


def test_random_splits_of_one_pool_are_independent_but_reused_test_rows_are_not():
    rng = np.random.default_rng(11)
    n, m, iterations, reps = 20, 20, 6, 2000
    pmf = null_pmf([m] * iterations, [n] * iterations, [n] * iterations)
    # UCM-like: one pool of the user's rows per run, split at random in every
    # iteration; given the pool, the iterations' counts are independent
    # Beta-Binomials, so their sum follows the convolution.
    own = _split_counts(rng, 2 * n, n, m, iterations, reps, fixed_target=False)
    assert chi_square_pvalue(np.bincount(own, minlength=pmf.size), pmf) > 1e-3
    # UIM-like: the user's test rows are drawn from one pool reused by every
    # iteration; the shared pool makes the counts dependent, and the same
    # check rejects the convolution.
    reused = _split_counts(rng, 2 * m, n, m, iterations, reps, fixed_target=True)
    assert chi_square_pvalue(np.bincount(reused, minlength=pmf.size), pmf) < 1e-6


# ---------------------------------------------------------------------------
# Ranks against the project's threshold code
# ---------------------------------------------------------------------------

SIZES = [*range(1, 61), 99, 100, 199, 200, 399, 400, 401, 999, 1000]


@pytest.mark.parametrize("alpha", ALPHAS)
def test_rank_is_the_order_statistic_of_lac_threshold(alpha):
    rng = np.random.default_rng(int(alpha * 1000))
    for n, rule in itertools.product(SIZES, ("study", "mapie")):
        scores = rng.uniform(size=n)
        q = lac_threshold(scores, alpha, rule=rule)
        k = threshold_rank(n, alpha, rule)
        assert 1 <= k <= n + 1
        if k > n:
            assert q == np.inf, (n, alpha, rule)
        else:
            assert q == np.sort(scores)[k - 1], (n, alpha, rule, k)


@pytest.mark.parametrize("rule", ["study", "mapie"])
@pytest.mark.parametrize("n", [20, 39, 59, 199, 200])
def test_rank_matches_conformalize_sets(rule, n):
    """The sets that conformalize returns (MAPIE 1.x's own under "mapie") keep a
    test row exactly when its score is at most the k-th smallest calibration score."""
    rng = np.random.default_rng(n)
    alpha = 0.05
    p_true = rng.uniform(0.3, 1.0, size=n)  # continuous scores 1 - p
    proba_cal = np.column_stack([p_true, 1 - p_true])
    p_test = rng.uniform(0.3, 1.0, size=400)
    proba_test = np.column_stack([p_test, 1 - p_test])
    out = conformalize(proba_cal, np.zeros(n, dtype=int), proba_test, alpha=alpha, threshold=rule)
    k = threshold_rank(n, alpha, rule)
    q = np.sort(1 - p_true)[k - 1]
    assert out.threshold == q
    np.testing.assert_array_equal(out.sets[:, 0], (1 - p_test) <= q)


@pytest.mark.parametrize("rule", ["study", "mapie"])
def test_mondrian_cells_use_their_own_rank(rule):
    rng = np.random.default_rng(3)
    alpha = 0.05
    sizes = {0: 18, 1: 19, 2: 20, 3: 39}
    y_cal = np.repeat(list(sizes), list(sizes.values()))
    proba_cal = rng.dirichlet(np.ones(4), size=y_cal.size)
    proba_test = rng.dirichlet(np.ones(4), size=500)
    out = conformalize(proba_cal, y_cal, proba_test, alpha=alpha, mondrian=True, threshold=rule)
    for c, n in sizes.items():
        k = threshold_rank(n, alpha, rule)
        own = 1 - proba_cal[y_cal == c, c]
        expected = (
            np.ones(500, dtype=bool) if k > n else (1 - proba_test[:, c]) <= np.sort(own)[k - 1]
        )
        np.testing.assert_array_equal(out.sets[:, c], expected, err_msg=f"class {c}, n={n}")


# ---------------------------------------------------------------------------
# Holm and Benjamini-Hochberg against their definitions
# ---------------------------------------------------------------------------


def holm_brute(p: np.ndarray, level: float) -> np.ndarray:
    """Holm (1979): reject p_(1)..p_(i-1), i the first with p_(i) > level/(m-i+1)."""
    m = p.size
    order = np.argsort(p, kind="stable")
    reject = np.zeros(m, dtype=bool)
    for i, j in enumerate(order, start=1):
        if p[j] > level / (m - i + 1):
            break
        reject[j] = True
    return reject


def bh_brute(p: np.ndarray, level: float) -> np.ndarray:
    """Benjamini-Hochberg (1995): reject every p <= p_(i*), i* the largest i
    with p_(i) <= i level / m."""
    m = p.size
    ranked = np.sort(p)
    passing = [i for i in range(1, m + 1) if ranked[i - 1] <= i * level / m]
    if not passing:
        return np.zeros(m, dtype=bool)
    return p <= ranked[max(passing) - 1]


def on_a_boundary(p: np.ndarray, level: float) -> bool:
    """Whether a p-value equals one of the procedures' critical values (to
    1e-12), where the two float forms of the comparison may disagree."""
    m = p.size
    i = np.arange(1, m + 1)
    critical = np.r_[i * level / m, level / (m - i + 1)]
    return bool(np.isclose(p[:, None], critical[None, :], rtol=0, atol=1e-12).any())


def test_holm_and_bh_agree_with_their_definitions():
    rng = np.random.default_rng(5)
    for trial in range(400):
        m = int(rng.integers(1, 13))
        p = rng.uniform(0, 0.2, size=m) if trial % 2 else rng.beta(0.3, 2, size=m)
        if trial % 5 == 0:
            p = np.round(p, 2)  # ties
        for level in (0.01, 0.05, 0.1, 0.2):
            if on_a_boundary(p, level):
                continue  # p * m / i and i * level / m round differently there
            np.testing.assert_array_equal(adjust_pvalues(p, "holm") <= level, holm_brute(p, level))
            np.testing.assert_array_equal(adjust_pvalues(p, "bh") <= level, bh_brute(p, level))
        np.testing.assert_array_equal(adjust_pvalues(p, "none"), p)


def test_users_without_verdict_are_left_out_of_the_family():
    p = np.array([0.01, np.nan, 0.02])
    adjusted = adjust_pvalues(p, "holm")
    assert np.isnan(adjusted[1])
    np.testing.assert_allclose(adjusted[[0, 2]], [0.02, 0.02])


# ---------------------------------------------------------------------------
# Level: valid users are flagged at most at the stated level
# ---------------------------------------------------------------------------


def exact_size(pmf: np.ndarray, level: float) -> float:
    """P(p-value <= level) under the null: the test's exact size."""
    cdf = np.cumsum(pmf)
    return float(pmf[cdf <= level + 1e-12].sum())


def test_false_flag_rate_of_valid_users_is_the_exact_size():
    rng = np.random.default_rng(23)
    n, m, iterations, users, reps = 20, 20, 4, 8, 1500
    k = threshold_rank(n, 0.05, "study")
    pmf = null_pmf([m] * iterations, [n] * iterations, [k] * iterations)
    cdf = np.cumsum(pmf)
    counts = sum(simulate_counts(rng, n, k, m, reps * users) for _ in range(iterations))
    pvalues = np.minimum(1.0, cdf[counts]).reshape(reps, users)
    level = 0.05
    size = exact_size(pmf, level)
    assert size <= level
    rate = float((pvalues <= level).mean())
    se = np.sqrt(size * (1 - size) / pvalues.size)
    assert abs(rate - size) < 4 * se
    # Holm across the 8 users: any flag in at most `level` of the runs.
    any_flag = np.array([(adjust_pvalues(row, "holm") <= level).any() for row in pvalues])
    assert any_flag.mean() <= level + 3 * np.sqrt(level * (1 - level) / reps)


def test_user_verdicts_table():
    rng = np.random.default_rng(2)
    rows = []
    for user, iteration in itertools.product(range(6), range(3)):
        rows.append(
            {
                "strategy": "ucm",
                "classifier": "rf",
                "user": user,
                "iteration": iteration,
                "n_cal": 39,
                "n_test": 40,
                "n_covered": 20 if user == 5 else int(rng.binomial(40, 0.97)),
            }
        )
    cells = pd.DataFrame(rows)
    out = user_verdicts(cells, alpha=0.05, rule="study", correction="holm")
    assert out["combine"].eq("convolution").all()
    assert [default_combine(s) for s in ("mm", "udm", "uim", "ucm", "uam", "new")] == [
        "bonferroni",
        "convolution",
        "bonferroni",
        "convolution",
        "convolution",
        "bonferroni",
    ]
    assert out.set_index("user")["below"].to_dict()[5]
    k = threshold_rank(39, 0.05, "study")
    expected_p = lower_pvalue(60, [40] * 3, [39] * 3, [k] * 3)
    assert out.set_index("user").loc[5, "p_value"] == pytest.approx(expected_p)
    assert out.set_index("user").loc[5, "p_adjusted"] == pytest.approx(min(1.0, 6 * expected_p))
    assert out.set_index("user").loc[5, "expected_covered"] == pytest.approx(120 * k / 40)
    # Bonferroni over iterations: 3 times the smallest iteration's p-value.
    out_b = user_verdicts(cells, alpha=0.05, rule="study", combine="bonferroni", correction="none")
    p_one = lower_pvalue(20, [40], [39], [k])
    assert out_b.set_index("user").loc[5, "p_value"] == pytest.approx(min(1.0, 3 * p_one))
    # A blocked split tests the same rows in every iteration: Bonferroni.
    out_blocked = user_verdicts(cells, alpha=0.05, rule="study", split="blocked")
    assert out_blocked["combine"].eq("bonferroni").all()
    # uxc: no verdict.
    out_x = user_verdicts(cells.assign(strategy="uxc"), alpha=0.05, rule="mapie")
    assert out_x["p_value"].isna().all() and out_x["below"].isna().all()
    assert verdict_label(0.05, "holm") == "below target at level 0.05 after Holm"


def test_mondrian_cells_and_full_sets_in_the_table():
    cells = pd.DataFrame(
        {
            "strategy": "mm",
            "classifier": "nb",
            "user": 1,
            "iteration": [0, 0, 0],
            "n_cal": [10, 19, 40],
            "n_test": [5, 6, 7],
            "n_covered": [5, 6, 5],
            "mondrian": True,
        }
    )
    out = user_verdicts(cells, alpha=0.05, rule="study", correction="none")
    # The 10-row cell holds its class in every set (point mass at 5 covered).
    ranks = [threshold_rank(n, 0.05, "study") for n in (10, 19, 40)]
    assert ranks[0] == 11
    expected = lower_pvalue(16, [5, 6, 7], [10, 19, 40], ranks)
    assert out.loc[0, "p_value"] == pytest.approx(expected)
    # A non-Mondrian set below the minimum only has sets under --small-cal full-set.
    small = cells.iloc[[0]].assign(mondrian=False)
    with pytest.raises(ValueError, match="small_cal"):
        user_verdicts(small, alpha=0.05, rule="study")
    full = user_verdicts(small, alpha=0.05, rule="study", small_cal="full-set")
    assert full.loc[0, "p_value"] == 1.0


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match="correction must be one of .*found 'bonf'"):
        adjust_pvalues([0.1], "bonf")
    with pytest.raises(ValueError, match="lacks the columns"):
        user_verdicts(pd.DataFrame({"user": [1]}), alpha=0.05, rule="study")
    with pytest.raises(ValueError, match="1 <= k <= n"):
        covered_pmf(3, 5, 7)


# ---------------------------------------------------------------------------
# The docs' statements (docs/per-user-guarantees.md, docs/protocol.md)
# ---------------------------------------------------------------------------


def test_statement_1_a_19_row_cell_is_not_in_every_set():
    """At alpha = 0.05 a 19-row cell (below the minimum of 20) has a finite
    threshold under both rules, its largest score, so its class is left out of
    the sets of test rows that score above it (in 1 of 20 on average)."""
    alpha = 0.05
    assert min_calibration_size(alpha) == 20
    for rule in ("study", "mapie"):
        assert threshold_rank(19, alpha, rule) == 19
        assert threshold_rank(18, alpha, rule) == 19  # 18 rows: every set
    # The first size with a finite threshold is ceil((1 - alpha) / alpha).
    for alpha_ in (0.01, 0.05, 0.1, 0.2, 0.3):
        first = next(n for n in range(1, 1000) if threshold_rank(n, alpha_, "mapie") <= n)
        assert first == int(np.ceil((1 - alpha_) / alpha_ - 1e-9))
        assert first == next(n for n in range(1, 1000) if threshold_rank(n, alpha_, "study") <= n)
    # And conformalize drops class 1 (19 calibration rows) from a set.
    rng = np.random.default_rng(0)
    y_cal = np.r_[np.zeros(30, dtype=int), np.ones(19, dtype=int)]
    proba_cal = np.column_stack([rng.uniform(0.5, 0.9, 49), np.zeros(49)])
    proba_cal[:, 1] = 1 - proba_cal[:, 0]
    proba_cal[y_cal == 1] = proba_cal[y_cal == 1][:, ::-1]
    worst = np.sort(1 - proba_cal[y_cal == 1, 1])[-1]
    test = np.array([[1 - (1 - worst) / 2, (1 - worst) / 2]])  # class 1 scores above it
    for rule in ("study", "mapie"):
        out = conformalize(proba_cal, y_cal, test, alpha=alpha, mondrian=True, threshold=rule)
        assert not out.sets[0, 1]


def test_statement_2_the_rank_is_never_below_one():
    """ceil((n + 1)(1 - alpha)) >= 1 for every alpha < 1: no rule empties every
    set; above alpha = 0.5 the 1/(1 - alpha) term only refuses calibration sets
    whose finite threshold is valid."""
    for alpha, n, rule in itertools.product(ALPHAS, range(1, 200), ("study", "mapie")):
        k = threshold_rank(n, alpha, rule)
        assert k >= 1
        # Validity of a finite threshold: mean coverage k / (n + 1) >= 1 - alpha.
        if k <= n:
            assert k / (n + 1) >= 1 - alpha - 1e-12
    alpha = 0.9
    assert min_calibration_size(alpha) == 10
    refused = [n for n in range(1, 10) if threshold_rank(n, alpha, "mapie") <= n]
    assert refused == list(range(1, 10))  # rank 1 (the smallest score) for each


def test_statement_3_rules_differ_from_n_39_not_19():
    differ = [
        n
        for n in range(1, 2001)
        if threshold_rank(n, 0.05, "study") != threshold_rank(n, 0.05, "mapie")
    ]
    assert 19 not in differ
    assert differ == list(range(39, 2001, 20))
    for n in differ:
        assert threshold_rank(n, 0.05, "study") == threshold_rank(n, 0.05, "mapie") + 1


def test_rank_formulas_in_exact_arithmetic():
    """The module docstring's closed forms, in exact rational arithmetic, agree
    with threshold_rank except where the code's floats round x up past an
    integer; there the float rank is one higher (more conservative)."""
    from fractions import Fraction

    exceptions = 0
    for text, n in itertools.product(("0.01", "0.05", "0.1", "0.3", "0.7", "0.9"), range(1, 600)):
        alpha = Fraction(text)
        x = (n + 1) * (1 - alpha)
        if x > n:
            assert threshold_rank(n, float(alpha), "mapie") == n + 1
            continue
        mapie, study = math.ceil(x), math.ceil(x * (n - 1) / n) + 1
        frac = x - math.floor(x)
        assert (study == mapie + 1) == ((frac == 0 and x < n) or frac > x / n)
        assert study - mapie in (0, 1)
        for rule, exact in (("mapie", mapie), ("study", study)):
            got = threshold_rank(n, float(alpha), rule)
            if got != exact:
                exceptions += 1
                assert got == exact + 1 and float((n + 1) * (1 - float(alpha))) > x
    assert 0 < exceptions < 200  # alpha = 0.7: 1 - 0.7 = 0.30000000000000004


def test_statement_4_coverage_and_p_above_alpha():
    """Without tolerance, a rank-k threshold covers a row exactly when its
    p-value is at least (n + 2 - k)/(n + 1); for MAPIE's rank that is p > alpha.
    The rules' tolerances also cover scores a hair above the threshold."""
    rng = np.random.default_rng(4)
    for n, alpha, rule in itertools.product(
        (20, 39, 57, 200), (0.05, 0.1, 0.2), ("study", "mapie")
    ):
        cal = np.round(rng.uniform(size=n), 2)  # ties included
        test = np.round(rng.uniform(size=(300, 1)), 2)
        k = threshold_rank(n, alpha, rule)
        covered = test[:, 0] <= np.sort(cal)[k - 1]
        p = conformal_pvalues(cal, test)[:, 0]
        np.testing.assert_array_equal(covered, p >= (n + 2 - k) / (n + 1) - 1e-12)
        if rule == "mapie":
            np.testing.assert_array_equal(covered, p > alpha)
    # The tolerance: a score 5e-9 above MAPIE's threshold is in its set, p <= alpha.
    cal = np.linspace(0.01, 0.5, 20)  # 20 scores; threshold = largest at 0.05
    q = lac_threshold(cal, 0.05, rule="mapie")
    proba = np.array([[1 - (q + 5e-9), q + 5e-9]])
    assert lac_sets(proba, q, rule="mapie")[0, 0]
    assert conformal_pvalues(cal, 1 - proba[:, [0]])[0, 0] <= 0.05
    # The study's machine-epsilon comparison of p - (1 - q): the next float
    # above a threshold of 0.5 is kept, with p = 1/21 <= alpha.
    cal = np.linspace(0.025, 0.5, 20)
    q = lac_threshold(cal, 0.05, rule="study")
    s = np.nextafter(q, 1.0)
    assert q == 0.5 and s > q
    assert lac_sets(np.array([[1 - s, s]]), q, rule="study")[0, 0]
    assert conformal_pvalues(cal, np.array([[s]]))[0, 0] == pytest.approx(1 / 21)


def test_statement_6_row_pooling_weights_users_equally_only_with_equal_counts():
    """uxc's pooled count over non-target users, divided by n, is the
    user-equal-weight mean of each user's share when every user has the same
    number of rows, and not otherwise."""
    rng = np.random.default_rng(6)
    s = 0.4
    for sizes, equal in [((50, 50, 50), True), ((20, 50, 130), False)]:
        users = [rng.uniform(size=size) * (1 + u) / 2 for u, size in enumerate(sizes)]
        pooled = sum((u >= s).sum() for u in users) / sum(sizes)
        per_user = np.mean([(u >= s).mean() for u in users])
        assert bool(pooled == pytest.approx(per_user)) is equal
    # {p > alpha} is MAPIE's rank without its 1e-8 tolerance (see statement 4).


def _verdicts_user_by_user(cells, combine=None, split="random", **options):
    """The brute-force reference: one pandas group per user, as the table was first built."""
    frame = cells.copy()
    frame["rank"] = frame["rank"].astype(float)
    rows = []
    for (strategy, classifier, user), group in frame.groupby(
        ["strategy", "classifier", "user"], sort=True
    ):
        how = combine or default_combine(str(strategy), split)
        if group["rank"].isna().any() or strategy in NO_VERDICT_STRATEGIES:
            p = expected = math.nan
        else:
            m = group["n_test"].to_numpy(dtype=np.int64)
            n = group["n_cal"].to_numpy(dtype=np.int64)
            k = group["rank"].to_numpy(dtype=np.int64)
            expected = float(np.sum(m * np.where(k > n, 1.0, k / (n + 1))))
            if how == "convolution":
                p = lower_pvalue(int(group["n_covered"].sum()), m, n, k)
            else:
                per_iteration = [
                    lower_pvalue(int(g["n_covered"].sum()), g["n_test"], g["n_cal"], g["rank"])
                    for _, g in group.groupby("iteration")
                ]
                p = float(min(1.0, len(per_iteration) * min(per_iteration)))
        rows.append(
            {
                "strategy": strategy,
                "classifier": classifier,
                "user": user,
                "n_iterations": int(group["iteration"].nunique()),
                "n_test": int(group["n_test"].sum()),
                "n_covered": int(group["n_covered"].sum()),
                "expected_covered": expected,
                "p_value": p,
            }
        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("combine", [None, "convolution", "bonferroni"])
def test_user_verdicts_equal_the_user_by_user_reference(seed, combine):
    # Hostile: users with one cell and one test row, Mondrian cells (several
    # rows per iteration), no covered row, full sets (rank n + 1), no verdict
    # (uxc, nan ranks), users in no particular order, ids "2" and "10".
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 60))
    n_test = rng.integers(1, 12, n_rows)
    n_cal = rng.integers(19, 60, n_rows)
    rank = np.array([threshold_rank(int(n), 0.1, "study") for n in n_cal], dtype=float)
    rank[rng.random(n_rows) < 0.1] = np.nan
    full = rng.random(n_rows) < 0.1
    rank[full] = n_cal[full] + 1
    cells = pd.DataFrame(
        {
            "strategy": rng.choice(["ucm", "uim", "mm", "uxc"], n_rows),
            "classifier": rng.choice(["nb", "rf"], n_rows),
            "user": rng.choice(["1", "2", "10", "S3"], n_rows),
            "iteration": rng.integers(1, 4, n_rows),
            "n_cal": n_cal,
            "n_test": n_test,
            "n_covered": (n_test * rng.choice([0.0, 0.5, 1.0], n_rows)).astype(int),
            "rank": rank,
        }
    )
    out = user_verdicts(cells, alpha=0.1, combine=combine)
    expected = _verdicts_user_by_user(cells, combine=combine)
    columns = list(expected.columns)
    pd.testing.assert_frame_equal(out[columns], expected)
    assert out["combine"].tolist() == [combine or default_combine(s) for s in expected["strategy"]]
