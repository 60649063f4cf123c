"""The two threshold rules of split conformal prediction, and the smallest calibration set.

``"study"``: MAPIE 0.8.6's rule, which the reference study ran; ``"mapie"``:
MAPIE 1.x's finite-sample rule (:func:`lac_threshold` says where they differ).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mueval.metrics.array_checks import (
    MetricInputError,
    as_float_matrix,
    as_float_vector,
    check_alpha,
)
from mueval.names import THRESHOLD_RULES

__all__ = ["TOLERANCES", "check_rule", "lac_sets", "lac_threshold", "min_calibration_size"]


#: Inclusion tolerance of each rule: MAPIE 0.8.6 compares with machine epsilon,
#: MAPIE 1.x with 1e-8 (which adds classes whose probability is within 1e-8 of
#: the bound; Naive Bayes probabilities sit at 0 and 1, so this changes sets).
TOLERANCES: dict[str, float] = {
    "study": float(np.finfo(np.float64).eps),
    "mapie": 1e-8,
}


def check_rule(rule: str) -> str:
    """Return ``rule`` if it names a threshold rule, else raise naming the valid ones."""
    if rule not in THRESHOLD_RULES:
        message = f"unknown threshold rule {rule!r}; valid: {', '.join(THRESHOLD_RULES)}"
        raise MetricInputError(message)
    return rule


def lac_threshold(cal_scores: ArrayLike, alpha: float, *, rule: str = "study") -> float:
    """Split-conformal threshold of the calibration scores.

    Two rules exist, and they pick different order statistics for some ``n``:

    - ``"study"`` (the reference protocol, MAPIE 0.8.6):
      ``numpy.quantile(scores, (n+1)(1-alpha)/n, method="higher")``, computed
      exactly as MAPIE 0.8.6 computes it so the float rounding of the level is
      the same; ``inf`` when that level exceeds 1.
    - ``"mapie"`` (MAPIE 1.x, the textbook finite-sample rule): the
      ``ceil((n+1)(1-alpha))``-th smallest score, ``inf`` when that rank
      exceeds ``n``; the rank is computed as MAPIE 1.x computes it.

    ``inf`` means too few calibration rows: every class enters every set.

    Parameters
    ----------
    cal_scores : array of float, shape (n,)
        Calibration conformity scores (LAC: ``1 - p_hat(true class)``).
    alpha : float
        Miscoverage level in (0, 1); the protocol uses 0.05.
    rule : {"study", "mapie"}, default "study"

    Returns
    -------
    float

    Examples
    --------
    At alpha=0.05 the rules agree on 20 scores and differ by one rank on 39
    (and on every n = 19 mod 20 from 39 on; not on 19, where both take the
    largest score; ``mueval.guarantees.user_level.threshold_rank`` gives both
    ranks):

    >>> scores = list(range(20))
    >>> lac_threshold(scores, 0.05, rule="study"), lac_threshold(scores, 0.05, rule="mapie")
    (19.0, 19.0)
    >>> scores = list(range(39))
    >>> lac_threshold(scores, 0.05, rule="study"), lac_threshold(scores, 0.05, rule="mapie")
    (38.0, 37.0)
    """
    scores = as_float_vector("cal_scores", cal_scores)
    alpha = check_alpha(alpha)
    check_rule(rule)
    n = scores.size
    if n == 0:
        message = "cal_scores must hold at least one calibration score; found shape (0,)"
        raise MetricInputError(message)
    if rule == "study":
        level = ((n + 1) * (1 - alpha)) / n
        if level > 1.0:
            return math.inf
        return float(np.quantile(scores, level, method="higher"))
    rank = int(np.ceil((n + 1) * (1 - alpha)))
    if rank > n:
        return math.inf
    return float(np.partition(scores, rank - 1)[rank - 1])


def lac_sets(test_proba: ArrayLike, q: float, *, rule: str = "study") -> NDArray[np.bool_]:
    """LAC prediction sets at threshold ``q``, compared as ``rule`` compares.

    - ``"study"``: class ``k`` is in the set when ``p_k - (1 - q) >= -eps``
      (machine epsilon), MAPIE 0.8.6's expression to the float;
    - ``"mapie"``: when ``(1 - p_k) - q <= 1e-8``, MAPIE 1.x's.

    Parameters
    ----------
    test_proba : array of float, shape (n, K)
        Predicted class probabilities of the test rows.
    q : float
        Threshold from :func:`lac_threshold` with the same rule (may be ``inf``).
    rule : {"study", "mapie"}, default "study"

    Returns
    -------
    ndarray of bool, shape (n, K)
        Sets may be empty.

    Examples
    --------
    A probability 1e-9 below the bound is in MAPIE 1.x's set, not in the study's:

    >>> lac_sets([[0.05 - 1e-9, 0.95 + 1e-9]], 0.95, rule="study").tolist()
    [[False, True]]
    >>> lac_sets([[0.05 - 1e-9, 0.95 + 1e-9]], 0.95, rule="mapie").tolist()
    [[True, True]]
    """
    proba = as_float_matrix("test_proba", test_proba, low=0.0, high=1.0)
    if isinstance(q, bool) or not isinstance(q, (int, float, np.floating)) or math.isnan(q):
        message = f"q must be a number (the LAC threshold); found {q!r}"
        raise MetricInputError(message)
    check_rule(rule)
    if math.isinf(q):
        return np.ones(proba.shape, dtype=bool)
    if rule == "study":
        return np.greater_equal(proba - (1.0 - q), -TOLERANCES["study"])
    return np.less_equal((1.0 - proba) - q, TOLERANCES["mapie"])


def min_calibration_size(alpha: float) -> int:
    """The smallest calibration set for which a split-conformal set is not trivial.

    ``max(1/alpha, 1/(1-alpha))``, rounded up; both MAPIE versions refuse a
    smaller calibration set, and the run warnings name the sets below it.

    Examples
    --------
    >>> min_calibration_size(0.1), min_calibration_size(0.05), min_calibration_size(0.9)
    (10, 20, 10)
    """
    alpha = check_alpha(alpha)
    # The 1e-9 keeps 1/0.1 = 10.000000000000002 at 10.
    return int(np.ceil(max(1.0 / alpha, 1.0 / (1.0 - alpha)) - 1e-9))
