"""The cells of a run's exact tests: one row per (strategy, classifier, user,
iteration) calibration set, or per class cell of it, with its threshold rank.

:func:`verdict_cells` reads each user's test and covered rows from the
predictions and the calibration size from ``splits.parquet``; under
class-conditional calibration :func:`class_cells` gives one row per class
cell. :func:`strategy_parts` adds the ranks (and, under a class-stratified
split, each cell's exact law) per strategy: the per-user verdicts, the pooled
test and the tests per class and cohort all read their cells from it, made once
per rows inside :func:`shared_cells`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, cast

import numpy as np
import pandas as pd

from mueval.conformal.thresholds import min_calibration_size
from mueval.data.frames import frame_column
from mueval.data.users import user_texts
from mueval.errors import DataError
from mueval.guarantees.covered_law import threshold_rank
from mueval.guarantees.stratified_null import cell_laws
from mueval.guarantees.user_level import cell_ranks, default_combine
from mueval.guarantees.verdict_settings import no_verdict_reason
from mueval.names import is_pooled

__all__ = [
    "class_cells",
    "shared_cells",
    "strategy_parts",
    "verdict_cells",
]


def _prediction_rows(predictions: pd.DataFrame, **extra: np.ndarray) -> pd.DataFrame:
    """One row per prediction: its task key, user and covered flag, and ``extra`` columns.

    The task's key in splits.parquet is (strategy, classifier, iteration,
    target user), the target user empty for MM.
    """
    if "target_user" in predictions.columns:
        target = frame_column(user_texts(predictions["target_user"]))
    else:
        codes = predictions["strategy"].astype(str).str.lower()
        pooled = codes.isin([c for c in pd.unique(codes) if is_pooled(c)]).to_numpy()
        target = np.where(pooled, "", user_texts(predictions["userid"]).to_numpy())
    return pd.DataFrame(
        {
            "strategy": frame_column(predictions["strategy"]),
            "classifier": frame_column(predictions["classifier"]),
            "iteration": frame_column(predictions["iteration"]),
            "user": frame_column(predictions["userid"]),
            "target": target,
            **extra,
            "covered": predictions["covered"].astype(bool).to_numpy(dtype=np.int64),
        }
    )


#: The key of a task in splits.parquet, the target user as text (empty for MM).
_TASK_KEYS = ["strategy", "classifier", "iteration", "target"]


def _covered_counts(rows: pd.DataFrame, *by: str) -> pd.DataFrame:
    """Test rows (``n_test``) and covered ones (``n_covered``) per task and ``by``."""
    return (
        rows.groupby([*_TASK_KEYS, *by], sort=True, observed=True)["covered"]
        .agg(n_test="size", n_covered="sum")
        .reset_index()
    )


def _tasks(splits: pd.DataFrame, **columns: object) -> pd.DataFrame:
    """One row per task of ``splits``: its key and ``columns`` (the first row's)."""
    return pd.DataFrame(
        {
            "strategy": frame_column(splits["strategy"]),
            "classifier": frame_column(splits["classifier"]),
            "iteration": frame_column(splits["iteration"]),
            "target": frame_column(user_texts(splits["user"])),
            **columns,
        }
    ).drop_duplicates(_TASK_KEYS)


def verdict_cells(predictions: pd.DataFrame, splits: pd.DataFrame) -> pd.DataFrame:
    """The input of :func:`~mueval.guarantees.user_level.user_verdicts` for a run.

    Parameters
    ----------
    predictions : DataFrame
        Prediction rows: ``strategy, classifier, iteration, userid, covered``
        and ``target_user`` (without it, every strategy but MM is taken as
        testing each row's own user).
    splits : DataFrame
        ``splits.parquet``: ``strategy, classifier, iteration, user, n_cal``.

    Returns
    -------
    DataFrame
        One row per (strategy, classifier, user, iteration): ``n_cal`` (the
        calibration rows of the task that tested the user: for MM the one
        calibration set of the iteration, shared by every user), ``n_test``
        and ``n_covered`` (the user's test rows and covered ones). ``user``
        holds the predictions' own ids.

    Raises
    ------
    DataError
        A task of the predictions has no calibration size in the splits.
    """
    counts = _covered_counts(_prediction_rows(predictions), "user")
    cal = _tasks(
        splits,
        n_cal=pd.to_numeric(splits["n_cal"], errors="coerce").to_numpy(),
        **(
            {"pooled_order": frame_column(splits["pooled_order"])}
            if "pooled_order" in splits.columns
            else {}
        ),
    )
    cells = counts.merge(cal, on=_TASK_KEYS, how="left")
    missing = cells[cells["n_cal"].isna()]
    if len(missing):
        r = missing.iloc[0]
        msg = (
            f"{r['strategy']} / {r['classifier']} iteration {r['iteration']} user {r['user']}: "
            "prediction rows without a calibration size (n_cal) in the splits, which the "
            "per-user verdict needs"
        )
        raise DataError(msg[:300])
    cells["n_cal"] = cells["n_cal"].astype(np.int64)
    columns = ["strategy", "classifier", "user", "iteration", "n_cal", "n_test", "n_covered"]
    return cells[columns + (["pooled_order"] if "pooled_order" in cells.columns else [])]


def class_cells(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    classes: Sequence[str],
    *,
    alpha: float,
    rule: str,
) -> pd.DataFrame:
    """The Mondrian cells of a class-conditional run, for the exact per-user test.

    Under class-conditional calibration a test row of class ``c`` is covered
    when its score is within class ``c``'s threshold, the ``k``-th smallest of
    the cell's ``n_c`` calibration scores; a user's covered count in one
    iteration is the sum over its classes' cells
    (:func:`~mueval.guarantees.covered_law.null_pmf`).

    Parameters
    ----------
    predictions : DataFrame
        As for :func:`verdict_cells`, with ``y_true``.
    splits : DataFrame
        ``splits.parquet`` with ``n_cal_class`` (each class's calibration rows
        in the task's cell, in class order).
    classes : sequence of str
        Class names in index order (``run.json``'s ``classes``).
    alpha : float
        The run's miscoverage level.
    rule : {"study", "mapie"}
        The threshold rule.

    Returns
    -------
    DataFrame
        One row per (strategy, classifier, user, iteration, class) with test
        rows: ``n_cal`` (the cell's calibration rows), ``n_test``,
        ``n_covered`` and ``rank``: the rule's rank in the cell, or
        ``n_cal + 1`` (covered surely) where the task's cohort was below the
        minimum and answered with every class (``--small-cal full-set``), and
        ``class`` (the cell's class name, for the exact test per class of
        :mod:`.conditional_verdicts`). Tasks without ``n_cal_class`` are left out.
    """
    index = {c: i for i, c in enumerate(classes)}
    rows = _prediction_rows(
        predictions, klass=predictions["y_true"].map(index).to_numpy(dtype=np.int64)
    )
    counts = _covered_counts(rows, "user", "klass")
    tasks = _tasks(
        splits,
        task_n_cal=pd.to_numeric(splits["n_cal"], errors="coerce").to_numpy(),
        n_cal_class=frame_column(splits["n_cal_class"]),
    )
    tasks = tasks[[v is not None and not _is_missing(v) for v in tasks["n_cal_class"]]]
    cells = counts.merge(tasks, on=_TASK_KEYS, how="inner")
    cells["n_cal"] = [
        int(sizes[k]) for sizes, k in zip(cells["n_cal_class"], cells["klass"], strict=True)
    ]
    minimum = min_calibration_size(alpha)
    full = cells["task_n_cal"].to_numpy() < minimum
    cells["rank"] = [
        n + 1 if surely else threshold_rank(n, alpha, rule)
        for n, surely in zip(cells["n_cal"], full, strict=True)
    ]
    cells["class"] = [str(classes[k]) for k in cells["klass"]]
    columns = ["strategy", "classifier", "user", "iteration", "n_cal", "n_test", "n_covered"]
    return cells[[*columns, "rank", "class"]]


def _is_missing(value: object) -> bool:
    """True for a missing list cell (None or a float NaN)."""
    return isinstance(value, float) and np.isnan(value)


#: One strategy's verdict options, cells and whether it has a test (:func:`strategy_parts`).
_Part = tuple[str, dict[str, Any], pd.DataFrame, bool]
#: The identity of the rows, and the settings, the parts were made of.
_PartsKey = tuple[int, int, float, str, tuple[str, ...] | None]
#: The rows (held, so that their identities stay theirs) and their parts.
_Shared = tuple[pd.DataFrame, pd.DataFrame, list[_Part]]

#: Within :func:`shared_cells`: the :func:`strategy_parts` already made, by the
#: identity of their rows and the value of their settings.
_SHARED_PARTS: ContextVar[dict[_PartsKey, _Shared] | None] = ContextVar(
    "mueval_shared_parts", default=None
)


@contextmanager
def shared_cells() -> Iterator[None]:
    """Within the block, :func:`strategy_parts` makes the cells of one set of rows once.

    The per-user verdicts, the pooled test and the tests per class and cohort
    each ask for the same cells (:func:`compute_guarantees
    <mueval.guarantees.compute.compute_guarantees>` asks three times); under
    the exact law of a stratified split, each cell's law costs a few
    milliseconds. Inside the block the rows are read, never changed, so the
    cells of the same ``predictions`` and ``splits`` objects (held here, so
    their identities stay theirs) and equal settings are made once; each
    caller gets its own shallow copies. A block inside another shares the outer
    one's cells (a reader checks the stored summary after the verdicts).
    """
    if _SHARED_PARTS.get() is not None:
        yield
        return
    token = _SHARED_PARTS.set({})
    try:
        yield
    finally:
        _SHARED_PARTS.reset(token)


def strategy_parts(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    alpha: float,
    settings: Mapping[str, Any],
    classes: Sequence[str] | None,
) -> list[tuple[str, dict[str, Any], pd.DataFrame, bool]]:
    """Per strategy: its verdict options, its cells with their ``rank`` and
    whether it has a test (False: every rank ``nan``).

    The cells are :func:`verdict_cells` with their ranks, or, under
    class-conditional calibration, :func:`class_cells` (with ``class``); inside
    :func:`shared_cells`, made once per rows.
    """
    shared = _SHARED_PARTS.get()
    if shared is None:
        return _made_parts(predictions, splits, alpha, settings, classes)
    key = (
        id(predictions),
        id(splits),
        float(alpha),
        repr(sorted(settings.items())),
        None if classes is None else tuple(classes),
    )
    if key not in shared:
        shared[key] = (
            predictions,
            splits,
            _made_parts(predictions, splits, alpha, settings, classes),
        )
    parts = shared[key][2]
    return [(s, dict(o), cells.copy(deep=False), t) for s, o, cells, t in parts]


def _made_parts(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    alpha: float,
    settings: Mapping[str, Any],
    classes: Sequence[str] | None,
) -> list[_Part]:
    """:func:`strategy_parts`, made afresh.

    The cells are :func:`verdict_cells` with their ranks, or, under
    class-conditional calibration, :func:`class_cells` (with ``class``); the
    per-user verdicts, the pooled test and the tests per class and cohort
    (:mod:`.conditional_verdicts`) all take them from here.
    """
    cells = verdict_cells(predictions, splits)
    condition = settings["condition"]
    by_class = None
    if condition.per_class and classes is not None and "n_cal_class" in splits.columns:
        by_class = class_cells(predictions, splits, classes, alpha=alpha, rule=settings["rule"])
    recorded = settings["combine"] or {}
    parts: list[_Part] = []
    for strategy, part in cells.groupby("strategy", sort=True):
        strategy = str(strategy)
        options = {
            "alpha": alpha,
            "level": settings["level"],
            "correction": settings["correction"],
            "combine": recorded.get(strategy) or default_combine(strategy, settings["split"]),
            "split": settings["split"],
        }
        mondrian = None if by_class is None else by_class[by_class["strategy"] == strategy]
        # Class cells count only when every test row of the strategy is in one.
        complete = mondrian is not None and mondrian["n_test"].sum() == part["n_test"].sum()
        reason = no_verdict_reason(strategy, {**settings, "class_cells": complete})
        # A calibration set the --small-cal policy refuses leaves no test rows
        # (class cells without cohorts have no minimum).
        refused = (
            settings["small_cal"] != "full-set"
            and not (condition.per_class and not condition.by_cohort)
            and bool((part["n_cal"] < min_calibration_size(alpha)).any())
        )
        if refused or reason is not None:
            parts.append((strategy, options, part.assign(rank=np.nan), False))
        elif condition.per_class:
            # A frame here: per-class calibration without its cells has a reason above.
            parts.append((strategy, options, cast("pd.DataFrame", mondrian), True))
        else:
            part = _with_stratified_laws(
                part, alpha, settings, None if classes is None else len(classes)
            )
            ranks = cell_ranks(
                part, alpha=alpha, rule=settings["rule"], small_cal=settings["small_cal"]
            )
            parts.append((strategy, options, part.assign(rank=ranks), True))
    return parts


def _with_stratified_laws(
    part: pd.DataFrame, alpha: float, settings: Mapping[str, Any], n_classes: int | None
) -> pd.DataFrame:
    """The cells with ``null_pmf``, the exact law of a class-stratified split
    (:mod:`~mueval.guarantees.stratified_null`) where the task recorded its
    ``pooled_order``; without one, the cells as they are (the Beta-Binomial)."""
    if "pooled_order" not in part.columns:
        return part
    orders = part["pooled_order"]
    if not any(v is not None and not _is_missing(v) for v in orders):
        return part.drop(columns="pooled_order")
    ranks = [threshold_rank(int(n), alpha, settings["rule"]) for n in part["n_cal"]]
    laws = cell_laws(part, ranks, n_classes)
    # One law (an array, or None) per cell: an object column.
    column = pd.Series(laws, index=part.index, dtype=object)
    return part.drop(columns="pooled_order").assign(null_pmf=column)
