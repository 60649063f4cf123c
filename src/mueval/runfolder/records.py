"""The record of a checked run folder, its error, and how each of its files is opened."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

from mueval.errors import DataError, NotRegularFileError
from mueval.files import open_input

__all__ = ["RunFolder", "RunFolderError", "open_run_file"]


class RunFolderError(DataError):
    """A run folder is missing a file, has an unknown format or malformed content."""


@dataclass
class RunFolder:
    """A checked run folder.

    Attributes
    ----------
    path : Path
    run : dict
        The parsed ``run.json``.
    classes : list of str
        Class names in index order.
    summary, splits, predictions : DataFrame
    diagnostics : DataFrame or None
        ``diagnostics.parquet``, when the run computed diagnostics.
    user_coverage : DataFrame or None
        Each user's coverage with its Clopper-Pearson interval
        (``user_coverage.csv``, recomputed for older folders).
    coverage_summary : DataFrame or None
        Per (strategy, classifier): users below target, worst user, pooled
        coverage, with intervals (``coverage_summary.csv``).
    warnings : list of dict or None
        The interval-driven warnings (``run.json``'s ``warnings``).
    conditional_coverage : DataFrame or None
        Coverage per class and per cohort of users (``conditional_coverage.csv``).
    user_validity : DataFrame or None
        The per-user validity tests (``user_validity.csv``).
    user_cohorts : DataFrame or None
        ``user, cohort`` when the run had cohorts (``user_cohorts.csv``).
    """

    path: Path
    run: dict
    classes: list[str]
    summary: pd.DataFrame
    splits: pd.DataFrame
    predictions: pd.DataFrame
    diagnostics: pd.DataFrame | None = None
    user_coverage: pd.DataFrame | None = None
    coverage_summary: pd.DataFrame | None = None
    warnings: list[dict] | None = None
    conditional_coverage: pd.DataFrame | None = None
    user_validity: pd.DataFrame | None = None
    user_cohorts: pd.DataFrame | None = None

    @property
    def config(self) -> dict:
        """The run's configuration (``run.json`` ``config``)."""
        return self.run.get("config", {})

    @property
    def alpha(self) -> float:
        """Miscoverage level; the coverage target is ``1 - alpha``."""
        return float(self.config.get("alpha", 0.05))

    @property
    def n_rows(self) -> int:
        """Rows of the evaluated dataset."""
        return int(self.run["dataset"].get("n_rows", 0))

    def class_indices(self, names: pd.Series) -> np.ndarray:
        """Map class names to indices in run order, shape (n,)."""
        values = names.to_numpy(dtype=object)
        codes = _codes(self.classes, values)
        if (codes < 0).any():
            unknown = sorted(set(values[codes < 0]))
            msg = (
                f"{self.path / 'predictions.parquet'}: expected class names from run.json "
                f"{self.classes}, found {unknown}"
            )
            raise RunFolderError(msg)
        return codes

    def set_matrix(self, pred_sets: pd.Series) -> np.ndarray:
        """Prediction sets (lists of class names) as indicators, shape (n, K).

        From one array of every member, not row by row (at 20 iterations a loop
        over the rows took seconds); the first name not among the classes, in
        row order, is the one the error names.
        """
        n, k = len(pred_sets), len(self.classes)
        out = np.zeros((n, k), dtype=bool)
        values = pred_sets.to_numpy()
        lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=n)
        if lengths.sum() == 0:
            return out
        flat = np.concatenate(list(values)).astype(object, copy=False)
        codes = _codes(self.classes, flat)
        if (codes < 0).any():
            name = flat[np.flatnonzero(codes < 0)[0]]
            msg = (
                f"{self.path / 'predictions.parquet'}: prediction set holds "
                f"{name!r}, expected one of {self.classes}"
            )
            raise RunFolderError(msg)
        out[np.repeat(np.arange(n), lengths), codes] = True
        return out

    @staticmethod
    def vector_matrix(column: pd.Series) -> np.ndarray:
        """A list<double> column (p_values, proba) as an array of shape (n, K)."""
        return (
            np.stack([np.asarray(v, dtype=float) for v in column])
            if len(column)
            else np.zeros((0, 0))
        )


def _codes(classes: Sequence[str], names: np.ndarray) -> np.ndarray:
    """The index of each name in ``classes``, -1 for a name not among them.

    A dictionary look-up per name: pandas' indexer would first copy the names
    into an index of its own, which takes longer than the look-ups.
    """
    lookup = {name: i for i, name in enumerate(classes)}
    return np.fromiter((lookup.get(n, -1) for n in names), dtype=np.int64, count=len(names))


def open_run_file(path: Path) -> BinaryIO:
    """Open one file of a run folder, refusing anything but a regular file.

    Raises
    ------
    RunFolderError
        The file cannot be opened or is not a regular file (:func:`mueval.files.open_input`).
    """
    try:
        # The run folder is the user's to name; a link planted inside it is not
        # followed (it could quote any file of the reader's in an error).
        return open_input(path, path.name, inside=path.parent)
    except NotRegularFileError as exc:
        raise RunFolderError(str(exc)) from exc
