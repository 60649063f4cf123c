"""The run-wide sections of the report, after page one.

This module owns the sections about the whole run, in page order: the run
(dataset provenance, configuration, versions), the summary table, the comparison
of strategies, set size across classifiers, the per-user picture (with the
per-user tables it draws from), and the sections on conditional coverage and
validity; and the run's per-user guarantees they read (:func:`run_guarantees`).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any, cast

import numpy as np
import pandas as pd

from mueval.comparison.significance import (
    STUDY_TEST,
    compare_strategies,
    per_iteration_values,
    per_user_values,
)
from mueval.comparison.tables import table_notes
from mueval.guarantees.compute import compute_guarantees
from mueval.guarantees.records import Guarantees
from mueval.names import FULL_DIAGNOSTICS, REPORT_SUMMARY_METRICS
from mueval.report import figures as F
from mueval.report.conditional import conditional_coverage_section, validity_section
from mueval.report.figure_set import FigureSet
from mueval.report.html import Section, note_html, table_html, warning_html
from mueval.report.labels import classifier_label, classifier_token, strategy_label
from mueval.runfolder import RunFolder

__all__ = [
    "comparison_section",
    "conditional_sections",
    "per_user_section",
    "per_user_tables",
    "run_guarantees",
    "run_section",
    "setsize_section",
    "summary_section",
]

# The study's metrics, then the conditional-coverage diagnostics a run adds to
# summary.csv (--diagnostics basic/full).
_SUMMARY_METRICS = REPORT_SUMMARY_METRICS
_DIAGNOSTIC_METRICS = FULL_DIAGNOSTICS

# Column headers of the comparison and per-user tables.
_COMPARE_HEADER = ["strategy A", "strategy B", "mean A", "mean B", "test", "statistic", "df"]
_COMPARE_HEADER += ["p", "level", "n", "note"]
_PER_USER_HEADER = ["strategy", "pooled coverage (all rows)", "users", "users with mean < target"]
_PER_USER_HEADER += ["lowest user", "users with mean < target (coverage)"]


def run_section(run: RunFolder) -> Section:
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
            mean, sd = sub["mean"], sub["sd"]
            cells = [
                f"{mean.loc[m]:{fmt}} ± {sd.loc[m]:{fmt}}" if m in sub.index else ""
                for m in metrics
            ]
            rows.append([strategy_label(s), classifier_label(c), int(sub["n"].iloc[0]), *cells])
    return metrics, rows


def summary_section(run: RunFolder, strategies: list[str], classifiers: list[str]) -> Section:
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


def comparison_section(
    run: RunFolder, figs: FigureSet, strategies: list[str], classifiers: list[str], target: float
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
                values[strategy_label(s)] = v
        if not values:
            continue
        sub = table[(table.classifier == c) & (table.test == STUDY_TEST)]
        comps = [
            (strategy_label(r.strategy_a), strategy_label(r.strategy_b), r.stars)
            for r in cast("Iterable[Any]", sub.itertuples())
        ]
        fig = partial(
            F.coverage_boxplot_figure,
            values,
            target=target,
            comparisons=comps,
            title=figs.title(
                f"Coverage per iteration, {classifier_label(c)}\n(stars: the study's Welch t-test)"
            ),
        )
        body.append(
            figs.add(
                fig,
                f"coverage_box_{classifier_token(c)}",
                f"Coverage per iteration across strategies, {classifier_label(c)}; dashed: target "
                f"{target:.2f}; stars: the study's Welch t-test",
            )
        )
        rows = [
            [
                strategy_label(r.strategy_a),
                strategy_label(r.strategy_b),
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
            for r in cast("Iterable[Any]", table[table.classifier == c].itertuples())
        ]
        body.append(
            table_html(
                _COMPARE_HEADER,
                rows,
                caption=f"Coverage, {classifier_label(c)}",
            )
        )
    return Section("Comparing strategies (coverage)", "compare", body), table


def setsize_section(
    run: RunFolder, figs: FigureSet, strategies: list[str], classifiers: list[str]
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
        sm["strategy_label"] = sm.strategy.map(strategy_label)
        sm["classifier_label"] = sm.classifier.map(classifier_label)
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


def per_user_section(
    run: RunFolder,
    figs: FigureSet,
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
        cu["strategy_label"] = cu.strategy.map(strategy_label)
        fig = partial(
            F.per_user_figure,
            cu,
            target=target,
            ylabel="coverage (mean over iterations)",
            title=figs.title(f"Coverage per user, {classifier_label(c)}"),
        )
        body.append(
            figs.add(
                fig,
                f"per_user_coverage_{classifier_token(c)}",
                f"Coverage per user and strategy, {classifier_label(c)}",
            )
        )
        su = size[size.classifier == c].copy()
        su["strategy_label"] = su.strategy.map(strategy_label)
        fig = partial(
            F.per_user_figure,
            su,
            ylabel="set size (mean over iterations)",
            title=figs.title(f"Set size per user, {classifier_label(c)}"),
        )
        body.append(
            figs.add(
                fig,
                f"per_user_setsize_{classifier_token(c)}",
                f"Prediction set size per user and strategy, {classifier_label(c)}",
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
                [
                    strategy_label(s),
                    pooled,
                    len(sub),
                    len(below),
                    float(sub.value.min()),
                    listed or "none",
                ]
            )
            if pooled >= target and len(below):
                text = (
                    f"{strategy_label(s)}, {classifier_label(c)}: pooled coverage {pooled:.3f} meets the target "
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
                caption=f"Who the marginal guarantee fails, {classifier_label(c)}",
            )
        )
    return Section("Per user: coverage and set size", "per-user", body), warnings


def conditional_sections(
    run: RunFolder, g: Guarantees, strategies: list[str], classifiers: list[str], target: float
) -> list[Section]:
    """Coverage per class and cohort, and validity per user (when present)."""

    def name(s: str, c: str) -> tuple[str, str]:
        return strategy_label(s), classifier_label(c)

    found = [
        conditional_coverage_section(
            g.conditional_coverage, run.config, strategies, classifiers, target=target, name=name
        ),
        validity_section(g.user_validity, strategies, classifiers, name=name),
    ]
    return [s for s in found if s is not None]


def run_guarantees(run: RunFolder) -> Guarantees:
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
