"""The report's figures, drawn with matplotlib (Agg backend, no display needed).

Every function returns a :class:`matplotlib.figure.Figure` (what a test measures
is the figure written); :func:`save_figure` writes it as SVG (the default), PDF or
PNG. No figure carries a title unless asked for one (``title=``): the caption
belongs to the page. Legends sit outside the axes, so they never cover data.
Class names label the axes, matrices carry colour bars, coverage plots carry
the target line 1 - alpha.

Modules: :mod:`.axes` (text, titles, legends), :mod:`.matrices` (heat maps and
the study's matrices), :mod:`.charts` (the other charts) and :mod:`.files`
(writing them).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # the report is built on servers and in CI: never open a window

from mueval.report.figures.axes import fit_x_labels, outside_legend
from mueval.report.figures.charts import (
    coverage_boxplot_figure,
    inclusion_figure,
    multiset_figure,
    multiset_summary,
    per_user_figure,
    setsize_lollipop_figure,
)
from mueval.report.figures.files import (
    DEFAULT_DPI,
    FIGURE_FORMATS,
    clear_layouts,
    figure_bytes,
    layout_counts,
    save_figure,
)
from mueval.report.figures.matrices import (
    confusion_figure,
    cooccurrence_graph_figure,
    cooccurrence_matrix_figure,
    heatmap_figure,
)

__all__ = [
    "DEFAULT_DPI",
    "FIGURE_FORMATS",
    "clear_layouts",
    "confusion_figure",
    "cooccurrence_graph_figure",
    "cooccurrence_matrix_figure",
    "coverage_boxplot_figure",
    "figure_bytes",
    "fit_x_labels",
    "heatmap_figure",
    "inclusion_figure",
    "layout_counts",
    "multiset_figure",
    "multiset_summary",
    "outside_legend",
    "per_user_figure",
    "save_figure",
    "setsize_lollipop_figure",
]
