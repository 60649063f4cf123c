"""The class order of a task's pooled calibration and test scores, for the exact
per-user null under a class-stratified split
(:mod:`mueval.guarantees.stratified_null`).

UDM, UCM and UAM split each user's own rows with a split stratified on the
class. Given the pooled rows and their scores, the law of the user's covered
count depends only on the classes of the pooled rows sorted by score and on how
many rows of each class calibrate; :func:`pooled_order` records both in one
sequence of integers, which ``splits.parquet`` keeps as ``pooled_order``:

- position ``j`` is the ``j``-th smallest score among the task's calibration
  and test rows (scores at the true class; ties broken by class, which does
  not depend on which rows calibrate);
- the value is the row's class code ``c`` for a calibration row and ``-c - 1``
  for a test row.

It is recorded only where the split is stratified and the threshold is one
rank-``k`` order statistic of the calibration scores: UDM and UCM, and UAM when
its split could stratify (:mod:`mueval.evaluation.within_user` falls back to a
plain random split otherwise), under ``--split random``, unconditional
calibration, a deterministic score, and sets the p-values describe. Elsewhere
it is None and the verdict uses the Beta-Binomial.
"""

from __future__ import annotations

import numpy as np

from mueval.conformal.scores import ConformityScore, class_scores
from mueval.evaluation.row_splits import can_stratify

__all__ = ["STRATIFIED_STRATEGIES", "pooled_order"]

#: Strategies that split the target user's own rows into calibration and test
#: rows with a class-stratified split (UAM: when it can stratify).
STRATIFIED_STRATEGIES: tuple[str, ...] = ("udm", "ucm", "uam")


def pooled_order(
    strategy: str,
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    y_test: np.ndarray,
    score: ConformityScore,
) -> tuple[int, ...] | None:
    """The signed class codes of a task's pooled rows in score order, or None.

    Parameters
    ----------
    strategy : str
        The task's strategy code.
    proba_cal, proba_test : ndarray of shape (n, K), (m, K)
        Predicted probabilities of the calibration and test rows.
    y_cal, y_test : ndarray of int
        Their true classes.
    score : ConformityScore
        The run's conformity score.

    Returns
    -------
    tuple of int or None
        ``n + m`` values: ``c`` for a calibration row of class ``c``, ``-c - 1``
        for a test row; None where the split is not class-stratified (another
        strategy, or UAM's plain random fallback) or the score is randomised.

    Examples
    --------
    >>> from mueval.conformal.scores import get_score
    >>> proba_cal = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> proba_test = np.array([[0.6, 0.4], [0.3, 0.7]])
    >>> pooled_order("ucm", proba_cal, np.array([0, 1]), proba_test, np.array([0, 1]), get_score("lac"))
    (0, 1, -2, -1)
    """
    if strategy not in STRATIFIED_STRATEGIES or score.randomized:
        return None
    y_cal = np.asarray(y_cal, dtype=np.int64)
    y_test = np.asarray(y_test, dtype=np.int64)
    if strategy == "uam" and not can_stratify(np.concatenate([y_cal, y_test]), 0.5):
        return None
    cal = class_scores(proba_cal, score)[np.arange(len(y_cal)), y_cal]
    test = class_scores(proba_test, score)[np.arange(len(y_test)), y_test]
    scores = np.concatenate([cal, test])
    classes = np.concatenate([y_cal, y_test])
    signed = np.concatenate([y_cal, -y_test - 1])
    if np.isnan(scores).any():
        return None
    return tuple(int(v) for v in signed[np.lexsort((classes, scores))])
