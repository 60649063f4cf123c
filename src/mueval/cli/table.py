"""The ``mueval table`` command: the study's tables of a saved run, for a paper.

A plain :func:`click.command`; the ``mueval`` group attaches it. A run folder
that cannot be read, or an output file that cannot be written, exits 1.
"""

from __future__ import annotations

from pathlib import Path

import click

from mueval.cli.base import Command
from mueval.cli.options import table_options
from mueval.files import write_atomic
from mueval.names import parse_classifiers, parse_strategies

__all__ = ["table_command"]


def _kept(asked: tuple[str, ...], parse, present: set[str], column: str) -> list[str] | None:
    """The codes asked for, each present in the run; None for every one."""
    if not asked or any(a.lower() == "all" for a in asked):
        return None
    codes = parse(asked, present)
    unknown = [c for c in codes if c not in present]
    if unknown:
        msg = f"{', '.join(unknown)} not in the run; choose from {', '.join(sorted(present))}"
        raise click.BadParameter(msg, param_hint=f"--{column}")
    return codes


@click.command("table", cls=Command)
@table_options
def table_command(
    run_dir: Path,
    table_format: str,
    out: Path | None,
    rows: str,
    strategies: tuple[str, ...],
    classifiers: tuple[str, ...],
) -> None:
    """Write a run folder's tables for a paper: LaTeX, CSV or Markdown.

    The study's Tables 6-9: one table per strategy, metrics as rows, classifiers
    as columns, mean ± SD over iterations; the numbers are those `mueval
    evaluate` prints, to the same digits.

    \b
    Examples:
      mueval table runs/wisdm > tables.tex
      mueval table runs/wisdm --format csv --out tables.csv
      mueval table runs/wisdm --format markdown -s mm,ucm --rows all
    """
    # Here, not at the top: pandas, which `mueval --help` does without.
    from mueval.report.paper import paper_tables, render_paper
    from mueval.runfolder import read_run_folder

    # The tables need the summary alone; the per-user guarantees are not read.
    run = read_run_folder(run_dir, guarantees=False)
    summary = run.summary
    keep_s = _kept(strategies, parse_strategies, set(summary["strategy"]), "strategy")
    keep_c = _kept(classifiers, parse_classifiers, set(summary["classifier"]), "classifier")
    if keep_s is not None:
        summary = summary[summary["strategy"].isin(keep_s)]
    if keep_c is not None:
        summary = summary[summary["classifier"].isin(keep_c)]
    text = render_paper(paper_tables(summary, rows=rows), table_format)
    if out is None:
        click.echo(text, nl=False)
        return
    folder = out.parent
    if not folder.is_dir():
        msg = f"cannot write the table to {out}: {folder} is not a folder"
        raise click.ClickException(msg)

    def write(path: Path) -> None:
        path.write_text(text, encoding="utf-8")

    write_atomic(folder, out.name, write)
    click.echo(f"wrote {out}", err=True)
