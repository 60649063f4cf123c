"""Benchmark: the cost of ``table_sha256`` (:mod:`mudata.publish.table_hash`), in rows per second.

``mudata.load`` hashes a cached table's rows before serving them, and
``mudata verify`` hashes the cached rows and the rebuild. This times
:func:`mudata.publish.table_hash.table_sha256` (SHA-256 over the canonical encoding)
beside :func:`mudata.publish.table_hash.legacy_sha256` (the old pandas row hashes),
on:

* the WISDM table built from the official file in ``../shared/data/wisdm``
  (skipped when absent): 2,869 rows, two text columns and 39 float64 features;
* a synthetic table of 1,000,000 rows with the same columns (text user ids
  and labels, 39 float64 features), hashed whole and in 100,000-row chunks
  (:class:`mudata.publish.table_hash.TableHasher`).

Run::

    python benchmarks/table_hash.py [--rows 1000000] [--repeat 5]

The median of ``--repeat`` runs is printed (CPU time: the steadier number on
a shared machine). Measured on the shared 2-core machine (load average 3),
``python benchmarks/table_hash.py --repeat 9``:

=========================  =========  ================  ================
table                      rows       table_sha256      legacy (pandas)
=========================  =========  ================  ================
WISDM                      2,869      0.82 M rows/s     1.41 M rows/s
synthetic, whole           1,000,000  3.15 M rows/s     3.28 M rows/s
synthetic, 100,000 chunks  1,000,000  2.66 M rows/s     (not chunked)
=========================  =========  ================  ================

The WISDM table takes 3.5 ms (the fixed cost of reading 41 columns out of
pandas); the synthetic one 317 ms, of which SHA-256 over its 336 bytes per
row takes about 190 ms (hashlib here: 1.8 GB/s). In chunks, the rows of each
block that straddles two chunks are copied once.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from mudata.building.pipeline import build
from mudata.publish.store import read_table
from mudata.publish.table_hash import TableHasher, legacy_sha256, table_sha256
from mudata.registry.lookup import get_entry

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def synthetic(rows: int, features: int = 39, users: int = 36) -> pd.DataFrame:
    """WISDM's columns and types, ``rows`` long."""
    rng = np.random.default_rng(0)
    classes = ["Walking", "Jogging", "Upstairs", "Downstairs", "Sitting", "Standing"]
    frame = pd.DataFrame(
        {
            "userid": pd.Series(rng.integers(1, users + 1, rows).astype(str), dtype="str"),
            "label": pd.Series(rng.choice(classes, rows), dtype="str"),
        }
    )
    values = pd.DataFrame(
        rng.normal(size=(rows, features)), columns=[f"X{i}" for i in range(features)]
    )
    return pd.concat([frame, values], axis=1)


def chunked(frame: pd.DataFrame, size: int = 100_000) -> str:
    hasher = TableHasher()
    for start in range(0, len(frame), size):
        hasher.update(frame.iloc[start : start + size])
    return hasher.hexdigest()


def cpu_seconds(function: Callable[[pd.DataFrame], str], frame: pd.DataFrame, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        function(frame)
        times.append(time.process_time() - start)
    return statistics.median(times)


def wisdm(home: Path) -> pd.DataFrame | None:
    folder = SHARED / "wisdm"
    if not folder.is_dir():
        return None
    return read_table(build(get_entry("wisdm"), data_home=home, manual_dir=folder, progress=False))


def report(name: str, frame: pd.DataFrame, repeat: int, with_chunks: bool) -> None:
    rows = len(frame)
    assert chunked(frame) == table_sha256(frame)  # the block rule: chunks hash as the whole
    runs = [("table_sha256", table_sha256), ("legacy pandas row hashes", legacy_sha256)]
    if with_chunks:
        runs.insert(1, ("table_sha256, 100,000-row chunks", chunked))
    for label, function in runs:
        seconds = cpu_seconds(function, frame, repeat)
        print(
            f"{name:<10} {rows:>10,} rows  {label:<34} {seconds * 1000:9.1f} ms  {rows / seconds / 1e6:6.2f} M rows/s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        table = wisdm(Path(home))
        if table is None:
            print(f"WISDM skipped: no {SHARED / 'wisdm'}")
        else:
            report("WISDM", table, args.repeat, with_chunks=False)
    report("synthetic", synthetic(args.rows), args.repeat, with_chunks=True)


if __name__ == "__main__":
    main()
