"""Coverage per class and per group of users, with Clopper-Pearson intervals."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from mueval.data.users import user_texts
from mueval.errors import DataError, UsageError
from mueval.guarantees.intervals import clopper_pearson

__all__ = ["group_coverage"]


def group_coverage(
    rows: pd.DataFrame,
    by: str,
    *,
    alpha: float,
    confidence: float = 0.95,
    user_groups: pd.Series | None = None,
    order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Coverage per class or per group of users, with Clopper-Pearson intervals.

    Parameters
    ----------
    rows : DataFrame
        Prediction rows: ``strategy, classifier, userid, y_true, covered``.
    by : str
        ``"class"`` (the row's true class) or ``"group"`` (its user's group).
    alpha : float
        Miscoverage level; ``below`` is true when the whole interval lies below
        ``1 - alpha``.
    confidence : float
    user_groups : Series, optional
        Group per user (text), indexed by the user id as text; needed for
        ``by="group"``.
    order : sequence of str, optional
        Order of the groups in the output (default: sorted).

    Returns
    -------
    DataFrame
        ``strategy, classifier, by, group, n_users, n, n_covered, coverage,
        low, high, below``, one row per (strategy, classifier, group).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"strategy": "mm", "classifier": "rf", "userid": [1, 1, 2, 2],
    ...                      "y_true": ["a", "b", "a", "a"], "covered": [True, False, True, True]})
    >>> group_coverage(rows, "class", alpha=0.1)[["group", "n", "coverage"]].values.tolist()
    [['a', 3, 1.0], ['b', 1, 0.0]]
    """
    keys = user_texts(rows["userid"])
    if by == "class":
        group = rows["y_true"].astype(str)
    elif by == "group" and user_groups is not None:
        group = keys.map(user_groups)
        if group.isna().any():
            message = f"user {keys[group.isna()].iloc[0]} of the predictions has no group"
            raise DataError(message)
    else:
        message = f"by must be 'class' or 'group' (with user_groups); found {by!r}"
        raise UsageError(message)
    frame = pd.DataFrame(
        {
            "strategy": rows["strategy"].to_numpy(),
            "classifier": rows["classifier"].to_numpy(),
            "group": group.to_numpy(),
            "user": keys.to_numpy(),
            "covered": rows["covered"].to_numpy(dtype=bool),
        }
    )
    table = (
        frame.groupby(["strategy", "classifier", "group"], sort=False)
        .agg(n_users=("user", "nunique"), n=("covered", "size"), n_covered=("covered", "sum"))
        .reset_index()
    )
    # Strategies and classifiers in the order the rows give them, groups in ``order``.
    ranks = {
        "strategy": {v: i for i, v in enumerate(pd.unique(frame["strategy"]))},
        "classifier": {v: i for i, v in enumerate(pd.unique(frame["classifier"]))},
        "group": {g: i for i, g in enumerate(order if order is not None else sorted(set(group)))},
    }
    table = table.sort_values(
        ["strategy", "classifier", "group"], key=lambda c: c.map(ranks[c.name]), kind="stable"
    ).reset_index(drop=True)
    n, k = table["n"].to_numpy(), table["n_covered"].to_numpy()
    table["coverage"] = k / n
    table["low"], table["high"] = clopper_pearson(k, n, confidence)
    table["below"] = table["high"].to_numpy() < 1.0 - alpha
    table.insert(2, "by", by)
    return table
