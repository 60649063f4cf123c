"""Input checks of the arrays every metric takes (shapes, labels, sets, levels), and their exception.

Metrics are pure functions over arrays; each validates its inputs with these
helpers first, so a wrong shape, dtype or value is a :class:`MetricInputError`
that names the argument, the expectation and what was found.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mueval.errors import DataError, MuevalError

__all__ = [
    "MetricInputError",
    "as_bool_array",
    "as_bool_vector",
    "as_finite_floats",
    "as_float_matrix",
    "as_float_vector",
    "as_labels",
    "as_sets",
    "check_alpha",
    "check_same_rows",
    "describe",
    "mean",
]


class MetricInputError(DataError):
    """An array given to a metric has the wrong shape, dtype or values.

    A :class:`mueval.errors.DataError`, hence also a ``ValueError``.
    """


def describe(arr: np.ndarray) -> str:
    return f"dtype {arr.dtype} and shape {arr.shape}"


def as_labels(name: str, values: ArrayLike, n_classes: int | None = None) -> NDArray[np.int64]:
    """Return ``values`` as a 1-D int64 array of class indices in ``0..n_classes-1``."""
    arr = np.asarray(values)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool):
        message = f"{name} must be a 1-D integer array of class indices; found {describe(arr)}"
        raise MetricInputError(message)
    arr = arr.astype(np.int64)
    if n_classes is not None and arr.size and (arr.min() < 0 or arr.max() >= n_classes):
        message = (
            f"{name} must hold class indices in 0..{n_classes - 1}; "
            f"found values from {arr.min()} to {arr.max()} (shape {arr.shape})"
        )
        raise MetricInputError(message)
    return arr


def as_bool_array(name: str, values: ArrayLike, ndim: int, shape_text: str) -> NDArray[np.bool_]:
    """Return ``values`` as a bool array of ``ndim`` dimensions; integer 0/1 arrays are accepted."""
    arr = np.asarray(values)
    ok_dtype = arr.dtype == bool or np.issubdtype(arr.dtype, np.integer)
    if arr.ndim != ndim or not ok_dtype:
        message = f"{name} must be a {shape_text}; found {describe(arr)}"
        raise MetricInputError(message)
    if arr.dtype != bool:
        if arr.size and not np.isin(arr, (0, 1)).all():
            message = f"{name} must hold only 0/1 or True/False; found values {np.unique(arr)[:10]}"
            raise MetricInputError(message)
        arr = arr.astype(bool)
    return arr


def as_bool_vector(name: str, values: ArrayLike) -> NDArray[np.bool_]:
    """Return ``values`` as a 1-D bool array; integer 0/1 arrays are accepted."""
    return as_bool_array(name, values, 1, "1-D boolean array")


def as_sets(name: str, values: ArrayLike) -> NDArray[np.bool_]:
    """Return prediction sets as a 2-D ``(n, K)`` bool array (True = class in the set)."""
    return as_bool_array(name, values, 2, "2-D boolean array of shape (n, K)")


def as_finite_floats(
    name: str, values: ArrayLike, ndim: int, shape_text: str
) -> NDArray[np.float64]:
    """Return ``values`` as a finite float64 array of ``ndim`` dimensions."""
    arr = np.asarray(values)
    if arr.ndim != ndim or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        message = f"{name} must be a {shape_text}; found {describe(arr)}"
        raise MetricInputError(message)
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        n_bad = int((~np.isfinite(arr)).sum())
        message = f"{name} must be finite; found {n_bad} NaN/inf values (shape {arr.shape})"
        raise MetricInputError(message)
    return arr


def as_float_matrix(
    name: str, values: ArrayLike, *, low: float | None = None, high: float | None = None
) -> NDArray[np.float64]:
    """Return a finite 2-D float64 array, optionally checked to lie in ``[low, high]``."""
    arr = as_finite_floats(name, values, 2, "2-D float array")
    if arr.size and low is not None and high is not None and (arr.min() < low or arr.max() > high):
        message = (
            f"{name} must lie in [{low}, {high}]; found values from {arr.min()} to {arr.max()} "
            f"(shape {arr.shape})"
        )
        raise MetricInputError(message)
    return arr


def as_float_vector(name: str, values: ArrayLike) -> NDArray[np.float64]:
    """Return a finite 1-D float64 array."""
    return as_finite_floats(name, values, 1, "1-D numeric array")


def check_same_rows(**arrays: np.ndarray) -> None:
    """Raise unless every array has the same number of rows."""
    rows = {name: arr.shape[0] for name, arr in arrays.items()}
    if len(set(rows.values())) > 1:
        found = ", ".join(f"{name} has {n}" for name, n in rows.items())
        message = f"arrays must have the same number of rows; found {found}"
        raise MetricInputError(message)


def check_alpha(alpha: float, error: type[MuevalError] = MetricInputError) -> float:
    """``alpha`` as a float, the one check of a miscoverage level in mueval.

    ``error``: what is raised, a :class:`MetricInputError` for a metric's
    argument, a :class:`~mueval.errors.UsageError` for a setting of a run.
    """
    if not isinstance(alpha, (int, float, np.floating)) or not 0.0 < float(alpha) < 1.0:
        message = f"alpha must be a miscoverage level in (0, 1); found {alpha!r}"
        raise error(message)
    return float(alpha)


def mean(values: np.ndarray) -> float:
    """Mean as a Python float; ``nan`` (no warning) for an empty array."""
    return float(values.mean()) if values.size else math.nan


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------
