"""The run folder (format_version 1) and the terminal table.

The folder holds ``run.json``, ``summary.csv``, ``splits.parquet`` and
``predictions.parquet``, and, unless the run's diagnostics level is ``none``,
``diagnostics.parquet`` and ``size_coverage.csv`` (additions that readers of
format_version 1 may ignore). It is written into a hidden temporary folder beside the
target and renamed into place only when every file is complete, so a failed or
interrupted run leaves nothing that looks like a finished run.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mueval.diagnose import FULL_DIAGNOSTICS
from mueval.errors import OutputError
from mueval.models import CLASSIFIER_NAMES, CLASSIFIERS
from mueval.runner import METRICS, EvalResult
from mueval.strategies import STRATEGIES, STRATEGY_NAMES

FORMAT_VERSION = 1

#: Metrics printed in percent by tables (the rest as fractions or counts).
PERCENT_METRICS: frozenset[str] = frozenset(
    {"accuracy", "sensitivity", "specificity", "F1", "weighted_F1", "coverage", "pctempty"}
)


def format_cell(mean: float, sd: float, percent: bool) -> str:
    """``mean±sd`` with two decimals, both times 100 when ``percent``.

    Parameters
    ----------
    mean, sd : float
        Fractions (NaN prints as ``nan``).
    percent : bool

    Returns
    -------
    str
        E.g. ``"78.65±1.10"``.
    """
    factor = 100.0 if percent else 1.0
    return f"{mean * factor:.2f}±{sd * factor:.2f}"


#: Diagnostics whose values are of the order of 1e-3 (HSIC of a 0/1 indicator,
#: a Brier excess risk): two decimals would print them all as 0.00.
SCIENTIFIC_METRICS: frozenset[str] = frozenset({"hsic_size_coverage", "ert"})


def format_diagnostic_cell(metric: str, mean: float, sd: float) -> str:
    """``mean±sd`` of a diagnostic: two decimals, or ``1.2e-03±4.0e-04`` for tiny ones.

    Parameters
    ----------
    metric : str
        Diagnostic name (see :data:`SCIENTIFIC_METRICS`).
    mean, sd : float
        Fractions (NaN prints as ``nan``).

    Returns
    -------
    str
    """
    if metric in SCIENTIFIC_METRICS:
        return f"{mean:.1e}±{sd:.1e}"
    return format_cell(mean, sd, percent=False)


def format_table(
    summary: pd.DataFrame,
    metrics: Sequence[str] = METRICS,
    diagnostics: Sequence[str] | None = None,
) -> str:
    """Terminal table: one block per strategy, metrics as rows, classifiers as columns.

    Parameters
    ----------
    summary : DataFrame
        ``strategy, classifier, metric, mean, sd, n`` (see ``summary.csv``).
    metrics : sequence of str
        Rows to print, in order.
    diagnostics : sequence of str, optional
        Diagnostic rows printed below a rule at the bottom of each block.
        Default: every diagnostic of :data:`mueval.diagnose.FULL_DIAGNOSTICS`
        present in ``summary``.

    Returns
    -------
    str
    """
    if diagnostics is None:
        present = set(summary["metric"])
        diagnostics = [d for d in FULL_DIAGNOSTICS if d in present]
    blocks = []
    for strategy in [s for s in STRATEGIES if s in set(summary["strategy"])]:
        part = summary[summary["strategy"] == strategy]
        classifiers = [c for c in CLASSIFIERS if c in set(part["classifier"])]
        cells = {
            (row.metric, row.classifier): (
                format_diagnostic_cell(row.metric, row.mean, row.sd)
                if row.metric in diagnostics
                else format_cell(row.mean, row.sd, row.metric in PERCENT_METRICS)
            )
            for row in part.itertuples()
        }
        header = ["metric", *[CLASSIFIER_NAMES[c] for c in classifiers]]
        lines = [header]
        for metric in metrics:
            label = f"{metric} (%)" if metric in PERCENT_METRICS else metric
            lines.append([label, *[cells.get((metric, c), "") for c in classifiers]])
        n_study = len(lines)
        for metric in diagnostics:
            lines.append([metric, *[cells.get((metric, c), "") for c in classifiers]])
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        text = [
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(line, widths))
            )
            for line in lines
        ]
        rule = "-" * len(text[0])
        n_iter = int(part["n"].max()) if len(part) else 0
        title = f"{STRATEGY_NAMES[strategy]}: mean±SD over {n_iter} iterations"
        body = [title, text[0], rule, *text[1:n_study]]
        if len(text) > n_study:
            # The diagnostics are computed on the pooled test rows, not per user:
            # a rule keeps them apart from the study's rows.
            body += [rule, *text[n_study:]]
        blocks.append("\n".join(body))
    return "\n\n".join(blocks)


def predictions_table(
    results: Sequence[EvalResult],
    classes: Sequence[str],
    table_users: np.ndarray,
    y: np.ndarray,
) -> pa.Table:
    """One row per test row per (strategy, classifier, iteration, target user).

    Results whose conformal step was skipped (``--small-cal skip``) have no rows.

    Parameters
    ----------
    results : sequence of EvalResult
    classes : sequence of str
    table_users : ndarray of int, shape (n_rows,)
        User of every row of the dataset table.
    y : ndarray of int, shape (n_rows,)
        True class index of every row.

    Returns
    -------
    pyarrow.Table
    """
    names = np.asarray(classes, dtype=object)
    kept = [r for r in results if r.sets is not None]
    K = len(classes)
    n = sum(r.n_test for r in kept)

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    rows = cat([r.rows for r in kept], np.int64)
    y_true = y[rows]
    y_pred = cat([r.y_pred for r in kept], np.int64)
    sets = np.vstack([r.sets for r in kept]) if kept else np.zeros((0, K), dtype=bool)
    pvals = np.vstack([r.pvalues for r in kept]) if kept else np.zeros((0, K))
    proba = np.vstack([r.proba for r in kept]) if kept else np.zeros((0, K))
    set_size = sets.sum(axis=1).astype(np.int64)
    target = [r.user for r in kept for _ in range(r.n_test)]

    def repeat(attr: str) -> list[Any]:
        return [getattr(r, attr) for r in kept for _ in range(r.n_test)]

    set_names = names[np.nonzero(sets)[1]] if n else np.zeros(0, dtype=object)
    set_offsets = np.concatenate([[0], np.cumsum(set_size)]).astype(np.int32)
    k_offsets = (np.arange(n + 1) * K).astype(np.int32)
    # Scalars through pandas, so that readers get target_user back as Int64 (the
    # pandas metadata of the file says so) rather than float64 with NaN.
    scalars = pd.DataFrame(
        {
            "strategy": pd.Series(repeat("strategy"), dtype=str),
            "classifier": pd.Series(repeat("classifier"), dtype=str),
            "iteration": np.asarray(repeat("iteration"), dtype=np.int64),
            "seed": np.asarray(repeat("seed"), dtype=np.int64),
            "target_user": pd.array(target, dtype="Int64"),
            "userid": table_users[rows].astype(np.int64),
            "row_id": rows,
            "y_true": pd.Series(names[y_true], dtype=str),
            "y_pred": pd.Series(names[y_pred], dtype=str),
        }
    )
    table = pa.Table.from_pandas(scalars, preserve_index=False)
    table = table.append_column(
        "pred_set",
        pa.ListArray.from_arrays(pa.array(set_offsets), pa.array(set_names.tolist(), pa.string())),
    )
    table = table.append_column("set_size", pa.array(set_size, pa.int64()))
    covered = sets[np.arange(n), y_true] if n else np.zeros(0, dtype=bool)
    table = table.append_column("covered", pa.array(covered, pa.bool_()))
    for name, values in (("p_values", pvals), ("proba", proba)):
        column = pa.ListArray.from_arrays(
            pa.array(k_offsets), pa.array(values.ravel(), pa.float64())
        )
        table = table.append_column(name, column)
    return table


def check_target(out_dir: str | Path, overwrite: bool = False) -> Path:
    """Fail early (before any work) when ``out_dir`` cannot receive a run.

    Parameters
    ----------
    out_dir : path
    overwrite : bool

    Returns
    -------
    Path
        The resolved folder.

    Raises
    ------
    OutputError
        The folder exists and is not empty (without ``overwrite``), or no folder
        can be created beside it (its nearest existing ancestor is a file or is
        not writable).
    """
    target = Path(out_dir).resolve()
    if target.exists() and not overwrite and (not target.is_dir() or any(target.iterdir())):
        message = f"output folder {target} already exists and is not empty (use --overwrite)"
        raise OutputError(message)
    # The run is written into a temporary folder beside the target: make sure one
    # can be made there now, not after hours of work. Probe the nearest existing
    # ancestor so that nothing is created (and left behind) by the check.
    ancestor = target.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    try:
        probe = tempfile.mkdtemp(prefix=f".{target.name}.probe-", dir=ancestor)
    except OSError as exc:
        message = (
            f"cannot write the run folder {target}: expected {ancestor} to be a "
            f"writable folder, found {type(exc).__name__}: {exc.strerror or exc}"
        )
        raise OutputError(message) from exc
    os.rmdir(probe)
    return target


def write_run(
    out_dir: str | Path,
    *,
    run_info: dict[str, Any],
    summary: pd.DataFrame,
    splits: pd.DataFrame,
    predictions: pa.Table,
    diagnostics: pd.DataFrame | None = None,
    size_coverage: pd.DataFrame | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the run folder atomically.

    Parameters
    ----------
    out_dir : path
        Target folder; must not exist (or be empty) unless ``overwrite``.
    run_info : dict
        Content of ``run.json`` (``format_version`` is set here).
    summary, splits : DataFrame
    predictions : pyarrow.Table
    diagnostics : DataFrame, optional
        Written as ``diagnostics.parquet`` when given.
    size_coverage : DataFrame, optional
        Written as ``size_coverage.csv`` when given.
    overwrite : bool
        Replace an existing folder (only after the new one is complete).

    Returns
    -------
    Path
        The finished folder.
    """
    target = check_target(out_dir, overwrite)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    except OSError as exc:
        message = f"cannot write the run folder {target}: {exc}"
        raise OutputError(message) from exc
    try:
        # mkdtemp makes a private (0700) folder; give it the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        summary.to_csv(tmp / "summary.csv", index=False)
        splits.to_parquet(tmp / "splits.parquet", index=False)
        pq.write_table(predictions, tmp / "predictions.parquet")
        if diagnostics is not None:
            diagnostics.to_parquet(tmp / "diagnostics.parquet", index=False)
        if size_coverage is not None:
            size_coverage.to_csv(tmp / "size_coverage.csv", index=False)
        info = {"format_version": FORMAT_VERSION, **run_info}
        # run.json last: its presence marks the folder's content complete.
        (tmp / "run.json").write_text(json.dumps(info, indent=2, default=_json_default) + "\n")
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}"
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            message = f"cannot write the run folder {target}: {exc}"
            raise OutputError(message) from exc
        raise
    return target


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    message = f"not JSON serialisable: {type(value).__name__}"
    raise TypeError(message)
