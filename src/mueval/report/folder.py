"""The folder a report goes into: refused unless empty, new, or an earlier report.

``mueval report`` writes ``report.html``, ``figures/*.svg|pdf|png``, a marker
(:data:`~mueval.runfolder.format.REPORT_MARKER`) and the list of the figures it
claims (:data:`~mueval.runfolder.format.REPORT_FIGURES`). The marker and the list
are written first, and each figure is claimed before its file is written
(:func:`claim_figure`), so that even an interrupted report is recognised as
mueval's, and a file of the user's in ``figures/`` never is. Like ``mueval
evaluate``, it never writes into a folder that holds anything else: a non-empty
folder is replaced only with ``--overwrite``, and only when it holds nothing but
an earlier report; then only the figures that report claimed are removed
(:func:`remove_stale_figures`).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from mudata.files import atomic_write, describe_kind
from mueval.errors import OutputError
from mueval.runfolder.format import (
    FIGURE_SUFFIXES,
    REPORT_FIGURES,
    REPORT_FORMAT,
    REPORT_FORMAT_VERSION,
    REPORT_MARKER,
)
from mueval.runfolder.ownership import (
    claimed_figures,
    folder_problem,
    foreign_problem,
    report_foreign_entries,
    report_marker,
)

__all__ = [
    "claim_figure",
    "prepare_report_folder",
    "real_folder",
    "remove_stale_figures",
    "report_folder_problem",
]


def report_folder_problem(folder: str | Path) -> str | None:
    """Why ``folder`` is not a report written by ``mueval report``, or None if it is.

    Parameters
    ----------
    folder : path

    Returns
    -------
    str or None
        A reason that completes "... is not a mueval report folder: <reason>".
    """
    return folder_problem(folder, _report_contents_problem)


def _report_contents_problem(folder: Path) -> str | None:
    """Why the contents of the real folder ``folder`` are not a report's, or None."""
    problem = foreign_problem(report_foreign_entries(folder), "mueval report")
    if problem is None and report_marker(folder) is None:
        return f"it holds no readable {REPORT_MARKER} (the marker mueval report writes)"
    return problem


def _refuse_non_folder(path: Path) -> None:
    """Raise OutputError when ``path`` exists and is not a real folder (a link is refused)."""
    if not os.path.lexists(path):
        return
    mode = os.lstat(path).st_mode
    if stat.S_ISDIR(mode):
        return
    if stat.S_ISLNK(mode):
        kind = "a symbolic link"
    elif stat.S_ISREG(mode):
        kind = "a regular file"
    else:
        kind = describe_kind(mode)
    msg = (
        f"cannot write the report into {path}: it is {kind}; mueval writes reports "
        "only into real folders (choose another --out)"
    )
    raise OutputError(msg)


def real_folder(path: str | Path) -> Path:
    """Create ``path`` if needed; refuse a symbolic link or a non-folder there.

    A run folder is someone else's data: its ``report`` entry could be a link to
    any folder of the reader's, which ``mueval report`` would then write into.

    Returns
    -------
    Path
        ``path``, resolved.

    Raises
    ------
    OutputError
        ``path`` is a symbolic link or not a folder, or cannot be created.
    """
    path = Path(path)
    _refuse_non_folder(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        msg = f"cannot write the report into {path}: {exc.strerror or exc}"
        raise OutputError(msg) from exc
    return path.resolve()


def prepare_report_folder(out: str | Path, *, overwrite: bool = False) -> Path:
    """Check ``out`` can receive a report, create it if new, and mark it as a report.

    Parameters
    ----------
    out : path
    overwrite : bool
        Allow writing over an earlier report of ``mueval report`` (and only one).

    Returns
    -------
    Path
        ``out``, now a real folder holding the report marker.

    Raises
    ------
    OutputError
        ``out`` is a symbolic link or not a folder; it is not empty and holds
        anything but an earlier report; it holds an earlier report and
        ``overwrite`` is false; or it cannot be created.
    """
    out = Path(out)
    if os.path.lexists(out):
        _refuse_non_folder(out)
        try:
            empty = not any(out.iterdir())
        except OSError as exc:
            msg = f"cannot write the report into {out}: {exc.strerror or exc}"
            raise OutputError(msg) from exc
        if not empty:
            problem = report_folder_problem(out)
            if problem is not None:
                msg = (
                    f"cannot write the report into {out}: it is not empty and mueval report "
                    f"did not write it ({problem}); nothing was changed (choose another --out)"
                )
                raise OutputError(msg)
            if not overwrite:
                msg = f"report folder {out} already holds a report (use --overwrite to replace it)"
                raise OutputError(msg)
    real_folder(out)
    # The earlier report's figures stay claimed until this one has replaced or
    # removed them: an interrupted report leaves no figure of mueval's unclaimed.
    earlier = _figures_of_earlier_report(out)
    marker = json.dumps({"format": REPORT_FORMAT, "format_version": REPORT_FORMAT_VERSION})
    try:
        # Written beside and renamed over: a link planted at a name since the
        # check above is replaced, never written through. The list first: a
        # marker of this version without it would disown the earlier figures.
        atomic_write(out / REPORT_FIGURES, "".join(f"{name}\n" for name in sorted(earlier)))
        atomic_write(out / REPORT_MARKER, marker + "\n")
    except OSError as exc:
        msg = f"cannot write the report into {out}: {exc.strerror or exc}"
        raise OutputError(msg) from exc
    return out


def _figures_of_earlier_report(out: Path) -> set[str]:
    """The figures of the report in ``out`` (checked to hold nothing else), by file name.

    A report written before figures were claimed has no list: its figures are
    the regular files with a figure's suffix, as they were told apart then.
    """
    figures = out / "figures"
    if not figures.is_dir() or figures.is_symlink():
        return set()
    present = {
        name
        for name in os.listdir(figures)
        if name.endswith(FIGURE_SUFFIXES) and stat.S_ISREG(os.lstat(figures / name).st_mode)
    }
    claimed = claimed_figures(out)
    return present if claimed is None else present & claimed


def claim_figure(out: Path, name: str) -> None:
    """Add the file name ``name`` to the figures the report in ``out`` claims.

    Called before the figure's file is written, by this process or a worker
    drawing a section: one appended line each (an append of a few bytes is one
    write, whole, even from several processes). Opened without following a
    link, and never a FIFO or device (:data:`~mueval.runfolder.format.REPORT_FIGURES`
    was written by :func:`prepare_report_folder` as a regular file).

    Raises
    ------
    OutputError
        The list cannot be written, or is no longer a regular file.
    """
    if "/" in name or "\n" in name:
        msg = f"cannot claim the figure {name!r}: not a plain file name"
        raise OutputError(msg)
    path = out / REPORT_FIGURES
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                msg = f"cannot write the report into {out}: {REPORT_FIGURES} is not a regular file"
                raise OutputError(msg)
            os.write(fd, f"{name}\n".encode())
        finally:
            os.close(fd)
    except OSError as exc:
        msg = f"cannot write the report into {out}: {REPORT_FIGURES}: {exc.strerror or exc}"
        raise OutputError(msg) from exc


def remove_stale_figures(out: str | Path, written: Iterable[Path]) -> list[str]:
    """Remove the figures of an earlier report that this one did not write again.

    Only regular ``.svg``, ``.pdf`` and ``.png`` files in ``out/figures`` that
    a report claimed are touched (the folder was checked to hold nothing else);
    then the list of claimed figures is the ones written. Returns the names
    removed.
    """
    out = Path(out)
    figures = out / "figures"
    keep = {Path(p).name for p in written}
    claimed = claimed_figures(out)
    removed: list[str] = []
    if figures.is_dir() and not figures.is_symlink():
        for name in sorted(os.listdir(figures)):
            path = figures / name
            if name in keep or not name.endswith(FIGURE_SUFFIXES):
                continue
            if claimed is not None and name not in claimed:
                continue  # not the report's: the user's own file is never touched
            if stat.S_ISREG(os.lstat(path).st_mode):
                path.unlink()
                removed.append(name)
    if claimed is not None:
        try:
            atomic_write(out / REPORT_FIGURES, "".join(f"{name}\n" for name in sorted(keep)))
        except OSError as exc:
            msg = f"cannot write the report into {out}: {exc.strerror or exc}"
            raise OutputError(msg) from exc
    return removed
