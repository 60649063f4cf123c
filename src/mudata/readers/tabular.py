"""Generic readers for user-registered datasets that need no code of their own.

* ``feature-table`` (:func:`read_feature_table`): a table of computed
  features, one row per example (one file or several).
* ``long-signals`` (:func:`read_long_signals`): raw samples in long format,
  one row per sample (one file or one per user or recording).

Both read CSV (any of :data:`~mudata.readers.decode.SEPARATORS`, decimal
point or comma), Parquet, whitespace-separated text and MATLAB files, plain or
compressed (:mod:`mudata.readers.decode`), and are configured entirely by the
entry's ``reader_options``.
"""

from __future__ import annotations

import dataclasses
import io
import logging
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pyarrow import ArrowException

from mudata.classes import user_names
from mudata.entry import DatasetEntry
from mudata.errors import LimitError, MissingFileError, ParseError, Reason, RegistryError, excerpt
from mudata.parquet_bounds import check_csv_header, check_parquet
from mudata.readers._text import (
    check_encoding,
    columns_option,
    first_non_numeric,
    list_option,
    str_option,
    text_encoding,
)
from mudata.readers.base import FeatureTable, SignalTable, Sources
from mudata.readers.decode import SEPARATORS, SPREADSHEET_MISSING, read_mat
from mudata.readers.linear_regex import LinearPattern, PatternError, compile_linear
from mudata.readers.lines import line_options, prepare_lines
from mudata.readers.streams import (
    TIME_UNITS,
    Clock,
    StreamOptions,
    check_clock,
    split_streams,
    stream_options,
)
from mudata.readers.times import ParsedTimes, check_offsets, parse_times

log = logging.getLogger(__name__)

FORMATS = ("csv", "parquet", "text", "mat")
# "text": whitespace-separated columns (.txt, .dat, .log...), read by pandas' C parser;
# "mat": one numeric 2-D array of a MATLAB v4-v7.2 file (mudata.readers.decode).
DEFAULT_MEMBERS = {"csv": "*.csv", "parquet": "*.parquet", "text": "*.txt", "mat": "*.mat"}
#: Members the generic readers (feature-table, long-signals) stack into one
#: table. Each is parsed into a table of its own first, at some tens of KB of
#: overhead however few its rows: 49,000 one-row members took gigabytes. The
#: largest release known here has about 3,500 members.
MAX_TABLE_MEMBERS = 5_000
#: ``reader_options.time_order``: "strict" (time must not go back inside a
#: recording; repeated times are kept in file order) or "file" (samples are
#: taken in file order; the time column only serves the rate estimate of init).
TIME_ORDERS = ("strict", "file")


def _option(entry: DatasetEntry, key: str) -> object:
    if key not in entry.reader_options:
        message = f"dataset '{entry.name}': reader '{entry.reader}' needs reader_options.{key}"
        raise RegistryError(message, reason=Reason("missing", key))
    return entry.reader_options[key]


# The output table's own columns: a feature of that name would shadow them.
RESERVED = ("userid", "label", "segment")


def _check_roles(
    entry: DatasetEntry, field: str, columns: list[str], roles: dict[str, str]
) -> None:
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
            raise RegistryError(message, reason=Reason("invalid", field))
        role = roles.get(column) or ("a column mudata adds" if column in RESERVED else None)
        if column in seen or role:
            why = "is listed twice" if column in seen else f"is {role}"
            message = (
                f"invalid registry entry '{entry.name}'{where}: field 'reader_options.{field}': "
                f"column {excerpt(column)} {why}; it cannot also serve here"
            )
            raise RegistryError(message, reason=Reason("taken", field))
        seen.add(column)


def _delimited_options(entry: DatasetEntry) -> tuple[str | None, str]:
    """``separator`` and ``decimal``, checked; None means the format's own separator."""
    separator = str_option(entry, "separator", None)
    decimal = str_option(entry, "decimal", ".")
    where = f"invalid registry entry '{entry.name}': field 'reader_options"
    if separator is not None and separator not in SEPARATORS:
        message = f"{where}.separator': {excerpt(separator)} is not one of {list(SEPARATORS)}"
        raise RegistryError(message, reason=Reason("invalid", "separator"))
    if decimal not in (".", ","):
        message = f"{where}.decimal': {excerpt(decimal)} is not '.' or ','"
        raise RegistryError(message, reason=Reason("invalid", "decimal"))
    return separator, decimal


def parse_member(
    data: bytes,
    member: str,
    fmt: str,
    entry: DatasetEntry,
    text_columns: Sequence[str] = (),
    ratio: float | None = None,
    *,
    dtypes: Mapping[str, object] | None = None,
) -> pd.DataFrame:
    """One member's (decompressed) bytes as a table: CSV, Parquet, text or MATLAB.

    Text without a header (``header = false``) gets the column names of
    ``reader_options.columns`` (name = 1-based column number); other
    columns are not kept. A MATLAB file has no header: its array's columns
    are numbered in the same way. Spreadsheet error cells (``#DIV/0!``, ...)
    read as missing values. ``skip_lines``, ``comment``, ``header_line`` and
    ``line_end`` remove a preamble and line terminators first
    (:mod:`mudata.readers.lines`).

    ``dtypes`` (column name to dtype) fixes the type of delimited text
    columns instead of pandas' inference: a part of a file is read with the
    types the whole file gets (:mod:`mudata.readers.long_stream`).
    """
    header = entry.reader_options.get("header", True) if fmt != "mat" else False
    if not isinstance(header, bool):
        raise RegistryError(
            f"invalid registry entry '{entry.name}': field 'reader_options.header': expected true or false, found {excerpt(header)}",
            reason=Reason("invalid", "header"),
        )
    encoding = text_encoding(entry)
    separator, decimal = _delimited_options(entry)
    # Ids are text: read as numbers, "01" and "1" (two people) would become one.
    fixed: dict[str, Any] = {**(dtypes or {}), **dict.fromkeys(text_columns, str)}
    if header:
        as_text: dict[Hashable, Any] = dict(fixed.items())
    else:
        positions = columns_option(entry, "columns", {})
        as_text = {positions[c] - 1: t for c, t in fixed.items() if c in positions}
    try:
        if fmt == "parquet":
            check_parquet(data, member, ratio=ratio)
            return pd.read_parquet(io.BytesIO(data))
        if fmt == "mat":
            table = read_mat(data, member, str_option(entry, "variable", None), ratio=ratio)
        else:
            check_encoding(data, member, encoding)
            lines = line_options(entry)
            if lines.any:
                # Preamble and terminators removed here, so pandas sees plain lines.
                text = prepare_lines(
                    data.decode(encoding),
                    member,
                    lines,
                    separator or (None if fmt == "text" else ","),
                )
                data, encoding = text.encode("utf-8"), "utf-8"
            sep = separator or (r"\s+" if fmt == "text" else ",")
            # The header's columns first: 700,000 of them take gigabytes in pandas.
            check_csv_header(
                data, member, separator=None if sep == r"\s+" else sep, encoding=encoding
            )
            # low_memory=False: the whole file is typed at once, so a column is
            # never given mixed types (and pandas' DtypeWarning never shows).
            table = pd.read_csv(
                io.BytesIO(data),
                sep=sep,
                decimal=decimal,
                engine="c",
                encoding=encoding,
                header=0 if header else None,
                na_values=list(SPREADSHEET_MISSING),
                low_memory=False,
                dtype=as_text or None,
            )
    except (ValueError, OSError, ArrowException) as exc:
        if isinstance(exc, ParseError | LimitError):
            raise
        message = f"{member}: cannot be read as {fmt} ({type(exc).__name__}: {str(exc)[:200]})"
        raise ParseError(message, reason=Reason("unreadable", "members")) from None
    if header:
        return table
    numbers = columns_option(entry, "columns", {})
    if not numbers:
        message = f"dataset '{entry.name}': files without a header (header = false) need reader_options.columns (name = column number)"
        raise RegistryError(message, reason=Reason("missing", "columns"))
    beyond = {k: v for k, v in numbers.items() if v > table.shape[1]}
    if beyond:
        message = f"{member}: has {table.shape[1]} columns; reader_options.columns names {excerpt(beyond)}"
        raise ParseError(message, reason=Reason("absent", "columns"))
    return pd.DataFrame({name: table.iloc[:, number - 1] for name, number in numbers.items()})


def _load(
    entry: DatasetEntry, sources: Sources, required: list[str], text_columns: Sequence[str] = ()
) -> list[tuple[str, pd.DataFrame]]:
    """Every member matching ``members``, parsed (``text_columns`` read as text, never
    as numbers); each must hold ``required``."""
    fmt, members = matching_members(entry, sources)
    tables = []
    for member in members:
        table = parse_member(
            sources.read_decoded(member), member, fmt, entry, text_columns, sources.max_expansion
        )
        check_columns(table, member, required)
        tables.append((member, table))
    return tables


#: A member of a feature table at most this large is parsed together with the
#: members after it that share its header line (one pandas parse instead of
#: many: thousands of one-row files otherwise take a second per thousand).
_COALESCE_MEMBER_BYTES = 1 << 20
#: Bytes of one such group of members, at most.
_COALESCE_GROUP_BYTES = 64 << 20


def _coalescable(entry: DatasetEntry, fmt: str) -> bool:
    """Whether members can be joined under one header: delimited text with a header line, in
    an encoding where a line break is the byte ``\\n``."""
    wide = text_encoding(entry).lower().replace("-", "").replace("_", "")
    return (
        fmt in ("csv", "text")
        and entry.reader_options.get("header", True) is True
        and not wide.startswith(("utf16", "utf32"))
    )


def _load_stacked(
    entry: DatasetEntry, sources: Sources, required: list[str], text_columns: Sequence[str] = ()
) -> list[tuple[str, pd.DataFrame]]:
    """As :func:`_load`, but small consecutive members with the same header line are parsed
    as one table, named by the first of them and how many more it holds."""
    fmt, members = matching_members(entry, sources)
    if not _coalescable(entry, fmt):
        return _load(entry, sources, required, text_columns)
    groups: list[tuple[bytes, list[str], list[bytes]]] = []
    size = 0
    for member in members:
        data = sources.read_decoded(member)
        header, _, body = data.partition(b"\n")
        if body and not body.endswith(b"\n"):
            body += b"\n"
        joins = (
            groups
            and len(data) <= _COALESCE_MEMBER_BYTES
            and groups[-1][0] == header
            and b'"' not in header  # a quoted header may hold a line break
            and size + len(body) <= _COALESCE_GROUP_BYTES
        )
        if joins:
            groups[-1][1].append(member)
            groups[-1][2].append(body)
            size += len(body)
        else:
            groups.append((header, [member], [body]))
            size = len(body)
    tables = []
    for header, names, bodies in groups:
        name = (
            names[0]
            if len(names) == 1
            else f"{names[0]} (and {len(names) - 1:,} more files with its header)"
        )
        data = header + b"\n" + b"".join(bodies)
        table = parse_member(data, name, fmt, entry, text_columns, sources.max_expansion)
        check_columns(table, name, required)
        tables.append((name, table))
    return tables


def matching_members(entry: DatasetEntry, sources: Sources) -> tuple[str, list[str]]:
    """The entry's ``format`` and the members matching its ``members`` glob, in order.

    Raises
    ------
    RegistryError
        An unknown format.
    MissingFileError
        No member matches.
    LimitError
        More than :data:`MAX_TABLE_MEMBERS` members match.
    """
    fmt = str(entry.reader_options.get("format", "csv")).lower()
    if fmt not in FORMATS:
        message = f"dataset '{entry.name}': reader_options.format is '{fmt}'; expected one of {list(FORMATS)}"
        raise RegistryError(message, reason=Reason("invalid", "format"))
    pattern = str_option(entry, "members", DEFAULT_MEMBERS[fmt])
    if pattern is None:  # only where an entry built in memory holds None
        pattern = DEFAULT_MEMBERS[fmt]
    members = sources.names(pattern)
    if not members:
        message = f"dataset '{entry.name}': no file matching '{pattern}' in {', '.join(map(str, sources.roots))}"
        raise MissingFileError(message)
    if len(members) > MAX_TABLE_MEMBERS:
        message = (
            f"dataset '{entry.name}': {len(members):,} files match '{pattern}', more than the "
            f"{MAX_TABLE_MEMBERS:,} a table may be stacked from; join them into fewer files, "
            f"or narrow reader_options.members"
        )
        raise LimitError(message)
    return fmt, members


def check_columns(table: pd.DataFrame, member: str, required: list[str]) -> None:
    """A parsed member must name each column once and hold every ``required`` one."""
    if table.columns.duplicated().any():
        twice = sorted({str(c) for c in table.columns[table.columns.duplicated()]})
        message = f"{member}: column name(s) {excerpt(twice)} appear more than once in the header"
        raise ParseError(message, reason=Reason("unreadable", "members"))
    missing = [c for c in required if c not in table.columns]
    if missing:
        message = f"{member}: missing column(s) {excerpt(missing)}; columns found: {excerpt(list(table.columns))}"
        raise ParseError(message, reason=Reason("absent", "channels"))


def text_users(
    values: pd.Series,
    member: str,
    column: str,
    *,
    row_shift: int = 0,
    seen: dict[str, object] | None = None,
) -> np.ndarray:
    """User ids as text (:func:`mudata.classes.user_names`); a blank id is an error.

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
        values = pd.to_numeric(table[column], errors="coerce")
        bad = np.flatnonzero(values.isna().to_numpy() & table[column].notna().to_numpy())
        if bad.size:
            message = (
                f"{member}: column '{column}' must be numeric; row {int(bad[0]) + row_shift} "
                f"holds {excerpt(table[column].iloc[bad[0]])}"
            )
            raise ParseError(message, reason=Reason("not-numeric", setting))
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
    pattern = _path_pattern(entry)
    groups = set(pattern.groupindex) if pattern else set()
    cols: dict[str, str | None] = {}
    for role in ("user", "label"):
        cols[role] = str_option(entry, f"{role}_col", None)
        if (cols[role] is None) == (role not in groups):
            how = "both" if cols[role] else "neither"
            message = (
                f"dataset '{entry.name}': reader 'feature-table' takes the {role} from "
                f"reader_options.{role}_col or from a '{role}' group of path_pattern; {how} given"
            )
            raise RegistryError(
                message, reason=Reason("taken" if cols[role] else "missing", f"{role}_col")
            )
    # A role from the path is not a column: named so that no column can be it.
    user_col = cols["user"] or "\0user"
    label_col = cols["label"] or "\0label"
    feature_cols = (
        list_option(entry, "feature_cols", []) if "feature_cols" in entry.reader_options else None
    )
    if user_col == label_col:
        _check_roles(entry, "label_col", [label_col], {user_col: "the user column (user_col)"})
    roles = {user_col: "the user column (user_col)", label_col: "the label column (label_col)"}
    if feature_cols is not None:
        _check_roles(entry, "feature_cols", list(feature_cols), roles)
    required = [c for c in (cols["user"], cols["label"], *(feature_cols or [])) if c]
    frames = []
    # The path of each row is its member's: members are parsed one by one.
    load = _load if pattern else _load_stacked
    for member, table in load(entry, sources, required, [c for c in [cols["user"]] if c]):
        if pattern is not None:
            found = _feature_path_groups(pattern, member)
            for role, column in (("user", user_col), ("label", label_col)):
                if cols[role] is None:
                    table = table.assign(**{column: np.full(len(table), found[role], dtype=object)})
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
                "userid": text_users(table[user_col], member, user_col),
                "label": table[label_col].to_numpy(),
            }
        )
        frames.append(
            (
                member,
                pd.concat(
                    [
                        frame,
                        numeric_columns(table, chosen, member, setting="feature_cols").reset_index(
                            drop=True
                        ),
                    ],
                    axis=1,
                ),
            )
        )
    columns = list(frames[0][1].columns)
    for member, frame in frames[1:]:
        if list(frame.columns) != columns:
            message = f"{member}: feature columns {excerpt(list(frame.columns)[2:])} differ from {frames[0][0]}'s {excerpt(columns[2:])}"
            raise ParseError(message, reason=Reason("differs", "members"))
    return FeatureTable(pd.concat([f for _, f in frames], ignore_index=True))


@dataclass(frozen=True)
class LongOptions:
    """The checked ``reader_options`` of ``long-signals``."""

    user_col: str | None
    label_col: str | None
    time_col: str | None
    segment_col: str | None
    recording_col: str | None
    pattern: LinearPattern | None
    channels: list[str]
    time_order: str = "strict"

    @property
    def columns(self) -> list[str]:
        """Every column a member must hold."""
        named = (self.user_col, self.label_col, self.time_col, self.segment_col, self.recording_col)
        return [c for c in named if c] + self.channels


def _feature_path_groups(pattern: LinearPattern, member: str) -> dict[str, str]:
    match = pattern.search(member)
    if match is None:
        message = (
            f"{member}: the path does not match reader_options.path_pattern "
            f"{pattern.pattern!r}; narrow the members glob or widen the pattern"
        )
        raise ParseError(message, reason=Reason("no-match", "path_pattern"))
    return {k: v for k, v in match.groupdict().items() if v is not None}


def _path_pattern(entry: DatasetEntry) -> LinearPattern | None:
    text = str_option(entry, "path_pattern", None)
    if text is None:
        return None
    where = f"invalid registry entry '{entry.name}': field 'reader_options.path_pattern'"
    try:
        # Linear-time matching: the pattern comes from an entry anyone may write.
        pattern = compile_linear(text)
    except PatternError as exc:
        message = f"{where}: {excerpt(text)} {exc}"
        raise RegistryError(message, reason=Reason("invalid", "path_pattern")) from None
    unknown = set(pattern.groupindex) - {"user", "label", "recording"}
    if unknown:
        message = (
            f"{where}: unknown group(s) {sorted(unknown)}; the groups are user, label and recording"
        )
        raise RegistryError(message, reason=Reason("invalid", "path_pattern"))
    return pattern


def long_options(entry: DatasetEntry) -> LongOptions:
    """Read and cross-check the options: each role comes from one column or one path group."""
    pattern = _path_pattern(entry)
    groups = set(pattern.groupindex) if pattern else set()
    found: dict[str, str | None] = {}
    for role in ("user", "label"):
        column = str_option(entry, f"{role}_col", None)
        if (column is None) == (role not in groups):
            how = "both" if column else "neither"
            message = (
                f"dataset '{entry.name}': reader 'long-signals' takes the {role} from "
                f"reader_options.{role}_col or from a '{role}' group of path_pattern; {how} given"
            )
            raise RegistryError(
                message, reason=Reason("taken" if column else "missing", f"{role}_col")
            )
        found[role] = column
    time_col = str_option(entry, "time_col", None)
    segment_col = str_option(entry, "segment_col", None)
    recording_col = str_option(entry, "recording_col", None)
    sensor_channels = [c for s in entry.sensors for c in s.channels]
    channels = list_option(entry, "channels", sensor_channels)
    roles: dict[str, str] = {}
    for kind, column in (
        ("user", found["user"]),
        ("label", found["label"]),
        ("time", time_col),
        ("segment", segment_col),
        ("recording", recording_col),
    ):
        if column:
            if column in roles:
                _check_roles(entry, f"{kind}_col", [column], roles)
            roles[column] = f"the {kind} column ({kind}_col)"
    _check_roles(entry, "channels", channels, roles)
    streams = stream_options(entry)
    if streams is not None:
        _check_roles(
            entry, "streams.keys", list(streams.keys), {**roles, **_channel_roles(channels)}
        )
    absent = [c for c in sensor_channels if c not in channels]
    # Aligned streams name their channels "<channel> [<stream>]": checked once split.
    if absent and not (streams is not None and streams.align == "slowest"):
        message = (
            f"dataset '{entry.name}': sensor channels {absent} are not in "
            f"reader_options.channels {channels}"
        )
        raise RegistryError(message, reason=Reason("absent", "sensors"))
    time_order = str_option(entry, "time_order", "strict")
    if time_order not in TIME_ORDERS:
        message = (
            f"invalid registry entry '{entry.name}': field 'reader_options.time_order': "
            f"{excerpt(time_order)} is not one of {list(TIME_ORDERS)}"
        )
        raise RegistryError(message, reason=Reason("invalid", "time_order"))
    return LongOptions(
        found["user"],
        found["label"],
        time_col,
        segment_col,
        recording_col,
        pattern,
        channels,
        time_order,
    )


def _channel_roles(channels: list[str]) -> dict[str, str]:
    return dict.fromkeys(channels, "a channel (reader_options.channels)")


def path_groups(options: LongOptions, member: str) -> dict[str, str]:
    """The named groups of ``path_pattern`` in ``member``'s path (searched, not anchored)."""
    if options.pattern is None:
        return {}
    match = options.pattern.search(member)
    if match is None:
        message = (
            f"{member}: the path does not match reader_options.path_pattern "
            f"{options.pattern.pattern!r}; narrow the members glob or widen the pattern"
        )
        raise ParseError(message, reason=Reason("no-match", "path_pattern"))
    return {k: v for k, v in match.groupdict().items() if v is not None}


def time_values(values: pd.Series, member: str, column: str) -> np.ndarray:
    """Time as numbers: numeric columns as they are, text parsed as datetimes (ns).

    Raises
    ------
    ParseError
        A value is neither a number nor a date/time, or is blank (row named).
    """
    numbers = time_numbers(values, member, column)
    check_time_blank(numbers, member, column)
    return numbers


def check_time_blank(numbers: np.ndarray, member: str, column: str, row_shift: int = 0) -> None:
    """A blank time (NaN in :func:`time_numbers`) is an error naming the row."""
    missing = np.flatnonzero(np.isnan(numbers))
    if missing.size:
        message = f"{member}: time column '{column}' is blank at row {int(missing[0]) + row_shift}"
        raise ParseError(message, reason=Reason("blank", "time_col"))


def time_numbers(
    values: pd.Series,
    member: str,
    column: str,
    *,
    row_shift: int = 0,
    numeric: bool | None = None,
) -> np.ndarray:
    """:func:`time_values` with blank times left as NaN.

    Text is read as numbers when every value of it is one, else as date/times
    (:mod:`mudata.readers.times`: offsets converted to UTC, and a mix of
    times with and without one refused). For a part of a file, ``numeric``
    gives that decision, taken over the whole file, and ``row_shift`` rows of
    the file come before ``values``.

    Raises
    ------
    ParseError
        A value is neither a number nor a date/time, or carries a UTC offset
        where the first time does not, or the reverse (row named).
    """
    numbers, parsed = time_text(values, member, column, row_shift=row_shift, numeric=numeric)
    if parsed is not None:
        check_offsets(parsed, values, member, column, row_shift=row_shift)
    return numbers


def time_text(
    values: pd.Series,
    member: str,
    column: str,
    *,
    row_shift: int = 0,
    numeric: bool | None = None,
) -> tuple[np.ndarray, ParsedTimes | None]:
    """:func:`time_numbers` without the check of offsets, and the parsed date/times (None for numbers).

    Raises
    ------
    ParseError
        A value is neither a number nor a date/time (row named).
    """
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return values.to_numpy(dtype=np.float64), None
    if numeric if numeric is not None else first_non_numeric(values) is None:
        return pd.to_numeric(values).to_numpy(dtype=np.float64), None
    # Text timestamps: "9:00" must come before "10:00", so compare instants, not text.
    parsed = parse_times(values)
    bad = np.flatnonzero(parsed.bad)
    if bad.size:
        message = (
            f"{member}: time column '{column}', row {int(bad[0]) + row_shift}: "
            f"{excerpt(values.iloc[bad[0]])} is neither a number nor a date/time"
        )
        raise ParseError(message, reason=Reason("not-numeric", "time_col"))
    return parsed.numbers, parsed


def check_time(
    time: np.ndarray, recording: np.ndarray, member: str, column: str, header: int
) -> int:
    """Time must not go back inside a recording; return how many times repeat.

    Equal consecutive times are real data (a phone or watch clock gives two
    samples the same millisecond): they are kept in file order and counted.
    A time that goes back inside one recording is an error naming the file and
    the row.

    Parameters
    ----------
    time : ndarray of float, shape (n,)
        The time column as numbers (:func:`time_values`).
    recording : ndarray of int, shape (n,)
        The recording of each row.
    member, column : str
        The file and the time column, for the message.
    header : int
        Lines before the first row (1 with a header line), for the line number.

    Returns
    -------
    int
        Rows whose time equals the previous row's of the same recording.

    Raises
    ------
    ParseError
        Time goes back inside a recording.
    """
    order = np.lexsort((np.arange(time.size), recording))
    same = recording[order][1:] == recording[order][:-1]
    step = np.diff(time[order])
    bad = np.flatnonzero(same & (step < 0))
    if bad.size:
        row = int(order[bad[0] + 1])
        before = int(order[bad[0]])
        raise time_goes_back(member, column, row, before, header, np.unique(recording).size)
    return int(np.count_nonzero(same & (step == 0)))


def time_goes_back(
    member: str, column: str, row: int, before: int, header: int, recordings: int
) -> ParseError:
    """The error of :func:`check_time`: time at ``row`` is before the time at ``before``.

    ``recordings`` is the number of recordings in the file, ``header`` the
    lines before its first row.
    """
    message = (
        f"{member}, row {row} (line {row + 1 + header}): time column '{column}' goes "
        f"back from the time of row {before} inside one recording "
        f"({recordings} recording(s) in this file). If the file holds "
        f"several recordings that each restart their clock, name the column that tells "
        f"them apart as reader_options.recording_col, or a 'recording' group in "
        f'path_pattern; if the rows are in the right order already, set time_order = "file".'
    )
    return ParseError(message, reason=Reason("goes-back", "recording_col"))


def _member_frame(
    member: str, table: pd.DataFrame, options: LongOptions, number: int, header: int
) -> tuple[pd.DataFrame, int]:
    """One member's rows (user, label, a recording key and the channels, in file
    order), and how many of its times repeat the previous one (:func:`check_time`)."""
    groups = path_groups(options, member)
    n = len(table)
    users = (
        text_users(table[options.user_col], member, options.user_col)
        if options.user_col
        else np.full(n, groups["user"], dtype=object)
    )
    labels = (
        table[options.label_col].to_numpy()
        if options.label_col
        else np.full(n, groups["label"], dtype=object)
    )
    recording = pd.Series(users, dtype=object).astype(str)
    if "recording" in groups:
        recording = recording + "\x1f" + groups["recording"]
    if options.recording_col:
        recording = recording + "\x1f" + table[options.recording_col].astype(str).to_numpy()
    local = pd.factorize(recording)[0]
    repeats = 0
    if options.time_col and options.time_order == "strict":
        repeats = check_time(
            time_values(table[options.time_col], member, options.time_col),
            local,
            member,
            options.time_col,
            header,
        )
    frame = pd.DataFrame({"userid": users, "label": labels, "_file": number, "_recording": local})
    if options.segment_col:
        frame["_segment"] = table[options.segment_col].to_numpy()
    frame = pd.concat(
        [frame, numeric_columns(table, options.channels, member).reset_index(drop=True)], axis=1
    )
    return frame, repeats


def _runs(frame: pd.DataFrame, key: list[str]) -> np.ndarray:
    """Number each contiguous run of ``key``, so that segments are contiguous by construction."""
    change = np.zeros(len(frame), dtype=bool)
    for column in key:
        values = frame[column].to_numpy()
        change[1:] |= values[1:] != values[:-1]
    return np.cumsum(change).astype(np.int64)


def read_long_signals(entry: DatasetEntry, sources: Sources) -> SignalTable:
    """Read raw samples in long format (one row per sample).

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``:

        * ``format`` (``"csv"``, ``"parquet"`` or ``"text"``: whitespace-separated),
          ``members`` (glob), ``header`` (default true; without a header,
          ``columns`` maps names to 1-based column numbers), ``encoding``;
        * ``user_col`` and ``label_col``, or the groups ``user`` and ``label``
          of ``path_pattern``, a regular expression searched in each member's
          path (``recording`` is a third, optional group);
        * ``time_col`` (optional; numbers, or text parsed as date/times): it
          must not go back inside a recording; repeated times are kept in file
          order and counted (``attrs["time_repeats"]``, by file). With
          ``time_order = "file"`` it is not checked. Samples are always taken in
          file order at ``sampling_rate_hz``;
        * ``format = "mat"``: ``variable`` names the array (default: the only
          numeric 2-D one); ``separator`` and ``decimal`` for delimited text;
          compressed members (``.gz``, ``.bz2``, ``.xz``) are decompressed;
        * ``recording_col`` (optional): a recording is one (file, user,
          ``recording`` group, ``recording_col`` value); windows never cross one;
        * ``channels`` (default the sensors' channels), ``segment_col``
          (optional; default: one segment per recording run).
    sources : Sources
        The verified files.

    Returns
    -------
    SignalTable
        ``userid`` (text), ``label``, ``segment`` (int), ``recording`` (int),
        then the channels as float64 (NaN kept), rows in file order.

    Raises
    ------
    RegistryError
        When the options contradict each other or miss a sensor channel.
    ParseError
        When a file lacks a named column (file, missing and found columns
        named), a path does not match ``path_pattern``, a channel is not
        numeric, or time goes back inside a recording (file and row named).
    """
    options = long_options(entry)
    streams = stream_options(entry)
    keys = list(streams.keys) if streams else []
    header = int(entry.reader_options.get("header", True) is not False)
    frames, repeats, found = [], {}, {}
    text_columns = [options.user_col] if options.user_col else []
    member_options = options
    first_clock: Clock | None = None
    for number, (member, table) in enumerate(
        _load(entry, sources, options.columns + keys, text_columns + keys)
    ):
        if streams is not None:
            table, member_options, found[member], clock = _split(
                entry, member, table, options, streams, header, member_options
            )
            # Windows are sized from the entry's one rate: every file's clock must agree.
            check_clock(clock, first_clock, entry.sampling_rate_hz, entry.name)
            first_clock = first_clock or clock
        member_frame, repeats[member] = _member_frame(member, table, member_options, number, header)
        frames.append(member_frame)
    options = member_options
    frame = pd.concat(frames, ignore_index=True)
    frame["recording"] = pd.factorize(
        frame["_file"].astype(str) + "/" + frame["_recording"].astype(str)
    )[0].astype(np.int64)
    key = ["_file", "_segment"] if options.segment_col else ["recording"]
    frame.insert(2, "segment", _runs(frame, key))
    columns = ["userid", "label", "segment", "recording", *options.channels]
    table = frame[columns].reset_index(drop=True)
    repeated = {m: n for m, n in repeats.items() if n}
    if repeated:
        log.info(
            "%s: %d samples repeat the time of the previous one (kept in file order): %s",
            entry.name,
            sum(repeated.values()),
            excerpt(repeated),
        )
    # Read by the pipeline into the provenance's counts (``time_repeats``).
    table.attrs["time_repeats"] = repeated
    if streams is not None:
        table.attrs["streams"] = found
    return SignalTable(table)


def _split(
    entry: DatasetEntry,
    member: str,
    table: pd.DataFrame,
    options: LongOptions,
    streams: StreamOptions,
    header: int,
    before: LongOptions,
) -> tuple[pd.DataFrame, LongOptions, dict, Clock]:
    """One member split into its streams (:mod:`mudata.readers.streams`), the options
    the rest of the reader reads it with (``before`` holds the previous member's),
    and the clock it is windowed on."""
    assert options.time_col is not None  # stream_options requires it
    values = table[options.time_col]
    time, parsed = time_text(values, member, options.time_col)
    if parsed is not None:
        check_offsets(parsed, values, member, options.time_col)
    check_time_blank(time, member, options.time_col)
    # Date/time text is read in nanoseconds; numbers are in the unit the entry names.
    unit = 1e-9 if parsed is not None else TIME_UNITS.get(streams.time_unit or "")
    split = split_streams(
        table,
        time,
        member,
        streams,
        user_col=options.user_col,
        label_col=options.label_col,
        time_col=options.time_col,
        recording_col=options.recording_col,
        channels=options.channels,
        header=header,
    )
    if before is not options and set(before.channels) != set(split.channels):
        message = (
            f"{member}: holds the streams {excerpt(sorted(split.info['streams']))}, where the "
            f"files before it give the channels {excerpt(before.channels)}; every file must "
            f"hold the same streams: choose them with reader_options.streams.select"
        )
        raise ParseError(message, reason=Reason("differs", "streams.select"))
    channels = before.channels if before is not options else split.channels
    absent = [c for s in entry.sensors for c in s.channels if c not in channels]
    if absent:
        message = (
            f"dataset '{entry.name}': sensor channels {absent} are not channels of the streams "
            f"of {member}; its channels: {excerpt(channels)}"
        )
        raise ParseError(message, reason=Reason("absent", "sensors"))
    found = dataclasses.replace(options, channels=channels, recording_col=split.recording_col)
    reference = split.info["clock"]
    clock = Clock(
        member,
        reference,
        split.info["streams"][reference]["step"],
        unit,
        streams.align == "slowest",
    )
    return split.table, found, split.info, clock
