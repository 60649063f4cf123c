"""Command line: ``mueval evaluate`` (the lead attaches further commands to ``main``).

Exit codes: 0 success; 1 runtime failure (data that cannot be evaluated, a model or
conformal step failing, output that cannot be written); 2 bad usage (unknown
strategy, classifier, score or dataset name; bad option values).
"""

from __future__ import annotations

import datetime as dt
import platform
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

import click

from mueval import __version__
from mueval.aggregate import splits_frame, summary_frame
from mueval.conformal import SCORES
from mueval.data import Table, load_file, load_registered
from mueval.diagnose import (
    DIAGNOSTIC_LEVELS,
    ERT_FOLDS,
    WSC_DELTA,
    WSC_DIRECTIONS,
    diagnose,
    diagnostic_names,
)
from mueval.errors import MuevalError, UsageError
from mueval.metrics.conformal import THRESHOLD_RULES
from mueval.models import CLASSIFIERS, parse_classifiers
from mueval.output import check_target, format_table, predictions_table, write_run
from mueval.report.cli import compare_command, report_command
from mueval.runner import BACKENDS, SMALL_CAL_POLICIES, EvalConfig, run
from mueval.strategies import ALIASES, STRATEGIES, parse_strategies


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version(), "mueval": __version__}
    for key, dist in (
        ("mudata", "mudata-mueval"),
        ("numpy", "numpy"),
        ("pandas", "pandas"),
        ("scikit-learn", "scikit-learn"),
        ("mapie", "mapie"),
    ):
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    try:
        import mudata

        out["mudata"] = mudata.__version__
    except ImportError:
        pass
    return out


def evaluate_table(
    table: Table,
    config: EvalConfig,
    *,
    out: str | Path | None = None,
    jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    progress: bool | None = None,
    overwrite: bool = False,
    diagnostics: str = "basic",
) -> dict[str, Any]:
    """Run the evaluation on a table and optionally write the run folder.

    Parameters
    ----------
    table : Table
    config : EvalConfig
    out : path, optional
        Run folder to write (atomically).
    jobs, backend, scheduler, progress
        See :func:`mueval.runner.run`.
    overwrite : bool
        Replace an existing run folder.
    diagnostics : {"none", "basic", "full"}
        Conditional-coverage diagnostics to compute (:mod:`mueval.diagnose`),
        after every task has finished, in this process (``full``: with ``jobs``
        loky workers).

    Returns
    -------
    dict
        ``output`` (RunOutput), ``splits`` and ``summary`` (DataFrames),
        ``diagnostics`` (:class:`mueval.diagnose.Diagnostics`), ``run_info`` (the
        content of run.json) and ``path`` (or None).
    """
    diagnostic_names(diagnostics)  # an unknown level fails before any work
    start = time.perf_counter()
    output = run(
        table.X,
        table.y,
        table.users,
        table.classes,
        config,
        jobs=jobs,
        backend=backend,
        scheduler=scheduler,
        progress=progress,
    )
    t0 = time.perf_counter()
    diag = diagnose(
        output.results, table.X, table.y, table.users,
        alpha=config.alpha, level=diagnostics, jobs=jobs,
    )
    output.timings["diagnostics_s"] = time.perf_counter() - t0
    splits = splits_frame(output.results)
    summary = summary_frame(splits, diag.frame if diag.names else None)
    diag_config: dict[str, Any] = {"diagnostics": diagnostics}
    if diagnostics == "full":
        # Flat keys: the report prints the configuration one setting a line.
        diag_config.update(
            {
                "diagnostics_features": "MinMaxScaler fitted on the whole table",
                "diagnostics_wsc_directions": WSC_DIRECTIONS,
                "diagnostics_wsc_delta": WSC_DELTA,
                "diagnostics_ert_model": "LogisticRegression(max_iter=1000)",
                "diagnostics_ert_loss": "brier",
                "diagnostics_ert_folds": ERT_FOLDS,
                "diagnostics_random_state": "the iteration's seed",
            }
        )
    run_info: dict[str, Any] = {
        "dataset": table.info,
        "classes": list(table.classes),
        "config": {
            "strategies": list(config.strategies),
            "classifiers": list(config.classifiers),
            "alpha": config.alpha,
            "iterations": config.iterations,
            "seed_base": config.seed_base,
            "score": config.score,
            "mondrian": config.mondrian,
            "threshold": config.threshold,
            "adapt_frac": config.adapt_frac,
            "small_cal": config.small_cal,
            "jobs": jobs,
            "backend": backend,
            **diag_config,
        },
        "versions": _versions(),
        "skipped": output.notes,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    path = None
    if out is not None:
        t0 = time.perf_counter()
        preds = predictions_table(output.results, table.classes, table.users, table.y)
        timings = dict(output.timings)
        timings["total_s"] = time.perf_counter() - start
        run_info["timings"] = timings
        path = write_run(
            out,
            run_info=run_info,
            summary=summary,
            splits=splits,
            predictions=preds,
            diagnostics=diag.frame if diag.names else None,
            size_coverage=diag.size_coverage if diag.names else None,
            overwrite=overwrite,
        )
        timings["write_s"] = time.perf_counter() - t0
    else:
        run_info["timings"] = {**output.timings, "total_s": time.perf_counter() - start}
    return {
        "output": output,
        "splits": splits,
        "summary": summary,
        "diagnostics": diag,
        "run_info": run_info,
        "path": path,
    }


class _Group(click.Group):
    """The ``mueval`` group: the last line of defence against a raw traceback.

    An error mueval raises on purpose becomes a usage error (exit 2) or a runtime
    error (exit 1) with its own message. Anything else is a bug: one line says so
    (exit 1), and the traceback is printed only with ``-v``.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except UsageError as exc:
            raise click.UsageError(str(exc)) from exc
        except MuevalError as exc:
            raise click.ClickException(str(exc)) from exc
        except Exception as exc:
            if ctx.params.get("verbose"):
                click.echo(traceback.format_exc(), err=True, nl=False)
                hint = ""
            else:
                hint = " (run with -v for the traceback)"
            found = " ".join(str(exc).split())[:200]
            message = f"internal error, please report it: {type(exc).__name__}: {found}{hint}"
            raise click.ClickException(message) from exc


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mueval")
@click.option("-v", "--verbose", is_flag=True,
              help="Show the traceback of an internal error (a bug to report).")
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
    "--iterations", type=click.IntRange(min=1), default=20, show_default=True,
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
    help="A calibration set below max(1/alpha, 1/(1-alpha)) rows (which MAPIE "
    "refuses): stop with an error, or skip it (NaN conformal metrics, noted in run.json).",
)
@click.option("--jobs", "-j", type=click.IntRange(min=-1), default=1, show_default=True,
              help="Parallel worker processes (loky); -1 = all cores.")
@click.option("--backend", type=click.Choice(BACKENDS), default="loky", show_default=True)
@click.option("--scheduler", metavar="ADDRESS",
              help="dask.distributed scheduler address (with --backend dask).")
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path),
              help="Write the run folder here (atomically).")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out folder.")
@click.option("--data-home", type=click.Path(file_okay=False, path_type=Path),
              help="mudata's data folder (default: $MUDATA_HOME).")
@click.option("--manual-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder with the official files of datasets that cannot be downloaded.")
@click.option("--mirror", metavar="URL",
              help="Fetch the dataset's files from this base address (same names, same hashes).")
@click.option("--allow-unverified", is_flag=True,
              help="Accept dataset files the registry records no SHA-256 for (e.g. har70.zip); "
              "the hash seen is kept in the table's provenance.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr. [default: only when stderr is a terminal]")
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
    alpha: float,
    iterations: int,
    seed_base: int,
    score: str,
    mondrian: bool,
    threshold: str,
    adapt_frac: float,
    small_cal: str,
    jobs: int,
    backend: str,
    scheduler: str | None,
    out: Path | None,
    overwrite: bool,
    data_home: Path | None,
    manual_dir: Path | None,
    mirror: str | None,
    allow_unverified: bool,
    progress: bool | None,
    diagnostics: str,
) -> None:
    """Evaluate classifiers under the multi-user strategies with split conformal
    prediction, print mean±SD tables and optionally write a run folder (--out).

    \b
    Examples:
      mueval evaluate --dataset wisdm --manual-dir data/wisdm --strategy mm
      mueval evaluate --data my.csv --user-col subject --label-col activity \\
          -s udm,ucm -c rf --iterations 5 --jobs 2 --out runs/mine
    """
    try:
        if (dataset is None) == (data_file is None):
            raise click.UsageError("give exactly one of --dataset NAME or --data FILE")
        if backend == "dask" and not scheduler:
            raise click.UsageError("--backend dask needs --scheduler ADDRESS")
        config = EvalConfig(
            strategies=tuple(parse_strategies(strategies or ("mm,udm,uim,ucm",))),
            classifiers=tuple(parse_classifiers(classifiers or ("all",))),
            alpha=alpha,
            iterations=iterations,
            seed_base=seed_base,
            score=score,
            mondrian=mondrian,
            threshold=threshold,
            adapt_frac=adapt_frac,
            small_cal=small_cal,
        )
        if out is not None:
            check_target(out, overwrite)
        if data_file is not None:
            table = load_file(data_file, user_col=user_col, label_col=label_col)
        else:
            table = load_registered(
                dataset,
                data_home=data_home,
                manual_dir=manual_dir,
                mirror=mirror,
                allow_unverified=allow_unverified,
            )
        result = evaluate_table(
            table,
            config,
            out=out,
            jobs=jobs,
            backend=backend,
            scheduler=scheduler,
            progress=progress,
            overwrite=overwrite,
            diagnostics=diagnostics,
        )
    except UsageError as exc:
        raise click.UsageError(str(exc)) from exc
    except MuevalError as exc:
        raise click.ClickException(str(exc)) from exc
    info = table.info
    click.echo(
        f"{info.get('name')}: {info['n_rows']} rows, {info['n_users']} users, "
        f"{len(table.classes)} classes, {info['n_features']} features; alpha={alpha}, "
        f"score={score}, threshold={threshold}{', mondrian' if mondrian else ''}"
    )
    click.echo(format_table(result["summary"]))
    for note in result["output"].notes:
        click.echo(f"skipped: {note}", err=True)
    if result["path"] is not None:
        click.echo(f"\nrun folder: {result['path']}")
    timings = result["run_info"]["timings"]
    click.echo(f"time: {timings['total_s']:.1f} s", err=True)


main.add_command(report_command)
main.add_command(compare_command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
