"""Benchmark: read a HAR70+-sized archive and run the study-window recipe.

Builds, in a temporary folder, a ``har70.zip`` in the official format (one CSV
per subject, header ``timestamp,back_x,...,thigh_z,label``) with 18 subjects of
about 125,000 samples each (6 channels, 50 Hz, the 5 kept classes plus stairs
in long runs), then times the real reader and the recipe separately.

Run::

    python benchmarks/featurize.py [--users 18] [--samples 125000] [--archive PATH]

``--archive`` keeps the built archive at PATH (and reuses it if it exists).
Reading (unzip, hash, parse, assemble the signal table) and featurizing are
timed apart, in wall-clock and CPU seconds, with the load average of the
machine at the start: on a shared machine the CPU time is the steadier number.

Target: 3 s or less for reading plus featurizing on a 2-core machine (the
study's R code takes about 36 s).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from mudata.entry import ClassSpec, DatasetEntry, Recipe, RemoteFile, Sensor
from mudata.features import featurize
from mudata.readers.base import Sources
from mudata.readers.har70 import read_har70

CHANNELS = ("back_x", "back_y", "back_z", "thigh_x", "thigh_y", "thigh_z")


def har70_entry() -> DatasetEntry:
    return DatasetEntry(
        name="har70",
        title="HAR70+ (benchmark)",
        version="bench",
        homepage="https://example.invalid",
        licence="CC BY 4.0",
        citation="benchmark",
        sampling_rate_hz=50.0,
        reader="har70-csv",
        recipe=Recipe(name="study-window", window=150),
        classes=tuple(
            ClassSpec(c, n)
            for c, n in [
                (1, "walking"),
                (3, "shuffling"),
                (6, "standing"),
                (7, "sitting"),
                (8, "lying"),
            ]
        ),
        files=(RemoteFile(name="har70.zip", path="har70.zip"),),
        sensors=(Sensor("back", CHANNELS[:3]), Sensor("thigh", CHANNELS[3:])),
        reader_options={"members": "*.csv"},
    )


def subject_csv(rng: np.random.Generator, n: int) -> bytes:
    """One subject's CSV: runs of 10 s to 5 min per activity, 6-decimal values."""
    labels = np.empty(n, dtype=np.int64)
    pos = 0
    while pos < n:
        run = int(rng.integers(500, 15000))
        labels[pos : pos + run] = rng.choice(
            [1, 3, 4, 5, 6, 7, 8], p=[0.3, 0.05, 0.02, 0.02, 0.2, 0.2, 0.21]
        )
        pos += run
    stamps = pd.Timestamp("2021-03-24 14:42:03.839") + pd.to_timedelta(np.arange(n) * 20, unit="ms")
    values = np.cumsum(rng.normal(0, 0.01, size=(n, 6)), axis=0) + rng.normal(0, 0.05, size=(n, 6))
    frame = pd.DataFrame(np.round(values, 6), columns=list(CHANNELS))
    frame.insert(0, "timestamp", stamps.strftime("%Y-%m-%d %H:%M:%S.%f").str[:-3])
    frame["label"] = labels
    return frame.to_csv(index=False, float_format="%.6f").encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=18)
    parser.add_argument("--samples", type=int, default=125_000)
    parser.add_argument("--archive", type=Path, default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.archive or Path(tmp) / "har70.zip"
        t0 = time.perf_counter()
        if not path.exists():
            with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for user in range(501, 501 + args.users):
                    zf.writestr(f"har70plus/{user}.csv", subject_csv(rng, args.samples))
        built = time.perf_counter() - t0

        entry = har70_entry()
        load = os.getloadavg()[0]
        sources = Sources([path])
        t0, c0 = time.perf_counter(), time.process_time()
        signals = read_har70(entry, sources)
        t1, c1 = time.perf_counter(), time.process_time()
        table = featurize(signals, entry)
        t2, c2 = time.perf_counter(), time.process_time()
        sources.close()

    print(
        f"archive: {args.users} users x {args.samples} samples, {path.name} ready in {built:.1f} s"
        f" (load average {load:.2f})"
    )
    print(
        f"read:       {t1 - t0:6.2f} s wall {c1 - c0:6.2f} s CPU  ({len(signals.frame):,} samples)"
    )
    print(
        f"featurize:  {t2 - t1:6.2f} s wall {c2 - c1:6.2f} s CPU  ({len(table):,} windows x {table.shape[1] - 2} features)"
    )
    print(f"total:      {t2 - t0:6.2f} s wall {c2 - c0:6.2f} s CPU")


if __name__ == "__main__":
    main()
