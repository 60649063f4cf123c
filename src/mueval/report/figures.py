"""The report's figures, drawn with matplotlib (Agg backend, no display needed).

Every function returns a :class:`matplotlib.figure.Figure` (what a test measures
is the figure written); :func:`save_figure` writes it as SVG (the default), PDF or
PNG. No figure carries a title unless asked for one (``title=``): the caption
belongs to the page. Legends sit outside the axes, so they never cover data. Class names label the axes, matrices carry colour bars,
coverage plots carry the target line 1 - alpha.
"""

from __future__ import annotations

import functools
import io
import textwrap
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import matplotlib

matplotlib.use("Agg")  # the report is built on servers and in CI: never open a window

import matplotlib.image as mpimg
import matplotlib.path as mpath
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Patch
from matplotlib.textpath import TextPath, text_to_path
from matplotlib.transforms import Affine2D

from mueval.data.order import natural_key
from mueval.files import write_atomic

__all__ = [
    "DEFAULT_DPI",
    "FIGURE_FORMATS",
    "confusion_figure",
    "cooccurrence_graph_figure",
    "cooccurrence_matrix_figure",
    "coverage_boxplot_figure",
    "figure_bytes",
    "fit_x_labels",
    "heatmap_figure",
    "inclusion_figure",
    "multiset_figure",
    "multiset_summary",
    "outside_legend",
    "per_user_figure",
    "save_figure",
    "setsize_lollipop_figure",
]

_COLOURS = plt.get_cmap("tab10").colors


def outside_legend(ax, **options):
    """The axes' legend right of the axes, its top level with theirs: it never
    covers a point, and constrained layout narrows the axes to make room."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **options)


def _title(ax, title: str | None) -> None:
    """A title only when asked for: by default the page's caption says it."""
    if title:
        ax.set_title(title)


_F = TypeVar("_F", bound=Callable[..., object])


def _plain_text(func: _F) -> _F:
    """Run ``func`` with mathtext off: labels are data, and ``$...$`` in a class name
    must print as it is, not be parsed (an unbalanced ``$`` would raise when drawn).

    Tick labels are created when the figure is drawn, so saving runs under it too.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context({"text.parse_math": False}):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _cell_colours(im, values: np.ndarray) -> np.ndarray:
    """Black on light cells, white on dark ones (the cell's own luminance), so
    diverging maps stay legible; RGBA, shape (n, 4)."""
    rgba = im.cmap(im.norm(values))
    lum = 0.299 * rgba[:, 0] + 0.587 * rgba[:, 1] + 0.114 * rgba[:, 2]
    return np.where(lum[:, None] > 0.5, [[0.0, 0.0, 0.0, 1.0]], [[1.0, 1.0, 1.0, 1.0]])


def _text_cells(ax, im, m: np.ndarray) -> None:
    """Each finite cell's value as a text artist (for SVG: text stays text)."""
    rows, cols = np.nonzero(np.isfinite(m))
    for r, c, colour in zip(rows, cols, _cell_colours(im, m[rows, cols]), strict=True):
        # Out of the layout: cells cannot overflow.
        ax.text(
            c,
            r,
            f"{m[r, c]:.2f}",
            ha="center",
            va="center",
            fontsize=7,
            color=colour,
            in_layout=False,
        )


@functools.lru_cache(maxsize=4096)
def _value_outline(text: str, prop: FontProperties) -> mpath.Path:
    """The outline of a cell value's text in font ``prop``, centred on (0, 0), in points.

    Kept for the life of the process: the exact extents of a glyph outline (its
    Bezier curves solved) cost milliseconds, and the same few hundred values
    ("0.00" to "1.00", "-0.42") recur in every heat map of a report. Callers share
    the path and must not change it.
    """
    # Keyed on the font too (its family follows rcParams when it is made).
    shape = TextPath((0, 0), text, prop=prop)
    (x0, y0), (x1, y1) = shape.get_extents().get_points()
    return shape.transformed(Affine2D().translate(-(x0 + x1) / 2, -(y0 + y1) / 2))


def _annotate_cells(ax, im, m: np.ndarray) -> PathCollection:
    """Print each finite cell's value (two decimals, 7 pt) at its centre.

    One collection of glyph outlines, not one text artist per cell: a text
    artist costs milliseconds to lay out and draw, and a 20-class matrix has
    400 of them. Out of the layout (cells cannot overflow). The text colour
    follows the cell's own luminance, so diverging maps stay legible.
    """
    rows, cols = np.nonzero(np.isfinite(m))
    prop = FontProperties(size=7)
    glyphs = PathCollection(
        [_value_outline(f"{value:.2f}", prop) for value in m[rows, cols]],
        offsets=np.column_stack([cols, rows]),
        offset_transform=ax.transData,
        transform=Affine2D().scale(ax.figure.dpi / 72.0),
        facecolors=_cell_colours(im, m[rows, cols]),
        edgecolors="none",
        zorder=3,
    )
    glyphs.set_in_layout(False)
    ax.add_collection(glyphs, autolim=False)
    return glyphs


def _text_width(text: str, size: float) -> float:
    """The width of ``text`` in points, the widest of its lines, in the current font.

    From the font's advance widths (what a renderer lays text out with), not
    from a text path's outline: solving a glyph outline's extents costs
    milliseconds a label.
    """
    prop = FontProperties(size=size)
    return max(
        text_to_path.get_text_width_height_descent(line, prop, ismath=False)[0]
        for line in text.split("\n")
    )


def _wrapped(text: str) -> str:
    """A long label on two or more lines: before a bracket, else at spaces."""
    if " (" in text:
        head, _, tail = text.partition(" (")
        return f"{head}\n({tail}"
    return textwrap.fill(text, width=max(8, len(text) // 2 + 1))


def fit_x_labels(ax, *, room: float = 0.9, axes_share: float = 0.6) -> None:
    """Keep the x tick labels from running into each other.

    When the widest label, written flat, would take more than ``room`` of the
    space between two ticks, the labels are wrapped onto two lines; when they
    are still too wide, they are turned upright (90 degrees). Measured with the
    font itself (text paths, in points) before any drawing, so constrained
    layout makes room for the labels as they will be drawn. The axes' width is
    not known before layout: ``axes_share`` of the figure's is taken for it, on
    the narrow side (a legend beside the axes takes the rest).
    """
    ticks = np.sort(np.asarray(ax.get_xticks(), dtype=float))
    labels = [t.get_text() for t in ax.get_xticklabels()]
    if len(ticks) < 2 or not any(labels):
        return
    size = FontProperties(size=matplotlib.rcParams["xtick.labelsize"]).get_size_in_points()
    x0, x1 = ax.get_xlim()
    spacing = 72.0 * axes_share * ax.figure.get_figwidth() / abs(x1 - x0) * np.diff(ticks).min()

    def widest(texts: list[str]) -> float:
        return max(_text_width(t, size) for t in texts if t)

    if widest(labels) <= room * spacing:
        return
    wrapped = [_wrapped(t) for t in labels]
    if widest(wrapped) <= room * spacing:
        ax.set_xticks(ax.get_xticks(), labels=wrapped)
        return
    ax.tick_params(axis="x", labelrotation=90)


def _matrix_size(k: int) -> tuple[float, float]:
    side = min(max(4.5, 0.42 * k + 2.5), 12.0)
    return side + 1.3, side


@_plain_text
def heatmap_figure(
    matrix: np.ndarray,
    classes: Sequence[str],
    *,
    title: str | None = None,
    xlabel: str,
    ylabel: str,
    cbar_label: str,
    cmap: str = "viridis",
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    annotate: bool | None = None,
    values_as_text: bool = False,
    nan_label: str = "undefined / no data",
    marks: np.ndarray | None = None,
    marks_label: str = "",
) -> Figure:
    """A class-by-class matrix as a heat map; NaN cells hatched grey.

    Parameters
    ----------
    matrix : ndarray, shape (K, K)
        ``matrix[row, col]``; rows run down the y axis, columns along x.
    classes : sequence of str, length K
    annotate : bool, optional
        Print values in the cells; by default only when K <= 12.
    values_as_text : bool
        Print them as text artists (text in an SVG: selectable, smaller) rather
        than as one collection of glyph outlines (much faster to draw as PNG).
    marks : ndarray of bool, shape (K, K), optional
        Cells to mark with a black x, explained by ``marks_label`` in the legend
        (below the matrix, with the hatched NaN cells' entry).

    Notes
    -----
    The layout constrained layout settles for the first heat map of a shape
    (size, classes, axis and colour-bar labels and scale, legends, title height)
    is reused by :func:`save_figure` for the next ones of that shape whose title
    is no wider than the matrix: the same positions constrained layout would give
    them, without solving it again (it is the largest part of drawing one).
    """
    m = np.asarray(matrix, dtype=float)
    k = len(classes)
    fig, ax = plt.subplots(figsize=_matrix_size(k), layout="constrained")
    ax.set_facecolor("#d9d9d9")
    masked = np.ma.masked_invalid(m)
    im = ax.imshow(masked, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest")
    nan_cells = np.argwhere(~np.isfinite(m))
    for r, c in nan_cells:
        ax.add_patch(
            plt.Rectangle(
                (c - 0.5, r - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#888888", linewidth=0
            )
        )
    ax.set_xticks(range(k), labels=classes, rotation=60, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(k), labels=classes)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    _title(ax, title)
    fig.colorbar(im, ax=ax, label=cbar_label, shrink=0.8)
    if annotate is None:
        annotate = k <= 12
    if annotate and values_as_text:
        _text_cells(ax, im, m)
    elif annotate:
        _annotate_cells(ax, im, m)
    handles = []
    if len(nan_cells):
        handles.append(
            Patch(facecolor="#d9d9d9", hatch="///", edgecolor="#888888", label=nan_label)
        )
    rr, cc = np.nonzero(marks) if marks is not None else ((), ())
    if len(rr):
        handles.append(
            ax.scatter(cc, rr, marker="x", s=14, color="black", linewidths=0.8, label=marks_label)
        )
    if handles:
        # Under the figure, with room made for it: above the matrix is the title's
        # (when asked for), and below the matrix the rotated class names' and the
        # axis label's.
        fig.legend(handles=handles, loc="outside lower left", fontsize=8, frameon=False)
    legend = fig.legends[0] if fig.legends else None
    _LAYOUT_SHAPES[fig] = (
        "heatmap",
        tuple(fig.get_size_inches()),
        tuple(classes),
        xlabel,
        ylabel,
        cbar_label,
        (float(im.norm.vmin), float(im.norm.vmax)),
        None if legend is None else tuple(t.get_text() for t in legend.get_texts()),
        (title or "").count("\n"),
    )
    return fig


@_plain_text
def cooccurrence_matrix_figure(
    colnorm: np.ndarray,
    classes: Sequence[str],
    *,
    title: str | None = None,
    values_as_text: bool = False,
) -> Figure:
    """The study's co-occurrence matrix: pair counts, diagonal zero, columns sum to 1.

    ``values_as_text`` as for :func:`heatmap_figure`."""
    return heatmap_figure(
        colnorm,
        classes,
        title=title,
        xlabel="class (column sums to 1)",
        ylabel="class in the same set",
        cbar_label="share of the column's co-occurrences",
        cmap="magma",
        values_as_text=values_as_text,
    )


@_plain_text
def confusion_figure(
    cm: np.ndarray,
    classes: Sequence[str],
    *,
    title: str | None = None,
    zero_diagonal: bool = False,
    values_as_text: bool = False,
) -> Figure:
    """Row-normalised confusion matrix: rows the true class, columns the predicted.

    ``cm[t, p]``, the share of the true class ``t``'s rows predicted as ``p``
    (:func:`mueval.report.setstats.confusion_matrix_rows`): each row sums to 1.
    ``values_as_text`` as for :func:`heatmap_figure`."""
    label = "share of the true class's errors" if zero_diagonal else "share of the true class"
    return heatmap_figure(
        cm,
        classes,
        title=title,
        xlabel="predicted class",
        ylabel="true class",
        cbar_label=label,
        cmap="Blues",
        nan_label="no row (or no error) of this true class",
        values_as_text=values_as_text,
    )


@_plain_text
def cooccurrence_graph_figure(
    counts: np.ndarray, classes: Sequence[str], *, title: str | None = None
) -> Figure:
    """Undirected co-occurrence graph on a circle.

    Edge width is proportional to the pair's count; node area to the weighted
    degree (the class's total co-occurrences).
    """
    c = np.asarray(counts, dtype=float)
    k = len(classes)
    angles = np.pi / 2 - 2 * np.pi * np.arange(k) / max(k, 1)
    xy = np.column_stack([np.cos(angles), np.sin(angles)])
    fig, ax = plt.subplots(figsize=(7.5, 7.5), layout="constrained")
    top = c.max() if c.size and c.max() > 0 else 1.0
    # Every edge in one collection (one artist, however many classes).
    i, j = np.nonzero(np.triu(c > 0, 1))
    ax.add_collection(
        LineCollection(
            np.stack([xy[i], xy[j]], axis=1),
            colors="#4c72b0",
            linewidths=0.5 + 9.5 * c[i, j] / top,
            alpha=0.6,
            zorder=1,
        ),
        autolim=False,
    )
    degree = c.sum(axis=1)
    dmax = degree.max() if degree.max() > 0 else 1.0
    ax.scatter(
        xy[:, 0],
        xy[:, 1],
        s=60 + 1400 * degree / dmax,
        color="#dd8452",
        edgecolor="black",
        zorder=2,
    )
    for i, name in enumerate(classes):
        ax.annotate(name, xy[i] * 1.16, ha="center", va="center", fontsize=9, in_layout=False)
    ax.set_xlim(-1.45, 1.45)
    ax.set_ylim(-1.45, 1.45)
    ax.set_aspect("equal")
    ax.axis("off")
    _title(ax, title)
    note = f"edge width: pair count (max {int(top)}); node size: weighted degree (max {int(dmax)})"
    ax.text(0.5, 0.0, note, transform=ax.transAxes, ha="center", fontsize=8)
    return fig


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


@_plain_text
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


@_plain_text
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
        ax.scatter(i + jitter, d, s=10, color=_COLOURS[(i - 1) % 10], alpha=0.7, zorder=3)
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
    _title(ax, title)
    outside_legend(ax, fontsize=8)
    fit_x_labels(ax)
    return fig


@_plain_text
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
            ax.hlines(y, 0, row["mean"], color=_COLOURS[si % 10], linewidth=1.5)
            ax.errorbar(
                row["mean"],
                y,
                xerr=row["sd"] if np.isfinite(row["sd"]) else None,
                fmt="o",
                color=_COLOURS[si % 10],
                capsize=3,
                markersize=6,
                label=strat if row["classifier_label"] == sub["classifier_label"].iloc[0] else None,
            )
    ax.set_yticks(range(len(clfs)), labels=clfs)
    ax.invert_yaxis()
    ax.set_xlabel("mean prediction set size (classes), +- SD over iterations")
    ax.set_ylabel("classifier")
    ax.set_xlim(left=0)
    _title(ax, title)
    outside_legend(ax, title="strategy", fontsize=8)
    return fig


@_plain_text
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
        colour = _COLOURS[si % 10]
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
    _title(ax, title)
    outside_legend(ax, fontsize=8)
    return fig


@_plain_text
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
    _title(ax, title)
    return fig


#: The shape of each heat map made (what its layout depends on, title aside).
_LAYOUT_SHAPES: weakref.WeakKeyDictionary[Figure, tuple] = weakref.WeakKeyDictionary()
#: Shape (with dpi, fonts and title height) -> the positions constrained layout gave.
_LAYOUTS: dict[tuple, dict[str, object]] = {}
_LAYOUT_COUNTS = {"reused": 0, "solved": 0}
# What else the layout depends on: the fonts and constrained layout's pads.
_LAYOUT_RC = (
    "font.family",
    "font.size",
    "axes.titlesize",
    "axes.labelsize",
    "xtick.labelsize",
    "ytick.labelsize",
    "legend.fontsize",
    "figure.constrained_layout.w_pad",
    "figure.constrained_layout.h_pad",
)


def layout_counts() -> dict[str, int]:
    """How many heat maps in this process reused a settled layout and how many
    had constrained layout solve theirs (a copy)."""
    return dict(_LAYOUT_COUNTS)


def clear_layouts() -> None:
    """Forget the settled layouts (the next heat map of each shape solves its own)."""
    _LAYOUTS.clear()
    _LAYOUT_COUNTS.update(reused=0, solved=0)


def _layout_key(fig: Figure, renderer, dpi: int) -> tuple | None:
    shape = _LAYOUT_SHAPES.get(fig)
    if shape is None or len(fig.axes) != 2:
        return None
    rc = tuple(str(matplotlib.rcParams[name]) for name in _LAYOUT_RC)
    height = fig.axes[0].title.get_window_extent(renderer).height
    return (*shape, dpi, rc, round(float(height), 6))


def _title_width(fig: Figure, renderer) -> float:
    return float(fig.axes[0].title.get_window_extent(renderer).width)


def _settled(fig: Figure, renderer) -> dict[str, object]:
    """The positions constrained layout gave a drawn heat map, and the width of its
    matrix: a title no wider, centred on it, adds nothing to the margins."""
    return {
        "positions": [ax.get_position(original=True).frozen() for ax in fig.axes],
        "anchors": [ax.get_anchor() for ax in fig.axes],
        "box_aspects": [ax.get_box_aspect() for ax in fig.axes],
        "aspects": [ax.get_aspect() for ax in fig.axes],
        "matrix_width": float(fig.axes[0].get_window_extent(renderer).width),
    }


def _reuse(fig: Figure, layout: dict[str, object]) -> None:
    fig.set_layout_engine("none")
    for i, ax in enumerate(fig.axes):
        ax.set_position(layout["positions"][i])
        ax.set_anchor(layout["anchors"][i])
        ax.set_box_aspect(layout["box_aspects"][i])
        ax.set_aspect(layout["aspects"][i])


def _draw_settled(fig: Figure, renderer, dpi_key: object, draw: Callable[[], None]) -> None:
    """``draw()`` the figure, a heat map on the layout settled for its shape when
    there is one (see :func:`heatmap_figure`), else solving constrained layout
    and keeping what it settled for the next heat map of that shape.

    ``renderer`` measures the titles and the matrix (at the dpi ``dpi_key``
    names); a figure whose layout is already fixed is just drawn.
    """
    if not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        draw()
        return
    key = _layout_key(fig, renderer, dpi_key)
    layout = _LAYOUTS.get(key) if key is not None else None
    if layout is not None and _title_width(fig, renderer) <= layout["matrix_width"]:
        _reuse(fig, layout)
        _LAYOUT_COUNTS["reused"] += 1
        key = None
    draw()
    if key is not None:
        _LAYOUT_COUNTS["solved"] += 1
        settled = _settled(fig, renderer)
        if key not in _LAYOUTS and _title_width(fig, renderer) <= settled["matrix_width"]:
            _LAYOUTS[key] = settled


def _png(fig: Figure, path, dpi: int) -> None:
    """Draw ``fig`` once on an Agg canvas at ``dpi`` and write its pixels as PNG.

    The pixels are those ``fig.savefig(path, dpi=dpi, format="png")`` writes.
    """
    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    _draw_settled(fig, canvas.get_renderer(), dpi, canvas.draw)
    # RGBA with the figure's dpi in the header, as savefig writes it.
    mpimg.imsave(path, np.asarray(canvas.buffer_rgba()), format="png", dpi=dpi)


#: The formats a figure is written in: vector first (the default), PNG on request.
FIGURE_FORMATS = ("svg", "pdf", "png")
#: The resolution of a PNG unless asked otherwise (print quality).
DEFAULT_DPI = 300


def _check_format(fmt: str, dpi: int) -> None:
    if fmt not in FIGURE_FORMATS:
        msg = f"figure format must be one of {', '.join(FIGURE_FORMATS)}, not {fmt!r}"
        raise ValueError(msg)
    if not isinstance(dpi, int) or isinstance(dpi, bool) or not 10 <= dpi <= 2400:
        msg = f"dpi must be a whole number from 10 to 2400, not {dpi!r}"
        raise ValueError(msg)


#: What vector files are drawn at: points (savefig draws SVG and PDF at 72 dpi).
_VECTOR_DPI = 72


def _vector(fig: Figure, path, fmt: str) -> None:
    """Write ``fig`` as SVG or PDF in one drawing pass: text as text (smaller,
    selectable), no date and fixed ids (the same figure gives the same bytes).

    The backend prints directly: ``savefig`` would draw the whole figure once
    without output to lay it out, then again. Constrained layout runs inside
    the one drawing, and the bytes are those ``savefig`` writes.
    """
    fig.set_dpi(_VECTOR_DPI)
    renderer = FigureCanvasAgg(fig).get_renderer()
    settings = {"svg.fonttype": "none", "pdf.fonttype": 42, "svg.hashsalt": "mueval"}

    def draw() -> None:
        with matplotlib.rc_context(settings):
            if fmt == "svg":
                # Here, not at the top: each vector backend only when its format is written.
                from matplotlib.backends.backend_svg import FigureCanvasSVG

                FigureCanvasSVG(fig).print_svg(path, metadata={"Date": None})
            else:
                # Here, not at the top: the PDF backend, only when a PDF is written.
                from matplotlib.backends.backend_pdf import FigureCanvasPdf

                FigureCanvasPdf(fig).print_pdf(path, metadata={"CreationDate": None})

    _draw_settled(fig, renderer, ("vector", _VECTOR_DPI), draw)


def figure_bytes(fig: Figure, fmt: str = "svg", *, dpi: int = DEFAULT_DPI) -> bytes:
    """``fig`` as the bytes of an SVG, PDF or PNG file, without writing one.

    The first drawing settles the layout; later ones (:func:`save_figure` after
    this) reuse it instead of solving constrained layout again.
    """
    _check_format(fmt, dpi)
    buffer = io.BytesIO()
    with matplotlib.rc_context({"text.parse_math": False}):
        if fmt == "png":
            _png(fig, buffer, dpi)
        else:
            _vector(fig, buffer, fmt)
    fig.set_layout_engine("none")
    return buffer.getvalue()


@_plain_text
def save_figure(fig: Figure, stem: Path, *, fmt: str = "svg", dpi: int = DEFAULT_DPI) -> Path:
    """Write ``stem.svg`` (or ``.pdf``, ``.png`` at ``dpi``) and close the figure.

    The file is written under a temporary name and renamed into place
    (:func:`mueval.files.write_atomic`): a link or FIFO planted at the name is
    refused, never written through. A PNG is laid out and drawn in one pass
    (``savefig`` would lay it out in a pass of its own first, drawing every text
    twice). SVG and PDF keep text as text and carry no date, so the same figure
    gives the same file.

    Parameters
    ----------
    fig : Figure
    stem : Path
        The file's path without its suffix.
    fmt : {"svg", "pdf", "png"}
    dpi : int, default 300
        Resolution of a PNG (vector files have none).

    Returns
    -------
    Path
        The file written.
    """
    _check_format(fmt, dpi)
    stem.parent.mkdir(parents=True, exist_ok=True)
    try:
        if fmt == "png":
            return write_atomic(stem.parent, f"{stem.name}.png", lambda path: _png(fig, path, dpi))
        return write_atomic(stem.parent, f"{stem.name}.{fmt}", lambda path: _vector(fig, path, fmt))
    finally:
        plt.close(fig)
