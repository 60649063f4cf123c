"""Replacing a run folder without touching anything else.

This module owns the safety of the target folder: ``run.json`` marks a run
folder (``format = "mueval-run"``) and lists the files written, so that
``--overwrite`` replaces a run folder and nothing else: never a symbolic link,
never the current folder or a parent of it, never a folder holding anything
mueval did not write (:func:`run_folder_problem`). A run is written into a
hidden temporary folder beside the target (:func:`open_run_folder`) and moved
into place by :func:`swap_into_place`: an atomic exchange of the two folders
where the file system has one (Linux ``renameat2``); elsewhere two renames leave
the target missing for an instant, and a run killed in that instant is restored
by the next one (:func:`recover_leftovers`).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from mudata.files import describe_kind
from mueval.errors import OutputError
from mueval.runfolder.format import (
    FORMAT_VERSION,
    PREDICTIONS_PART,
    REPORT_DIR,
    RUN_FILES,
    RUN_FORMAT,
)
from mueval.runfolder.ownership import (
    folder_problem,
    foreign_problem,
    is_regular,
    read_marker,
    report_foreign_entries,
)

__all__ = [
    "check_target",
    "open_run_folder",
    "recover_leftovers",
    "run_folder_problem",
    "swap_into_place",
]

_log = logging.getLogger("mueval")


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


def _foreign_entries(folder: Path, allowed: set[str]) -> list[str]:
    """Entries of a run folder that mueval would not have written there.

    Only regular files by the allowed names count as the run's: a folder named
    ``summary.csv`` would be removed whole by the replacement, so it is foreign.
    The ``report`` folder holds what ``mueval report`` wrote, and nothing else
    (:func:`~mueval.runfolder.ownership.report_foreign_entries`).
    """
    foreign = []
    for entry in sorted(os.listdir(folder)):
        path = folder / entry
        if entry == REPORT_DIR and stat.S_ISDIR(os.lstat(path).st_mode):
            foreign += report_foreign_entries(path, prefix=f"{entry}/")
        elif entry not in allowed or not is_regular(path):
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
    return folder_problem(folder, _run_contents_problem)


def _run_contents_problem(folder: Path) -> str | None:
    """Why the contents of the real folder ``folder`` are not a run's, or None."""
    info = read_marker(folder, "run.json", _MARKER_MAX_BYTES)
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
    return foreign_problem(foreign, "mueval")


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


def swap_into_place(tmp: Path, target: Path, overwrite: bool) -> None:
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
        ``.NAME.partial-PID-*`` beside it: pass it to :func:`~mueval.runfolder.write.finish_run_folder`,
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
