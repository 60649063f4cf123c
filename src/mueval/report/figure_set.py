"""How the report's figures are written, and the figures one page collects.

This module owns :class:`FigureStyle` (format, resolution, titles: checked once)
and :class:`FigureSet`, which saves each figure under ``out/figures`` and
returns the HTML that embeds it, or nothing when the page asks for no figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from mueval.errors import UsageError
from mueval.files import check_inside
from mueval.report import figures as F
from mueval.report.folder import claim_figure, real_folder
from mueval.report.html import figure_html

__all__ = ["FigureSet", "FigureStyle"]


@dataclass(frozen=True)
class FigureStyle:
    """How the report's figures are written.

    Attributes
    ----------
    fmt : {"svg", "pdf", "png"}
        The files' format; the page embeds SVG and PNG files as they are, and
        an SVG drawing of each PDF.
    dpi : int
        Resolution of PNG files.
    titles : bool
        Draw a title in each figure; by default the page's caption is the only one.
    """

    fmt: str = "svg"
    dpi: int = F.DEFAULT_DPI
    titles: bool = False

    def __post_init__(self) -> None:
        if self.fmt not in F.FIGURE_FORMATS:
            msg = f"figure format must be one of {', '.join(F.FIGURE_FORMATS)}, not {self.fmt!r}"
            raise UsageError(msg)
        if (
            isinstance(self.dpi, bool)
            or not isinstance(self.dpi, int)
            or not 10 <= self.dpi <= 2400
        ):
            msg = f"dpi must be a whole number from 10 to 2400, not {self.dpi!r}"
            raise UsageError(msg)


class FigureSet:
    """Saves figures under ``out/figures`` and returns their embedded HTML.

    ``out`` is a folder :func:`~mueval.report.folder.prepare_report_folder`
    made ready: each figure is claimed in its list before it is written.

    Attributes
    ----------
    dir : Path
        ``out/figures``, a real folder.
    paths : list of Path
        The files written, in order.
    enabled : bool
        False: :meth:`add` writes nothing and returns "".
    style : FigureStyle
    """

    def __init__(
        self, out: Path, *, enabled: bool = True, style: FigureStyle | None = None
    ) -> None:
        self.dir = real_folder(out / "figures")
        self.paths: list[Path] = []
        self.enabled = enabled
        self.style = style if style is not None else FigureStyle()

    @property
    def vector(self) -> bool:
        """Vector files: cell values as text (selectable) rather than outlines."""
        return self.style.fmt != "png"

    def title(self, text: str) -> str | None:
        """``text`` as a figure's title when titles are asked for, else none."""
        return text if self.style.titles else None

    def add(self, fig: Figure | Callable[[], Figure], name: str, caption: str) -> str:
        """Save ``fig`` (or the figure ``fig()`` makes) and return its HTML.

        A figure not asked for leaves no trace on the page; given as a callable,
        it is not even made (making the axes costs as much as a small drawing).
        """
        if not self.enabled:
            if isinstance(fig, Figure):
                plt.close(fig)
            return ""
        if not isinstance(fig, Figure):
            fig = fig()
        # No browser shows a PDF in an <img>: the page gets an SVG drawing of it.
        shown = (".svg", F.figure_bytes(fig, "svg")) if self.style.fmt == "pdf" else None
        stem = check_inside(self.dir, self.dir / name)
        # Claimed first: a file of the report's is never left unclaimed, even
        # when the report is interrupted while writing it.
        claim_figure(self.dir.parent, f"{stem.name}.{self.style.fmt}")
        path = F.save_figure(fig, stem, fmt=self.style.fmt, dpi=self.style.dpi)
        self.paths.append(path)
        return figure_html(path, alt=caption, caption=caption, shown=shown)
