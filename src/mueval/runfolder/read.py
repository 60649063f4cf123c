"""Read and check a run folder (:mod:`mueval.runfolder.format`).

The folder holds ``run.json``, ``summary.csv``, ``splits.parquet`` and
``predictions.parquet``. Everything the report needs is checked here, once, so
the rest of the report can trust its input: a missing file, a FIFO or device in
place of a file, an unknown format version, a missing column, a field of the
wrong type (text where run.json holds a number, alpha outside (0, 1)) or a
contradiction between the files (:mod:`mueval.runfolder.consistency`) is an error
that names it.
"""

from __future__ import annotations

import contextlib
import json
import math
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mudata.bounds.parquet import check_parquet
from mudata.config import EXPANSION_ENV
from mudata.display import shown
from mudata.errors import LimitError as MudataLimitError
from mudata.errors import ParseError as MudataParseError
from mudata.files import describe_kind
from mueval.files import restore_formulas
from mueval.names import USER_CORRECTIONS, USER_FAMILIES
from mueval.runfolder.columns import run_file_frame
from mueval.runfolder.consistency import check_consistency
from mueval.runfolder.format import (
    FORMAT_VERSION,
    PREDICTION_COLUMNS,
    REQUIRED_FILES,
    RUN_KEYS,
    SPLITS_COLUMNS,
    SUMMARY_COLUMNS,
)
from mueval.runfolder.records import RunFolder, RunFolderError, open_run_file

__all__ = ["read_run_csv", "read_run_folder"]

# A run.json is a few kilobytes; a huge one is not ours and is not read whole.
_MAX_RUN_JSON = 64 * 2**20

#: At most this many characters of any text field of run.json once read (a
#: dataset name, a version, a warning), but the classes.
RUN_TEXT_LIMIT = 2_000


def _missing(columns: pd.Index, required: tuple[str, ...]) -> list[str]:
    return [c for c in required if c not in columns]


def _check_files(root: Path) -> None:
    """The folder exists and holds every required file, each a regular file."""
    if not root.is_dir():
        msg = f"run folder {root}: expected a directory written by `mueval evaluate`, found none"
        raise RunFolderError(msg)
    missing = []
    for name in REQUIRED_FILES:
        try:
            mode = (root / name).stat().st_mode
        except OSError:
            missing.append(name)
            continue
        if not stat.S_ISREG(mode):
            # A FIFO here would block the reader for ever: refuse before opening.
            msg = (
                f"{root / name}: expected a regular file written by `mueval evaluate`, "
                f"found {describe_kind(mode)}"
            )
            raise RunFolderError(msg)
    if missing:
        msg = (
            f"run folder {root}: missing {', '.join(missing)} "
            f"(a run folder holds {', '.join(REQUIRED_FILES)})"
        )
        raise RunFolderError(msg)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number_problem(value: object) -> str:
    if isinstance(value, str):
        return f"the text {value[:60]!r}"
    return f"{value!r}"[:80]


def _check_run_json(path: Path, run: dict) -> None:
    """Types and ranges of the run.json fields the report and compare compute with."""
    for key in ("dataset", "config", "versions"):
        if not isinstance(run[key], dict):
            msg = f"{path}: expected {key!r} as a JSON object, found {type(run[key]).__name__}"
            raise RunFolderError(msg)
    classes = run["classes"]
    if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
        msg = f"{path}: expected 'classes' as a non-empty list of names, found {classes!r}"[:300]
        raise RunFolderError(msg)
    if len(set(classes)) != len(classes):
        twice = sorted({c for c in classes if classes.count(c) > 1})
        msg = f"{path}: 'classes' names {twice!r} more than once"[:300]
        raise RunFolderError(msg)
    alpha = run["config"].get("alpha")
    if not _is_number(alpha) or not 0 < alpha < 1:
        msg = (
            f"{path}: config.alpha is {_number_problem(alpha)}; expected a number in (0, 1) "
            "(the miscoverage level)"
        )
        raise RunFolderError(msg)
    _check_verdict_config(path, run["config"])
    for where, key in (("dataset", "n_rows"), ("dataset", "n_users"), ("config", "iterations")):
        value = run[where].get(key)
        if value is not None and not (_is_number(value) and value == int(value) and value >= 0):
            msg = f"{path}: {where}.{key} is {_number_problem(value)}; expected a whole number >= 0"
            raise RunFolderError(msg)
    timings = run.get("timings", {})
    if not isinstance(timings, dict) or not all(_is_number(v) for v in timings.values()):
        msg = f"{path}: expected 'timings' as an object of numbers (seconds), found {timings!r}"
        raise RunFolderError(msg[:300])
    stages = run.get("stage_timings", {})
    if not isinstance(stages, dict) or not all(
        isinstance(v, dict) and all(_is_number(t) for t in v.values()) for v in stages.values()
    ):
        msg = (
            f"{path}: expected 'stage_timings' as an object of objects of numbers "
            f"(seconds per stage), found {stages!r}"
        )
        raise RunFolderError(msg[:300])


def _check_verdict_config(path: Path, config: dict) -> None:
    """The per-user verdicts' settings, where run.json records them (runs written
    since the exact per-user test; older ones get the defaults on load)."""
    combines = ("convolution", "bonferroni")
    level = config.get("user_level", 0.05)
    if not _is_number(level) or not 0 < level < 1:
        msg = (
            f"{path}: config.user_level is {_number_problem(level)}; expected a number in "
            "(0, 1) (the level of the per-user verdicts)"
        )
        raise RunFolderError(msg)
    correction = config.get("user_correction", "holm")
    if correction not in USER_CORRECTIONS:
        msg = (
            f"{path}: config.user_correction is {correction!r}; expected one of "
            f"{', '.join(USER_CORRECTIONS)}"
        )
        raise RunFolderError(msg[:300])
    family = config.get("user_family", "pair")
    if family not in USER_FAMILIES:
        msg = (
            f"{path}: config.user_family is {family!r}; expected one of {', '.join(USER_FAMILIES)}"
        )
        raise RunFolderError(msg[:300])
    combine = config.get("user_combine", {})
    if not isinstance(combine, dict) or not all(v in combines for v in combine.values()):
        msg = (
            f"{path}: config.user_combine is {combine!r}; expected an object of strategy -> "
            f"{' or '.join(combines)}"
        )
        raise RunFolderError(msg[:300])


def _capped(value: object) -> object:
    """``value`` with every string in it cut to :data:`RUN_TEXT_LIMIT` characters."""
    if isinstance(value, str):
        return value if len(value) <= RUN_TEXT_LIMIT else shown(value, RUN_TEXT_LIMIT, quote=False)
    if isinstance(value, list):
        return [_capped(v) for v in value]
    if isinstance(value, dict):
        return {k: _capped(v) for k, v in value.items()}
    return value


def _read_run_json(root: Path) -> dict:
    path = root / "run.json"
    with open_run_file(path) as handle:
        raw = handle.read(_MAX_RUN_JSON + 1)
    if len(raw) > _MAX_RUN_JSON:
        msg = f"{path}: larger than {_MAX_RUN_JSON // 2**20} MiB; not a run.json of mueval"
        raise RunFolderError(msg)
    try:
        run = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        msg = f"{path}: expected JSON, found a parse error: {str(exc)[:200]}"
        raise RunFolderError(msg) from exc
    except RecursionError as exc:
        msg = (
            f"{path}: expected the JSON of a run, found arrays or objects nested too deep to parse"
        )
        raise RunFolderError(msg) from exc
    if not isinstance(run, dict):
        msg = f"{path}: expected a JSON object, found {type(run).__name__}"
        raise RunFolderError(msg)
    # Text fields reach the report and the terminal: none longer than a page. The
    # classes stay whole, as they must match the predictions' labels exactly.
    run = {k: v if k == "classes" else _capped(v) for k, v in run.items()}
    version = run.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        msg = (
            f"{path}: format_version {version!r} is not supported; this "
            f"mueval reads format_version {FORMAT_VERSION} (re-run `mueval evaluate` "
            "with this version, or report with the mueval that wrote it)"
        )
        raise RunFolderError(msg[:400])
    absent = [k for k in RUN_KEYS if k not in run]
    if absent:
        msg = f"{path}: missing keys {absent}"
        raise RunFolderError(msg)
    _check_run_json(path, run)
    return run


def _read_table(root: Path, name: str) -> pd.DataFrame | pa.Table:
    """summary.csv as a DataFrame, a Parquet file as a pyarrow Table."""
    try:
        with open_run_file(root / name) as handle:
            if name.endswith(".csv"):
                return restore_formulas(pd.read_csv(handle, encoding="utf-8"))
            # The footer first: a small file of constant columns can declare
            # millions of rows; an unreadable footer is reported below as pyarrow says.
            with contextlib.suppress(MudataParseError):
                check_parquet(handle, str(root / name), hint=f"${EXPANSION_ENV}")
            table = pq.read_table(handle)
            # Column names are decoded lazily: a name that is not UTF-8 would
            # raise UnicodeDecodeError wherever they are first asked for.
            table.schema.names  # noqa: B018
            return table
    except MudataLimitError as exc:
        raise RunFolderError(str(exc)) from None
    except (OSError, ValueError, pa.ArrowException) as exc:
        # pyarrow's ArrowInvalid, pandas' EmptyDataError and decoding errors are
        # ValueErrors; ArrowNotImplementedError (e.g. a damaged integer width) is not.
        kind = "CSV" if name.endswith(".csv") else "Parquet"
        found = " ".join(str(exc).split())[:200] or type(exc).__name__
        msg = f"{root / name}: expected a {kind} file written by `mueval evaluate`, found: {found}"
        raise RunFolderError(msg) from exc


def read_run_csv(root: str | Path, name: str) -> pd.DataFrame:
    """One CSV file of a run folder, read as :func:`read_run_folder` reads its own.

    Opened as a regular file that is no link (:func:`~mueval.runfolder.records.open_run_file`),
    and the writer's formula-safe prefix undone, so labels and ids read back exactly.

    Raises
    ------
    RunFolderError
        The file is a link, not a regular file, or not a CSV file.
    """
    return _read_table(Path(root), name)


def _to_pandas(root: Path, name: str, table: pa.Table) -> pd.DataFrame:
    """A Parquet table as a DataFrame, its pandas metadata trusted no further than this.

    The metadata is JSON inside the file that names dtypes and index columns; a
    damaged copy fails in pyarrow's or pandas' own code with whatever exception
    that code raises (TypeError, KeyError, a JSON or decoding error), so every
    exception of the conversion means a damaged file here.
    """
    try:
        return table.to_pandas()
    except Exception as exc:  # any failure of the conversion: see the docstring
        found = " ".join(str(exc).split())[:200] or type(exc).__name__
        msg = (
            f"{root / name}: expected a Parquet file written by `mueval evaluate`, found "
            f"pandas metadata that cannot be used: {type(exc).__name__}: {found}"
        )
        raise RunFolderError(msg) from exc


def _true_class_pvalues(predictions: pa.Table, run: RunFolder) -> np.ndarray:
    """The p-value of each row's true class, shape (n,), in the rows' order.

    ``predictions`` is the Arrow table of ``predictions.parquet`` in the order
    of ``run.predictions`` (:func:`run_file_frame` keeps the order of rows
    that carry no ``user`` column), checked by :func:`check_consistency`: each
    ``p_values`` list holds one value per class and each ``y_true`` is a class.
    """
    k = len(run.classes)
    values = predictions.column("p_values").combine_chunks()
    matrix = pc.list_flatten(values).to_numpy(zero_copy_only=False).reshape(len(values), k)
    index = {c: i for i, c in enumerate(run.classes)}
    y = run.predictions["y_true"].map(index).to_numpy(dtype=np.int64)
    return matrix[np.arange(len(y)), y].astype(float)


def read_run_folder(path: str | Path, *, guarantees: bool = True) -> RunFolder:
    """Read and check a run folder.

    Every file must be a regular file (a FIFO or device is refused, never opened
    in a way that could block); ``run.json`` must carry the fields the report
    computes with, with the right types; and the folder must be consistent
    (:func:`mueval.runfolder.consistency.check_consistency`).

    Parameters
    ----------
    path : str or Path
    guarantees : bool, default True
        Also read the per-user guarantees (``user_coverage.csv``,
        ``coverage_summary.csv``, the conditional coverage, the validity tests,
        ``run.json``'s warnings), each checked against the predictions it is
        recomputed from. False leaves them out (``None``), neither read nor
        checked: for readers of the summary, splits and predictions alone
        (``mueval compare``'s tests, ``mueval table``), to which they are most
        of the reading time.

    Returns
    -------
    RunFolder

    Raises
    ------
    RunFolderError
        Naming the missing file, the format version found and expected, the
        missing columns, a field of the wrong type, or the first contradiction.
    """
    root = Path(path)
    _check_files(root)
    run = _read_run_json(root)
    summary = _read_table(root, "summary.csv")
    splits = _to_pandas(root, "splits.parquet", _read_table(root, "splits.parquet"))
    arrow_predictions = _read_table(root, "predictions.parquet")
    for name, columns, required in (
        ("summary.csv", summary.columns, SUMMARY_COLUMNS),
        ("splits.parquet", splits.columns, SPLITS_COLUMNS),
        ("predictions.parquet", pd.Index(arrow_predictions.column_names), PREDICTION_COLUMNS),
    ):
        gone = _missing(columns, required)
        if gone:
            msg = f"{root / name}: missing columns {gone}; found {list(columns)}"
            raise RunFolderError(msg[:600])
    if arrow_predictions.num_rows == 0:
        msg = f"{root / 'predictions.parquet'}: expected prediction rows, found none"
        raise RunFolderError(msg)
    diagnostics = None
    if (root / "diagnostics.parquet").exists() or (root / "diagnostics.parquet").is_symlink():
        diagnostics = _to_pandas(
            root, "diagnostics.parquet", _read_table(root, "diagnostics.parquet")
        )
    predictions = _to_pandas(root, "predictions.parquet", arrow_predictions)
    # Folders written before ids were text hold integers: the same ids as text.
    splits = run_file_frame("splits.parquet", splits)
    predictions = run_file_frame("predictions.parquet", predictions)
    run_folder = RunFolder(
        root, run, list(run["classes"]), summary, splits, predictions, diagnostics
    )
    check_consistency(run_folder, arrow_predictions)
    if not guarantees:
        return run_folder
    # After the consistency checks: the guarantees are computed from the rows.
    # Here, not at the top: their modules (scikit-learn's among them) load only
    # for the readers that need them.
    from mueval.runfolder.guarantees import load_guarantees

    # Each row's p-value of its true class, taken from the Arrow column in one
    # step (its widths were checked above); the rows' own lists of NumPy arrays
    # would take a concatenation of every row for each reader of it.
    with_p_true = predictions.assign(p_true=_true_class_pvalues(arrow_predictions, run_folder))
    found = load_guarantees(root, run, with_p_true, splits)
    run_folder.user_coverage = found.user_coverage
    run_folder.coverage_summary = found.coverage_summary
    run_folder.warnings = found.warnings
    run_folder.conditional_coverage = found.conditional_coverage
    run_folder.user_validity = found.user_validity
    run_folder.user_cohorts = found.user_cohorts
    return run_folder
