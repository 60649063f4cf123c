"""The curve's figure: coverage, set size and accuracy against k, one line per use,
written as SVG, PDF or PNG.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mueval.errors import UsageError
from mueval.evaluation.labelcurve.summary import CURVE_METRICS
from mueval.files import write_atomic

if TYPE_CHECKING:
    # Annotations only: matplotlib is imported when a curve is drawn.
    from matplotlib.figure import Figure

__all__ = ["CURVE_FIGURE_FORMATS", "curve_figure", "curve_label", "write_curve_figure"]

#: What ``--figure-format`` accepts for the curve's figure (as for ``mueval report``).
CURVE_FIGURE_FORMATS = ("svg", "pdf", "png")


def curve_label(info: dict[str, Any]) -> str:
    """What the curve is of, for its figure: dataset, classifier and alpha.

    Parameters
    ----------
    info : dict
        ``run.json``'s content (:attr:`CurveResult.info`).
    """
    config = info["config"]
    name = info.get("dataset", {}).get("name") or "data"
    return f"{name}, classifier {config['classifier']}, alpha = {config['alpha']:g}"


def curve_figure(
    curve_frame: pd.DataFrame, alpha: float, *, label: str = "", title: bool = False
) -> Figure:
    """Coverage, set size and accuracy against k, one line per use.

    Points answered by the small-cal policy for some user are drawn hollow. The
    legend stands right of the last panel (it never covers a point) and its
    title names what the curve is of (``label``: dataset, classifier and alpha,
    see :func:`curve_label`); each panel's metric is its y label. ``title``
    puts ``label`` above the panels as well.

    Returns
    -------
    matplotlib.figure.Figure
    """
    # Here, not at the top: matplotlib, only when a curve is drawn.
    import matplotlib

    matplotlib.use("Agg")  # never open a window: servers and CI have none
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 3.8), layout="constrained")
    axes = figure.subplots(1, 3)
    names = {"coverage": "coverage", "setsize": "mean set size", "accuracy": "accuracy"}
    with matplotlib.rc_context({"text.parse_math": False}):
        for ax, metric in zip(axes, CURVE_METRICS, strict=True):
            for i, (use, group) in enumerate(curve_frame.groupby("use", sort=False)):
                colour = f"C{i}"
                ax.fill_between(
                    group["k"],
                    group[f"{metric}_low"],
                    group[f"{metric}_high"],
                    color=colour,
                    alpha=0.2,
                )
                ax.plot(group["k"], group[metric], color=colour, label=use)
                flagged = group["n_small_cal"] > 0
                ax.scatter(group["k"][~flagged], group[metric][~flagged], color=colour, zorder=3)
                ax.scatter(
                    group["k"][flagged],
                    group[metric][flagged],
                    facecolors="white",
                    edgecolors=colour,
                    zorder=3,
                )
            if metric == "coverage":
                ax.axhline(
                    1 - alpha,
                    color="grey",
                    linestyle="--",
                    linewidth=1,
                    label=f"target 1 - alpha = {1 - alpha:g}",
                )
            ax.set_xlabel("labelled windows of the target user (k)")
            ax.set_ylabel(names[metric])
        handles, labels = axes[0].get_legend_handles_labels()
        head = f"{label}\n" if label else ""
        # Right of the last panel, top level with it: never over a point.
        axes[-1].legend(
            handles,
            labels,
            title=f"{head}use (hollow: small calibration set)",
            fontsize="small",
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
        )
        if title and label:
            figure.suptitle(label)
    return figure


def write_curve_figure(figure: Figure, folder: Path, *, fmt: str = "svg", dpi: int = 300) -> Path:
    """Write ``figure`` as ``curve.svg`` (or ``.pdf``, ``.png`` at ``dpi``) in ``folder``.

    SVG and PDF keep text as text and carry no date: the same curve gives the
    same file.
    """
    if fmt not in CURVE_FIGURE_FORMATS:
        message = f"figure format must be one of {', '.join(CURVE_FIGURE_FORMATS)}, not {fmt!r}"
        raise UsageError(message)
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 10 <= dpi <= 2400:
        message = f"dpi must be a whole number from 10 to 2400, not {dpi!r}"
        raise UsageError(message)
    # Here, not at the top: matplotlib only when a curve figure is drawn.
    import matplotlib

    settings: dict[str, Any] = {
        "svg.fonttype": "none",
        "pdf.fonttype": 42,
        "svg.hashsalt": "mueval",
        "text.parse_math": False,
    }
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)

    def draw(path: Path) -> None:
        # matplotlib's stubs name every rc key as a literal; these are among them.
        with matplotlib.rc_context(settings):  # type: ignore[arg-type]
            figure.savefig(path, format=fmt, dpi=dpi, metadata=metadata)

    return write_atomic(folder, f"curve.{fmt}", draw)
