"""The ``mudata init`` command: a thin wrapper over :func:`mudata.init.draft_entry`."""

from __future__ import annotations

from pathlib import Path

import click

from mudata._atomic import atomic_write
from mudata.cli import main


@main.command("init")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--name",
    required=True,
    help="Registry name of the dataset (lowercase letters, digits, - and _).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the draft (default: ./NAME.toml).",
)
@click.option(
    "--kind",
    type=click.Choice(["auto", "signals", "features"]),
    default="auto",
    show_default=True,
    help="Raw signals or a feature table; detected by default.",
)
@click.option(
    "--sampling-rate",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="HZ",
    help="Sampling rate, when the files have no time column to estimate it from.",
)
@click.option(
    "--min-per-class",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="The user filter's minimum rows per user and class.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing draft.")
def init_command(
    paths: tuple[Path, ...],
    name: str,
    output: Path | None,
    kind: str,
    sampling_rate: float | None,
    min_per_class: int,
    force: bool,
) -> None:
    """Draft a registry entry from files you have: PATHS is one folder, one archive, or files.

    The draft names the layout, the user, label, time and channel columns (or
    the path pattern holding them), every class with its count, the sampling
    rate, and pins the sha256 of every file (pinned on first use, not
    published hashes). Edit it, then `mudata register NAME.toml`.
    """
    from mudata.init import draft_entry  # pandas-heavy; only for this command

    target = output if output is not None else Path.cwd() / f"{name}.toml"
    if target.exists() and not force:
        raise click.UsageError(f"{target} exists; pass --force to overwrite it")
    draft = draft_entry(
        list(paths),
        name,
        output=target,
        kind=kind,
        sampling_rate_hz=sampling_rate,
        min_per_class=min_per_class,
    )
    atomic_write(target, draft.toml)
    click.echo("\n".join(draft.report), err=True)
    click.echo(f"draft written to {target}; edit it, then: mudata register {target}", err=True)
    click.echo(str(target))
