"""A member's columns as values: user ids as text, channels and features as numbers.

Owns :func:`text_users` (a blank id is an error naming the row) and
:func:`numeric_columns` (a value that is not a number is an error naming the
row and the setting that chose the column).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mudata.errors import ParseError, Reason, excerpt
from mudata.records.classes import user_names

__all__ = ["numeric_columns", "text_users"]


def text_users(
    values: pd.Series,
    member: str,
    column: str,
    *,
    row_shift: int = 0,
    seen: dict[str, object] | None = None,
) -> np.ndarray:
    """User ids as text (:func:`mudata.records.classes.user_names`); a blank id is an error.

    For a part of a file: ``row_shift`` rows come before ``values`` (for the
    row named), and ``seen`` carries the ids of the parts before it.
    """
    blank = values.isna().to_numpy() | values.astype(str).str.strip().eq("").to_numpy(dtype=bool)
    bad = np.flatnonzero(blank)
    if bad.size:
        message = f"{member}: user column '{column}' is blank at row {int(bad[0]) + row_shift}"
        raise ParseError(message, reason=Reason("blank", "user_col"))
    return user_names(values, seen=seen)


def numeric_columns(
    table: pd.DataFrame,
    columns: list[str],
    member: str,
    *,
    row_shift: int = 0,
    setting: str = "channels",
) -> pd.DataFrame:
    """``columns`` of ``table`` as float64; a value that is not a number is an error.

    ``row_shift`` rows of the file come before ``table`` (for the row named);
    ``setting`` names the entry setting that chose the columns (the error's reason).
    """
    out = {}
    for column in columns:
        if pd.api.types.is_numeric_dtype(table[column]) and not pd.api.types.is_bool_dtype(
            table[column]
        ):
            out[column] = table[column].to_numpy(dtype=np.float64)  # numbers already
            continue
        try:
            values = pd.to_numeric(table[column], errors="coerce")
        except OverflowError:  # a whole number past float64 (a parser kept it as an int)
            row = next(i for i, v in enumerate(table[column]) if _past_float(v))
            message = (
                f"{member}: column '{column}' must be numeric; row {row + row_shift} holds "
                f"{excerpt(table[column].iloc[row])}, a number too large for a float"
            )
            raise ParseError(message, reason=Reason("not-numeric", setting)) from None
        bad = np.flatnonzero(values.isna().to_numpy() & table[column].notna().to_numpy())
        if bad.size:
            message = (
                f"{member}: column '{column}' must be numeric; row {int(bad[0]) + row_shift} "
                f"holds {excerpt(table[column].iloc[bad[0]])}"
            )
            raise ParseError(message, reason=Reason("not-numeric", setting))
        out[column] = values.to_numpy(dtype=np.float64)
    return pd.DataFrame(out, index=table.index)


def _past_float(value: object) -> bool:
    """Whether ``value`` is a whole number too large for a float64."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError:
            return True
    return False
