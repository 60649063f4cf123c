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

from mudata.cli_options import printable, render_table
from mudata.display import plain
from mueval.cli.base import Command
from mueval.cli.options import compare_options, jobs_option, report_options
from mueval.comparison.runs import compare_runs, labels_of, run_labels, unmatched_lines
from mueval.comparison.significance import CORRECTED_TEST, STUDY_TEST, WILCOXON_TEST
from mueval.comparison.tables import adjust_statement, table_notes, wide_table
from mueval.errors import UsageError
from mueval.files import neutralise_formulas, write_atomic
from mueval.names import COMPARABLE_METRICS, parse_classifiers, parse_strategies
from mueval.runfolder import RunFolder, read_run_folder

__all__ = ["compare_command", "report_command", "run_labels"]

_METRICS = COMPARABLE_METRICS


def _read(path: Path) -> RunFolder:
    return read_run_folder(path)


@click.command("report", cls=Command)
@report_options
@jobs_option
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
    figure_format: str,
    dpi: int,
    titles: bool,
    others: tuple[Path, ...],
    jobs: int,
) -> None:
    """Build an HTML report (report.html + figures/) from a run folder.

    With --figures all, --jobs worker processes draw the (strategy, classifier)
    sections in parallel while this process builds the rest of the page; the
    page does not depend on it.
    """
    # Here, not at the top: matplotlib, which `mueval --help` does without.
    from mueval.cli.warning_text import warning_line
    from mueval.report.build import build_report

    run = _read(run_dir)
    strategies = _in_run(strategies, parse_strategies, run, "strategy")
    classifiers = _in_run(classifiers, parse_classifiers, run, "classifier")
    target = out if out is not None else run_dir / "report"
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
        jobs=jobs,
        figure_format=figure_format,
        dpi=dpi,
        titles=titles,
        overwrite=overwrite,
    )
    kind = figure_format.upper() + (f" at {dpi} dpi" if figure_format == "png" else "")
    folder = plain(target / "figures")
    click.echo(f"wrote {plain(result.html)} ({len(result.figures)} figures as {kind} in {folder})")
    # Each with the severity run.json and the page give it; the sections' notes after.
    for w in result.warnings:
        click.echo(printable(warning_line(w)), err=True)
    for note in result.notes:
        click.echo(printable(f"note: {note}"), err=True)


def _in_run(asked: tuple[str, ...], parse, run: RunFolder, column: str) -> tuple[str, ...]:
    """The codes asked for (aliases and ``all`` expanded as by evaluate), each present
    in the run; ``all`` or nothing asked: every one of the run (``()``)."""
    if not asked or any(a.lower() == "all" for a in asked):
        return ()
    present = set(run.predictions[column])
    # A run's own models' names are classifiers of it, as the built-in codes, and
    # so are its strategies of the user's.
    codes = parse(asked, present)
    unknown = [c for c in codes if c not in present]
    if unknown:
        msg = f"{', '.join(unknown)} not in the run; choose from {', '.join(sorted(present))}"
        raise click.BadParameter(msg, param_hint=f"--{column}")
    return tuple(codes)


@click.command("compare", cls=Command)
@compare_options
def compare_command(
    run_dirs: tuple[Path, ...],
    metric: str,
    strategies: tuple[str, ...],
    classifiers: tuple[str, ...],
    all_pairs: bool,
    out: Path | None,
    guarantees: bool,
    table_format: str,
    adjust: str,
) -> None:
    """Test differences between strategies in one or more run folders of one dataset.

    One run: every pair of its strategies, per classifier. Several runs: each
    strategy against itself in the other runs (--all-pairs: every pair). Three
    labelled tests per pair: the study's Welch t-test over iterations
    (uncorrected), Nadeau and Bengio's corrected resampled t-test (paired by
    iteration) and a Wilcoxon signed-rank test over users (paired by user).
    The p-values are adjusted by Holm within each test (--adjust none: not);
    both raw and adjusted are shown. What has nothing to be compared with (a
    classifier or strategy of one run only) is listed as "not compared: ...".
    The terminal shows one line per pair; --out writes every test and column.
    """
    # The tests read the splits and predictions; only --guarantees needs the
    # per-user guarantees, most of the reading time.
    runs = [read_run_folder(p, guarantees=guarantees) for p in run_dirs]
    # After reading: the runs' strategies of the user's are strategies too.
    known = {s for r in runs for s in pd.unique(r.splits["strategy"])}
    try:
        codes_s = parse_strategies(strategies, known) if strategies else None
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--strategy") from exc
    # After reading: the runs' own models' names are classifiers too.
    present = {c for r in runs for c in pd.unique(r.splits["classifier"])}
    try:
        codes_c = parse_classifiers(classifiers, present) if classifiers else None
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--classifier") from exc
    if guarantees:
        _compare_guarantees(
            runs, out, codes_s, codes_c, all_pairs=all_pairs, table_format=table_format
        )
        return
    # With --table csv or markdown, stdout holds the table alone.
    aside = table_format != "text"
    result = compare_runs(
        runs,
        metric=metric,
        strategies=codes_s,
        classifiers=codes_c,
        all_pairs=all_pairs,
        adjust=adjust,
    )
    for warning in result.warnings:
        click.echo(printable(f"warning: {warning}"), err=True)
    table = result.table
    with pd.option_context(
        "display.max_rows", None, "display.max_columns", None, "display.width", 250
    ):
        cells = (
            "p-value and the study's stars"
            if adjust == "none"
            else "raw/adjusted p-value and the adjusted one's stars"
        )
        click.echo(
            f"metric: {metric}; cells: {cells} (ns p > 0.05, * <= 0.05, ..., **** <= 0.0001)",
            err=aside,
        )
        click.echo(_shown(wide_table(table), table_format))
    legend = f"welch: {STUDY_TEST}; corrected: {CORRECTED_TEST}; wilcoxon: {WILCOXON_TEST}."
    click.echo(legend, err=aside)
    click.echo(adjust_statement(table), err=aside)
    for note in table_notes(table):
        click.echo(printable(note), err=aside)
    for line in result.unmatched:
        click.echo(printable(line), err=aside)
    if out is not None:
        replaced = _replaced(out)
        _write_csv(table, out)
        click.echo(f"wrote {out} (every test with its notes){replaced}", err=aside)
    else:
        click.echo("--out FILE writes every test with its statistic, df and notes.", err=aside)


def _shown(frame: pd.DataFrame, table_format: str) -> str:
    """A printed table: pandas' aligned text, or :func:`render_table`'s CSV or Markdown."""
    if table_format == "text":
        # Labels and user ids come from run folders: escaped as render_table escapes them.
        safe = frame.rename(columns=plain).map(lambda v: plain(v) if isinstance(v, str) else v)
        return safe.to_string(index=False)
    return render_table(list(frame.columns), frame.astype(object).values.tolist(), table_format)


# The columns printed (--out writes them all).
_GUARANTEE_SHOWN: tuple[str, ...] = (
    "strategy",
    "classifier",
    "n_users",
    "n_below",
    "share_below",
    "worst_user",
    "worst_coverage",
    "worst_low",
    "worst_high",
    "pooled_coverage",
    "pooled_low",
    "pooled_high",
)


def _code(label: str) -> str:
    """The strategy code of a label ``run/code`` (or of a bare code)."""
    return label.rsplit("/", 1)[-1]


def _compare_guarantees(
    runs: list[RunFolder],
    out: Path | None,
    strategies: list[str] | None,
    classifiers: list[str] | None,
    *,
    all_pairs: bool,
    table_format: str,
) -> None:
    """``mueval compare --guarantees``: the summaries side by side, then the tests
    (two tables, a blank line between them, whatever ``table_format``)."""
    # Here, not at the top: scipy, which `mueval --help` does without.
    from mueval.comparison.guarantees import compare_guarantees

    result = compare_guarantees(runs)
    for warning in result.warnings:
        click.echo(printable(f"warning: {warning}"), err=True)
    summary, tests = result.summary, result.tests
    if strategies is not None:
        summary = summary[summary.strategy.map(_code).isin(strategies)]
        keep = tests.strategy_a.map(_code).isin(strategies)
        tests = tests[keep & tests.strategy_b.map(_code).isin(strategies)]
    if classifiers is not None:
        summary = summary[summary.classifier.isin(classifiers)]
        tests = tests[tests.classifier.isin(classifiers)]
    if len(runs) > 1 and not all_pairs:
        # Each strategy against itself in another run, as for the tests above.
        same = tests.strategy_a.map(_code) == tests.strategy_b.map(_code)
        tests = tests[same & (tests.strategy_a != tests.strategy_b)]
    shown = summary[list(_GUARANTEE_SHOWN)].copy()
    for col in shown.columns:
        if col.endswith(("coverage", "_low", "_high", "share_below")):
            shown[col] = shown[col].map(lambda v: f"{v:.3f}")
    tests = tests.copy()
    tests["p_value"] = tests["p_value"].map(lambda v: f"{v:.3g}")
    aside = table_format != "text"
    with pd.option_context("display.max_columns", None, "display.width", 250):
        click.echo(
            f"target coverage: {1 - result.alpha:g}; n_below: users "
            f"{' / '.join(dict.fromkeys(result.verdicts))} (exact per-user test); intervals: "
            "Clopper-Pearson 95 %, a description of the observed rate",
            err=aside,
        )
        click.echo(_shown(shown, table_format))
        click.echo("")
        click.echo(_shown(tests, table_format))
    # What has nothing to be matched with in the other runs, named as for the tests.
    for line in unmatched_lines(
        runs,
        labels_of(runs),
        [],
        strategies=strategies,
        classifiers=classifiers,
        all_pairs=all_pairs,
    ):
        click.echo(printable(line), err=aside)
    if out is not None:
        tests_out = out.with_name(f"{out.stem}.tests.csv")
        # The tests' file is named after OUT, not by the user: say so when one is replaced.
        replaced = _replaced(out, tests_out)
        _write_csv(summary, out)
        _write_csv(result.tests.loc[tests.index], tests_out)
        click.echo(f"wrote {out} and {tests_out}{replaced}", err=aside)


def _replaced(*paths: Path) -> str:
    """``"; replaced the existing A and B"`` for the ``paths`` that exist, else ``""``."""
    existing = [str(p) for p in paths if p.exists() or p.is_symlink()]
    return f"; replaced the existing {' and '.join(existing)}" if existing else ""


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
