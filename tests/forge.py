"""A forgery against the old table hash: relabel rows, keep pandas' 64-bit row hashes.

The old ``table_sha256`` (``mudata.publish.table_hash.legacy_sha256``) was SHA-256 over
``pd.util.hash_pandas_object(table, index=False)``: one 64-bit hash per row.
That row hash is a chain of invertible steps (pandas' ``combine_hash_arrays``:
xor, then multiply by an odd constant, per column; each float column hashed
by a splitmix64 finaliser of its bits), so after a label is changed, the
value of the last column that restores the row's hash can be solved for.
Everything here is pandas' published algorithm run backwards; the column
hashes themselves are computed by pandas.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MASK = (1 << 64) - 1
# pandas.core.util.hashing.combine_hash_arrays and _hash_ndarray's constants.
SEED, MULT, STEP, FINAL = 0x345678, 1000003, 82520, 97531
MIX1, MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _unshift(y: np.ndarray, s: int) -> np.ndarray:
    """Inverse of ``x ^ (x >> s)``."""
    x = y.copy()
    for _ in range(64 // s + 1):
        x = y ^ (x >> np.uint64(s))
    return x


def _unmix(h: np.ndarray) -> np.ndarray:
    """The float bits whose pandas hash is ``h`` (splitmix64's finaliser undone)."""
    x = _unshift(h, 31)
    x = x * np.uint64(pow(MIX2, -1, 1 << 64))
    x = _unshift(x, 27)
    x = x * np.uint64(pow(MIX1, -1, 1 << 64))
    return _unshift(x, 30)


def multipliers(n: int) -> list[int]:
    """The multiplier combine_hash_arrays uses for each of ``n`` columns."""
    out, mult = [], MULT
    for i in range(n):
        out.append(mult)
        mult = (mult + STEP + 2 * (n - i)) & MASK
    return out


def relabel_keeping_row_hashes(
    table: pd.DataFrame, rows: np.ndarray, label: str
) -> tuple[pd.DataFrame, np.ndarray]:
    """``table`` with ``label`` in ``rows`` and each row's pandas hash unchanged.

    The last column (a float64 feature) of each relabelled row is set to the
    value that restores the row's hash. Rows whose solution would be a NaN or
    -0.0 (pandas hashes those canonically; about one row in 2,000) are left
    as they were; the rows forged are returned.
    """
    target = pd.util.hash_pandas_object(table, index=False).to_numpy()
    forged = table.copy()
    forged.loc[rows, "label"] = label
    columns = list(forged.columns)
    last = columns[-1]
    assert forged[last].dtype == np.float64
    mults = multipliers(len(columns))
    with np.errstate(over="ignore"):
        acc = np.full(len(rows), SEED, dtype=np.uint64)
        for i, column in enumerate(columns[:-1]):
            hashes = pd.util.hash_pandas_object(forged[column], index=False).to_numpy()[rows]
            acc = (acc ^ hashes) * np.uint64(mults[i])
        inverse = np.uint64(pow(mults[-1], -1, 1 << 64))
        wanted = ((target[rows] - np.uint64(FINAL)) * inverse) ^ acc
    values = _unmix(wanted).view(np.float64)
    usable = ~np.isnan(values) & (values.view(np.uint64) != np.uint64(1 << 63))
    forged.loc[rows[usable], last] = values[usable]
    forged.loc[rows[~usable], "label"] = table.loc[rows[~usable], "label"]
    return forged, rows[usable]
