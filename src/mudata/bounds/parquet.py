"""How large a Parquet file becomes once read, from its footer, before reading it.

Parquet compresses a column of equal values to almost nothing: a file of a
few hundred kilobytes can declare tens of millions of rows and fill gigabytes
once decoded. :func:`check_parquet` reads only the footer (the row count, the
columns and their types) and refuses a file whose decoded size would exceed
the same expansion cap that bounds archives (:func:`mudata.config.max_expansion`,
``$MUDATA_MAX_EXPANSION`` or ``--max-expansion``): bytes out per byte of the file, never
below :data:`mudata.bounds.archive.EXPANSION_FLOOR`. Every Parquet input of both
packages passes through it: release members and the cached table in mudata,
``--data`` files and run folders in mueval.

A CSV header is bounded the same way: :func:`check_csv_header` counts the
columns of the first line (found within :data:`MAX_HEADER_BYTES`) and refuses
more than :data:`MAX_PARQUET_COLUMNS` before the file is parsed; a 6.9 MB
header of 700,000 columns would otherwise take gigabytes in pandas.
:func:`check_first_row` refuses a first data row with more fields than the
header (unless every row has them): pandas would shift every column by one.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq

from mudata.bounds.archive import expansion_budget
from mudata.config import EXPANSION_ENV, max_expansion
from mudata.errors import LimitError, ParseError

#: Columns a Parquet input may hold; a footer declaring more is refused unread.
MAX_PARQUET_COLUMNS = 100_000
#: Bytes the first line of a CSV input may take (as for a line of a stream in mudata).
MAX_HEADER_BYTES = 1 << 26
# Bytes per value once decoded, by Parquet physical type; text and binary
# values count their offsets here and their bytes from the footer's sizes.
_WIDTH = {
    "BOOLEAN": 1,
    "INT32": 4,
    "INT64": 8,
    "INT96": 12,
    "FLOAT": 4,
    "DOUBLE": 8,
    "BYTE_ARRAY": 8,
}


def decoded_bytes(meta: pq.FileMetaData) -> int:
    """Bytes the file's values take once decoded (a lower bound of the memory a read needs).

    Every value of a fixed-width column counts its width, whatever encoding
    (dictionary, run lengths) packed it; a text or binary value counts an
    offset plus its share of the column chunks' uncompressed size.
    """
    rows = meta.num_rows
    total = 0
    schema = meta.schema
    for i in range(meta.num_columns):
        column = schema.column(i)
        physical = column.physical_type
        if physical == "FIXED_LEN_BYTE_ARRAY":
            width = max(1, column.length or 1)
        else:
            width = _WIDTH.get(physical, 8)
        total += rows * width
    for g in range(meta.num_row_groups):
        total += max(0, meta.row_group(g).total_byte_size)
    return total


def check_parquet(
    source: Path | str | bytes | IO[bytes],
    what: str,
    *,
    ratio: float | str | None = None,
    hint: str = f"${EXPANSION_ENV} or --max-expansion",
) -> pq.FileMetaData:
    """The footer of a Parquet file, once its decoded size is known to fit the cap.

    Parameters
    ----------
    source : path, bytes or binary file
        The file (a file object is left at its start).
    what : str
        How messages name it (e.g. the path, or ``"member 'a.parquet' of x.zip"``).
    ratio : float or str, optional
        Expansion cap in decoded bytes per file byte; default as for archives.
    hint : str
        How the caller's user raises the cap, for the message.

    Returns
    -------
    pyarrow.parquet.FileMetaData

    Raises
    ------
    ParseError
        The footer cannot be read (not a Parquet file, truncated).
    LimitError
        More than :data:`MAX_PARQUET_COLUMNS` columns, or more decoded bytes
        than the cap allows; the message gives rows, columns, sizes and the cap.
    """
    if isinstance(source, bytes | bytearray | memoryview):
        size = len(source)
        handle: IO[bytes] = io.BytesIO(source)
    elif isinstance(source, str | Path):
        size = os.stat(source).st_size
        handle = open(source, "rb")  # noqa: SIM115 - closed below
    else:
        handle = source
        start = handle.tell()
        size = handle.seek(0, io.SEEK_END) - start
        handle.seek(start)
    try:
        start = handle.tell()
        meta = pq.ParquetFile(handle).metadata
    except (OSError, ValueError, pa.ArrowException) as exc:
        found = " ".join(str(exc).split())[:200] or type(exc).__name__
        message = f"{what}: not a readable Parquet file ({found})"
        raise ParseError(message) from None
    finally:
        if isinstance(source, str | Path):
            handle.close()
        else:
            handle.seek(start)
    if meta.num_columns > MAX_PARQUET_COLUMNS:
        message = (
            f"{what}: declares {meta.num_columns:,} columns, more than the "
            f"{MAX_PARQUET_COLUMNS:,} a Parquet input may hold; refusing it unread"
        )
        raise LimitError(message)
    cap = max_expansion(ratio)
    budget = expansion_budget(size, cap)
    decoded = decoded_bytes(meta)
    if decoded > budget:
        message = (
            f"{what}: declares {meta.num_rows:,} rows x {meta.num_columns:,} columns, "
            f"at least {decoded:,} bytes once read from a {size:,}-byte file; the cap is "
            f"{budget:,.0f} bytes ({cap:g} bytes per file byte, at least "
            f"{expansion_budget(0, cap):,.0f}). Refusing it unread; raise the cap with "
            f"{hint} if the file is trusted"
        )
        raise LimitError(message)
    return meta


def check_csv_header(
    data: bytes, what: str, *, separator: str | None = ",", encoding: str = "utf-8"
) -> int:
    """The number of columns of a delimited file's first line, once known to fit the cap.

    Only the first line is looked at, and only within :data:`MAX_HEADER_BYTES`.

    Parameters
    ----------
    data : bytes
        The file's (decompressed) bytes.
    what : str
        How messages name the file.
    separator : str or None
        The field separator; None for whitespace-separated text.
    encoding : str
        The text encoding (the separators of UTF-16 and UTF-32 are not single bytes).

    Raises
    ------
    LimitError
        The first line is longer than :data:`MAX_HEADER_BYTES`, or holds more
        than :data:`MAX_PARQUET_COLUMNS` columns.
    """
    head = data[: MAX_HEADER_BYTES + 1]
    if encoding.lower().replace("-", "").replace("_", "").startswith(("utf16", "utf32")):
        text = head.decode(encoding, errors="replace")
        end = text.find("\n")
        line = text if end < 0 else text[:end]
    else:
        end = head.find(b"\n")
        if end < 0 and len(data) > MAX_HEADER_BYTES:
            message = (
                f"{what}: no line break in the first {MAX_HEADER_BYTES:,} bytes; a header "
                f"line may take at most that; refusing it unread"
            )
            raise LimitError(message)
        line = (head if end < 0 else head[:end]).decode("latin-1")
    if separator is None:
        columns = len(line.split())
    else:
        columns = line.count(separator) + 1
        if columns > MAX_PARQUET_COLUMNS and '"' in line:
            # Separators inside quoted names do not count: count fields, not separators.
            with contextlib.suppress(csv.Error):  # a field past csv's size limit
                columns = len(next(csv.reader([line], delimiter=separator), []))
    if columns > MAX_PARQUET_COLUMNS:
        message = (
            f"{what}: its first line holds {columns:,} columns, more than the "
            f"{MAX_PARQUET_COLUMNS:,} a CSV input may hold (as a Parquet input); refusing it "
            f"unread"
        )
        raise LimitError(message)
    return columns


def _records(text: str, separator: str | None) -> Iterator[list[str]]:
    """The non-blank records of delimited text, as pandas' C parser splits them
    (quoted fields may hold separators and line breaks; blank lines are skipped)."""
    if separator is None:
        yield from (fields for fields in (line.split() for line in text.splitlines()) if fields)
        return
    try:
        yield from (
            fields for fields in csv.reader(io.StringIO(text), delimiter=separator) if fields
        )
    except csv.Error:  # a field past csv's size limit: pandas will say what it finds
        return


def check_first_row(
    data: bytes, what: str, *, separator: str | None = ",", encoding: str = "utf-8"
) -> None:
    """Refuse a first data row with more fields than the header, unless every row has them.

    pandas reads a header of N names over rows of N + 1 fields as a row index
    and N columns (R's ``write.table`` writes row names so; those files are
    read as before). When only the first data row holds more (a line joined
    with the next, a stray separator), the rows after it get a missing last
    column and every name moves one column to the right, silently.

    Parameters
    ----------
    data : bytes
        The file's (decompressed) bytes, its header on the first line.
    what : str
        How messages name the file.
    separator : str or None
        The field separator; None for whitespace-separated text.
    encoding : str
        The text encoding.

    Raises
    ------
    ParseError
        Naming the header's field count and the first data row whose count differs.

    Examples
    --------
    >>> check_first_row(b"a,b\\n1,2,3\\n4,5,6\\n", "rownames.csv")  # every row: an index
    >>> check_first_row(b"a,b\\n1,2,3\\n4,5\\n", "f.csv")
    Traceback (most recent call last):
    ...
    mudata.errors.ParseError: f.csv: the header names 2 columns, data row 1 holds 3 fields and data row 2 holds 2: read so, every column would move one place to the right; a separator too many in data row 1, or one too few in the header?
    """
    head = data[: 1 << 16].decode(encoding, errors="replace")
    records = _records(head, separator)
    header, first = next(records, None), next(records, None)
    if header is None or first is None or len(first) <= len(header):
        return
    # Rare: every row is read now, to tell row names from one row out of line.
    text = data.decode(encoding, errors="replace")
    for number, fields in enumerate(itertools.islice(_records(text, separator), 1, None), 1):
        if len(fields) != len(first):
            message = (
                f"{what}: the header names {len(header)} columns, data row 1 holds "
                f"{len(first)} fields and data row {number:,} holds {len(fields)}: read so, "
                f"every column would move one place to the right; a separator too many in "
                f"data row 1, or one too few in the header?"
            )
            raise ParseError(message)


__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_PARQUET_COLUMNS",
    "check_csv_header",
    "check_first_row",
    "check_parquet",
    "decoded_bytes",
]
