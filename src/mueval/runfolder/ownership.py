"""What makes a folder mueval's: its marker, and nothing in it that mueval did not write.

This module owns the one check of a folder mueval may replace
(:func:`folder_problem`, :func:`foreign_problem`), the reading of the markers
that say who wrote a folder (:func:`read_marker`: ``run.json``, the report's
marker), and what a report folder may hold (:func:`report_foreign_entries`):
``report.html``, the marker, and in ``figures/`` only the figures the report
claimed (:data:`~mueval.runfolder.format.REPORT_FIGURES`) before writing them.
A file of the user's there, even one with a figure's suffix, is foreign, so
that ``--overwrite`` refuses rather than deletes it. :mod:`mueval.runfolder.replace`
applies these checks to a run folder, :mod:`mueval.report.folder` to a report's.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mudata.files import describe_kind, open_regular
from mueval.errors import OutputError
from mueval.runfolder.format import (
    FIGURE_SUFFIXES,
    REPORT_FIGURES,
    REPORT_FORMAT,
    REPORT_FORMAT_VERSION,
    REPORT_MARKER,
)

__all__ = [
    "claimed_figures",
    "folder_problem",
    "foreign_problem",
    "is_regular",
    "read_marker",
    "report_foreign_entries",
    "report_marker",
]

#: Larger than any report marker mueval writes: a bigger one is not read.
REPORT_MARKER_MAX_BYTES = 4096
#: Larger than any list of figures a report claims (a name a line, thousands of
#: figures at most): a bigger one is not read, and no figure is then the report's.
_CLAIMS_MAX_BYTES = 4 * 2**20


def read_marker(folder: Path, name: str, max_bytes: int) -> dict[str, Any] | None:
    """The marker ``name`` of ``folder`` if it is a regular file holding a JSON object, else None.

    Opened as every file read inside a folder is (:func:`mudata.files.open_regular`):
    not a link, nor under one, and refused if it is not a regular file, a link
    swapped in after the check failing to open rather than being followed.

    Parameters
    ----------
    folder : Path
    name : str
        The marker's file name (``run.json``, the report's marker).
    max_bytes : int
        Larger than any such marker mueval writes: a bigger file is not read.

    Returns
    -------
    dict or None
    """
    try:
        with open_regular(folder / name, "folder marker", OutputError, inside=folder) as fh:
            text = fh.read(max_bytes + 1)
        if len(text) > max_bytes:
            return None
        info = json.loads(text.decode("utf-8"))
    except (OSError, ValueError):  # OutputError (a link, a FIFO) included
        return None
    return info if isinstance(info, dict) else None


def folder_problem(
    folder: str | Path, contents_problem: Callable[[Path], str | None]
) -> str | None:
    """Why ``folder`` is not one that mueval wrote and may replace, or None if it is.

    The one check of what makes a folder mueval's, for a run folder and a report
    folder alike: a real folder (not a link, nor anything else), whose contents
    ``contents_problem`` accepts.

    Parameters
    ----------
    folder : path
    contents_problem : callable
        Takes the folder, returns why its contents are not what mueval wrote (or
        None); an OSError it raises is reported as the folder not being readable.

    Returns
    -------
    str or None
        A reason that completes "... is not a mueval ... folder: <reason>".
    """
    folder = Path(folder)
    try:
        mode = os.lstat(folder).st_mode
        if not stat.S_ISDIR(mode):
            return f"it is {describe_kind(mode)}"
        return contents_problem(folder)
    except OSError as exc:
        return f"cannot inspect it ({exc.strerror or exc})"


def foreign_problem(foreign: list[str], writer: str) -> str | None:
    """The reason naming the entries of a folder that ``writer`` did not write (None if none).

    Parameters
    ----------
    foreign : list of str
        The entries, as they are to be shown; the first five are named.
    writer : str
        What would have written the folder (``mueval``, ``mueval report``).

    Returns
    -------
    str or None
    """
    if not foreign:
        return None
    more = len(foreign) - 5
    shown = ", ".join(foreign[:5]) + (f" and {more} more" if more > 0 else "")
    return f"it holds entries {writer} did not write: {shown}"


def is_regular(path: Path) -> bool:
    """Whether ``path`` itself (a link not followed) is a regular file."""
    return stat.S_ISREG(os.lstat(path).st_mode)


def report_marker(folder: Path) -> dict[str, Any] | None:
    """The report marker of ``folder`` when it is mueval report's, else None."""
    info = read_marker(folder, REPORT_MARKER, REPORT_MARKER_MAX_BYTES)
    return info if info is not None and info.get("format") == REPORT_FORMAT else None


def claimed_figures(folder: Path) -> frozenset[str] | None:
    """The figures the report in ``folder`` claimed, or None for a report that claims none.

    A report whose marker is of :data:`~mueval.runfolder.format.REPORT_FORMAT_VERSION`
    or later claims each figure, by its file name, in
    :data:`~mueval.runfolder.format.REPORT_FIGURES` before writing it: the names
    listed there (none when the list cannot be read). A report written before
    (an older marker, or none) claims nothing: None, and its figures are told
    by their suffix alone, as they were when it was written.
    """
    info = report_marker(folder)
    version = None if info is None else info.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < REPORT_FORMAT_VERSION:
        return None
    try:
        with open_regular(folder / REPORT_FIGURES, "figure list", OutputError, inside=folder) as fh:
            data = fh.read(_CLAIMS_MAX_BYTES + 1)
        if len(data) > _CLAIMS_MAX_BYTES:
            return frozenset()
        text = data.decode("utf-8")
    except (OSError, ValueError):  # OutputError (a link, a FIFO) and bad UTF-8 included
        return frozenset()
    return frozenset(line for line in text.split("\n") if line and "/" not in line)


def report_foreign_entries(folder: Path, prefix: str = "") -> list[str]:
    """Entries of the report folder ``folder`` that ``mueval report`` did not write.

    ``report.html``, the marker and the list of figures, each a regular file,
    and a real ``figures`` folder holding regular files with a figure's suffix
    (:data:`~mueval.runfolder.format.FIGURE_SUFFIXES`) that the report claimed
    (:func:`claimed_figures`; any such file for a report that claims none).

    Parameters
    ----------
    folder : Path
        A real folder.
    prefix : str
        Put before each entry shown (``"report/"`` inside a run folder).

    Returns
    -------
    list of str
        Each foreign entry as shown in a refusal, in name order.
    """
    claimed = claimed_figures(folder)
    foreign = []
    for name in sorted(os.listdir(folder)):
        path = folder / name
        mode = os.lstat(path).st_mode
        if name in ("report.html", REPORT_MARKER, REPORT_FIGURES) and stat.S_ISREG(mode):
            continue
        if name == "figures" and stat.S_ISDIR(mode):
            for fig in sorted(os.listdir(path)):
                fig_mode = os.lstat(path / fig).st_mode
                ours = fig.endswith(FIGURE_SUFFIXES) and stat.S_ISREG(fig_mode)
                if not ours or (claimed is not None and fig not in claimed):
                    foreign.append(f"{prefix}figures/{fig} ({describe_kind(fig_mode)})")
            continue
        foreign.append(f"{prefix}{name} ({describe_kind(mode)})")
    return foreign
