"""The report's charts: prediction sets, coverage per iteration, set size, users.

This module owns the figures that are not class-by-class matrices: the
multiset-enumerating chart of the most frequent sets, the box plots of
coverage per iteration, the set-size lollipop chart, each user's value per
strategy, and the inclusion rate of each class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mueval.data.order import natural_key
from mueval.report.figures.axes import COLOURS, fit_x_labels, outside_legend, plain_text, set_title

__all__ = [
    "coverage_boxplot_figure",
    "inclusion_figure",
    "multiset_figure",
    "multiset_summary",
    "per_user_figure",
    "setsize_lollipop_figure",
]


def _set_frequencies(sets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``sets`` (n, K) and their counts, most frequent first;
    ties in the order the sets first occur (as ``Counter.most_common`` orders them)."""
    if sets.shape[0] == 0:
        return np.zeros((0, sets.shape[1]), dtype=bool), np.zeros(0, dtype=int)
    distinct, first, counts = np.unique(sets, axis=0, return_index=True, return_counts=True)
    order = np.lexsort((first, -counts))
    return distinct[order], counts[order]


def multiset_summary(sets: np.ndarray, *, top: int = 20, min_count: int = 1) -> str:
    """What :func:`multiset_figure` shows of the sets, for its caption: how many
    of the distinct sets and how many rows."""
    z = np.asarray(sets, dtype=bool)
    _, counts = _set_frequencies(z)
    shown = counts[counts >= min_count][:top]
    return (
        f"{len(shown)} most frequent of {counts.size} distinct sets "
        f"(count >= {min_count}), covering {int(shown.sum())} of {z.shape[0]} rows"
    )


@plain_text
def multiset_figure(
    sets: np.ndarray,
    classes: Sequence[str],
    *,
    title: str | None = None,
    top: int = 20,
    min_count: int = 1,
) -> Figure:
    """UpSet-style multiset-enumerating chart of the most frequent prediction sets.

    Parameters
    ----------
    sets : ndarray of bool, shape (n, K)
    top : int
        At most this many sets are shown (most frequent first).
    min_count : int
        Sets seen fewer times are filtered out; the figure says how many rows the
        shown sets cover.
    """
    z = np.asarray(sets, dtype=bool)
    n = z.shape[0]
    members, counts = _set_frequencies(z)
    keep = np.flatnonzero(counts >= min_count)[:top]
    members, counts = members[keep], counts[keep]
    k = len(classes)
    width = max(6.0, 0.38 * len(counts) + 3.0)
    height = 3.2 + 0.26 * k
    fig, (ax_bar, ax_dot) = plt.subplots(
        2,
        1,
        figsize=(width, height),
        sharex=True,
        layout="constrained",
        gridspec_kw={"height_ratios": [1.2, max(1.0, 0.1 * k)]},
    )
    x = np.arange(len(counts))
    shares = counts / n if n else np.zeros(0)
    bars = ax_bar.bar(x, shares, color="#4c72b0")
    ax_bar.bar_label(bars, labels=[str(f) for f in counts], fontsize=7)
    ax_bar.set_ylabel("share of sets")
    if title:
        ax_bar.set_title(f"{title}\n{multiset_summary(sets, top=top, min_count=min_count)}")
    ax_dot.set_yticks(range(k), labels=classes)
    ax_dot.set_ylim(k - 0.5, -0.5)
    # One artist per kind (grey grid, members, spans), not three per column: the
    # drawing time grows with the artists, not with the points.
    grid_x, grid_y = np.meshgrid(x, np.arange(k), indexing="ij")
    ax_dot.scatter(grid_x.ravel(), grid_y.ravel(), s=18, color="#dddddd", zorder=1)
    on_col, on_row = np.nonzero(members)
    ax_dot.scatter(on_col, on_row, s=30, color="black", zorder=3)
    has = members.any(axis=1)
    rows = np.arange(k)
    top_row = np.array([rows[m].min() for m in members[has]], dtype=float)
    bottom_row = np.array([rows[m].max() for m in members[has]], dtype=float)
    ax_dot.vlines(x[has], top_row, bottom_row, color="black", linewidth=1.5, zorder=2)
    for xi in x[~has]:
        ax_dot.text(xi, -0.45, "empty", rotation=90, ha="center", va="top", fontsize=7)
    ax_dot.set_xticks(x, labels=[str(int(s)) for s in members.sum(axis=1)])
    ax_dot.set_xlabel("prediction set (column; label = set size)")
    ax_dot.set_ylabel("class")
    return fig


@plain_text
def coverage_boxplot_figure(
    values: Mapping[str, np.ndarray],
    *,
    target: float,
    title: str | None = None,
    comparisons: Sequence[tuple[str, str, str]] = (),
    ylabel: str = "coverage per iteration",
) -> Figure:
    """Box plots of per-iteration coverage per strategy, target line, significance marks.

    Parameters
    ----------
    values : mapping strategy label -> array of per-iteration values
    target : float
        1 - alpha, drawn as a dashed line.
    comparisons : sequence of (label_a, label_b, stars)
        Brackets drawn above the boxes, stacked.
    """
    labels = list(values)
    data = [np.asarray(values[s], dtype=float) for s in labels]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(labels) + 2.0), 5.0), layout="constrained")
    ax.boxplot(data, tick_labels=labels, widths=0.55)
    for i, d in enumerate(data, start=1):
        jitter = np.linspace(-0.12, 0.12, d.size) if d.size > 1 else np.zeros(d.size)
        ax.scatter(i + jitter, d, s=10, color=COLOURS[(i - 1) % 10], alpha=0.7, zorder=3)
    ax.axhline(
        target,
        color="crimson",
        linestyle="--",
        linewidth=1.2,
        label=f"target 1 - alpha = {target:.2f}",
    )
    finite = np.concatenate([d[np.isfinite(d)] for d in data] + [np.array([target])])
    lo, hi = float(finite.min()), float(finite.max())
    span = max(hi - lo, 0.02)
    step = 0.08 * span
    level = hi + step
    pos = {s: i + 1 for i, s in enumerate(labels)}
    for sa, sb, stars in comparisons:
        if sa not in pos or sb not in pos:
            continue
        xa, xb = pos[sa], pos[sb]
        ax.plot(
            [xa, xa, xb, xb],
            [level - step / 3, level, level, level - step / 3],
            color="black",
            linewidth=0.8,
        )
        # The label sits on its bracket, on a white patch, not above it: above,
        # it ran into the legs of the bracket stacked next (one step higher).
        ax.text(
            (xa + xb) / 2,
            level,
            stars,
            ha="center",
            va="center",
            fontsize=9,
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
        )
        level += step
    ax.set_ylim(lo - step, level + step)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("strategy")
    set_title(ax, title)
    outside_legend(ax, fontsize=8)
    fit_x_labels(ax)
    return fig


@plain_text
def setsize_lollipop_figure(summary: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Lollipop chart of mean set size (+- SD) per classifier, one colour per strategy.

    Parameters
    ----------
    summary : DataFrame
        Columns classifier_label, strategy_label, mean, sd.
    """
    clfs = list(dict.fromkeys(summary["classifier_label"]))
    strats = list(dict.fromkeys(summary["strategy_label"]))
    fig, ax = plt.subplots(
        figsize=(7.5, 1.0 + 0.55 * len(clfs) * max(len(strats), 1) ** 0.5 + 1.5),
        layout="constrained",
    )
    band = 0.8 / max(len(strats), 1)
    for si, strat in enumerate(strats):
        sub = summary[summary["strategy_label"] == strat]
        for _, row in sub.iterrows():
            y = clfs.index(row["classifier_label"]) - 0.4 + band * (si + 0.5)
            ax.hlines(y, 0, row["mean"], color=COLOURS[si % 10], linewidth=1.5)
            ax.errorbar(
                row["mean"],
                y,
                xerr=row["sd"] if np.isfinite(row["sd"]) else None,
                fmt="o",
                color=COLOURS[si % 10],
                capsize=3,
                markersize=6,
                label=strat if row["classifier_label"] == sub["classifier_label"].iloc[0] else None,
            )
    ax.set_yticks(range(len(clfs)), labels=clfs)
    ax.invert_yaxis()
    ax.set_xlabel("mean prediction set size (classes), +- SD over iterations")
    ax.set_ylabel("classifier")
    ax.set_xlim(left=0)
    set_title(ax, title)
    outside_legend(ax, title="strategy", fontsize=8)
    return fig


@plain_text
def per_user_figure(
    per_user: pd.DataFrame,
    *,
    title: str | None = None,
    ylabel: str,
    target: float | None = None,
) -> Figure:
    """One point per user and strategy (mean over iterations, +- SD).

    Parameters
    ----------
    per_user : DataFrame
        Columns strategy_label, user, value, sd.
    target : float, optional
        Coverage target; users whose mean falls below it are drawn hollow red-edged.
    """
    users = sorted(per_user["user"].unique(), key=natural_key)  # "2" before "10"
    strats = list(dict.fromkeys(per_user["strategy_label"]))
    fig, ax = plt.subplots(
        figsize=(max(6.5, 0.45 * len(users) * max(1, len(strats)) ** 0.5 + 3), 4.8),
        layout="constrained",
    )
    width = 0.7 / max(len(strats), 1)
    for si, strat in enumerate(strats):
        sub = per_user[per_user["strategy_label"] == strat].set_index("user").reindex(users)
        x = np.arange(len(users)) - 0.35 + width * (si + 0.5)
        colour = COLOURS[si % 10]
        sd = sub["sd"].fillna(0).to_numpy()
        ax.errorbar(
            x, sub["value"], yerr=sd, fmt="o", color=colour, capsize=2, markersize=5, label=strat
        )
        if target is not None:
            below = sub["value"].to_numpy() < target
            ax.scatter(
                x[below],
                sub["value"].to_numpy()[below],
                s=110,
                facecolor="none",
                edgecolor="crimson",
                linewidth=1.5,
                zorder=4,
            )
    if target is not None:
        ax.axhline(
            target,
            color="crimson",
            linestyle="--",
            linewidth=1.2,
            label=f"target 1 - alpha = {target:.2f} (circled: mean < target)",
        )
    ax.set_xticks(range(len(users)), labels=[str(u) for u in users])
    fit_x_labels(ax)
    ax.set_xlabel("user")
    ax.set_ylabel(ylabel)
    set_title(ax, title)
    outside_legend(ax, fontsize=8)
    return fig


@plain_text
def inclusion_figure(
    rates: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    classes: Sequence[str],
    *,
    title: str | None = None,
) -> Figure:
    """Inclusion rate of each class with bootstrap intervals, shape (K,) each."""
    k = len(classes)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * k + 2.5), 4.2), layout="constrained")
    r = np.asarray(rates, dtype=float)
    err = np.vstack([np.clip(r - low, 0, None), np.clip(high - r, 0, None)])
    err = np.nan_to_num(err)
    ax.bar(range(k), r, color="#55a868", yerr=err, capsize=3)
    ax.set_xticks(range(k), labels=classes, rotation=60, ha="right", rotation_mode="anchor")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of sets containing the class")
    ax.set_xlabel("class")
    set_title(ax, title)
    return fig
