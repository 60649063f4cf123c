"""Split-conformal LAC sets and p-values, and the study's conformal metrics.

Encoding: ``y_true`` int array ``(n,)`` of class indices ``0..K-1``; ``sets``
bool array ``(n, K)``, True when the class is in the prediction set;
``pvalues`` float array ``(n, K)``. Results are Python floats, ``nan`` where
undefined.

The criteria follow Vovk, Fedorova, Nouretdinov and Gammerman, "Criteria of
efficiency for conformal prediction" (COPA 2016), as the reference study's code
computes them; see :func:`study_conformal_metrics` and :func:`textbook_criteria`
for where the two differ.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mueval.metrics.validation import (
    MetricInputError,
    as_finite_floats,
    as_float_matrix,
    as_float_vector,
    as_labels,
    as_sets,
    check_alpha,
    check_same_rows,
    mean,
)
from mueval.names import THRESHOLD_RULES

__all__ = [
    "THRESHOLD_RULES",
    "TOLERANCES",
    "check_rule",
    "conformal_pvalues",
    "lac_pvalues",
    "lac_scores",
    "lac_sets",
    "lac_threshold",
    "study_conformal_metrics",
    "textbook_criteria",
]


def _check_width(name: str, arr: np.ndarray, n_classes: int, other: str) -> None:
    if arr.shape[1] != n_classes:
        message = f"{name} must have {n_classes} columns like {other}; found shape {arr.shape}"
        raise MetricInputError(message)


def _false_class_mask(y_true: np.ndarray, n_rows: int, n_classes: int) -> NDArray[np.bool_]:
    """``(n, K)`` mask, True everywhere except at each row's true class."""
    mask = np.ones((n_rows, n_classes), dtype=bool)
    mask[np.arange(n_rows), y_true] = False
    return mask


# ---------------------------------------------------------------------------
# LAC: scores, threshold, sets, p-values
# ---------------------------------------------------------------------------


def lac_scores(proba: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
    """LAC conformity scores ``1 - proba[i, y_i]``, computed in float64.

    Compute calibration scores with this function so that they are the same
    floats that :func:`lac_pvalues` and :func:`lac_sets` compare them with.

    Parameters
    ----------
    proba : array of float, shape (n, K)
        Predicted class probabilities.
    y : array of int, shape (n,)
        True class indices.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    proba = as_float_matrix("proba", proba, low=0.0, high=1.0)
    y = as_labels("y", y, proba.shape[1])
    check_same_rows(proba=proba, y=y)
    return 1.0 - proba[np.arange(y.size), y]


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
    (and on every n = 19 mod 20 up to 400):

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


def conformal_pvalues(cal_scores: ArrayLike, test_scores: ArrayLike) -> NDArray[np.float64]:
    """Conformal p-values of every (test row, class) score, for any conformity score.

    ``p[r, c] = (#{i : cal_i >= test_scores[r, c]} + 1) / (n + 1)``, not
    smoothed (no random tie-breaking). The calibration scores are sorted once
    and each count is ``n - searchsorted(sorted, s, side="left")``, which counts
    the scores ``>= s`` on the same float64 values as a brute-force comparison,
    so exact ties are counted as the formula says.

    Parameters
    ----------
    cal_scores : array of float, shape (n_cal,)
        Conformity scores of the calibration rows at their true class.
    test_scores : array of float, shape (n, K)
        Conformity score of every test row for every candidate class.

    Returns
    -------
    ndarray of float64, shape (n, K)
        Values in ``[1/(n_cal+1), 1]``.

    Examples
    --------
    >>> conformal_pvalues([0.1, 0.2, 0.2, 0.6], [[0.2, 0.7]]).tolist()
    [[0.8, 0.2]]
    """
    scores = as_float_vector("cal_scores", cal_scores)
    test = as_finite_floats("test_scores", test_scores, 2, "(n, K)")
    n_cal = scores.size
    sorted_scores = np.sort(scores)
    n_at_least = n_cal - np.searchsorted(sorted_scores, test, side="left")
    return (n_at_least + 1) / (n_cal + 1)


def lac_pvalues(cal_scores: ArrayLike, test_proba: ArrayLike) -> NDArray[np.float64]:
    """:func:`conformal_pvalues` under the LAC score ``1 - p``.

    Parameters
    ----------
    cal_scores : array of float, shape (n_cal,)
        Calibration scores ``1 - p_hat(true class)`` (see :func:`lac_scores`).
    test_proba : array of float, shape (n, K)
        Predicted class probabilities of the test rows.

    Returns
    -------
    ndarray of float64, shape (n, K)
    """
    proba = as_float_matrix("test_proba", test_proba, low=0.0, high=1.0)
    return conformal_pvalues(cal_scores, 1.0 - proba)


# ---------------------------------------------------------------------------
# Criteria
# ---------------------------------------------------------------------------


def _validated(y_true: ArrayLike, pvalues: ArrayLike, sets: ArrayLike | None = None):
    pvalues = as_float_matrix("pvalues", pvalues, low=0.0, high=1.0)
    n_classes = pvalues.shape[1]
    y_true = as_labels("y_true", y_true, n_classes)
    if sets is None:
        check_same_rows(y_true=y_true, pvalues=pvalues)
        return y_true, pvalues
    sets = as_sets("sets", sets)
    _check_width("pvalues", pvalues, sets.shape[1], "sets")
    check_same_rows(y_true=y_true, sets=sets, pvalues=pvalues)
    return y_true, pvalues, sets


def study_conformal_metrics(
    y_true: ArrayLike, sets: ArrayLike, pvalues: ArrayLike
) -> dict[str, float]:
    """The conformal metrics of the reference study's tables.

    With ``S`` the set, ``y`` the true class, ``p`` the p-value vector and
    "non-empty" meaning the mean over rows whose set is non-empty (``nan`` when
    there is none):

    ============  ==========================================================
    coverage      mean of ``[y in S]``
    jaccard       mean of ``|S & {y}| / |S | {y}|`` (an empty set scores 0)
    setsize       mean ``|S|`` (Vovk's N criterion)
    pctempty      mean of ``[S empty]``, a fraction (tables show percent)
    MCriterion    non-empty: mean of ``[|S| > 1]``
    FCriterion    mean of ``sum(p) - max(p)`` over all classes (fuzziness)
    OM            non-empty: mean of ``[S has a class other than y]``
    OF            non-empty: mean of the sum of ``p_c`` over false ``c`` in S
    OU            non-empty: mean of the max ``p_c`` over false ``c`` in S
    OE            mean of ``|S minus {y}|``
    ============  ==========================================================

    OF and OU are what the study's code computes (and its tables report): only
    the false classes inside the set count, 0 when there is none, averaged over
    non-empty sets. Vovk's textbook OF/OU are in :func:`textbook_criteria`.

    Parameters
    ----------
    y_true : array of int, shape (n,)
        True class indices in ``0..K-1``.
    sets : array of bool, shape (n, K)
        Prediction sets (True = class in the set).
    pvalues : array of float, shape (n, K)
        Conformal p-values in [0, 1].

    Returns
    -------
    dict
        The ten keys above, Python floats.
    """
    y_true, pvalues, sets = _validated(y_true, pvalues, sets)
    n, n_classes = sets.shape
    rows = np.arange(n)
    covered = sets[rows, y_true]
    size = sets.sum(axis=1)
    nonempty = size > 0
    false_in_set = sets & _false_class_mask(y_true, n, n_classes)
    n_false_in_set = size - covered
    p_false_in_set = np.where(false_in_set, pvalues, 0.0)  # p >= 0, so 0 is "none"
    of_rows = p_false_in_set.sum(axis=1)
    ou_rows = p_false_in_set.max(axis=1) if n_classes else np.zeros(n)
    fuzziness = pvalues.sum(axis=1) - (pvalues.max(axis=1) if n_classes else 0.0)
    return {
        "coverage": mean(covered.astype(np.float64)),
        # |S & {y}| = covered, |S | {y}| = |S| + 1 - covered; empty S gives 0/1.
        "jaccard": mean(covered / (size + 1 - covered)),
        "setsize": mean(size.astype(np.float64)),
        "pctempty": mean((~nonempty).astype(np.float64)),
        "MCriterion": mean((size[nonempty] > 1).astype(np.float64)),
        "FCriterion": mean(fuzziness),
        "OM": mean((n_false_in_set[nonempty] > 0).astype(np.float64)),
        "OF": mean(of_rows[nonempty]),
        "OU": mean(ou_rows[nonempty]),
        "OE": mean(n_false_in_set.astype(np.float64)),
    }


def textbook_criteria(
    y_true: ArrayLike, pvalues: ArrayLike, *, epsilon: float | None = None
) -> dict[str, float]:
    """Vovk et al.'s probabilistic criteria, over all rows and all false classes.

    - ``OF_textbook``: mean over rows of the sum of the p-values of every false
      class, in or out of any set (observed fuzziness).
    - ``OU_textbook``: mean over rows of the largest p-value of a false class
      (observed unconfidence); ``nan`` when K = 1 (no false class).
    - ``S_criterion``: mean over rows of the sum of all p-values.
    - ``U_criterion``: mean over rows of the second-largest p-value
      (unconfidence); ``nan`` when K = 1.
    - ``N_criterion``: mean size of the sets ``{c : p_c > epsilon}`` at
      significance level ``epsilon``; ``nan`` when ``epsilon`` is None.

    Reference: Vovk, Fedorova, Nouretdinov, Gammerman, "Criteria of efficiency
    for conformal prediction", COPA 2016, LNCS 9653.

    Parameters
    ----------
    y_true : array of int, shape (n,)
        True class indices in ``0..K-1``.
    pvalues : array of float, shape (n, K)
        Conformal p-values in [0, 1].
    epsilon : float, optional
        Significance level for ``N_criterion``.

    Returns
    -------
    dict
        ``"OF_textbook"``, ``"OU_textbook"``, ``"S_criterion"``,
        ``"U_criterion"``, ``"N_criterion"``: Python floats.
    """
    y_true, pvalues = _validated(y_true, pvalues)
    n, n_classes = pvalues.shape
    false_mask = _false_class_mask(y_true, n, n_classes)
    p_false = np.where(false_mask, pvalues, -np.inf)
    if n_classes >= 2:
        ou = mean(p_false.max(axis=1))
        second = mean(np.sort(pvalues, axis=1)[:, -2])
    else:
        ou = second = math.nan
    if epsilon is None:
        n_crit = math.nan
    else:
        n_crit = mean((pvalues > float(epsilon)).sum(axis=1).astype(np.float64))
    return {
        "OF_textbook": mean(np.where(false_mask, pvalues, 0.0).sum(axis=1)),
        "OU_textbook": ou,
        "S_criterion": mean(pvalues.sum(axis=1)),
        "U_criterion": second,
        "N_criterion": n_crit,
    }
