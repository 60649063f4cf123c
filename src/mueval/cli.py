"""Command line: ``mueval evaluate``, ``report`` and ``compare``, thin layers over
:mod:`mueval.api`.

Exit codes: 0 success; 1 runtime failure (data that cannot be evaluated, a model or
conformal step failing, output that cannot be written); 2 bad usage (unknown
strategy, classifier, score or dataset name; bad option values).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from mudata.cli_options import dataset_source_options
from mueval import __version__
from mueval.clickutil import LazyGroup
from mueval.names import (
    BACKENDS,
    CLASSIFIERS,
    DIAGNOSTIC_LEVELS,
    SCORES,
    SMALL_CAL_POLICIES,
    THRESHOLD_RULES,
)
from mueval.strategies import ALIASES, SPLIT_METHODS, STRATEGIES, parse_strategies

# Everything that imports pandas, scikit-learn, MAPIE or matplotlib is imported
# by the command that needs it, so that `mueval --help` starts at once.
_LAZY_COMMANDS = {
    "report": (
        "mueval.report.cli:report_command",
        "Build an HTML report (report.html + figures/) from a run folder.",
    ),
    "compare": (
        "mueval.report.cli:compare_command",
        "Test differences between strategies in one or more run folders of one dataset.",
    ),
}


@click.group(
    cls=LazyGroup,
    lazy_commands=_LAZY_COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="mueval")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Show the traceback of an internal error (a bug to report).",
)
def main(verbose: bool) -> None:
    """Multi-user evaluation of classifiers with split conformal prediction."""


_STRATEGY_HELP = (
    "Evaluation strategy; repeat or give a comma list. "
    f"Codes: {', '.join(STRATEGIES)}; aliases: "
    + ", ".join(f"{a}={c}" for a, c in ALIASES.items())
    + "; 'all'. mm: mixed model (60/20/20 over all rows). udm: user-dependent "
    "(the same split within each user). uim: user-independent (train and calibrate "
    "on the other users, test on half of the target user). ucm: user-calibrated "
    "(train on the other users, calibrate on the target user's other half). uam: "
    "user-adaptive (train on the other users plus --adapt-frac of the target user). "
    "[default: mm,udm,uim,ucm]"
)


@main.command()
@click.option("--dataset", "dataset", metavar="NAME", help="A mudata dataset (e.g. wisdm).")
@click.option(
    "--data",
    "data_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Your own table, .parquet or .csv: a user column, a label column, every "
    "other column a numeric feature.",
)
@click.option("--user-col", default="userid", show_default=True, help="User column of --data.")
@click.option("--label-col", default="label", show_default=True, help="Label column of --data.")
@click.option("--strategy", "-s", "strategies", multiple=True, help=_STRATEGY_HELP)
@click.option(
    "--classifier",
    "-c",
    "classifiers",
    multiple=True,
    help=f"Classifier; repeat or comma list: {', '.join(CLASSIFIERS)} or all. [default: all]",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Miscoverage level (0.05 = 95% confidence).",
)
@click.option(
    "--iterations",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Repetitions; iteration i uses seed seed-base + i.",
)
@click.option("--seed-base", type=int, default=100, show_default=True)
@click.option(
    "--score",
    type=click.Choice(SCORES),
    default="lac",
    show_default=True,
    help="Conformity score (MAPIE's names). The protocol uses lac.",
)
@click.option(
    "--mondrian/--no-mondrian",
    default=False,
    show_default=True,
    help="Class-conditional (Mondrian) calibration: one threshold per class.",
)
@click.option(
    "--threshold",
    type=click.Choice(THRESHOLD_RULES),
    default="study",
    show_default=True,
    help="Conformal threshold rule. study: the reference study's (MAPIE 0.8.6: "
    "numpy.quantile(scores, (n+1)(1-alpha)/n, method='higher'), machine-epsilon "
    "tolerance), which reproduces its tables. mapie: MAPIE 1.x's finite-sample rule "
    "(the ceil((n+1)(1-alpha))-th smallest score, 1e-8 tolerance); one rank lower for "
    "some calibration sizes.",
)
@click.option(
    "--adapt-frac",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.5,
    show_default=True,
    help="uam: share of the target user's rows added to training.",
)
@click.option(
    "--small-cal",
    type=click.Choice(SMALL_CAL_POLICIES),
    default="error",
    show_default=True,
    help="A calibration set below max(1/alpha, 1/(1-alpha)) rows (20 at alpha 0.05; "
    "both threshold rules refuse it): stop with an error; skip it (NaN conformal "
    "metrics); or full-set: answer every class (an infinite threshold, the valid "
    "conservative answer). Skipped and full-set tasks are noted in run.json.",
)
@click.option(
    "--split",
    "split_method",
    type=click.Choice(SPLIT_METHODS),
    default="random",
    show_default=True,
    help="How udm, ucm (and uim's test rows) and uam split a user's own rows: the "
    "study's stratified random split, or contiguous blocks in time order per class "
    "(udm: earliest 60 %% train, next 20 %% calibration, last 20 %% test; ucm: earlier "
    "half calibrates, later half tests; uam: adapt, calibrate, test) with --gap rows "
    "left out between blocks, so neighbouring windows cannot leak.",
)
@click.option(
    "--gap",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="--split blocked: rows left out between two blocks.",
)
@click.option(
    "--user-folds",
    type=click.IntRange(min=2),
    default=None,
    metavar="K",
    help="uim and ucm: fit one model per group of users in K grouped folds "
    "(GroupKFold, shuffled with each iteration's seed) instead of one per user "
    "(leave-one-user-out, the protocol), so many users cost K fits per classifier. "
    "Each held-out user keeps its own test and ucm calibration halves; the model "
    "also leaves out the other users of its fold. [default: leave-one-user-out]",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=-1),
    default=1,
    show_default=True,
    help="Parallel worker processes (loky); -1 = all cores. Results do not depend on it.",
)
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    default="loky",
    show_default=True,
    help="loky: worker processes on this machine. dask: a Dask cluster, the one "
    "at --scheduler or else a local one of --workers processes "
    "(pip install 'mudata-mueval[dask]').",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="Address of a running dask.distributed scheduler (with --backend dask), "
    "e.g. tcp://10.0.0.5:8786.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="--backend dask without --scheduler: worker processes of the local "
    "cluster. [default: --jobs if above 1, else the number of cores]",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the run folder here (atomically).",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing --out folder.")
@dataset_source_options
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr. [default: a bar on a terminal; elsewhere (CI logs, "
    "nohup) a line every 10 %% of the tasks or every minute]",
)
@click.option(
    "--diagnostics",
    type=click.Choice(DIAGNOSTIC_LEVELS),
    default="basic",
    show_default=True,
    help="Conditional-coverage diagnostics on the pooled test rows of each strategy, "
    "classifier and iteration. basic: coverage gap and weighted coverage gap over users "
    "and over classes, HSIC(set size, coverage), size-stratified coverage. full: also "
    "worst-slab coverage and ERT (slower).",
)
def evaluate(
    dataset: str | None,
    data_file: Path | None,
    user_col: str,
    label_col: str,
    strategies: tuple[str, ...],
    classifiers: tuple[str, ...],
    out: Path | None,
    overwrite: bool,
    data_home: Path | None,
    manual_dir: Path | None,
    mirror: str | None,
    allow_unverified: bool,
    max_expansion: float | None,
    **options: Any,
) -> None:
    """Evaluate classifiers under the multi-user strategies with split conformal
    prediction, print mean±SD tables and optionally write a run folder (--out).

    \b
    Examples:
      mueval evaluate --dataset wisdm --manual-dir data/wisdm --strategy mm --out runs/mm
      mueval evaluate --data my.csv --user-col subject --label-col activity \\
          -s udm,ucm -c rf --iterations 5 --jobs 2 --out runs/mine
    """
    if (dataset is None) == (data_file is None):
        raise click.UsageError("give exactly one of --dataset NAME or --data FILE")
    from mueval.api import evaluate_table, load_data
    from mueval.models import parse_classifiers
    from mueval.runfolder import check_target
    from mueval.runner import EvalConfig

    config = EvalConfig(
        strategies=tuple(parse_strategies(strategies or ("mm,udm,uim,ucm",))),
        classifiers=tuple(parse_classifiers(classifiers or ("all",))),
        alpha=options["alpha"],
        iterations=options["iterations"],
        seed_base=options["seed_base"],
        score=options["score"],
        mondrian=options["mondrian"],
        threshold=options["threshold"],
        adapt_frac=options["adapt_frac"],
        small_cal=options["small_cal"],
        split=options["split_method"],
        gap=options["gap"],
        user_folds=options["user_folds"],
    )
    if out is not None:
        check_target(out, overwrite)  # fail before any work
    source = (
        {}
        if data_file is not None
        else {
            "data_home": data_home,
            "manual_dir": manual_dir,
            "mirror": mirror,
            "allow_unverified": allow_unverified,
            "max_expansion": max_expansion,
        }
    )
    table = load_data(
        data_file if data_file is not None else dataset,
        user_col=user_col,
        label_col=label_col,
        **source,
    )
    result = evaluate_table(
        table,
        config,
        jobs=options["jobs"],
        backend=options["backend"],
        scheduler=options["scheduler"],
        workers=options["workers"],
        progress=options["progress"],
        diagnostics=options["diagnostics"],
        out=out,
        overwrite=overwrite,
    )
    info = table.info
    click.echo(
        f"{info.get('name')}: {info['n_rows']} rows, {info['n_users']} users, "
        f"{len(table.classes)} classes, {info['n_features']} features; "
        f"alpha={config.alpha}, score={config.score}, threshold={config.threshold}"
        f"{', mondrian' if config.mondrian else ''}"
        f"{', blocked split' if config.split == 'blocked' else ''}"
        f"{f', {config.user_folds} user folds' if config.user_folds else ''}"
    )
    click.echo(result.table())
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if result.path is not None:
        click.echo(f"\nrun folder: {result.path}")
    click.echo(f"time: {result.info['timings']['total_s']:.1f} s", err=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
