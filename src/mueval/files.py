"""mueval's file access: inputs through :mod:`mudata.files`, outputs inside their folder.

Three rules:

* **Read only regular files.** :func:`open_input` is
  :func:`mudata.files.open_regular` (which owns the rule) with mueval's error.
* **Write only inside the output folder.** Every destination is resolved and
  compared with the resolved folder before anything is written; a name that
  would climb out (``../``) or a symbolic link that points elsewhere is refused.
* **Replace, never write through.** A file is written under a temporary name
  beside its destination and renamed over it, so a link or FIFO planted at the
  destination is neither followed nor opened; an existing destination that is
  not a regular file is refused rather than replaced.

It also neutralises formula-leading text cells of CSV output (CSV injection), in a
form that reads back exactly (:func:`write_csv`, :func:`restore_formulas`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pandas as pd

# The formula rule is mudata's, so that CSV on stdout (``--table csv``) and in files agree.
from mudata.display import FORMULA_LEADS, FORMULA_QUOTE, formula_safe
from mudata.files import atomic_path, describe_kind, open_regular
from mueval.errors import NotRegularFileError, OutputError

__all__ = [
    "FORMULA_LEADS",
    "check_inside",
    "neutralise_formulas",
    "open_input",
    "restore_formulas",
    "write_atomic",
    "write_csv",
]


def _refusal(path: Path | str, what: str, kind: str) -> str:
    return (
        f"{path}: expected {what} as a regular file, found {kind}; "
        "mueval reads only regular files (a pipe or device could block or never end)"
    )


def open_input(path: str | Path, what: str, *, inside: str | Path | None = None) -> BinaryIO:
    """Open a regular file for binary reading, refusing any other kind without blocking.

    :func:`mudata.files.open_regular` with mueval's error and wording.

    Parameters
    ----------
    path : path
    what : str
        What the file is, for messages (e.g. ``"--data"``, ``"run.json"``).
    inside : path, optional
        The folder the user named (a run folder): ``path``, found in it, must
        not be a symbolic link (:func:`mudata.files.link_in_folder`).

    Returns
    -------
    BinaryIO
        An open file; the caller closes it.

    Raises
    ------
    NotRegularFileError
        The path does not exist, cannot be opened, or is not a regular file.
    """
    return open_regular(  # type: ignore[return-value]
        Path(path),
        what,
        NotRegularFileError,
        refusal=_refusal,
        unreadable=NotRegularFileError,
        inside=inside,
    )


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
            f"refusing to replace {dest}: it is {describe_kind(mode)}, not a file "
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


def _is_risky(value: object) -> bool:
    return isinstance(value, str) and formula_safe(value) != value


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Prefix ``'`` to text cells a spreadsheet would run as a formula.

    Text that already starts with ``'`` is prefixed too, so the prefix can be
    undone exactly (:func:`restore_formulas`): a label ``-1`` is written ``'-1``
    and a label ``'x`` is written ``''x``, and both read back as they were. A
    spreadsheet shows the cell without its first ``'``, so it shows the text
    as it was as well.

    Only text cells are touched: numeric columns (negative numbers included) are
    left as they are, so the CSV still reads back as numbers.

    Parameters
    ----------
    frame : DataFrame

    Returns
    -------
    DataFrame
        A copy when anything changed, else ``frame`` itself.

    Examples
    --------
    >>> neutralise_formulas(pd.DataFrame({"label": ["-1", "walk", "'q"]}))["label"].tolist()
    ["'-1", 'walk', "''q"]
    """
    out = frame
    for col in frame.columns:
        series = frame[col]
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        if bool(series.map(_is_risky).any()):
            if out is frame:
                out = frame.copy()
            out[col] = series.map(lambda v: formula_safe(v) if isinstance(v, str) else v)
    return out


def restore_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """Undo :func:`neutralise_formulas`: drop the first ``'`` of every text cell.

    Every text cell that starts with ``'`` was prefixed by the writer (which
    prefixes text starting with ``'`` too), so the text comes back exactly.

    Parameters
    ----------
    frame : DataFrame
        As read from a CSV that :func:`write_csv` wrote.

    Returns
    -------
    DataFrame
        A copy when anything changed, else ``frame`` itself.

    Examples
    --------
    >>> table = pd.DataFrame({"label": ["-1", "walk", "'q"]})
    >>> restore_formulas(neutralise_formulas(table)).equals(table)
    True
    """
    out = frame
    for col in frame.columns:
        series = frame[col]
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        quoted = series.map(lambda v: isinstance(v, str) and v.startswith(FORMULA_QUOTE))
        if bool(quoted.any()):
            if out is frame:
                out = frame.copy()
            out[col] = series.where(~quoted, series.str[1:])
    return out


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as CSV at ``path``, formula-safe and exact once read back.

    Text a spreadsheet would run as a formula is prefixed (:func:`neutralise_formulas`,
    undone by :func:`restore_formulas`), and lines end in CR LF (RFC 4180), so a
    field holding a CR or LF of its own is quoted and read back whole.
    """
    neutralise_formulas(frame).to_csv(path, index=False, lineterminator="\r\n")
