"""``table_sha256``: SHA-256 over the canonical encoding of mudata.publish.table_hash's docstring."""

from __future__ import annotations

import hashlib
import itertools
import math
import struct

import numpy as np
import pandas as pd
import pytest

from mudata.errors import ValidationError
from mudata.publish.table_hash import BLOCK_ROWS, TableHasher, legacy_sha256, table_sha256
from tests.forge import relabel_keeping_row_hashes

PACK = {
    "int8": "<b", "int16": "<h", "int32": "<i", "int64": "<q",
    "uint8": "<B", "uint16": "<H", "uint32": "<I", "uint64": "<Q",
}  # fmt: skip


def u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def text(s: str) -> bytes:
    return u64(len(s.encode())) + s.encode()


def cell(tag: str, value) -> bytes:
    """One value as the docstring says, written out row by row (None: a null)."""
    if tag == "bool":
        return b"\x01" if value else b"\x00"
    if tag.startswith("float"):
        if value is None:
            return u64(0)
        return u64(0x7FF8000000000000) if math.isnan(value) else struct.pack("<d", value)
    return struct.pack(PACK[tag], 0 if value is None else value)


def reference_sha256(columns: list[tuple[str, str, list]]) -> str:
    """The docstring's encoding, one value at a time in plain Python."""
    n = len(columns[0][2])
    out = [b"mudata.table_sha256/1\n", u64(len(columns))]
    out += [text(name) + text(tag) for name, tag, _ in columns]
    for start in range(0, n, BLOCK_ROWS):
        stop = min(n, start + BLOCK_ROWS)
        out.append(u64(stop - start))
        for _, tag, values in columns:
            part = values[start:stop]
            nulls = [v is None for v in part]
            out.append(b"\x01" + bytes(nulls) if any(nulls) else b"\x00")
            if tag == "text":
                data = [b"" if v is None else v.encode() for v in part]
                out += [u64(len(d)) for d in data] + data
            else:
                out += [cell(tag, v) for v in part]
    out.append(b"rows" + u64(n))
    return hashlib.sha256(b"".join(out)).hexdigest()


def test_the_hash_is_the_documented_encoding_across_a_block_boundary() -> None:
    rng = np.random.default_rng(7)
    n = BLOCK_ROWS + 7
    words = ["Walking", "é", "", "ab", "日本"]
    users = [None if i % 9000 == 5 else words[i % 5] + str(i % 13) for i in range(n)]
    floats = rng.normal(size=n)
    floats[[3, 4, 5, n - 1]] = [-0.0, np.inf, np.nan, -np.inf]
    bits = floats.view(np.uint64)
    bits[6] = 0xFFF0000000000001  # a signalling NaN, sign set
    counts = [None if i == BLOCK_ROWS + 2 else int(i) - 500 for i in range(n)]
    flags = [bool(i % 3) for i in range(n)]
    small = rng.integers(-30000, 30000, size=n, dtype=np.int16)
    frame = pd.DataFrame(
        {
            "userid": pd.Series(users, dtype=object),
            "x": floats,
            "n": pd.array(counts, dtype="Int64"),
            "k": small,
            "b": flags,
        }
    )
    expected = reference_sha256(
        [
            ("userid", "text", users),
            ("x", "float64", [float(v) for v in floats]),
            ("n", "int64", counts),
            ("k", "int16", [int(v) for v in small]),
            ("b", "bool", flags),
        ]
    )
    assert table_sha256(frame) == expected


def test_a_table_hashed_in_chunks_has_the_whole_table_s_hash() -> None:
    rng = np.random.default_rng(3)
    n = 2 * BLOCK_ROWS + 1234
    frame = pd.DataFrame(
        {
            "userid": rng.choice(["u1", "u22", "u333"], n),
            "label": rng.choice(["Walking", "Upstairs", ""], n),
            "f0": rng.normal(size=n),
        }
    )
    whole = table_sha256(frame)
    cuts = [0, 0, 17, BLOCK_ROWS, BLOCK_ROWS, BLOCK_ROWS + 5, 2 * BLOCK_ROWS + 5, n]
    for edges in (cuts, [0, BLOCK_ROWS, 2 * BLOCK_ROWS, n], [0, n]):
        hasher = TableHasher()
        for start, stop in itertools.pairwise(edges):
            hasher.update(frame.iloc[start:stop])
        assert hasher.hexdigest() == whole
    # The digest so far is of the rows so far, and more may come after it.
    hasher = TableHasher()
    hasher.update(frame.iloc[:10])
    assert hasher.hexdigest() == table_sha256(frame.iloc[:10])
    hasher.update(frame.iloc[10:])
    assert hasher.hexdigest() == whole


def test_a_chunk_with_other_columns_is_refused() -> None:
    hasher = TableHasher()
    hasher.update(pd.DataFrame({"a": [1.0], "b": ["x"]}))
    with pytest.raises(ValidationError, match="'b'|b: text"):
        hasher.update(pd.DataFrame({"a": [1.0], "b": [2]}))


def digest(**columns) -> str:
    return table_sha256(pd.DataFrame(columns))


def test_negative_zero_is_not_zero() -> None:
    assert digest(x=[-0.0, 1.0]) != digest(x=[0.0, 1.0])


def test_every_nan_is_the_one_canonical_nan() -> None:
    patterns = [0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001]
    payloads = np.array(patterns, dtype=np.uint64).view(np.float64)
    assert np.isnan(payloads).all()
    hashes = {digest(x=[1.0, value]) for value in payloads}
    assert len(hashes) == 1
    assert digest(x=[1.0, np.inf]) not in hashes and digest(x=[1.0, 0.0]) not in hashes


def test_text_cells_are_length_prefixed() -> None:
    assert digest(s=["ab", "c"]) != digest(s=["a", "bc"])
    assert digest(s=["", "abc"]) != digest(s=["abc", ""])
    assert digest(s=["a", "b"], t=["c", "d"]) != digest(s=["a", "b"], t=["cd", ""])


def test_a_null_is_not_an_empty_string_nor_a_zero() -> None:
    assert digest(s=pd.Series(["a", None], dtype=object)) != digest(s=["a", ""])
    assert digest(n=pd.array([1, None], dtype="Int64")) != digest(n=pd.array([1, 0], dtype="Int64"))
    # Without a null, the nullable and numpy integers hold the same values: one hash.
    assert digest(n=pd.array([1, 0], dtype="Int64")) == digest(n=np.array([1, 0]))


def test_column_order_names_and_types_are_hashed() -> None:
    a, b = [1.0, 2.0], [3.0, 4.0]
    base = digest(a=a, b=b)
    assert digest(b=b, a=a) != base
    assert digest(a=a, c=b) != base
    assert digest(a=np.array(a, dtype=np.float32), b=b) != base
    assert digest(a=np.array([1, 2]), b=b) != base
    # Text is text, whatever pandas' container: object, str and categorical.
    words = ["Walking", "Upstairs"]
    assert (
        digest(s=pd.Series(words, dtype=object))
        == digest(s=pd.Series(words, dtype="str"))
        == digest(s=pd.Series(words, dtype="category"))
    )


def test_a_column_mudata_does_not_encode_is_an_error_naming_it() -> None:
    with pytest.raises(ValidationError, match=r"column 'when' holds datetime64"):
        digest(when=pd.to_datetime(["2020-01-01"]))
    with pytest.raises(ValidationError, match=r"column 'mixed' holds mixed-integer"):
        digest(mixed=pd.Series([1, "a"], dtype=object))


def test_the_old_hash_is_forged_by_solving_one_float_per_row_and_the_new_one_is_not() -> None:
    rng = np.random.default_rng(11)
    n = 500
    table = pd.DataFrame(
        {
            "userid": rng.choice(["1", "2", "3"], n),
            "label": rng.choice(["Walking", "Upstairs"], n),
            **{f"f{i}": rng.normal(size=n) for i in range(5)},
        }
    )
    rows = np.flatnonzero(table["label"].to_numpy() == "Walking")[:50]
    forged, used = relabel_keeping_row_hashes(table, rows, "Upstairs")
    assert len(used) >= 45
    assert (forged.loc[used, "label"] == "Upstairs").all()
    assert legacy_sha256(forged) == legacy_sha256(table)
    assert table_sha256(forged) != table_sha256(table)
