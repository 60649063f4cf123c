"""Benchmark ``mueval compare`` and ``mueval table`` on a default-protocol run.

Builds (or reuses) a run folder of the default protocol (mm, udm, uim, ucm x
the four classifiers, 20 iterations) on a small synthetic table (6 users, 3
classes, 105 rows each), then runs each command ``--repeat`` times, each a
fresh process (importing mueval and reading the folder included), and prints
the median and the minimum of the wall time and of the CPU time (user +
system: on a shared machine the wall time follows the load, the CPU time much
less), with the load average.

Usage::

    python benchmarks/compare.py --run-dir /tmp/compare-run
    python benchmarks/compare.py --run-dir /tmp/compare-run --src ../main/src --commands compare
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import mueval
from mueval.data.synthetic import make_users


def _ensure_run(run_dir: Path, iterations: int) -> None:
    if (run_dir / "run.json").is_file():
        print(f"reusing run folder {run_dir}")
        return
    frame = make_users(6, n_classes=3, rows_per_user=105, n_features=5, seed=0)
    start = time.perf_counter()
    run = mueval.evaluate(frame, iterations=iterations, progress=False)
    run.save(run_dir)
    print(f"evaluated {iterations} iterations in {time.perf_counter() - start:.1f} s")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(args: list[str], repeat: int, env: dict[str, str]) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(repeat):
        cpu = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "mueval.cli.main", *args], capture_output=True, env=env
        )
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
        if done.returncode != 0:
            raise SystemExit(f"mueval {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--src", type=Path, default=None, help="PYTHONPATH of the mueval timed")
    parser.add_argument("--commands", default="compare,table", help="comma list")
    args = parser.parse_args()
    _ensure_run(args.run_dir, args.iterations)
    env = dict(os.environ)
    if args.src is not None:
        env["PYTHONPATH"] = str(args.src.resolve())
    print(
        f"{'command':>8} {'load':>5} {'wall median':>11} {'min':>5} {'CPU median':>10} {'min':>5}"
    )
    for name in args.commands.split(","):
        load = os.getloadavg()[0]
        walls, cpus = _time([name, str(args.run_dir)], args.repeat, env)
        print(
            f"{name:>8} {load:5.1f} {statistics.median(walls):11.2f} {min(walls):5.2f} "
            f"{statistics.median(cpus):10.2f} {min(cpus):5.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
