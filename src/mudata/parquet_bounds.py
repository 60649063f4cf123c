"""How large a Parquet file becomes once read, from its footer, before reading it.

Parquet compresses a column of equal values to almost nothing: a file of a
few hundred kilobytes can declare tens of millions of rows and fill gigabytes
once decoded. :func:`check_parquet` reads only the footer (the row count, the
columns and their types) and refuses a file whose decoded size would exceed
the same expansion cap that bounds archives (:func:`mudata.archive.max_expansion`,
``$MUDATA_MAX_EXPANSION`` or ``--max-expansion``): bytes out per byte of the file, never
below :data:`mudata.archive.EXPANSION_FLOOR`. Every Parquet input of both
packages passes through it: release members and the cached table in mudata,
``--data`` files and run folders in mueval.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq

from mudata.archive import EXPANSION_ENV, expansion_budget, max_expansion
from mudata.errors import LimitError, ParseError

#: Columns a Parquet input may hold; a footer declaring more is refused unread.
MAX_PARQUET_COLUMNS = 100_000
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
