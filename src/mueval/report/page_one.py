"""Page one of the report: the strategy x classifier grid, the warnings, and the
figures a reader needs to see before anything else.

Everything here is driven by the run's per-user guarantees
(:mod:`mueval.guarantees.compute`): coverage with its Clopper-Pearson interval
(a description of the observed rate), the share of users below target by the
exact per-user test at the run's level after its correction
(:mod:`mueval.guarantees.user_level`), and the warnings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, cast

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mueval.data.order import natural_key
from mueval.guarantees.adjustment import verdict_label
from mueval.guarantees.records import Guarantees
from mueval.guarantees.run_warnings import SEVERITIES, by_severity
from mueval.guarantees.verdict_settings import verdict_settings
from mueval.metrics.set_sizes import set_statistics
from mueval.report.figure_set import FigureSet
from mueval.report.figures import fit_x_labels, outside_legend
from mueval.report.html import esc, note_html
from mueval.report.labels import classifier_label, strategy_label, strategy_token
from mueval.runfolder import RunFolder

__all__ = [
    "DEGENERATE_KINDS",
    "FIGURE_LEVELS",
    "grid_html",
    "overview_figure",
    "page_one_body",
    "pair_anchor",
    "shown_warnings",
    "strategy_users_figure",
    "warnings_html",
]

#: What ``mueval report --figures`` accepts: no figure, page one's figures plus
#: one coverage-per-user figure per strategy, or every section's figures.
FIGURE_LEVELS = ("none", "summary", "all")


def pair_anchor(strategy: str, classifier: str) -> str:
    """The id of a (strategy, classifier) section, the grid's link target."""
    return f"pair-{esc(strategy)}-{esc(classifier)}"


#: The warnings that make a cell's coverage say little about the classifier: shaded
#: like a failing cell, and named in it.
DEGENERATE_KINDS = {"degenerate-sets": "degenerate sets", "excess-empty-sets": "excess empty sets"}


def _cell(row: pd.Series, size: float, target: float, judged: bool, flags: Sequence[str]) -> str:
    below = bool(row["pooled_high"] < target)
    cls = ' class="bad"' if below or row["n_below"] > 0 or flags else ""
    users = (
        f"{int(row['n_below'])} of {int(row['n_users'])} users below "
        f"({100 * row['share_below']:.0f} %)"
        if judged
        else "no per-user verdict"
    )
    flagged = "".join(f"<br><i>{esc(f)}</i>" for f in flags)
    return (
        f"<td{cls}><b>{row['pooled_coverage']:.3f}</b> "
        f"[{row['pooled_low']:.3f}, {row['pooled_high']:.3f}]"
        f"<br>size {size:.2f}<br>{users}{flagged}</td>"
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
    warnings: Sequence[Mapping[str, Any]] = (),
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
    warnings : sequence of dict
        The run's warnings (``strategy, classifier, kind, ...``): a cell with
        degenerate or too many empty sets (:data:`DEGENERATE_KINDS`) is marked and
        says so.

    Returns
    -------
    str
        A safe HTML table; a cell is marked when the pooled interval lies
        entirely below the target, at least one user is below target, or its
        sets are degenerate (its coverage then says little about the classifier).
    """
    flags: dict[tuple[str, str], list[str]] = {}
    for w in warnings:
        if w["kind"] in DEGENERATE_KINDS:
            flags.setdefault((w["strategy"], w["classifier"]), []).append(
                DEGENERATE_KINDS[w["kind"]]
            )
    by_pair = {
        (r.strategy, r.classifier): r
        for r in cast("Iterable[Any]", summary.itertuples(index=False))
    }
    sizes = {
        (r.strategy, r.classifier): float(r.mean_size)
        for r in cast("Iterable[Any]", set_sizes.itertuples(index=False))
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
                flags.get((s, c), []),
            )
            if linked:
                # The link wraps the whole cell's text: a reader clicks the number.
                start = cell.index(">") + 1
                cell = f'{cell[:start]}<a href="#{pair_anchor(s, c)}">{cell[start:-5]}</a></td>'
            cells.append(cell)
        rows.append(f"<tr><th>{esc(name(s, '')[0])}</th>{''.join(cells)}</tr>")
    caption = (
        f"Pooled coverage [95 % Clopper-Pearson interval], mean set size, and users {verdict} "
        f"(exact per-user test of the covered count against the target {target:.2f}); "
        "shaded: pooled coverage below target, a user below target, or degenerate sets"
    )
    return (
        f'<table class="grid"><caption>{esc(caption)}</caption><thead><tr>'
        f"<th>strategy \\ classifier</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


#: The worst figure of a warning, for its cell: (pattern in the message, format).
_FIGURES = {
    "pooled-below-target": (r"pooled coverage ([0-9.]+)", "coverage {0}"),
    "degenerate-sets": (r"mean size ([0-9.]+) of ([0-9]+) classes", "size {0} of {1}"),
}
_COUNT = (r"([0-9]+) of ([0-9]+)", "{0} of {1}")


def _figure(warning: Mapping[str, Any]) -> str:
    """The warning's headline figure (``3 of 8``, ``coverage 0.912``), or its severity."""
    pattern, fmt = _FIGURES.get(warning["kind"], _COUNT)
    found = re.search(pattern, str(warning["message"]))
    return fmt.format(*found.groups()) if found else str(warning["severity"])


def warnings_html(
    warnings: Sequence[Mapping[str, Any]],
    *,
    name: Callable[[str, str], tuple[str, str]] = lambda s, c: (s, c),
) -> str:
    """The warnings as a table: one row per (strategy, classifier), one column per check.

    Each cell holds the severity and the worst figure of its check; the full
    sentence opens on demand (``<details>``, and the cell's tooltip). Rows come in
    the order of their most severe warning (:func:`by_severity`), columns in the
    order of the checks' importance; a note when there is no warning.
    """
    if not warnings:
        return (
            '<p class="note">No warning: no exact test finds a pooled coverage or a user '
            "below target, and no set is degenerate.</p>"
        )
    # The order and the severity words of the terminal (mueval evaluate, report).
    ordered = by_severity(warnings)
    kinds = list(dict.fromkeys(w["kind"] for w in ordered))
    cells: dict[tuple[str, str], dict[str, list[Mapping[str, Any]]]] = {}
    for w in ordered:
        row = cells.setdefault((w["strategy"], w["classifier"]), {})
        row.setdefault(w["kind"], []).append(w)
    head = "".join(f"<th>{esc(k)}</th>" for k in kinds)
    rows = []
    for (s, c), found in cells.items():
        tds = []
        for k in kinds:
            if k not in found:
                tds.append("<td></td>")
                continue
            worst = found[k][0]  # by_severity put the most severe first
            sentence = " ".join(str(w["message"]) for w in found[k])
            tds.append(
                f'<td class="{esc(worst["severity"])}" data-kind="{esc(k)}" '
                f'title="{esc(sentence)}"><details><summary><b>{esc(worst["severity"])}</b> '
                f"{esc(_figure(worst))}</summary>{esc(sentence)}</details></td>"
            )
        sname, cname = name(s, c)
        rows.append(f"<tr><th>{esc(sname)}</th><th>{esc(cname)}</th>{''.join(tds)}</tr>")
    counts = {sev: sum(w["severity"] == sev for w in ordered) for sev in SEVERITIES}
    caption = (
        f"{len(ordered)} warnings ("
        + ", ".join(f"{n} {sev}" for sev, n in counts.items() if n)
        + "): one row per strategy and classifier, one column per check; each cell gives "
        "the severity and the worst figure, click it for the full sentence"
    )
    return (
        f'<table class="warnings"><caption>{esc(caption)}</caption><thead><tr>'
        f"<th>strategy</th><th>classifier</th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def overview_figure(
    summary: pd.DataFrame,
    strategies: Sequence[str],
    classifiers: Sequence[str],
    *,
    target: float,
    slabel: Callable[[str], str],
    clabel: Callable[[str], str],
    title: str | None = None,
) -> Figure:
    """Pooled coverage with its interval, one marker per classifier, per strategy.

    The legend stands right of the axes (it never covers a point); no title
    unless ``title`` is given (the page's caption says what it shows)."""
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
    fit_x_labels(ax)
    ax.set_xlabel("strategy")
    ax.set_ylabel("pooled coverage")
    outside_legend(ax, fontsize="small", title="classifier")
    if title:
        ax.set_title(title)
    return fig


def strategy_users_figure(
    user_coverage: pd.DataFrame,
    classifiers: Sequence[str],
    *,
    target: float,
    title: str | None = None,
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
    if title:
        ax.set_title(title)
    outside_legend(ax, fontsize="small", title="classifier")
    return fig


def shown_warnings(
    g: Guarantees, strategies: list[str], classifiers: list[str]
) -> list[dict[str, Any]]:
    """The run's warnings about the strategies and classifiers the report shows."""
    return [w for w in g.warnings if w["strategy"] in strategies and w["classifier"] in classifiers]


#: The one definition of "below target" on the page (and in `mueval report`'s output).
_TERMS = (
    "Terms: 'below target' on this page means one thing: the user is {verdict} by the "
    "exact per-user test (the 'below' column of user_coverage.csv), as counted in the grid, "
    "the warnings and each section's verdicts. 'Mean < target' (the per-user section) counts "
    "users whose mean coverage over iterations is under the target: a point estimate, "
    "shown beside the verdict, never called 'below target'. 'Interval below' (coverage per "
    "class or cohort) marks a group's whole Clopper-Pearson interval under the target."
)


def page_one_body(
    run: RunFolder,
    figs: FigureSet,
    g: Guarantees,
    strategies: list[str],
    classifiers: list[str],
    target: float,
) -> list[str]:
    """The grid, the warnings, then page one's figures (if asked for)."""
    keep = g.coverage_summary.strategy.isin(strategies) & g.coverage_summary.classifier.isin(
        classifiers
    )
    summary = g.coverage_summary[keep]
    sizes = set_statistics(run.predictions, n_classes=len(run.classes))
    warnings = shown_warnings(g, strategies, classifiers)
    settings = verdict_settings(run.config)
    verdict = verdict_label(settings["level"], settings["correction"], settings["family"])
    judged = g.user_coverage[g.user_coverage["below"].notna()]
    unjudged = {
        (s, c)
        for s, c in zip(g.user_coverage.strategy, g.user_coverage.classifier, strict=True)
        if not ((judged.strategy == s) & (judged.classifier == c)).any()
    }
    body = [
        '<h2 id="page-one">Summary</h2>',
        grid_html(
            summary,
            sizes,
            strategies,
            classifiers,
            target=target,
            name=lambda s, c: (strategy_label(s), classifier_label(c)),
            verdict=verdict,
            unjudged=unjudged,
            warnings=warnings,
        ),
        note_html(
            f"A user is {verdict} when the exact test of its covered count (Beta-Binomial "
            "null: its calibration and test rows exchangeable; under UDM, UCM and UAM the "
            "exact law of the class-stratified split; iterations combined, then "
            "corrected across the users of the cell) rejects; no verdict for uxc, for MM under "
            "a cohort condition and for MAPIE's own aps, raps and top_k sets. Intervals are "
            "exact (Clopper-Pearson) on the test rows "
            "pooled over iterations, a description of the observed rate, not that test: "
            "iterations reuse rows, so they are on the narrow side; see the page "
            "per-user-guarantees of mueval's documentation (installed with mueval as "
            "mueval/_data/docs/per-user-guarantees.md). Click a cell for its section."
        ),
        note_html(_TERMS.format(verdict=verdict)),
        "<h2>Warnings</h2>",
        warnings_html(warnings, name=lambda s, c: (strategy_label(s), classifier_label(c))),
    ]
    body.append(
        figs.add(
            partial(
                overview_figure,
                summary,
                strategies,
                classifiers,
                target=target,
                slabel=strategy_label,
                clabel=classifier_label,
                title=figs.title("Pooled coverage with 95 % intervals"),
            ),
            "overview_coverage",
            "Pooled coverage with its 95 % interval, per strategy and classifier",
        )
    )
    users = g.user_coverage[g.user_coverage.classifier.isin(classifiers)]
    for s in strategies:
        sub = users[users.strategy == s]
        if sub.empty:
            continue
        fig = partial(
            strategy_users_figure,
            sub,
            classifiers,
            target=target,
            title=figs.title(f"Coverage per user, {strategy_label(s)}"),
            label=classifier_label,
        )
        body.append(
            figs.add(
                fig,
                f"user_coverage_{strategy_token(s)}",
                f"Each user's coverage with its 95 % interval, {strategy_label(s)}",
            )
        )
    return body
