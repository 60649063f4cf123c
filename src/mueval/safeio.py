"""File access that trusts neither the paths nor the file types it is given.

Three rules, each with one owner here:

* **Read only regular files.** A FIFO with no writer blocks ``open`` for ever and
  ``/dev/zero`` never ends, so the type is checked with ``stat`` before opening,
  and again on the open descriptor (opened non-blocking, so the check itself
  cannot hang) in case the path was swapped in between.
* **Write only inside the output folder.** Every destination is resolved and
  compared with the resolved folder before anything is written; a name that
  would climb out (``../``) or a symbolic link that points elsewhere is refused.
* **Replace, never write through.** A file is written under a temporary name
  beside its destination and renamed over it, so a link or FIFO planted at the
  destination is neither followed nor opened; an existing destination that is
  not a regular file is refused rather than replaced.

It also neutralises formula-leading text cells of CSV output (CSV injection).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from mudata._atomic import atomic_path
from mueval.errors import NotRegularFileError, OutputError

__all__ = [
    "FORMULA_LEADS",
    "check_inside",
    "describe_mode",
    "neutralise_formulas",
    "open_regular",
    "write_atomic",
]

#: Leading characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_LEADS: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")


def describe_mode(mode: int) -> str:
    """Plain name of a file type from ``st_mode`` (``"a FIFO"``, ``"a socket"``, ...)."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


def _refuse(path: Path, what: str, mode: int) -> NotRegularFileError:
    message = (
        f"{path}: expected {what} as a regular file, found {describe_mode(mode)}; "
        "mueval reads only regular files (a pipe or device could block or never end)"
    )
    return NotRegularFileError(message)


def open_regular(path: str | Path, what: str) -> BinaryIO:
    """Open a regular file for binary reading, refusing any other kind without blocking.

    Parameters
    ----------
    path : path
    what : str
        What the file is, for messages (e.g. ``"--data"``, ``"run.json"``).

    Returns
    -------
    BinaryIO
        An open file; the caller closes it.

    Raises
    ------
    NotRegularFileError
        The path does not exist, cannot be opened, or is not a regular file.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        message = f"{path}: cannot read {what}: {exc.strerror or exc}"
        raise NotRegularFileError(message) from exc
    if not stat.S_ISREG(mode):
        raise _refuse(path, what, mode)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:  # e.g. a socket swapped in after the stat (ENXIO)
        message = f"{path}: cannot read {what}: {exc.strerror or exc}"
        raise NotRegularFileError(message) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, what, mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_inside(folder: str | Path, path: str | Path) -> Path:
    """Resolve ``path`` and make sure it lies strictly inside ``folder``.

    Parameters
    ----------
    folder : path
        The output folder (resolved here too).
    path : path
        A destination that is about to be written.

    Returns
    -------
    Path
        The resolved destination.

    Raises
    ------
    OutputError
        The destination resolves outside the folder (a ``..`` in a name, or a
        symbolic link on the way).
    """
    root = Path(folder).resolve()
    dest = Path(path).resolve()
    if dest == root or root not in dest.parents:
        message = (
            f"refusing to write {path}: it resolves to {dest}, outside the output folder {root}"
        )
        raise OutputError(message)
    return dest


def write_atomic(folder: str | Path, name: str, write: Callable[[Path], None]) -> Path:
    """Write ``folder/name`` through a temporary file renamed over it.

    Parameters
    ----------
    folder : path
        Existing output folder.
    name : str
        A plain file name (no separator); built by the caller from sanitised tokens.
    write : callable
        Called with a temporary path in ``folder`` (same suffix as ``name``), which
        it must fill.

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    OutputError
        ``name`` is not a plain name, the destination lies outside ``folder``, an
        existing destination is not a regular file (a link, FIFO, folder), or the
        write fails.
    """
    if not name or name in (".", "..") or os.sep in name or (os.altsep and os.altsep in name):
        message = f"refusing to write {name!r} in {folder}: expected a plain file name"
        raise OutputError(message)
    dest = Path(folder) / name
    check_inside(folder, dest)
    try:
        mode = os.lstat(dest).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        message = (
            f"refusing to replace {dest}: it is {describe_mode(mode)}, not a file "
            "mueval wrote; remove it or choose another output folder"
        )
        raise OutputError(message)
    try:
        # mudata's helper: temporary file beside, fsync, rename; removed on failure.
        with atomic_path(dest, keep_suffix=True) as tmp:
            write(tmp)
    except OutputError:
        raise
    except OSError as exc:
        message = f"cannot write {dest}: {exc.strerror or exc}"
        raise OutputError(message) from exc
    return dest


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix ``'`` to text cells a spreadsheet would run as a formula.

    Only text cells are touched: numeric columns (negative numbers included) are
    left as they are, so the CSV still reads back as numbers.

    Parameters
    ----------
    frame : DataFrame

    Returns
    -------
    DataFrame
        A copy when anything changed, else ``frame`` itself.
    """
    out = frame
    for col in frame.columns:
        series = frame[col]
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        risky = series.map(lambda v: isinstance(v, str) and v.startswith(FORMULA_LEADS))
        if bool(risky.any()):
            if out is frame:
                out = frame.copy()
            out[col] = series.map(
                lambda v: "'" + v if isinstance(v, str) and v.startswith(FORMULA_LEADS) else v
            )
    return out
