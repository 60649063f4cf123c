"""Build the report of one run folder: figures on disk plus one self-contained page.

Page one is a summary a reader takes in at once: the strategy x classifier grid
of pooled coverage with its interval, set size and the share of users below
target by the exact per-user test (at the run's level after its correction),
then the warnings and
page one's figures (:mod:`mueval.report.page_one`). After it, in order: the run (dataset provenance, configuration, versions), the
summary table, the comparison of strategies (the study's t-test and two tests
that respect the resampling), set size across classifiers, the per-user picture
the study lacks, then one collapsible section per (strategy, classifier), linked
from the grid, with the study's pictures and the set diagnostics the correlation
review asks for (drawn with ``figures="all"`` only: they are most of the build
time and of the page's size).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from joblib.executor import get_memmapping_executor
from matplotlib.figure import Figure
from tqdm import tqdm

from mueval.comparison.significance import (
    STUDY_TEST,
    compare_strategies,
    per_iteration_values,
    per_user_values,
)
from mueval.comparison.tables import table_notes
from mueval.data.order import natural_key
from mueval.errors import UsageError
from mueval.files import check_inside, write_atomic
from mueval.guarantees.adjustment import verdict_label
from mueval.guarantees.compute import compute_guarantees
from mueval.guarantees.records import Guarantees
from mueval.guarantees.run_warnings import by_severity
from mueval.guarantees.verdict_settings import verdict_settings
from mueval.metrics.set_sizes import set_statistics
from mueval.names import (
    CLASSIFIER_NAMES,
    CLASSIFIERS,
    FULL_DIAGNOSTICS,
    REPORT_SUMMARY_METRICS,
    STRATEGIES,
    STRATEGY_NAMES,
    is_model_name,
    is_strategy_code,
    strategy_name,
)
from mueval.report import figures as F
from mueval.report import setstats as S
from mueval.report.conditional import conditional_coverage_section, validity_section
from mueval.report.folder import real_folder
from mueval.report.html import (
    Section,
    figure_html,
    list_html,
    note_html,
    render_page,
    table_html,
    warning_html,
)
from mueval.report.page_one import (
    FIGURE_LEVELS,
    grid_html,
    overview_figure,
    pair_anchor,
    strategy_users_figure,
    warnings_html,
)
from mueval.report.side_by_side import side_by_side_section
from mueval.runfolder import RunFolder, RunFolderError

__all__ = ["CLASSIFIER_NAMES", "STRATEGY_NAMES", "BuildResult", "FigureStyle", "build_report"]

# The study's metrics, then the conditional-coverage diagnostics a run adds to
# summary.csv (--diagnostics basic/full).
_SUMMARY_METRICS = REPORT_SUMMARY_METRICS
_DIAGNOSTIC_METRICS = FULL_DIAGNOSTICS
# Per-user matrices on a handful of rows are noise; such users are left out of the
# pooling check (and the page says how many were).
_MIN_USER_ROWS = 20


# Column headers of the comparison and per-user tables.
_COMPARE_HEADER = ["strategy A", "strategy B", "mean A", "mean B", "test", "statistic", "df"]
_COMPARE_HEADER += ["p", "level", "n", "note"]
_PER_USER_HEADER = ["strategy", "pooled coverage (all rows)", "users", "users with mean < target"]
_PER_USER_HEADER += ["lowest user", "users with mean < target (coverage)"]


def _token(code: str, known: Sequence[str], kind: str) -> str:
    """The code as it is spelled in mueval's own list, for use in a file name.

    File names are never built from text read from a run folder: the run folder's
    value only selects an entry of ``known``.
    """
    for candidate in known:
        if code == candidate:
            return candidate
    msg = f"{kind} {code!r} is not a {kind} code of mueval (expected one of {', '.join(known)})"
    raise RunFolderError(msg[:300])


def _stoken(code: str) -> str:
    """A built-in code as mueval spells it, or a strategy of the user's, whose code
    :func:`~mueval.names.is_strategy_code` keeps to lower-case letters, digits, ``_``
    and ``-`` (the reader has checked it: :mod:`mueval.runfolder.consistency`)."""
    if code not in STRATEGIES and is_strategy_code(code):
        return code
    return _token(code, STRATEGIES, "strategy")


def _ctoken(code: str) -> str:
    """A built-in code as mueval spells it, or a user model's name, which
    :func:`~mueval.names.is_model_name` keeps to letters, digits, ``_`` and ``-``
    (the reader has checked it: :mod:`mueval.runfolder.consistency`)."""
    if code not in CLASSIFIERS and is_model_name(code):
        return code
    return _token(code, CLASSIFIERS, "classifier")


def _sname(code: str) -> str:
    return strategy_name(code)


def _cname(code: str) -> str:
    return CLASSIFIER_NAMES.get(code, code)


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
    warnings: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


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


class _Figures:
    """Saves figures under ``out/figures`` and returns their embedded HTML."""

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
        path = F.save_figure(fig, stem, fmt=self.style.fmt, dpi=self.style.dpi)
        self.paths.append(path)
        return figure_html(path, alt=caption, caption=caption, shown=shown)


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


def _run_section(run: RunFolder) -> Section:
    ds = run.run.get("dataset", {})
    body = [
        "<h3>Dataset and provenance</h3>",
        table_html(["field", "value"], [[k, v] for k, v in ds.items()]),
        "<h3>Configuration</h3>",
        table_html(
            ["setting", "value"],
            [
                [k, ", ".join(map(str, v)) if isinstance(v, list) else v]
                for k, v in run.config.items()
            ],
        ),
        "<h3>Package versions</h3>",
        table_html(
            ["package", "version"], [[k, v] for k, v in run.run.get("versions", {}).items()]
        ),
        "<h3>Run</h3>",
        table_html(
            ["field", "value"],
            [
                ["run folder", str(run.path)],
                ["format_version", run.run.get("format_version")],
                ["created", run.run.get("created", "")],
                ["classes (index order)", ", ".join(run.classes)],
                *[[f"timing {k}", v] for k, v in run.run.get("timings", {}).items()],
            ],
        ),
    ]
    return Section("The run", "run", body)


def _metric_table(
    sm: pd.DataFrame,
    names: tuple[str, ...],
    strategies: list[str],
    classifiers: list[str],
    fmt: str = ".3f",
) -> tuple[list[str], list[list[object]]]:
    """Rows of mean ± SD per (strategy, classifier) for the ``names`` present in summary.csv."""
    metrics = [m for m in names if m in set(sm["metric"])]
    rows = []
    for s in strategies:
        for c in classifiers:
            sub = sm[(sm.strategy == s) & (sm.classifier == c)].set_index("metric")
            if sub.empty:
                continue
            cells = [
                f"{sub.loc[m, 'mean']:{fmt}} ± {sub.loc[m, 'sd']:{fmt}}" if m in sub.index else ""
                for m in metrics
            ]
            rows.append([_sname(s), _cname(c), int(sub["n"].iloc[0]), *cells])
    return metrics, rows


def _summary_section(run: RunFolder, strategies: list[str], classifiers: list[str]) -> Section:
    metrics, rows = _metric_table(run.summary, _SUMMARY_METRICS, strategies, classifiers)
    body = [
        note_html(
            "Mean ± sample SD over iterations (summary.csv), fractions not percent. "
            "Per-user strategies average users within each iteration first."
        ),
        table_html(["strategy", "classifier", "n", *metrics], rows),
    ]
    # HSIC and ERT are of the order of 1e-3: significant digits, not decimals.
    diagnostics, diag_rows = _metric_table(
        run.summary, _DIAGNOSTIC_METRICS, strategies, classifiers, fmt=".3g"
    )
    if diagnostics:
        body += [
            note_html(
                "Conditional-coverage diagnostics, computed on the test rows of each "
                "iteration pooled over users, then mean ± SD over iterations: coverage gap "
                "and weighted coverage gap with users and with classes as the groups, HSIC "
                "between set size and coverage"
                + (
                    ", worst-slab coverage (compare it with the pooled coverage) and ERT"
                    if "wsc" in diagnostics
                    else ""
                )
                + "."
            ),
            table_html(["strategy", "classifier", "n", *diagnostics], diag_rows),
        ]
    return Section("Summary", "summary", body)


def _comparison_section(
    run: RunFolder, figs: _Figures, strategies: list[str], classifiers: list[str], target: float
) -> tuple[Section, pd.DataFrame]:
    splits = run.splits[
        run.splits.strategy.isin(strategies) & run.splits.classifier.isin(classifiers)
    ]
    preds = run.predictions[
        run.predictions.strategy.isin(strategies) & run.predictions.classifier.isin(classifiers)
    ]
    table = compare_strategies(splits, preds, run.n_rows, metric="coverage", strategies=strategies)
    per_it = per_iteration_values(splits, "coverage")
    # Cautions (few iterations) and library warnings: said once above the tables.
    cautions = [
        warning_html(n) if n.startswith("caution") else note_html(n) for n in table_notes(table)
    ]
    body = [
        note_html(
            "Three tests per pair, each named in the table. The study's own test (Welch's "
            "t-test over the per-iteration coverages, stars as in the study: ns p > 0.05, * <= 0.05, "
            "** <= 0.01, *** <= 0.001, **** <= 0.0001) treats the iterations as independent, "
            "although they reuse overlapping data, so it overstates significance; the box plots "
            "carry its stars only to reproduce the study's figure. The corrected resampled t-test "
            "(Nadeau and Bengio: variance inflated by 1/J + n_test/n_train, paired by iteration) and "
            "the Wilcoxon signed-rank test over users (paired by user, on each user's mean coverage) "
            "are the ones to read. No correction for multiple comparisons."
        ),
        *cautions,
    ]
    for c in classifiers:
        values = {}
        for s in strategies:
            v = per_it[(per_it.strategy == s) & (per_it.classifier == c)]["value"].to_numpy()
            if v.size:
                values[_sname(s)] = v
        if not values:
            continue
        sub = table[(table.classifier == c) & (table.test == STUDY_TEST)]
        comps = [(_sname(r.strategy_a), _sname(r.strategy_b), r.stars) for r in sub.itertuples()]
        fig = partial(
            F.coverage_boxplot_figure,
            values,
            target=target,
            comparisons=comps,
            title=figs.title(
                f"Coverage per iteration, {_cname(c)}\n(stars: the study's Welch t-test)"
            ),
        )
        body.append(
            figs.add(
                fig,
                f"coverage_box_{_ctoken(c)}",
                f"Coverage per iteration across strategies, {_cname(c)}; dashed: target "
                f"{target:.2f}; stars: the study's Welch t-test",
            )
        )
        rows = [
            [
                _sname(r.strategy_a),
                _sname(r.strategy_b),
                r.mean_a,
                r.mean_b,
                r.test,
                r.statistic,
                r.df,
                r.p_value,
                f"{r.stars} (caution: {r.n} iterations)" if r.caution else r.stars,
                r.n,
                r.note,
            ]
            for r in table[table.classifier == c].itertuples()
        ]
        body.append(
            table_html(
                _COMPARE_HEADER,
                rows,
                caption=f"Coverage, {_cname(c)}",
            )
        )
    return Section("Comparing strategies (coverage)", "compare", body), table


def _setsize_section(
    run: RunFolder, figs: _Figures, strategies: list[str], classifiers: list[str]
) -> Section:
    sm = run.summary[
        (run.summary.metric == "setsize")
        & run.summary.strategy.isin(strategies)
        & run.summary.classifier.isin(classifiers)
    ].copy()
    body: list[str] = []
    if sm.empty:
        body.append(warning_html("summary.csv has no setsize rows for these strategies."))
    else:
        sm["strategy_label"] = sm.strategy.map(_sname)
        sm["classifier_label"] = sm.classifier.map(_cname)
        fig = partial(
            F.setsize_lollipop_figure,
            sm,
            title=figs.title("Set size across classifiers and strategies"),
        )
        body.append(
            figs.add(
                fig,
                "setsize_lollipop",
                "Mean set size ± SD over iterations, per classifier and strategy",
            )
        )
    return Section("Set size across classifiers", "setsize", body)


def per_user_tables(
    run: RunFolder,
    pairs: dict[tuple[str, str], np.ndarray],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each user's coverage and set size (mean and SD over iterations) for ``pairs``.

    Read from the per-user rows of ``splits.parquet`` (a split's coverage and set
    size over its user's test rows), which the run wrote as it went; a pair with
    no per-user split (MM, whose splits pool users) gets its table from its
    predictions, grouped by each test row's own user once for all such pairs.
    The values equal those grouped from the predictions for every pair (up to
    the rounding of a mean).

    Parameters
    ----------
    run : RunFolder
    pairs : dict
        (strategy, classifier) -> positions of its rows in ``run.predictions``.

    Returns
    -------
    coverage, setsize : DataFrame
        Columns strategy, classifier, user, value, sd, n (iterations), as
        :func:`mueval.comparison.significance.per_user_values`.
    """
    splits = run.splits
    keys = pd.MultiIndex.from_tuples(list(pairs), names=["strategy", "classifier"])
    in_pairs = pd.MultiIndex.from_arrays([splits.strategy, splits.classifier]).isin(keys)
    per_user = splits[in_pairs & splits["user"].notna()]
    have = set(zip(per_user.strategy, per_user.classifier, strict=True))
    lacking = [pair for pair in pairs if pair not in have]
    tables = []
    for metric in ("coverage", "setsize"):
        found = [per_user_values(per_user, None, metric)] if len(per_user) else []
        if lacking:
            rows = np.sort(np.concatenate([pairs[pair] for pair in lacking]))
            found.append(per_user_values(splits.iloc[:0], run.predictions.iloc[rows], metric))
        table = pd.concat(found, ignore_index=True) if found else None
        if table is None:
            table = per_user_values(splits.iloc[:0], run.predictions.iloc[:0], metric)
        tables.append(table)
    return tables[0], tables[1]


def _per_user_section(
    run: RunFolder,
    figs: _Figures,
    strategies: list[str],
    classifiers: list[str],
    target: float,
    pairs: dict[tuple[str, str], np.ndarray],
) -> tuple[Section, list[str]]:
    cov, size = per_user_tables(run, pairs)
    covered = run.predictions["covered"].to_numpy()
    warnings: list[str] = []
    body = [
        note_html(
            "Split conformal coverage is marginal: it holds on average over the rows a strategy "
            "pools, not for each user. Each point is one user's coverage (rows of that user, mean "
            "over iterations, bars ± SD); circled points have a mean under the target, which "
            "is a point estimate, not the verdict 'below target' of the summary. For MM the "
            "user is each test row's own user."
        )
    ]
    for c in classifiers:
        cu = cov[cov.classifier == c].copy()
        if cu.empty:
            continue
        order = {st: i for i, st in enumerate(strategies)}
        cu = cu.sort_values("strategy", key=lambda col: col.map(order), kind="stable")
        size = size.sort_values("strategy", key=lambda col: col.map(order), kind="stable")
        cu["strategy_label"] = cu.strategy.map(_sname)
        fig = partial(
            F.per_user_figure,
            cu,
            target=target,
            ylabel="coverage (mean over iterations)",
            title=figs.title(f"Coverage per user, {_cname(c)}"),
        )
        body.append(
            figs.add(
                fig,
                f"per_user_coverage_{_ctoken(c)}",
                f"Coverage per user and strategy, {_cname(c)}",
            )
        )
        su = size[size.classifier == c].copy()
        su["strategy_label"] = su.strategy.map(_sname)
        fig = partial(
            F.per_user_figure,
            su,
            ylabel="set size (mean over iterations)",
            title=figs.title(f"Set size per user, {_cname(c)}"),
        )
        body.append(
            figs.add(
                fig,
                f"per_user_setsize_{_ctoken(c)}",
                f"Prediction set size per user and strategy, {_cname(c)}",
            )
        )
        rows = []
        for s in strategies:
            sub = cu[cu.strategy == s]
            if sub.empty:
                continue
            pooled = float(covered[pairs[(s, c)]].mean())
            below = sub[sub.value < target].sort_values("value")
            listed = ", ".join(
                f"{u} ({v:.3f})" for u, v in zip(below.user, below.value, strict=True)
            )
            rows.append(
                [_sname(s), pooled, len(sub), len(below), float(sub.value.min()), listed or "none"]
            )
            if pooled >= target and len(below):
                text = (
                    f"{_sname(s)}, {_cname(c)}: pooled coverage {pooled:.3f} meets the target "
                    f"{target:.2f}, but {len(below)} of {len(sub)} users have a mean < target "
                    f"(lowest {float(below.value.min()):.3f}; a point estimate, not the "
                    "per-user test's verdict)."
                )
                warnings.append(text)
                body.append(warning_html(text))
        body.append(
            table_html(
                _PER_USER_HEADER,
                rows,
                caption=f"Who the marginal guarantee fails, {_cname(c)}",
            )
        )
    return Section("Per user: coverage and set size", "per-user", body), warnings


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


@dataclass
class PairRows:
    """One (strategy, classifier)'s test rows as arrays: what a worker process
    drawing its section receives (arrays pickle in one copy each; the rows'
    Python lists, one object a row, do not).

    Attributes
    ----------
    classes : list of str
        The run's classes, in run.json's order (the columns below).
    sets : ndarray of bool, shape (n, K)
    y, yp : ndarray of int, shape (n,)
        True and predicted class indices.
    proba : ndarray of float, shape (n, K)
    users : ndarray, shape (n,)
        Each row's own user.
    n_iterations : int
    """

    classes: list[str]
    sets: np.ndarray
    y: np.ndarray
    yp: np.ndarray
    proba: np.ndarray
    users: np.ndarray
    n_iterations: int


def set_indicators(run: RunFolder, pred_sets: pd.Series) -> np.ndarray:
    """Prediction sets (lists of class names) as indicators, shape (n, K).

    What :meth:`RunFolder.set_matrix` returns, with its error for a name not
    among the classes, but from one array of every member rather than row by row.
    """
    n, k = len(pred_sets), len(run.classes)
    out = np.zeros((n, k), dtype=bool)
    values = pred_sets.to_numpy()
    lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=n)
    if lengths.sum() == 0:
        return out
    flat = np.concatenate(list(values)).astype(object, copy=False)
    codes = _codes(run.classes, flat)
    if (codes < 0).any():
        name = flat[np.flatnonzero(codes < 0)[0]]
        msg = (
            f"{run.path / 'predictions.parquet'}: prediction set holds "
            f"{name!r}, expected one of {run.classes}"
        )
        raise RunFolderError(msg)
    out[np.repeat(np.arange(n), lengths), codes] = True
    return out


def _codes(classes: Sequence[str], names: np.ndarray) -> np.ndarray:
    """The index of each name in ``classes``, -1 for a name not among them.

    A dictionary look-up per name: pandas' indexer would first copy the names
    into an index of its own, which takes longer than the look-ups.
    """
    lookup = {name: i for i, name in enumerate(classes)}
    return np.fromiter((lookup.get(n, -1) for n in names), dtype=np.int64, count=len(names))


def _class_codes(run: RunFolder, names: pd.Series) -> np.ndarray:
    """Class names as indices in run order (:meth:`RunFolder.class_indices`, at once)."""
    values = names.to_numpy(dtype=object)
    codes = _codes(run.classes, values)
    if (codes < 0).any():
        unknown = sorted(set(values[codes < 0]))
        msg = (
            f"{run.path / 'predictions.parquet'}: expected class names from run.json "
            f"{run.classes}, found {unknown}"
        )
        raise RunFolderError(msg)
    return codes


@dataclass
class _RunArrays:
    """Every prediction row's set, labels and probabilities as arrays, made once
    for all sections (row by row, per section, it took seconds at 20 iterations)."""

    sets: np.ndarray
    y: np.ndarray
    yp: np.ndarray
    proba: np.ndarray


def _run_arrays(run: RunFolder) -> _RunArrays:
    p = run.predictions
    k = len(run.classes)
    vectors = p["proba"].to_numpy()
    lengths = np.fromiter((len(v) for v in vectors), dtype=np.int64, count=len(vectors))
    wrong = np.flatnonzero(lengths != k)
    if wrong.size:
        first = p.iloc[wrong[0]]
        bad = lengths[p["strategy"].eq(first["strategy"]) & p["classifier"].eq(first["classifier"])]
        msg = (
            f"{run.path / 'predictions.parquet'}: proba of {first['strategy']}/"
            f"{first['classifier']}: expected vectors of length {k} (the classes of "
            f"run.json), found lengths {sorted(set(bad.tolist()) - {k})}"
        )
        raise RunFolderError(msg)
    proba = np.stack(vectors).astype(float) if len(vectors) else np.zeros((0, k))
    return _RunArrays(
        set_indicators(run, p["pred_set"]),
        _class_codes(run, p["y_true"]),
        _class_codes(run, p["y_pred"]),
        proba,
    )


def pair_rows(run: RunFolder, rows: np.ndarray, arrays: _RunArrays | None = None) -> PairRows:
    """The rows at positions ``rows`` of ``run.predictions`` (one (strategy,
    classifier)'s) as arrays; from ``arrays`` when given (made once for the run)."""
    arrays = arrays if arrays is not None else _run_arrays(run)
    sub = run.predictions.iloc[rows]
    return PairRows(
        list(run.classes),
        arrays.sets[rows],
        arrays.y[rows],
        arrays.yp[rows],
        arrays.proba[rows],
        sub["userid"].to_numpy(dtype=object),
        int(sub["iteration"].nunique()),
    )


def _pair_data(rows: PairRows, s: str, c: str, n_boot: int, seed: int) -> tuple[_Pair, str]:
    label = f"{_sname(s)}, {_cname(c)}"
    stem = f"{_stoken(s)}_{_ctoken(c)}"
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


def _study_pictures(figs: _Figures, p: _Pair, top_sets: int, min_count: int) -> list[str]:
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


def _membership(figs: _Figures, p: _Pair) -> tuple[list[str], np.ndarray, object]:
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


def _directional(figs: _Figures, p: _Pair) -> tuple[list[str], np.ndarray]:
    """The soft confusion and coverage confusion matrices."""
    sets, y, proba, classes, label, stem = p.sets, p.y, p.proba, p.classes, p.label, p.stem
    body: list[str] = []
    soft = S.soft_confusion(proba, y)
    slo, shi = p.bounds["soft"]
    body.append(
        figs.add(
            F.heatmap_figure(
                soft,
                classes,
                title=figs.title(f"Soft confusion E[p_b | y = a]\n{label}"),
                xlabel="predicted class b (mean probability)",
                ylabel="true class a",
                cbar_label="mean predicted probability of b",
                cmap="Blues",
                nan_label="no row of this true class",
                values_as_text=figs.vector,
            ),
            f"{stem}_soft_confusion",
            f"Soft confusion matrix, {label}: rows true class a, "
            "columns class b, from the classifier's probabilities",
        )
    )

    covc = S.coverage_confusion(sets, y)
    vlo, vhi = p.bounds["coverage confusion"]
    body.append(
        figs.add(
            F.heatmap_figure(
                covc,
                classes,
                title=figs.title(f"Coverage confusion P(b in S | y = a)\n{label}"),
                xlabel="class b in the set",
                ylabel="true class a",
                cbar_label="share of sets containing b",
                cmap="Purples",
                nan_label="no row of this true class",
                values_as_text=figs.vector,
            ),
            f"{stem}_coverage_confusion",
            f"Coverage confusion matrix, {label}: rows the true class a, columns the class b "
            "in the set; the diagonal is the class-wise coverage",
        )
    )

    p.intervals["soft"] = (soft, slo, shi)
    p.intervals["coverage confusion"] = (covc, vlo, vhi)
    return body, covc


def _pooled_against_users(
    p: _Pair, com: np.ndarray, phi: object, covc: np.ndarray
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


def _pair_section(
    rows: PairRows,
    figs: _Figures,
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


def _pair_rows(predictions: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """Row positions of each (strategy, classifier) in ``predictions``, found in one
    pass (comparing the text columns once per pair costs seconds on a large run)."""
    groups = predictions.groupby(["strategy", "classifier"], sort=False, observed=True)
    return {(str(s), str(c)): rows for (s, c), rows in groups.indices.items()}


def _pair_task(
    rows: PairRows, out: Path, s: str, c: str, options: dict[str, int], style: FigureStyle
) -> tuple[Section, list[str], list[Path]]:
    """One (strategy, classifier) section with its figures, in this process or a worker."""
    # Workers start a fresh interpreter: the non-interactive backend, and the same
    # settings build_report sets around the build.
    matplotlib.use("Agg")
    with matplotlib.rc_context({"text.parse_math": False}):
        figs = _Figures(out, style=style)
        sec, warnings = _pair_section(rows, figs, s, c, **options)
    return sec, warnings, figs.paths


class _PairDrawing:
    """The (strategy, classifier) sections with their figures (``figures="all"``).

    With more than one worker, every section is handed to the worker processes
    (loky) when this is made, largest first so that no worker is left alone with
    a long one at the end, each with its own rows only; the main process builds
    the rest of the page meanwhile, then :meth:`collect` takes the sections in
    grid order. With one, :meth:`collect` draws them in this process.
    """

    def __init__(
        self,
        run: RunFolder,
        out: Path,
        pairs: dict[tuple[str, str], np.ndarray],
        *,
        jobs: int,
        options: dict[str, int],
        style: FigureStyle,
    ) -> None:
        self.run, self.out, self.pairs = run, out, pairs
        self.options, self.style = options, style
        workers = min(len(pairs), (os.cpu_count() or 1) if jobs == -1 else jobs)
        self.futures: dict[tuple[str, str], Any] = {}
        self.arrays = _run_arrays(run) if pairs else None
        if workers > 1:
            # joblib's own factory of loky's one reusable executor: one made by
            # loky directly lacks what joblib's Parallel (the evaluation's tasks)
            # reads when it reuses it. No memmapping: the rows go pickled, as before.
            executor = get_memmapping_executor(workers, max_nbytes=None)
            for s, c in sorted(pairs, key=lambda pair: -len(pairs[pair])):
                rows = pair_rows(run, pairs[(s, c)], self.arrays)
                self.futures[(s, c)] = executor.submit(_pair_task, rows, out, s, c, options, style)

    def collect(self, bar: tqdm) -> list[tuple[Section, list[str], list[Path]]]:
        """Every pair's section, its notes and figure files, in grid order."""
        found = []
        for s, c in self.pairs:
            if self.futures:
                found.append(self.futures[(s, c)].result())
            else:
                rows = pair_rows(self.run, self.pairs[(s, c)], self.arrays)
                found.append(_pair_task(rows, self.out, s, c, self.options, self.style))
            bar.update()
        return found

    def cancel(self) -> None:
        """Drop the sections no worker has started (the build failed)."""
        for future in self.futures.values():
            future.cancel()


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
) -> BuildResult:
    """Write ``report.html`` and ``figures/*.svg`` (or ``.pdf``, ``.png``) under ``out``.

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

    Raises
    ------
    OutputError
        ``out`` or ``out/figures`` is a symbolic link or not a folder, a file to be
        replaced there is not a regular file, or a write would land outside ``out``.
    RunFolderError
        A strategy or classifier is not a code of mueval, or not in the run.
    """
    if figures not in FIGURE_LEVELS:
        msg = f"figures must be one of {', '.join(FIGURE_LEVELS)}, not {figures!r}"
        raise UsageError(msg)
    if jobs == 0 or jobs < -1:
        msg = f"jobs must be a positive number of processes or -1 (every core), not {jobs}"
        raise UsageError(msg)
    style = FigureStyle(figure_format, dpi, titles)
    with matplotlib.rc_context({"text.parse_math": False}):
        return _build(
            run,
            real_folder(Path(out)),
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


def _build(
    run: RunFolder,
    out: Path,
    *,
    strategies: Sequence[str] | None,
    classifiers: Sequence[str] | None,
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
    # In order of first appearance, as the run wrote them.
    present_s = [_stoken(str(s)) for s in pd.unique(run.predictions["strategy"])]
    present_c = [_ctoken(str(c)) for c in pd.unique(run.predictions["classifier"])]
    for name, asked, present in (
        ("strategy", strategies, present_s),
        ("classifier", classifiers, present_c),
    ):
        unknown = [a for a in (asked or []) if a not in present]
        if unknown:
            msg = f"{name} {unknown} not in run {run.path}; it has {present}"
            raise RunFolderError(msg)
    strategies = [_stoken(s) for s in strategies] if strategies else present_s
    classifiers = [_ctoken(c) for c in classifiers] if classifiers else present_c
    target = 1.0 - run.alpha
    # Section figures only for --figures all; page one's unless --figures none.
    figs = _Figures(out, enabled=figures == "all", style=style)
    page_figs = _Figures(out, enabled=figures != "none", style=style)
    rows = _pair_rows(run.predictions)
    # The sections in the order of the grid: strategies, then classifiers.
    pairs = {(s, c): rows[(s, c)] for s in strategies for c in classifiers if (s, c) in rows}
    drawing = None
    if figures == "all":
        # First, so that the workers draw while this process builds the rest.
        options = {"n_boot": n_boot, "seed": seed, "top_sets": top_sets, "min_count": min_count}
        drawing = _PairDrawing(run, out, pairs, jobs=jobs, options=options, style=style)
    try:
        guarantees = _guarantees(run)
        page_one = _page_one(run, page_figs, guarantees, strategies, classifiers, target)

        sections = [_run_section(run), _summary_section(run, strategies, classifiers)]
        side = side_by_side_section(run, others)
        if side is not None:
            sections.insert(0, side)
        comp_section, _ = _comparison_section(run, figs, strategies, classifiers, target)
        sections += [comp_section, _setsize_section(run, figs, strategies, classifiers)]
        # Its point-estimate shortfalls ("lowest 0.946") stay in the section: the
        # warnings on page one are the interval-driven ones.
        user_section, _ = _per_user_section(run, figs, strategies, classifiers, target, pairs)
        sections.append(user_section)
        sections += _conditional_sections(run, guarantees, strategies, classifiers, target)
        section_warnings: list[str] = []
        bar = tqdm(
            total=len(pairs), desc="report", unit="pair", disable=not progress, file=sys.stderr
        )
        if drawing is not None:
            drawn = drawing.collect(bar)
        else:
            drawn = []
            for s, c in pairs:
                drawn.append((*_light_pair_section(run, guarantees, s, c), []))
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
            f"{target:.2f}); strategies {', '.join(_sname(s) for s in strategies)}; classifiers "
            f"{', '.join(_cname(c) for c in classifiers)}."
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
    html_path = write_atomic(out, "report.html", lambda p: p.write_text(page, encoding="utf-8"))
    shown = by_severity(_shown_warnings(guarantees, strategies, classifiers))
    return BuildResult(html_path, figs.paths + page_figs.paths, shown, section_warnings)


def _shown_warnings(
    g: Guarantees, strategies: list[str], classifiers: list[str]
) -> list[dict[str, Any]]:
    """The run's warnings about the strategies and classifiers the report shows."""
    return [w for w in g.warnings if w["strategy"] in strategies and w["classifier"] in classifiers]


def _conditional_sections(
    run: RunFolder, g: Guarantees, strategies: list[str], classifiers: list[str], target: float
) -> list[Section]:
    """Coverage per class and cohort, and validity per user (when present)."""

    def name(s: str, c: str) -> tuple[str, str]:
        return _sname(s), _cname(c)

    found = [
        conditional_coverage_section(
            g.conditional_coverage, run.config, strategies, classifiers, target=target, name=name
        ),
        validity_section(g.user_validity, strategies, classifiers, name=name),
    ]
    return [s for s in found if s is not None]


def _guarantees(run: RunFolder) -> Guarantees:
    """The run's per-user guarantees; computed when the folder object lacks them."""
    if run.user_coverage is not None and run.coverage_summary is not None:
        return Guarantees(
            run.user_coverage,
            run.coverage_summary,
            list(run.warnings or []),
            run.conditional_coverage,
            run.user_validity,
            run.user_cohorts,
        )
    return compute_guarantees(
        run.predictions,
        run.splits,
        alpha=run.alpha,
        n_classes=len(run.classes),
        classes=run.classes,
        config=run.config,
    )


#: The one definition of "below target" on the page (and in `mueval report`'s output).
_TERMS = (
    "Terms: 'below target' on this page means one thing: the user is {verdict} by the "
    "exact per-user test (the 'below' column of user_coverage.csv), as counted in the grid, "
    "the warnings and each section's verdicts. 'Mean < target' (the per-user section) counts "
    "users whose mean coverage over iterations is under the target: a point estimate, "
    "shown beside the verdict, never called 'below target'. 'Interval below' (coverage per "
    "class or cohort) marks a group's whole Clopper-Pearson interval under the target."
)


def _page_one(
    run: RunFolder,
    figs: _Figures,
    g: Guarantees,
    strategies: list[str],
    classifiers: list[str],
    target: float,
) -> list[str]:
    """The grid, the warnings, then page one's figures (if asked for)."""
    keep = g.coverage_summary.strategy.isin(strategies) & g.coverage_summary.classifier.isin(
        classifiers
    )
    summary = g.coverage_summary[keep]
    sizes = set_statistics(run.predictions, n_classes=len(run.classes))
    warnings = _shown_warnings(g, strategies, classifiers)
    settings = verdict_settings(run.config)
    verdict = verdict_label(settings["level"], settings["correction"], settings["family"])
    judged = g.user_coverage[g.user_coverage["below"].notna()]
    unjudged = {
        (s, c)
        for s, c in zip(g.user_coverage.strategy, g.user_coverage.classifier, strict=True)
        if not ((judged.strategy == s) & (judged.classifier == c)).any()
    }
    body = [
        '<h2 id="page-one">Summary</h2>',
        grid_html(
            summary,
            sizes,
            strategies,
            classifiers,
            target=target,
            name=lambda s, c: (_sname(s), _cname(c)),
            verdict=verdict,
            unjudged=unjudged,
            warnings=warnings,
        ),
        note_html(
            f"A user is {verdict} when the exact test of its covered count (Beta-Binomial "
            "null: its calibration and test rows exchangeable; under UDM, UCM and UAM the "
            "exact law of the class-stratified split; iterations combined, then "
            "corrected across the users of the cell) rejects; no verdict for uxc, for MM under "
            "a cohort condition and for MAPIE's own aps, raps and top_k sets. Intervals are "
            "exact (Clopper-Pearson) on the test rows "
            "pooled over iterations, a description of the observed rate, not that test: "
            "iterations reuse rows, so they are on the narrow side; see the page "
            "per-user-guarantees of mueval's documentation (installed with mueval as "
            "mueval/_data/docs/per-user-guarantees.md). Click a cell for its section."
        ),
        note_html(_TERMS.format(verdict=verdict)),
        "<h2>Warnings</h2>",
        warnings_html(warnings, name=lambda s, c: (_sname(s), _cname(c))),
    ]
    body.append(
        figs.add(
            partial(
                overview_figure,
                summary,
                strategies,
                classifiers,
                target=target,
                slabel=_sname,
                clabel=_cname,
                title=figs.title("Pooled coverage with 95 % intervals"),
            ),
            "overview_coverage",
            "Pooled coverage with its 95 % interval, per strategy and classifier",
        )
    )
    users = g.user_coverage[g.user_coverage.classifier.isin(classifiers)]
    for s in strategies:
        sub = users[users.strategy == s]
        if sub.empty:
            continue
        fig = partial(
            strategy_users_figure,
            sub,
            classifiers,
            target=target,
            title=figs.title(f"Coverage per user, {_sname(s)}"),
            label=_cname,
        )
        body.append(
            figs.add(
                fig,
                f"user_coverage_{_stoken(s)}",
                f"Each user's coverage with its 95 % interval, {_sname(s)}",
            )
        )
    return body


def _verdict_text(below: object, p_adjusted: float) -> str:
    """A user's verdict for a table cell: below target with its adjusted p-value,
    nothing, or "no verdict"."""
    if below is None or below is pd.NA or (isinstance(below, float) and np.isnan(below)):
        return "no verdict"
    if bool(below):
        return f"below target (adjusted p {p_adjusted:.2g})"
    return ""


def _light_pair_section(run: RunFolder, g: Guarantees, s: str, c: str) -> tuple[Section, list[str]]:
    """A (strategy, classifier) section without figures: its users and their intervals."""
    label = f"{_sname(s)}, {_cname(c)}"
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
        for r in sub.itertuples(index=False)
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
