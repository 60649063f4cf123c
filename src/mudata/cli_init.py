"""The ``mudata init`` command: a thin wrapper over :func:`mudata.drafting.draft.draft_entry`.

:mod:`mudata.cli` adds it to the ``mudata`` group; this module does not import the group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mudata.cli_options import LoggingCommand, init_help_options, init_options
from mudata.display import plain
from mudata.files import atomic_write


@click.command("init", cls=LoggingCommand)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@init_options
@init_help_options
def init_command(
    paths: tuple[Path, ...],
    name: str,
    output: Path | None,
    kind: str,
    sampling_rate: float | None,
    min_per_class: int,
    force: bool,
    **choices: Any,
) -> None:
    """Draft a registry entry from files you have: PATHS is one folder, one archive, or files.

    The draft names the layout, the user, label, time and channel columns (or
    the path pattern holding them), every class with its count, the sampling
    rate, and pins the sha256 of every file (pinned on first use, not
    published hashes). Edit it, then `mudata register NAME.toml`.

    Documentation and metadata files are left out (--include/--exclude
    override); columns that are counters, times, window ids, constant or
    mostly empty are never signals. When init cannot guess, name the columns
    (--label, --user, --time, --recording, --channels, --features), the path
    pattern (--path-pattern), the streams to keep of a file holding several
    (--stream, --stream-align) or the window (--window).
    """
    # Here, not at the top: pandas-heavy; only for this command.
    from mudata.drafting.draft import draft_entry
    from mudata.drafting.records import Choices

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
        choices=Choices(**choices),
    )
    atomic_write(target, draft.toml)
    # One line per item, each escaped whole: a label or user id holding a line
    # break (the report quotes both) cannot forge a line of its own.
    click.echo("\n".join(map(plain, draft.report)), err=True)
    click.echo(f"draft written to {target}; edit it, then: mudata register {target}", err=True)
    click.echo(str(target))


__all__ = ["init_command"]
