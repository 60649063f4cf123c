"""Members of a generic table: which files, in which format, parsed into one table each.

Owns the formats the generic readers (``feature-table``, ``long-signals``,
the chunked :mod:`mudata.readers.long_stream` and the interval labels of
:mod:`mudata.readers.annotations`) read, the ``members`` glob and its cap,
:func:`parse_member` (CSV, Parquet, whitespace-separated text or MATLAB bytes
as a table), the joining of small members under one header, and the check of
a parsed member's columns.
"""

from __future__ import annotations

import io
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import pandas as pd
from pyarrow import ArrowException

from mudata.bounds.parquet import check_csv_header, check_first_row, check_parquet
from mudata.errors import LimitError, MissingFileError, ParseError, Reason, RegistryError, excerpt
from mudata.readers._text import check_encoding, columns_option, str_option, text_encoding
from mudata.readers.delimited import SEPARATORS, SPREADSHEET_MISSING, check_no_repeated_header
from mudata.readers.lines import line_options, prepare_lines
from mudata.readers.matlab import read_mat
from mudata.readers.sources import Sources
from mudata.records.entry import DatasetEntry

__all__ = [
    "DEFAULT_MEMBERS",
    "FORMATS",
    "MAX_TABLE_MEMBERS",
    "check_columns",
    "load_members",
    "load_stacked",
    "matching_members",
    "parse_member",
]

FORMATS = ("csv", "parquet", "text", "mat")
# "text": whitespace-separated columns (.txt, .dat, .log...), read by pandas' C parser;
# "mat": one numeric 2-D array of a MATLAB v4-v7.2 file (mudata.readers.matlab).
DEFAULT_MEMBERS = {"csv": "*.csv", "parquet": "*.parquet", "text": "*.txt", "mat": "*.mat"}
#: Members the generic readers (feature-table, long-signals) stack into one
#: table. Each is parsed into a table of its own first, at some tens of KB of
#: overhead however few its rows: 49,000 one-row members took gigabytes. The
#: largest release known here has about 3,500 members.
MAX_TABLE_MEMBERS = 5_000


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
    every_column: bool = False,
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

    ``every_column``: text without a header and without ``columns`` keeps every
    column, named ``c1``, ``c2`` ... (a feature table whose names are in a file
    of their own, :mod:`mudata.readers.aligned`).
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
            fields = None if sep == r"\s+" else sep  # None: whitespace-separated
            # The header's columns first: 700,000 of them take gigabytes in pandas.
            check_csv_header(data, member, separator=fields, encoding=encoding)
            if header:
                check_first_row(data, member, separator=fields, encoding=encoding)
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
        check_no_repeated_header(table, member)
        return table
    numbers = columns_option(entry, "columns", {})
    if not numbers and every_column:
        return table.set_axis([f"c{i + 1}" for i in range(table.shape[1])], axis=1)
    if not numbers:
        message = f"dataset '{entry.name}': files without a header (header = false) need reader_options.columns (name = column number)"
        raise RegistryError(message, reason=Reason("missing", "columns"))
    beyond = {k: v for k, v in numbers.items() if v > table.shape[1]}
    if beyond:
        message = f"{member}: has {table.shape[1]} columns; reader_options.columns names {excerpt(beyond)}"
        raise ParseError(message, reason=Reason("absent", "columns"))
    return pd.DataFrame({name: table.iloc[:, number - 1] for name, number in numbers.items()})


def load_members(
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


def load_stacked(
    entry: DatasetEntry, sources: Sources, required: list[str], text_columns: Sequence[str] = ()
) -> list[tuple[str, pd.DataFrame]]:
    """As :func:`load_members`, but small consecutive members with the same header line are parsed
    as one table, named by the first of them and how many more it holds."""
    fmt, members = matching_members(entry, sources)
    if not _coalescable(entry, fmt):
        return load_members(entry, sources, required, text_columns)
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
