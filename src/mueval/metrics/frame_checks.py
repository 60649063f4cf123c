"""Input checks of the tables the statistics modules take (columns, counts, levels).

The table-side twin of :mod:`mueval.metrics.array_checks`; used by
:mod:`mueval.metrics.set_sizes` and the modules of :mod:`mueval.guarantees`.
Arguments that are wrong in themselves (``alpha``, a
method name) raise :class:`~mueval.errors.UsageError`; tables that lack a
column or hold impossible values raise :class:`~mueval.errors.DataError`. Both
are ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mueval.errors import DataError, UsageError

__all__ = [
    "as_bool_column",
    "as_count_column",
    "check_choice",
    "check_level",
    "check_positive_int",
    "require_columns",
]


def check_level(name: str, value: object) -> float:
    """Return ``value`` as a float strictly inside (0, 1), or raise :class:`UsageError`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not 0.0 < float(value) < 1.0
    ):
        message = f"{name} must be a number strictly between 0 and 1; found {value!r}"
        raise UsageError(message)
    return float(value)


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """Return ``value`` when it is one of ``choices``, or raise :class:`UsageError`."""
    if value not in choices:
        message = f"{name} must be one of {', '.join(map(repr, choices))}; found {value!r}"
        raise UsageError(message)
    return str(value)


def check_positive_int(name: str, value: object, minimum: int = 1) -> int:
    """Return ``value`` as an int >= ``minimum``, or raise :class:`UsageError`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        message = f"{name} must be an integer >= {minimum}; found {value!r}"
        raise UsageError(message)
    return int(value)


def require_columns(
    frame: object, columns: Sequence[str], what: str, *, may_be_missing: Sequence[str] = ()
) -> pd.DataFrame:
    """Check that ``frame`` is a DataFrame holding ``columns`` with no missing value.

    Parameters
    ----------
    frame : object
        The table to check.
    columns : sequence of str
        Columns that must be present and complete.
    what : str
        What the table is, for the message ("test rows", "per-user table", ...).
    may_be_missing : sequence of str, optional
        Columns among ``columns`` that may hold ``nan`` (undefined intervals).

    Returns
    -------
    DataFrame
        ``frame`` itself.
    """
    if not isinstance(frame, pd.DataFrame):
        message = f"{what} must be a pandas DataFrame; found {type(frame).__name__}"
        raise DataError(message)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        message = (
            f"{what} lack the column(s) {', '.join(map(repr, missing))}; "
            f"found columns {list(map(str, frame.columns))}"
        )
        raise DataError(message)
    for column in columns:
        if column in may_be_missing:
            continue
        n_missing = int(frame[column].isna().sum())
        if n_missing:
            message = f"{what}: column {column!r} has {n_missing} missing value(s); expected none"
            raise DataError(message)
    return frame


def as_bool_column(frame: pd.DataFrame, column: str, what: str) -> np.ndarray:
    """Return ``frame[column]`` as a bool array; only bool or 0/1 values are accepted."""
    values = frame[column].to_numpy()
    if values.dtype == bool:
        return values
    try:
        numeric = values.astype(np.float64)
    except (TypeError, ValueError):
        numeric = None
    if numeric is None or not np.isin(numeric, (0.0, 1.0)).all():
        shown = sorted(set(map(repr, pd.unique(values)[:5])))
        message = f"{what}: column {column!r} must be bool (or 0/1); found values such as {shown}"
        raise DataError(message)
    return numeric.astype(bool)


def as_count_column(frame: pd.DataFrame, column: str, what: str) -> np.ndarray:
    """Return ``frame[column]`` as a non-negative int64 array, or raise :class:`DataError`."""
    values = frame[column].to_numpy()
    try:
        numeric = values.astype(np.float64)
    except (TypeError, ValueError):
        numeric = np.array([np.nan])
    if numeric.size and (
        np.isnan(numeric).any() or (numeric < 0).any() or (numeric != np.floor(numeric)).any()
    ):
        message = f"{what}: column {column!r} must hold non-negative integers; found {values[:5]!r}"
        raise DataError(message)
    return numeric.astype(np.int64)
