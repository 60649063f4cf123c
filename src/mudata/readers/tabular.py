"""Generic readers for user-registered datasets that need no code of their own.

* ``feature-table`` (:func:`read_feature_table`): a table of computed
  features, one row per example (CSV or Parquet, one file or several).
* ``long-signals`` (:func:`read_long_signals`): raw samples in long format,
  one row per sample (CSV or Parquet, one file or one per user).

Both are configured entirely by the entry's ``reader_options``.
"""

from __future__ import annotations

import io
import logging

import numpy as np
import pandas as pd
from pyarrow import ArrowException

from mudata.errors import MissingFileError, ParseError, RegistryError, excerpt
from mudata.readers._text import check_encoding, list_option, str_option, text_encoding
from mudata.readers.base import FeatureTable, SignalTable, Sources
from mudata.registry import DatasetEntry

log = logging.getLogger(__name__)

FORMATS = ("csv", "parquet")


def _option(entry: DatasetEntry, key: str) -> object:
    if key not in entry.reader_options:
        message = f"dataset '{entry.name}': reader '{entry.reader}' needs reader_options.{key}"
        raise RegistryError(message)
    return entry.reader_options[key]


# The output table's own columns: a feature of that name would shadow them.
RESERVED = ("userid", "label", "segment")


def _check_roles(entry: DatasetEntry, field: str, columns: list[str], roles: dict[str, str]) -> None:
    """Refuse a feature or channel list that repeats a column or reuses another role's column.

    A feature column equal to the user column would leak the user id into the
    features (and a duplicated one would be counted twice), so both are
    registry errors naming the field, not silent surprises.
    """
    where = f" ({entry.source})" if entry.source else ""
    seen: set[str] = set()
    for column in columns:
        if not isinstance(column, str):
            message = f"invalid registry entry '{entry.name}'{where}: field 'reader_options.{field}': {excerpt(column)} is not a column name"
            raise RegistryError(message)
        role = roles.get(column) or ("a column mudata adds" if column in RESERVED else None)
        if column in seen or role:
            why = "is listed twice" if column in seen else f"is {role}"
            message = (
                f"invalid registry entry '{entry.name}'{where}: field 'reader_options.{field}': "
                f"column {excerpt(column)} {why}; it cannot also serve here"
            )
            raise RegistryError(message)
        seen.add(column)


def _load(
    entry: DatasetEntry, sources: Sources, required: list[str]
) -> list[tuple[str, pd.DataFrame]]:
    """Every member matching ``members``, parsed; each must hold ``required``."""
    options = entry.reader_options
    fmt = str(options.get("format", "csv")).lower()
    if fmt not in FORMATS:
        message = f"dataset '{entry.name}': reader_options.format is '{fmt}'; expected one of {list(FORMATS)}"
        raise RegistryError(message)
    pattern = str_option(entry, "members", f"*.{fmt}")
    members = sources.names(pattern)
    if not members:
        message = f"dataset '{entry.name}': no file matching '{pattern}' in {', '.join(map(str, sources.roots))}"
        raise MissingFileError(message)
    tables = []
    encoding = text_encoding(entry)
    for member in members:
        data = sources.read_bytes(member)
        try:
            if fmt == "csv":
                check_encoding(data, member, encoding)
                table = pd.read_csv(io.BytesIO(data), engine="c", encoding=encoding)
            else:
                table = pd.read_parquet(io.BytesIO(data))
        except (ValueError, OSError, ArrowException) as exc:
            if isinstance(exc, ParseError):
                raise
            message = f"{member}: cannot be read as {fmt} ({type(exc).__name__}: {str(exc)[:200]})"
            raise ParseError(message) from None
        if table.columns.duplicated().any():
            twice = sorted({str(c) for c in table.columns[table.columns.duplicated()]})
            message = f"{member}: column name(s) {excerpt(twice)} appear more than once in the header"
            raise ParseError(message)
        missing = [c for c in required if c not in table.columns]
        if missing:
            message = f"{member}: missing column(s) {excerpt(missing)}; columns found: {excerpt(list(table.columns))}"
            raise ParseError(message)
        tables.append((member, table))
    return tables


def _integer_users(values: pd.Series, member: str, column: str) -> np.ndarray:
    numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(numeric) | (numeric != np.round(numeric)))
    if bad.size:
        message = (
            f"{member}: user column '{column}' must hold integers; row {int(bad[0])} "
            f"holds {excerpt(values.iloc[bad[0]])}"
        )
        raise ParseError(message)
    return numeric.astype(np.int64)


def _numeric(table: pd.DataFrame, columns: list[str], member: str) -> pd.DataFrame:
    out = {}
    for column in columns:
        values = pd.to_numeric(table[column], errors="coerce")
        bad = np.flatnonzero(values.isna().to_numpy() & table[column].notna().to_numpy())
        if bad.size:
            message = (
                f"{member}: column '{column}' must be numeric; row {int(bad[0])} "
                f"holds {excerpt(table[column].iloc[bad[0]])}"
            )
            raise ParseError(message)
        out[column] = values.to_numpy(dtype=np.float64)
    return pd.DataFrame(out, index=table.index)


def read_feature_table(entry: DatasetEntry, sources: Sources) -> FeatureTable:
    """Read a table of computed features.

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``: ``format`` (``"csv"`` or ``"parquet"``), ``members``
        (glob, default ``"*.<format>"``; several files are stacked in name
        order), ``user_col``, ``label_col``, ``feature_cols`` (optional list;
        default every other numeric column, the others named in a warning).
    sources : Sources
        The verified files.

    Returns
    -------
    FeatureTable
        ``userid`` (int), ``label`` (as in the file), then the features as
        float64, rows in file order.

    Raises
    ------
    ParseError
        When a file lacks a named column (file, missing and found columns
        named), a user id is not an integer or a feature is not numeric.
    """
    user_col = str(_option(entry, "user_col"))
    label_col = str(_option(entry, "label_col"))
    feature_cols = list_option(entry, "feature_cols", []) if "feature_cols" in entry.reader_options else None
    if user_col == label_col:
        _check_roles(entry, "label_col", [label_col], {user_col: "the user column (user_col)"})
    roles = {user_col: "the user column (user_col)", label_col: "the label column (label_col)"}
    if feature_cols is not None:
        _check_roles(entry, "feature_cols", list(feature_cols), roles)
    required = [user_col, label_col, *(feature_cols or [])]
    frames = []
    for member, table in _load(entry, sources, required):
        if feature_cols is None:
            chosen = [
                c
                for c in table.columns
                if c not in (user_col, label_col, *RESERVED)
                and pd.api.types.is_numeric_dtype(table[c])
                and not pd.api.types.is_bool_dtype(table[c])
            ]
            others = [c for c in table.columns if c not in (user_col, label_col, *chosen)]
            reserved = [c for c in others if c in RESERVED]
            skipped = [c for c in others if c not in RESERVED]
            if skipped:
                # One stray text value makes a whole column non-numeric: say so.
                log.warning(
                    "%s: non-numeric column(s) %s left out of the features; list "
                    "reader_options.feature_cols to keep them (each value must be a number)",
                    member,
                    excerpt(skipped),
                )
            if reserved:
                log.warning(
                    "%s: column(s) %s left out of the features: the table has its own "
                    "columns of those names",
                    member,
                    reserved,
                )
        else:
            chosen = list(feature_cols)
        frame = pd.DataFrame(
            {
                "userid": _integer_users(table[user_col], member, user_col),
                "label": table[label_col].to_numpy(),
            }
        )
        frames.append(
            (
                member,
                pd.concat([frame, _numeric(table, chosen, member).reset_index(drop=True)], axis=1),
            )
        )
    columns = list(frames[0][1].columns)
    for member, frame in frames[1:]:
        if list(frame.columns) != columns:
            message = f"{member}: feature columns {excerpt(list(frame.columns)[2:])} differ from {frames[0][0]}'s {excerpt(columns[2:])}"
            raise ParseError(message)
    return FeatureTable(pd.concat([f for _, f in frames], ignore_index=True))


def read_long_signals(entry: DatasetEntry, sources: Sources) -> SignalTable:
    """Read raw samples in long format (one row per sample).

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``: ``format``, ``members`` (as for
        :func:`read_feature_table`), ``user_col``, ``label_col``, ``time_col``
        (optional; rows are then sorted by user then time, stably),
        ``channels`` (the channel columns; default those of ``entry.sensors``;
        must include every sensor channel), ``segment_col`` (optional; default:
        one segment per (file, user)).
    sources : Sources
        The verified files.

    Returns
    -------
    SignalTable
        ``userid`` (int), ``label``, ``segment`` (int), then the channels as
        float64 (NaN kept).

    Raises
    ------
    RegistryError
        When ``channels`` misses a channel of ``entry.sensors``.
    ParseError
        When a file lacks a named column (file, missing and found columns
        named), a user id is not an integer or a channel is not numeric.
    """
    user_col = str(_option(entry, "user_col"))
    label_col = str(_option(entry, "label_col"))
    time_col = str_option(entry, "time_col", None)
    segment_col = str_option(entry, "segment_col", None)
    sensor_channels = [c for s in entry.sensors for c in s.channels]
    channels = list_option(entry, "channels", sensor_channels)
    if user_col == label_col:
        _check_roles(entry, "label_col", [label_col], {user_col: "the user column (user_col)"})
    roles = {user_col: "the user column (user_col)", label_col: "the label column (label_col)"}
    for kind, column in (("time", time_col), ("segment", segment_col)):
        if column:
            roles[column] = f"the {kind} column ({kind}_col)"
    _check_roles(entry, "channels", channels, roles)
    absent = [c for c in sensor_channels if c not in channels]
    if absent:
        message = (
            f"dataset '{entry.name}': sensor channels {absent} are not in "
            f"reader_options.channels {channels}"
        )
        raise RegistryError(message)
    required = [
        user_col,
        label_col,
        *channels,
        *([time_col] if time_col else []),
        *([segment_col] if segment_col else []),
    ]
    frames = []
    for number, (member, table) in enumerate(_load(entry, sources, required)):
        frame = pd.DataFrame(
            {
                "userid": _integer_users(table[user_col], member, user_col),
                "label": table[label_col].to_numpy(),
                "_file": np.full(len(table), number, dtype=np.int64),
            }
        )
        if segment_col:
            frame["_segment"] = table[segment_col].to_numpy()
        if time_col:
            frame["_time"] = table[time_col].to_numpy()
        frames.append(
            pd.concat([frame, _numeric(table, channels, member).reset_index(drop=True)], axis=1)
        )
    frame = pd.concat(frames, ignore_index=True)
    if time_col:
        frame = frame.sort_values(["userid", "_time"], kind="stable", ignore_index=True)
    key = ["_file", "_segment"] if segment_col else ["_file", "userid"]
    # Number each contiguous run of a key, so that segments are contiguous by construction.
    change = np.zeros(len(frame), dtype=bool)
    for column in key:
        values = frame[column].to_numpy()
        change[1:] |= values[1:] != values[:-1]
    frame.insert(2, "segment", np.cumsum(change).astype(np.int64))
    return SignalTable(frame[["userid", "label", "segment", *channels]].reset_index(drop=True))
