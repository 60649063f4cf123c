"""Benchmark: read a HAR70+-sized archive and run the study-window recipe.

Builds, in a temporary folder, a ``har70.zip`` in the official format (one CSV
per subject, header ``timestamp,back_x,...,thigh_z,label``) with 18 subjects of
about 125,000 samples each (6 channels, 50 Hz, the 5 kept classes plus stairs
in long runs; ``har70_release.py``), then times the real reader and the recipe
separately.

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
from har70_release import HEADER, csv_lines, har70_entry

from mudata.building.features import featurize
from mudata.readers.har70 import read_har70
from mudata.readers.sources import Sources


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
                    zf.writestr(f"har70plus/{user}.csv", HEADER + csv_lines(rng, args.samples))
        built = time.perf_counter() - t0

        entry = har70_entry(path="har70.zip")
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
