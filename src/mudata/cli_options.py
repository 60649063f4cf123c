"""Click building blocks shared by the ``mudata`` command and by other front ends.

Every command that fetches a dataset takes the same options with the same
checks: :func:`fetch_options` declares them once (``--data-home``,
``--mirror``, ``--manual-dir``, ``--allow-unverified``, ``--max-expansion``,
``--progress``). :class:`ErrorMappingGroup` maps a package's exception family to
exit codes in one place (2 for usage errors, 1 for the rest, one line for a
bug). The global options ``-v`` and ``--data-home`` are accepted both before
and after the subcommand name (:func:`verbose_option`, :func:`data_home_option`).
Every option that takes several names or numbers takes repeats and comma lists
alike (:func:`list_option`), and every command that prints a table takes
``--table {text,csv,markdown}`` (:data:`table_option`, :func:`render_table`).
The conventions are written down in ``docs/cli.md``.

mueval imports these so that ``mueval evaluate`` and ``mudata fetch`` cannot
drift apart.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import re
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import click

from mudata.display import MESSAGE_LIMIT, EscapingFormatter, formula_safe, plain, shown
from mudata.errors import cli_message

__all__ = [
    "DATA_HOME_KEY",
    "SOURCE_OPTIONS",
    "TABLE_FORMATS",
    "VERBOSE_KEY",
    "ErrorMappingGroup",
    "EscapedArgumentsCommand",
    "FiniteFloatRange",
    "LoggingCommand",
    "build_options",
    "configure_logging",
    "data_home_option",
    "dataset_source_options",
    "fetch_options",
    "init_help_options",
    "init_options",
    "list_option",
    "manual_dir_option",
    "printable",
    "render_table",
    "split_commas",
    "stack",
    "table_option",
    "verbose_option",
]

F = TypeVar("F", bound=Callable[..., Any])

# Keys in ``click.Context.meta``, which every context of one invocation shares:
# that is how a value given before the subcommand reaches it.
VERBOSE_KEY = "mudata.verbose"
DATA_HOME_KEY = "mudata.data_home"


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange that also refuses ``nan`` and ``inf``.

    A range check lets them through (``nan > 0`` is false, and ``inf`` has no
    upper bound), and ``--window inf`` then stopped deep inside a build.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def _count_verbosity(ctx: click.Context, _param: click.Parameter, value: int) -> int:
    # -v before and after the subcommand add up: `mudata -v fetch x -v` is -vv.
    ctx.meta[VERBOSE_KEY] = ctx.meta.get(VERBOSE_KEY, 0) + (value or 0)
    return ctx.meta[VERBOSE_KEY]


def verbose_option(func: F) -> F:
    """``-v``/``--verbose`` (counted), accepted on the group and on each command.

    The total is kept in ``ctx.meta[VERBOSE_KEY]``; :class:`LoggingCommand`
    sets up logging from it once every option is parsed.
    """
    return click.option(
        "-v",
        "--verbose",
        count=True,
        expose_value=False,
        callback=_count_verbosity,
        help="Log what each stage does (-v info, -vv debug); before or after the command.",
    )(func)


def _remember_data_home(
    ctx: click.Context, _param: click.Parameter, value: Path | None
) -> Path | None:
    # Given after the subcommand, it wins over one given before it.
    if value is not None:
        ctx.meta[DATA_HOME_KEY] = value
    return ctx.meta.get(DATA_HOME_KEY)


def data_home_option(func: F | None = None, *, expose_value: bool = True) -> Any:
    """``--data-home DIR``; on a group use ``expose_value=False``, on a command the default.

    The command receives ``data_home``: its own value, else the group's, else None.
    """

    def decorate(f: F) -> F:
        return click.option(
            "--data-home",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            expose_value=expose_value,
            callback=_remember_data_home,
            help="Data directory (default: $MUDATA_HOME, else the OS cache folder for 'mudata').",
        )(f)

    return decorate(func) if func is not None else decorate


def split_commas(
    _ctx: click.Context, param: click.Parameter, value: Sequence[str] | None
) -> tuple[str, ...]:
    """The values of a list option, repeats and comma lists alike, in the order given.

    ``--x a,b --x c`` gives ``("a", "b", "c")``; spaces around an item are
    dropped. An option given with nothing but commas is a usage error.

    Examples
    --------
    >>> split_commas(None, None, ("a, b", "c"))
    ('a', 'b', 'c')
    """
    given = tuple(value or ())
    items = tuple(part.strip() for v in given for part in str(v).split(",") if part.strip())
    if given and not items:
        name = param.opts[0] if param is not None and param.opts else "the option"
        raise click.BadParameter(f"{name}: expected values separated by commas, got {given!r}")
    return items


def list_option(*param_decls: str, **attrs: Any) -> Callable[[F], F]:
    """An option that takes several values: repeated (``--x a --x b``), as a comma
    list (``--x a,b``) or both; the command receives a tuple of str.

    One declaration for every list option of both tools, so that none takes
    only one of the two forms. Options whose values may hold a comma (paths,
    shell globs) stay repeat-only and do not use this.
    """
    attrs.setdefault("metavar", "A,B,...")
    return click.option(*param_decls, multiple=True, callback=split_commas, **attrs)


#: The forms ``--table`` offers; ``text`` is each command's aligned layout.
TABLE_FORMATS: tuple[str, ...] = ("text", "csv", "markdown")

#: ``--table FORMAT``, on every command that prints a table; the command receives
#: ``table_format``.
table_option = click.option(
    "--table",
    "table_format",
    type=click.Choice(TABLE_FORMATS),
    default="text",
    show_default=True,
    help="Print the table as aligned text, CSV or a Markdown table (the same rows and "
    "columns); with csv or markdown, stdout holds the table alone and every other line "
    "goes to stderr.",
)


def render_table(header: Sequence[str], rows: Sequence[Sequence[object]], table_format: str) -> str:
    """One table as ``text`` (left-aligned columns), ``csv`` or ``markdown``.

    Parameters
    ----------
    header : sequence of str
        Column names.
    rows : sequence of sequence
        One sequence of cells per row, as long as ``header``; cells are printed
        with ``str`` (None as empty).
    table_format : {"text", "csv", "markdown"}

    Returns
    -------
    str
        Without a final newline. Every header and cell is escaped
        (:func:`mudata.display.plain`: labels, ids and titles come from files);
        in CSV a text cell a spreadsheet would run as a formula is prefixed
        with ``'`` (:func:`mudata.display.formula_safe`), as in the CSV files
        mueval writes, unless it reads as a plain number.

    Examples
    --------
    >>> print(render_table(["a", "b"], [[1, "x|y"]], "markdown"))
    | a | b |
    | --- | --- |
    | 1 | x\\|y |
    >>> print(render_table(["id"], [["=HYPERLINK(1)"], ["-0.5"], ["\\x1b[2J"]], "csv"))
    id
    '=HYPERLINK(1)
    -0.5
    \\x1b[2J
    """
    cells = [["" if c is None else _cell(c, table_format) for c in row] for row in rows]
    head = [_cell(h, table_format) for h in header]
    if table_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(head)
        writer.writerows(cells)
        return buffer.getvalue().rstrip("\n")
    if table_format == "markdown":

        def line(values: Sequence[str]) -> str:
            # A pipe would end the cell and a newline the row.
            safe = [" ".join(v.replace("|", "\\|").split()) for v in values]
            return "| " + " | ".join(safe) + " |"

        return "\n".join([line(head), line(["---"] * len(head)), *map(line, cells)])
    if table_format == "text":
        widths = [max(len(r[i]) for r in [head, *cells]) for i in range(len(head))]
        return "\n".join(
            "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
            for r in [head, *cells]
        )
    message = f"unknown table format {table_format!r}; valid: {', '.join(TABLE_FORMATS)}"
    raise ValueError(message)


#: A cell that reads as a plain decimal number: a number for a spreadsheet too.
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _cell(value: object, table_format: str) -> str:
    """One cell's text: escaped, and in CSV safe from being run as a formula."""
    text = plain(str(value))
    if table_format == "csv" and isinstance(value, str) and not _NUMBER.fullmatch(text):
        return formula_safe(text)
    return text


def manual_dir_option(func: F) -> F:
    """``--manual-dir DIR``: an existing folder (checked by click, exit 2 otherwise)."""
    return click.option(
        "--manual-dir",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help="Use files you already have: the release archive, or its extracted members, in this folder.",
    )(func)


def stack(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator that applies ``decorators`` so that ``--help`` lists them in order.

    Click shows a command's options in the order their decorators run, bottom
    up; this applies the first decorator last, so the list reads as ``--help``.
    """

    def decorate(func: F) -> F:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return decorate


#: The keyword arguments :func:`dataset_source_options` gives a command.
SOURCE_OPTIONS: tuple[str, ...] = (
    "data_home",
    "mirror",
    "manual_dir",
    "allow_unverified",
    "max_expansion",
)


def dataset_source_options(func: F) -> F:
    """The options that say where a dataset's files come from and what they may do.

    The command receives ``data_home``, ``mirror``, ``manual_dir``,
    ``allow_unverified`` and ``max_expansion``, keyword arguments of
    :func:`mudata.fetch` and :func:`mudata.load` of the same names. ``mueval
    evaluate`` uses them as they are, so the two commands check them alike.
    """
    return stack(
        data_home_option,
        click.option(
            "--mirror",
            metavar="URL",
            default=None,
            help="Fetch the same files (same names, same hashes) from this base address.",
        ),
        manual_dir_option,
        click.option(
            "--allow-unverified",
            is_flag=True,
            help="Accept files whose SHA-256 the registry does not record (the hash seen is kept "
            "in the provenance).",
        ),
        click.option(
            "--max-expansion",
            type=FiniteFloatRange(min=0, min_open=True),
            default=None,
            metavar="RATIO",
            help="How far an archive may expand, in bytes per archive byte (default: "
            "$MUDATA_MAX_EXPANSION, else 100; archives may always reach 64 MiB). Raise it "
            "only for archives you trust.",
        ),
    )(func)


def fetch_options(func: F) -> F:
    """:func:`dataset_source_options` and ``--progress/--no-progress`` (download bars).

    The command receives ``progress`` as well.
    """
    func = click.option(
        "--progress/--no-progress",
        default=None,
        help="Download progress bars (default: on a terminal only).",
    )(func)
    return dataset_source_options(func)


def printable(message: object) -> str:
    """A message (an error, a warning, a note) as the command line prints it: every
    unprintable character but its own line breaks and tabs escaped, cut to
    :data:`MESSAGE_LIMIT` characters.

    The last net under the messages: a name, label or excerpt that no message
    builder escaped still reaches the terminal escaped.
    """
    return shown(str(message), MESSAGE_LIMIT, quote=False, keep="\n\t")


def configure_logging(verbosity: int) -> None:
    """WARNING by default, INFO with -v, DEBUG with -vv (for the whole process)."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    root = logging.getLogger()
    if not root.handlers:
        # As logging.basicConfig would, with a formatter that escapes what the
        # messages quote (member names, labels, ids) and caps each line.
        handler = logging.StreamHandler()
        handler.setFormatter(EscapingFormatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(level)
    if verbosity > 0:
        # basicConfig does nothing where handlers exist already (an embedding
        # application, pytest): the asked-for level must hold all the same.
        logging.getLogger().setLevel(level)


class EscapedArgumentsCommand(click.Command):
    """A command whose argument errors quote the arguments escaped.

    click's own parse errors are one line quoting what was given (an unexpected
    argument, an unknown option, a bad value): a file name from a glob may hold
    terminal escapes or a line break, so the whole line is escaped
    (:func:`mudata.display.plain`).
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.exceptions.ClickException as exc:
            if isinstance(exc.message, str):
                # click types ``message`` Final, yet its printing reads it: rewritten in
                # place, the exception keeps its class, context and parameter hints.
                exc.message = plain(exc.message)  # type: ignore[misc]
            raise


class LoggingCommand(EscapedArgumentsCommand):
    """A command that accepts ``-v`` after its name and sets up logging before it runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        verbose_option(self)

    def invoke(self, ctx: click.Context) -> Any:
        configure_logging(ctx.meta.get(VERBOSE_KEY, 0))
        return super().invoke(ctx)


class ErrorMappingGroup(click.Group):
    """A group that maps its package's exceptions to exit codes, for every command.

    Subclasses name the exception families:

    - ``usage_errors``: the request is wrong (exit 2, like click's own usage errors);
    - ``runtime_errors``: the request is fine but could not be carried out (exit 1);
    - anything else is a bug: one line saying so (exit 1), with the traceback
      under ``-v`` only.

    Commands therefore raise their package's errors and never catch them to
    choose an exit code. Commands get ``-v`` (see :class:`LoggingCommand`).
    """

    usage_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    runtime_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    program: ClassVar[str] = "this program"
    command_class = LoggingCommand

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.ClickException as exc:
            # click's own messages quote what they were given (a file name, a value);
            # ``message`` is Final in click's types, rewritten in place as above.
            exc.message = printable(exc.message)  # type: ignore[misc]
            raise
        except (click.exceptions.Exit, click.Abort):
            raise
        except self.usage_errors as exc:
            raise click.UsageError(printable(cli_message(exc))) from None
        except self.runtime_errors as exc:
            raise click.ClickException(printable(cli_message(exc))) from None
        except Exception as exc:
            verbose = ctx.meta.get(VERBOSE_KEY, 0) > 0
            if verbose:
                traceback.print_exc()
            message = (
                f"internal error in {self.program} ({type(exc).__name__}: {shown(str(exc), quote=False)}); "
                f"this is a bug, please report it"
                + ("" if verbose else "; run with -v for the traceback")
            )
            raise click.ClickException(message) from None


#: ``mudata fetch``'s options beyond :func:`fetch_options`: what to build.
build_options = stack(
    click.option(
        "--force", is_flag=True, help="Rebuild the table even if an up-to-date one exists."
    ),
    click.option(
        "--min-users",
        type=click.IntRange(min=2),
        default=2,
        show_default=True,
        help="Fewest users the table must keep after the user filter.",
    ),
)

#: ``mudata init``: the draft's name and file, and what the files could not say.
init_options = stack(
    click.option(
        "--name",
        required=True,
        help="Registry name of the dataset (lowercase letters, digits, - and _).",
    ),
    click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Where to write the draft (default: ./NAME.toml).",
    ),
    click.option(
        "--kind",
        type=click.Choice(["auto", "signals", "features"]),
        default="auto",
        show_default=True,
        help="Raw signals or a feature table; detected by default.",
    ),
    click.option(
        "--sampling-rate",
        type=FiniteFloatRange(min=0, min_open=True),
        default=None,
        metavar="HZ",
        help="Sampling rate, when the files have no time column to estimate it from.",
    ),
    click.option(
        "--min-per-class",
        type=click.IntRange(min=0),
        default=5,
        show_default=True,
        help="The user filter's minimum rows per user and class.",
    ),
    click.option("--force", is_flag=True, help="Overwrite an existing draft."),
)


#: ``mudata init``: what the files cannot say, named by the user.
init_help_options = stack(
    click.option("--label", metavar="COL", help="The label column (a name, or a 1-based number)."),
    click.option("--user", metavar="COL", help="The user column."),
    click.option("--time", metavar="COL", help="The time column."),
    click.option("--recording", metavar="COL", help="The column telling recordings apart."),
    click.option(
        "--label-file",
        metavar="NAME",
        help="Of feature tables whose labels and users are in side files (one integer a "
        "line): the label's, relative to each table's folder, {split} for its split "
        "('y_{split}.txt').",
    ),
    click.option(
        "--user-file",
        metavar="NAME",
        help="Of such tables: the user's side file ('subject_{split}.txt').",
    ),
    list_option(
        "--channels",
        metavar="A,B,C",
        help="Signal columns, any number (names, or 1-based numbers for files without a "
        "header); a comma list, or repeated. Their names group them into sensors "
        "(acc_x,acc_y,acc_z: tri-axial; channel1..channel8: one of 8 channels).",
    ),
    list_option(
        "--features",
        help="Feature columns of a feature table; a comma list, or repeated.",
    ),
    click.option(
        "--path-pattern",
        metavar="PATTERN",
        help="Where user, label and recording sit in the file paths: a regular expression "
        "with named groups, or a template such as 'a{label}_s{user}_t{recording}_*.mat'.",
    ),
    click.option(
        "--stream",
        "streams",
        metavar="KEY=VALUE,...",
        multiple=True,
        help="A stream to keep, of a file holding several (devices, sensor types) told apart "
        "by key columns: 'Sensor ID=1,Sensor Type=0' (repeatable; a selector holds commas, so "
        "no comma lists; default: every stream).",
    ),
    click.option(
        "--stream-align",
        type=click.Choice(["slowest", "per-stream"]),
        default=None,
        help="How streams of different rates are windowed: resampled at the slowest one's "
        "timestamps (default), or each stream windowed on its own.",
    ),
    click.option(
        "--include",
        metavar="GLOB",
        multiple=True,
        help="Only files matching GLOB are data (repeatable; a glob may hold a comma, so "
        "no comma lists).",
    ),
    click.option(
        "--exclude",
        metavar="GLOB",
        multiple=True,
        help="Leave files matching GLOB out (repeatable; no comma lists, as for --include).",
    ),
    click.option(
        "--window",
        type=FiniteFloatRange(min=0, min_open=True),
        default=None,
        metavar="SECONDS",
        help="Window length of the study-window recipe (default 3 s).",
    ),
    click.option(
        "--max-missing",
        type=FiniteFloatRange(min=0, max=1),
        default=0.9,
        show_default=True,
        help="Leave out columns with a larger fraction of empty cells.",
    ),
    list_option(
        "--drop-class",
        metavar="CODE",
        help="Leave the class CODE out of the draft, so that fetch drops its rows; a comma "
        "list, or repeated.",
    ),
    list_option(
        "--keep-class",
        metavar="CODE",
        help="Keep the class CODE that init flags as null, unmarked or undocumented; a "
        "comma list, or repeated.",
    ),
)
