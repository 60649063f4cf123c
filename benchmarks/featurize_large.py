"""Benchmark: build a table from a long-format release of one or more GB of CSV.

For each size given to ``--gb``, writes into a temporary folder (removed
after) a release in the HAR70+ format (``har70_release.py``): one CSV per
user (``501.csv``, ..., header ``timestamp,back_x,...,thigh_z,label``), each a
24 h recording at 50 Hz (4,320,000 samples), with as many users as the size
needs (the last one's recording cut short to reach it; below two days, two
users of half the size each, as a table needs two users).

Then it runs, each in a fresh process whose peak resident memory
(``ru_maxrss``) is read at its end:

* ``build``: :func:`mudata.building.labelled.build_table`, the table ``mudata fetch``
  builds (the HAR70+ stream reader, the ``study-window`` recipe with window
  150 and span 10 fed chunk by chunk, the user filter and the checks), kept
  in memory;
* ``fetch``: :func:`mudata.building.pipeline.build`, what ``mudata fetch`` does from
  the raw files to the published table: the files hashed, the same build,
  the Parquet file and its descriptors written to a data home in the
  temporary folder;
* ``pyarrow``: Arrow's streaming CSV reader over the same files, every column
  parsed, nothing else done: the floor for any reader of these files.

and prints samples per second and peak memory of each, with the load average
(the machine may be shared: the CPU seconds are the steadier figure), then
how much the peaks of ``build`` and ``fetch`` grow from the smallest size to
the largest (the aim: the same within 10 %).

Run::

    python benchmarks/featurize_large.py --gb 1 4 [--tmp DIR] [--format long-signals]

``--format long-signals`` builds the same files with the generic
``long-signals`` reader (users from the file names) instead of ``har70-csv``.
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
from har70_release import har70_entry, write_release

#: ``--format long-signals``: the same files read by the generic reader (users from
#: the file names), in chunks (``mudata.readers.long_stream``). The synthetic
#: hours are drawn from a few, so their clocks restart: time is not checked
#: (``time_order = "file"``), as the HAR70+ reader does not check it.
LONG_SIGNALS = {
    "members": "*.csv",
    "path_pattern": r"(?P<user>\d+)\.csv$",
    "label_col": "label",
    "time_col": "timestamp",
    "time_order": "file",
}


def child_build(folder: Path, reader: str = "har70-csv") -> dict:
    """Build the table of the release in ``folder`` as ``mudata fetch`` does: samples, rows."""
    # Here, not at the top: only this child process pays for importing mudata.
    from dataclasses import replace

    from mudata.building.labelled import build_table
    from mudata.readers.sources import Sources

    entry = har70_entry()
    if reader == "long-signals":
        entry = replace(entry, reader=reader, reader_options=LONG_SIGNALS)
    sources = Sources([folder])
    table, counts = build_table(entry, sources)
    sources.close()
    return {"samples": counts["rows_read"], "rows": len(table)}


def child_fetch(folder: Path, reader: str = "har70-csv") -> dict:
    """Build and publish the table of the release in ``folder`` as ``mudata fetch`` does."""
    # Here, not at the top: only this child process pays for importing mudata.
    from dataclasses import replace

    from mudata.building.pipeline import build
    from mudata.publish.store import read_provenance

    entry = har70_entry(path=str(folder))
    entry = replace(entry, files=(replace(entry.files[0], glob="*.csv"),))
    if reader == "long-signals":
        entry = replace(entry, reader=reader, reader_options=LONG_SIGNALS)
    home = folder.parent / "home"
    path = build(entry, data_home=home, allow_unverified=True, progress=False)
    counts = (read_provenance(path) or {})["counts"]
    return {"samples": counts["rows_read"], "rows": counts["rows"]}


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
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"the {kind} child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def child_main(kind: str, folder: Path) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    kind, _, reader = kind.partition(":")
    children = {"build": child_build, "fetch": child_fetch}
    if kind in children:
        result = children[kind](folder, reader or "har70-csv")
    else:
        result = child_pyarrow(folder)
    result["wall_s"] = time.perf_counter() - t0
    result["cpu_s"] = time.process_time() - c0
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--tmp", type=Path, default=None, help="folder for the temporary data")
    parser.add_argument(
        "--format",
        choices=["har70-csv", "long-signals"],
        default="har70-csv",
        help="the reader that builds the table (long-signals: the generic long-format reader)",
    )
    parser.add_argument("--child", nargs=2, metavar=("KIND", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child[0], Path(args.child[1]))
        return

    rng = np.random.default_rng(0)
    rows = []
    for gb in args.gb:
        root = Path(tempfile.mkdtemp(prefix="featurize_large_", dir=args.tmp))
        folder = root / "release"  # beside it, "home": the fetch child's data home
        folder.mkdir()
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
            for kind in ("pyarrow", "build", "fetch"):
                result = run_child(f"{kind}:{args.format}" if kind != "pyarrow" else kind, folder)
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
            shutil.rmtree(root, ignore_errors=True)

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
        for kind in ("build", "fetch", "pyarrow"):
            peaks = [r for r in rows if r["kind"] == kind]
            growth = peaks[-1]["peak_mb"] / peaks[0]["peak_mb"]
            print(
                f"{kind} peak memory {peaks[0]['peak_mb']:,.0f} MB at {peaks[0]['gb']:.2f} GB, "
                f"{peaks[-1]['peak_mb']:,.0f} MB at {peaks[-1]['gb']:.2f} GB: "
                f"{growth:.2f}x (aim for build and fetch: within 1.10x)"
            )


if __name__ == "__main__":
    main()
