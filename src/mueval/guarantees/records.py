"""The per-user guarantees of a run as a record, and the columns of their tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

__all__ = [
    "CONDITIONAL_COVERAGE_COLUMNS",
    "CONDITIONAL_VERDICT_COLUMNS",
    "CONFIDENCE",
    "COVERAGE_INTERVAL_COLUMNS",
    "COVERAGE_SUMMARY_COLUMNS",
    "USER_COVERAGE_COLUMNS",
    "USER_VALIDITY_COLUMNS",
    "USER_VERDICT_COLUMNS",
    "Guarantees",
]

#: A coverage with its Clopper-Pearson interval, as every coverage table holds it.
COVERAGE_INTERVAL_COLUMNS: tuple[str, ...] = ("n", "n_covered", "coverage", "low", "high", "below")
USER_COVERAGE_COLUMNS: tuple[str, ...] = (
    "strategy",
    "classifier",
    "user",
    *COVERAGE_INTERVAL_COLUMNS,
)
#: The exact per-user test's columns of ``user_coverage.csv`` (runs written
#: since the verdicts, whose ``below`` is the verdict; an older folder's is the
#: interval rule, and is recomputed on load).
USER_VERDICT_COLUMNS: tuple[str, ...] = ("expected_covered", "p_value", "p_adjusted")
COVERAGE_SUMMARY_COLUMNS: tuple[str, ...] = (
    "strategy",
    "classifier",
    "n_users",
    "n_below",
    "share_below",
    "worst_user",
    "worst_n",
    "worst_coverage",
    "worst_low",
    "worst_high",
    "mean_coverage",
    "mean_low",
    "mean_high",
    "pooled_n",
    "pooled_covered",
    "pooled_coverage",
    "pooled_low",
    "pooled_high",
    "pooled_below",
)
CONDITIONAL_COVERAGE_COLUMNS: tuple[str, ...] = (
    "strategy",
    "classifier",
    "by",
    "value",
    "n_users",
    *COVERAGE_INTERVAL_COLUMNS,
)
#: The exact test's columns of ``conditional_coverage.csv`` (runs written since
#: it, whose ``below`` is the test's verdict; an older folder's is the interval
#: rule, and the table is recomputed on load).
CONDITIONAL_VERDICT_COLUMNS: tuple[str, ...] = ("p_value", "p_adjusted")
USER_VALIDITY_COLUMNS: tuple[str, ...] = (
    "strategy",
    "classifier",
    "user",
    "n",
    "statistic",
    "pvalue",
    "pvalue_bh",
    "flagged",
    "method",
)

#: Confidence of every interval written into a run folder.
CONFIDENCE = 0.95


@dataclass
class Guarantees:
    """The per-user guarantees of one run.

    Attributes
    ----------
    user_coverage : DataFrame
        :func:`~mueval.guarantees.intervals.per_user_coverage` output (exact
        interval of the observed rate) with the exact test's
        ``expected_covered``, ``p_value``, ``p_adjusted`` and ``below``
        (:func:`~mueval.guarantees.run_verdicts.verdict_table`; ``<NA>`` where no
        verdict is given).
    coverage_summary : DataFrame
        :func:`~mueval.guarantees.intervals.coverage_summary` output.
    warnings : list of dict
        :class:`~mueval.guarantees.run_warnings.RunWarning` as dicts (``strategy,
        classifier, kind, message, severity``), the form ``run.json`` holds.
    conditional_coverage : DataFrame or None
        Coverage per class (``by == "class"``) and per cohort of users
        (``by == "cohort"``) with Clopper-Pearson intervals, and the exact
        test's ``p_value``, ``p_adjusted`` and ``below``
        (:mod:`~mueval.guarantees.conditional_verdicts`; ``nan`` and ``<NA>``
        for a class without a per-class guarantee).
    user_validity : DataFrame or None
        The one-sided KS test per user, Benjamini-Hochberg adjusted.
    user_cohorts : DataFrame or None
        ``user, cohort``: each user's cohort, when the run had cohorts.
    """

    user_coverage: pd.DataFrame
    coverage_summary: pd.DataFrame
    warnings: list[dict[str, Any]] = field(default_factory=list)
    conditional_coverage: pd.DataFrame | None = None
    user_validity: pd.DataFrame | None = None
    user_cohorts: pd.DataFrame | None = None
