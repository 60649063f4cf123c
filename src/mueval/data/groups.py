"""Groups of users for conditional calibration, and coverage per class and group.

``condition`` says what the conformal threshold is conditioned on
(``docs/per-user-guarantees.md``, section 4):

- ``None`` (the protocol): one threshold per calibration set;
- ``"class"``: one per class (Mondrian, the same as ``mondrian=True``);
- ``"group:COLUMN"``: one per group of users, a group being a value of a
  user-level attribute (age band, device, placement);
- ``"class+group:COLUMN"``: one per (group, class).

``:COLUMN`` may be left out when the groups file has a single column besides
``userid``. The attribute comes from a side CSV keyed by user (``userid`` and
the group column) or from a column of the evaluated table; it must be constant
within each user, and every evaluated user must have a value.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mueval.errors import DataError, UsageError

if TYPE_CHECKING:
    import pandas as pd

    from mueval.data.table import Table

__all__ = [
    "Condition",
    "RowGroups",
    "group_coverage",
    "parse_condition",
    "read_groups_file",
    "resolve_groups",
    "user_groups",
]

_FORMS = "none, class, group[:COLUMN] or class+group[:COLUMN]"


@dataclass(frozen=True)
class Condition:
    """What the conformal threshold is conditioned on.

    Attributes
    ----------
    per_class : bool
        One threshold per class.
    by_group : bool
        One threshold per group of users.
    column : str or None
        The group attribute (None: the only column of the groups file).
    """

    per_class: bool = False
    by_group: bool = False
    column: str | None = None

    @property
    def text(self) -> str | None:
        """The canonical spelling (``run.json``'s ``condition``), None for none."""
        parts = (["class"] if self.per_class else []) + (["group"] if self.by_group else [])
        if not parts:
            return None
        text = "+".join(parts)
        return f"{text}:{self.column}" if self.by_group and self.column else text


def parse_condition(value: str | None, *, mondrian: bool = False) -> Condition:
    """Parse a ``condition`` text; ``mondrian=True`` is ``"class"``.

    Examples
    --------
    >>> parse_condition("class+group:age").text
    'class+group:age'
    >>> parse_condition(None, mondrian=True).text
    'class'
    """
    text = "" if value is None else str(value).strip()
    if text in ("", "none"):
        return Condition(per_class=mondrian)
    kind, _, column = text.partition(":")
    if kind not in ("class", "group", "class+group") or (kind == "class" and column):
        message = f"unknown condition {value!r}; valid: {_FORMS}"
        raise UsageError(message)
    if ":" in text and not column.strip():
        message = f"condition {value!r} names no column after ':'; valid: {_FORMS}"
        raise UsageError(message)
    cond = Condition(
        per_class=kind != "group", by_group="group" in kind, column=column.strip() or None
    )
    if mondrian and not cond.per_class:
        message = (
            f"mondrian (one threshold per class) and condition {value!r} disagree; give "
            f"condition 'class+{text}' for both"
        )
        raise UsageError(message)
    return cond


def _user_key(value: object) -> str:
    """A user id as text, whole numbers without a decimal part (``7.0`` -> ``"7"``)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def read_groups_file(path: str | Path) -> pd.DataFrame:
    """A groups CSV (utf-8): a ``userid`` column and one or more attribute columns.

    Every value is read as text, so ``"07"`` stays ``"07"``.
    """
    import pandas as pd

    from mueval.files import open_input

    path = Path(path)
    with open_input(path, "--groups") as handle:
        content = handle.read()
    try:
        frame = pd.read_csv(io.BytesIO(content), encoding="utf-8", dtype=str)
    except (ValueError, OSError) as exc:
        found = " ".join(str(exc).split())[:200]
        message = f"cannot read {path} as a groups CSV (utf-8): {found}"
        raise DataError(message) from exc
    if "userid" not in frame.columns or len(frame.columns) < 2:
        message = (
            f"{path}: a groups file needs a 'userid' column and a group column; found "
            f"columns {list(frame.columns)}"
        )
        raise DataError(message)
    return frame


def user_groups(frame: pd.DataFrame, column: str | None, *, where: str) -> pd.Series:
    """Each user's group from a table with one row per user or per window.

    Parameters
    ----------
    frame : DataFrame
        ``userid`` and the group column.
    column : str or None
        The group column; None when ``frame`` has exactly one besides ``userid``.
    where : str
        What the table is, for messages.

    Returns
    -------
    Series
        Group (text) indexed by the user id as text, sorted by user.

    Raises
    ------
    DataError
        A missing column, or a user with two values or with none.
    """
    others = [c for c in frame.columns if c != "userid"]
    if column is None:
        if len(others) != 1:
            message = (
                f"{where}: name the group column (condition group:COLUMN); columns "
                f"besides userid are {others}"
            )
            raise UsageError(message)
        column = others[0]
    if column not in frame.columns:
        message = f"{where}: no group column {column!r}; columns are {list(frame.columns)}"
        raise UsageError(message)
    users = frame["userid"].map(_user_key)
    values = frame[column]
    missing = values.isna() | (values.astype(str).str.strip() == "")
    if missing.any():
        who = sorted(set(users[missing]))[:5]
        message = f"{where}: user(s) {', '.join(who)} have no value of group column {column!r}"
        raise DataError(message)
    values = values.map(_user_key)
    per_user = values.groupby(users.to_numpy(), sort=True).unique()
    split = per_user[per_user.map(len) > 1]
    if len(split):
        user, seen = split.index[0], sorted(split.iloc[0])[:4]
        message = (
            f"{where}: user {user} has {len(split.iloc[0])} values of group column "
            f"{column!r} ({', '.join(map(repr, seen))}); a group must be constant within "
            "each user"
        )
        raise DataError(message)
    out = per_user.map(lambda v: v[0])
    out.name = column
    return out


@dataclass(frozen=True)
class RowGroups:
    """The group of every row of a table, and of every user.

    Attributes
    ----------
    codes : ndarray of int, shape (n_rows,)
        Index into ``names``.
    names : list of str
        Group names, sorted.
    column : str
    users : Series
        Group per user (text), indexed by the user id as text.
    """

    codes: np.ndarray
    names: list[str]
    column: str
    users: pd.Series


def _row_codes(table_users: np.ndarray, per_user: pd.Series, where: str) -> RowGroups:
    keys = np.array([_user_key(u) for u in table_users], dtype=object)
    unknown = sorted(set(keys) - set(per_user.index))
    if unknown:
        message = (
            f"{where}: {len(unknown)} evaluated user(s) have no group, e.g. "
            f"{', '.join(unknown[:5])}; every user needs one"
        )
        raise DataError(message)
    wanted = per_user[sorted(set(keys))]
    names = sorted(set(wanted))
    index = {name: i for i, name in enumerate(names)}
    codes = np.array([index[wanted[k]] for k in keys], dtype=int)
    return RowGroups(codes, names, str(per_user.name), wanted)


def _take_column(table: Table, column: str) -> tuple[Table, pd.Series]:
    """Remove a numeric feature column from the table: it names groups, it is no feature."""
    import pandas as pd

    if column not in table.features:
        message = (
            f"{table.info.get('name', 'the table')}: no column {column!r} to take groups "
            f"from (give a groups CSV, --groups FILE, or a column of the table)"
        )
        raise UsageError(message)
    i = table.features.index(column)
    values = pd.Series(table.X[:, i])
    keep = [j for j in range(len(table.features)) if j != i]
    if not keep:
        message = f"{table.info.get('name', 'the table')}: {column!r} is its only feature"
        raise DataError(message)
    info = {**table.info, "n_features": len(keep), "group_column": column}
    features = [table.features[j] for j in keep]
    return replace(table, X=table.X[:, keep], features=features, info=info), values


def resolve_groups(
    table: Table, condition: Condition, groups: str | Path | pd.DataFrame | None
) -> tuple[Table, RowGroups | None]:
    """The group of every row of ``table`` under ``condition``.

    Parameters
    ----------
    table : Table
    condition : Condition
    groups : path, DataFrame or None
        A groups CSV or table (``userid`` and group columns); None: the group
        column is a numeric column of ``table``, which is then removed from
        the features.

    Returns
    -------
    table : Table
        Without the group column when it came from the table.
    row_groups : RowGroups or None
        None when ``condition`` has no group.
    """
    import pandas as pd

    if not condition.by_group:
        if groups is not None:
            message = "groups were given but the condition has no group (use group:COLUMN)"
            raise UsageError(message)
        return table, None
    if groups is None:
        if condition.column is None:
            message = "condition group needs a column: group:COLUMN, or a groups file"
            raise UsageError(message)
        table, values = _take_column(table, condition.column)
        frame = pd.DataFrame({"userid": table.users, condition.column: values})
        where = f"{table.info.get('name', 'the table')} column {condition.column!r}"
    elif isinstance(groups, pd.DataFrame):
        frame, where = groups.astype(object), "the groups table"
    else:
        frame, where = read_groups_file(groups), str(groups)
    per_user = user_groups(frame, condition.column, where=where)
    return table, _row_codes(table.users, per_user, where)


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
    import pandas as pd

    from mueval.guarantees.intervals import clopper_pearson

    keys = rows["userid"].map(_user_key)
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
