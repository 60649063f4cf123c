"""The run folder's format: its version, its marker and the names of its files
and columns. Writing (:mod:`.write`), reading (:mod:`.read`) and the
consistency checks (:mod:`.consistency`) all take them from here.

A run folder (format_version 1) holds ``run.json``, ``summary.csv``,
``splits.parquet`` and ``predictions.parquet``, and, unless the run's
diagnostics level is ``none``, ``diagnostics.parquet`` and ``size_coverage.csv``
(additions that readers of format_version 1 may ignore). Runs written since the
per-user guarantees also hold ``user_coverage.csv`` and ``coverage_summary.csv``
and a ``warnings`` list in ``run.json``; a reader recomputes them from the
predictions when an older folder lacks them. Runs written since conditional
calibration also hold ``conditional_coverage.csv`` (coverage per class, and per
cohort of users when the run had cohorts), ``user_validity.csv`` (the per-user
KS test of :mod:`mueval.guarantees.validity`) and, when the run had cohorts,
``user_cohorts.csv`` (each user's cohort). Runs written since the exact per-user
test record ``user_level``, ``user_correction`` and ``user_combine`` in
``run.json``'s config, and ``user_coverage.csv`` holds the test's
``expected_covered``, ``p_value``, ``p_adjusted`` and its verdict ``below``.

The columns of the guarantee tables are declared by the code that computes
them, :mod:`mueval.guarantees.records`.
"""

from __future__ import annotations

__all__ = [
    "CONDITIONAL_COVERAGE_FILE",
    "COVERAGE_SUMMARY_FILE",
    "FIGURE_SUFFIXES",
    "FORMAT_VERSION",
    "PREDICTIONS_PART",
    "PREDICTION_COLUMNS",
    "REPORT_DIR",
    "REPORT_ENTRIES",
    "REPORT_FIGURES",
    "REPORT_FORMAT",
    "REPORT_FORMAT_VERSION",
    "REPORT_MARKER",
    "REQUIRED_FILES",
    "RUN_FILES",
    "RUN_FORMAT",
    "RUN_KEYS",
    "SPLITS_COLUMNS",
    "SUMMARY_COLUMNS",
    "USER_COHORTS_COLUMNS",
    "USER_COHORTS_FILE",
    "USER_COVERAGE_FILE",
    "USER_VALIDITY_FILE",
    "WARNING_KEYS",
]

#: Version of the layout below; a reader refuses any other.
FORMAT_VERSION = 1

#: Value of ``run.json``'s ``format`` key: marks a folder as a run folder, so that
#: ``--overwrite`` can tell it from anything else a user keeps.
RUN_FORMAT = "mueval-run"

#: Files every run folder holds.
REQUIRED_FILES: tuple[str, ...] = (
    "run.json",
    "summary.csv",
    "splits.parquet",
    "predictions.parquet",
)

#: Files a run folder of format_version 1 may hold (older folders list none).
RUN_FILES: tuple[str, ...] = (
    *REQUIRED_FILES,
    "diagnostics.parquet",
    "size_coverage.csv",
    "user_coverage.csv",
    "coverage_summary.csv",
    "conditional_coverage.csv",
    "user_validity.csv",
    "user_cohorts.csv",
)

#: The per-user guarantee files (optional: older folders lack them).
USER_COVERAGE_FILE = "user_coverage.csv"
COVERAGE_SUMMARY_FILE = "coverage_summary.csv"
#: Coverage per class and cohort, the per-user validity test, each user's cohort.
CONDITIONAL_COVERAGE_FILE = "conditional_coverage.csv"
USER_VALIDITY_FILE = "user_validity.csv"
USER_COHORTS_FILE = "user_cohorts.csv"

#: The default output of ``mueval report`` inside a run folder, and what it holds.
REPORT_DIR = "report"
#: ``mueval report`` writes this marker beside report.html, so that ``report
#: --overwrite`` can tell its own earlier report from a folder of the user's.
REPORT_MARKER = ".mueval-report.json"
REPORT_FORMAT = "mueval-report"
#: The marker's version from which a report claims its figures in :data:`REPORT_FIGURES`;
#: the figures of a report with an older marker are told by their suffix alone.
REPORT_FORMAT_VERSION = 2
#: Beside the marker: the name of each figure ``mueval report`` writes in ``figures/``,
#: one a line, each added before its file is written, so that a file of the user's
#: there (``poster.pdf``) is never taken for the report's, even after an interrupted report.
REPORT_FIGURES = ".mueval-report-figures"
REPORT_ENTRIES = frozenset({"report.html", "figures", REPORT_MARKER, REPORT_FIGURES})
#: The suffixes of the figures ``mueval report`` writes in ``figures/``
#: (``--figure-format svg|pdf|png``); a regular file of another is not the report's.
FIGURE_SUFFIXES: tuple[str, ...] = (".svg", ".pdf", ".png")

#: Where a stream writes the predictions until they are complete (in the run's
#: temporary folder; a leftover holding it is still a run's).
PREDICTIONS_PART = ".predictions.parquet.part"

#: Columns each file must hold.
SUMMARY_COLUMNS: tuple[str, ...] = ("strategy", "classifier", "metric", "mean", "sd", "n")
SPLITS_COLUMNS: tuple[str, ...] = (
    "strategy",
    "classifier",
    "iteration",
    "seed",
    "user",
    "n_test",
    "n_cal",
    "coverage",
    "setsize",
)
PREDICTION_COLUMNS: tuple[str, ...] = (
    "strategy",
    "classifier",
    "iteration",
    "seed",
    "target_user",
    "userid",
    "row_id",
    "y_true",
    "y_pred",
    "pred_set",
    "set_size",
    "covered",
    "p_values",
    "proba",
)
USER_COHORTS_COLUMNS: tuple[str, ...] = ("user", "cohort")
#: Fields of each entry of ``run.json``'s optional ``warnings`` list; ``severity``
#: is one of :data:`mueval.guarantees.run_warnings.SEVERITIES`.
WARNING_KEYS: tuple[str, ...] = ("strategy", "classifier", "kind", "message", "severity")
#: Keys every ``run.json`` holds.
RUN_KEYS: tuple[str, ...] = ("format_version", "dataset", "classes", "config", "versions")
