"""Read and check a run folder written by ``mueval evaluate`` (format_version 1).

The folder holds ``run.json``, ``summary.csv``, ``splits.parquet`` and
``predictions.parquet``. Everything the report needs is checked here, once, so
the rest of the report can trust its input: a missing file, an unknown format
version or a missing column is an error that names it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mueval.errors import DataError

__all__ = [
    "FORMAT_VERSION",
    "REQUIRED_FILES",
    "RunFolder",
    "RunFolderError",
    "read_run_folder",
]

FORMAT_VERSION = 1
REQUIRED_FILES = ("run.json", "summary.csv", "splits.parquet", "predictions.parquet")

_SUMMARY_COLUMNS = ("strategy", "classifier", "metric", "mean", "sd", "n")
_SPLITS_COLUMNS = (
    "strategy", "classifier", "iteration", "seed", "user", "n_test", "n_cal",
    "coverage", "setsize",
)
_PREDICTION_COLUMNS = (
    "strategy", "classifier", "iteration", "seed", "target_user", "userid", "row_id",
    "y_true", "y_pred", "pred_set", "set_size", "covered", "p_values", "proba",
)
_RUN_KEYS = ("format_version", "dataset", "classes", "config", "versions")


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
    """

    path: Path
    run: dict
    classes: list[str]
    summary: pd.DataFrame
    splits: pd.DataFrame
    predictions: pd.DataFrame

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
        return np.stack([np.asarray(v, dtype=float) for v in column]) if len(column) else \
            np.zeros((0, 0))


def _missing(columns: pd.Index, required: tuple[str, ...]) -> list[str]:
    return [c for c in required if c not in columns]


def read_run_folder(path: str | Path) -> RunFolder:
    """Read and check a run folder.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    RunFolder

    Raises
    ------
    RunFolderError
        Naming the missing file, the format version found and expected, or the
        missing columns.
    """
    root = Path(path)
    if not root.is_dir():
        msg = f"run folder {root}: expected a directory written by `mueval evaluate`, found none"
        raise RunFolderError(msg)
    missing = [f for f in REQUIRED_FILES if not (root / f).is_file()]
    if missing:
        msg = (
            f"run folder {root}: missing {', '.join(missing)} "
            f"(a run folder holds {', '.join(REQUIRED_FILES)})"
        )
        raise RunFolderError(msg)
    try:
        run = json.loads((root / "run.json").read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        msg = f"{root / 'run.json'}: expected JSON, found a parse error: {exc}"
        raise RunFolderError(msg) from exc
    if not isinstance(run, dict):
        msg = f"{root / 'run.json'}: expected a JSON object, found {type(run).__name__}"
        raise RunFolderError(msg)
    version = run.get("format_version")
    if version != FORMAT_VERSION:
        msg = (
            f"{root / 'run.json'}: format_version {version!r} is not supported; this "
            f"mueval reads format_version {FORMAT_VERSION} (re-run `mueval evaluate` "
            "with this version, or report with the mueval that wrote it)"
        )
        raise RunFolderError(msg)
    absent = [k for k in _RUN_KEYS if k not in run]
    if absent:
        msg = f"{root / 'run.json'}: missing keys {absent}"
        raise RunFolderError(msg)
    classes = run["classes"]
    if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
        msg = f"{root / 'run.json'}: expected 'classes' as a non-empty list of names, found {classes!r}"
        raise RunFolderError(msg)

    frames = {}
    for name, read in (
        ("summary.csv", pd.read_csv),
        ("splits.parquet", pd.read_parquet),
        ("predictions.parquet", pd.read_parquet),
    ):
        try:
            frames[name] = read(root / name)
        except (OSError, ValueError) as exc:
            # pyarrow's ArrowInvalid and pandas' EmptyDataError are ValueErrors.
            kind = "CSV" if name.endswith(".csv") else "Parquet"
            found = " ".join(str(exc).split()) or type(exc).__name__
            msg = f"{root / name}: expected a {kind} file written by `mueval evaluate`, found: {found}"
            raise RunFolderError(msg) from exc
    summary = frames["summary.csv"]
    splits = frames["splits.parquet"]
    predictions = frames["predictions.parquet"]
    for name, frame, required in (
        ("summary.csv", summary, _SUMMARY_COLUMNS),
        ("splits.parquet", splits, _SPLITS_COLUMNS),
        ("predictions.parquet", predictions, _PREDICTION_COLUMNS),
    ):
        gone = _missing(frame.columns, required)
        if gone:
            msg = f"{root / name}: missing columns {gone}; found {list(frame.columns)}"
            raise RunFolderError(msg)
    if predictions.empty:
        msg = f"{root / 'predictions.parquet'}: expected prediction rows, found none"
        raise RunFolderError(msg)
    return RunFolder(root, run, list(classes), summary, splits, predictions)
