"""Conformity scores: how strange a class is for a row, larger = stranger."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mueval.errors import UsageError
from mueval.metrics.array_checks import as_float_matrix, as_labels, check_same_rows
from mueval.names import SCORES

__all__ = ["class_scores", "lac_scores"]


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
