"""Per-user guarantees of a run: coverage intervals, their summary and the warnings.

Computed from the prediction rows when a run is evaluated, written into the run
folder (``user_coverage.csv``, ``coverage_summary.csv``, ``run.json``'s
``warnings``), and recomputed on load for folders written before these files
existed. The intervals are exact Clopper-Pearson intervals on the rows pooled
over iterations (see :mod:`mueval.coverage_intervals` for why they are narrow).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mueval.coverage_intervals import coverage_summary, per_user_coverage
from mueval.run_warnings import collect_warnings, set_statistics
from mueval.runfolder.format import (
    COVERAGE_SUMMARY_COLUMNS,
    COVERAGE_SUMMARY_FILE,
    USER_COVERAGE_COLUMNS,
    USER_COVERAGE_FILE,
    WARNING_KEYS,
)
from mueval.runfolder.read import RunFolderError, _open

__all__ = ["Guarantees", "compute_guarantees", "load_guarantees"]

#: Confidence of every interval written into a run folder.
CONFIDENCE = 0.95


@dataclass
class Guarantees:
    """The per-user guarantees of one run.

    Attributes
    ----------
    user_coverage : DataFrame
        :func:`~mueval.coverage_intervals.per_user_coverage` output (exact).
    coverage_summary : DataFrame
        :func:`~mueval.coverage_intervals.coverage_summary` output.
    warnings : list of dict
        :class:`~mueval.run_warnings.RunWarning` as dicts (``strategy,
        classifier, kind, message, severity``), the form ``run.json`` holds.
    """

    user_coverage: pd.DataFrame
    coverage_summary: pd.DataFrame
    warnings: list[dict[str, Any]] = field(default_factory=list)


def _calibration(splits: pd.DataFrame) -> pd.DataFrame | None:
    """Calibration sizes per task, for the ``calibration-too-small`` rule."""
    if "n_cal" not in splits.columns:
        return None
    cal = splits[["strategy", "classifier", "iteration", "user", "n_cal"]]
    # Strategies without a calibration set leave n_cal missing; the rule skips them.
    return cal.reset_index(drop=True)


def compute_guarantees(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    n_classes: int,
    seed: int = 0,
    summarise: bool = True,
) -> Guarantees:
    """Per-user coverage with intervals, its summary and the warnings of a run.

    Parameters
    ----------
    predictions : DataFrame
        A run folder's prediction rows (``strategy, classifier, iteration,
        userid, covered, set_size``).
    splits : DataFrame
        A run folder's splits (``n_cal`` per task).
    alpha : float
        The run's miscoverage level.
    n_classes : int
        Number of classes (a set this large holds every class).
    seed : int, default 0
        Seed of the bootstrap of the mean over users.
    summarise : bool, default True
        Also compute the summary and the warnings (a reader that holds them
        needs only the per-user counts, to check the stored ones).

    Returns
    -------
    Guarantees
    """
    # Each test row belongs to one user (its own: for MM, the pooled strategy,
    # that is the row's user; for the per-user strategies it is the target).
    rows = predictions[["strategy", "classifier", "iteration", "userid", "covered"]]
    per_user = per_user_coverage(
        rows, alpha=alpha, confidence=CONFIDENCE, user_col="userid", seed=seed
    )
    if not summarise:
        return Guarantees(per_user, pd.DataFrame(), [])
    summary = coverage_summary(per_user, alpha=alpha, confidence=CONFIDENCE, seed=seed)
    sets = set_statistics(predictions, n_classes=n_classes)
    found = collect_warnings(
        summary, sets, alpha=alpha, n_classes=n_classes, calibration=_calibration(splits)
    )
    return Guarantees(per_user, summary, [asdict(w) for w in found])


def _user_text(value: object) -> str:
    """A user id as the CSV spells it (whole floats as integers)."""
    if isinstance(value, (int, float, np.integer, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _restore_users(column: pd.Series, users: pd.Series, where: Path) -> pd.Series:
    """Map a CSV's user ids (read as text) back to the predictions' own values.

    A CSV loses the type of an id (``"07"`` and ``7``), and the writer prefixes
    ``'`` to text a spreadsheet would run as a formula: the predictions are the
    reference, so each id is looked up in them by its text.
    """
    known = {_user_text(u): u for u in pd.unique(users)}

    def back(text: object) -> object:
        key = str(text)
        if key in known:
            return known[key]
        if key.startswith("'") and key[1:] in known:
            return known[key[1:]]
        msg = f"{where}: user {key!r} is not a user of predictions.parquet"
        raise RunFolderError(msg[:300])

    return column.map(back)


def _read_csv(
    path: Path, columns: tuple[str, ...], users: pd.Series, user_cols: list[str]
) -> pd.DataFrame:
    try:
        with _open(path) as handle:
            frame = pd.read_csv(handle, encoding="utf-8", dtype=dict.fromkeys(user_cols, str))
    except (OSError, ValueError) as exc:
        found = " ".join(str(exc).split())[:200] or type(exc).__name__
        msg = f"{path}: expected a CSV file written by `mueval evaluate`, found: {found}"
        raise RunFolderError(msg) from exc
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        msg = f"{path}: missing columns {missing}; found {list(frame.columns)}"
        raise RunFolderError(msg[:600])
    for col in user_cols:
        frame[col] = _restore_users(frame[col], users, path)
    return frame


def _check_counts(path: Path, stored: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """The stored per-user counts are those of the predictions."""
    keys = ["strategy", "classifier", "user"]
    merged = fresh[[*keys, "n", "n_covered"]].merge(
        stored[[*keys, "n", "n_covered"]], on=keys, how="outer", suffixes=("", "_file")
    )
    bad = merged[
        (merged["n"] != merged["n_file"]) | (merged["n_covered"] != merged["n_covered_file"])
    ]
    if len(bad):
        r = bad.iloc[0]
        msg = (
            f"{path}: {r['strategy']} / {r['classifier']} user {r['user']} has "
            f"n={r['n_file']}, n_covered={r['n_covered_file']}; predictions.parquet "
            f"gives n={r['n']}, n_covered={r['n_covered']}"
        )
        raise RunFolderError(msg[:600])


def _check_warnings(path: Path, warnings: object) -> list[dict[str, Any]]:
    ok = isinstance(warnings, list) and all(
        isinstance(w, dict) and all(isinstance(w.get(k), str) for k in WARNING_KEYS)
        for w in warnings
    )
    if not ok:
        msg = (
            f"{path}: expected 'warnings' as a list of objects with text fields "
            f"{', '.join(WARNING_KEYS)}, found {warnings!r}"
        )
        raise RunFolderError(msg[:300])
    return [{k: w[k] for k in WARNING_KEYS} for w in warnings]  # type: ignore[union-attr]


def load_guarantees(
    root: Path, run: dict, predictions: pd.DataFrame, splits: pd.DataFrame
) -> Guarantees:
    """The guarantees a run folder holds, or recomputed when it predates them.

    Parameters
    ----------
    root : Path
        The run folder.
    run : dict
        Its parsed ``run.json``.
    predictions, splits : DataFrame
        Its prediction rows and splits.

    Returns
    -------
    Guarantees

    Raises
    ------
    RunFolderError
        A file is malformed, names a user the predictions lack, or its counts
        contradict the predictions; ``warnings`` is not a list of warnings.
    """
    alpha = float(run["config"]["alpha"])
    have = (root / USER_COVERAGE_FILE).exists() and (root / COVERAGE_SUMMARY_FILE).exists()
    fresh = compute_guarantees(
        predictions,
        splits,
        alpha=alpha,
        n_classes=len(run["classes"]),
        summarise=not (have and "warnings" in run),
    )
    if have:
        users = predictions["userid"]
        stored = _read_csv(root / USER_COVERAGE_FILE, USER_COVERAGE_COLUMNS, users, ["user"])
        _check_counts(root / USER_COVERAGE_FILE, stored, fresh.user_coverage)
        summary = _read_csv(
            root / COVERAGE_SUMMARY_FILE, COVERAGE_SUMMARY_COLUMNS, users, ["worst_user"]
        )
        fresh = Guarantees(stored, summary, fresh.warnings)
    if "warnings" in run:
        fresh.warnings = _check_warnings(root / "run.json", run["warnings"])
    return fresh
