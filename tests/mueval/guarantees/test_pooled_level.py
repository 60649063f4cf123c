"""The exact test of a pooled covered count (``mueval.guarantees.pooled_level``).

Every expected value is computed here another way: by hand, by enumeration,
by sampling the comonotone sum, or by simulating exchangeable scores and
counting rejections.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mueval.guarantees.covered_law import threshold_rank
from mueval.guarantees.pooled_level import (
    comonotone_pmf,
    comonotone_pvalue,
    pooled_pvalue,
    within_iteration,
)

ALPHA = 0.05


def _bb(m: int, n: int, k: int) -> np.ndarray:
    return stats.betabinom.pmf(np.arange(m + 1), m, k, n + 1 - k)


def test_comonotone_law_of_two_bernoullis_by_hand():
    # X1 = 1{U > 0.7}, X2 = 1{U > 0.4}: 0 on (0, 0.4], 1 on (0.4, 0.7], 2 above.
    law = comonotone_pmf([np.array([0.7, 0.3]), np.array([0.4, 0.6])])
    np.testing.assert_allclose(law, [0.4, 0.3, 0.3], atol=1e-15)


def test_comonotone_law_matches_sampling_the_quantiles():
    rng = np.random.default_rng(3)
    pmfs = [_bb(7, 20, 19), _bb(4, 30, 29), _bb(9, 12, 12)]
    law = comonotone_pmf(pmfs)
    u = rng.uniform(size=200_000)
    total = sum(np.searchsorted(np.cumsum(p), u, side="left") for p in pmfs)
    sampled = np.bincount(total, minlength=law.size) / u.size
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(sampled, law, atol=4e-3)


@pytest.mark.parametrize("covered", [0, 3, 10, 14, 19])
def test_comonotone_pvalue_is_the_smallest_bound_over_every_real_d(covered):
    law = comonotone_pmf([_bb(8, 20, 19), _bb(12, 40, 39)])
    values = np.arange(law.size)
    grid = np.linspace(covered + 1e-3, law.size, 20_000)
    bounds = [np.sum(law * np.clip(d - values, 0, None)) / (d - covered) for d in grid]
    found = comonotone_pvalue(covered, law)
    assert found <= min(1.0, min(bounds)) + 1e-12
    assert found >= min(1.0, min(bounds)) - 1e-3
    # Never below the exact tail of the bounding law itself.
    assert found >= law[: covered + 1].sum() - 1e-12


def test_combined_pooled_test_by_hand_mm_bonferroni():
    # MM, two iterations of 3 users sharing one 39-row calibration set per
    # iteration (study rank 39 at alpha 0.05): the total of an iteration is
    # BetaBinomial(60, 39, 1); p = min(1, 2 * min(p_1, p_2)).
    k = threshold_rank(39, ALPHA, "study")
    assert k == 39
    cells = pd.DataFrame(
        {
            "user": [1, 2, 3, 1, 2, 3],
            "iteration": [0, 0, 0, 1, 1, 1],
            "n_cal": 39,
            "rank": k,
            "n_test": 20,
            "n_covered": [19, 18, 17, 20, 20, 19],
        }
    )
    p1 = stats.betabinom.cdf(54, 60, 39, 1)
    p2 = stats.betabinom.cdf(59, 60, 39, 1)
    expected = min(1.0, 2 * min(p1, p2))
    got = pooled_pvalue(cells, dependence="shared", combine="bonferroni")
    assert got == pytest.approx(expected, rel=1e-10)


def test_combined_pooled_test_by_hand_udm_convolution():
    # UDM, two users, two iterations, independent everywhere: the total is the
    # sum of four independent Beta-Binomials, enumerated here by brute force.
    sizes = [(5, 20, 20), (3, 25, 25), (4, 20, 20), (6, 30, 30)]
    pmfs = [_bb(*s) for s in sizes]
    law = np.zeros(19)
    for a in range(6):
        for b in range(4):
            for c in range(5):
                for d in range(7):
                    law[a + b + c + d] += pmfs[0][a] * pmfs[1][b] * pmfs[2][c] * pmfs[3][d]
    cells = pd.DataFrame(
        {
            "user": [1, 2, 1, 2],
            "iteration": [0, 0, 1, 1],
            "n_test": [s[0] for s in sizes],
            "n_cal": [s[1] for s in sizes],
            "rank": [s[2] for s in sizes],
            "n_covered": [4, 3, 3, 5],
        }
    )
    got = pooled_pvalue(cells, dependence="independent", combine="convolution")
    assert got == pytest.approx(law[:16].sum(), rel=1e-10)


def test_dependence_per_strategy():
    assert [within_iteration(s) for s in ("mm", "udm", "uim", "ucm", "uam", "new")] == [
        "shared",
        "independent",
        "any",
        "any",
        "any",
        "any",
    ]


def _simulate(rng, design: str, iterations: int, users: int = 6, n: int = 19, m: int = 20):
    """Cells of one exchangeable run: every score N(0, 1).

    ``design``: "blocked" (one split, re-tested in every iteration),
    "shared" (the users share one calibration set per iteration, as under
    UIM's overlapping pools at their most dependent) or "independent".
    With 19 calibration rows the study's rank is 19, whose coverage
    Beta(19, 1) has mean 0.95 exactly: the null at its boundary.
    """
    k = threshold_rank(n, ALPHA, "study")
    rows = []
    fixed = None
    for it in range(iterations):
        if design == "blocked" and fixed is not None:
            counts = fixed
        else:
            common = np.sort(rng.normal(size=n))[k - 1]
            counts = []
            for _ in range(users):
                q = common if design == "shared" else np.sort(rng.normal(size=n))[k - 1]
                counts.append(int((rng.normal(size=m) <= q).sum()))
            fixed = counts
        rows += [
            {"user": u, "iteration": it, "n_cal": n, "rank": k, "n_test": m, "n_covered": c}
            for u, c in enumerate(counts)
        ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("design", "dependence", "combine"),
    [
        ("blocked", "independent", "bonferroni"),
        pytest.param("shared", "any", "bonferroni", marks=pytest.mark.slow),
        pytest.param("independent", "independent", "convolution", marks=pytest.mark.slow),
        pytest.param("independent", "any", "convolution", marks=pytest.mark.slow),
    ],
)
def test_level_holds_in_small_simulations(design, dependence, combine):
    # 200 exchangeable runs: the share rejected at 0.05 stays within two
    # standard errors (3.1 points) of 5 % or below.
    rng = np.random.default_rng(11)
    reps = 200
    rejected = sum(
        pooled_pvalue(_simulate(rng, design, 5), dependence=dependence, combine=combine) <= 0.05
        for _ in range(reps)
    )
    assert rejected / reps <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / reps)


def test_the_interval_rule_misses_its_level_when_rows_are_re_tested():
    # The rule this test replaces: the Clopper-Pearson upper bound of the pooled
    # rate below 1 - alpha (a one-sided 2.5 %). Re-testing one split in every
    # iteration multiplies the rows it counts, not the information: it fires
    # far more often than 2.5 % while the exact test stays at its level.
    rng = np.random.default_rng(5)
    reps, old, new = 150, 0, 0
    for _ in range(reps):
        cells = _simulate(rng, "blocked", 10)
        covered, n = int(cells["n_covered"].sum()), int(cells["n_test"].sum())
        old += stats.binom.cdf(covered, n, 1 - ALPHA) < 0.025
        new += pooled_pvalue(cells, dependence="independent", combine="bonferroni") <= 0.05
    assert old / reps > 0.10
    assert new / reps <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / reps)


@pytest.mark.slow
def test_the_run_family_holds_the_level_over_sixteen_pairs():
    # 16 (strategy, classifier) pairs of 8 valid users, each user's covered
    # count drawn from its exact null (one iteration: 40 test rows against a
    # 19-row calibration set, rank 19) and tested by user_verdicts. Within
    # each pair Holm holds 5 %, so a run of 16 independent pairs carries a
    # false flag far more often; over the run's 128 users, at most 5 %.
    from mueval.guarantees.user_level import user_verdicts

    rng = np.random.default_rng(2)
    reps, pairs, users = 200, 16, 8
    hits = {"run": 0, "pair": 0}
    for _ in range(reps):
        covered = stats.betabinom.rvs(40, 19, 1, size=pairs * users, random_state=rng)
        cells = pd.DataFrame(
            {
                "strategy": np.repeat([f"s{i // 4}" for i in range(pairs)], users),
                "classifier": np.repeat([f"c{i % 4}" for i in range(pairs)], users),
                "user": np.tile(np.arange(users), pairs),
                "iteration": 0,
                "n_cal": 19,
                "n_test": 40,
                "n_covered": covered,
                "rank": 19,
            }
        )
        for family in hits:
            table = user_verdicts(cells, alpha=ALPHA, family=family)
            hits[family] += bool(table["below"].any())
    assert hits["run"] / reps <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / reps)
    assert hits["pair"] / reps > 0.15
