"""Split conformal prediction sets and p-values for one fitted model.

Sets come from MAPIE 1.x ``SplitConformalClassifier(prefit=True)``, which on the
LAC score gives exactly the protocol's sets (the ``ceil((n+1)(1-alpha))``-th
smallest calibration score as threshold; MAPIE adds a 1e-8 tolerance to the
comparison). The model is not called again here: the caller computes
``predict_proba`` once for every calibration and test row of a split, and MAPIE
sees a lookup estimator over that table (``X`` = row numbers), so one fit and one
``predict_proba`` call serve every calibration set of the split.

p-values are ``(#{calibration scores >= s(x, c)} + 1) / (n + 1)`` for each class
``c``, with ``s`` the conformity score of the chosen method evaluated as if ``c``
were the label:

- ``lac``: ``1 - p_c`` (the protocol's p-values, :func:`lac_pvalues`);
- ``aps`` and ``raps``: the cumulative probability of the classes ranked at or
  above ``c`` (APS without MAPIE's random tie-break and without RAPS's
  regularisation, so these p-values are deterministic);
- ``top_k``: the rank of ``c`` (1 = most probable).

Mondrian (class-conditional) calibration is not in MAPIE 1.6 for classification,
so it is done here by hand for every score: class ``c`` gets its own threshold,
the ``ceil((n_c+1)(1-alpha))``-th smallest score among the calibration rows of
class ``c`` (infinite, i.e. ``c`` is always in the set, when that exceeds
``n_c``), and its p-values count only those rows.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from mapie.classification import SplitConformalClassifier
from sklearn.base import BaseEstimator, ClassifierMixin

from mueval.errors import EvaluationError, UsageError
from mueval.metrics.conformal import lac_pvalues, lac_threshold

#: Conformity scores accepted by ``--score``.
SCORES: tuple[str, ...] = ("lac", "aps", "raps", "top_k")


class _ProbaLookup(ClassifierMixin, BaseEstimator):
    """A "fitted classifier" whose input is a row number into a probability table.

    Parameters
    ----------
    table : ndarray of shape (n_rows, K)
        Precomputed ``predict_proba`` of the real model.
    """

    def __init__(self, table: np.ndarray | None = None) -> None:
        self.table = table

    def fit(self, X: np.ndarray, y: np.ndarray) -> _ProbaLookup:  # never trains
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return True

    @property
    def classes_(self) -> np.ndarray:
        return np.arange(self.table.shape[1])

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return self.table[np.asarray(X)[:, 0].astype(int)]

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.argmax(self.predict_proba(X), axis=1)


def class_scores(proba: np.ndarray, score: str) -> np.ndarray:
    """Deterministic conformity score of every (row, candidate class).

    Parameters
    ----------
    proba : ndarray of shape (n, K)
        Predicted probabilities.
    score : {"lac", "aps", "raps", "top_k"}

    Returns
    -------
    ndarray of shape (n, K)
        ``s[r, c]``, larger = stranger.
    """
    if score == "lac":
        return 1.0 - proba
    # For each candidate c: which classes rank strictly above it.
    above = proba[:, None, :] > proba[:, :, None]  # (n, c, k): p_k > p_c
    if score in ("aps", "raps"):
        return (above * proba[:, None, :]).sum(axis=2) + proba
    if score == "top_k":
        return above.sum(axis=2).astype(float) + 1.0
    message = f"unknown conformity score {score!r}; valid: {', '.join(SCORES)}"
    raise UsageError(message)


def _pvalues(cal_scores: np.ndarray, test_scores: np.ndarray) -> np.ndarray:
    """(#{cal >= s} + 1) / (n + 1) for every entry of ``test_scores`` (n, K).

    The same count as :func:`lac_pvalues`, on scores other than LAC's.
    """
    ordered = np.sort(cal_scores)
    n = len(ordered)
    n_ge = n - np.searchsorted(ordered, test_scores, side="left")
    return (n_ge + 1.0) / (n + 1.0)


def min_calibration_size(alpha: float) -> int:
    """The smallest calibration set MAPIE accepts: ``max(1/alpha, 1/(1-alpha))``."""
    return int(np.ceil(max(1.0 / alpha, 1.0 / (1.0 - alpha)) - 1e-9))


@dataclass(frozen=True)
class ConformalOutput:
    """Sets and p-values of the test rows.

    Attributes
    ----------
    sets : ndarray of bool, shape (n_test, K)
    pvalues : ndarray of float, shape (n_test, K)
    n_cal : int
    """

    sets: np.ndarray
    pvalues: np.ndarray
    n_cal: int


def conformalize(
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    *,
    alpha: float = 0.05,
    score: str = "lac",
    mondrian: bool = False,
    seed: int | None = None,
) -> ConformalOutput:
    """Prediction sets and p-values for the test rows of one split.

    Parameters
    ----------
    proba_cal : ndarray of shape (n_cal, K)
        Model probabilities on the calibration rows.
    y_cal : ndarray of int, shape (n_cal,)
        True classes of the calibration rows (0..K-1).
    proba_test : ndarray of shape (n_test, K)
        Model probabilities on the test rows.
    alpha : float
        Miscoverage level (0.05 = 95 % confidence).
    score : {"lac", "aps", "raps", "top_k"}
        Conformity score.
    mondrian : bool
        Class-conditional thresholds and p-values.
    seed : int, optional
        ``random_state`` given to MAPIE (APS/RAPS draw random numbers).

    Returns
    -------
    ConformalOutput

    Raises
    ------
    EvaluationError
        When MAPIE refuses the calibration set (fewer than
        :func:`min_calibration_size` rows, about ten times that for ``raps``;
        non-Mondrian only).
    """
    if score not in SCORES:
        message = f"unknown conformity score {score!r}; valid: {', '.join(SCORES)}"
        raise UsageError(message)
    y_cal = np.asarray(y_cal, dtype=int)
    n_cal = len(y_cal)
    test_scores = class_scores(proba_test, score)
    cal_scores = class_scores(proba_cal, score)[np.arange(n_cal), y_cal]
    if mondrian:
        n_classes = proba_test.shape[1]
        sets = np.zeros(proba_test.shape, dtype=bool)
        pvalues = np.zeros(proba_test.shape, dtype=float)
        for c in range(n_classes):
            own = cal_scores[y_cal == c]
            # A class without calibration rows can never be excluded validly.
            q = lac_threshold(own, alpha) if len(own) else float("inf")
            sets[:, c] = test_scores[:, c] <= q
            if score == "lac":
                pvalues[:, c] = lac_pvalues(own, proba_test[:, [c]])[:, 0]
            else:
                pvalues[:, c] = _pvalues(own, test_scores[:, [c]])[:, 0]
        return ConformalOutput(sets, pvalues, n_cal)

    if n_cal < min_calibration_size(alpha):
        message = (
            f"calibration set of {n_cal} rows is smaller than "
            f"{min_calibration_size(alpha)} = max(1/alpha, 1/(1-alpha)) for "
            f"alpha={alpha}, which MAPIE refuses"
        )
        raise EvaluationError(message)
    table = np.vstack([proba_cal, proba_test])
    rows = np.arange(len(table)).reshape(-1, 1)
    scc = SplitConformalClassifier(
        estimator=_ProbaLookup(table),
        confidence_level=1.0 - alpha,
        conformity_score=score,
        prefit=True,
        random_state=seed,
    )
    with warnings.catch_warnings():
        # MAPIE warns when the calibration rows lack a class the model knows
        # (common for small users); the sets are still the split-conformal ones.
        warnings.filterwarnings("ignore", message=".*conformalization dataset has less labels.*")
        try:
            scc.conformalize(rows[:n_cal], y_cal)
            _, sets = scc.predict_set(rows[n_cal:])
        except ValueError as exc:
            # RAPS sets aside a part of the calibration rows to tune its penalty
            # (MAPIE 1.6 keeps 10 % in the end), and that part must itself hold
            # max(1/alpha, 1/(1-alpha)) rows: about 200 rows at alpha=0.05.
            extra = " (raps tunes its penalty on about 10 % of them)" if score == "raps" else ""
            message = (
                f"MAPIE refused the calibration set of {n_cal} rows{extra} for "
                f"score {score!r} at alpha={alpha}: {' '.join(str(exc).split())}"
            )
            raise EvaluationError(message) from exc
    sets = np.asarray(sets)[:, :, 0].astype(bool)
    if score == "lac":
        pvalues = lac_pvalues(cal_scores, proba_test)
    else:
        pvalues = _pvalues(cal_scores, test_scores)
    return ConformalOutput(sets, pvalues, n_cal)
