"""The study's tables for a paper: LaTeX (booktabs), CSV and Markdown.

One table per strategy, as the study's Tables 6 to 9: metrics as rows,
classifiers as columns, each cell the mean ± SD over iterations. Every number
is the text the terminal table prints (:func:`mueval.report.tables.cell_texts`):
the same scaling (percent metrics times 100), the same rounding, nothing
recomputed.

- LaTeX: one ``table`` environment per strategy with a ``tabular`` ruled by
  booktabs (``\\toprule``, ``\\midrule``, ``\\bottomrule``; the preamble needs
  ``\\usepackage{booktabs}``), each cell ``$53.62 \\pm 1.06$``, every name
  escaped;
- CSV: long, one row per (strategy, classifier, metric) with the mean and the
  SD in columns of their own, as printed (``unit`` says ``%`` where the
  numbers are percent); text cells a spreadsheet would run as a formula are
  neutralised as for every CSV mueval writes;
- Markdown: one pipe table per strategy under a line naming it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

from mueval.files import neutralise_formulas
from mueval.names import (
    CLASSIFIER_NAMES,
    CLASSIFIERS,
    FULL_DIAGNOSTICS,
    METRICS,
    PAPER_FORMATS,
    PAPER_ROWS,
    PERCENT_METRICS,
    ordered_strategies,
    strategy_name,
)
from mueval.report.tables import cell_texts

__all__ = [
    "CSV_COLUMNS",
    "PAPER_FORMATS",
    "PAPER_ROWS",
    "STUDY_ROWS",
    "PaperCell",
    "PaperTable",
    "latex_escape",
    "paper_csv",
    "paper_frame",
    "paper_latex",
    "paper_markdown",
    "paper_tables",
    "render_paper",
]

#: The rows of the study's Tables 6 to 9, in its order.
STUDY_ROWS: tuple[str, ...] = (
    "accuracy",
    "sensitivity",
    "specificity",
    "F1",
    "coverage",
    "jaccard",
    "setsize",
    "pctempty",
    "MCriterion",
    "FCriterion",
    "OM",
    "OF",
    "OU",
    "OE",
)

#: The columns of the CSV form, in order.
CSV_COLUMNS: tuple[str, ...] = (
    "strategy",
    "strategy_name",
    "classifier",
    "classifier_name",
    "metric",
    "unit",
    "mean",
    "sd",
    "n",
)


@dataclass(frozen=True)
class PaperCell:
    """One cell: the mean and the SD as the terminal prints them."""

    mean: str
    sd: str
    n: int
    diagnostic: bool = False


@dataclass
class PaperTable:
    """One strategy's table.

    Attributes
    ----------
    strategy : str
        The strategy's code.
    n_iterations : int
        The most iterations behind any of its cells.
    classifiers : list of str
        Codes, in column order.
    rows : list of str
        The study's metrics (or every metric), in row order.
    diagnostics : list of str
        Diagnostic rows, printed below a rule.
    cells : dict of (metric, classifier) to PaperCell
    """

    strategy: str
    n_iterations: int
    classifiers: list[str]
    rows: list[str]
    diagnostics: list[str] = field(default_factory=list)
    cells: dict[tuple[str, str], PaperCell] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The strategy's display name (its code when it has none)."""
        return strategy_name(self.strategy)

    @property
    def over(self) -> str:
        """``20 iterations`` (``1 iteration``)."""
        n = self.n_iterations
        return f"{n} iteration{'' if n == 1 else 's'}"


def _ordered(present: set[str], known: Sequence[str]) -> list[str]:
    """``known``'s order first, then anything else present, sorted."""
    return [c for c in known if c in present] + sorted(present - set(known))


def metric_label(metric: str) -> str:
    """The row label: ``accuracy (%)`` for a percent metric, else the name."""
    return f"{metric} (%)" if metric in PERCENT_METRICS else metric


def paper_tables(
    summary: pd.DataFrame, rows: str = "study", diagnostics: Sequence[str] | None = None
) -> list[PaperTable]:
    """The study-style tables of a run's summary, one per strategy.

    Parameters
    ----------
    summary : DataFrame
        ``strategy, classifier, metric, mean, sd, n`` (``summary.csv``).
    rows : {"study", "all"}
        ``study``: the study's 14 rows (:data:`STUDY_ROWS`); ``all``: every
        metric and diagnostic the terminal table prints.
    diagnostics : sequence of str, optional
        With ``rows="all"``, the diagnostic rows; default every diagnostic of
        the summary.

    Returns
    -------
    list of PaperTable
        In the strategies' order; a row no classifier of a strategy holds is
        left out of its table.
    """
    if rows not in PAPER_ROWS:
        msg = f"rows must be one of {', '.join(PAPER_ROWS)}; found {rows!r}"
        raise ValueError(msg)
    present = set(summary["metric"])
    if rows == "study":
        wanted, diags = list(STUDY_ROWS), []
    else:
        if diagnostics is None:
            diagnostics = [d for d in FULL_DIAGNOSTICS if d in present]
        diags = list(diagnostics)
        wanted = [m for m in METRICS if m not in diags]
    tables = []
    for strategy in ordered_strategies(summary["strategy"]):
        part = summary[summary["strategy"] == strategy]
        classifiers = _ordered(set(part["classifier"]), CLASSIFIERS)
        cells = {
            (row.metric, row.classifier): PaperCell(
                *cell_texts(row.metric, row.mean, row.sd, row.metric in diags),
                n=int(row.n),
                diagnostic=row.metric in diags,
            )
            for row in cast("Iterable[Any]", part.itertuples())
            if row.metric in wanted or row.metric in diags
        }
        held = {metric for metric, _ in cells}
        n_iter = int(part["n"].max()) if len(part) else 0
        tables.append(
            PaperTable(
                strategy,
                n_iter,
                classifiers,
                [m for m in wanted if m in held],
                [d for d in diags if d in held],
                cells,
            )
        )
    return tables


# --- LaTeX ------------------------------------------------------------------------

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_PATTERN = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIAL))


def latex_escape(text: str) -> str:
    r"""Text safe in a LaTeX document: its special characters escaped, control
    characters (a newline would end a paragraph, inside a table) made spaces.

    Examples
    --------
    >>> print(latex_escape("OF_textbook (%) & 5$"))
    OF\_textbook (\%) \& 5\$
    """
    text = "".join(ch if ch.isprintable() else " " for ch in str(text))
    return _LATEX_PATTERN.sub(lambda m: _LATEX_SPECIAL[m.group(0)], text)


# A label is a key, not text: anything but letters, digits, "-" and ":" becomes "-".
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9:-]")

_SCIENTIFIC = re.compile(r"^(-?\d+(?:\.\d+)?)e([+-])(\d+)$")


def _latex_number(text: str) -> str:
    """A printed number in math mode: ``1.2e-03`` as ``1.2 \\times 10^{-3}``,
    ``nan`` as a dash."""
    if text.lower() in ("nan", "inf", "-inf"):
        return r"\mbox{--}" if text.lower() == "nan" else rf"{text[:-3]}\infty"
    found = _SCIENTIFIC.match(text)
    if found is None:
        return text
    mantissa, sign, exponent = found.groups()
    power = int(exponent)
    return rf"{mantissa} \times 10^{{{'-' if sign == '-' else ''}{power}}}"


def _latex_cell(cell: PaperCell | None) -> str:
    if cell is None:
        return ""
    if cell.mean.lower() == "nan":
        return "--"
    return f"${_latex_number(cell.mean)} \\pm {_latex_number(cell.sd)}$"


def _latex_line(cells: Sequence[str]) -> str:
    return "    " + " & ".join(cells) + r" \\"


def paper_latex(tables: Sequence[PaperTable], *, label_prefix: str = "tab:mueval-") -> str:
    r"""The tables as LaTeX: one ``table`` environment per strategy, booktabs rules.

    Parameters
    ----------
    tables : sequence of PaperTable
    label_prefix : str
        Each table is labelled ``label_prefix + strategy code``, any character
        but letters, digits, ``-`` and ``:`` made ``-``.

    Returns
    -------
    str
        A fragment to ``\input`` into a document whose preamble loads booktabs.
    """
    blocks = []
    for table in tables:
        names = [latex_escape(CLASSIFIER_NAMES.get(c, c)) for c in table.classifiers]
        lines = [
            r"\begin{table}[htbp]",
            r"  \centering",
            f"  \\caption{{{latex_escape(table.name)}: mean $\\pm$ SD over {table.over}}}",
            f"  \\label{{{_LABEL_UNSAFE.sub('-', label_prefix + table.strategy)}}}",
            f"  \\begin{{tabular}}{{l{'r' * len(names)}}}",
            r"    \toprule",
            _latex_line(["Metric", *names]),
            r"    \midrule",
        ]
        for metric in table.rows:
            cells = [_latex_cell(table.cells.get((metric, c))) for c in table.classifiers]
            lines.append(_latex_line([latex_escape(metric_label(metric)), *cells]))
        if table.diagnostics:
            # Computed on the pooled test rows, not per user: a rule keeps them apart.
            lines.append(r"    \midrule")
            for metric in table.diagnostics:
                cells = [_latex_cell(table.cells.get((metric, c))) for c in table.classifiers]
                lines.append(_latex_line([latex_escape(metric), *cells]))
        lines += [r"    \bottomrule", r"  \end{tabular}", r"\end{table}"]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


# --- CSV ---------------------------------------------------------------------------


def _number(text: str) -> float:
    return float(text) if text else math.nan


def paper_frame(tables: Sequence[PaperTable]) -> pd.DataFrame:
    """The tables' cells as one long frame: one row per (strategy, classifier, metric).

    ``mean`` and ``sd`` are the printed numbers (percent where ``unit`` is ``%``),
    read back as floats: ``95.36`` and ``1.06``, not the summary's fractions.
    """
    records = []
    for table in tables:
        for metric in [*table.rows, *table.diagnostics]:
            for clf in table.classifiers:
                cell = table.cells.get((metric, clf))
                if cell is None:
                    continue
                percent = metric in PERCENT_METRICS and not cell.diagnostic
                records.append(
                    {
                        "strategy": table.strategy,
                        "strategy_name": table.name,
                        "classifier": clf,
                        "classifier_name": CLASSIFIER_NAMES.get(clf, clf),
                        "metric": metric,
                        "unit": "%" if percent else "",
                        "mean": _number(cell.mean),
                        "sd": _number(cell.sd),
                        "n": cell.n,
                    }
                )
    frame = pd.DataFrame(records, columns=list(CSV_COLUMNS))
    return frame.astype({"mean": "float64", "sd": "float64", "n": "int64"})


def paper_csv(tables: Sequence[PaperTable]) -> str:
    """:func:`paper_frame` as CSV text, formula-leading text cells neutralised."""
    return neutralise_formulas(paper_frame(tables)).to_csv(index=False, lineterminator="\n")


# --- Markdown ----------------------------------------------------------------------


def _pipe(values: Sequence[str]) -> str:
    # A pipe would end the cell and a newline the row.
    safe = [" ".join(v.replace("|", "\\|").split()) for v in values]
    return "| " + " | ".join(safe) + " |"


def paper_markdown(tables: Sequence[PaperTable]) -> str:
    """One pipe table per strategy, each under a line naming it and its iterations."""
    blocks = []
    for table in tables:
        names = [CLASSIFIER_NAMES.get(c, c) for c in table.classifiers]
        lines = [
            f"**{table.name}**: mean ± SD over {table.over}",
            "",
            _pipe(["metric", *names]),
            _pipe(["---", *["---:"] * len(names)]),
        ]
        for metric in [*table.rows, *table.diagnostics]:
            cells = []
            for clf in table.classifiers:
                cell = table.cells.get((metric, clf))
                cells.append("" if cell is None else f"{cell.mean}±{cell.sd}")
            label = metric if metric in table.diagnostics else metric_label(metric)
            lines.append(_pipe([label, *cells]))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def render_paper(tables: Sequence[PaperTable], table_format: str) -> str:
    """The tables in one of :data:`PAPER_FORMATS`."""
    writers = {"latex": paper_latex, "csv": paper_csv, "markdown": paper_markdown}
    if table_format not in writers:
        msg = f"format must be one of {', '.join(PAPER_FORMATS)}; found {table_format!r}"
        raise ValueError(msg)
    return writers[table_format](tables)
