"""The class-by-class figures: heat maps, the study's matrices and its graph.

This module owns :func:`heatmap_figure` (with its cell values, as text or as one
collection of glyph outlines) and the figures drawn with it, and the study's
co-occurrence graph. Each heat map records its shape, so that the next one of
that shape is written on the same layout (:mod:`.files`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, cast

import matplotlib.path as mpath
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.image import AxesImage
from matplotlib.patches import Patch
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D

from mueval.report.figures.axes import plain_text, set_title
from mueval.report.figures.files import remember_layout

__all__ = [
    "confusion_figure",
    "cooccurrence_graph_figure",
    "cooccurrence_matrix_figure",
    "heatmap_figure",
]


def _cell_colours(im: AxesImage, values: np.ndarray) -> np.ndarray:
    """Black on light cells, white on dark ones (the cell's own luminance), so
    diverging maps stay legible; RGBA, shape (n, 4)."""
    # (n, 4) for an array of values (the stubs type a colormap's call for one).
    rgba = np.asarray(im.cmap(im.norm(values)))
    lum = 0.299 * rgba[:, 0] + 0.587 * rgba[:, 1] + 0.114 * rgba[:, 2]
    return np.where(lum[:, None] > 0.5, [[0.0, 0.0, 0.0, 1.0]], [[1.0, 1.0, 1.0, 1.0]])


def _text_cells(ax: Axes, im: AxesImage, m: np.ndarray) -> None:
    """Each finite cell's value as a text artist (for SVG: text stays text)."""
    rows, cols = np.nonzero(np.isfinite(m))
    for r, c, colour in zip(rows, cols, _cell_colours(im, m[rows, cols]), strict=True):
        # Out of the layout: cells cannot overflow.
        ax.text(
            float(c),
            float(r),
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


def _annotate_cells(ax: Axes, im: AxesImage, m: np.ndarray) -> PathCollection:
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


def _matrix_size(k: int) -> tuple[float, float]:
    side = min(max(4.5, 0.42 * k + 2.5), 12.0)
    return side + 1.3, side


@plain_text
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
    set_title(ax, title)
    fig.colorbar(im, ax=ax, label=cbar_label, shrink=0.8)
    if annotate is None:
        annotate = k <= 12
    if annotate and values_as_text:
        _text_cells(ax, im, m)
    elif annotate:
        _annotate_cells(ax, im, m)
    handles: list[Artist] = []
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
    remember_layout(
        fig,
        (
            "heatmap",
            tuple(fig.get_size_inches()),
            tuple(classes),
            xlabel,
            ylabel,
            cbar_label,
            (float(cast(float, im.norm.vmin)), float(cast(float, im.norm.vmax))),
            None if legend is None else tuple(t.get_text() for t in legend.get_texts()),
            (title or "").count("\n"),
        ),
    )
    return fig


@plain_text
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


@plain_text
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


@plain_text
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
            cast(Sequence[Any], np.stack([xy[i], xy[j]], axis=1)),
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
    for n, name in enumerate(classes):
        at = cast(tuple[float, float], xy[n] * 1.16)
        ax.annotate(name, at, ha="center", va="center", fontsize=9, in_layout=False)
    ax.set_xlim(-1.45, 1.45)
    ax.set_ylim(-1.45, 1.45)
    ax.set_aspect("equal")
    ax.axis("off")
    set_title(ax, title)
    note = f"edge width: pair count (max {int(top)}); node size: weighted degree (max {int(dmax)})"
    ax.text(0.5, 0.0, note, transform=ax.transAxes, ha="center", fontsize=8)
    return fig
