"""The curve's summary: one point per (use, k), each user weighing the same, with
a Student-t 95 % interval over users; and the notes on points that say nothing.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats

from mueval.names import CURVE_USES

__all__ = ["CURVE_METRICS", "informative_notes", "summarise"]

#: The metrics of the curve, with the range their intervals are clipped to
#: (set size: up to the number of classes).
CURVE_METRICS: tuple[str, ...] = ("coverage", "setsize", "accuracy")


def _t_interval(values: np.ndarray, low: float, high: float) -> tuple[float, float, float]:
    """Mean and Student-t 95 % interval over users, clipped to [low, high]."""
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return math.nan, math.nan, math.nan
    mean = float(values.mean())
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    return mean, max(low, mean - half), min(high, mean + half)


def summarise(per_user: pd.DataFrame, n_classes: int) -> pd.DataFrame:
    """The curve: one row per (use, k), users weighing the same.

    Parameters
    ----------
    per_user : DataFrame
        One row per (user, iteration, use, k), as :func:`curve_run` makes it.
    n_classes : int
        Upper bound of the set-size interval.

    Returns
    -------
    DataFrame
        ``use, k, n_users, coverage, coverage_low, coverage_high, setsize,
        setsize_low, setsize_high, accuracy, accuracy_low, accuracy_high,
        n_cal, n_adapt, n_small_cal, n_tasks``.
    """
    limits = {"coverage": (0.0, 1.0), "setsize": (0.0, float(n_classes)), "accuracy": (0.0, 1.0)}
    out = []
    order = {u: i for i, u in enumerate(CURVE_USES)}
    points: list[tuple[tuple[str, int], pd.DataFrame]] = [
        ((str(use), int(cast(int, k))), group) for (use, k), group in per_user.groupby(["use", "k"])
    ]
    for (use, k), group in sorted(points, key=lambda item: (order[item[0][0]], item[0][1])):
        by_user = group.groupby("user")[list(CURVE_METRICS)].mean()
        row: dict[str, Any] = {"use": use, "k": k}
        row["n_users"] = int(by_user["coverage"].notna().sum())
        for metric in CURVE_METRICS:
            mean, low, high = _t_interval(by_user[metric].to_numpy(float), *limits[metric])
            row.update({metric: mean, f"{metric}_low": low, f"{metric}_high": high})
        row["n_cal"] = float(group["n_cal"].mean())
        row["n_adapt"] = float(group["n_adapt"].mean())
        row["n_small_cal"] = int(group["small_cal"].sum())
        row["n_tasks"] = len(group)
        out.append(row)
    return pd.DataFrame(out)


def informative_notes(curve_frame: pd.DataFrame, n_classes: int) -> list[str]:
    """A note for every point whose sets say nothing: mean size ``n_classes``
    (every set holds every class) or at most 1 (a single guess, or empty sets).

    Parameters
    ----------
    curve_frame : DataFrame
        :func:`summarise`'s rows.
    n_classes : int
    """
    notes = []
    for row in curve_frame.itertuples():
        size = float(row.setsize)  # type: ignore[arg-type]
        if not np.isfinite(size):
            continue
        if size >= n_classes - 1e-9:
            why = " (its calibration sets are too small for alpha)" if row.n_small_cal else ""
            notes.append(
                f"use {row.use}, k={row.k}: every set holds all {n_classes} classes{why}: "
                "this point says nothing about k"
            )
        elif size <= 1.0:
            notes.append(
                f"use {row.use}, k={row.k}: mean set size {size:.2f} <= 1: the sets are no "
                "more than a single guess"
            )
    return notes
