"""Coverage over overlapping cohorts: the conditional guarantee of Gibbs, Cherian and Candès.

Gibbs, Cherian and Candès (2023, "Conformal prediction with conditional
guarantees") fit a quantile regression of the conformity scores on a class
``F`` of functions of ``x`` and threshold each test point by its fitted value.
Here ``F`` is the linear span of an intercept and the indicators of cohorts of
users (``--condition cohorts:sex,age,device``): every cohort of every column,
and the cells of ``A*B`` terms. Their Theorem gives, for every nonnegative
``f`` in ``F``,

    E[f(X) 1{Y in C(X)}] >= (1 - alpha) E[f(X)],

so coverage is at least 1 - alpha within every cohort the span holds (each
cohort of each column, hence overlapping ones at once, and each intersection
named by a ``*`` term), not only on average. An intersection no term names is
not in the span, and has no guarantee.

The set of a test point ``x`` with cohort indicators ``phi`` is
``{y : S(x, y) <= g_S(x)}``, where ``g_S`` minimises the pinball loss at level
1 - alpha over the calibration scores and the test point imputed with score
``S``, the inequality holding for every minimiser (where the minimisers form
a segment, for its lowest end). This is the paper's dual rule
``eta_{n+1}(S) < 1 - alpha``, the unrandomised (conservative) form, which the
authors' own code also computes (the randomised form, exact coverage, is
:func:`randomized_thresholds`). It is a threshold on ``S``, and the threshold
depends on ``x`` only through ``phi``: one linear programme per distinct
cohort pattern of the test rows.

**The threshold.** Impute the test score above every fitted value (``S = M``,
``M`` large): the test point then sits above the fit, its loss is
``(1 - alpha)(M - phi . beta)``, and the programme is

    min_beta  sum_i rho(S_i - Phi_i beta) - (1 - alpha) phi . beta

(``M`` drops out). Let ``q = phi . beta*``, ``beta*`` its optimum (the lowest
at ``x`` where several). For ``S`` above ``q`` that fit stays optimal, with
``g_S(x) = q < S``: ``S`` is left out. For ``S`` at or below ``q`` every
optimal fit reaches ``S`` at ``x``: ``S`` is in. The tests check both against
the augmented programme solved by brute force (every vertex) at every ``S``
of a grid. The programme is solved through its dual, a linear programme with
one variable per calibration row and one constraint per design column,

    max_eta  sum_i eta_i S_i   s.t.  Phi^T eta = -(1 - alpha) phi,
                                      -alpha <= eta_i <= 1 - alpha,

with scipy's HiGHS (:func:`scipy.optimize.linprog`, ``method="highs"``, no
cvxpy); ``beta*`` is minus the dual value of its equality constraints. Where
the optimal fits are a segment, the right-hand side is scaled by
``1 - alpha - 1e-7`` instead: a slightly smaller reward for raising the fit at
``x`` picks the segment's lowest end and moves nothing else. When the dual is
infeasible (the pattern's cohorts hold too few calibration rows: a lone cohort
needs (1 - alpha)/alpha of them, 19 at alpha = 0.05) the primal is unbounded,
the threshold is infinite and every class is in the set.

With one cohort column the span is that of disjoint cohorts, the programme is
one quantile per cohort, and the threshold is the
``ceil((n_g + 1)(1 - alpha))``-th smallest calibration score of the cohort:
Mondrian calibration by cohort under MAPIE 1.x's rank (tested, including the
``n_g`` where the optimum is a segment).

The fitted value is a sum of a few calibration scores, computed by HiGHS to
its feasibility tolerance (set here to 1e-10); a threshold within 1e-9 of a
calibration score (relative to the scores' scale) is snapped onto it, so that
a test score equal to a calibration score is compared as the threshold rules
compare it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linprog

from mueval.errors import EvaluationError, UsageError
from mueval.metrics.array_checks import check_alpha

__all__ = [
    "augmented_fit",
    "conditional_threshold",
    "pattern_thresholds",
    "randomized_thresholds",
]

#: HiGHS's tolerances: tighter than its defaults (1e-7), since the fitted
#: value is compared with scores that may differ by less.
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}

#: How much less than 1 - alpha the dual rewards the fit at the test point: far
#: below the distance between two breakpoints of the optimum in that reward
#: (whole multiples of alpha and 1 - alpha apart for cohort indicators).
_TILT = 1e-7

#: A threshold this close to a calibration score (times the scores' scale) is that score.
_SNAP = 1e-9


def _check(cal_scores: np.ndarray, cal_features: np.ndarray, alpha: float) -> None:
    check_alpha(alpha, UsageError)
    if cal_features.ndim != 2 or len(cal_features) != len(cal_scores):
        message = (
            f"cohort indicators of shape {cal_features.shape} for {len(cal_scores)} "
            "calibration scores; expected one row per score"
        )
        raise UsageError(message)
    if not np.all(np.isfinite(cal_scores)):
        message = "calibration scores must be finite for the conditional quantile regression"
        raise UsageError(message)


def conditional_threshold(
    cal_scores: np.ndarray,
    cal_features: np.ndarray,
    test_features: np.ndarray,
    alpha: float,
    *,
    u: float | None = None,
) -> float:
    """The score threshold of a test point with indicators ``test_features``.

    ``u`` gives the paper's randomised rule instead: ``S`` is in the set when
    ``eta_{n+1}(S) < U``, ``U`` uniform on (-alpha, 1 - alpha), drawn per
    test point, for coverage exactly 1 - alpha in every cohort of the span.
    ``eta_{n+1}(S)`` is the slope in ``S`` of the augmented optimum, so the
    threshold, the last ``S`` where the slope is below ``U``, minimises that
    optimum minus ``U S`` jointly in the fit and ``S``; at the minimum ``S``
    is the fit at ``x``, and the programme is the one above with the reward
    ``1 - alpha`` replaced by ``U`` (``u = 1 - alpha`` is the unrandomised
    rule).

    Parameters
    ----------
    cal_scores : ndarray of float, shape (n,)
        Conformity scores of the calibration rows at their true class.
    cal_features : ndarray of float, shape (n, d)
        Their cohort indicators (a row of
        :attr:`mueval.data.cohorts.CohortDesign.matrix` each).
    test_features : ndarray of float, shape (d,)
        The test point's.
    alpha : float
        Miscoverage level.
    u : float, optional
        The randomised rule's draw, in (-alpha, 1 - alpha]; None: 1 - alpha.

    Returns
    -------
    float
        ``inf`` when the test point's cohorts hold too few calibration rows.

    Examples
    --------
    One cohort (the intercept): MAPIE 1.x's rank, the 20th smallest of 20 at
    alpha = 0.05 and of 39 the 38th:

    >>> ones = np.ones((39, 1))
    >>> conditional_threshold(np.arange(20.0), ones[:20], np.ones(1), 0.05)
    19.0
    >>> conditional_threshold(np.arange(39.0), ones, np.ones(1), 0.05)
    37.0
    """
    scores = np.asarray(cal_scores, dtype=float)
    features = np.asarray(cal_features, dtype=float)
    phi = np.asarray(test_features, dtype=float)
    _check(scores, features, alpha)
    reward = 1.0 - alpha if u is None else float(u)
    if not -alpha < reward <= 1.0 - alpha:
        message = f"u must be in (-alpha, 1 - alpha] = ({-alpha}, {1 - alpha}]; got {u!r}"
        raise UsageError(message)
    n = len(scores)
    if n == 0:
        return math.inf
    scale = max(1.0, float(np.max(np.abs(scores))))
    # The dual: one variable per calibration row, one constraint per column.
    # Its reward for raising the fit at x is lowered by _TILT, which moves
    # the solution, where the optimal fits are a face, to its lowest point at
    # x (and changes nothing where the fit is unique; see the module notes).
    dual = linprog(
        -scores / scale,
        A_eq=features.T,
        b_eq=-(reward - _TILT) * phi,
        bounds=[(-alpha, 1.0 - alpha)] * n,
        method="highs",
        options=_HIGHS,
    )
    if dual.status == 2:  # infeasible dual: the primal is unbounded above at x
        return math.inf
    if dual.status != 0:
        message = f"conditional quantile regression: HiGHS stopped ({dual.message})"
        raise EvaluationError(message)
    # The marginals are d(optimum)/d(b_eq) of the minimised -S.eta: minus the fit.
    beta = -dual.eqlin.marginals * scale
    return _snap(float(phi @ beta), scores, scale)


def _snap(q: float, scores: np.ndarray, scale: float) -> float:
    """``q``, or the calibration score within ``_SNAP`` (relative) of it."""
    if math.isinf(q):
        return q
    nearest = scores[np.argmin(np.abs(scores - q))]
    return float(nearest) if abs(nearest - q) <= _SNAP * scale else q


def pattern_thresholds(
    cal_scores: np.ndarray,
    cal_codes: np.ndarray,
    test_codes: np.ndarray,
    design: np.ndarray,
    alpha: float,
) -> dict[int, float]:
    """The threshold of every cohort pattern the test rows hold.

    Parameters
    ----------
    cal_scores : ndarray of float, shape (n,)
    cal_codes, test_codes : ndarray of int
        The pattern (row of ``design``) of every calibration and test row.
    design : ndarray of float, shape (n_patterns, d)
        :attr:`mueval.data.cohorts.CohortDesign.matrix`.
    alpha : float

    Returns
    -------
    dict of int to float
        Pattern code -> threshold.
    """
    features = design[np.asarray(cal_codes, dtype=int)]
    return {
        int(p): conditional_threshold(cal_scores, features, design[int(p)], alpha)
        for p in np.unique(test_codes)
    }


def randomized_thresholds(
    cal_scores: np.ndarray,
    cal_codes: np.ndarray,
    test_codes: np.ndarray,
    design: np.ndarray,
    alpha: float,
    seed: int | None = None,
) -> np.ndarray:
    """The randomised rule's threshold of every test row (one programme per row).

    Each row draws its ``U`` from ``numpy.random.default_rng(seed)``, uniform
    on (-alpha, 1 - alpha) (:func:`conditional_threshold`). Coverage is then
    exactly 1 - alpha in every cohort of the span, where the unrandomised
    rule's is at least 1 - alpha; the price is one programme per test row,
    not per pattern, which is why the evaluation runs the unrandomised rule.

    Returns
    -------
    ndarray of float, shape (n_test,)
    """
    draws = np.random.default_rng(seed).uniform(-alpha, 1.0 - alpha, size=len(test_codes))
    features = design[np.asarray(cal_codes, dtype=int)]
    return np.array(
        [
            conditional_threshold(cal_scores, features, design[int(p)], alpha, u=float(u))
            for p, u in zip(test_codes, draws, strict=True)
        ]
    )


def augmented_fit(
    cal_scores: np.ndarray,
    cal_features: np.ndarray,
    test_features: np.ndarray,
    test_score: float,
    alpha: float,
) -> tuple[float, float]:
    """The augmented quantile regression of the paper at one imputed score.

    The pinball loss at level 1 - alpha over the calibration rows and the test
    point with score ``test_score``, minimised by the primal programme
    directly: the reference the thresholds are tested against.

    Returns
    -------
    lowest, highest : float
        The lowest and highest fitted value at the test point over the optimal
        fits (equal when the fit is unique).
    """
    scores = np.append(np.asarray(cal_scores, dtype=float), test_score)
    features = np.vstack([np.asarray(cal_features, dtype=float), test_features])
    n, d = features.shape
    a_eq = np.hstack([features, np.eye(n), -np.eye(n)])
    loss = np.concatenate([np.zeros(d), np.full(n, 1.0 - alpha), np.full(n, alpha)])
    bounds = [(None, None)] * d + [(0, None)] * (2 * n)
    fit = linprog(loss, A_eq=a_eq, b_eq=scores, bounds=bounds, method="highs", options=_HIGHS)
    if fit.status != 0:
        message = f"augmented quantile regression: HiGHS stopped ({fit.message})"
        raise EvaluationError(message)
    slack = 1e-9 * max(1.0, abs(fit.fun))
    ends = []
    for sign in (1.0, -1.0):
        face = linprog(
            np.concatenate([sign * np.asarray(test_features, dtype=float), np.zeros(2 * n)]),
            A_ub=loss[None, :],
            b_ub=[fit.fun + slack],
            A_eq=a_eq,
            b_eq=scores,
            bounds=bounds,
            method="highs",
            options=_HIGHS,
        )
        ends.append(sign * face.fun)
    return ends[0], ends[1]
