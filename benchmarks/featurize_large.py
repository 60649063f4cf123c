"""Benchmark: build a table from a long-format release of one or more GB of CSV.

For each size given to ``--gb``, writes into a temporary folder (removed
after) a release in the HAR70+ format: one CSV per user (``501.csv``, ...,
header ``timestamp,back_x,...,thigh_z,label``), each a 24 h recording at
50 Hz (4,320,000 samples), with as many users as the size needs (the last
one's recording cut short to reach it). A day is a sequence of synthetic
hours drawn from six distinct ones (6-decimal random-walk values, activity
runs of 10 s to 5 min), so that writing gigabytes is not the slow part.

Then it runs, each in a fresh process whose peak resident memory
(``ru_maxrss``) is read at its end:

* ``build``: the HAR70+ reader and the ``study-window`` recipe (window 150,
  span 10), the path ``mudata fetch`` takes;
* ``pyarrow``: Arrow's streaming CSV reader over the same files, every column
  parsed, nothing else done: the floor for any reader of these files.

and prints samples per second and peak memory of each, with the load average
(the machine may be shared: the CPU seconds are the steadier figure).

Run::

    python benchmarks/featurize_large.py --gb 1 4 [--tmp DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CHANNELS = ("back_x", "back_y", "back_z", "thigh_x", "thigh_y", "thigh_z")
HEADER = ",".join(("timestamp", *CHANNELS, "label")) + "\n"
RATE_HZ = 50
HOUR = 3600 * RATE_HZ
DAY = 24 * HOUR


def synthetic_hour(rng: np.random.Generator, start_ms: int) -> bytes:
    """One hour of samples as CSV lines (no header), the HAR70+ way of writing them."""
    # Here, not at the top: the child processes of this script never write data.
    import pyarrow as pa
    import pyarrow.csv as pacsv

    labels = np.empty(HOUR, dtype=np.int64)
    pos = 0
    while pos < HOUR:
        run = int(rng.integers(500, 15000))
        labels[pos : pos + run] = rng.choice(
            [1, 3, 4, 5, 6, 7, 8], p=[0.3, 0.05, 0.02, 0.02, 0.2, 0.2, 0.21]
        )
        pos += run
    stamps = np.datetime64(start_ms, "ms") + np.arange(HOUR) * np.timedelta64(1000 // RATE_HZ, "ms")
    columns = {"timestamp": pa.array(stamps)}
    for channel in CHANNELS:
        walk = np.cumsum(rng.normal(0, 0.01, HOUR)) + rng.normal(0, 0.05, HOUR)
        columns[channel] = pa.array(np.round(walk, 6))
    columns["label"] = pa.array(labels)
    sink = pa.BufferOutputStream()
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    pacsv.write_csv(pa.table(columns), sink, options)
    return sink.getvalue().to_pybytes()


def write_release(folder: Path, size_bytes: float, rng: np.random.Generator) -> tuple[int, int]:
    """Write user files into ``folder`` up to about ``size_bytes``: (users, samples)."""
    hours = [synthetic_hour(rng, 1616596923839 + k * 3_600_000) for k in range(6)]
    line_bytes = sum(map(len, hours)) / (6 * HOUR)
    samples_left = int(size_bytes / line_bytes)
    users = samples = 0
    while samples_left > 0:
        n = min(DAY, samples_left)
        with open(folder / f"{501 + users}.csv", "wb") as fh:
            fh.write(HEADER.encode())
            whole, rest = divmod(n, HOUR)
            for _ in range(whole):
                fh.write(hours[int(rng.integers(6))])
            if rest:
                block = hours[int(rng.integers(6))]
                cut = 0
                for _ in range(rest):
                    cut = block.index(b"\n", cut) + 1
                fh.write(block[:cut])
        users += 1
        samples += n
        samples_left -= n
    return users, samples


def har70_entry():
    """The HAR70+ entry's reader, sensors, classes and recipe (no files pinned)."""
    # Here, not at the top: the parent process never imports mudata.
    from mudata.entry import ClassSpec, DatasetEntry, Recipe, RemoteFile, Sensor

    kept = [(1, "walking"), (3, "shuffling"), (6, "standing"), (7, "sitting"), (8, "lying")]
    return DatasetEntry(
        name="har70",
        title="HAR70+ (benchmark)",
        version="bench",
        homepage="https://example.invalid",
        licence="CC BY 4.0",
        citation="benchmark",
        sampling_rate_hz=float(RATE_HZ),
        reader="har70-csv",
        recipe=Recipe(name="study-window", window=150, smoothing=10),
        classes=tuple(ClassSpec(c, n) for c, n in kept),
        files=(RemoteFile(name="har70", path="har70"),),
        sensors=(Sensor("back", CHANNELS[:3]), Sensor("thigh", CHANNELS[3:])),
        reader_options={"members": "*.csv"},
    )


def child_build(folder: Path) -> dict:
    """Read and featurize the release in ``folder``: samples, windows and times."""
    # Here, not at the top: only this child process pays for importing mudata.
    from mudata.features import featurize
    from mudata.readers.base import Sources
    from mudata.readers.har70 import read_har70

    entry = har70_entry()
    sources = Sources([folder])
    signals = read_har70(entry, sources)
    samples = len(signals.frame)
    table = featurize(signals, entry)
    sources.close()
    return {"samples": samples, "rows": len(table)}


def child_pyarrow(folder: Path) -> dict:
    """Parse every column of every file with Arrow's streaming reader, nothing else."""
    # Here, not at the top: only this child process reads with Arrow.
    import pyarrow.csv as pacsv

    samples = 0
    for path in sorted(folder.glob("*.csv")):
        with pacsv.open_csv(path) as reader:
            for batch in reader:
                samples += batch.num_rows
    return {"samples": samples, "rows": 0}


def run_child(kind: str, folder: Path) -> dict:
    command = [sys.executable, __file__, "--child", kind, str(folder)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def child_main(kind: str, folder: Path) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    result = (child_build if kind == "build" else child_pyarrow)(folder)
    result["wall_s"] = time.perf_counter() - t0
    result["cpu_s"] = time.process_time() - c0
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--tmp", type=Path, default=None, help="folder for the temporary data")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child[0], Path(args.child[1]))
        return

    rng = np.random.default_rng(0)
    rows = []
    for gb in args.gb:
        folder = Path(tempfile.mkdtemp(prefix="featurize_large_", dir=args.tmp))
        try:
            t0 = time.perf_counter()
            users, samples = write_release(folder, gb * 1e9, rng)
            size = sum(p.stat().st_size for p in folder.iterdir())
            written = time.perf_counter() - t0
            load = os.getloadavg()[0]
            print(
                f"{gb:g} GB: {users} users, {samples:,} samples, {size / 1e9:.2f} GB of CSV "
                f"written in {written:.0f} s (load average {load:.2f})",
                flush=True,
            )
            for kind in ("pyarrow", "build"):
                result = run_child(kind, folder)
                result.update(kind=kind, gb=size / 1e9, load=os.getloadavg()[0])
                rows.append(result)
                print(
                    f"  {kind:8s} {result['wall_s']:8.1f} s wall {result['cpu_s']:8.1f} s CPU  "
                    f"{result['samples'] / result['wall_s']:12,.0f} samples/s wall "
                    f"{result['samples'] / result['cpu_s']:12,.0f} samples/s CPU  "
                    f"peak {result['peak_mb']:8,.0f} MB",
                    flush=True,
                )
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    print("\nsize_GB kind     samples/s(wall) samples/s(CPU) peak_MB load")
    for r in rows:
        print(
            f"{r['gb']:7.2f} {r['kind']:8s} {r['samples'] / r['wall_s']:15,.0f} "
            f"{r['samples'] / r['cpu_s']:14,.0f} {r['peak_mb']:7,.0f} {r['load']:4.1f}"
        )
    builds = [r for r in rows if r["kind"] == "build"]
    arrows = [r for r in rows if r["kind"] == "pyarrow"]
    for build, arrow in zip(builds, arrows, strict=True):
        ratio = (arrow["samples"] / arrow["cpu_s"]) / (build["samples"] / build["cpu_s"])
        print(
            f"{build['gb']:.2f} GB: Arrow alone reads {ratio:.1f}x faster (CPU) than the build; "
            f"build peak {build['peak_mb'] / 1024:.2f} GB (aim: within 2x, under 1 GB)"
        )
    if len(builds) > 1:
        growth = builds[-1]["peak_mb"] / builds[0]["peak_mb"]
        print(f"build peak memory grows {growth:.2f}x from the smallest size to the largest")


if __name__ == "__main__":
    main()
