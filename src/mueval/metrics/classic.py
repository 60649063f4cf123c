"""Non-conformal classification metrics, as the reference study computes them.

Encoding used by every :mod:`mueval.metrics` function: classes are integers
``0..K-1`` (indices into the sorted class names), ``y_true`` and ``y_pred`` are
integer arrays of shape ``(n,)``. Results are plain Python floats, ``nan`` where
a value is undefined.

Inputs are checked by :mod:`mueval.metrics.array_checks`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from mueval.metrics.array_checks import (
    MetricInputError,
    as_labels,
    check_same_rows,
    mean,
)

__all__ = ["MetricInputError", "classification_metrics"]


def _ratio(numer: np.ndarray, denom: np.ndarray) -> np.ndarray:
    """Elementwise ``numer / denom`` with ``nan`` where ``denom == 0`` (R's 0/0 -> NaN)."""
    out = np.full(numer.shape, np.nan)
    np.divide(numer, denom, out=out, where=denom != 0)
    return out


def classification_metrics(
    y_true: ArrayLike, y_pred: ArrayLike, n_classes: int
) -> dict[str, float]:
    """Accuracy and macro sensitivity, specificity, F1 as R caret computes them.

    The reference study passes caret ``factor(pred, levels = L)`` and
    ``factor(truth, levels = L)`` with ``L`` the labels present in the subset's
    ground truth. A prediction of a label outside ``L`` becomes ``NA``, and
    R's ``table()`` drops that row: it counts in none of these four metrics
    (accuracy is over the remaining rows). Every class ``c`` of ``L`` is then
    scored one against the rest: ``TP = #(pred c, true c)``,
    ``FN = #(pred not c, true c)``, ``FP = #(pred c, true not c)``, ``TN`` the
    rest.

    - sensitivity ``TP/(TP+FN)``; specificity ``TN/(TN+FP)``;
      precision ``TP/(TP+FP)``; F1 ``2PR/(P+R)``.
    - As in caret (``byClass`` then ``colMeans(..., na.rm = TRUE)``), a class
      whose value is 0/0 is left out of the average: precision and hence F1
      when the class is never predicted, and F1 when ``TP = 0``
      (``P = R = 0``; scikit-learn would count 0 there).
    - caret refuses a subset whose ground truth holds a single class; the four
      metrics are then ``nan`` (undefined) here.

    ``weighted_F1`` is the HAR benchmark's score (Tang et al. 2020,
    arXiv:2005.03948): the per-class F1 weighted by the class's share of
    ``y_true``, with an undefined precision, recall or F1 counted as 0; a
    fraction in [0, 1], not a percentage.

    Parameters
    ----------
    y_true : array of int, shape (n,)
        True class indices in ``0..n_classes-1``.
    y_pred : array of int, shape (n,)
        Predicted class indices in ``0..n_classes-1``.
    n_classes : int
        Number of classes K of the whole problem (not only of this subset).

    Returns
    -------
    dict
        ``"accuracy"``, ``"sensitivity"``, ``"specificity"``, ``"F1"``,
        ``"weighted_F1"``: Python floats in [0, 1], ``nan`` when undefined
        (every key is ``nan`` for ``n = 0``).
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 1:
        message = f"n_classes must be a positive integer; found {n_classes!r}"
        raise MetricInputError(message)
    y_true = as_labels("y_true", y_true, int(n_classes))
    y_pred = as_labels("y_pred", y_pred, int(n_classes))
    check_same_rows(y_true=y_true, y_pred=y_pred)
    n = y_true.size
    if n == 0:
        return dict.fromkeys(
            ("accuracy", "sensitivity", "specificity", "F1", "weighted_F1"), math.nan
        )

    # Confusion matrix over all K classes: rows = truth, columns = prediction.
    confusion = np.bincount(y_true * n_classes + y_pred, minlength=n_classes * n_classes)
    confusion = confusion.reshape(n_classes, n_classes).astype(np.float64)
    support = confusion.sum(axis=1)
    f1_all = _one_vs_rest(confusion)[2]
    weighted_f1 = float(np.sum(support / n * np.nan_to_num(f1_all, nan=0.0)))

    present = np.flatnonzero(support > 0)
    if len(present) < 2:
        undefined = dict.fromkeys(("accuracy", "sensitivity", "specificity", "F1"), math.nan)
        return {**undefined, "weighted_F1": weighted_f1}
    # caret's table over the ground-truth labels: rows predicted as another
    # label are NA and leave the table.
    kept = confusion[np.ix_(present, present)]
    sensitivity, specificity, f1 = _one_vs_rest(kept)

    def macro(values: np.ndarray) -> float:
        return mean(values[~np.isnan(values)])

    return {
        "accuracy": float(_ratio(np.trace(kept), kept.sum())),
        "sensitivity": macro(sensitivity),
        "specificity": macro(specificity),
        "F1": macro(f1),
        "weighted_F1": weighted_f1,
    }


def _one_vs_rest(confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-class sensitivity, specificity and F1 of a (truth x prediction) matrix.

    0/0 gives NaN, as in R; F1 is NaN wherever precision is.
    """
    n = confusion.sum()
    tp = np.diag(confusion)
    fn = confusion.sum(axis=1) - tp
    fp = confusion.sum(axis=0) - tp
    tn = n - tp - fn - fp
    sensitivity = _ratio(tp, tp + fn)
    specificity = _ratio(tn, tn + fp)
    precision = _ratio(tp, tp + fp)
    with np.errstate(invalid="ignore"):
        # NaN propagates from precision; P = R = 0 gives 0/0 = NaN, as in R.
        f1 = _ratio(2 * precision * sensitivity, precision + sensitivity)
        f1[np.isnan(precision)] = np.nan
    return sensitivity, specificity, f1
