"""A table's content hash: SHA-256 over a canonical byte encoding of its rows.

``mudata verify`` decides that a cached table equals a rebuild when their
hashes are equal, so the hash must be collision resistant as a whole: every
byte that stands for a value goes through SHA-256 (an earlier scheme hashed
pandas' 64-bit row hashes, which can be inverted one row at a time; it is kept
as :func:`legacy_sha256` to check tables that still carry it).

The encoding (provenance ``table_sha256_kind`` :data:`KIND`); every count
and length is an unsigned 64-bit little-endian integer (``u64``):

* **Header**: :data:`MAGIC`, the number of columns, then for each column in
  order its name and its type tag, each as ``u64`` byte length + UTF-8. The
  tags are ``float16``/``float32``/``float64``, ``int8`` ... ``int64``,
  ``uint8`` ... ``uint64``, ``bool`` and ``text``, so a column moved, renamed
  or retyped changes the hash. Numpy and pandas' nullable types of one kind
  share a tag (``int64`` and ``Int64``; ``object``, ``str`` and ``string``
  columns of text are all ``text``); a categorical column is hashed as its
  values.
* **Blocks** of :data:`BLOCK_ROWS` rows (the last one shorter; none when the
  table has no rows): the block's row count, then each column's cells of
  those rows, in column order:

  - a null marker: byte ``0`` when no cell of the block is null, else byte
    ``1`` and one byte per row (``1`` null, ``0`` not). Null is pandas'
    missing value of a nullable or text column (``None``, ``pd.NA``, NaN in
    a text column); in a numpy float column NaN is a value, not a null;
  - floats: each value widened to float64 (exact), as its IEEE-754 bits,
    little-endian; ``-0.0`` and ``0.0`` differ; **every NaN (any sign,
    payload, quiet or signalling) is written as the one quiet NaN**
    ``0x7FF8000000000000``: NumPy, pandas and Parquet do not promise to keep
    a payload, and a NaN compares as missing whatever its bits;
  - integers: the column's own width, little-endian, two's complement;
  - booleans: one byte, ``0`` or ``1``;
  - text: one ``u64`` UTF-8 byte length per row, then the rows' UTF-8 bytes
    joined, so ``"ab", "c"`` and ``"a", "bc"`` differ;
  - a null cell is written as zero bits (an empty string for text), after
    the marker that says it is null.
* **Trailer**: ``b"rows"`` and the table's row count.

The blocks make the hash of a table given in pieces (:class:`TableHasher`,
fed chunk by chunk) the hash of the whole table: a block is always
:data:`BLOCK_ROWS` rows, wherever the chunks were cut.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mudata.errors import ValidationError

#: The ``table_sha256_kind`` of tables hashed by :func:`table_sha256`.
KIND = "sha256-canonical-rows/1"
#: The kind of tables written before it (no ``table_sha256_kind`` in their provenance).
LEGACY_KIND = "sha256-pandas-row-hashes"
#: First bytes of the encoding (they name it: another encoding, another prefix).
MAGIC = b"mudata.table_sha256/1\n"
#: Rows per block of the encoding (part of the encoding: changing it changes every hash).
BLOCK_ROWS = 65_536
#: The bits every NaN is written as: the quiet NaN, no payload, sign clear.
CANONICAL_NAN = 0x7FF8_0000_0000_0000

_U64 = struct.Struct("<Q")


class _Tally:
    """Rows this process has encoded (see :func:`rows_hashed`)."""

    rows = 0


def rows_hashed() -> int:
    """How many rows this process has encoded for a table hash so far.

    Every row of :func:`table_sha256` and :class:`TableHasher` is counted once
    per block it is encoded in, so that a test or a benchmark can see that a
    fast path (a cached ``fetch``) hashed no row, without replacing the hash.
    """
    return _Tally.rows


def table_sha256(table: pd.DataFrame) -> str:
    """SHA-256 of the table's canonical encoding (module docstring), as hex.

    Raises
    ------
    ValidationError
        A column holds something else than text, numbers or booleans (its
        name and type are given).
    """
    hasher = TableHasher()
    hasher.update(table)
    return hasher.hexdigest()


class TableHasher:
    """:func:`table_sha256` of a table given in row chunks, in order.

    Every chunk must have the columns (names, order and type tags) of the
    first one. The digest equals :func:`table_sha256` of the chunks
    concatenated: the encoding's blocks do not depend on where the chunks
    were cut.
    """

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self._columns: list[tuple[str, str]] | None = None
        self._pending: list[pd.DataFrame] = []
        self._pending_rows = 0
        self._rows = 0

    def update(self, chunk: pd.DataFrame) -> None:
        """Add the next rows.

        Raises
        ------
        ValidationError
            ``chunk``'s columns differ from the first chunk's, or a column
            cannot be hashed.
        """
        columns = column_tags(chunk)
        if self._columns is None:
            self._columns = columns
            self._digest.update(_header(columns))
        elif columns != self._columns:
            message = (
                f"a chunk of the table has the columns {_shown(columns)}, not those of the "
                f"first chunk, {_shown(self._columns)}"
            )
            raise ValidationError(message)
        start = 0
        if self._pending_rows:
            # The block begun by earlier chunks: only its rows are copied.
            start = min(len(chunk), BLOCK_ROWS - self._pending_rows)
            self._pending.append(chunk.iloc[:start])
            self._pending_rows += start
            if self._pending_rows < BLOCK_ROWS:
                return
            self._emit(self._take_pending())
        while len(chunk) - start >= BLOCK_ROWS:
            self._emit(chunk.iloc[start : start + BLOCK_ROWS])
            start += BLOCK_ROWS
        if start < len(chunk):
            self._pending, self._pending_rows = [chunk.iloc[start:]], len(chunk) - start

    def _emit(self, block: pd.DataFrame) -> None:
        _hash_block(self._digest, block, self._columns or [])
        self._rows += len(block)

    def hexdigest(self) -> str:
        """The hash of the rows added so far (more may be added after)."""
        digest = self._digest.copy()
        if self._columns is None:  # nothing added: the empty table without columns
            digest.update(_header([]))
        rows = self._rows
        if self._pending_rows:
            _hash_block(digest, self._take_pending(keep=True), self._columns or [])
            rows += self._pending_rows
        digest.update(b"rows" + _U64.pack(rows))
        return digest.hexdigest()

    def _take_pending(self, keep: bool = False) -> pd.DataFrame:
        rows = (
            self._pending[0]
            if len(self._pending) == 1
            else pd.concat(self._pending, ignore_index=True)
        )
        if keep:
            self._pending = [rows]
        else:
            self._pending, self._pending_rows = [], 0
        return rows


def column_tags(table: pd.DataFrame) -> list[tuple[str, str]]:
    """Each column's name (as text) and type tag (module docstring), in order."""
    return [(str(name), _tag(table.iloc[:, i], name)) for i, name in enumerate(table.columns)]


def legacy_sha256(table: pd.DataFrame) -> str:
    """The hash of tables of kind :data:`LEGACY_KIND`: SHA-256 of pandas' 64-bit row hashes.

    It catches damage, not a forgery (a row's 64-bit hash can be matched by
    changing one value of the row); it is kept only to check tables that
    carry it.
    """
    digest = hashlib.sha256()
    digest.update(json.dumps([(str(c), str(t)) for c, t in table.dtypes.items()]).encode("utf-8"))
    digest.update(pd.util.hash_pandas_object(table, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _shown(columns: list[tuple[str, str]]) -> str:
    text = ", ".join(f"{name}: {tag}" for name, tag in columns)
    return text if len(text) <= 200 else text[:200] + " ..."


def _header(columns: list[tuple[str, str]]) -> bytes:
    parts = [MAGIC, _U64.pack(len(columns))]
    for name, tag in columns:
        parts += [_text(name), _text(tag)]
    return b"".join(parts)


def _text(value: str) -> bytes:
    data = value.encode("utf-8", "surrogatepass")
    return _U64.pack(len(data)) + data


def _tag(column: pd.Series, name: Any) -> str:
    """The type tag of a column; ValidationError when it cannot be hashed."""
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        dtype = dtype.categories.dtype
    base = getattr(dtype, "numpy_dtype", dtype)  # nullable and Arrow types: their numpy type
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if isinstance(base, np.dtype) and base.kind in "iuf" and base.itemsize <= 8:
        return base.name
    is_object = isinstance(dtype, np.dtype) and dtype.kind == "O"
    inferred = pd.api.types.infer_dtype(column, skipna=True) if is_object else None
    if pd.api.types.is_string_dtype(dtype) and inferred in (None, "string", "empty"):
        return "text"
    found = inferred or dtype
    message = (
        f"column {str(name)!r} holds {found} values, which the table hash does not encode: "
        f"a table's columns hold text, integers, floats or booleans"
    )
    raise ValidationError(message)


def _hash_block(digest: Any, block: pd.DataFrame, columns: list[tuple[str, str]]) -> None:
    """Feed one block (module docstring) to ``digest``."""
    _Tally.rows += len(block)
    digest.update(_U64.pack(len(block)))
    for i, (name, tag) in enumerate(columns):
        column = block.iloc[:, i]
        if isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype(column.dtype.categories.dtype)
        nulls: np.ndarray | None
        if tag == "text":
            nulls, parts = _text_cells(column, name)
        else:
            nulls, parts = _fixed_cells(column, tag)
        if nulls is None or not nulls.any():
            digest.update(b"\x00")
        else:
            digest.update(b"\x01")
            digest.update(nulls.astype(np.uint8).tobytes())
        for part in parts:
            digest.update(part)


def _fixed_cells(column: pd.Series, tag: str) -> tuple[np.ndarray | None, list[Any]]:
    """Nulls (None: no null possible) and the cells of a number or boolean column."""
    width = np.dtype(tag)
    if isinstance(column.dtype, np.dtype):
        # A numpy column has no null: NaN in a float column is a value.
        nulls, values = None, column.to_numpy()
    else:
        nulls = np.asarray(column.isna(), dtype=bool)
        fill = False if tag == "bool" else 0
        values = column.to_numpy(dtype=width, na_value=fill)
    if width.kind == "b":
        return nulls, [np.ascontiguousarray(values, dtype=np.uint8)]
    if width.kind == "f":
        wide = np.array(values, dtype="<f8")  # a copy: its bits are rewritten below
        bits = wide.view("<u8")
        bits[np.isnan(wide)] = CANONICAL_NAN
        if nulls is not None:
            bits[nulls] = 0
        return nulls, [bits]
    return nulls, [np.ascontiguousarray(values, dtype=width.newbyteorder("<"))]


def _text_cells(column: pd.Series, name: str) -> tuple[np.ndarray, list[Any]]:
    """Nulls and the cells of a text column: byte lengths, then the bytes joined."""
    try:
        array = pa.array(column, type=pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError) as exc:
        message = f"column {name!r} holds text that cannot be written as UTF-8 ({exc})"
        raise ValidationError(message) from None
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    nulls = np.asarray(array.is_null(), dtype=bool)
    if array.null_count:
        # Arrow lets a null slot span bytes; filled, every null is the empty string.
        array = pc.fill_null(array, "")
    offsets = np.frombuffer(array.buffers()[1], dtype="<i8")[
        array.offset : array.offset + len(array) + 1
    ]
    lengths = np.diff(offsets).astype("<u8")
    data = array.buffers()[2]
    joined = b"" if data is None else memoryview(data)[offsets[0] : offsets[-1]]
    return nulls, [lengths, joined]


__all__ = [
    "BLOCK_ROWS",
    "CANONICAL_NAN",
    "KIND",
    "LEGACY_KIND",
    "MAGIC",
    "TableHasher",
    "column_tags",
    "legacy_sha256",
    "rows_hashed",
    "table_sha256",
]
