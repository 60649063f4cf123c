"""The ``mueval curve`` command: a thin layer over :mod:`mueval.evaluation.labelcurve`.

Bad arguments exit 2; data that cannot be evaluated or output that cannot be
written exit 1 (:mod:`mueval.cli.base`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click
import pandas as pd

from mudata.cli_options import (
    SOURCE_OPTIONS,
    dataset_source_options,
    list_option,
    printable,
    render_table,
    stack,
    table_option,
)
from mudata.display import plain
from mueval.cli.base import Command
from mueval.cli.options import (
    choice_option,
    chosen_data,
    figure_options,
    jobs_option,
    level_option,
    load_chosen_data,
    whole_option,
)
from mueval.names import (
    CLASSIFIERS,
    CURVE_USES,
    SCORES,
    SMALL_CAL_POLICIES,
    SPLIT_SEEDS,
    THRESHOLD_RULES,
)

__all__ = ["curve_command", "curve_rows", "format_curve"]


def curve_rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The curve's header and rows as printed: one row per (use, k), intervals in brackets.

    Coverage and accuracy in percent; ``*`` after n_cal marks a point where some
    calibration set was too small and got the ``--small-cal`` answer.
    """

    def cell(row, metric: str, scale: float, digits: int) -> str:
        mean, low, high = (row[metric], row[f"{metric}_low"], row[f"{metric}_high"])
        return f"{scale * mean:.{digits}f} [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"

    header = ["use", "k", "users", "coverage %", "set size", "accuracy %", "n_cal"]
    rows = [
        [
            str(row["use"]),
            str(int(row["k"])),
            str(int(row["n_users"])),
            cell(row, "coverage", 100, 1),
            cell(row, "setsize", 1, 2),
            cell(row, "accuracy", 100, 1),
            f"{row['n_cal']:.0f}" + (" *" if row["n_small_cal"] else ""),
        ]
        for _, row in frame.iterrows()
    ]
    return header, rows


def format_curve(frame: pd.DataFrame) -> str:
    """The curve as a plain-text table (:func:`curve_rows` in aligned columns)."""
    header, rows = curve_rows(frame)
    widths = (12, 5, 7, 22, 23, 22, 7)
    left = (True, False, False, True, True, True, False)

    def line(cells: list[str]) -> str:
        # The flag after n_cal hangs beyond the column, so the figures stay aligned.
        *main, last = cells
        figure, _, flag = last.partition(" ")
        parts = [
            c.ljust(w) if is_left else c.rjust(w)
            for c, w, is_left in zip([*main, figure], widths, left, strict=True)
        ]
        parts[2] += "  "  # the space before the first interval column
        return "".join(parts) + (f" {flag}" if flag else "")

    head = line(header)
    return "\n".join([head, "-" * len(head), *map(line, rows)])


#: What ``mueval --help`` lists for the command (also in ``mueval.cli.main``).
SHORT_HELP = "Coverage, set size and accuracy against k labelled windows of the target user."


@click.command("curve", cls=Command, short_help=SHORT_HELP)
@click.option("--dataset", "dataset", metavar="NAME", help="A mudata dataset (e.g. gestures).")
@click.option(
    "--data",
    "data_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Your own table, .parquet or .csv: a user column, a label column, numeric features.",
)
@click.option("--user-col", default="userid", show_default=True, help="User column of --data.")
@click.option("--label-col", default="label", show_default=True, help="Label column of --data.")
@click.option(
    "--classifier",
    "-c",
    type=click.Choice(CLASSIFIERS),
    default="rf",
    show_default=True,
    help="One classifier (mueval evaluate, report, compare and table take several, all by default).",
)
@list_option(
    "--k",
    "ks",
    default=("auto",),
    show_default=True,
    help="Numbers of labelled windows of the target user; repeat or comma list. auto: 0 "
    "and four values from the smallest k whose calibration set gives informative sets "
    "(20 at alpha 0.05; smaller ones give every class) to the largest every user (else "
    "the median user) can give beside --min-test.",
)
@list_option(
    "--use",
    "uses",
    default=("calibration",),
    show_default=True,
    help=f"What the k windows do; repeat or comma list of {', '.join(CURVE_USES)}. "
    "calibration: they calibrate (k=0: the other users' 40 % calibrate, as in uim); "
    "adaptation: they join the training rows; both: k//2 train, the rest calibrate; "
    "cluster: as calibration from 20 windows on (at alpha 0.05), below it the other users "
    "of the target's cluster calibrate (the ukm strategy's rule).",
)
@whole_option(
    "--iterations",
    1,
    5,
    "Repetitions per target user; iteration i uses seed seed-base + i. Fewer than "
    "evaluate's 20: the curve fits models per target user and iteration.",
)
@click.option(
    "--seed-base",
    type=int,
    default=100,
    show_default=True,
    help="Seed of iteration 0; iteration i uses seed-base + i (windows drawn and models).",
)
@choice_option(
    "--split-seeds",
    SPLIT_SEEDS,
    "protocol",
    "protocol: the target's test and pool rows and the other users' training and "
    "calibration rows are drawn from the iteration's one seed; independent: each split "
    "gets its own, a child of numpy's SeedSequence(seed), as mueval evaluate "
    "--split-seeds. Recorded in run.json.",
)
@level_option("--alpha", 0.05, "Miscoverage level (0.05 = 95% confidence).")
@choice_option(
    "--score",
    SCORES,
    "lac",
    "Conformity score (MAPIE's names). The protocol uses lac. raps is MAPIE 1.x's own "
    "tuned RAPS: --threshold mapie and --small-cal skip only.",
)
@choice_option(
    "--threshold",
    THRESHOLD_RULES,
    "study",
    "Conformal threshold rule: study (MAPIE 0.8.6's, reproduces the study) or "
    "mapie (MAPIE 1.x's finite-sample rule); see mueval evaluate --help.",
)
@choice_option(
    "--small-cal",
    SMALL_CAL_POLICIES,
    "full-set",
    "A calibration set below max(1/alpha, 1/(1-alpha)) rows (k < 20 at alpha "
    "0.05): answer every class (full-set), record NaN (skip) or stop (error). "
    "Points it touched are marked * and hollow in the figure. (mueval evaluate "
    "defaults to error: there a small calibration set is a mistake, here small k are "
    "the point.)",
)
@whole_option(
    "--min-test", 1, 20, "Test rows a user keeps beside the largest k; smaller users are skipped."
)
@jobs_option
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write curve.csv, curve_users.csv, curve.svg (or --figure-format) and run.json here.",
)
@stack(*figure_options("--out"))
@click.option("--overwrite", is_flag=True, help="Replace the files of a non-empty --out.")
@table_option
@dataset_source_options
def curve_command(
    dataset: str | None,
    data_file: Path | None,
    user_col: str,
    label_col: str,
    ks: tuple[str, ...],
    uses: tuple[str, ...],
    out: Path | None,
    overwrite: bool,
    jobs: int,
    table_format: str,
    figure_format: str,
    dpi: int,
    titles: bool,
    **options: Any,
) -> None:
    """How many labelled windows does a new user need? Coverage, set size and
    accuracy against k labelled windows of each target user, with 95 %
    intervals over users.

    \b
    Example:
      mueval curve --dataset gestures --manual-dir data/gestures --k 0,5,10,20,50 \\
          --use calibration --iterations 3 --out runs/gestures-curve
    """
    data = chosen_data(dataset, data_file)
    # Here, not at the top: pandas and scikit-learn, which `mueval --help` does without.
    from mueval.conformal.settings import ConformalSettings
    from mueval.evaluation.labelcurve import (
        CURVE_SETTINGS,
        CurveConfig,
        auto_ks,
        curve_run,
        parse_ks,
        parse_uses,
    )

    source = {key: options.pop(key) for key in SOURCE_OPTIONS}
    auto = [k.strip().lower() for k in ks] == ["auto"]
    uses_parsed = parse_uses(uses)
    # Checked before the data are read; auto's values come from the table.
    settings = ConformalSettings(**{key: options.pop(key) for key in CURVE_SETTINGS})
    config = CurveConfig(
        ks=(0,) if auto else parse_ks(",".join(ks)),
        uses=uses_parsed,
        conformal=settings,
        **options,
    )
    if out is not None and out.is_dir() and any(out.iterdir()) and not overwrite:
        raise click.UsageError(f"{out} is not empty; give --overwrite to replace its curve files")
    table = load_chosen_data(data, user_col, label_col, source)
    if auto:
        chosen = auto_ks(table.users, uses_parsed, settings.alpha, config.min_test)
        config = dataclasses.replace(config, ks=chosen)
    result = curve_run(table, config, jobs=jobs)
    info = table.info
    # With --table csv or markdown, stdout holds the table alone.
    aside = table_format != "text"
    click.echo(
        f"{plain(info.get('name'))}: {info['n_users']} users, {len(table.classes)} classes; "
        f"classifier={config.classifier}, alpha={settings.alpha}, "
        f"iterations={config.iterations}, intervals: Student-t 95 % over users",
        err=aside,
    )
    if auto:
        click.echo(
            f"k: {', '.join(map(str, config.ks))} (--k auto: from the smallest k whose "
            f"calibration set gives informative sets at alpha {settings.alpha:g} to the largest "
            f"every user, or else the median user, can give beside --min-test "
            f"{config.min_test})",
            err=aside,
        )
    if aside:
        click.echo(render_table(*curve_rows(result.curve), table_format))
    else:
        click.echo(format_curve(result.curve))
    for note in result.notes:
        click.echo(printable(f"note: {note}"), err=True)
    if out is not None:
        folder = result.save(
            out, overwrite=overwrite, figure_format=figure_format, dpi=dpi, titles=titles
        )
        click.echo(f"\ncurve folder: {folder}", err=aside)
