"""What every consistency check of a run folder shares.

This module owns how a check names what it found (:func:`show`, the first wrong
row), the tests of a column's numbers and whole counts, the tolerance between a
stored value and its recomputation, and the first check of all: that every
strategy and classifier is a code of mueval (the report builds file names from
them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mudata.display import shown
from mueval.names import CLASSIFIERS, MODEL_NAME_RULE, STRATEGIES, is_model_name, is_strategy_code
from mueval.runfolder.records import RunFolder, RunFolderError
from mueval.strategies import STRATEGY_CODE_RULE

__all__ = [
    "GROUP",
    "RTOL",
    "check_codes",
    "check_codes_of",
    "check_numeric",
    "check_whole",
    "close_enough",
    "first_wrong",
    "show",
]

#: Relative tolerance between a stored mean and its recomputation (float sums in
#: another order differ in the last bits, never more).
RTOL = 1e-9
_ATOL = 1e-12
GROUP = ["strategy", "classifier", "iteration"]


def first_wrong(wrong: np.ndarray) -> int | None:
    """Index of the first True of ``wrong`` (the row an error names), or None."""
    rows = np.flatnonzero(wrong)
    return int(rows[0]) if rows.size else None


def show(value: object) -> str:
    """``value`` as an error message quotes it, cut to 60 characters."""
    return shown(value, 60)


def check_codes_of(path: object, frame: pd.DataFrame) -> None:
    """``frame``'s strategies and classifiers are codes of mueval (or checked names
    of the user's), no two classifiers alike but for case."""
    values = pd.unique(frame["strategy"])
    unknown = [v for v in values if not is_strategy_code(v)]
    if unknown:
        msg = (
            f"{path}: strategy {show(unknown[0])} is not a strategy code of mueval "
            f"(expected one of {', '.join(STRATEGIES)}, or a strategy of your own: "
            f"{STRATEGY_CODE_RULE})"
        )
        raise RunFolderError(msg)
    values = pd.unique(frame["classifier"])
    unknown = [v for v in values if not is_model_name(v)]
    if unknown:
        msg = (
            f"{path}: classifier {show(unknown[0])} is neither a classifier code of mueval "
            f"({', '.join(CLASSIFIERS)}) nor a model's name ({MODEL_NAME_RULE})"
        )
        raise RunFolderError(msg)
    folded: dict[str, str] = {}
    for value in values:
        other = folded.setdefault(value.casefold(), value)
        if other != value:
            msg = f"{path}: classifiers {other!r} and {value!r} differ only in case"
            raise RunFolderError(msg)


def check_codes(run: RunFolder) -> None:
    """Strategy and classifier values are codes of mueval, in every file."""
    for name, frame in (
        ("predictions.parquet", run.predictions),
        ("splits.parquet", run.splits),
        ("summary.csv", run.summary),
    ):
        check_codes_of(run.path / name, frame)


def check_numeric(path: object, frame: pd.DataFrame, columns: list[str]) -> None:
    """Every column of ``columns`` holds numbers (a text value is named)."""
    for column in columns:
        values = frame[column]
        # A table without rows (no p-values to test) reads back as text columns.
        if not len(values):
            continue
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            as_num = pd.to_numeric(values, errors="coerce")
            bad = values[as_num.isna() & values.notna()]
            shown = show(bad.iloc[0]) if len(bad) else f"of type {values.dtype}"
            msg = f"{path}: column {column} holds {shown}; expected numbers"
            raise RunFolderError(msg)


def check_whole(path: object, frame: pd.DataFrame, column: str) -> None:
    """A count column: no gaps, no fractions (a cut-short CSV leaves NaN here)."""
    values = frame[column].to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values)) | (values < 0))
    if bad.size:
        i = int(bad[0])
        msg = f"{path}: row {i}: {column} is {float(values[i])!r}; expected a whole number >= 0"
        raise RunFolderError(msg)


def close_enough(a: float, b: float) -> bool:
    """A stored value equals its recomputation within :data:`RTOL` (both undefined too)."""
    return bool(np.isclose(a, b, rtol=RTOL, atol=_ATOL, equal_nan=True))
