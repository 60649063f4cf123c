"""Build the report of one run folder: figures on disk plus one self-contained page.

Page one is a summary a reader takes in at once: the strategy x classifier grid
of pooled coverage with its interval, set size and the share of users below
target by the exact per-user test (at the run's level after its correction),
then the warnings and page one's figures (:mod:`mueval.report.page_one`). After
it, in order: the run-wide sections (:mod:`mueval.report.run_sections`: the run,
the summary table, the comparison of strategies, set size across classifiers,
the per-user picture the study lacks), then one collapsible section per
(strategy, classifier), linked from the grid (:mod:`mueval.report.pair_section`),
with the study's pictures and the set diagnostics the correlation review asks
for (drawn with ``figures="all"`` only, by :mod:`mueval.report.drawing`: they
are most of the build time and of the page's size).

This module owns the order of the page and the options of a build.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
from tqdm import tqdm

from mueval.cpus import check_jobs
from mueval.errors import UsageError
from mueval.files import write_atomic
from mueval.guarantees.run_warnings import by_severity
from mueval.names import CLASSIFIER_NAMES, STRATEGY_NAMES
from mueval.report import figures as F
from mueval.report.drawing import PairDrawing, pair_positions
from mueval.report.figure_set import FigureSet, FigureStyle
from mueval.report.folder import prepare_report_folder, real_folder, remove_stale_figures
from mueval.report.html import list_html, note_html, render_page
from mueval.report.labels import classifier_label, classifier_token, strategy_label, strategy_token
from mueval.report.page_one import FIGURE_LEVELS, page_one_body, shown_warnings
from mueval.report.pair_section import light_pair_section
from mueval.report.run_sections import (
    comparison_section,
    conditional_sections,
    per_user_section,
    run_guarantees,
    run_section,
    setsize_section,
    summary_section,
)
from mueval.report.side_by_side import side_by_side_section
from mueval.runfolder import RunFolder, RunFolderError

__all__ = ["CLASSIFIER_NAMES", "STRATEGY_NAMES", "BuildResult", "FigureStyle", "build_report"]


@dataclass
class BuildResult:
    """What :func:`build_report` wrote.

    Attributes
    ----------
    html : Path
        ``report.html``.
    figures : list of Path
        The figure files.
    warnings : list of dict
        The run's warnings for the strategies and classifiers shown, most severe
        first, as in ``run.json`` (``strategy, classifier, kind, message,
        severity``): the same severity the page shows.
    notes : list of str
        The sections' notes (point-estimate shortfalls and the like).
    """

    html: Path
    figures: list[Path] = field(default_factory=list)
    warnings: list[Mapping[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def build_report(
    run: RunFolder,
    out: str | Path,
    *,
    strategies: Sequence[str] | None = None,
    classifiers: Sequence[str] | None = None,
    n_boot: int = 200,
    seed: int = 0,
    top_sets: int = 20,
    min_count: int = 2,
    progress: bool = False,
    figures: str = "summary",
    others: Sequence[RunFolder] = (),
    jobs: int = 1,
    figure_format: str = "svg",
    dpi: int = F.DEFAULT_DPI,
    titles: bool = False,
    overwrite: bool = False,
) -> BuildResult:
    """Write ``report.html`` and ``figures/*.svg`` (or ``.pdf``, ``.png``) under ``out``.

    ``out`` is new, empty, or (with ``overwrite``) an earlier report and
    nothing else (:func:`~mueval.report.folder.prepare_report_folder`); the
    figures of the earlier report that this one does not draw again are
    removed, and no other file.

    Parameters
    ----------
    run : RunFolder
    out : str or Path
    strategies, classifiers : sequence of str, optional
        Codes to include; default every one in the run, in run order.
    n_boot, seed : int
        Bootstrap resamples and seed for the diagnostics' intervals.
    top_sets, min_count : int
        The multiset chart shows at most ``top_sets`` sets seen at least
        ``min_count`` times.
    progress : bool
        Show a progress bar on stderr over the (strategy, classifier) sections,
        which draw most of the figures.
    figures : {"summary", "none", "all"}
        ``summary``: page one's figures (pooled coverage, and one
        coverage-per-user figure per strategy); ``none``: no figure; ``all``:
        every section's figures as well (the study's pictures and the set
        diagnostics of each (strategy, classifier), the slow part).
    others : sequence of RunFolder
        Other runs of the same dataset and alpha (a blocked split beside a
        random one, say): a "Runs side by side" section compares their per-user
        guarantees with this run's.
    jobs : int, default 1
        Worker processes drawing the (strategy, classifier) sections with
        ``figures="all"`` (loky; -1: every core). The page is the same for any value.
    figure_format : {"svg", "pdf", "png"}, default "svg"
        The figures' files: vector (SVG or PDF, for print and editing) or PNG at
        ``dpi``. The page embeds each SVG or PNG file, and an SVG drawing of
        each PDF (no browser shows a PDF in an image).
    dpi : int, default 300
        Resolution of PNG files.
    titles : bool, default False
        Draw a title in each figure. Without, the page's caption (the figure's
        ``<figcaption>``) is its only title, as a paper wants it.
    overwrite : bool, default False
        Replace an earlier report in ``out`` (and only one).

    Raises
    ------
    OutputError
        ``out`` or ``out/figures`` is a symbolic link or not a folder; ``out``
        holds anything but an earlier report, or an earlier report without
        ``overwrite``; a file to be replaced there is not a regular file, or a
        write would land outside ``out``.
    RunFolderError
        A strategy or classifier is not a code of mueval, or not in the run.
    """
    if figures not in FIGURE_LEVELS:
        msg = f"figures must be one of {', '.join(FIGURE_LEVELS)}, not {figures!r}"
        raise UsageError(msg)
    check_jobs(jobs)
    style = FigureStyle(figure_format, dpi, titles)
    # Checked before the folder is touched: a refused report writes nothing.
    strategies, classifiers = _chosen(run, strategies, classifiers)
    out = prepare_report_folder(out, overwrite=overwrite)
    with matplotlib.rc_context({"text.parse_math": False}):
        result = _build(
            run,
            real_folder(out),
            strategies=strategies,
            classifiers=classifiers,
            n_boot=n_boot,
            seed=seed,
            top_sets=top_sets,
            min_count=min_count,
            progress=progress,
            figures=figures,
            others=others,
            jobs=jobs,
            style=style,
        )
    remove_stale_figures(out, result.figures)
    return result


def _chosen(
    run: RunFolder, strategies: Sequence[str] | None, classifiers: Sequence[str] | None
) -> tuple[list[str], list[str]]:
    """The strategy and classifier codes the report shows: those asked for, each in
    the run, or every one of the run in the order it wrote them.

    Raises
    ------
    RunFolderError
        A code asked for is not in the run, or the run holds a name that is no
        code of mueval's (figures are named by the codes).
    """
    # In order of first appearance, as the run wrote them.
    present_s = [strategy_token(str(s)) for s in pd.unique(run.predictions["strategy"])]
    present_c = [classifier_token(str(c)) for c in pd.unique(run.predictions["classifier"])]
    for name, asked, present in (
        ("strategy", strategies, present_s),
        ("classifier", classifiers, present_c),
    ):
        unknown = [a for a in (asked or []) if a not in present]
        if unknown:
            msg = f"{name} {unknown} not in run {run.path}; it has {present}"
            raise RunFolderError(msg)
    return (
        [strategy_token(s) for s in strategies] if strategies else present_s,
        [classifier_token(c) for c in classifiers] if classifiers else present_c,
    )


def _build(
    run: RunFolder,
    out: Path,
    *,
    strategies: list[str],
    classifiers: list[str],
    n_boot: int,
    seed: int,
    top_sets: int,
    min_count: int,
    progress: bool,
    figures: str,
    others: Sequence[RunFolder] = (),
    jobs: int = 1,
    style: FigureStyle | None = None,
) -> BuildResult:
    style = style if style is not None else FigureStyle()
    target = 1.0 - run.alpha
    # Section figures only for --figures all; page one's unless --figures none.
    figs = FigureSet(out, enabled=figures == "all", style=style)
    page_figs = FigureSet(out, enabled=figures != "none", style=style)
    rows = pair_positions(run.predictions)
    # The sections in the order of the grid: strategies, then classifiers.
    pairs = {(s, c): rows[(s, c)] for s in strategies for c in classifiers if (s, c) in rows}
    drawing = None
    if figures == "all":
        # First, so that the workers draw while this process builds the rest.
        options = {"n_boot": n_boot, "seed": seed, "top_sets": top_sets, "min_count": min_count}
        drawing = PairDrawing(run, out, pairs, jobs=jobs, options=options, style=style)
    try:
        guarantees = run_guarantees(run)
        page_one = page_one_body(run, page_figs, guarantees, strategies, classifiers, target)

        sections = [run_section(run), summary_section(run, strategies, classifiers)]
        side = side_by_side_section(run, others)
        if side is not None:
            sections.insert(0, side)
        comp_section, _ = comparison_section(run, figs, strategies, classifiers, target)
        sections += [comp_section, setsize_section(run, figs, strategies, classifiers)]
        # Its point-estimate shortfalls ("lowest 0.946") stay in the section: the
        # warnings on page one are the interval-driven ones.
        user_section, _ = per_user_section(run, figs, strategies, classifiers, target, pairs)
        sections.append(user_section)
        sections += conditional_sections(run, guarantees, strategies, classifiers, target)
        section_warnings: list[str] = []
        bar = tqdm(
            total=len(pairs), desc="report", unit="pair", disable=not progress, file=sys.stderr
        )
        if drawing is not None:
            drawn = drawing.collect(bar)
        else:
            drawn = []
            for s, c in pairs:
                drawn.append((*light_pair_section(run, guarantees, s, c), []))
                bar.update()
        bar.close()
    except BaseException:
        if drawing is not None:
            drawing.cancel()
        raise
    for sec, w, paths in drawn:
        sec.collapsible = True
        sections.append(sec)
        section_warnings += w
        figs.paths += paths

    ds = run.run.get("dataset", {})
    title = f"mueval report: {ds.get('name', run.path.name)}"
    intro = [
        note_html(
            f"Dataset {ds.get('name', '?')} ({ds.get('n_rows', '?')} rows, {ds.get('n_users', '?')} "
            f"users, {len(run.classes)} classes); alpha = {run.alpha} (target coverage "
            f"{target:.2f}); strategies {', '.join(strategy_label(s) for s in strategies)}; classifiers "
            f"{', '.join(classifier_label(c) for c in classifiers)}."
        ),
        *page_one,
    ]
    if section_warnings:
        intro.append(
            "<h2>Notes from the sections</h2>"
            + note_html(
                "The sections' own notes; a user with a 'mean < target' there is a point "
                "estimate, not the per-user test's verdict (see Terms above)."
            )
            + list_html(section_warnings)
        )
    page = render_page(title, intro, sections)

    def write(path: Path) -> None:
        path.write_text(page, encoding="utf-8")

    html_path = write_atomic(out, "report.html", write)
    shown = by_severity(shown_warnings(guarantees, strategies, classifiers))
    return BuildResult(html_path, figs.paths + page_figs.paths, shown, section_warnings)
