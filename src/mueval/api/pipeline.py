"""From a loaded table to a :class:`~mueval.run.Run`: :func:`evaluate_table`.

The runner's tasks (:func:`mueval.evaluation.runner.run`), then what a run
records beside them: the diagnostics, the summary, the predictions (streamed to
the run folder with ``out``), the per-user guarantees and the warnings, each a
stage of the progress bar (:class:`~mueval.evaluation.stages.StageProgress`).
"""

from __future__ import annotations

import datetime as dt
import platform
import shutil
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mueval.cpus import resolve_jobs
from mueval.data.cohorts import RowCohorts, resolve_cohorts
from mueval.data.order import natural_key
from mueval.data.table import Table
from mueval.data.users import user_text
from mueval.errors import EvaluationError
from mueval.evaluation.aggregate import splits_frame, summary_frame, user_dtype
from mueval.evaluation.config import EvalConfig
from mueval.evaluation.models import model_records
from mueval.evaluation.records import EvalResult
from mueval.evaluation.runner import run, stage_timings
from mueval.evaluation.stages import StageProgress
from mueval.guarantees.compute import (
    compute_guarantees,
    compute_guarantees_by_block,
    true_pvalues,
)
from mueval.guarantees.run_diagnostics import (
    ERT_FOLDS,
    WSC_DELTA,
    WSC_DIRECTIONS,
    PoolDiagnostics,
    diagnose,
    diagnostic_names,
)
from mueval.guarantees.user_level import default_combine
from mueval.names import (
    STRATEGIES,
    is_pooled,
)
from mueval.run import Run
from mueval.runfolder import (
    PredictionStream,
    finish_run_folder,
    open_run_folder,
    predictions_table,
)
from mueval.strategies import get_strategy
from mueval.version import __version__

if TYPE_CHECKING:
    pass

__all__ = ["evaluate_table"]

#: The prediction columns the per-user guarantees, coverage per class and cohort and
#: the validity test need (not the sets nor the probabilities).
_GUARANTEE_COLUMNS = [
    "strategy",
    "classifier",
    "iteration",
    "target_user",
    "userid",
    "y_true",
    "covered",
    "set_size",
    "p_values",
]


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version(), "mueval": __version__}
    for key, dist in (
        ("mudata", "mudata-mueval"),
        ("numpy", "numpy"),
        ("pandas", "pandas"),
        ("scikit-learn", "scikit-learn"),
        ("mapie", "mapie"),
    ):
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    return out


def _diagnostics_config(level: str) -> dict[str, Any]:
    config: dict[str, Any] = {"diagnostics": level}
    if level == "full":
        # Flat keys: the report prints the configuration one setting a line.
        config.update(
            {
                "diagnostics_features": "MinMaxScaler fitted on the whole table",
                "diagnostics_wsc_directions": WSC_DIRECTIONS,
                "diagnostics_wsc_delta": WSC_DELTA,
                "diagnostics_ert_model": "LogisticRegression(max_iter=1000)",
                "diagnostics_ert_loss": "brier",
                "diagnostics_ert_folds": ERT_FOLDS,
                "diagnostics_random_state": "the iteration's seed",
            }
        )
    return config


def evaluate_table(
    table: Table,
    config: EvalConfig,
    *,
    diagnostics: str = "basic",
    cohorts: str | Path | pd.DataFrame | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    **execution: Any,
) -> Run:
    """Evaluate a loaded :class:`~mueval.data.table.Table` under ``config``.

    ``execution`` holds where the tasks run (``jobs``, default every usable
    CPU, ``backend``, ``scheduler``, ``workers``, ``progress``, and on Dask
    ``in_flight``, the most tasks submitted and not yet gathered), passed to
    :func:`mueval.evaluation.runner.run`; see :func:`~mueval.api.evaluating.evaluate` for every
    parameter. ``progress`` also shows the stages after the tasks
    (:class:`~mueval.evaluation.stages.StageProgress`).
    """
    diagnostic_names(diagnostics)  # an unknown level fails before any work
    # Every usable CPU unless told: the results are the same for any count.
    execution = {**execution, "jobs": resolve_jobs(execution.get("jobs"))}
    table, row_cohorts = resolve_cohorts(
        table,
        cohorts,
        by_cohort=config.conformal.conditioning.by_cohort,
        column=config.conformal.conditioning.column,
        terms=config.conformal.conditioning.terms,
    )
    stages = StageProgress(
        [*_STAGES, *(["saving"] if out is not None else [])], execution.get("progress")
    )
    try:
        result = _evaluate_into(
            table, config, row_cohorts, diagnostics, execution, stages, out, overwrite
        )
    except BaseException:
        stages.close(done=False)  # the bar keeps the name of the stage that failed
        raise
    stages.close()
    return result


#: The stages after the tasks, as the progress bar names them (and ``saving`` with ``out``).
_STAGES = ("diagnostics", "summary", "predictions", "guarantees")


def _evaluate_into(
    table: Table,
    config: EvalConfig,
    row_cohorts: RowCohorts | None,
    diagnostics: str,
    execution: dict[str, Any],
    stages: StageProgress,
    out: str | Path | None,
    overwrite: bool,
) -> Run:
    """:func:`evaluate_table` once its arguments are checked: in memory, or into ``out``."""
    if out is None:
        return _evaluate(table, config, None, row_cohorts, diagnostics, execution, stages)
    target, tmp = open_run_folder(out, overwrite)
    stream = PredictionStream(
        tmp,
        table.classes,
        table.users,
        table.y,
        target_dtype=_target_dtype(table, config),
        pooled=True,
    )
    try:
        result = _evaluate(table, config, stream, row_cohorts, diagnostics, execution, stages)
    except BaseException:
        stream.abort()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    with stages.stage("saving"):
        result.path = finish_run_folder(
            target, tmp, predictions=None, overwrite=overwrite, **result._files()
        )
    result._predictions_file = result.path / "predictions.parquet"
    return result


def _strategy_records(strategies: Sequence[str]) -> dict[str, Any]:
    """``strategy_records``: the records of the run's strategies of the user's (none
    for the built-ins, whose records are mueval's), so that the folder says what
    they were and a report made without them gives no verdict where none exists."""
    own = {s: get_strategy(s).record() for s in strategies if s not in STRATEGIES}
    return {"strategy_records": own} if own else {}


def _target_dtype(table: Table, config: EvalConfig) -> str:
    """``target_user``'s type for the whole run, as :func:`predictions_table` picks it
    from all the run's results at once."""
    per_user = [s for s in config.strategies if not is_pooled(s)]
    return user_dtype(np.unique(table.users).tolist() if per_user else [])


def _evaluate(
    table: Table,
    config: EvalConfig,
    stream: PredictionStream | None,
    row_cohorts: RowCohorts | None,
    diagnostics: str,
    execution: dict[str, Any],
    stages: StageProgress,
) -> Run:
    """The body of :func:`evaluate_table`; with ``stream``, the predictions go
    there as tasks finish and their whole table is never built here: the
    diagnostics take each task's rows and sets as it arrives
    (:class:`PoolDiagnostics`, one iteration's pools at a time), then its
    arrays are dropped once written."""
    condition = config.conformal.conditioning
    start = time.perf_counter()
    pooled = None
    on_task = None
    # The same diagnostics whether pooled as tasks finish or computed at the end.
    diagnostic_options = {
        "alpha": config.conformal.alpha,
        "level": diagnostics,
        "jobs": execution["jobs"],
    }
    if stream is not None:
        pooled = PoolDiagnostics(table.X, table.y, table.users, **diagnostic_options)

        def on_task(results: list[EvalResult]) -> None:
            # The diagnostics first: the stream lets go of what they read.
            pooled.add(results)
            stream.add(results)

    output = run(
        table.X,
        table.y,
        table.users,
        table.classes,
        config,
        cohorts=row_cohorts,
        on_task=on_task,
        **execution,
    )
    t0 = time.perf_counter()
    with stages.stage("diagnostics"):
        if pooled is not None:
            diag = pooled.finish()
        else:
            diag = diagnose(output.results, table.X, table.y, table.users, **diagnostic_options)
    # Streamed, most pools were diagnosed while the tasks ran: count those seconds.
    output.timings["diagnostics_s"] = time.perf_counter() - t0 if pooled is None else pooled.seconds
    with stages.stage("summary"):
        splits = splits_frame(output.results)
        summary = summary_frame(splits, diag.frame if diag.names else None)
    with stages.stage("predictions"):
        if stream is None:
            arrow = predictions_table(output.results, table.classes, table.users, table.y)
            predictions = rows = arrow.to_pandas()
        else:
            arrow = predictions = rows = None
            path = stream.close()
            output.timings["predictions_write_s"] = stream.seconds
    if (rows is not None and rows.empty) or (stream is not None and not stream.row_groups):
        # A run of no prediction row has nothing to report or compare: said here, not
        # by every reader of a run folder written anyway.
        skipped = [r.note for r in output.results if r.note]
        message = (
            "every task was skipped, so the run has no prediction row"
            + (f" ({len(skipped)} tasks; the first: {skipped[0]})" if skipped else "")
            + "; nothing was written. Choose --small-cal full-set (sets of every class "
            "where calibration is too small), a larger alpha, or more rows per user"
        )
        raise EvaluationError(message)
    user_cohorts = _user_cohorts_frame(table, row_cohorts)
    recorded = {
        **config.record(),
        "condition": condition.text,
        "cohort_column": None if row_cohorts is None else row_cohorts.column,
        # How each strategy's iterations are combined in the per-user verdicts.
        "user_combine": {s: default_combine(s, config.split) for s in config.strategies},
        **_strategy_records(config.strategies),
        "jobs": execution["jobs"],
        "backend": execution.get("backend", "loky"),
        **_diagnostics_config(diagnostics),
    }
    t0 = time.perf_counter()
    options: dict[str, Any] = {
        "alpha": config.conformal.alpha,
        "n_classes": len(table.classes),
        "classes": table.classes,
        "condition": condition,
        "user_cohorts": user_cohorts,
        "config": recorded,
    }
    with stages.stage("guarantees"):
        blocks = None if rows is not None else _blocks_of(path)
        if blocks is not None and blocks[0]:
            # One (strategy, classifier)'s rows at a time, read back from the file.
            def read_block(strategy: str, classifier: str) -> pd.DataFrame:
                return _guarantee_rows(path, table.classes, block=(strategy, classifier))

            found = compute_guarantees_by_block(
                read_block, *blocks, splits, on_step=stages.detail, **options
            )
        else:
            if rows is None:
                rows = _guarantee_rows(path, table.classes)
            found = compute_guarantees(rows, splits, on_step=stages.detail, **options)
    # Intervals, verdicts, validity tests and warnings: after the tasks, so
    # timed apart (the exact KS tests of the validity check dominate it).
    output.timings["guarantees_s"] = time.perf_counter() - t0
    # Per stage and strategy/classifier, with what came after the tasks (the
    # last row group of the stream is written after the runner returned).
    by_stage = stage_timings(output.results)
    for key, seconds in diag.seconds.items():
        by_stage.setdefault(key, {})["diagnostics_s"] = round(seconds, 6)
    info: dict[str, Any] = {
        "dataset": table.info,
        "classes": list(table.classes),
        "config": recorded,
        "models": model_records(config.classifiers, config.user_models),
        "versions": _versions(),
        "skipped": output.notes,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "timings": {**output.timings, "total_s": time.perf_counter() - start},
        "stage_timings": by_stage,
        "warnings": found.warnings,
    }
    return Run(
        summary=summary,
        splits=splits,
        predictions=predictions,
        diagnostics=diag.frame if diag.names else None,
        size_coverage=diag.size_coverage if diag.names else None,
        user_coverage=found.user_coverage,
        coverage_summary=found.coverage_summary,
        conditional_coverage=found.conditional_coverage,
        user_validity=found.user_validity,
        user_cohorts=user_cohorts,
        info=info,
        _arrow=arrow,
    )


def _guarantee_rows(
    path: Path, classes: Sequence[str], block: tuple[str, str] | None = None
) -> pd.DataFrame:
    """The prediction columns the guarantees read, one row group at a time.

    Each row's list of p-values (an object per row once in pandas) is reduced
    to that of its true class (``p_true``, :func:`true_pvalues`) as its row
    group is read, so the whole ``p_values`` column is never held in memory.
    With ``block`` (strategy, classifier), only that block's rows.
    """
    file = pq.ParquetFile(path)
    if file.num_row_groups == 0:
        frame: pd.DataFrame = pq.read_table(path, columns=_GUARANTEE_COLUMNS).to_pandas()
        return frame
    parts: list[pd.DataFrame] = []
    for i in range(file.num_row_groups):
        if block is not None:
            keys = file.read_row_group(i, columns=["strategy", "classifier"])
            mask = pc.and_(
                pc.equal(keys["strategy"], block[0]), pc.equal(keys["classifier"], block[1])
            )
            if not pc.any(mask).as_py():
                continue
            arrow = file.read_row_group(i, columns=_GUARANTEE_COLUMNS).filter(mask)
        else:
            arrow = file.read_row_group(i, columns=_GUARANTEE_COLUMNS)
        group = arrow.to_pandas()
        group["p_true"] = true_pvalues(group, classes)
        parts.append(group.drop(columns="p_values"))
    if not parts:
        empty: pd.DataFrame = (
            file.read_row_group(0, columns=_GUARANTEE_COLUMNS).slice(0, 0).to_pandas()
        )
        return empty.assign(p_true=np.zeros(0)).drop(columns="p_values")
    return pd.concat(parts, ignore_index=True)


def _blocks_of(path: Path) -> tuple[list[str], list[str]]:
    """The strategies and the classifiers of a predictions file, each in the
    order of its first row, read one row group at a time."""
    file = pq.ParquetFile(path)
    strategies: dict[str, None] = {}
    classifiers: dict[str, None] = {}
    for i in range(file.num_row_groups):
        keys = file.read_row_group(i, columns=["strategy", "classifier"])
        for found, column in ((strategies, "strategy"), (classifiers, "classifier")):
            for value in pc.unique(keys[column]).to_pylist():
                found.setdefault(value, None)
    return list(strategies), list(classifiers)


def _user_cohorts_frame(table: Table, row_cohorts: RowCohorts | None) -> pd.DataFrame | None:
    """``user, cohort`` for the run folder, users as the table spells them."""
    if row_cohorts is None:
        return None
    users = pd.unique(table.users)
    cohorts = [row_cohorts.users[user_text(u)] for u in users]
    frame = pd.DataFrame({"user": users, "cohort": cohorts})
    return frame.sort_values("user", key=lambda c: c.map(natural_key)).reset_index(drop=True)
