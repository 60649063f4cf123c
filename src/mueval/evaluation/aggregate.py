"""Aggregation of per-split metrics (docs/protocol.md, "Aggregation").

- MM: one value per (iteration, classifier), over all its test rows.
- Per-user strategies: one value per (iteration, user, classifier); their mean
  over users for each (iteration, classifier), undefined (NaN) values skipped.
- Then, for every strategy: mean and sample standard deviation (ddof=1) over the
  iterations; ``n`` counts the iterations with a defined value. For the study's
  metrics one undefined iteration makes the mean and SD undefined (its R code
  averages iterations without ``na.rm``); the diagnostics skip undefined values.

The conditional-coverage diagnostics (:mod:`mueval.guarantees.run_diagnostics`) already have one
value per (strategy, classifier, iteration), computed on the pooled test rows;
they join the summary after the study's metrics, aggregated the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from mueval.evaluation.records import EvalResult
from mueval.names import (
    FULL_DIAGNOSTICS,
    METRICS,
    TASK_KEY_DTYPES,
    ordered_classifiers,
    ordered_strategies,
)

__all__ = [
    "per_iteration",
    "splits_frame",
    "summarize",
    "summary_frame",
    "user_dtype",
]

_KEYS = ["strategy", "classifier", "iteration", "seed", "user", "n_train", "n_test", "n_cal"]


def user_dtype(users: Iterable[int | str | None]) -> str:
    """``Int64`` when every user id is a whole number, else ``string`` (both keep
    <NA> for the mixed model's rows, which have no target user)."""
    return "Int64" if all(u is None or isinstance(u, int) for u in users) else "string"


def splits_frame(results: Sequence[EvalResult]) -> pd.DataFrame:
    """One row per (strategy, classifier, iteration, user) with every metric.

    Parameters
    ----------
    results : sequence of EvalResult

    Returns
    -------
    DataFrame
        Columns ``strategy, classifier, iteration, seed, user (Int64 for numeric
        ids, else string; <NA> for mm),
        n_train, n_test, n_cal``, ``n_cal_cell`` (Int64: the smallest per-class
        calibration cell under class-conditional calibration, <NA> otherwise),
        ``n_cal_class`` (a list of each class's calibration rows in that cell, in
        class order, or None), ``pooled_order`` (the signed class codes of the
        pooled calibration and test rows in score order under a stratified split
        of the target's rows, :mod:`mueval.evaluation.pooled_order`, or None)
        and one float column per name of :data:`METRICS`.
    """
    records = []
    for r in results:
        row = {
            "strategy": r.strategy,
            "classifier": r.classifier,
            "iteration": r.iteration,
            "seed": r.seed,
            "user": r.user,
            "n_train": r.n_train,
            "n_test": r.n_test,
            "n_cal": r.n_cal,
            "n_cal_cell": r.n_cal_cell,
            "n_cal_class": None if r.n_cal_class is None else list(r.n_cal_class),
            "pooled_order": None if r.pooled_order is None else list(r.pooled_order),
        }
        row.update({m: float(r.metrics.get(m, np.nan)) for m in METRICS})
        records.append(row)
    frame = pd.DataFrame.from_records(
        records, columns=[*_KEYS, "n_cal_cell", "n_cal_class", "pooled_order", *METRICS]
    )
    frame = frame.astype(
        {
            **TASK_KEY_DTYPES,
            "user": user_dtype(r.user for r in results),
            "n_train": "int64",
            "n_test": "int64",
            "n_cal": "int64",
            "n_cal_cell": "Int64",
        }
    )
    for m in METRICS:
        frame[m] = frame[m].astype("float64")
    return frame


def per_iteration(splits: pd.DataFrame) -> pd.DataFrame:
    """Mean over users (NaN skipped) for each (strategy, classifier, iteration).

    For MM there is one row per group already, so this is the identity there.

    Parameters
    ----------
    splits : DataFrame
        As returned by :func:`splits_frame`.

    Returns
    -------
    DataFrame
        Columns ``strategy, classifier, iteration`` and the metrics.
    """
    grouped = splits.groupby(["strategy", "classifier", "iteration"], sort=False)
    # pandas' mean skips NaN: an undefined value of one user does not erase the
    # iteration (the protocol's "undefined values skipped").
    return grouped[list(METRICS)].mean().reset_index()


def summary_frame(splits: pd.DataFrame, diagnostics: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean and sample SD over iterations, one row per (strategy, classifier, metric).

    Parameters
    ----------
    splits : DataFrame
        As returned by :func:`splits_frame`.
    diagnostics : DataFrame, optional
        One row per (strategy, classifier, iteration) with diagnostic columns (the
        ``frame`` of :func:`mueval.guarantees.run_diagnostics.diagnose`); each column present becomes
        extra metric rows after the study's metrics.

    Returns
    -------
    DataFrame
        Columns ``strategy, classifier, metric, mean, sd, n`` ordered by strategy,
        classifier and metric in table order (the study's metrics, then the
        diagnostics); ``sd`` is NaN for a single iteration.
    """
    iters = per_iteration(splits)
    names = list(METRICS)
    if diagnostics is not None:
        extra = [d for d in FULL_DIAGNOSTICS if d in diagnostics.columns]
        keys = ["strategy", "classifier", "iteration"]
        iters = iters.merge(diagnostics[[*keys, *extra]], on=keys, how="left")
        names += extra
    rows = []
    for (strategy, classifier), group in iters.groupby(["strategy", "classifier"], sort=False):
        for metric in names:
            values = group[metric].to_numpy(dtype=float)
            defined = values[~np.isnan(values)]
            n = len(defined)
            if metric in METRICS and n < len(values):
                # The study's metrics: an undefined iteration makes the mean and SD
                # undefined, as R's colMeans and sd without na.rm do in its code.
                mean = sd = float("nan")
            else:
                mean = float(defined.mean()) if n else float("nan")
                sd = float(defined.std(ddof=1)) if n > 1 else float("nan")
            rows.append((strategy, classifier, metric, mean, sd, n))
    out = pd.DataFrame(rows, columns=["strategy", "classifier", "metric", "mean", "sd", "n"])
    order = {
        "strategy": {s: i for i, s in enumerate(ordered_strategies(out["strategy"]))},
        "classifier": {c: i for i, c in enumerate(ordered_classifiers(out["classifier"]))},
        "metric": {m: i for i, m in enumerate(names)},
    }
    out = out.sort_values(
        ["strategy", "classifier", "metric"], key=lambda col: col.map(order[str(col.name)])
    ).reset_index(drop=True)
    out["n"] = out["n"].astype("int64")
    return out


def summarize(results: Sequence[EvalResult]) -> pd.DataFrame:
    """:func:`summary_frame` of :func:`splits_frame` of ``results``."""
    return summary_frame(splits_frame(results))
