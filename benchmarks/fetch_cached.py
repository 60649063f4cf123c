"""Benchmark: a cached ``mudata fetch`` before and after the stamp (issue 31, item 6).

Before, a cached fetch read the whole table and hashed its rows although it
returns only the path; now it compares the file's size and times with its
stamp and reads no row. This builds a generated feature table (``--rows``
rows of 32 float features, 18 users, 5 classes: a registered CSV, the real
build), then times ``mudata.fetch`` of the cached table:

* ``before``: the code of another source tree (``--before-src``, default the
  main checkout ``../main/src`` when it exists), which hashes the rows;
* ``after``: this tree's fetch (the stamp, no row read);
* ``after --verify``: this tree's ``fetch(verify=True)``, which hashes the rows.

Each is timed in a fresh Python process on the same data home, the median of
``--repeat`` calls after one warm-up call. Run::

    python benchmarks/fetch_cached.py [--rows 300000] [--repeat 5] [--before-src ../main/src]

Times are printed in milliseconds (wall and CPU), with the ratio before/after.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parents[1]
CLASSES = ("walking", "shuffling", "standing", "sitting", "lying")

# Run in the child: times mudata.fetch of the cached table (one warm-up call first).
_CHILD = """
import json, statistics, sys, time
import mudata
name, home, repeat, verify = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
kwargs = {"verify": True} if verify else {}
mudata.fetch(name, data_home=home, **kwargs)
walls, cpus = [], []
for _ in range(repeat):
    wall, cpu = time.perf_counter(), time.process_time()
    mudata.fetch(name, data_home=home, **kwargs)
    walls.append(time.perf_counter() - wall)
    cpus.append(time.process_time() - cpu)
print(json.dumps([statistics.median(walls) * 1000, statistics.median(cpus) * 1000]))
"""


def write_entry(folder: Path, rows: int) -> None:
    """A registered CSV feature table of ``rows`` rows (the feature-table reader)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "who": np.repeat(np.arange(501, 519), -(-rows // 18))[:rows],
            "what": np.tile(CLASSES, -(-rows // len(CLASSES)))[:rows],
        }
    )
    features = pd.DataFrame(rng.normal(size=(rows, 32)), columns=[f"f{i}" for i in range(32)])
    frame = pd.concat([frame, features], axis=1)
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "features.csv"
    frame.to_csv(table, index=False)
    sha = hashlib.sha256(table.read_bytes()).hexdigest()
    classes = "".join(f'\n[[classes]]\ncode = "{c}"\nname = "{c}"\n' for c in CLASSES)
    text = textwrap.dedent(
        f"""\
        name = "benchfetch"
        title = "Generated table for the cached-fetch benchmark"
        version = "1"
        homepage = "https://example.org/benchfetch"
        licence = "CC0-1.0"
        citation = "Generated (2026)."
        sampling_rate_hz = 50
        reader = "feature-table"
        min_per_class = 5

        [reader_options]
        format = "csv"
        user_col = "who"
        label_col = "what"

        [recipe]
        name = "precomputed"

        [[files]]
        name = "features.csv"
        path = "{table.as_posix()}"
        sha256 = "{sha}"
        """
    )
    (folder / "benchfetch.toml").write_text(text + classes, encoding="utf-8")


def timed(src: Path, registry: Path, home: Path, repeat: int, verify: bool) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(src), "MUDATA_REGISTRY": str(registry)}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            "benchfetch",
            str(home),
            str(repeat),
            "1" if verify else "0",
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    wall, cpu = json.loads(out.strip().splitlines()[-1])
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=5)
    default_before = HERE.parent / "main" / "src"
    parser.add_argument("--before-src", type=Path, default=default_before)
    args = parser.parse_args()
    after_src = HERE / "src"
    with tempfile.TemporaryDirectory() as tmp:
        registry, home = Path(tmp) / "registry", Path(tmp) / "home"
        write_entry(registry, args.rows)
        env = {**os.environ, "PYTHONPATH": str(after_src), "MUDATA_REGISTRY": str(registry)}
        subprocess.run(
            [sys.executable, "-m", "mudata.cli", "fetch", "benchfetch", "--data-home", str(home)],
            env=env,
            check=True,
            capture_output=True,
        )
        table = home / "benchfetch" / "benchfetch.parquet"
        print(
            f"table: {args.rows:,} rows x 34 columns, {table.stat().st_size / 2**20:.1f} MiB "
            f"of Parquet; median of {args.repeat} cached fetches (after one), each kind in its own process"
        )
        results = {}
        runs = [("after", after_src, False), ("after --verify", after_src, True)]
        if (args.before_src / "mudata" / "__init__.py").is_file():
            runs.insert(0, ("before", args.before_src, False))
        else:
            print(f"(no source tree at {args.before_src}: 'before' not timed)")
        for label, src, verify in runs:
            results[label] = timed(src, registry, home, args.repeat, verify)
            wall, cpu = results[label]
            print(f"{label:>15}: {wall:9.1f} ms wall  {cpu:9.1f} ms CPU   ({src})")
        after = results["after"]
        for label in ("before", "after --verify"):
            if label in results:
                wall, cpu = results[label]
                print(
                    f"ratio {label} / after: {wall / after[0]:.1f}x wall, {cpu / after[1]:.1f}x CPU"
                )


if __name__ == "__main__":
    main()
