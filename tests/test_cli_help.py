"""Every command of both tools explains each of its options and shows its default,
without a literal ``%%``.

Click does not %-format help strings, so ``%%`` in the source prints as ``%%``;
an option with a default and no help shows a bare ``[default: 5]``.
"""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from mudata.cli import main as mudata_main
from mueval.cli.main import main as mueval_main


def _commands(
    group: click.Group, prefix: tuple[str, ...]
) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``group`` (lazy ones included), with its path of names."""
    ctx = click.Context(group)
    found: list[tuple[tuple[str, ...], click.Command]] = [(prefix, group)]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
        else:
            found.append(((*prefix, name), command))
    return found


COMMANDS = _commands(mudata_main, ("mudata",)) + _commands(mueval_main, ("mueval",))


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_has_help(path: tuple[str, ...], command: click.Command) -> None:
    bare = [
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option) and not (param.help or "").strip()
    ]
    assert not bare, f"{' '.join(path)}: options without help text: {bare}"


# What an option without a default holds (click 8.3 and later; None before).
_NO_DEFAULT = (None, getattr(click.core, "UNSET", None))


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_default_is_shown(path: tuple[str, ...], command: click.Command) -> None:
    """A value option with a default says it: ``show_default`` or ``[default: ...]``
    in its help (flags and counters such as ``-v`` speak for themselves)."""
    ctx = click.Context(command)
    silent = [
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option)
        and not (param.is_flag or param.count or param.multiple)
        and param.get_default(ctx, call=False) not in _NO_DEFAULT
        and not param.show_default
        and "[default" not in (param.help or "")
    ]
    assert not silent, f"{' '.join(path)}: defaults not shown: {silent}"


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_rendered_help_has_no_double_percent(path: tuple[str, ...], command: click.Command) -> None:
    root = mudata_main if path[0] == "mudata" else mueval_main
    result = CliRunner().invoke(root, [*path[1:], "--help"])
    assert result.exit_code == 0, result.output
    assert "%%" not in result.output, f"{' '.join(path)} --help shows a literal %%"
