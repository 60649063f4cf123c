"""The report's "Runs side by side" section: this run's per-user guarantees beside
other runs of the same dataset (a random and a blocked within-user split, say).

Built from :func:`mueval.comparison.guarantees.compare_guarantees`, so the
numbers are those ``mueval compare --guarantees`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from mueval.comparison.guarantees import compare_guarantees
from mueval.report.html import Section, list_html, note_html, table_html
from mueval.runfolder import RunFolder

__all__ = ["side_by_side_section"]

_HEADER = ["strategy", "classifier", "pooled coverage", "users below target", "worst user"]
_TEST_HEADER = ["classifier", "A", "B", "below under A only", "below under B only", "users"]
_TEST_HEADER += ["p", "level"]


def _interval(value: float, low: float, high: float) -> str:
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def side_by_side_section(run: RunFolder, others: Sequence[RunFolder]) -> Section | None:
    """A section comparing ``run`` with ``others``, or None without others.

    Raises
    ------
    mueval.errors.DataError
        The runs evaluate different datasets or use different alpha.
    """
    if not others:
        return None
    result = compare_guarantees([run, *others])
    rows = [
        [
            r.strategy,
            r.classifier,
            _interval(r.pooled_coverage, r.pooled_low, r.pooled_high),
            f"{r.n_below} of {r.n_users} ({r.share_below:.0%})",
            f"{r.worst_user}: {_interval(r.worst_coverage, r.worst_low, r.worst_high)}",
        ]
        for r in cast("Iterable[Any]", result.summary.itertuples())
    ]
    tests = [
        [r.classifier, r.strategy_a, r.strategy_b, r.only_a, r.only_b, r.n, r.p_value, r.stars]
        for r in cast("Iterable[Any]", result.tests.itertuples())
    ]
    body = [
        note_html(
            f"Target coverage {1 - result.alpha:g}. Runs: {', '.join(result.labels)}; a "
            "strategy found in several runs is prefixed with its run's label. A user is "
            f"{' / '.join(dict.fromkeys(result.verdicts))} by the exact per-user test of its "
            "covered count; intervals are Clopper-Pearson 95 %, a description of the "
            "observed rate, not that test."
        ),
        table_html(_HEADER, rows, caption="Per-user guarantees, run by run"),
        table_html(
            _TEST_HEADER,
            tests,
            caption="McNemar's exact test: do A and B leave different users below target?",
        ),
    ]
    if result.warnings:
        body.append(list_html(result.warnings))
    return Section("Runs side by side", "side-by-side", body)
