"""Cohorts of users: the users who share a value of a user-level attribute (age band, device).

The attribute comes from a side CSV keyed by user (``userid`` and the cohort
column) or from a column of the evaluated table; it must be constant within
each user, and every evaluated user must have a value. Cohort-conditional
calibration (:mod:`mueval.conformal.condition`) uses the cohort of every row.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from mudata.errors import LimitError as MudataLimitError
from mudata.parquet_bounds import check_csv_header
from mueval.data.table import MAX_CLASSES, Table
from mueval.data.users import user_text, user_texts
from mueval.errors import DataError, UsageError
from mueval.files import open_input

#: Lines a cohorts file may hold (one per user, or per window of the table).
MAX_COHORT_ROWS = 1_000_000

#: Cohort patterns (combinations of the columns' values) a ``cohorts:``
#: condition may hold: its thresholds cost one linear programme per pattern
#: of a task's test rows, with a constraint per cohort.
MAX_PATTERNS = 256

__all__ = [
    "CohortDesign",
    "RowCohorts",
    "cohort_design",
    "read_cohorts_file",
    "resolve_cohorts",
    "user_cohorts",
]


@dataclass(frozen=True)
class CohortDesign:
    """The cohort indicators of every cohort pattern.

    Attributes
    ----------
    matrix : ndarray of float, shape (n_patterns, d)
        Row ``p``: an intercept, then the indicator of every group for the
        users of pattern ``p`` (the first level of each term left out: it is
        the intercept minus the others, so the span is the same).
    groups : list of str
        Name of each column of ``matrix`` after the intercept (``"sex=F"``,
        ``"sex=F*age=old"``).
    """

    matrix: np.ndarray
    groups: list[str]


def cohort_design(
    patterns: Sequence[Sequence[str]],
    terms: Sequence[Sequence[int]],
    *,
    columns: Sequence[str] | None = None,
) -> CohortDesign:
    """The indicator design of cohort patterns.

    Parameters
    ----------
    patterns : sequence of sequence of str
        Each pattern's value of each cohort column (``("F", "old", "phone")``).
    terms : sequence of sequence of int
        The groups: each term is the columns (positions into a pattern) whose
        joint values are its cohorts; ``[[0], [1], [0, 1]]`` is every value of
        column 0, every value of column 1, and every cell of their
        intersection.
    columns : sequence of str, optional
        The columns' names, for :attr:`CohortDesign.groups` (default: their
        positions).

    Returns
    -------
    CohortDesign

    Examples
    --------
    >>> design = cohort_design([("F", "old"), ("M", "old"), ("M", "young")], [[0], [1]])
    >>> design.matrix.tolist(), design.groups
    ([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]], ['0=M', '1=young'])
    """
    patterns = [tuple(p) for p in patterns]
    indicators = [np.ones(len(patterns))]
    groups: list[str] = []
    for term in terms:
        keys = [tuple(p[j] for j in term) for p in patterns]
        for level in sorted(set(keys))[1:]:
            indicators.append(np.array([k == level for k in keys], dtype=float))
            groups.append(
                "*".join(
                    f"{j if columns is None else columns[j]}={v}"
                    for j, v in zip(term, level, strict=True)
                )
            )
    return CohortDesign(np.column_stack(indicators), groups)


def read_cohorts_file(path: str | Path) -> pd.DataFrame:
    """A cohorts CSV (utf-8): a ``userid`` column and one or more attribute columns.

    Every value is read as text, so ``"07"`` stays ``"07"``.
    """
    path = Path(path)
    with open_input(path, "--cohorts") as handle:
        content = handle.read()
    # Columns and lines first, before pandas makes a string of every cell.
    try:
        check_csv_header(content, str(path))
    except MudataLimitError as exc:
        raise DataError(str(exc)) from None
    lines = content.count(b"\n")
    if lines > MAX_COHORT_ROWS + 1:
        message = (
            f"{path}: {lines:,} lines, more than the {MAX_COHORT_ROWS:,} rows a cohorts file "
            f"may hold (one per user or per window)"
        )
        raise DataError(message)
    try:
        frame = pd.read_csv(io.BytesIO(content), encoding="utf-8", dtype=str)
    except (ValueError, OSError) as exc:
        found = " ".join(str(exc).split())[:200]
        message = f"cannot read {path} as a cohorts CSV (utf-8): {found}"
        raise DataError(message) from exc
    if "userid" not in frame.columns or len(frame.columns) < 2:
        # The header is the file's content (a link to /proc/self/environ has the
        # environment as its column name): quote at most a short excerpt of it.
        found = repr(list(frame.columns))
        if len(found) > 200:
            found = f"{found[:200]}... ({len(found) - 200:,} more characters)"
        message = (
            f"{path}: a cohorts file needs a 'userid' column and a cohort column; found "
            f"columns {found}"
        )
        raise DataError(message)
    return frame


def user_cohorts(frame: pd.DataFrame, column: str | None, *, where: str) -> pd.Series:
    """Each user's cohort from a table with one row per user or per window.

    Parameters
    ----------
    frame : DataFrame
        ``userid`` and the cohort column.
    column : str or None
        The cohort column; None when ``frame`` has exactly one besides ``userid``.
    where : str
        What the table is, for messages.

    Returns
    -------
    Series
        Cohort (text) indexed by the user id as text, sorted by user.

    Raises
    ------
    DataError
        A missing column, or a user with two values or with none.
    """
    others = [c for c in frame.columns if c != "userid"]
    if column is None:
        if len(others) != 1:
            message = (
                f"{where}: name the cohort column (condition cohort:COLUMN); columns "
                f"besides userid are {others}"
            )
            raise UsageError(message)
        column = others[0]
    if column not in frame.columns:
        message = f"{where}: no cohort column {column!r}; columns are {list(frame.columns)}"
        raise UsageError(message)
    users = user_texts(frame["userid"])
    values = frame[column]
    missing = values.isna() | (values.astype(str).str.strip() == "")
    if missing.any():
        who = sorted(set(users[missing]))[:5]
        message = f"{where}: user(s) {', '.join(who)} have no value of cohort column {column!r}"
        raise DataError(message)
    values = user_texts(values)
    per_user = values.groupby(users.to_numpy(), sort=True).unique()
    split = per_user[per_user.map(len) > 1]
    if len(split):
        user, seen = split.index[0], sorted(split.iloc[0])[:4]
        message = (
            f"{where}: user {user} has {len(split.iloc[0])} values of cohort column "
            f"{column!r} ({', '.join(map(repr, seen))}); a cohort must be constant within "
            "each user"
        )
        raise DataError(message)
    out = per_user.map(lambda v: v[0])
    out.name = column
    return out


@dataclass(frozen=True)
class RowCohorts:
    """The cohort of every row of a table, and of every user.

    Attributes
    ----------
    codes : ndarray of int, shape (n_rows,)
        Index into ``names``.
    names : list of str
        Cohort names, sorted.
    column : str
    users : Series
        Cohort per user (text), indexed by the user id as text.
    design : ndarray of float, shape (len(names), d), optional
        ``cohorts:`` conditions: each pattern's cohort indicators
        (:class:`CohortDesign`); a
        pattern is then one combination of the columns' values, and its name
        ``col=value,col=value``.
    groups : list of str
        The names of the indicator columns of ``design`` after the intercept.
    """

    codes: np.ndarray
    names: list[str]
    column: str
    users: pd.Series
    design: np.ndarray | None = None
    groups: list[str] = field(default_factory=list)


def _row_codes(table_users: np.ndarray, per_user: pd.Series, where: str) -> RowCohorts:
    keys = np.array([user_text(u) for u in table_users], dtype=object)
    unknown = sorted(set(keys) - set(per_user.index))
    if unknown:
        message = (
            f"{where}: {len(unknown)} evaluated user(s) have no cohort, e.g. "
            f"{', '.join(unknown[:5])}; every user needs one"
        )
        raise DataError(message)
    wanted = per_user[sorted(set(keys))]
    names = sorted(set(wanted))
    if len(names) > MAX_CLASSES:
        message = (
            f"{where}: {len(names):,} cohorts, more than the {MAX_CLASSES:,} a condition may "
            f"hold (as classes)"
        )
        raise DataError(message)
    index = {name: i for i, name in enumerate(names)}
    codes = np.array([index[wanted[k]] for k in keys], dtype=int)
    return RowCohorts(codes, names, str(per_user.name), wanted)


def _take_column(table: Table, column: str) -> tuple[Table, pd.Series]:
    """Remove a numeric feature column from the table: it names cohorts, it is no feature."""
    if column not in table.features:
        message = (
            f"{table.info.get('name', 'the table')}: no column {column!r} to take cohorts "
            f"from (give a cohorts CSV, --cohorts FILE, or a column of the table)"
        )
        raise UsageError(message)
    i = table.features.index(column)
    values = pd.Series(table.X[:, i])
    keep = [j for j in range(len(table.features)) if j != i]
    if not keep:
        message = f"{table.info.get('name', 'the table')}: {column!r} is its only feature"
        raise DataError(message)
    info = {**table.info, "n_features": len(keep), "cohort_column": column}
    features = [table.features[j] for j in keep]
    return replace(table, X=table.X[:, keep], features=features, info=info), values


def resolve_cohorts(
    table: Table,
    cohorts: str | Path | pd.DataFrame | None,
    *,
    by_cohort: bool,
    column: str | None,
    terms: Sequence[Sequence[str]] = (),
) -> tuple[Table, RowCohorts | None]:
    """The cohort of every row of ``table``.

    Parameters
    ----------
    table : Table
    cohorts : path, DataFrame or None
        A cohorts CSV or table (``userid`` and cohort columns); None: the cohort
        column is a numeric column of ``table``, which is then removed from
        the features.
    by_cohort : bool
        Whether the calibration is conditioned on a cohort
        (:attr:`mueval.conformal.condition.Condition.by_cohort`).
    column : str or None
        The cohort column (None: the only column of the cohorts file).
    terms : sequence of sequence of str
        A ``cohorts:`` condition's terms
        (:attr:`mueval.conformal.condition.Condition.terms`): the cohort of a
        row is then its user's combination of every column's value, with its
        indicator design.

    Returns
    -------
    table : Table
        Without the cohort column when it came from the table.
    row_cohorts : RowCohorts or None
        None when the calibration has no cohort.
    """
    if not by_cohort:
        if cohorts is not None:
            message = "cohorts were given but the condition has no cohort (use cohort:COLUMN)"
            raise UsageError(message)
        return table, None
    if terms:
        return _pattern_cohorts(table, cohorts, terms)
    if cohorts is None:
        if column is None:
            message = "condition cohort needs a column: cohort:COLUMN, or a cohorts file"
            raise UsageError(message)
        table, values = _take_column(table, column)
        frame = pd.DataFrame({"userid": table.users, column: values})
        where = f"{table.info.get('name', 'the table')} column {column!r}"
    elif isinstance(cohorts, pd.DataFrame):
        frame, where = cohorts.astype(object), "the cohorts table"
    else:
        frame, where = read_cohorts_file(cohorts), str(cohorts)
    per_user = user_cohorts(frame, column, where=where)
    return table, _row_codes(table.users, per_user, where)


def _pattern_cohorts(
    table: Table, cohorts: str | Path | pd.DataFrame | None, terms: Sequence[Sequence[str]]
) -> tuple[Table, RowCohorts]:
    """Every row's pattern (its user's value of every column) and the design of the terms."""
    columns = list(dict.fromkeys(c for term in terms for c in term))
    if cohorts is None:
        values = {}
        for column in columns:
            table, values[column] = _take_column(table, column)
        frame = pd.DataFrame({"userid": table.users, **values})
        where = f"{table.info.get('name', 'the table')} columns {columns}"
    elif isinstance(cohorts, pd.DataFrame):
        frame, where = cohorts.astype(object), "the cohorts table"
    else:
        frame, where = read_cohorts_file(cohorts), str(cohorts)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        message = f"{where}: no cohort column {missing[0]!r}; columns are {list(frame.columns)}"
        raise UsageError(message)
    per_column = [user_cohorts(frame[["userid", c]], c, where=where) for c in columns]
    for column, part in zip(columns, per_column, strict=True):
        if "," in "".join(part) or "=" in "".join(part):
            message = f"{where}: values of cohort column {column!r} may not hold ',' or '='"
            raise DataError(message)
    patterns = list(zip(*per_column, strict=True))
    names = [",".join(f"{c}={v}" for c, v in zip(columns, vals, strict=True)) for vals in patterns]
    per_user = pd.Series(names, index=per_column[0].index, name="+".join(columns))
    pattern_of = dict(zip(names, patterns, strict=True))
    rows = _row_codes(table.users, per_user, where)
    if len(rows.names) > MAX_PATTERNS:
        message = (
            f"{where}: the users hold {len(rows.names):,} combinations of {columns}, more "
            f"than the {MAX_PATTERNS} a cohorts: condition may hold (one linear programme "
            "each); use fewer columns or coarser values"
        )
        raise DataError(message)
    index = {c: j for j, c in enumerate(columns)}
    design = cohort_design(
        [pattern_of[name] for name in rows.names],
        [[index[c] for c in term] for term in terms],
        columns=columns,
    )
    groups = design.groups
    return table, replace(rows, design=design.matrix, groups=groups)
