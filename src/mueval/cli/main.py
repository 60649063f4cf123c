"""Command line: ``mueval evaluate``, ``report``, ``compare``, ``curve`` and ``table``, thin layers over
:mod:`mueval.api`.

Exit codes: 0 success; 1 runtime failure (data that cannot be evaluated, a model or
conformal step failing, output that cannot be written); 2 bad usage (unknown
strategy, classifier, score or dataset name; bad option values); 3 ``evaluate
--strict`` finished a run with at least one error-severity warning (the run folder
is written all the same).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import click

from mudata.cli_options import (
    SOURCE_OPTIONS,
    data_home_option,
    printable,
    render_table,
    verbose_option,
)
from mudata.display import plain
from mueval.cli.base import LazyGroup
from mueval.cli.evaluate_options import evaluate_options
from mueval.cli.options import chosen_data, load_chosen_data
from mueval.errors import UsageError
from mueval.names import DEFAULT_STRATEGIES, USER_FAMILY_WORDS, parse_strategies
from mueval.version import __version__

__all__ = [
    "STRICT_EXIT",
    "evaluate",
    "main",
    "parse_params",
]

#: ``evaluate --strict``'s exit code when the run has an error-severity warning.
STRICT_EXIT = 3

# Everything that imports pandas, scikit-learn, MAPIE or matplotlib is imported
# by the command that needs it, so that `mueval --help` starts at once.
_LAZY_COMMANDS = {
    "report": (
        "mueval.cli.report:report_command",
        "Build an HTML report (report.html + figures/) from a run folder.",
    ),
    "compare": (
        "mueval.cli.report:compare_command",
        "Test differences between strategies in one or more run folders of one dataset.",
    ),
    "curve": (
        "mueval.cli.curve:curve_command",
        "Coverage, set size and accuracy against k labelled windows of the target user.",
    ),
    "table": (
        "mueval.cli.table:table_command",
        "Write a run folder's tables for a paper: LaTeX, CSV or Markdown.",
    ),
}


@click.group(
    cls=LazyGroup,
    lazy_commands=_LAZY_COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="mueval")
@verbose_option
@data_home_option(expose_value=False)
def main() -> None:
    """Multi-user evaluation of classifiers with split conformal prediction.

    -v and --data-home may come before or after the command, as in mudata;
    see docs/cli.md for the conventions both tools share.
    """


@main.command()
@evaluate_options
@click.option(
    "--input",
    "input_kind",
    type=click.Choice(("features", "windows")),
    default="features",
    show_default=True,
    help="What the models are fed: the feature table's rows (the protocol), or the "
    "--dataset's windows of samples, float32 (n, T, C), same rows and users "
    "(mudata fetch NAME --windows). Windows are for models that take them (-c cnn of "
    "mueval[deep], or your own); the built-ins stay on features.",
)
@click.option(
    "--strict",
    is_flag=True,
    help=f"Exit with code {STRICT_EXIT} when the run has an error-severity warning (a "
    "coverage guarantee fails or cannot hold), for scripts and CI; the run folder is "
    "written all the same. [default: exit 0, the warnings summarised on stderr]",
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
    strict: bool,
    table_format: str,
    input_kind: str,
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
    data = chosen_data(dataset, data_file)
    # Here, not at the top: pandas and scikit-learn, which `mueval --help` does without.
    from mueval.api import evaluate_table
    from mueval.cli.warning_text import warnings_summary
    from mueval.conformal.settings import SETTINGS_FIELDS, ConformalSettings
    from mueval.evaluation.config import EvalConfig

    # Here, not at the top: scikit-learn, for the user's models.
    from mueval.evaluation.estimators import read_model_config, user_models
    from mueval.evaluation.inputs import check_input
    from mueval.runfolder import check_target

    # Every option of the same name as a ConformalSettings field is that setting,
    # one of the same name as an EvalConfig field that field; the dataset-source
    # options go to mudata; the rest say where the tasks run.
    source = {key: options.pop(key) for key in SOURCE_OPTIONS}
    fields = {f.name for f in dataclasses.fields(EvalConfig)} - {
        "strategies",
        "classifiers",
        "models",
        "conformal",
    }
    params = parse_params(options.pop("classifier_params"))
    config_file = options.pop("classifier_config")
    try:
        named = [] if config_file is None else [read_model_config(config_file)]
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--classifier-config") from exc
    try:
        given = [*(classifiers or ([] if named else ["all"])), *named]
        names, models = user_models(given, params=params, scale=options.pop("scale"))
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--classifier") from exc
    try:
        check_input(input_kind, names, models)
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--input") from exc
    settings = ConformalSettings(**{key: options.pop(key) for key in SETTINGS_FIELDS})
    config = EvalConfig(
        strategies=tuple(parse_strategies(strategies or DEFAULT_STRATEGIES)),
        classifiers=names,
        models=models,
        conformal=settings,
        **{key: options.pop(key) for key in fields},
    )
    if out is not None:
        check_target(out, overwrite)  # fail before any work
    table = load_chosen_data(data, user_col, label_col, source, input=input_kind)
    # With --out the predictions stream to the folder while the tasks run.
    result = evaluate_table(table, config, out=out, overwrite=overwrite, **options)
    info = table.info
    # With --table csv or markdown, stdout holds the table alone.
    aside = table_format != "text"
    click.echo(
        f"{plain(info.get('name'))}: {info['n_rows']} rows, {info['n_users']} users, "
        f"{len(table.classes)} classes, "
        + (
            f"windows of {info['window_shape'][0]} samples x {info['window_shape'][1]} channels; "
            if info.get("input") == "windows"
            else f"{info['n_features']} features; "
        )
        + f"alpha={settings.alpha}, score={settings.score}, threshold={settings.threshold}"
        f"{', mondrian' if settings.mondrian else ''}"
        f"{f', condition {settings.condition}' if settings.condition else ''}"
        f"{', blocked split' if config.split == 'blocked' else ''}"
        f"{f', {config.user_folds} user folds' if config.user_folds else ''}"
        f"; users below target at level {config.user_level:g} after "
        f"{config.user_correction} over {USER_FAMILY_WORDS[config.user_family]} "
        "(exact per-user test)",
        err=aside,
    )
    if table_format == "csv":
        # Here, not at the top: the report's table modules, only for csv or markdown.
        # The CSV is `mueval table --format csv --rows all`'s: a number per cell.
        # Here, not at the top: the report layer only when a table is printed.
        from mueval.report.paper import paper_csv, paper_tables

        click.echo(paper_csv(paper_tables(result.summary, rows="all")), nl=False)
    elif aside:
        # Here, not at the top: the report's table modules, only for markdown.
        from mueval.report.tables import table_rows

        click.echo(render_table(*table_rows(result.summary), table_format))
    else:
        click.echo(result.table())
    for note in result.notes:
        click.echo(printable(f"note: {note}"), err=True)
    if result.path is not None:
        click.echo(f"\nrun folder: {result.path}", err=aside)
    click.echo(f"time: {result.info['timings']['total_s']:.1f} s", err=True)
    # The run's warnings end the output, where a user looks; all of them are in
    # run.json and the report, and on Run.warnings in Python.
    if result.path is not None:
        where = f"mueval report {result.path} (report.html), or run.json's warnings"
    else:
        where = "add --out DIR to keep them in run.json and read them with mueval report"
    for line in warnings_summary(result.warnings, where=where):
        click.echo(printable(line), err=True)
    if strict and any(w["severity"] == "error" for w in result.warnings):
        sys.exit(STRICT_EXIT)


def parse_params(items: tuple[str, ...]) -> dict[str, Any]:
    """``--classifier-param NAME=VALUE`` items as keyword arguments; each VALUE is a
    TOML literal (``0.5``, ``500``, ``"lbfgs"``, ``true``, ``[1, 2]``)."""
    # Here, not at the top: only --classifier-param reads TOML.
    import tomllib

    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            message = f'{item!r}: expected NAME=VALUE, e.g. C=0.5 or solver="lbfgs"'
            raise click.BadParameter(message, param_hint="--classifier-param")
        if name in out:
            message = f"{name} given twice"
            raise click.BadParameter(message, param_hint="--classifier-param")
        try:
            out[name] = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError as exc:
            message = (
                f"{item!r}: {value.strip()!r} is no TOML value ({exc}); text needs quotes, "
                f'e.g. {name}="{value.strip()}"'
            )
            raise click.BadParameter(message, param_hint="--classifier-param") from exc
    return out


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
