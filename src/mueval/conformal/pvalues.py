"""Conformal p-values: split (one calibration set) and cross-conformal (pooled over folds).

``p[r, c] = (#{calibration scores >= s(x_r, c)} + 1) / (n + 1)``, not smoothed
(no random tie-breaking).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mueval.errors import UsageError
from mueval.metrics.array_checks import as_finite_floats, as_float_matrix, as_float_vector

__all__ = ["conformal_pvalues", "cross_conformal_pvalues", "lac_pvalues"]


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


def cross_conformal_pvalues(
    cal_scores: Sequence[np.ndarray],
    test_scores: Sequence[np.ndarray],
    y_cal: Sequence[np.ndarray] | None = None,
) -> np.ndarray:
    """Cross-conformal p-values pooled over folds.

    ``p[r, c] = (1 + sum_k #{i in k : cal_k[i] >= test_k[r, c]}) / (n + 1)``,
    ``n`` the number of calibration scores over all folds. With ``y_cal``
    (Mondrian), class ``c`` counts only the calibration rows of class ``c``
    and ``n`` is their number.

    Parameters
    ----------
    cal_scores : sequence of ndarray, each of shape (n_k,)
        Out-of-fold scores of each fold's rows at their true class.
    test_scores : sequence of ndarray, each of shape (n_test, K)
        Every test row's score for every class under each fold's model.
    y_cal : sequence of ndarray of int, each of shape (n_k,), optional
        True classes of each fold's rows, for class-conditional p-values.

    Returns
    -------
    ndarray of shape (n_test, K)
        Values in ``[1/(n+1), 1]``.

    Examples
    --------
    Two folds; fold 1's model gives the test row scores 0.5 and 0.9, fold 2's
    0.2 and 0.8:

    >>> p = cross_conformal_pvalues(
    ...     [np.array([0.1, 0.6]), np.array([0.3])],
    ...     [np.array([[0.5, 0.9]]), np.array([[0.2, 0.8]])],
    ... )
    >>> p.tolist()   # (1 + 1 + 1) / 4 and (1 + 0 + 0) / 4
    [[0.75, 0.25]]
    """
    if len(cal_scores) != len(test_scores) or not cal_scores:
        message = (
            f"need one test-score array per calibration fold, got {len(cal_scores)} folds "
            f"and {len(test_scores)} test-score arrays"
        )
        raise UsageError(message)
    shape = np.shape(test_scores[0])
    counts = np.zeros(shape, dtype=float)
    totals = np.zeros(shape[1], dtype=float)
    for k, (cal, test) in enumerate(zip(cal_scores, test_scores, strict=True)):
        cal = np.asarray(cal, dtype=float)
        test = np.asarray(test, dtype=float)
        if test.shape != shape:
            message = f"fold {k}: test scores of shape {test.shape}, expected {shape}"
            raise UsageError(message)
        for c in range(shape[1]):
            own = cal if y_cal is None else cal[np.asarray(y_cal[k]) == c]
            ordered = np.sort(own)
            # n - searchsorted(left) counts the scores >= s on the same floats a
            # brute-force comparison would use, ties included.
            counts[:, c] += len(ordered) - np.searchsorted(ordered, test[:, c], side="left")
            totals[c] += len(ordered)
    return (counts + 1.0) / (totals + 1.0)
