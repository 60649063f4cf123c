"""The options of ``mueval report``, ``compare`` and ``table``, and the option
factories every ``mueval`` command builds its options with, declared once.

Each command takes one decorator (:data:`report_options`, :data:`compare_options`,
:data:`table_options`; ``evaluate``'s is :mod:`mueval.cli.evaluate_options`) that
applies its options in the order ``--help`` lists them. The options of one shape
(a choice, a whole number, a level in (0, 1)) come from one factory each
(:func:`choice_option`, :func:`whole_option`, :func:`level_option`). The values offered come from
:mod:`mueval.names`, so that the command line, the Python API and the run
folder speak the same names. Nothing here imports pandas, scikit-learn or MAPIE:
``mueval --help`` starts at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mudata.cli_options import FiniteFloatRange, list_option, stack, table_option
from mueval.cpus import JOBS_RULE, check_jobs, resolve_jobs, usable_cpus
from mueval.errors import UsageError
from mueval.names import (
    CLASSIFIERS,
    COMPARABLE_METRICS,
    COMPARE_ADJUSTMENTS,
    DEFAULT_STRATEGIES,
    PAPER_FORMATS,
    PAPER_ROWS,
    STRATEGIES,
)
from mueval.strategies import BUILTIN_STRATEGIES

if TYPE_CHECKING:
    from mueval.data.table import Table

F = TypeVar("F", bound=Callable[..., Any])


def choice_option(
    flag: str, choices: Sequence[str], default: str, help_text: str
) -> Callable[[F], F]:
    """An option that takes one of ``choices``, its default shown in ``--help``."""
    return click.option(
        flag, type=click.Choice(choices), default=default, show_default=True, help=help_text
    )


def whole_option(
    flag: str, low: int, default: int | None, help_text: str, *, metavar: str | None = None
) -> Callable[[F], F]:
    """An option that takes a whole number of ``low`` or more; a default of None
    (the help text then says what none means) is not shown."""
    return click.option(
        flag,
        type=click.IntRange(min=low),
        default=default,
        show_default=default is not None,
        metavar=metavar,
        help=help_text,
    )


def level_option(flag: str, default: float, help_text: str) -> Callable[[F], F]:
    """An option that takes a level strictly between 0 and 1, its default shown."""
    return click.option(
        flag,
        type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
        default=default,
        show_default=True,
        help=help_text,
    )


def _cap_jobs(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
    """None (evaluate's default) and -1 are every usable CPU; 0 is refused; more than
    the CPU count is lowered to it (each worker holds the data: more only multiplies memory)."""
    try:
        check_jobs(value)
    except UsageError:
        raise click.BadParameter(f"must be {JOBS_RULE}", ctx=ctx, param=param) from None
    cpus = usable_cpus()
    jobs = resolve_jobs(value)
    if jobs > cpus:
        click.echo(
            f"warning: --jobs {value} is more than the {cpus} CPU(s) here; using {cpus} "
            f"(each worker holds its own copy of the data, so more would only add memory)",
            err=True,
        )
        return cpus
    return jobs


def jobs_option_of(default: int | None, what: str) -> Callable[[F], F]:
    """``-j/--jobs``; ``default`` None is every CPU this process may use."""
    shown = (
        f"[default: every CPU this process may use, {usable_cpus()} here; mueval curve "
        "and report default to 1]"
        if default is None
        else f"[default: {default}; mueval evaluate defaults to every CPU]"
    )
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=-1),
        default=default,
        callback=_cap_jobs,
        help=f"Parallel worker processes (loky) {what}; -1 = every core. Results do not "
        f"depend on it. More than the CPU count is lowered to it, with a warning. {shown}",
    )


#: Worker processes of curve and report (evaluate's default differs: every core).
jobs_option = jobs_option_of(1, "for the work that can be shared")

__all__ = [
    "choice_option",
    "chosen_data",
    "classifier_option",
    "compare_options",
    "figure_options",
    "jobs_option",
    "jobs_option_of",
    "level_option",
    "load_chosen_data",
    "report_options",
    "strategy_option",
    "table_options",
    "usable_cpus",
    "whole_option",
]


def chosen_data(dataset: str | None, data_file: Path | None) -> str | Path:
    """What a command reads: ``--dataset NAME`` or ``--data FILE``, exactly one of them.

    Raises
    ------
    click.UsageError
        Both or neither are given.
    """
    chosen = [given for given in (dataset, data_file) if given is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --dataset NAME or --data FILE")
    return chosen[0]


def load_chosen_data(
    data: str | Path, user_col: str, label_col: str, source: Mapping[str, Any], **options: Any
) -> Table:
    """Load the table :func:`chosen_data` named, the dataset-source options for a dataset only.

    Parameters
    ----------
    data : str or Path
        A dataset's name, or the file of ``--data``.
    user_col, label_col : str
        The columns of ``--data``.
    source : mapping
        The options of :func:`mudata.cli_options.dataset_source_options`.
    **options
        Further keywords of :func:`mueval.data.table.load_data` (``input``).
    """
    # Here, not at the top: pandas, which `mueval --help` does without.
    from mueval.data.table import load_data

    given = {} if isinstance(data, Path) else dict(source)
    return load_data(data, user_col=user_col, label_col=label_col, **options, **given)


_STRATEGY_HELP = (
    "Evaluation strategy; repeat or give a comma list. "
    f"Codes: {', '.join(STRATEGIES)}; aliases: "
    + ", ".join(f"{a}={s.code}" for s in BUILTIN_STRATEGIES for a in s.aliases)
    + "; 'all'. "
    + " ".join(f"{s.code}: {s.help}" for s in BUILTIN_STRATEGIES)
    + " A strategy of your own: its import path module:attribute (a "
    "mueval.strategies.Strategy record). "
    f"[default: {','.join(DEFAULT_STRATEGIES)}]"
)


def strategy_option(help_text: str = _STRATEGY_HELP) -> Callable[[F], F]:
    """``-s/--strategy``: one or more strategies, as repeats or a comma list."""
    return list_option("--strategy", "-s", "strategies", help=help_text)


def classifier_option(default: str) -> Callable[[F], F]:
    """``-c/--classifier``: one or more classifiers; ``default`` says what none means here."""
    return list_option(
        "--classifier",
        "-c",
        "classifiers",
        help=f"Classifiers; repeat or comma list: {', '.join(CLASSIFIERS)}, all, or the "
        "name of a model of your own in the run. "
        f"[default: {default}; mueval curve takes one, rf by default]",
    )


def _included(what: str, where: str) -> str:
    """Help of -s in report and compare: which strategies of the run(s) are taken."""
    return (
        f"Strategies {what}, codes or aliases as for evaluate; repeat or comma list. "
        f"[default: every strategy in {where}]"
    )


def figure_options(where: str) -> tuple[Callable[[F], F], ...]:
    """``--figure-format``, ``--dpi`` and ``--titles``: how figures are written.

    Shared by every command that writes figures (``mueval report``, ``curve``).
    """
    return (
        choice_option(
            "--figure-format",
            ["svg", "pdf", "png"],
            "svg",
            f"Format of the figures in {where}: svg or pdf (vector, for papers), or png at --dpi.",
        ),
        click.option(
            "--dpi",
            type=click.IntRange(10, 2400),
            default=300,
            show_default=True,
            help="Resolution of PNG figures (vector figures have none).",
        ),
        click.option(
            "--titles/--no-titles",
            default=False,
            show_default=True,
            help="Draw a title in each figure. Without, the caption (the page's, or the "
            "docs') is the only title, as a paper wants it.",
        ),
    )


#: ``mueval report RUN_DIR``.
report_options = stack(
    click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path)),
    click.option(
        "--out",
        "out",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Output folder (default: RUN_DIR/report).",
    ),
    click.option(
        "--overwrite",
        is_flag=True,
        help="Replace an earlier report of mueval report in --out (never anything else).",
    ),
    strategy_option(_included("to include", "the run")),
    classifier_option("every classifier in the run"),
    whole_option(
        "--n-boot",
        10,
        200,
        "Bootstrap resamples for the diagnostics' intervals.",
    ),
    click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed."),
    whole_option(
        "--top-sets",
        1,
        20,
        "Most frequent prediction sets shown in the multiset chart.",
    ),
    whole_option(
        "--min-count",
        1,
        2,
        "Sets seen fewer times are left out of the multiset chart.",
    ),
    click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress bar on stderr. [default: only when stderr is a terminal]",
    ),
    choice_option(
        "--figures",
        ["none", "summary", "all"],
        "summary",
        "none: no figure; summary: page one's figures and one coverage-per-user figure "
        "per strategy; all: also every (strategy, classifier) section's figures.",
    ),
    *figure_options("figures/"),
    click.option(
        "--with",
        "others",
        multiple=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Another run folder of the same dataset and alpha (repeatable), e.g. the "
        "--split blocked run beside a random one: a 'Runs side by side' section compares "
        "their per-user guarantees.",
    ),
)

#: ``mueval compare RUN_DIR...``.
compare_options = stack(
    click.argument(
        "run_dirs",
        nargs=-1,
        required=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path),
    ),
    choice_option(
        "--metric",
        COMPARABLE_METRICS,
        "coverage",
        "Metric compared between strategies.",
    ),
    strategy_option(_included("to compare", "the runs")),
    classifier_option("every classifier in the runs"),
    click.option(
        "--all-pairs",
        is_flag=True,
        help="Several runs: every pair of strategies, also mismatched ones (a/uim against "
        "b/mm, and the pairs within each run). [default: each strategy against itself "
        "in the other runs, per classifier]",
    ),
    click.option(
        "--out",
        "out",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Also write the whole table as CSV here: one row per test, every column "
        "(notes, library warnings, cautions) the terminal leaves out.",
    ),
    choice_option(
        "--adjust",
        COMPARE_ADJUSTMENTS,
        "holm",
        "Multiple-comparison correction of the p-values, within each test (Welch, "
        "corrected, Wilcoxon) over all its pairs and classifiers: holm (Holm's step-down; "
        "the chance of any false 'significant' is at most the level, whatever the "
        "dependence between the tests) or none (each test alone, as the study read its "
        "stars). Both the raw and the adjusted p-values are shown and written.",
    ),
    table_option,
    click.option(
        "--guarantees",
        is_flag=True,
        help="Compare per-user guarantees instead: pooled coverage and the worst user with "
        "their intervals, the share of users below target (the exact per-user test at each "
        "run's --user-level after its --user-correction), and McNemar's exact test of "
        "whether two strategies leave different users below "
        "(--out: the summary, and the tests in OUT's name with .tests.csv).",
    ),
)

#: ``mueval table RUN_DIR``.
table_options = stack(
    click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path)),
    click.option(
        "--format",
        "table_format",
        type=click.Choice(PAPER_FORMATS),
        default="latex",
        show_default=True,
        help="latex: one booktabs table per strategy, cells $mean \\pm sd$ (the preamble "
        "needs \\usepackage{booktabs}); csv: one row per strategy, classifier and metric, "
        "the mean and the SD in columns of their own; markdown: one pipe table per strategy.",
    ),
    click.option(
        "--out",
        "out",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Write the table to this file (replaced if it exists; a link is refused). "
        "[default: print it on stdout]",
    ),
    choice_option(
        "--rows",
        PAPER_ROWS,
        "study",
        "study: the study's 14 rows of its Tables 6-9 (accuracy to OE); all: every "
        "metric and diagnostic of the run, as evaluate prints them.",
    ),
    strategy_option(_included("to include", "the run")),
    classifier_option("every classifier in the run"),
)
