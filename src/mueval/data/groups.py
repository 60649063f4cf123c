"""Groups of users: each user's value of a user-level attribute (age band, device).

The attribute comes from a side CSV keyed by user (``userid`` and the group
column) or from a column of the evaluated table; it must be constant within
each user, and every evaluated user must have a value. Group-conditional
calibration (:mod:`mueval.conformal.condition`) uses the group of every row.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from mueval.data.table import Table
from mueval.data.users import user_text, user_texts
from mueval.errors import DataError, UsageError
from mueval.files import open_input

__all__ = [
    "RowGroups",
    "read_groups_file",
    "resolve_groups",
    "user_groups",
]


def read_groups_file(path: str | Path) -> pd.DataFrame:
    """A groups CSV (utf-8): a ``userid`` column and one or more attribute columns.

    Every value is read as text, so ``"07"`` stays ``"07"``.
    """
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
    users = user_texts(frame["userid"])
    values = frame[column]
    missing = values.isna() | (values.astype(str).str.strip() == "")
    if missing.any():
        who = sorted(set(users[missing]))[:5]
        message = f"{where}: user(s) {', '.join(who)} have no value of group column {column!r}"
        raise DataError(message)
    values = user_texts(values)
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
    keys = np.array([user_text(u) for u in table_users], dtype=object)
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
    table: Table,
    groups: str | Path | pd.DataFrame | None,
    *,
    by_group: bool,
    column: str | None,
) -> tuple[Table, RowGroups | None]:
    """The group of every row of ``table``.

    Parameters
    ----------
    table : Table
    groups : path, DataFrame or None
        A groups CSV or table (``userid`` and group columns); None: the group
        column is a numeric column of ``table``, which is then removed from
        the features.
    by_group : bool
        Whether the calibration is conditioned on a group
        (:attr:`mueval.conformal.condition.Condition.by_group`).
    column : str or None
        The group column (None: the only column of the groups file).

    Returns
    -------
    table : Table
        Without the group column when it came from the table.
    row_groups : RowGroups or None
        None when the calibration has no group.
    """
    if not by_group:
        if groups is not None:
            message = "groups were given but the condition has no group (use group:COLUMN)"
            raise UsageError(message)
        return table, None
    if groups is None:
        if column is None:
            message = "condition group needs a column: group:COLUMN, or a groups file"
            raise UsageError(message)
        table, values = _take_column(table, column)
        frame = pd.DataFrame({"userid": table.users, column: values})
        where = f"{table.info.get('name', 'the table')} column {column!r}"
    elif isinstance(groups, pd.DataFrame):
        frame, where = groups.astype(object), "the groups table"
    else:
        frame, where = read_groups_file(groups), str(groups)
    per_user = user_groups(frame, column, where=where)
    return table, _row_codes(table.users, per_user, where)
