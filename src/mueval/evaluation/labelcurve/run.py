"""The curve's run: every target user with enough rows swept over k
(:func:`curve_run`, :func:`curve`), and what it gives (:class:`CurveResult`, which
writes its folder).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from mueval.conformal.settings import ConformalSettings
from mueval.cpus import check_jobs, resolve_jobs
from mueval.data.order import natural_key
from mueval.data.table import Table, load_data
from mueval.errors import DataError, OutputError
from mueval.evaluation.labelcurve.config import CurveConfig, auto_ks, parse_ks, parse_uses
from mueval.evaluation.labelcurve.figure import curve_figure, curve_label, write_curve_figure
from mueval.evaluation.labelcurve.rows import user_rows
from mueval.evaluation.labelcurve.summary import informative_notes, summarise
from mueval.files import neutralise_formulas, write_atomic

__all__ = ["CurveResult", "curve", "curve_run"]


@dataclass
class CurveResult:
    """The curve, its per-user rows and what the run did.

    Attributes
    ----------
    curve : DataFrame
        One row per (use, k) (:func:`summarise`).
    per_user : DataFrame
        One row per (user, iteration, use, k).
    info : dict
        ``dataset``, ``classes``, ``config``, ``skipped_users`` and ``notes``
        (the content of ``run.json``).
    """

    curve: pd.DataFrame
    per_user: pd.DataFrame
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def notes(self) -> list[str]:
        """Skipped users and small calibration sets, one line each."""
        return list(self.info.get("notes", []))

    def save(
        self,
        out: str | Path,
        *,
        overwrite: bool = False,
        figure_format: str = "svg",
        dpi: int = 300,
        titles: bool = False,
    ) -> Path:
        """Write ``curve.csv``, ``curve_users.csv``, ``curve.svg`` and ``run.json``.

        Parameters
        ----------
        out : str or Path
            A new or empty folder (any folder with ``overwrite``).
        overwrite : bool
            Replace the files of an existing folder.
        figure_format : {"svg", "pdf", "png"}
            The figure's file: ``curve.svg`` (vector, the default), ``curve.pdf``
            or ``curve.png`` at ``dpi``.
        dpi : int
            Resolution of a PNG.
        titles : bool
            Draw the dataset, classifier and alpha as a title too (they are in
            the legend's title either way).

        Returns
        -------
        Path
        """
        folder = Path(out)
        if folder.exists() and not folder.is_dir():
            message = f"cannot write the curve to {folder}: it exists and is not a folder"
            raise OutputError(message)
        if folder.is_dir() and any(folder.iterdir()) and not overwrite:
            message = f"{folder} is not empty; give --overwrite to replace its curve files"
            raise OutputError(message)
        folder.mkdir(parents=True, exist_ok=True)
        for name, frame in (("curve.csv", self.curve), ("curve_users.csv", self.per_user)):
            write_atomic(folder, name, _csv_writer(neutralise_formulas(frame)))
        figure = curve_figure(
            self.curve, self.info["config"]["alpha"], label=curve_label(self.info), title=titles
        )
        write_curve_figure(figure, folder, fmt=figure_format, dpi=dpi)
        text = json.dumps(self.info, indent=2, default=str) + "\n"

        def write_info(path: Path) -> None:
            path.write_text(text, encoding="utf-8")

        write_atomic(folder, "run.json", write_info)
        return folder


def _csv_writer(frame: pd.DataFrame) -> Callable[[Path], None]:
    """What writes ``frame`` as CSV to a path (:func:`~mueval.files.write_atomic`)."""

    def write(path: Path) -> None:
        frame.to_csv(path, index=False)

    return write


def curve_run(table: Table, config: CurveConfig, *, jobs: int = 1) -> CurveResult:
    """Sweep ``config.ks`` for every target user with enough rows.

    Parameters
    ----------
    table : Table
    config : CurveConfig
    jobs : int
        Parallel worker processes (loky), one (user, iteration) a task; -1:
        every usable CPU (:func:`mueval.cpus.usable_cpus`). The results do not
        depend on it.

    Returns
    -------
    CurveResult

    Raises
    ------
    DataError
        No user has ``max(k) + min_test`` rows.
    UsageError
        ``jobs`` is 0 or below -1 (:func:`mueval.cpus.check_jobs`).
    """
    check_jobs(jobs)
    jobs = resolve_jobs(jobs)
    users = np.asarray(table.users)
    need = max(config.ks) + config.min_test
    counts = pd.Series(users).value_counts()
    keep = sorted((u for u in counts.index if counts[u] >= need), key=natural_key)
    skipped = sorted((u for u in counts.index if counts[u] < need), key=natural_key)
    notes = [
        f"user {u} skipped: {counts[u]} rows, fewer than max(k) + min_test = {need}"
        for u in skipped
    ]
    if not keep:
        message = (
            f"no user has max(k) + min_test = {max(config.ks)} + {config.min_test} rows "
            f"(largest user: {counts.max()} rows); lower the largest k or --min-test"
        )
        raise DataError(message)
    if len(counts) < 2:
        message = "the curve trains on the other users: the table needs at least 2 users"
        raise DataError(message)
    tasks = [(u, i) for u in keep for i in range(1, config.iterations + 1)]
    args = (np.ascontiguousarray(table.X, dtype=float), np.asarray(table.y, dtype=int), users)
    n_classes = len(table.classes)
    if jobs == 1 or len(tasks) == 1:
        nested = [user_rows(*args, n_classes, u, i, config) for u, i in tasks]
    else:
        nested = Parallel(n_jobs=jobs, backend="loky")(
            delayed(user_rows)(*args, n_classes, u, i, config) for u, i in tasks
        )
    per_user = pd.DataFrame([row for rows in nested for row in rows])
    curve_frame = summarise(per_user, n_classes)
    notes += informative_notes(curve_frame, n_classes)
    alpha = config.conformal.alpha
    for row in curve_frame.itertuples():
        if row.n_small_cal:
            notes.append(
                f"use {row.use}, k={row.k}: {row.n_small_cal!s} of {row.n_tasks!s} calibration "
                f"sets below {math.ceil(max(1 / alpha, 1 / (1 - alpha)) - 1e-9)} "
                f"rows, answered by --small-cal {config.conformal.small_cal}"
            )
    info = {
        "kind": "mueval curve",
        "dataset": table.info,
        "classes": list(table.classes),
        "config": config.record(),
        "skipped_users": [str(u) for u in skipped],
        "notes": notes,
    }
    return CurveResult(curve=curve_frame, per_user=per_user, info=info)


def curve(
    data: str | Path | pd.DataFrame,
    *,
    classifier: str = "rf",
    ks: str | Sequence[int] = "auto",
    use: str | Sequence[str] = "calibration",
    iterations: int = 5,
    alpha: float = 0.05,
    seed_base: int = 100,
    score: str = "lac",
    threshold: str = "study",
    small_cal: str = "full-set",
    min_test: int = 20,
    split_seeds: str = "protocol",
    jobs: int = 1,
    user_col: str = "userid",
    label_col: str = "label",
    **source: Any,
) -> pd.DataFrame:
    """Coverage, set size and accuracy against k labelled windows of the target.

    Parameters
    ----------
    data : str, Path or DataFrame
        A registered dataset, a ``.csv``/``.parquet`` file or a DataFrame
        (as for :func:`mueval.evaluate`; ``**source`` as there).
    classifier : {"nb", "rf", "svm", "knn"}
    ks : str or sequence of int, default "auto"
        Numbers of labelled windows, e.g. ``"0,5,10,20,50"``; ``"auto"``: 0 and
        four values chosen from the data (:func:`auto_ks`), from the smallest
        k whose calibration set gives informative sets.
    use : str or sequence of str
        ``calibration``, ``adaptation``, ``both``, ``cluster``, or several
        (comma list).
    iterations, seed_base : int
        Iteration *i* uses seed ``seed_base + i``.
    alpha : float
        Miscoverage level, as for :func:`mueval.evaluate`.
    score, threshold : str
        The conformity score and threshold rule, as for :func:`mueval.evaluate`.
    small_cal : {"full-set", "skip", "error"}
        Calibration sets too small for ``alpha``.
    min_test : int
        Fewest test rows a user must keep beside ``max(ks)``; smaller users
        are skipped (:attr:`CurveResult.notes`).
    split_seeds : {"protocol", "independent"}
        One seed per iteration for both splits, or one of their own each
        (:class:`CurveConfig`).
    jobs : int
        Worker processes.
    user_col, label_col : str
        Columns of a file or DataFrame.
    **source
        Where a registered dataset's files come from, as for :func:`mueval.evaluate`.

    Returns
    -------
    DataFrame
        One row per (use, k): see :func:`summarise`. :func:`curve_run` also
        gives the per-user rows and the notes.
    """
    table = load_data(data, user_col=user_col, label_col=label_col, **source)
    uses = parse_uses(use)
    if isinstance(ks, str) and ks.strip().lower() == "auto":
        chosen = auto_ks(table.users, uses, alpha, min_test)
    else:
        chosen = parse_ks(ks)
    settings = ConformalSettings(alpha=alpha, score=score, threshold=threshold, small_cal=small_cal)
    config = CurveConfig(
        classifier=classifier,
        ks=chosen,
        uses=uses,
        iterations=iterations,
        seed_base=seed_base,
        min_test=min_test,
        split_seeds=split_seeds,
        conformal=settings,
    )
    return curve_run(table, config, jobs=jobs).curve
