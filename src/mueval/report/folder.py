"""The folder a report goes into: refused unless empty, new, or an earlier report.

``mueval report`` writes ``report.html``, ``figures/*.svg|pdf|png`` and a marker
(:data:`~mueval.runfolder.format.REPORT_MARKER`), written first so that even an
interrupted report is recognised as mueval's. Like ``mueval evaluate``, it never
writes into a folder that holds anything else: a non-empty folder is replaced only
with ``--overwrite``, and only when it holds nothing but an earlier report.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from mudata.files import atomic_write, describe_kind
from mueval.errors import OutputError
from mueval.runfolder.format import FIGURE_SUFFIXES, REPORT_FORMAT, REPORT_MARKER
from mueval.runfolder.replace import folder_problem, foreign_problem, read_marker

__all__ = ["prepare_report_folder", "real_folder", "remove_stale_figures", "report_folder_problem"]

#: Larger than any marker mueval writes: a bigger one is not read.
_MARKER_MAX_BYTES = 4096


def _marker_ok(folder: Path) -> bool:
    """Whether ``folder`` holds a report marker of mueval's, of a marker's size."""
    info = read_marker(folder, REPORT_MARKER, _MARKER_MAX_BYTES)
    return info is not None and info.get("format") == REPORT_FORMAT


def _foreign(folder: Path) -> list[str]:
    """Entries of ``folder`` that ``mueval report`` would not have written, with their kind."""
    foreign = []
    for name in sorted(os.listdir(folder)):
        path = folder / name
        mode = os.lstat(path).st_mode
        if name in ("report.html", REPORT_MARKER) and stat.S_ISREG(mode):
            continue
        if name == "figures" and stat.S_ISDIR(mode):
            for fig in sorted(os.listdir(path)):
                fig_mode = os.lstat(path / fig).st_mode
                if not (fig.endswith(FIGURE_SUFFIXES) and stat.S_ISREG(fig_mode)):
                    foreign.append(f"figures/{fig} ({describe_kind(fig_mode)})")
            continue
        foreign.append(f"{name} ({describe_kind(mode)})")
    return foreign


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
    problem = foreign_problem(_foreign(folder), "mueval report")
    if problem is None and not _marker_ok(folder):
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
    marker = json.dumps({"format": REPORT_FORMAT, "format_version": 1}) + "\n"
    try:
        # Written beside and renamed over: a link planted at the name since the
        # check above is replaced, never written through.
        atomic_write(out / REPORT_MARKER, marker)
    except OSError as exc:
        msg = f"cannot write the report into {out}: {exc.strerror or exc}"
        raise OutputError(msg) from exc
    return out


def remove_stale_figures(out: str | Path, written: Iterable[Path]) -> list[str]:
    """Remove the figures of an earlier report that this one did not write again.

    Only regular ``.svg``, ``.pdf`` and ``.png`` files in ``out/figures`` are touched (the
    folder was checked to hold nothing else); returns the names removed.
    """
    figures = Path(out) / "figures"
    keep = {Path(p).name for p in written}
    removed: list[str] = []
    if not figures.is_dir() or figures.is_symlink():
        return removed
    for name in sorted(os.listdir(figures)):
        path = figures / name
        if name in keep or not name.endswith(FIGURE_SUFFIXES):
            continue
        if stat.S_ISREG(os.lstat(path).st_mode):
            path.unlink()
            removed.append(name)
    return removed
