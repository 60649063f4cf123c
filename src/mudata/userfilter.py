"""The study's user filter, as a rule: keep users with enough rows of every class."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pandas as pd

from mudata.errors import EmptyResultError

log = logging.getLogger(__name__)


@dataclass
class FilterReport:
    """What the filter did: kept users and, for each dropped user, why."""

    kept: list[int]
    dropped: dict[int, str] = field(default_factory=dict)


def filter_users(
    table: pd.DataFrame, classes: list[str], min_per_class: int, *, dataset: str = "dataset"
) -> tuple[pd.DataFrame, FilterReport]:
    """Keep the users who have at least ``min_per_class`` rows of every class.

    Parameters
    ----------
    table : DataFrame
        Columns ``userid`` and ``label`` (class names) at least.
    classes : list of str
        The classes every kept user must have.
    min_per_class : int
        The minimum number of rows per (user, class); the study uses 5.
    dataset : str
        Named in log lines and errors.

    Returns
    -------
    (DataFrame, FilterReport)
        The kept rows in their original order, and the report.

    Raises
    ------
    EmptyResultError
        When no user passes.
    """
    counts = pd.crosstab(table["userid"], table["label"]).reindex(columns=classes, fill_value=0)
    passing = (counts >= min_per_class).all(axis=1)
    report = FilterReport(kept=[int(u) for u in counts.index[passing]])
    for user in counts.index[~passing]:
        short = counts.loc[user][counts.loc[user] < min_per_class]
        reason = ", ".join(f"{label}: {int(n)}" for label, n in short.items())
        report.dropped[int(user)] = f"fewer than {min_per_class} rows of {reason}"
        log.info("%s: user %s dropped (%s)", dataset, user, report.dropped[int(user)])
    if not report.kept:
        message = (
            f"{dataset}: no user has at least {min_per_class} rows of every class "
            f"{classes}; {len(report.dropped)} users were dropped"
        )
        raise EmptyResultError(message)
    kept = table[table["userid"].isin(report.kept)].reset_index(drop=True)
    return kept, report
