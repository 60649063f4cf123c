"""Writing a figure: SVG, PDF or PNG, in one drawing pass, on a settled layout.

This module owns the figure files: their formats and resolution, the bytes of
each format (vector files with text as text and no date, so the same figure
gives the same bytes), the atomic write, and the cache of the layouts
constrained layout settled for heat maps, reused for the next heat map of the
same shape.
"""

from __future__ import annotations

import io
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import matplotlib
import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.transforms import Bbox
from matplotlib.typing import RcKeyType

from mueval.files import write_atomic
from mueval.report.figures.axes import plain_text

__all__ = [
    "DEFAULT_DPI",
    "FIGURE_FORMATS",
    "clear_layouts",
    "figure_bytes",
    "layout_counts",
    "remember_layout",
    "save_figure",
]


#: The shape of each heat map made (what its layout depends on, title aside).
_LAYOUT_SHAPES: weakref.WeakKeyDictionary[Figure, tuple[object, ...]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _Layout:
    """The positions constrained layout gave a drawn heat map's axes, and the
    width of its matrix."""

    positions: list[Bbox]
    anchors: list[str | tuple[float, float]]
    box_aspects: list[float | None]
    aspects: list[Any]
    matrix_width: float


#: Shape (with dpi, fonts and title height) -> the positions constrained layout gave.
_LAYOUTS: dict[tuple[object, ...], _Layout] = {}
_LAYOUT_COUNTS = {"reused": 0, "solved": 0}
# What else the layout depends on: the fonts and constrained layout's pads.
_LAYOUT_RC: tuple[RcKeyType, ...] = (
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


def remember_layout(fig: Figure, shape: tuple[object, ...]) -> None:
    """Record what the layout of the heat map ``fig`` depends on (title aside), so
    that a heat map of the same shape is written on the layout this one settles."""
    _LAYOUT_SHAPES[fig] = shape


def layout_counts() -> dict[str, int]:
    """How many heat maps in this process reused a settled layout and how many
    had constrained layout solve theirs (a copy)."""
    return dict(_LAYOUT_COUNTS)


def clear_layouts() -> None:
    """Forget the settled layouts (the next heat map of each shape solves its own)."""
    _LAYOUTS.clear()
    _LAYOUT_COUNTS.update(reused=0, solved=0)


def _layout_key(fig: Figure, renderer: RendererBase, dpi: object) -> tuple[object, ...] | None:
    shape = _LAYOUT_SHAPES.get(fig)
    if shape is None or len(fig.axes) != 2:
        return None
    rc = tuple(str(matplotlib.rcParams[name]) for name in _LAYOUT_RC)
    height = fig.axes[0].title.get_window_extent(renderer).height
    return (*shape, dpi, rc, round(float(height), 6))


def _title_width(fig: Figure, renderer: RendererBase) -> float:
    return float(fig.axes[0].title.get_window_extent(renderer).width)


def _settled(fig: Figure, renderer: RendererBase) -> _Layout:
    """The positions constrained layout gave a drawn heat map, and the width of its
    matrix: a title no wider, centred on it, adds nothing to the margins."""
    return _Layout(
        positions=[ax.get_position(original=True).frozen() for ax in fig.axes],
        anchors=[ax.get_anchor() for ax in fig.axes],
        box_aspects=[ax.get_box_aspect() for ax in fig.axes],
        aspects=[ax.get_aspect() for ax in fig.axes],
        matrix_width=float(fig.axes[0].get_window_extent(renderer).width),
    )


def _reuse(fig: Figure, layout: _Layout) -> None:
    fig.set_layout_engine("none")
    for i, ax in enumerate(fig.axes):
        ax.set_position(layout.positions[i])
        ax.set_anchor(layout.anchors[i])
        ax.set_box_aspect(layout.box_aspects[i])
        ax.set_aspect(layout.aspects[i])


def _draw_settled(
    fig: Figure, renderer: RendererBase, dpi_key: object, draw: Callable[[], None]
) -> None:
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
    if layout is not None and _title_width(fig, renderer) <= layout.matrix_width:
        _reuse(fig, layout)
        _LAYOUT_COUNTS["reused"] += 1
        key = None
    draw()
    if key is not None:
        _LAYOUT_COUNTS["solved"] += 1
        settled = _settled(fig, renderer)
        if key not in _LAYOUTS and _title_width(fig, renderer) <= settled.matrix_width:
            _LAYOUTS[key] = settled


def _png(fig: Figure, path: Path | BinaryIO, dpi: int) -> None:
    """Draw ``fig`` once on an Agg canvas at ``dpi`` and write its pixels as PNG.

    The pixels are those ``fig.savefig(path, dpi=dpi, format="png")`` writes.
    """
    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    # matplotlib's stubs leave the Agg canvas's methods untyped.
    renderer = canvas.get_renderer()  # type: ignore[no-untyped-call]
    _draw_settled(fig, renderer, dpi, canvas.draw)
    # RGBA with the figure's dpi in the header, as savefig writes it.
    pixels = np.asarray(canvas.buffer_rgba())  # type: ignore[no-untyped-call]
    mpimg.imsave(path, pixels, format="png", dpi=dpi)


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


def _vector(fig: Figure, path: Path | BinaryIO, fmt: str) -> None:
    """Write ``fig`` as SVG or PDF in one drawing pass: text as text (smaller,
    selectable), no date and fixed ids (the same figure gives the same bytes).

    The backend prints directly: ``savefig`` would draw the whole figure once
    without output to lay it out, then again. Constrained layout runs inside
    the one drawing, and the bytes are those ``savefig`` writes.
    """
    fig.set_dpi(_VECTOR_DPI)
    # matplotlib's stubs leave the canvases' methods untyped (here and below).
    renderer = FigureCanvasAgg(fig).get_renderer()  # type: ignore[no-untyped-call]
    settings: dict[RcKeyType, Any] = {
        "svg.fonttype": "none",
        "pdf.fonttype": 42,
        "svg.hashsalt": "mueval",
    }

    def draw() -> None:
        with matplotlib.rc_context(settings):
            if fmt == "svg":
                # Here, not at the top: each vector backend only when its format is written.
                from matplotlib.backends.backend_svg import FigureCanvasSVG

                FigureCanvasSVG(fig).print_svg(path, metadata={"Date": None})  # type: ignore[no-untyped-call]
            else:
                # Here, not at the top: the PDF backend, only when a PDF is written.
                from matplotlib.backends.backend_pdf import FigureCanvasPdf

                FigureCanvasPdf(fig).print_pdf(  # type: ignore[no-untyped-call]
                    path, metadata={"CreationDate": None}
                )

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


@plain_text
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
