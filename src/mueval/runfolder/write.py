"""Writing a run folder, and replacing one without touching anything else.

The folder is written into a hidden temporary folder beside the target and
renamed into place only when every file is complete, so a failed or
interrupted run leaves nothing that looks like a finished run.

``run.json`` marks the folder (``format = "mueval-run"``) and lists the files
written, so that ``--overwrite`` replaces a run folder and nothing else: never a
symbolic link, never the current folder or a parent of it, never a folder holding
anything mueval did not write (:func:`run_folder_problem`). The replacement is an
atomic exchange of the two folders where the file system has one (Linux
``renameat2``); elsewhere two renames leave the target missing for an instant,
and a run killed in that instant is restored by the next one
(:func:`recover_leftovers`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mudata.files import describe_kind, open_regular
from mueval.errors import OutputError
from mueval.evaluation.records import EvalResult
from mueval.files import check_inside, write_csv
from mueval.runfolder.columns import run_file_frame, text_ids
from mueval.runfolder.format import (
    CONDITIONAL_COVERAGE_FILE,
    COVERAGE_SUMMARY_FILE,
    FORMAT_VERSION,
    REPORT_DIR,
    REPORT_MARKER,
    RUN_FILES,
    RUN_FORMAT,
    USER_COHORTS_FILE,
    USER_COVERAGE_FILE,
    USER_VALIDITY_FILE,
)

_log = logging.getLogger("mueval")


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

    rows = cat([r.rows for r in kept], np.int64)
    y_true = y[rows]
    y_pred = cat([r.y_pred for r in kept], np.int64)
    sets = np.vstack([r.sets for r in kept]) if kept else np.zeros((0, K), dtype=bool)
    pvals = np.vstack([r.pvalues for r in kept]) if kept else np.zeros((0, K))
    proba = np.vstack([r.proba for r in kept]) if kept else np.zeros((0, K))
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


def _target_path(out_dir: str | Path) -> Path:
    """Absolute path of ``out_dir`` with its parent resolved and its last part kept.

    The last part is not resolved: a symbolic link there must be seen (and
    refused), not followed to wherever it points.
    """
    raw = os.path.abspath(os.fspath(out_dir))
    parent, name = os.path.split(raw)
    if not name:
        message = f"cannot write the run folder {out_dir}: the file system root is not a run folder"
        raise OutputError(message)
    return Path(parent).resolve() / name


def _refuse_cwd(target: Path, out_dir: str | Path) -> None:
    """Never replace the current folder or one of its parents (``--out .``, ``--out ..``)."""
    try:
        cwd = Path.cwd().resolve()
    except OSError:  # the current folder was deleted: nothing to protect
        return
    real = target.resolve()
    if real == cwd or real in cwd.parents:
        message = (
            f"cannot write the run folder {out_dir}: it is the current folder or one of its "
            "parents; name a new folder (e.g. --out runs/mine)"
        )
        raise OutputError(message)


#: Larger than any ``run.json`` mueval writes: a bigger one is not read.
_MARKER_MAX_BYTES = 16 * 2**20


def _read_marker(folder: Path) -> dict[str, Any] | None:
    """``run.json`` of ``folder`` if it is a regular file holding a JSON object, else None.

    Opened as every file read inside a folder is (:func:`mudata.files.open_regular`):
    not a link, nor under one, and refused if it is not a regular file, a link
    swapped in after the check failing to open rather than being followed."""
    try:
        with open_regular(folder / "run.json", "run marker", OutputError, inside=folder) as fh:
            text = fh.read(_MARKER_MAX_BYTES + 1)
        if len(text) > _MARKER_MAX_BYTES:
            return None
        info = json.loads(text.decode("utf-8"))
    except (OSError, ValueError):  # OutputError (a link, a FIFO) included
        return None
    return info if isinstance(info, dict) else None


def _is_file(path: Path) -> bool:
    return stat.S_ISREG(os.lstat(path).st_mode)


def _foreign_entries(folder: Path, allowed: set[str]) -> list[str]:
    """Entries of a run folder that mueval would not have written there.

    Only regular files by the allowed names count as the run's: a folder named
    ``summary.csv`` would be removed whole by the replacement, so it is foreign.
    """
    foreign = []
    for entry in sorted(os.listdir(folder)):
        path = folder / entry
        if entry == REPORT_DIR and stat.S_ISDIR(os.lstat(path).st_mode):
            for inner in sorted(os.listdir(path)):
                sub = path / inner
                if inner in ("report.html", REPORT_MARKER) and _is_file(sub):
                    continue
                if inner == "figures" and stat.S_ISDIR(os.lstat(sub).st_mode):
                    foreign += [
                        f"{entry}/{inner}/{f}"
                        for f in sorted(os.listdir(sub))
                        if not (f.endswith((".png", ".svg")) and _is_file(sub / f))
                    ]
                    continue
                foreign.append(f"{entry}/{inner}")
        elif entry not in allowed or not _is_file(path):
            foreign.append(entry)
    return foreign


def run_folder_problem(folder: str | Path) -> str | None:
    """Why ``folder`` is not a run folder written by ``mueval evaluate``, or None if it is.

    A run folder is a real folder (not a link) whose ``run.json`` carries a
    format_version this mueval writes, and which holds nothing but the files
    ``mueval evaluate`` wrote (listed in ``run.json``) and a ``report`` folder of
    ``mueval report``. Anything else in it could be the user's, so it is not a run
    folder that may be replaced.

    Parameters
    ----------
    folder : path

    Returns
    -------
    str or None
        A reason that completes "... is not a mueval run folder: <reason>".
    """
    folder = Path(folder)
    try:
        mode = os.lstat(folder).st_mode
    except OSError as exc:
        return f"cannot inspect it ({exc.strerror or exc})"
    if not stat.S_ISDIR(mode):
        return f"it is {describe_kind(mode)}"
    info = _read_marker(folder)
    if info is None:
        return "it holds no readable run.json"
    legacy = "format" not in info and all(k in info for k in ("dataset", "config", "classes"))
    if (info.get("format") != RUN_FORMAT and not legacy) or info.get("format_version") != 1:
        return (
            f"its run.json has format {str(info.get('format'))[:40]!r}, format_version "
            f"{str(info.get('format_version'))[:20]}; expected {RUN_FORMAT!r}, {FORMAT_VERSION}"
        )
    listed = info.get("files")
    allowed = set(RUN_FILES)
    if isinstance(listed, list):
        allowed |= {f for f in listed if isinstance(f, str) and "/" not in f}
    try:
        foreign = _foreign_entries(folder, allowed)
    except OSError as exc:
        return f"cannot list what it holds ({exc.strerror or exc})"
    if foreign:
        shown = ", ".join(foreign[:5]) + (
            f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        )
        return f"it holds entries mueval did not write: {shown}"
    return None


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: alive
        return True
    return True


def _is_ours(entry: Path, kind: str) -> bool:
    """A leftover that holds nothing but run files (a partial one may lack some)."""
    if entry.is_symlink() or not entry.is_dir():
        return False
    if kind == "old":
        return run_folder_problem(entry) is None
    return set(os.listdir(entry)) <= {*RUN_FILES, PREDICTIONS_PART}


def recover_leftovers(target: str | Path) -> list[str]:
    """Restore or sweep what an interrupted run left beside ``target``.

    ``write_run`` writes ``.NAME.partial-PID-*`` beside the target and, where the
    file system cannot exchange two folders atomically, moves the old run to
    ``.NAME.old-PID`` for an instant. If that process was killed (its PID is gone),
    a backup whose target is missing is renamed back into place, and every other
    leftover that holds only run files is removed. Leftovers of a live process, or
    holding anything else, are not touched.

    Parameters
    ----------
    target : path
        The run folder (its parent is searched).

    Returns
    -------
    list of str
        One line per folder restored or removed.
    """
    target = Path(target)
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(partial|old)-(\d+)(?:-.*)?")
    notes: list[str] = []
    try:
        entries = sorted(target.parent.iterdir())
    except OSError:
        return notes
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if not match or _pid_alive(int(match[2])) or not _is_ours(entry, match[1]):
            continue
        try:
            if match[1] == "old" and not os.path.lexists(target):
                os.rename(entry, target)
                notes.append(f"restored {target} from {entry.name}, left by an interrupted run")
            else:
                shutil.rmtree(entry)
                notes.append(f"removed {entry}, left by an interrupted run")
        except OSError as exc:
            notes.append(f"could not clear {entry}: {exc.strerror or exc}")
    return notes


def check_target(out_dir: str | Path, overwrite: bool = False) -> Path:
    """Fail early (before any work) when ``out_dir`` cannot receive a run.

    Parameters
    ----------
    out_dir : path
    overwrite : bool
        Allow replacing an existing run folder (and only a run folder).

    Returns
    -------
    Path
        The folder: its parent resolved, its own name kept (never followed if a link).

    Raises
    ------
    OutputError
        The folder is the current folder or a parent of it; it is a symbolic link
        or not a folder; it is not empty (without ``overwrite``) or not a run folder
        (with it); or no folder can be created beside it (its nearest existing
        ancestor is a file or is not writable).
    """
    target = _target_path(out_dir)
    _refuse_cwd(target, out_dir)
    for note in recover_leftovers(target):
        # Logged, not raised: the user should know, and the run can go on. Without
        # logging configured, Python prints the bare message on stderr.
        _log.warning("%s", note)
    try:
        mode = os.lstat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):  # the probe below names the cause
        mode = None
    except OSError as exc:
        message = f"cannot write the run folder {target}: {exc.strerror or exc}"
        raise OutputError(message) from exc
    if mode is not None:
        if not stat.S_ISDIR(mode):
            message = (
                f"cannot write the run folder {target}: it exists and is "
                f"{describe_kind(mode)}; mueval never writes through or replaces one "
                "(give a new folder)"
            )
            raise OutputError(message)
        if any(target.iterdir()):
            if not overwrite:
                message = (
                    f"output folder {target} already exists and is not empty (use --overwrite)"
                )
                raise OutputError(message)
            problem = run_folder_problem(target)
            if problem is not None:
                message = (
                    f"--overwrite replaces only a mueval run folder, and {target} is not one: "
                    f"{problem}; nothing was changed"
                )
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


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders atomically (Linux ``renameat2(RENAME_EXCHANGE)``).

    Returns
    -------
    bool
        False where the call does not exist or the file system does not support it
        (the caller then falls back to two renames).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _swap_into_place(tmp: Path, target: Path, overwrite: bool) -> None:
    """Move the finished ``tmp`` to ``target``, replacing a run folder there.

    The target never goes missing where the file system can exchange two folders
    atomically (Linux). Elsewhere the old folder is renamed aside and the new one
    renamed in: between those two renames (microseconds) the target is absent; a
    run killed exactly there leaves ``.NAME.old-PID``, which the next run restores
    (:func:`recover_leftovers`).
    """
    # Checked again now, not only hours ago: the folder may have changed since.
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        os.rename(tmp, target)
        return
    if not stat.S_ISDIR(mode) or (
        any(target.iterdir()) and (not overwrite or run_folder_problem(target) is not None)
    ):
        check_target(target, overwrite)  # raises the matching message
        message = f"cannot replace {target}: it changed while the run was written"
        raise OutputError(message)
    if _exchange(tmp, target):
        shutil.rmtree(tmp)  # now the old run
        return
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


#: Where a stream writes the predictions until they are complete.
PREDICTIONS_PART = ".predictions.parquet.part"

#: Rows of a streamed row group: large enough for fast reading, small enough
#: that a batch costs a few MB whatever the size of the run.
ROWS_PER_GROUP = 65536


def open_run_folder(out_dir: str | Path, overwrite: bool = False) -> tuple[Path, Path]:
    """Check ``out_dir`` and make the hidden folder a run is written into.

    Parameters
    ----------
    out_dir : path
    overwrite : bool

    Returns
    -------
    target : Path
        The run folder (see :func:`check_target`).
    tmp : Path
        ``.NAME.partial-PID-*`` beside it: pass it to :func:`finish_run_folder`,
        or remove it.
    """
    target = check_target(out_dir, overwrite)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(
            tempfile.mkdtemp(prefix=f".{target.name}.partial-{os.getpid()}-", dir=target.parent)
        )
    except OSError as exc:
        message = f"cannot write the run folder {target}: {exc}"
        raise OutputError(message) from exc
    try:
        # mkdtemp makes a private (0700) folder; give it the usual permissions.
        os.chmod(tmp, 0o777 & ~_umask())
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        message = f"cannot write the run folder {target}: {exc}"
        raise OutputError(message) from exc
    return target, tmp


def write_run(out_dir: str | Path, *, overwrite: bool = False, **files: Any) -> Path:
    """Write the run folder atomically.

    Parameters
    ----------
    out_dir : path
        Target folder; must not exist (or be empty) unless ``overwrite``.
    overwrite : bool
        Replace an existing run folder (only after the new one is complete; only a
        folder that :func:`run_folder_problem` accepts).
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
    """Write the files of a run into ``tmp`` (:func:`open_run_folder`) and move it
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
        None: a :class:`PredictionStream` has already written
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
        _swap_into_place(tmp, target, overwrite)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            message = f"cannot write the run folder {target}: {exc}"
            raise OutputError(message) from exc
        raise
    return target


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
        The run's temporary folder (:func:`open_run_folder`).
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    message = f"not JSON serialisable: {type(value).__name__}"
    raise TypeError(message)
