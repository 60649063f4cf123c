"""Page one of the report: the strategy x classifier grid, the warnings, and the
figures a reader needs to see before anything else.

Everything here is driven by the run's per-user guarantees
(:mod:`mueval.guarantees.compute`): coverage with its Clopper-Pearson interval
(a description of the observed rate), the share of users below target by the
exact per-user test at the run's level after its correction
(:mod:`mueval.guarantees.user_level`), and the warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mueval.data.table import natural_key
from mueval.guarantees.run_warnings import by_severity
from mueval.report.html import esc

__all__ = [
    "FIGURE_LEVELS",
    "grid_html",
    "overview_figure",
    "pair_anchor",
    "strategy_users_figure",
    "warnings_html",
]

#: What ``mueval report --figures`` accepts: no figure, page one's figures plus
#: one coverage-per-user figure per strategy, or every section's figures.
FIGURE_LEVELS = ("none", "summary", "all")


def pair_anchor(strategy: str, classifier: str) -> str:
    """The id of a (strategy, classifier) section, the grid's link target."""
    return f"pair-{esc(strategy)}-{esc(classifier)}"


def _cell(row: pd.Series, size: float, target: float, judged: bool) -> str:
    below = bool(row["pooled_high"] < target)
    cls = ' class="bad"' if below or row["n_below"] > 0 else ""
    users = (
        f"{int(row['n_below'])} of {int(row['n_users'])} users below "
        f"({100 * row['share_below']:.0f} %)"
        if judged
        else "no per-user verdict"
    )
    return (
        f"<td{cls}><b>{row['pooled_coverage']:.3f}</b> "
        f"[{row['pooled_low']:.3f}, {row['pooled_high']:.3f}]"
        f"<br>size {size:.2f}<br>{users}</td>"
    )


def grid_html(
    summary: pd.DataFrame,
    set_sizes: pd.DataFrame,
    strategies: Sequence[str],
    classifiers: Sequence[str],
    *,
    target: float,
    name: Callable[[str, str], tuple[str, str]],
    linked: bool = True,
    verdict: str = "below target at level 0.05 after Holm",
    unjudged: Collection[tuple[str, str]] = (),
) -> str:
    """The strategy x classifier grid of pooled coverage, set size and users below.

    Parameters
    ----------
    summary : DataFrame
        :func:`~mueval.guarantees.intervals.coverage_summary` output.
    set_sizes : DataFrame
        ``strategy, classifier, mean_size`` (mean set size over all test rows).
    strategies, classifiers : sequence of str
        Codes, in the order of rows and columns.
    target : float
        Target coverage ``1 - alpha``.
    name : callable
        ``(strategy, classifier) -> (strategy name, classifier name)`` for display.
    linked : bool, default True
        Link each cell to its (strategy, classifier) section.
    verdict : str
        What ``n_below`` counts (:func:`~mueval.guarantees.user_level.verdict_label`),
        for the caption.
    unjudged : collection of (strategy, classifier)
        Pairs whose users have no verdict (``uxc``, class-conditional runs):
        their cells say so instead of counting users.

    Returns
    -------
    str
        A safe HTML table; a cell is marked when the pooled interval lies
        entirely below the target or at least one user is below target.
    """
    by_pair = {(r.strategy, r.classifier): r for r in summary.itertuples(index=False)}
    sizes = {
        (r.strategy, r.classifier): float(r.mean_size) for r in set_sizes.itertuples(index=False)
    }
    head = "".join(f"<th>{esc(name('', c)[1])}</th>" for c in classifiers)
    rows = []
    for s in strategies:
        cells = []
        for c in classifiers:
            if (s, c) not in by_pair:
                cells.append("<td></td>")
                continue
            cell = _cell(
                pd.Series(by_pair[s, c]._asdict()),
                sizes.get((s, c), np.nan),
                target,
                (s, c) not in unjudged,
            )
            if linked:
                # The link wraps the whole cell's text: a reader clicks the number.
                start = cell.index(">") + 1
                cell = f'{cell[:start]}<a href="#{pair_anchor(s, c)}">{cell[start:-5]}</a></td>'
            cells.append(cell)
        rows.append(f"<tr><th>{esc(name(s, '')[0])}</th>{''.join(cells)}</tr>")
    caption = (
        f"Pooled coverage [95 % Clopper-Pearson interval], mean set size, and users {verdict} "
        f"(exact per-user test of the covered count against the target {target:.2f})"
    )
    return (
        f'<table class="grid"><caption>{esc(caption)}</caption><thead><tr>'
        f"<th>strategy \\ classifier</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def warnings_html(warnings: Sequence[dict[str, Any]]) -> str:
    """The warnings, errors first, each with its severity; a note when there are none."""
    if not warnings:
        return (
            '<p class="note">No warning: no pooled coverage is below the target beyond '
            "sampling error, no user is below target by the exact per-user test, and no set "
            "is degenerate.</p>"
        )
    # The order and the severity words of the terminal (mueval evaluate, report).
    ordered = by_severity(warnings)
    items = "".join(
        f'<li class="{esc(w["severity"])}"><b>{esc(w["severity"])}</b> '
        f"({esc(w['kind'])}): {esc(w['message'])}</li>"
        for w in ordered
    )
    return f'<ul class="warnings">{items}</ul>'


def overview_figure(
    summary: pd.DataFrame,
    strategies: Sequence[str],
    classifiers: Sequence[str],
    *,
    target: float,
    slabel: Callable[[str], str],
    clabel: Callable[[str], str],
) -> Figure:
    """Pooled coverage with its interval, one marker per classifier, per strategy."""
    fig, ax = plt.subplots(figsize=(7.0, 3.2), layout="constrained")
    width = 0.8 / max(len(classifiers), 1)
    for j, c in enumerate(classifiers):
        sub = summary[summary.classifier == c].set_index("strategy").reindex(list(strategies))
        x = np.arange(len(strategies)) + (j - (len(classifiers) - 1) / 2) * width
        cov = sub["pooled_coverage"].to_numpy(float)
        err = np.vstack([cov - sub["pooled_low"], sub["pooled_high"] - cov])
        ax.errorbar(x, cov, yerr=err, fmt="o", capsize=3, label=clabel(c))
    ax.axhline(target, color="crimson", linestyle="--", linewidth=1, label="target")
    ax.set_xticks(np.arange(len(strategies)), [slabel(s) for s in strategies])
    ax.set_ylabel("pooled coverage")
    ax.legend(fontsize="small", ncol=min(len(classifiers) + 1, 5), loc="lower right")
    ax.set_title("Pooled coverage with 95 % intervals")
    return fig


def strategy_users_figure(
    user_coverage: pd.DataFrame,
    classifiers: Sequence[str],
    *,
    target: float,
    title: str,
    label: Callable[[str], str],
) -> Figure:
    """Each user's coverage with its interval, one series per classifier.

    Users run along the x axis in natural order (``u2`` before ``u10``); a user
    below target (``below``, the exact per-user test's verdict) is circled in red.
    """
    users = sorted(pd.unique(user_coverage["user"]), key=natural_key)
    pos = {u: i for i, u in enumerate(users)}
    fig, ax = plt.subplots(figsize=(min(14.0, 4.0 + 0.18 * len(users)), 3.4), layout="constrained")
    width = 0.7 / max(len(classifiers), 1)
    for j, c in enumerate(classifiers):
        sub = user_coverage[user_coverage.classifier == c]
        if sub.empty:
            continue
        x = sub["user"].map(pos).to_numpy(float) + (j - (len(classifiers) - 1) / 2) * width
        cov = sub["coverage"].to_numpy(float)
        err = np.vstack([cov - sub["low"].to_numpy(float), sub["high"].to_numpy(float) - cov])
        ax.errorbar(x, cov, yerr=err, fmt="o", markersize=3, capsize=0, label=label(c))
        below = sub["below"].astype("boolean").fillna(False).to_numpy(dtype=bool)
        ax.plot(x[below], cov[below], "o", markersize=7, mfc="none", color="crimson")
    ax.axhline(target, color="crimson", linestyle="--", linewidth=1)
    step = max(1, len(users) // 40)  # at most ~40 tick labels, or they overlap
    ax.set_xticks(range(0, len(users), step), [str(u) for u in users[::step]], rotation=90)
    ax.set_xlabel("user (circled: below target by the exact per-user test)")
    ax.set_ylabel("coverage")
    ax.set_title(title)
    ax.legend(fontsize="small", ncol=min(len(classifiers), 4), loc="lower left")
    return fig
