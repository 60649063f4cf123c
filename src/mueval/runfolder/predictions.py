"""The predictions table of a run, built at once or streamed as tasks finish.

This module owns ``predictions.parquet``'s rows: :func:`predictions_table` makes
the Arrow table of a list of results, and :class:`PredictionStream` writes it
row group by row group into the run's temporary folder, so that memory never
holds the whole table.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mueval.evaluation.records import EvalResult
from mueval.files import check_inside
from mueval.runfolder.columns import text_ids
from mueval.runfolder.format import PREDICTIONS_PART

__all__ = ["ROWS_PER_GROUP", "PredictionStream", "predictions_table"]

#: Rows of a streamed row group: large enough for fast reading, small enough
#: that a batch costs a few MB whatever the size of the run.
ROWS_PER_GROUP = 65536


def predictions_table(
    results: Sequence[EvalResult],
    classes: Sequence[str],
    table_users: np.ndarray,
    y: np.ndarray,
    target_dtype: str | None = None,
) -> pa.Table:
    """One row per test row per (strategy, classifier, iteration, target user).

    Results whose conformal step was skipped (``--small-cal skip``) have no rows.

    Parameters
    ----------
    results : sequence of EvalResult
    classes : sequence of str
    table_users : ndarray of int64 or of str, shape (n_rows,)
        User of every row of the dataset table (written as text whatever
        their type in memory).
    y : ndarray of int, shape (n_rows,)
        True class index of every row.
    target_dtype : str, optional
        Not used: ``target_user`` and ``userid`` are always text
        (:func:`mueval.runfolder.columns.text_ids`); accepted for the callers
        that still pass the run's id type.

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

    def arrays(attr: str) -> list[np.ndarray]:
        # A result with sets holds every row array (drop_row_arrays comes after).
        return [getattr(r, attr) for r in kept]

    rows = cat(arrays("rows"), np.int64)
    y_true = y[rows]
    y_pred = cat(arrays("y_pred"), np.int64)
    sets = np.vstack(arrays("sets")) if kept else np.zeros((0, K), dtype=bool)
    pvals = np.vstack(arrays("pvalues")) if kept else np.zeros((0, K))
    proba = np.vstack(arrays("proba")) if kept else np.zeros((0, K))
    set_size = sets.sum(axis=1).astype(np.int64)
    # Per-result values repeated over the result's rows: one Python step per
    # result, none per row.
    counts = np.asarray([r.n_test for r in kept], dtype=np.int64)

    def repeat(attr: str, dtype: Any = object) -> np.ndarray:
        values = np.empty(len(kept), dtype=dtype)
        values[:] = [getattr(r, attr) for r in kept]
        return np.repeat(values, counts)

    set_names = names[np.nonzero(sets)[1]] if n else np.zeros(0, dtype=object)
    set_offsets = np.concatenate([[0], np.cumsum(set_size)]).astype(np.int32)
    k_offsets = (np.arange(n + 1) * K).astype(np.int32)
    users = np.asarray(table_users)[rows]
    # Scalars through pandas, so that readers get target_user back as text with
    # <NA> for the mixed model (the pandas metadata of the file says so).
    scalars = pd.DataFrame(
        {
            "strategy": pd.Series(repeat("strategy"), dtype=str),
            "classifier": pd.Series(repeat("classifier"), dtype=str),
            "iteration": repeat("iteration", np.int64),
            "seed": repeat("seed", np.int64),
            # Ids as text, as mudata publishes them (mueval.runfolder.columns).
            "target_user": text_ids(repeat("user")),
            "userid": text_ids(users),
            "row_id": rows,
            "y_true": pd.Series(names[y_true], dtype=str),
            "y_pred": pd.Series(names[y_pred], dtype=str),
        }
    )
    table = pa.Table.from_pandas(scalars, preserve_index=False)
    table = table.append_column(
        "pred_set",
        pa.ListArray.from_arrays(pa.array(set_offsets), pa.array(set_names, pa.string())),
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


class PredictionStream:
    """Prediction rows written to a run's ``predictions.parquet`` as tasks finish.

    Results are buffered until they hold ``rows_per_group`` rows, then written
    as one row group, so memory holds the Arrow table of one batch, never the whole
    table. The file grows as a hidden part file in the run's temporary folder
    and is renamed ``predictions.parquet`` by :meth:`close`; :meth:`abort`
    removes it. Rows come in the order results are given (the runner gives
    them in task order, the same for any number of workers), each result's
    rows together and in its own order. Once a result's rows are written, its
    probabilities, p-values and point predictions are dropped
    (:meth:`~mueval.evaluation.records.EvalResult.drop_row_arrays`), so the run's
    memory does not hold them for every task until the end (nor their row
    positions and sets, with ``pooled``).

    Parameters
    ----------
    folder : Path
        The run's temporary folder (:func:`~mueval.runfolder.replace.open_run_folder`).
    classes : sequence of str
    table_users : ndarray, shape (n_rows,)
    y : ndarray of int, shape (n_rows,)
        As for :func:`predictions_table`.
    target_dtype : str
        As for :func:`predictions_table` (not used: ids are written as text).
    rows_per_group : int, optional
        Rows buffered before a row group is written (default
        :data:`ROWS_PER_GROUP`).
    pooled : bool, default False
        The diagnostics took each result's rows and sets before it was given
        here (:class:`~mueval.guarantees.run_diagnostics.PoolDiagnostics`):
        a written result lets go of them too (``drop_row_arrays(pooled=True)``).
    """

    def __init__(
        self,
        folder: Path,
        classes: Sequence[str],
        table_users: np.ndarray,
        y: np.ndarray,
        *,
        target_dtype: str,
        rows_per_group: int | None = None,
        pooled: bool = False,
    ) -> None:
        self._pooled = pooled
        if rows_per_group is None:
            rows_per_group = ROWS_PER_GROUP
        if rows_per_group < 1:
            message = f"rows_per_group must be at least 1, got {rows_per_group}"
            raise ValueError(message)
        self.path = check_inside(folder, Path(folder) / "predictions.parquet")
        self._part = check_inside(folder, Path(folder) / PREDICTIONS_PART)
        self._table_args = (classes, table_users, y, target_dtype)
        self._rows_per_group = rows_per_group
        self._writer: pq.ParquetWriter | None = None
        self._pending: list[EvalResult] = []
        self._n_pending = 0
        #: Row groups written so far, and seconds spent building and writing them.
        self.row_groups = 0
        self.seconds = 0.0

    def add(self, results: Sequence[EvalResult]) -> None:
        """Take one task's results; write a row group once enough rows wait."""
        kept = [r for r in results if r.sets is not None]
        if self._pooled:
            # Skipped results write no rows; the diagnostics have what they need.
            for r in results:
                if r.sets is None:
                    r.drop_row_arrays(pooled=True)
        self._pending += kept
        self._n_pending += sum(r.n_test for r in kept)
        if self._n_pending >= self._rows_per_group:
            self._flush()

    def _flush(self) -> None:
        if not self._n_pending:
            return
        clock = time.perf_counter()
        table = predictions_table(self._pending, *self._table_args[:3], self._table_args[3])
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._part, table.schema)
        self._writer.write_table(table, row_group_size=table.num_rows)
        seconds = time.perf_counter() - clock
        # Each result's share of the batch's writing, by its rows.
        for r in self._pending:
            r.timings["write_s"] = (
                r.timings.get("write_s", 0.0) + seconds * r.n_test / table.num_rows
            )
        self.row_groups += 1
        self.seconds += seconds
        # Written: the run keeps only what its diagnostics and tables read.
        for r in self._pending:
            r.drop_row_arrays(pooled=self._pooled)
        self._pending, self._n_pending = [], 0

    def close(self) -> Path:
        """Write what waits, finish the file and give it its name.

        Returns
        -------
        Path
            ``predictions.parquet`` in the run's folder.
        """
        self._flush()
        if self._writer is None:  # no rows at all: the same empty table as in memory
            pq.write_table(predictions_table([], *self._table_args[:3]), self._part)
        else:
            self._writer.close()
            self._writer = None
        os.replace(self._part, self.path)
        return self.path

    def abort(self) -> None:
        """Drop the part file (after an error): nothing half-written stays."""
        if self._writer is not None:
            # The file is removed below anyway.
            with contextlib.suppress(OSError, ValueError):
                self._writer.close()
            self._writer = None
        self._part.unlink(missing_ok=True)
