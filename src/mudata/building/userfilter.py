"""The study's user filter, as a rule: keep users with enough rows of every class."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pandas as pd

from mudata.errors import EmptyResultError, Reason
from mudata.records.classes import user_sort_key

log = logging.getLogger(__name__)


@dataclass
class FilterReport:
    """What the filter did: kept users and, for each dropped user, why and how many rows.

    User ids are text (see :mod:`mudata.records.classes`), listed in the table's order.
    """

    kept: list[str]
    dropped: dict[str, str] = field(default_factory=dict)
    rows_dropped: dict[str, int] = field(default_factory=dict)

    def describe_dropped(self) -> str:
        """One line per dropped user: its id and the reason."""
        return "\n".join(f"  user {u}: {why}" for u, why in self.dropped.items()) or "  (none)"


def user_report(
    table: pd.DataFrame, classes: list[str], min_per_class: int, *, dataset: str = "dataset"
) -> FilterReport:
    """The users the filter keeps and drops (with reasons), without dropping anything.

    Parameters are those of :func:`filter_users`; ``mudata init`` prints this
    report for a draft entry.
    """
    users = pd.Series(table["userid"]).astype(str)
    counts = pd.crosstab(users, table["label"]).reindex(columns=classes, fill_value=0)
    counts = counts.reindex(user_sort_key(counts.index))
    passing = (counts >= min_per_class).all(axis=1)
    report = FilterReport(kept=[str(u) for u in counts.index[passing]])
    rows = users.value_counts()
    for user in counts.index[~passing]:
        short = counts.loc[user][counts.loc[user] < min_per_class]
        reason = ", ".join(f"{label}: {int(n)}" for label, n in short.items())
        report.dropped[str(user)] = f"fewer than {min_per_class} rows of {reason}"
        report.rows_dropped[str(user)] = int(rows.get(user, 0))
        log.info("%s: user %s dropped (%s)", dataset, user, report.dropped[str(user)])
    return report


def filter_users(
    table: pd.DataFrame,
    classes: list[str],
    min_per_class: int,
    *,
    dataset: str = "dataset",
    min_users: int = 1,
) -> tuple[pd.DataFrame, FilterReport]:
    """Keep the users who have at least ``min_per_class`` rows of every class.

    Parameters
    ----------
    table : DataFrame
        Columns ``userid`` (text) and ``label`` (class names) at least.
    classes : list of str
        The classes every kept user must have.
    min_per_class : int
        The minimum number of rows per (user, class); the study uses 5.
    dataset : str
        Named in log lines and errors.
    min_users : int
        Fewest users that must pass; the pipeline asks for 2 at least.

    Returns
    -------
    (DataFrame, FilterReport)
        The kept rows in their original order, and the report (users listed
        numerically when every id is a number, else as text).

    Raises
    ------
    EmptyResultError
        When fewer than ``min_users`` users pass (at least one must), listing
        every user dropped and why.
    """
    report = user_report(table, classes, min_per_class, dataset=dataset)
    if len(report.kept) < max(min_users, 1):
        message = (
            f"{dataset}: {len(report.kept)} user(s) {report.kept} have at least "
            f"{min_per_class} rows of every class {classes}; at least {max(min_users, 1)} "
            f"are needed (--min-users). Users dropped, and why:\n{report.describe_dropped()}"
        )
        raise EmptyResultError(message, reason=Reason("empty", "min_per_class"))
    kept = table[table["userid"].astype(str).isin(report.kept)]
    return kept.reset_index(drop=True), report


__all__ = ["FilterReport", "filter_users", "user_report"]
