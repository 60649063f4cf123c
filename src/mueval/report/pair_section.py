"""One (strategy, classifier) section of the report, with or without its figures.

This module owns what a pair's section shows: with ``figures="all"``
(:func:`pair_section`) the study's pictures, the set diagnostics with their
bootstrap intervals and where pooling users misleads; otherwise
(:func:`light_pair_section`) each user's coverage and verdict. It draws from the
pair's rows as arrays (:class:`mueval.runfolder.arrays.PairRows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import numpy as np
import pandas as pd

from mueval.data.order import natural_key
from mueval.guarantees.records import Guarantees
from mueval.report import figures as F
from mueval.report import setstats as S
from mueval.report.figure_set import FigureSet
from mueval.report.html import Section, list_html, note_html, table_html, warning_html
from mueval.report.labels import (
    classifier_label,
    classifier_token,
    strategy_label,
    strategy_token,
)
from mueval.report.page_one import pair_anchor
from mueval.runfolder import RunFolder
from mueval.runfolder.arrays import PairRows

__all__ = ["light_pair_section", "pair_section"]

# Per-user matrices on a handful of rows are noise; such users are left out of the
# pooling check (and the page says how many were).
_MIN_USER_ROWS = 20


def _fmt_ci(value: float, lo: float, hi: float) -> str:
    if not np.isfinite(value):
        return "undefined"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{value:.3f}"
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def _matrix_ci_table(
    m: np.ndarray, lo: np.ndarray, hi: np.ndarray, classes: Sequence[str], row_label: str
) -> str:
    rows = [
        [classes[i]] + [_fmt_ci(m[i, j], lo[i, j], hi[i, j]) for j in range(len(classes))]
        for i in range(len(classes))
    ]
    return table_html([row_label, *classes], rows)


@dataclass
class _Pair:
    """What every part of one (strategy, classifier) section draws from."""

    label: str
    stem: str
    classes: list[str]
    sets: np.ndarray
    y: np.ndarray
    yp: np.ndarray
    proba: np.ndarray
    users: np.ndarray
    groups: np.ndarray | None
    n_boot: int
    seed: int
    #: Matrices with their bootstrap intervals, for the details table.
    intervals: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    #: (low, high) of every statistic of :data:`setstats.SET_STATISTICS`.
    bounds: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def _natural_order(classes: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``order`` (new position -> old index) and ``rank`` (old index -> new position)."""
    order = np.array(sorted(range(len(classes)), key=lambda i: natural_key(classes[i])), int)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return order, rank


def _pair_data(rows: PairRows, s: str, c: str, n_boot: int, seed: int) -> tuple[_Pair, str]:
    label = f"{strategy_label(s)}, {classifier_label(c)}"
    stem = f"{strategy_token(s)}_{classifier_token(c)}"
    # Figures and tables show the classes in natural order (n2 before n10),
    # whatever order run.json keeps them in: reorder columns, renumber labels.
    order, rank = _natural_order(rows.classes)
    classes = [rows.classes[i] for i in order]
    sets, proba = rows.sets[:, order], rows.proba[:, order]
    y, yp = rank[rows.y], rank[rows.yp]
    users = rows.users
    n_users = len(np.unique(users))
    groups = users if n_users >= 2 else None
    intro = note_html(
        f"{len(users)} test rows pooled over {rows.n_iterations} iterations and "
        f"{n_users} users. Intervals: percentile bootstrap, {n_boot} resamples"
        + (
            ", resampling whole users (so they carry the between-user variation)."
            if groups is not None
            else ", resampling rows."
        )
    )
    pair = _Pair(label, stem, classes, sets, y, yp, proba, users, groups, n_boot, seed)
    return pair, intro


def _study_pictures(figs: FigureSet, p: _Pair, top_sets: int, min_count: int) -> list[str]:
    """The study's co-occurrence, confusion and multiset pictures."""
    sets, y, yp, classes, label, stem = p.sets, p.y, p.yp, p.classes, p.label, p.stem
    k = len(classes)
    body: list[str] = []
    # The study's pictures.
    body.append("<h4>The study's pictures</h4>")
    counts = S.cooccurrence_matrix(sets)
    body.append(
        figs.add(
            F.cooccurrence_matrix_figure(
                S.column_normalise(counts),
                classes,
                title=figs.title(f"Co-occurrence matrix\n{label}"),
                values_as_text=figs.vector,
            ),
            f"{stem}_cooccurrence_matrix",
            f"Co-occurrence matrix, {label}: pairs counted within sets, diagonal zero, columns sum "
            "to 1 (blank: the class never shares a set).",
        )
    )
    body.append(
        figs.add(
            F.cooccurrence_graph_figure(
                counts, classes, title=figs.title(f"Co-occurrence graph, {label}")
            ),
            f"{stem}_cooccurrence_graph",
            f"Co-occurrence graph, {label}",
        )
    )
    body.append(
        figs.add(
            F.confusion_figure(
                S.confusion_matrix_rows(y, yp, k),
                classes,
                title=figs.title(f"Confusion matrix\n{label}"),
                values_as_text=figs.vector,
            ),
            f"{stem}_confusion",
            f"Confusion matrix, {label}: rows the true class, columns the predicted class, "
            "each row sums to 1 (the study's column-normalised matrix, transposed)",
        )
    )
    body.append(
        figs.add(
            F.confusion_figure(
                S.confusion_matrix_rows(y, yp, k, zero_diagonal=True),
                classes,
                title=figs.title(f"Zero-diagonal confusion matrix\n{label}"),
                zero_diagonal=True,
                values_as_text=figs.vector,
            ),
            f"{stem}_confusion_zero_diagonal",
            f"Zero-diagonal confusion matrix (ZDCM), {label}: rows the true class, columns the "
            "predicted class, diagonal set to 0 before normalising (where each true class's "
            "errors went)",
        )
    )
    body.append(
        figs.add(
            F.multiset_figure(
                sets,
                classes,
                title=figs.title(f"Most frequent prediction sets, {label}"),
                top=top_sets,
                min_count=min_count,
            ),
            f"{stem}_multiset",
            f"Multiset-enumerating chart, {label}: the "
            + F.multiset_summary(sets, top=top_sets, min_count=min_count),
        )
    )

    return body


def _membership(figs: FigureSet, p: _Pair) -> tuple[list[str], np.ndarray, S.PhiResult]:
    """Inclusion rates, co-membership and phi, with the phi floor explained."""
    sets, classes, label, stem = p.sets, p.classes, p.label, p.stem
    k = len(classes)
    body: list[str] = []
    # The review's diagnostics.
    body.append("<h4>Set diagnostics</h4>")
    body.append(
        note_html(
            "The coverage guarantee covers the true class and nothing about the neighbours: "
            "none of these matrices is certified. Co-occurrence and phi ignore the true label "
            "and the ranking, so they cannot show directional confusion; read phi only beside "
            "the inclusion rates. The soft confusion matrix E[p_b | y = a] (from the classifier's "
            "probabilities) and the coverage confusion matrix P(b in S | y = a) are directional."
        )
    )
    incl = S.inclusion_rate(sets)
    ilo, ihi = p.bounds["inclusion"]
    body.append(
        figs.add(
            F.inclusion_figure(
                incl, ilo, ihi, classes, title=figs.title(f"Inclusion rate per class, {label}")
            ),
            f"{stem}_inclusion",
            f"Share of sets containing each class, {label}",
        )
    )

    com = S.comembership_rate(sets)
    clo, chi = p.bounds["co-membership"]
    top = float(np.nanmax(com - np.diag(np.diag(com)))) if k > 1 else 1.0
    body.append(
        figs.add(
            F.heatmap_figure(
                com,
                classes,
                title=figs.title(f"Co-membership rate E[z_i z_j]\n{label}"),
                xlabel="class j",
                ylabel="class i",
                cbar_label="share of sets holding both (diagonal: inclusion rate)",
                cmap="viridis",
                vmin=0.0,
                vmax=max(top, 1e-9),
                values_as_text=figs.vector,
            ),
            f"{stem}_comembership",
            f"Co-membership rate, {label} (colour scale capped at the "
            "largest off-diagonal rate; the diagonal is the inclusion rate)",
        )
    )

    phi = S.phi_matrix(sets)
    plo, phi_hi = p.bounds["phi"]
    never = (com == 0) & np.isfinite(phi.phi)
    np.fill_diagonal(never, False)
    fig = partial(
        F.heatmap_figure,
        phi.phi,
        classes,
        title=figs.title(f"Phi coefficient of set membership\n{label}"),
        xlabel="class j",
        ylabel="class i",
        cbar_label="phi",
        cmap="RdBu_r",
        vmin=-1.0,
        vmax=1.0,
        nan_label="undefined: class in every set or in none",
        values_as_text=figs.vector,
        marks=never,
        marks_label="never share a set: value is the floor",
    )
    body.append(
        figs.add(
            fig,
            f"{stem}_phi",
            f"Phi coefficient, {label}; x: pairs that never "
            "share a set, whose value is fixed by the inclusion rates alone",
        )
    )
    undefined = [classes[i] for i in np.flatnonzero(phi.undefined)]
    floors = phi.floor[never]
    floor_text = (
        "Floor for a pair that never shares a set: -sqrt(r_i r_j / ((1 - r_i)(1 - r_j))), "
        "r the inclusion rates; such a pair's phi equals its floor whatever the classifier does. "
        f"{int(never.sum() // 2)} of {int(np.isfinite(phi.phi).sum() - (~phi.undefined).sum()) // 2}"
        " defined pairs never share a set"
        + (
            f"; their floors range from {floors.min():.3f} to {floors.max():.3f}."
            if floors.size
            else "."
        )
        + (f" Undefined (always or never in a set): {', '.join(undefined)}." if undefined else "")
    )
    body.append(note_html(floor_text))

    p.intervals["inclusion"] = (incl, ilo, ihi)
    p.intervals["co-membership"] = (com, clo, chi)
    p.intervals["phi"] = (phi.phi, plo, phi_hi)
    return body, com, phi


def _directional(figs: FigureSet, p: _Pair) -> tuple[list[str], np.ndarray]:
    """The soft confusion and coverage confusion matrices."""
    label = p.label
    soft = S.soft_confusion(p.proba, p.y)
    covc = S.coverage_confusion(p.sets, p.y)
    # (key of the bounds, matrix, title, x label, colour bar, colour map, file, caption)
    matrices = (
        (
            "soft",
            soft,
            "Soft confusion E[p_b | y = a]",
            "predicted class b (mean probability)",
            "mean predicted probability of b",
            "Blues",
            "soft_confusion",
            f"Soft confusion matrix, {label}: rows true class a, "
            "columns class b, from the classifier's probabilities",
        ),
        (
            "coverage confusion",
            covc,
            "Coverage confusion P(b in S | y = a)",
            "class b in the set",
            "share of sets containing b",
            "Purples",
            "coverage_confusion",
            f"Coverage confusion matrix, {label}: rows the true class a, columns the class b "
            "in the set; the diagonal is the class-wise coverage",
        ),
    )
    body: list[str] = []
    for key, matrix, title, xlabel, cbar_label, cmap, name, caption in matrices:
        figure = F.heatmap_figure(
            matrix,
            p.classes,
            title=figs.title(f"{title}\n{label}"),
            xlabel=xlabel,
            ylabel="true class a",
            cbar_label=cbar_label,
            cmap=cmap,
            nan_label="no row of this true class",
            values_as_text=figs.vector,
        )
        body.append(figs.add(figure, f"{p.stem}_{name}", caption))
        p.intervals[key] = (matrix, *p.bounds[key])
    return body, covc


def _pooled_against_users(
    p: _Pair, com: np.ndarray, phi: S.PhiResult, covc: np.ndarray
) -> tuple[list[str], list[str]]:
    """Where pooling users reverses or inflates what every user shows."""
    sets, y, users, classes, label = p.sets, p.y, p.users, p.classes, p.label
    body: list[str] = []
    warnings: list[str] = []
    # Pooled against per user.
    per_user: dict[object, dict[str, np.ndarray]] = {}
    skipped = 0
    for u in sorted(pd.unique(users), key=natural_key):  # "2" before "10"
        mask = users == u
        if mask.sum() < _MIN_USER_ROWS:
            skipped += 1
            continue
        per_user[u] = {
            "phi": S.phi_matrix(sets[mask]).phi,
            "co-membership": S.comembership_rate(sets[mask]),
            "coverage confusion": S.coverage_confusion(sets[mask], y[mask]),
        }
    body.append("<h4>Pooled against per user</h4>")
    pooled = {"phi": phi.phi, "co-membership": com, "coverage confusion": covc}
    found: list[str] = []
    symmetric = {"phi", "co-membership"}
    if len(per_user) >= 2:
        flagged = []
        for name, value in pooled.items():
            for w in S.pooled_vs_per_user(value, {u: d[name] for u, d in per_user.items()}):
                if name in symmetric and w.index[0] > w.index[1]:
                    continue  # the same pair as (j, i)
                gap = max(w.pooled - w.user_max, w.user_min - w.pooled, 0.0)
                flagged.append(
                    (w.kind != "reversal", -gap, f"{name} {w.kind} at {w.describe(classes)}")
                )
        # Reversals first, then the largest departures from the users' range.
        found = [text for *_, text in sorted(flagged)]
    if found:
        head = (
            f"{label}: pooling users reverses or inflates {len(found)} matrix entries "
            "(pairs) relative to every user -- e.g. users who differ in set size make "
            "every pair look correlated; read those entries per user, not pooled."
        )
        warnings.append(head)
        body.append(warning_html(head))
        body.append(list_html(found[:40]))
        if len(found) > 40:
            body.append(f"<p>... and {len(found) - 40} more.</p>")
    else:
        body.append(
            note_html(
                f"No entry where the pooled value reverses or exceeds every user's "
                f"({len(per_user)} users with at least {_MIN_USER_ROWS} rows compared)."
            )
        )
    if skipped:
        body.append(
            note_html(
                f"{skipped} users with fewer than {_MIN_USER_ROWS} rows were "
                "left out of this check."
            )
        )

    return body, warnings


def _interval_details(p: _Pair) -> list[str]:
    """Every matrix entry with its bootstrap interval, folded away."""
    classes = p.classes
    k = len(classes)
    incl, ilo, ihi = p.intervals["inclusion"]
    com, clo, chi = p.intervals["co-membership"]
    phi_values, plo, phi_hi = p.intervals["phi"]
    soft, slo, shi = p.intervals["soft"]
    covc, vlo, vhi = p.intervals["coverage confusion"]
    body: list[str] = []
    body.append("<details><summary>Entries with bootstrap intervals</summary>")
    body.append(
        table_html(
            ["class", "inclusion rate [95% interval]"],
            [[classes[i], _fmt_ci(incl[i], ilo[i], ihi[i])] for i in range(k)],
        )
    )
    body.append("<p>Co-membership rate E[z_i z_j]</p>")
    body.append(_matrix_ci_table(com, clo, chi, classes, "i \\ j"))
    body.append("<p>Phi coefficient</p>")
    body.append(_matrix_ci_table(phi_values, plo, phi_hi, classes, "i \\ j"))
    body.append("<p>Soft confusion E[p_b | y = a]</p>")
    body.append(_matrix_ci_table(soft, slo, shi, classes, "a \\ b"))
    body.append("<p>Coverage confusion P(b in S | y = a)</p>")
    body.append(_matrix_ci_table(covc, vlo, vhi, classes, "a \\ b"))
    body.append("</details>")
    return body


def pair_section(
    rows: PairRows,
    figs: FigureSet,
    s: str,
    c: str,
    *,
    n_boot: int,
    seed: int,
    top_sets: int,
    min_count: int,
) -> tuple[Section, list[str]]:
    pair, intro = _pair_data(rows, s, c, n_boot, seed)
    # One pass of resamples for every interval of the section (see setstats).
    pair.bounds = S.bootstrap_set_statistics(
        pair.sets, pair.y, pair.proba, n_boot=n_boot, seed=seed, groups=pair.groups
    )
    body = [intro, *_study_pictures(figs, pair, top_sets, min_count)]
    membership, com, phi = _membership(figs, pair)
    directional, covc = _directional(figs, pair)
    pooled, warnings = _pooled_against_users(pair, com, phi, covc)
    body += [*membership, *directional, *pooled, *_interval_details(pair)]
    return Section(pair.label, pair_anchor(s, c), body), warnings


def _verdict_text(below: object, p_adjusted: float) -> str:
    """A user's verdict for a table cell: below target with its adjusted p-value,
    nothing, or "no verdict"."""
    if below is None or below is pd.NA or (isinstance(below, float) and np.isnan(below)):
        return "no verdict"
    if bool(below):
        return f"below target (adjusted p {p_adjusted:.2g})"
    return ""


def light_pair_section(run: RunFolder, g: Guarantees, s: str, c: str) -> tuple[Section, list[str]]:
    """A (strategy, classifier) section without figures: its users and their intervals."""
    label = f"{strategy_label(s)}, {classifier_label(c)}"
    sub = g.user_coverage[(g.user_coverage.strategy == s) & (g.user_coverage.classifier == c)]
    sub = sub.sort_values("user", key=lambda col: col.map(natural_key))
    rows = [
        [
            str(r.user),
            int(r.n),
            float(r.coverage),
            f"[{r.low:.3f}, {r.high:.3f}]",
            _verdict_text(r.below, getattr(r, "p_adjusted", np.nan)),
        ]
        for r in cast("Iterable[Any]", sub.itertuples(index=False))
    ]
    body = [
        note_html(
            f"{label}: each user's coverage over all test rows and iterations. The study's "
            "pictures and the set diagnostics of this section are drawn with --figures all."
        ),
        table_html(
            ["user", "test rows", "coverage", "95 % interval (observed rate)", "verdict"],
            rows,
            caption=f"Coverage per user, {label}",
        ),
    ]
    return Section(label, pair_anchor(s, c), body), []
