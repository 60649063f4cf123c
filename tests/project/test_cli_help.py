"""Every command of both tools follows one convention (docs/cli.md): each option
explained with its default and without a literal ``%%``; ``-v`` and
``--data-home`` before or after the command; list options taking comma lists and
repeats; one default per shared option name, or the difference said in both
helps; ``--table {text,csv,markdown}`` on every command that prints a table.

Click does not %-format help strings, so ``%%`` in the source prints as ``%%``;
an option with a default and no help shows a bare ``[default: 5]``.
"""

from __future__ import annotations

import csv
import io
import logging
import re

import click
import pytest
from click.testing import CliRunner

from mudata.cli import main as mudata_main
from mudata.cli_options import TABLE_FORMATS, data_home_option, split_commas, verbose_option
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


# --- One convention for both tools (docs/cli.md) ----------------------------------


def _shared_callback(decorator) -> object:
    """The callback an option decorator of mudata.cli_options installs."""
    return decorator(lambda: None).__click_params__[0].callback


_VERBOSE_CALLBACK = _shared_callback(verbose_option)
_DATA_HOME_CALLBACK = _shared_callback(data_home_option)


def _root(path: tuple[str, ...]) -> click.Group:
    return mudata_main if path[0] == "mudata" else mueval_main


def _option(command: click.Command, name: str) -> click.Option | None:
    return next((p for p in command.params if isinstance(p, click.Option) and name in p.opts), None)


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_verbosity_is_accepted_before_and_after_the_command(
    path: tuple[str, ...], command: click.Command
) -> None:
    """``-v`` is the shared counted option on every command and group of both
    tools, and the command line takes it on either side of the command's name."""
    verbose = _option(command, "-v")
    assert verbose is not None and verbose.count, f"{' '.join(path)}: no counted -v"
    assert verbose.callback is _VERBOSE_CALLBACK, f"{' '.join(path)}: -v of its own"
    for args in (["-v", *path[1:], "--help"], [*path[1:], "-vv", "--help"]):
        result = CliRunner().invoke(_root(path), args)
        assert result.exit_code == 0, f"{' '.join(args)}: {result.output}"


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_data_home_is_global_where_it_is_taken(
    path: tuple[str, ...], command: click.Command, tmp_path
) -> None:
    """Both groups take ``--data-home``; a command that reads datasets takes it
    after its name too, through the same callback (the later one wins)."""
    before = CliRunner().invoke(_root(path), ["--data-home", str(tmp_path), *path[1:], "--help"])
    assert before.exit_code == 0, before.output
    option = _option(command, "--data-home")
    if option is not None:
        assert option.callback is _DATA_HOME_CALLBACK, f"{' '.join(path)}: its own --data-home"


def test_mueval_verbosity_before_and_after_adds_up(tmp_path) -> None:
    """``mueval -v compare X -v`` logs at DEBUG, as mudata does (the command fails
    on a folder that is no run, after logging is set up)."""
    logging.getLogger().setLevel(logging.WARNING)
    result = CliRunner().invoke(mueval_main, ["-v", "compare", str(tmp_path), "-v"])
    assert result.exit_code == 1, result.output
    assert logging.getLogger().level == logging.DEBUG
    logging.getLogger().setLevel(logging.WARNING)


def _list_options() -> list[tuple[tuple[str, ...], click.Option]]:
    return [
        (path, param)
        for path, command in COMMANDS
        for param in command.params
        if isinstance(param, click.Option) and param.multiple
    ]


LIST_OPTIONS = _list_options()


@pytest.mark.parametrize(
    "path,param", LIST_OPTIONS, ids=[f"{' '.join(p)} {o.opts[0]}" for p, o in LIST_OPTIONS]
)
def test_every_list_option_takes_comma_lists_and_repeats(
    path: tuple[str, ...], param: click.Option
) -> None:
    """A repeatable option of names or numbers splits comma lists too; only paths
    and globs, which may hold a comma, are repeat-only, and their help says so."""
    if isinstance(param.type, click.Path) or "no comma lists" in (param.help or ""):
        assert param.callback is not split_commas
        return
    assert param.callback is split_commas, f"{' '.join(path)} {param.opts[0]}: repeats only"
    ctx = click.Context(click.Command("x"))
    repeated = param.process_value(ctx, ("a", "b", "c"))
    assert param.process_value(ctx, ("a,b", "c")) == repeated == ("a", "b", "c")
    assert param.process_value(ctx, ("a, b,c",)) == repeated


_COMMA = re.compile(r"\bcomma\b|comma-separated", re.IGNORECASE)


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_no_option_takes_a_comma_list_without_repeats(
    path: tuple[str, ...], command: click.Command
) -> None:
    """An option whose help speaks of commas is a list option (or refuses them)."""
    comma_only = [
        p.opts[0]
        for p in command.params
        if isinstance(p, click.Option)
        and _COMMA.search(p.help or "")
        and not p.multiple
        and "no comma lists" not in (p.help or "")
    ]
    assert not comma_only, f"{' '.join(path)}: comma lists without repeats: {comma_only}"


def _shared_names() -> list[tuple[str, list[tuple[str, click.Option]]]]:
    by_name: dict[str, list[tuple[str, click.Option]]] = {}
    for path, command in COMMANDS:
        for param in command.params:
            if isinstance(param, click.Option):
                by_name.setdefault(max(param.opts, key=len), []).append((" ".join(path), param))
    return sorted((n, uses) for n, uses in by_name.items() if len(uses) > 1)


SHARED = _shared_names()


def _default(param: click.Option) -> object:
    value = param.get_default(click.Context(click.Command("x")), call=False)
    return (None if value in _NO_DEFAULT else value, param.multiple)


@pytest.mark.parametrize("name,uses", SHARED, ids=[n for n, _ in SHARED])
def test_a_shared_option_has_one_default_or_says_where_it_differs(
    name: str, uses: list[tuple[str, click.Option]]
) -> None:
    """The same option name on two commands has the same default (and takes one
    value or several alike), or each help names the other command."""
    unexplained = [
        (a, b)
        for i, (a, pa) in enumerate(uses)
        for b, pb in uses[i + 1 :]
        if _default(pa) != _default(pb)
        and not (b.split()[-1] in (pa.help or "") and a.split()[-1] in (pb.help or ""))
    ]
    assert not unexplained, f"{name}: defaults differ, unexplained in help: {unexplained}"


#: The commands that print a table (docs/cli.md); each takes --table.
TABLE_COMMANDS = {
    ("mudata", "list"),
    ("mueval", "evaluate"),
    ("mueval", "curve"),
    ("mueval", "compare"),
}


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_table_option_rule(path: tuple[str, ...], command: click.Command) -> None:
    """``--table {text,csv,markdown}`` on every command that prints a table, and
    ``--table`` means nothing else anywhere."""
    option = _option(command, "--table")
    if path in TABLE_COMMANDS:
        assert option is not None, f"{' '.join(path)} prints a table but has no --table"
    if option is not None:
        assert isinstance(option.type, click.Choice)
        assert tuple(option.type.choices) == TABLE_FORMATS
        assert option.default == "text"


def test_mudata_list_table_forms_hold_the_same_rows() -> None:
    runner = CliRunner()
    text = runner.invoke(mudata_main, ["list"])
    as_csv = runner.invoke(mudata_main, ["list", "--table", "csv"])
    markdown = runner.invoke(mudata_main, ["list", "--table", "markdown"])
    assert text.exit_code == as_csv.exit_code == markdown.exit_code == 0
    rows = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert rows[0] == ["name", "built", "download", "users", "title", "licence"]
    # The text form has the same header (less the licence, bracketed after each title).
    header, *listed = text.stdout.splitlines()
    assert header.split() == rows[0][:-1]
    names = [line.split()[0] for line in listed]
    assert [r[0] for r in rows[1:]] == names
    lines = markdown.stdout.splitlines()
    assert lines[1].startswith("| --- |") and len(lines) == len(rows) + 1
    both = runner.invoke(mudata_main, ["list", "--json", "--table", "csv"])
    assert both.exit_code == 2 and "not both" in both.output
