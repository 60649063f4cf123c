"""The options of ``mueval evaluate``, ``report`` and ``compare``, declared once.

Each command takes one decorator (:func:`evaluate_options`,
:func:`report_options`, :func:`compare_options`) that applies its options in
the order ``--help`` lists them. The values offered come from
:mod:`mueval.names`, so that the command line, the Python API and the run
folder speak the same names. Nothing here imports pandas, scikit-learn or MAPIE:
``mueval --help`` starts at once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from mudata.cli_options import dataset_source_options, list_option, stack, table_option
from mueval.cpus import resolve_jobs, usable_cpus
from mueval.names import (
    BACKENDS,
    CLASSIFIERS,
    COMPARABLE_METRICS,
    COMPARE_ADJUSTMENTS,
    DEFAULT_STRATEGIES,
    DIAGNOSTIC_LEVELS,
    PAPER_FORMATS,
    PAPER_ROWS,
    SCORES,
    SMALL_CAL_POLICIES,
    SPLIT_METHODS,
    SPLIT_SEEDS,
    STRATEGIES,
    THRESHOLD_RULES,
    UKM_ASSIGN_RULES,
    USER_CORRECTIONS,
    USER_FAMILIES,
)
from mueval.strategies import BUILTIN_STRATEGIES

F = TypeVar("F", bound=Callable[..., Any])


def _cap_jobs(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
    """None (evaluate's default) and -1 are every usable CPU; 0 is refused; more than
    the CPU count is lowered to it (each worker holds the data: more only multiplies memory)."""
    if value == 0:
        message = "must be a positive number of worker processes, or -1 for every core"
        raise click.BadParameter(message, ctx=ctx, param=param)
    cpus = usable_cpus()
    jobs = resolve_jobs(value)
    if jobs > cpus:
        click.echo(
            f"warning: --jobs {value} is more than the {cpus} CPU(s) here; using {cpus} "
            f"(each worker holds its own copy of the data, so more would only add memory)",
            err=True,
        )
        return cpus
    return jobs


def _jobs_option(default: int | None, what: str) -> Callable[[F], F]:
    """``-j/--jobs``; ``default`` None is every CPU this process may use."""
    shown = (
        f"[default: every CPU this process may use, {usable_cpus()} here; mueval curve "
        "and report default to 1]"
        if default is None
        else f"[default: {default}; mueval evaluate defaults to every CPU]"
    )
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=-1),
        default=default,
        callback=_cap_jobs,
        help=f"Parallel worker processes (loky) {what}; -1 = every core. Results do not "
        f"depend on it. More than the CPU count is lowered to it, with a warning. {shown}",
    )


#: Worker processes of curve and report (evaluate's default differs: every core).
jobs_option = _jobs_option(1, "for the work that can be shared")

__all__ = [
    "compare_options",
    "evaluate_options",
    "figure_options",
    "jobs_option",
    "report_options",
    "table_options",
    "usable_cpus",
]

_STRATEGY_HELP = (
    "Evaluation strategy; repeat or give a comma list. "
    f"Codes: {', '.join(STRATEGIES)}; aliases: "
    + ", ".join(f"{a}={s.code}" for s in BUILTIN_STRATEGIES for a in s.aliases)
    + "; 'all'. "
    + " ".join(f"{s.code}: {s.help}" for s in BUILTIN_STRATEGIES)
    + " A strategy of your own: its import path module:attribute (a "
    "mueval.strategies.Strategy record). "
    f"[default: {','.join(DEFAULT_STRATEGIES)}]"
)


def strategy_option(help_text: str = _STRATEGY_HELP) -> Callable[[F], F]:
    """``-s/--strategy``: one or more strategies, as repeats or a comma list."""
    return list_option("--strategy", "-s", "strategies", help=help_text)


def classifier_option(default: str) -> Callable[[F], F]:
    """``-c/--classifier``: one or more classifiers; ``default`` says what none means here."""
    return list_option(
        "--classifier",
        "-c",
        "classifiers",
        help=f"Classifiers; repeat or comma list: {', '.join(CLASSIFIERS)}, all, or the "
        "name of a model of your own in the run. "
        f"[default: {default}; mueval curve takes one, rf by default]",
    )


def _included(what: str, where: str) -> str:
    """Help of -s in report and compare: which strategies of the run(s) are taken."""
    return (
        f"Strategies {what}, codes or aliases as for evaluate; repeat or comma list. "
        f"[default: every strategy in {where}]"
    )


#: ``mueval evaluate``: the data, what to evaluate, how, where the tasks run, the output.
evaluate_options = stack(
    click.option("--dataset", "dataset", metavar="NAME", help="A mudata dataset (e.g. wisdm)."),
    click.option(
        "--data",
        "data_file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Your own table, .parquet or .csv: a user column, a label column, every "
        "other column a numeric feature.",
    ),
    click.option("--user-col", default="userid", show_default=True, help="User column of --data."),
    click.option("--label-col", default="label", show_default=True, help="Label column of --data."),
    strategy_option(),
    list_option(
        "--classifier",
        "-c",
        "classifiers",
        help=f"Classifiers; repeat or comma list: {', '.join(CLASSIFIERS)}, all, cnn (a small "
        "1-D CNN, extra mueval[deep], with --input windows), or a model "
        "of your own as an import path module:attribute (a scikit-learn classifier class "
        "or a factory; NAME=module:attribute names it), e.g. "
        "sklearn.linear_model:LogisticRegression. [default: all; mueval curve takes one "
        "built-in, rf by default]",
    ),
    click.option(
        "--classifier-param",
        "classifier_params",
        multiple=True,
        metavar="NAME=VALUE",
        help="A keyword argument of the import-path models; repeat it, no comma lists (a "
        "TOML value may hold a comma). VALUE is a TOML literal: C=0.5, max_iter=500, "
        'solver="lbfgs", class_weight="balanced".',
    ),
    click.option(
        "--classifier-config",
        "classifier_config",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="A TOML file of named models, one table each: [NAME] with path = "
        '"module:attribute", optional params = { C = 0.5 } and scale = "minmax". '
        "They are evaluated beside -c's (the built-ins only when -c names them).",
    ),
    click.option(
        "--scale",
        type=click.Choice(("none", "minmax")),
        default="none",
        show_default=True,
        help="Your own models only: fit the protocol's min-max scaling first, or none "
        "(your Pipeline decides). The built-ins are always min-max scaled.",
    ),
    click.option(
        "--alpha",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.05,
        show_default=True,
        help="Miscoverage level (0.05 = 95% confidence).",
    ),
    click.option(
        "--iterations",
        type=click.IntRange(min=1),
        default=20,
        show_default=True,
        help="Repetitions; iteration i uses seed seed-base + i. (mueval curve defaults "
        "to 5: it fits models per target user and iteration.)",
    ),
    click.option(
        "--seed-base",
        type=int,
        default=100,
        show_default=True,
        help="Seed of iteration 0; iteration i uses seed-base + i (splits and models).",
    ),
    click.option(
        "--score",
        type=click.Choice(SCORES),
        default="lac",
        show_default=True,
        help="Conformity score (MAPIE's names; larger = stranger). lac: 1 - p(y), the "
        "protocol's. aps: probability of the classes ranked above y, plus p(y). raps: aps + "
        "lambda * max(0, rank(y) - k_reg): give --raps-lambda and --raps-k-reg, or use "
        "--threshold mapie for MAPIE 1.x's own tuned RAPS (refused otherwise). top_k: the "
        "rank of y.",
    ),
    click.option(
        "--raps-lambda",
        type=click.FloatRange(min=0),
        default=None,
        metavar="FLOAT",
        help="raps: the penalty lambda per rank beyond --raps-k-reg (Angelopoulos et al. "
        "try 0.001 to 0.5). [default: none; MAPIE 1.x tunes it, --threshold mapie only]",
    ),
    click.option(
        "--raps-k-reg",
        type=click.IntRange(min=0),
        default=None,
        metavar="INT",
        help="raps: the rank from which the penalty applies. [default: none; MAPIE 1.x "
        "tunes it, --threshold mapie only]",
    ),
    click.option(
        "--randomized/--no-randomized",
        default=False,
        show_default=True,
        help="aps, raps: break ties at random (subtract u * p(y), u uniform, seeded by "
        "the iteration), so tied scores no longer push coverage above 1 - alpha + "
        "1/(n+1). The default is deterministic (the study's numbers).",
    ),
    click.option(
        "--mondrian/--no-mondrian",
        default=False,
        show_default=True,
        help="Class-conditional (Mondrian) calibration: one threshold per class "
        "(the same as --condition class).",
    ),
    click.option(
        "--condition",
        metavar="class|cohort[:COL]|class+cohort[:COL]|cohorts:COL1,COL2,...",
        default=None,
        help="Conditional (Mondrian) calibration: one threshold per class, per cohort of "
        "users (COL: a user-level attribute such as an age band or a device, from --cohorts "
        "or a numeric column of the table, which then is no feature), or per cohort and "
        "class. cohorts:COL1,COL2,... covers every cohort of every column at once "
        "(overlapping cohorts; COL1*COL2 adds their intersections) by the conditional "
        "quantile regression of Gibbs, Cherian and Candes (2023). Coverage per class and "
        "cohort goes to conditional_coverage.csv. "
        "[default: none, one threshold per calibration set, as the protocol]",
    ),
    click.option(
        "--cohorts",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="CSV of each user's cohort for --condition cohort or cohorts: a userid column "
        "and the cohort column(s) (one value per user).",
    ),
    click.option(
        "--threshold",
        type=click.Choice(THRESHOLD_RULES),
        default="study",
        show_default=True,
        help="Conformal threshold rule. study: the reference study's (MAPIE 0.8.6: "
        "numpy.quantile(scores, (n+1)(1-alpha)/n, method='higher'), machine-epsilon "
        "tolerance), which reproduces its tables. mapie: MAPIE 1.x's finite-sample rule "
        "(the ceil((n+1)(1-alpha))-th smallest score, 1e-8 tolerance); one rank lower for "
        "some calibration sizes.",
    ),
    click.option(
        "--adapt-frac",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.5,
        show_default=True,
        help="uam: share of the target user's rows added to training.",
    ),
    click.option(
        "--min-own",
        type=click.IntRange(min=0),
        default=None,
        help="ukm: a target user with fewer own calibration rows than this calibrates on "
        "the other users of its k-means cluster (none: on every other user). "
        "[default: max(1/alpha, 1/(1-alpha)), 20 at alpha 0.05, the smallest set a "
        "threshold is taken from]",
    ),
    click.option(
        "--clusters",
        type=click.IntRange(min=1),
        default=None,
        help="ukm: k-means clusters of the other users' score quantiles. [default: Ding et "
        "al.'s heuristic, floor(floor(N K/(75+K))/2) for K users of N calibration rows]",
    ),
    click.option(
        "--own-rows",
        type=click.IntRange(min=0),
        default=None,
        help="ukm: keep only the first this many of the target's calibration rows, as a "
        "new user with few labelled windows (ucm keeps all). [default: all]",
    ),
    click.option(
        "--assign",
        type=click.Choice(UKM_ASSIGN_RULES),
        default="rank",
        show_default=True,
        help="ukm: how a target below --min-own finds its cluster. rank: the cluster under "
        "whose pooled scores its own scores have a mean mid-rank closest to 1/2 (unbiased "
        "however few its rows); centroid: the nearest k-means centroid to its own rows' "
        "score quantiles (Ding et al.'s embedding, biased towards easier clusters by a few "
        "rows' upper quantiles).",
    ),
    click.option(
        "--small-cal",
        type=click.Choice(SMALL_CAL_POLICIES),
        default="error",
        show_default=True,
        help="A calibration set below max(1/alpha, 1/(1-alpha)) rows (20 at alpha 0.05; "
        "both threshold rules refuse it): stop with an error; skip it (NaN conformal "
        "metrics); or full-set: answer every class (an infinite threshold, the valid "
        "conservative answer). Skipped and full-set tasks are noted in run.json. "
        "(mueval curve defaults to full-set: its small k are below the minimum by design.)",
    ),
    click.option(
        "--split",
        type=click.Choice(SPLIT_METHODS),
        default="random",
        show_default=True,
        help="How udm, ucm (and uim's test rows) and uam split a user's own rows: the "
        "study's stratified random split, or contiguous blocks in time order per class "
        "(udm: earliest 60 % train, next 20 % calibration, last 20 % test; ucm: earlier "
        "half calibrates, later half tests; uam: adapt, calibrate, test) with --gap rows "
        "left out between blocks, so neighbouring windows cannot leak.",
    ),
    click.option(
        "--gap",
        type=click.IntRange(min=0),
        default=1,
        show_default=True,
        help="--split blocked: rows left out between two blocks.",
    ),
    click.option(
        "--split-seeds",
        type=click.Choice(SPLIT_SEEDS),
        default="protocol",
        show_default=True,
        help="protocol: every split of an iteration draws from its one seed, as the study "
        "(the other users' split, which picks the model's training rows, and the target "
        "user's own split under uim, ucm and ukm among them); independent: each role gets "
        "its own seed, a child of numpy's SeedSequence(seed). Recorded in run.json.",
    ),
    click.option(
        "--user-folds",
        type=click.IntRange(min=2),
        default=None,
        metavar="K",
        help="uim and ucm: fit one model per fold of users in K grouped folds "
        "(GroupKFold, shuffled with each iteration's seed) instead of one per user "
        "(leave-one-user-out, the protocol), so many users cost K fits per classifier. "
        "Each held-out user keeps its own test and ucm calibration halves; the model "
        "also leaves out the other users of its fold. uxc: K grouped calibration folds "
        "of the non-target users instead of one per user. [default: leave-one-user-out]",
    ),
    _jobs_option(None, "running the tasks"),
    click.option(
        "--backend",
        type=click.Choice(BACKENDS),
        default="loky",
        show_default=True,
        help="loky: worker processes on this machine. dask: a Dask cluster, the one "
        "at --scheduler or else a local one of --workers processes "
        "(pip install 'mudata-mueval[dask]').",
    ),
    click.option(
        "--scheduler",
        metavar="ADDRESS",
        help="Address of a running dask.distributed scheduler (with --backend dask), "
        "e.g. tcp://10.0.0.5:8786.",
    ),
    click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=None,
        help="--backend dask without --scheduler: worker processes of the local "
        "cluster. [default: --jobs if above 1, else the number of cores]",
    ),
    click.option(
        "--out",
        "-o",
        type=click.Path(file_okay=False, path_type=Path),
        help="Write the run folder here (atomically).",
    ),
    table_option,
    click.option("--overwrite", is_flag=True, help="Replace an existing --out folder."),
    dataset_source_options,
    click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress on stderr. [default: a bar on a terminal; elsewhere (CI logs, "
        "nohup) a line every 10 % of the tasks or every minute]",
    ),
    click.option(
        "--diagnostics",
        type=click.Choice(DIAGNOSTIC_LEVELS),
        default="basic",
        show_default=True,
        help="Conditional-coverage diagnostics on the pooled test rows of each strategy, "
        "classifier and iteration. basic: coverage gap and weighted coverage gap over users "
        "and over classes, HSIC(set size, coverage), size-stratified coverage. full: also "
        "worst-slab coverage and ERT (slower).",
    ),
    click.option(
        "--user-level",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.05,
        show_default=True,
        help="Level of the per-user verdict 'below target': a user is flagged when the "
        "exact test of its covered count (Beta-Binomial null, exchangeable calibration and "
        "test rows; under UDM, UCM and UAM the exact law of the class-stratified split) "
        "rejects at this level after --user-correction. Changes no set.",
    ),
    click.option(
        "--user-correction",
        type=click.Choice(USER_CORRECTIONS),
        default="holm",
        show_default=True,
        help="Correction of the per-user verdicts across the users of each strategy and "
        "classifier: holm (the chance of any false flag is at most --user-level, whatever "
        "the dependence), bh (Benjamini-Hochberg: false discovery rate, under independence "
        "or positive dependence), none (each user at --user-level).",
    ),
    click.option(
        "--user-family",
        type=click.Choice(USER_FAMILIES),
        default="run",
        show_default=True,
        help="Over which users --user-correction runs, and so what --user-level bounds: run "
        "(every user of every strategy and classifier of the run, one family; the pooled "
        "coverage tests likewise, one per strategy and classifier) or pair (the users of "
        "each strategy and classifier apart, the level holding per pair).",
    ),
)


def figure_options(where: str) -> tuple[Callable[[F], F], ...]:
    """``--figure-format``, ``--dpi`` and ``--titles``: how figures are written.

    Shared by every command that writes figures (``mueval report``, ``curve``).
    """
    return (
        click.option(
            "--figure-format",
            type=click.Choice(["svg", "pdf", "png"]),
            default="svg",
            show_default=True,
            help=f"Format of the figures in {where}: svg or pdf (vector, for papers), or "
            "png at --dpi.",
        ),
        click.option(
            "--dpi",
            type=click.IntRange(10, 2400),
            default=300,
            show_default=True,
            help="Resolution of PNG figures (vector figures have none).",
        ),
        click.option(
            "--titles/--no-titles",
            default=False,
            show_default=True,
            help="Draw a title in each figure. Without, the caption (the page's, or the "
            "docs') is the only title, as a paper wants it.",
        ),
    )


#: ``mueval report RUN_DIR``.
report_options = stack(
    click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path)),
    click.option(
        "--out",
        "out",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Output folder (default: RUN_DIR/report).",
    ),
    click.option(
        "--overwrite",
        is_flag=True,
        help="Replace an earlier report of mueval report in --out (never anything else).",
    ),
    strategy_option(_included("to include", "the run")),
    classifier_option("every classifier in the run"),
    click.option(
        "--n-boot",
        type=click.IntRange(min=10),
        default=200,
        show_default=True,
        help="Bootstrap resamples for the diagnostics' intervals.",
    ),
    click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed."),
    click.option(
        "--top-sets",
        type=click.IntRange(min=1),
        default=20,
        show_default=True,
        help="Most frequent prediction sets shown in the multiset chart.",
    ),
    click.option(
        "--min-count",
        type=click.IntRange(min=1),
        default=2,
        show_default=True,
        help="Sets seen fewer times are left out of the multiset chart.",
    ),
    click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress bar on stderr. [default: only when stderr is a terminal]",
    ),
    click.option(
        "--figures",
        type=click.Choice(["none", "summary", "all"]),
        default="summary",
        show_default=True,
        help="none: no figure; summary: page one's figures and one coverage-per-user figure "
        "per strategy; all: also every (strategy, classifier) section's figures.",
    ),
    *figure_options("figures/"),
    click.option(
        "--with",
        "others",
        multiple=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Another run folder of the same dataset and alpha (repeatable), e.g. the "
        "--split blocked run beside a random one: a 'Runs side by side' section compares "
        "their per-user guarantees.",
    ),
)

#: ``mueval compare RUN_DIR...``.
compare_options = stack(
    click.argument(
        "run_dirs",
        nargs=-1,
        required=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path),
    ),
    click.option(
        "--metric",
        type=click.Choice(COMPARABLE_METRICS),
        default="coverage",
        show_default=True,
        help="Metric compared between strategies.",
    ),
    strategy_option(_included("to compare", "the runs")),
    classifier_option("every classifier in the runs"),
    click.option(
        "--all-pairs",
        is_flag=True,
        help="Several runs: every pair of strategies, also mismatched ones (a/uim against "
        "b/mm, and the pairs within each run). [default: each strategy against itself "
        "in the other runs, per classifier]",
    ),
    click.option(
        "--out",
        "out",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Also write the whole table as CSV here: one row per test, every column "
        "(notes, library warnings, cautions) the terminal leaves out.",
    ),
    click.option(
        "--adjust",
        type=click.Choice(COMPARE_ADJUSTMENTS),
        default="holm",
        show_default=True,
        help="Multiple-comparison correction of the p-values, within each test (Welch, "
        "corrected, Wilcoxon) over all its pairs and classifiers: holm (Holm's step-down; "
        "the chance of any false 'significant' is at most the level, whatever the "
        "dependence between the tests) or none (each test alone, as the study read its "
        "stars). Both the raw and the adjusted p-values are shown and written.",
    ),
    table_option,
    click.option(
        "--guarantees",
        is_flag=True,
        help="Compare per-user guarantees instead: pooled coverage and the worst user with "
        "their intervals, the share of users below target (the exact per-user test at each "
        "run's --user-level after its --user-correction), and McNemar's exact test of "
        "whether two strategies leave different users below "
        "(--out: the summary, and the tests in OUT's name with .tests.csv).",
    ),
)

#: ``mueval table RUN_DIR``.
table_options = stack(
    click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path)),
    click.option(
        "--format",
        "table_format",
        type=click.Choice(PAPER_FORMATS),
        default="latex",
        show_default=True,
        help="latex: one booktabs table per strategy, cells $mean \\pm sd$ (the preamble "
        "needs \\usepackage{booktabs}); csv: one row per strategy, classifier and metric, "
        "the mean and the SD in columns of their own; markdown: one pipe table per strategy.",
    ),
    click.option(
        "--out",
        "out",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Write the table to this file (replaced if it exists; a link is refused). "
        "[default: print it on stdout]",
    ),
    click.option(
        "--rows",
        type=click.Choice(PAPER_ROWS),
        default="study",
        show_default=True,
        help="study: the study's 14 rows of its Tables 6-9 (accuracy to OE); all: every "
        "metric and diagnostic of the run, as evaluate prints them.",
    ),
    strategy_option(_included("to include", "the run")),
    classifier_option("every classifier in the run"),
)
