"""The study's conformal metrics of prediction sets and p-values, and Vovk's criteria.

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

from mueval.metrics.array_checks import (
    MetricInputError,
    as_float_matrix,
    as_labels,
    as_sets,
    check_same_rows,
    mean,
)
from mueval.names import CONFORMAL_METRICS

__all__ = [
    "conformal_metrics",
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
# Criteria
# ---------------------------------------------------------------------------


def _validated(
    y_true: ArrayLike, pvalues: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """``y_true`` and ``pvalues`` checked: labels within the p-values' classes, one row each."""
    p = as_float_matrix("pvalues", pvalues, low=0.0, high=1.0)
    y = as_labels("y_true", y_true, p.shape[1])
    check_same_rows(y_true=y, pvalues=p)
    return y, p


def _validated_sets(
    y_true: ArrayLike, pvalues: ArrayLike, sets: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_]]:
    """As :func:`_validated`, with prediction sets of the same rows and classes."""
    p = as_float_matrix("pvalues", pvalues, low=0.0, high=1.0)
    y = as_labels("y_true", y_true, p.shape[1])
    z = as_sets("sets", sets)
    _check_width("pvalues", p, z.shape[1], "sets")
    check_same_rows(y_true=y, sets=z, pvalues=p)
    return y, p, z


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
    y, p, z = _validated_sets(y_true, pvalues, sets)
    n, n_classes = z.shape
    rows = np.arange(n)
    covered = z[rows, y]
    size = z.sum(axis=1)
    nonempty = size > 0
    false_in_set = z & _false_class_mask(y, n, n_classes)
    n_false_in_set = size - covered
    p_false_in_set = np.where(false_in_set, p, 0.0)  # p >= 0, so 0 is "none"
    of_rows = p_false_in_set.sum(axis=1)
    ou_rows = p_false_in_set.max(axis=1) if n_classes else np.zeros(n)
    fuzziness = p.sum(axis=1) - (p.max(axis=1) if n_classes else 0.0)
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
    y, p = _validated(y_true, pvalues)
    n, n_classes = p.shape
    false_mask = _false_class_mask(y, n, n_classes)
    p_false = np.where(false_mask, p, -np.inf)
    if n_classes >= 2:
        ou = mean(p_false.max(axis=1))
        second = mean(np.sort(p, axis=1)[:, -2])
    else:
        ou = second = math.nan
    if epsilon is None:
        n_crit = math.nan
    else:
        n_crit = mean((p > float(epsilon)).sum(axis=1).astype(np.float64))
    return {
        "OF_textbook": mean(np.where(false_mask, p, 0.0).sum(axis=1)),
        "OU_textbook": ou,
        "S_criterion": mean(p.sum(axis=1)),
        "U_criterion": second,
        "N_criterion": n_crit,
    }


def conformal_metrics(
    y_true: ArrayLike, sets: ArrayLike | None, pvalues: ArrayLike | None
) -> dict[str, float]:
    """Every metric of :data:`mueval.names.CONFORMAL_METRICS`, as a run records them.

    The study's metrics (:func:`study_conformal_metrics`) where it has them,
    else Vovk's (:func:`textbook_criteria`); all NaN when ``sets`` is None (a
    calibration set too small, skipped).

    Parameters
    ----------
    y_true : array of int, shape (n,)
    sets : array of bool, shape (n, K), or None
    pvalues : array of float, shape (n, K), or None

    Returns
    -------
    dict
        Python floats, in :data:`~mueval.names.CONFORMAL_METRICS` order.
    """
    if sets is None or pvalues is None:
        return dict.fromkeys(CONFORMAL_METRICS, math.nan)
    study = study_conformal_metrics(y_true, sets, pvalues)
    textbook = textbook_criteria(y_true, pvalues)
    return {m: float(study.get(m, textbook.get(m, math.nan))) for m in CONFORMAL_METRICS}
