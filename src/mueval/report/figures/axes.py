"""What every figure of the report shares: its text, its title and its legend.

This module owns the colours, the rule that labels are plain text (never
mathtext), the optional title, the legend outside the axes, and the fitting of
x tick labels that would run into each other.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable
from typing import Any, TypeVar, cast

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend
from matplotlib.textpath import text_to_path

__all__ = ["COLOURS", "fit_x_labels", "outside_legend", "plain_text", "set_title"]

#: One colour per strategy (matplotlib's tab10).
COLOURS = cast(tuple[Any, ...], cast(ListedColormap, plt.get_cmap("tab10")).colors)


def outside_legend(ax: Axes, **options: Any) -> Legend:
    """The axes' legend right of the axes, its top level with theirs: it never
    covers a point, and constrained layout narrows the axes to make room."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **options)


def set_title(ax: Axes, title: str | None) -> None:
    """A title only when asked for: by default the page's caption says it."""
    if title:
        ax.set_title(title)


_F = TypeVar("_F", bound=Callable[..., object])


def plain_text(func: _F) -> _F:
    """Run ``func`` with mathtext off: labels are data, and ``$...$`` in a class name
    must print as it is, not be parsed (an unbalanced ``$`` would raise when drawn).

    Tick labels are created when the figure is drawn, so saving runs under it too.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> object:
        with matplotlib.rc_context({"text.parse_math": False}):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


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


def fit_x_labels(ax: Axes, *, room: float = 0.9, axes_share: float = 0.6) -> None:
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
    # The report never draws in a subfigure: the axes' figure is the whole figure.
    width = cast(Figure, ax.figure).get_figwidth()
    spacing = 72.0 * axes_share * width / abs(x1 - x0) * np.diff(ticks).min()

    def widest(texts: list[str]) -> float:
        return max(_text_width(t, size) for t in texts if t)

    if widest(labels) <= room * spacing:
        return
    wrapped = [_wrapped(t) for t in labels]
    if widest(wrapped) <= room * spacing:
        ax.set_xticks(ax.get_xticks(), labels=wrapped)
        return
    ax.tick_params(axis="x", labelrotation=90)
