"""Coverage per class and per cohort of users, with Clopper-Pearson intervals.

The interval describes the observed rate; the verdict "below target" of a
class or cohort is the exact test of :mod:`.conditional_verdicts`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from mueval.data.frames import frame_column
from mueval.data.users import user_texts
from mueval.errors import DataError, UsageError
from mueval.guarantees.intervals import clopper_pearson

__all__ = ["conditional_coverage"]


def conditional_coverage(
    rows: pd.DataFrame,
    by: str,
    *,
    confidence: float = 0.95,
    user_cohorts: pd.Series | None = None,
    order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Coverage per class or per cohort of users, with Clopper-Pearson intervals.

    Parameters
    ----------
    rows : DataFrame
        Prediction rows: ``strategy, classifier, userid, y_true, covered``.
    by : str
        ``"class"`` (the row's true class) or ``"cohort"`` (its user's cohort).
    confidence : float
    user_cohorts : Series, optional
        Cohort per user (text), indexed by the user id as text; needed for
        ``by="cohort"``.
    order : sequence of str, optional
        Order of the values (classes or cohorts) in the output (default: sorted).

    Returns
    -------
    DataFrame
        ``strategy, classifier, by, value, n_users, n, n_covered, coverage,
        low, high``, one row per (strategy, classifier, value).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"strategy": "mm", "classifier": "rf", "userid": [1, 1, 2, 2],
    ...                      "y_true": ["a", "b", "a", "a"], "covered": [True, False, True, True]})
    >>> conditional_coverage(rows, "class")[["value", "n", "coverage"]].values.tolist()
    [['a', 3, 1.0], ['b', 1, 0.0]]
    """
    keys = user_texts(rows["userid"])
    if by == "class":
        value = rows["y_true"].astype(str)
    elif by == "cohort" and user_cohorts is not None:
        value = keys.map(user_cohorts)
        if value.isna().any():
            message = f"user {keys[value.isna()].iloc[0]} of the predictions has no cohort"
            raise DataError(message)
    else:
        message = f"by must be 'class' or 'cohort' (with user_cohorts); found {by!r}"
        raise UsageError(message)
    frame = pd.DataFrame(
        {
            "strategy": frame_column(rows["strategy"]),
            "classifier": frame_column(rows["classifier"]),
            "value": value.to_numpy(),
            "user": keys.to_numpy(),
            "covered": rows["covered"].to_numpy(dtype=bool),
        }
    )
    table = (
        frame.groupby(["strategy", "classifier", "value"], sort=False)
        .agg(n_users=("user", "nunique"), n=("covered", "size"), n_covered=("covered", "sum"))
        .reset_index()
    )
    # Strategies and classifiers in the order the rows give them, values in ``order``.
    ranks = {
        "strategy": {v: i for i, v in enumerate(pd.unique(frame["strategy"]))},
        "classifier": {v: i for i, v in enumerate(pd.unique(frame["classifier"]))},
        "value": {g: i for i, g in enumerate(order if order is not None else sorted(set(value)))},
    }

    def rank(column: pd.Series) -> pd.Series:
        return column.map(ranks[str(column.name)])

    table = table.sort_values(["strategy", "classifier", "value"], key=rank, kind="stable")
    table = table.reset_index(drop=True)
    n, k = table["n"].to_numpy(), table["n_covered"].to_numpy()
    table["coverage"] = k / n
    table["low"], table["high"] = clopper_pearson(k, n, confidence)
    table.insert(2, "by", by)
    return table
