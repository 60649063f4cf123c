"""The ``mueval report`` and ``mueval compare`` commands.

Both are plain :func:`click.command` objects; the ``mueval`` group attaches them.
Bad arguments exit 2 (click's usage errors); a run folder that cannot be read or
reported exits 1 through :class:`click.ClickException`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import pandas as pd

from mudata.cli_options import printable
from mueval.cli.base import Command
from mueval.cli.options import compare_options, report_options
from mueval.comparison.significance import compare_runs, run_labels
from mueval.errors import OutputError
from mueval.files import neutralise_formulas, write_atomic
from mueval.names import COMPARABLE_METRICS
from mueval.runfolder import RunFolder, read_run_folder

__all__ = ["compare_command", "report_command", "run_labels"]

_METRICS = COMPARABLE_METRICS


def _read(path: Path) -> RunFolder:
    return read_run_folder(path)


def _printable(text: str) -> str:
    """Folder names as labels: control characters (terminal escapes) shown as ``?``."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


@click.command("report", cls=Command)
@report_options
def report_command(
    run_dir: Path,
    out: Path | None,
    overwrite: bool,
    strategies: tuple[str, ...],
    classifiers: tuple[str, ...],
    n_boot: int,
    seed: int,
    top_sets: int,
    min_count: int,
    progress: bool | None,
    figures: str,
    others: tuple[Path, ...],
) -> None:
    """Build an HTML report (report.html + figures/) from a run folder."""
    # Here, not at the top: matplotlib, which `mueval --help` does without.
    from mueval.guarantees.run_warnings import warning_line
    from mueval.report.build import build_report
    from mueval.report.folder import prepare_report_folder, remove_stale_figures

    run = _read(run_dir)
    present_s = set(run.predictions["strategy"])
    present_c = set(run.predictions["classifier"])
    for opt, asked, present in (
        ("--strategy", strategies, present_s),
        ("--classifier", classifiers, present_c),
    ):
        unknown = sorted(set(asked) - present)
        if unknown:
            msg = f"{unknown} not in the run; choose from {sorted(present)}"
            raise click.BadParameter(msg, param_hint=opt)
    target = out if out is not None else run_dir / "report"
    try:
        prepare_report_folder(target, overwrite=overwrite)
    except OutputError as exc:
        raise click.ClickException(str(exc)) from exc
    result = build_report(
        run,
        target,
        strategies=strategies or None,
        classifiers=classifiers or None,
        n_boot=n_boot,
        seed=seed,
        top_sets=top_sets,
        min_count=min_count,
        progress=sys.stderr.isatty() if progress is None else progress,
        figures=figures,
        others=[_read(p) for p in others],
    )
    if overwrite:
        remove_stale_figures(target, result.figures)
    n_png = sum(1 for p in result.figures if p.suffix == ".png")
    click.echo(f"wrote {result.html} ({n_png} figures as PNG and SVG in {target / 'figures'})")
    # Each with the severity run.json and the page give it; the sections' notes after.
    for w in result.warnings:
        click.echo(printable(warning_line(w)), err=True)
    for note in result.notes:
        click.echo(printable(f"note: {note}"), err=True)


@click.command("compare", cls=Command)
@compare_options
def compare_command(
    run_dirs: tuple[Path, ...], metric: str, out: Path | None, guarantees: bool
) -> None:
    """Test differences between strategies in one or more run folders of one dataset.

    Every pair of strategies, per classifier, under three labelled tests: the
    study's Welch t-test over iterations (uncorrected), Nadeau and Bengio's
    corrected resampled t-test (paired by iteration) and a Wilcoxon signed-rank
    test over users (paired by user).
    """
    runs = [_read(p) for p in run_dirs]
    if guarantees:
        _compare_guarantees(runs, out)
        return
    result = compare_runs(runs, metric=metric)
    for warning in result.warnings:
        click.echo(printable(f"warning: {warning}"), err=True)
    table = result.table
    shown = table.drop(columns=["note"]).copy()
    for col in ("mean_a", "mean_b", "statistic", "df"):
        shown[col] = shown[col].map(lambda v: f"{v:.4g}")
    shown["p_value"] = shown["p_value"].map(lambda v: f"{v:.3g}")
    with pd.option_context(
        "display.max_rows",
        None,
        "display.max_columns",
        None,
        "display.width",
        250,
        "display.max_colwidth",
        70,
    ):
        click.echo(f"metric: {metric}")
        click.echo(shown.to_string(index=False))
    notes = table[table.note != ""][["classifier", "strategy_a", "strategy_b", "test", "note"]]
    for r in notes.drop_duplicates("note").itertuples():
        click.echo(
            printable(f"note ({r.classifier} {r.strategy_a} vs {r.strategy_b}, {r.test}): {r.note}")
        )
    if out is not None:
        _write_csv(table, out)
        click.echo(f"wrote {out}")


# The columns printed (--out writes them all).
_GUARANTEE_SHOWN = ("strategy", "classifier", "n_users", "n_below", "share_below", "worst_user")
_GUARANTEE_SHOWN += ("worst_coverage", "worst_low", "worst_high")
_GUARANTEE_SHOWN += ("pooled_coverage", "pooled_low", "pooled_high")


def _compare_guarantees(runs: list[RunFolder], out: Path | None) -> None:
    """``mueval compare --guarantees``: the summaries side by side, then the tests."""
    # Here, not at the top: scipy, which `mueval --help` does without.
    from mueval.comparison.guarantees import compare_guarantees

    result = compare_guarantees(runs)
    for warning in result.warnings:
        click.echo(printable(f"warning: {warning}"), err=True)
    shown = result.summary[list(_GUARANTEE_SHOWN)].copy()
    for col in shown.columns:
        if col.endswith(("coverage", "_low", "_high", "share_below")):
            shown[col] = shown[col].map(lambda v: f"{v:.3f}")
    tests = result.tests.copy()
    tests["p_value"] = tests["p_value"].map(lambda v: f"{v:.3g}")
    with pd.option_context("display.max_columns", None, "display.width", 250):
        click.echo(
            f"target coverage: {1 - result.alpha:g}; n_below: users "
            f"{' / '.join(dict.fromkeys(result.verdicts))} (exact per-user test); intervals: "
            "Clopper-Pearson 95 %, a description of the observed rate"
        )
        click.echo(shown.to_string(index=False))
        click.echo("")
        click.echo(tests.to_string(index=False))
    if out is not None:
        tests_out = out.with_name(f"{out.stem}.tests.csv")
        _write_csv(result.summary, out)
        _write_csv(result.tests, tests_out)
        click.echo(f"wrote {out} and {tests_out}")


def _write_csv(table: pd.DataFrame, out: Path) -> None:
    """The table as CSV at ``out``: formula-leading text neutralised, written beside and
    renamed over (a link or FIFO at ``out`` is refused, never written through)."""
    folder = out.parent
    if not folder.is_dir():
        msg = f"cannot write the comparison table to {out}: {folder} is not a folder"
        raise click.ClickException(msg)
    try:
        write_atomic(folder, out.name, lambda p: neutralise_formulas(table).to_csv(p, index=False))
    except OSError as exc:  # OutputError included
        msg = f"cannot write the comparison table to {out}: {exc}"
        raise click.ClickException(msg) from exc
