"""The one mapping from mueval's errors to exit codes, for every command.

An error mueval raises on purpose becomes a usage error (exit 2, for
:class:`~mueval.errors.UsageError`) or a runtime error (exit 1, every other
:class:`~mueval.errors.MuevalError`, and an ``OSError`` from the file system)
with its own message, in the command line's words
(:func:`mudata.errors.cli_message`: flags where the API's message names keywords). Anything else is a
bug: one line says so (exit 1), and the traceback is printed only with ``-v``
(before or after the command's name).

Every command takes ``-v``/``--verbose`` and ``--data-home`` as ``mudata``'s
do (:mod:`mudata.cli_options`): the two tools follow one convention.
"""

from __future__ import annotations

import importlib
import traceback
from typing import Any

import click

from mudata.cli_options import (
    VERBOSE_KEY,
    EscapedArgumentsCommand,
    configure_logging,
    printable,
    verbose_option,
)
from mudata.display import shown
from mudata.errors import cli_message
from mueval.errors import MuevalError, UsageError

__all__ = ["Command", "Group", "LazyGroup", "map_errors"]


def map_errors(ctx: click.Context, call: Any) -> Any:
    """Run ``call()`` and turn the exceptions it raises into Click's."""
    try:
        return call()
    except click.exceptions.ClickException as exc:
        # click's own messages quote what they were given (a file name, a value).
        # click types ``message`` Final, yet its printing reads it: rewritten in
        # place, the exception keeps its class, context and parameter hints.
        exc.message = printable(exc.message)  # type: ignore[misc]
        raise
    except (click.exceptions.Exit, click.Abort):
        raise
    except UsageError as exc:
        raise click.UsageError(printable(cli_message(exc)), ctx=ctx) from exc
    except (MuevalError, OSError) as exc:
        # OSError: a file that cannot be read or written (permissions, a full
        # disk) is a runtime failure to report, not a bug.
        raise click.ClickException(printable(cli_message(exc))) from exc
    except Exception as exc:
        if ctx.meta.get(VERBOSE_KEY, 0) > 0:
            click.echo(traceback.format_exc(), err=True, nl=False)
            hint = ""
        else:
            hint = " (run with -v for the traceback)"
        found = shown(" ".join(str(exc).split()), quote=False)
        message = f"internal error, please report it: {type(exc).__name__}: {found}{hint}"
        raise click.ClickException(message) from exc


class Command(EscapedArgumentsCommand):
    """A command whose errors are mapped by :func:`map_errors`, even when it is
    invoked on its own rather than through the group; its parse errors quote
    the arguments escaped (:class:`~mudata.cli_options.EscapedArgumentsCommand`).

    It accepts ``-v`` after its name as well (counted with any before it), and
    sets up logging from the total before it runs.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        verbose_option(self)

    def invoke(self, ctx: click.Context) -> Any:
        configure_logging(ctx.meta.get(VERBOSE_KEY, 0))
        return map_errors(ctx, lambda: super(Command, self).invoke(ctx))


class Group(click.Group):
    """A group whose subcommands are :class:`Command` by default."""

    command_class = Command

    def invoke(self, ctx: click.Context) -> Any:
        return map_errors(ctx, lambda: super(Group, self).invoke(ctx))


class LazyGroup(Group):
    """A :class:`Group` whose listed subcommands are imported when first used.

    ``mueval report`` and ``compare`` need pandas; ``mueval --help`` should not
    wait for it. Each lazy command is given as ``name -> (import path, short
    help)``: the short help is what ``--help`` lists, so listing imports nothing
    (a test checks it against the command's own).

    Parameters
    ----------
    *args, **kwargs
        As for :class:`click.Group`.
    lazy_commands : dict of str to (str, str)
        Command name -> (``"module:attribute"``, short help).
    """

    def __init__(
        self, *args: Any, lazy_commands: dict[str, tuple[str, str]] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            module, attribute = self.lazy_commands[cmd_name][0].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max((len(n) for n in names), default=0)
        rows = []
        for name in names:
            if name in self.commands:
                command = self.commands[name]
                if command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
            else:
                rows.append((name, self.lazy_commands[name][1]))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
