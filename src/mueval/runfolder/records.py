"""The record of a checked run folder, its error, and how each of its files is opened."""

from __future__ import annotations

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
        lookup = {c: i for i, c in enumerate(self.classes)}
        unknown = sorted(set(names.unique()) - set(lookup))
        if unknown:
            msg = (
                f"{self.path / 'predictions.parquet'}: expected class names from run.json "
                f"{self.classes}, found {unknown}"
            )
            raise RunFolderError(msg)
        return names.map(lookup).to_numpy(dtype=np.int64)

    def set_matrix(self, pred_sets: pd.Series) -> np.ndarray:
        """Prediction sets (lists of class names) as indicators, shape (n, K)."""
        lookup = {c: i for i, c in enumerate(self.classes)}
        out = np.zeros((len(pred_sets), len(self.classes)), dtype=bool)
        for r, members in enumerate(pred_sets):
            for name in members:
                if name not in lookup:
                    msg = (
                        f"{self.path / 'predictions.parquet'}: prediction set holds "
                        f"{name!r}, expected one of {self.classes}"
                    )
                    raise RunFolderError(msg)
                out[r, lookup[name]] = True
        return out

    @staticmethod
    def vector_matrix(column: pd.Series) -> np.ndarray:
        """A list<double> column (p_values, proba) as an array of shape (n, K)."""
        return (
            np.stack([np.asarray(v, dtype=float) for v in column])
            if len(column)
            else np.zeros((0, 0))
        )


def open_run_file(path: Path) -> BinaryIO:
    """Open one file of a run folder, refusing anything but a regular file.

    Raises
    ------
    RunFolderError
        The file cannot be opened or is not a regular file (:func:`mueval.files.open_input`).
    """
    try:
        return open_input(path, path.name)
    except NotRegularFileError as exc:
        raise RunFolderError(str(exc)) from exc
