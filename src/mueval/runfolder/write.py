"""Writing a run folder: every file into a hidden folder, then into place.

The folder is written into a hidden temporary folder beside the target
(:func:`mueval.runfolder.replace.open_run_folder`) and renamed into place only
when every file is complete (:func:`mueval.runfolder.replace.swap_into_place`),
so a failed or interrupted run leaves nothing that looks like a finished run.
``run.json``, written last, marks the folder and lists its files. This module
owns which files a run folder holds and how each is written; the predictions
table is :mod:`mueval.runfolder.predictions`'.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mueval.errors import OutputError
from mueval.files import check_inside, write_csv
from mueval.runfolder.columns import run_file_frame
from mueval.runfolder.format import (
    CONDITIONAL_COVERAGE_FILE,
    COVERAGE_SUMMARY_FILE,
    FORMAT_VERSION,
    RUN_FORMAT,
    USER_COHORTS_FILE,
    USER_COVERAGE_FILE,
    USER_VALIDITY_FILE,
)
from mueval.runfolder.replace import open_run_folder, swap_into_place

__all__ = ["finish_run_folder", "write_run"]


def write_run(out_dir: str | Path, *, overwrite: bool = False, **files: Any) -> Path:
    """Write the run folder atomically.

    Parameters
    ----------
    out_dir : path
        Target folder; must not exist (or be empty) unless ``overwrite``.
    overwrite : bool
        Replace an existing run folder (only after the new one is complete; only a
        folder that :func:`~mueval.runfolder.replace.run_folder_problem` accepts).
    **files
        What the folder holds: the keyword arguments of :func:`finish_run_folder`.

    Returns
    -------
    Path
        The finished folder.
    """
    target, tmp = open_run_folder(out_dir, overwrite)
    return finish_run_folder(target, tmp, overwrite=overwrite, **files)


def finish_run_folder(
    target: Path,
    tmp: Path,
    *,
    run_info: dict[str, Any],
    summary: pd.DataFrame,
    splits: pd.DataFrame,
    predictions: pa.Table | None,
    diagnostics: pd.DataFrame | None = None,
    size_coverage: pd.DataFrame | None = None,
    user_coverage: pd.DataFrame | None = None,
    coverage_summary: pd.DataFrame | None = None,
    conditional_coverage: pd.DataFrame | None = None,
    user_validity: pd.DataFrame | None = None,
    user_cohorts: pd.DataFrame | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the files of a run into ``tmp`` (:func:`~mueval.runfolder.replace.open_run_folder`) and move it
    to ``target``; ``tmp`` is removed if anything fails.

    Parameters
    ----------
    target, tmp : Path
        The folder to create and the temporary folder beside it.
    run_info : dict
        Content of ``run.json`` (``format``, ``format_version`` and ``files`` are
        set here).
    summary, splits : DataFrame
    predictions : pyarrow.Table or None
        None: a :class:`~mueval.runfolder.predictions.PredictionStream` has already written
        ``predictions.parquet`` into ``tmp``.
    diagnostics : DataFrame, optional
        Written as ``diagnostics.parquet`` when given.
    size_coverage : DataFrame, optional
        Written as ``size_coverage.csv`` when given.
    user_coverage, coverage_summary : DataFrame, optional
        The per-user guarantees (:mod:`mueval.runfolder.guarantees`), written as
        ``user_coverage.csv`` and ``coverage_summary.csv`` when given.
    conditional_coverage, user_validity, user_cohorts : DataFrame, optional
        Coverage per class and cohort, the per-user validity tests and each
        user's cohort, written as ``conditional_coverage.csv``, ``user_validity.csv``
        and ``user_cohorts.csv`` when given.
    overwrite : bool
        Replace an existing run folder at ``target``.

    Returns
    -------
    Path
        The finished folder.
    """
    try:

        def write_predictions(path: Path) -> None:
            if predictions is not None:
                pq.write_table(predictions, path)
            elif not path.is_file():
                message = f"{path} was not written: no predictions table and no finished stream"
                raise OutputError(message)

        writers: list[tuple[str, Any]] = [
            ("summary.csv", lambda p: write_csv(summary, p)),
            (
                "splits.parquet",
                lambda p: run_file_frame("splits.parquet", splits).to_parquet(p, index=False),
            ),
            ("predictions.parquet", write_predictions),
        ]
        if diagnostics is not None:
            writers.append(
                ("diagnostics.parquet", lambda p: diagnostics.to_parquet(p, index=False))
            )
        if size_coverage is not None:
            writers.append(
                (
                    "size_coverage.csv",
                    lambda p: write_csv(size_coverage, p),
                )
            )
        for name, frame in (
            (USER_COVERAGE_FILE, user_coverage),
            (COVERAGE_SUMMARY_FILE, coverage_summary),
            (CONDITIONAL_COVERAGE_FILE, conditional_coverage),
            (USER_VALIDITY_FILE, user_validity),
            (USER_COHORTS_FILE, user_cohorts),
        ):
            if frame is not None:
                writers.append(
                    (name, lambda p, f=frame, n=name: write_csv(run_file_frame(n, f), p))
                )
        for name, write in writers:
            write(check_inside(tmp, tmp / name))
        info = {
            "format": RUN_FORMAT,
            "format_version": FORMAT_VERSION,
            **run_info,
            "files": [*(name for name, _ in writers), "run.json"],
        }
        # run.json last: its presence marks the folder's content complete.
        check_inside(tmp, tmp / "run.json").write_text(
            json.dumps(info, indent=2, default=_json_default) + "\n"
        )
        swap_into_place(tmp, target, overwrite)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
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
