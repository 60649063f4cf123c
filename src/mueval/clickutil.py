"""The one mapping from mueval's errors to exit codes, for every command.

An error mueval raises on purpose becomes a usage error (exit 2, for
:class:`~mueval.errors.UsageError`) or a runtime error (exit 1, every other
:class:`~mueval.errors.MuevalError`, and an ``OSError`` from the file system)
with its own message. Anything else is a
bug: one line says so (exit 1), and the traceback is printed only with ``-v``
on the ``mueval`` group.
"""

from __future__ import annotations

import traceback
from typing import Any

import click

from mueval.errors import MuevalError, UsageError

__all__ = ["Command", "Group", "map_errors"]


def map_errors(ctx: click.Context, call: Any) -> Any:
    """Run ``call()`` and turn the exceptions it raises into Click's."""
    try:
        return call()
    except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except UsageError as exc:
        raise click.UsageError(str(exc), ctx=ctx) from exc
    except (MuevalError, OSError) as exc:
        # OSError: a file that cannot be read or written (permissions, a full
        # disk) is a runtime failure to report, not a bug.
        raise click.ClickException(str(exc)) from exc
    except Exception as exc:
        if ctx.find_root().params.get("verbose"):
            click.echo(traceback.format_exc(), err=True, nl=False)
            hint = ""
        else:
            hint = " (run with -v for the traceback)"
        found = " ".join(str(exc).split())[:200]
        message = f"internal error, please report it: {type(exc).__name__}: {found}{hint}"
        raise click.ClickException(message) from exc


class Command(click.Command):
    """A command whose errors are mapped by :func:`map_errors`, even when it is
    invoked on its own rather than through the group."""

    def invoke(self, ctx: click.Context) -> Any:
        return map_errors(ctx, lambda: super(Command, self).invoke(ctx))


class Group(click.Group):
    """A group whose subcommands are :class:`Command` by default."""

    command_class = Command

    def invoke(self, ctx: click.Context) -> Any:
        return map_errors(ctx, lambda: super(Group, self).invoke(ctx))
