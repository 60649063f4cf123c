"""Reports of a run folder: the study's pictures, per-user coverage and honest diagnostics.

``mueval report RUN_DIR`` builds one self-contained HTML page plus the figures as
PNG and SVG files; ``mueval compare RUN_DIR...`` prints the significance tests
between strategies. Modules: :mod:`~mueval.runfolder` (read and check),
:mod:`~mueval.report.setstats` (matrices over prediction sets),
:mod:`~mueval.comparison.significance` (tests), :mod:`~mueval.report.figures`,
:mod:`~mueval.report.html`, :mod:`~mueval.report.build` and
:mod:`~mueval.cli.report`.
"""

from __future__ import annotations

from mueval.runfolder import RunFolder, RunFolderError, read_run_folder

__all__ = ["RunFolder", "RunFolderError", "read_run_folder"]
