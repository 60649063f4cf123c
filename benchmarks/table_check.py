"""Benchmark: what checking a cached table against its ``table_sha256`` costs.

``mudata.load`` reads the cached Parquet file once and hashes its rows before
serving them (:func:`mudata.publish.store.load_table`). This times that read with and
without the check, on:

* the WISDM and Smartwatch Gestures tables built from the official files in
  ``../shared/data`` (skipped when absent);
* a HAR70+-sized table, the largest the registry builds (about 2.26 million
  samples in 3 s windows: some 15,000 rows of 32 features), with the same
  columns and dtypes;
* a table of 1,000,000 rows, to show how the cost grows.

Run::

    python benchmarks/table_check.py [--repeat 5]

The median of ``--repeat`` runs is printed, in milliseconds, CPU time beside
wall time (the steadier number on a shared machine).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mudata.building.pipeline import build
from mudata.publish.store import load_table, table_fingerprint, write_table
from mudata.publish.table_hash import KIND
from mudata.registry.lookup import get_entry

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def synthetic(rows: int, features: int = 32, users: int = 18) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "userid": np.repeat(np.arange(501, 501 + users), -(-rows // users))[:rows],
            "label": rng.choice(["walking", "shuffling", "standing", "sitting", "lying"], rows),
        }
    )
    values = rng.normal(size=(rows, features))
    return pd.concat(
        [frame, pd.DataFrame(values, columns=[f"f{i}" for i in range(features)])], axis=1
    )


def publish(frame: pd.DataFrame, folder: Path, name: str) -> Path:
    provenance = {
        "dataset": name, "title": name, "dataset_version": "1", "homepage": "", "licence": "",
        "citation": "", "files": [], "classes": sorted(frame["label"].unique()),
        "table_sha256": table_fingerprint(frame), "table_sha256_kind": KIND,
    }  # fmt: skip
    return write_table(frame, folder / name, name, provenance)


def official(home: Path) -> dict[str, Path]:
    paths = {}
    manual = {"wisdm": SHARED / "wisdm", "gestures": SHARED / "gestures"}
    for name, folder in manual.items():
        if folder.is_dir():
            paths[name] = build(get_entry(name), data_home=home, manual_dir=folder, progress=False)
    return paths


def timed(path: Path, verify: bool, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        load_table(path, verify=verify)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        paths = official(home)
        paths["har70-sized"] = publish(synthetic(15_000), home, "har70sized")
        paths["1M rows"] = publish(synthetic(1_000_000), home, "million")
        print(
            f"{'table':<12} {'rows':>9} {'cols':>5} {'MB':>6} {'read ms':>14} {'read+check ms':>14} {'check':>7}"
        )
        for name, path in paths.items():
            frame, _ = load_table(path)
            plain = timed(path, False, options.repeat)
            checked = timed(path, True, options.repeat)
            print(
                f"{name:<12} {len(frame):>9,} {frame.shape[1]:>5} {path.stat().st_size / 2**20:>6.1f} "
                f"{plain[0]:>6.1f} ({plain[1]:>5.1f}) {checked[0]:>6.1f} ({checked[1]:>5.1f}) "
                f"{checked[0] - plain[0]:>+6.1f}"
            )
        print("times: median wall ms (CPU ms); check = extra wall ms for hashing the rows")


if __name__ == "__main__":
    main()
