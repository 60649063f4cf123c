"""``mudata init``, step 2: how the first data file is written, and its table.

Owns the sniffing of a (decompressed) data file -- CSV (comma, semicolon or
tab; decimal point or comma), Parquet, whitespace-separated text or MATLAB;
with or without a header -- and the reading of the first one with what was
sniffed, for the layout to be proposed from.
"""

from __future__ import annotations

import io

import pandas as pd

from mudata.bounds.parquet import check_first_row, check_parquet
from mudata.drafting.collect import Collected
from mudata.drafting.records import Sniffed
from mudata.drafting.selection import format_of
from mudata.drafting.shapes import text_shape
from mudata.errors import LimitError, ParseError
from mudata.readers.delimited import SPREADSHEET_MISSING, check_no_repeated_header
from mudata.readers.lines import checked_line_options, prepare_lines
from mudata.readers.matlab import read_mat

__all__ = ["first_table", "read_table", "sniff"]


def sniff(data: bytes, suffix: str) -> Sniffed:
    """How a (decompressed) data file is written, from its suffix and first lines:
    format, separator, decimal mark, header, and any preamble or line terminator
    (:func:`mudata.drafting.shapes.text_shape`)."""
    fmt = format_of(suffix) or "text"
    if fmt == "parquet" or data[:4] == b"PAR1":
        return Sniffed("parquet", True)
    if fmt == "mat":
        return Sniffed("mat", False)
    shape = text_shape(data[: 1 << 16].decode("utf-8", "replace"))
    fmt = "text" if shape.separator is None else "csv"
    return Sniffed(fmt, shape.header, shape.separator, shape.decimal, shape.options(), shape.notes)


def read_table(data: bytes, sniffed: Sniffed, member: str) -> pd.DataFrame:
    if sniffed.fmt == "parquet":
        check_parquet(data, member)
        return pd.read_parquet(io.BytesIO(data))
    if sniffed.fmt == "mat":
        table = read_mat(data, member)
    else:
        if sniffed.lines:
            lines = checked_line_options(sniffed.lines, "mudata init")
            text = data.decode("utf-8", "replace")
            data = prepare_lines(text, member, lines, sniffed.separator).encode()
        if sniffed.header:
            check_first_row(data, member, separator=sniffed.separator)
        table = pd.read_csv(
            io.BytesIO(data),
            sep=sniffed.separator or r"\s+",
            decimal=sniffed.decimal,
            header=0 if sniffed.header else None,
            na_values=list(SPREADSHEET_MISSING),
            low_memory=False,  # typed at once: no mixed-type column, no DtypeWarning
        )
    if not sniffed.header:
        table.columns = [f"c{i + 1}" for i in range(table.shape[1])]
    else:
        check_no_repeated_header(table, member)
    return table


def first_table(collected: Collected) -> tuple[Sniffed, pd.DataFrame]:
    """How the first data file is written, and its table."""
    first_member = collected.members[0]
    data = collected.sources.read_decoded(first_member)
    sniffed = sniff(data, collected.suffix)
    try:
        return sniffed, read_table(data, sniffed, first_member)
    except (ValueError, OSError) as exc:
        if isinstance(exc, ParseError | LimitError):
            raise
        message = f"{first_member}: cannot be read as {sniffed.fmt} ({type(exc).__name__}: {str(exc)[:200]})"
        raise ParseError(message) from None
