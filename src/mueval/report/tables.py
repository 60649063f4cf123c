"""The study-style terminal tables: metrics as rows, classifiers as columns,
mean ± SD over iterations, one block per strategy."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

import pandas as pd

from mueval.names import (
    FULL_DIAGNOSTICS,
    METRICS,
    PERCENT_METRICS,
    classifier_name,
    ordered_classifiers,
    ordered_strategies,
    strategy_name,
)

__all__ = [
    "PERCENT_METRICS",
    "cell_texts",
    "format_cell",
    "format_diagnostic_cell",
    "format_table",
    "table_rows",
]


def format_cell(mean: float, sd: float, percent: bool) -> str:
    """``mean±sd`` with two decimals, both times 100 when ``percent``.

    Parameters
    ----------
    mean, sd : float
        Fractions (NaN prints as ``nan``).
    percent : bool

    Returns
    -------
    str
        E.g. ``"78.65±1.10"``.
    """
    factor = 100.0 if percent else 1.0
    return f"{mean * factor:.2f}±{sd * factor:.2f}"


#: Diagnostics whose values are of the order of 1e-3 (HSIC of a 0/1 indicator,
#: a Brier excess risk): two decimals would print them all as 0.00.
SCIENTIFIC_METRICS: frozenset[str] = frozenset({"hsic_size_coverage", "ert"})


def cell_texts(metric: str, mean: float, sd: float, diagnostic: bool = False) -> tuple[str, str]:
    """The mean and the SD of one cell as :func:`format_table` prints them, apart.

    The one place that says how a cell is rounded and scaled, so that the paper
    tables of :mod:`mueval.report.paper` print the terminal's very numbers.

    Parameters
    ----------
    metric : str
        The metric's name: a percent metric is scaled by 100, a tiny diagnostic
        (:data:`SCIENTIFIC_METRICS`) printed in scientific notation.
    mean, sd : float
        Fractions (NaN prints as ``nan``).
    diagnostic : bool, default False
        The row is a diagnostic (printed below the study's rows).

    Returns
    -------
    mean, sd : str

    Examples
    --------
    >>> cell_texts("coverage", 0.953649, 0.01058)
    ('95.36', '1.06')
    >>> cell_texts("hsic_size_coverage", 0.00123, 0.0004, diagnostic=True)
    ('1.2e-03', '4.0e-04')
    """
    if diagnostic and metric in SCIENTIFIC_METRICS:
        return f"{mean:.1e}", f"{sd:.1e}"
    factor = 100.0 if (metric in PERCENT_METRICS and not diagnostic) else 1.0
    return f"{mean * factor:.2f}", f"{sd * factor:.2f}"


def format_diagnostic_cell(metric: str, mean: float, sd: float) -> str:
    """``mean±sd`` of a diagnostic: two decimals, or ``1.2e-03±4.0e-04`` for tiny ones.

    Parameters
    ----------
    metric : str
        Diagnostic name (see :data:`SCIENTIFIC_METRICS`).
    mean, sd : float
        Fractions (NaN prints as ``nan``).

    Returns
    -------
    str
    """
    return "±".join(cell_texts(metric, mean, sd, diagnostic=True))


def format_table(
    summary: pd.DataFrame,
    metrics: Sequence[str] = METRICS,
    diagnostics: Sequence[str] | None = None,
) -> str:
    """Terminal table: one block per strategy, metrics as rows, classifiers as columns.

    Parameters
    ----------
    summary : DataFrame
        ``strategy, classifier, metric, mean, sd, n`` (see ``summary.csv``).
    metrics : sequence of str
        Rows to print, in order.
    diagnostics : sequence of str, optional
        Diagnostic rows printed below a rule at the bottom of each block.
        Default: every diagnostic of :data:`mueval.names.FULL_DIAGNOSTICS`
        present in ``summary``.

    Returns
    -------
    str
    """
    if diagnostics is None:
        present = set(summary["metric"])
        diagnostics = [d for d in FULL_DIAGNOSTICS if d in present]
    blocks = []
    for strategy in ordered_strategies(summary["strategy"]):
        part = summary[summary["strategy"] == strategy]
        classifiers = ordered_classifiers(part["classifier"])
        cells = _cells(part, diagnostics)
        header = ["metric", *[classifier_name(c) for c in classifiers]]
        lines = [header]
        for metric in metrics:
            label = f"{metric} (%)" if metric in PERCENT_METRICS else metric
            lines.append([label, *[cells.get((metric, c), "") for c in classifiers]])
        n_study = len(lines)
        for metric in diagnostics:
            lines.append([metric, *[cells.get((metric, c), "") for c in classifiers]])
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        text = [
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(line, widths, strict=True))
            )
            for line in lines
        ]
        rule = "-" * len(text[0])
        n_iter = int(part["n"].max()) if len(part) else 0
        title = f"{strategy_name(strategy)}: mean±SD over {n_iter} iterations"
        body = [title, text[0], rule, *text[1:n_study]]
        if len(text) > n_study:
            # The diagnostics are computed on the pooled test rows, not per user:
            # a rule keeps them apart from the study's rows.
            body += [rule, *text[n_study:]]
        blocks.append("\n".join(body))
    return "\n\n".join(blocks)


def _cells(part: pd.DataFrame, diagnostics: Sequence[str]) -> dict[tuple[str, str], str]:
    """(metric, classifier) -> the printed ``mean±sd`` of one strategy's summary rows."""
    return {
        (row.metric, row.classifier): "±".join(
            cell_texts(row.metric, row.mean, row.sd, row.metric in diagnostics)
        )
        for row in cast("Iterable[Any]", part.itertuples())
    }


def table_rows(
    summary: pd.DataFrame,
    metrics: Sequence[str] = METRICS,
    diagnostics: Sequence[str] | None = None,
) -> tuple[list[str], list[list[str]]]:
    """The cells of :func:`format_table` as one table: a header and one row per
    (strategy, metric), for ``--table csv`` or ``markdown``.

    Parameters
    ----------
    summary, metrics, diagnostics
        As for :func:`format_table`.

    Returns
    -------
    header : list of str
        ``strategy, metric`` and one column per classifier of the run.
    rows : list of list of str
    """
    if diagnostics is None:
        present = set(summary["metric"])
        diagnostics = [d for d in FULL_DIAGNOSTICS if d in present]
    classifiers = ordered_classifiers(summary["classifier"])
    header = ["strategy", "metric", *[classifier_name(c) for c in classifiers]]
    rows = []
    for strategy in ordered_strategies(summary["strategy"]):
        cells = _cells(summary[summary["strategy"] == strategy], diagnostics)
        for metric in [*metrics, *diagnostics]:
            label = f"{metric} (%)" if metric in PERCENT_METRICS else metric
            rows.append([strategy, label, *[cells.get((metric, c), "") for c in classifiers]])
    return header, rows
