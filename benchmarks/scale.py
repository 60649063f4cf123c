"""Benchmark: UIM and UCM as the number of users grows.

For each size, a synthetic table (:func:`mueval.data.synthetic.make_users`, 60
rows per user) is evaluated with UIM and UCM, one iteration, GaussianNB and the
random forest, on a local Dask cluster (``backend="dask"``): with
``--user-folds K`` every size uses K grouped folds of users; without it the
first size runs leave-one-user-out and the others ``--folds`` folds. The run
folder is written to a temporary folder (predictions streamed in row groups),
as ``mueval evaluate --out`` does. Each size runs in a subprocess of its own,
so that its peak memory (``ru_maxrss``) is its own; the Dask workers are that
subprocess's children and are counted apart.

Run::

    python benchmarks/scale.py [--sizes 50 200 1000] [--folds 10] [--workers 2]
    python benchmarks/scale.py --sizes 1000 3000 10000 --user-folds 10

Each size has ``--timeout`` seconds (default 1,800): a size that runs over
is stopped with its Dask workers, reported with the last progress line it
printed (tasks done and seconds), the larger sizes are skipped, and the
exponents are fitted on the sizes that finished.

Printed per size: users, rows, fits per classifier, wall seconds (and those of
the tasks), peak resident memory of the main process, of the main process
before the run (imports and the table: ``base MB``) and of the largest worker,
and the cost per (users x rows) in microseconds: wall seconds divided by the
product of the number of users and the number of rows, the work
leave-one-user-out grows with (one fit on nearly all rows per user); with a
fixed number of user folds it falls as users are added.

The closing note fits, by least squares on the logarithms, the exponent ``b``
of ``value ~ (users x rows) ** b`` for the wall time, the main process's peak,
its growth over the base (peak minus base) and the largest worker's peak, and
the same exponents against the rows alone (with 60 rows per user, users x rows
is 60 users squared, so an exponent against rows is twice the one against
users x rows).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROWS_PER_USER = 60
CLASSIFIERS = ("nb", "rf")


def _rss_mb() -> float:
    """Resident memory of this process now, in MB (Linux ``/proc``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_size(n_users: int, folds: int | None, workers: int) -> dict:
    """Evaluate one table in this process and return its figures."""
    from mueval.api import evaluate_table
    from mueval.data.synthetic import make_users
    from mueval.data.table import table_from_frame
    from mueval.evaluation.records import EvalConfig

    frame = make_users(n_users, n_classes=4, rows_per_user=ROWS_PER_USER, n_features=12, seed=1)
    table = table_from_frame(frame)
    config = EvalConfig(
        strategies=("uim", "ucm"), classifiers=CLASSIFIERS, iterations=1, user_folds=folds
    )
    base = _rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        output = evaluate_table(
            table,
            config,
            backend="dask",
            workers=workers,
            # Log lines on stderr (every 10 % of the tasks): what a size that
            # runs out of time reports.
            progress=None,
            out=Path(tmp) / "run",
        )
        wall = time.perf_counter() - start
        predictions_mb = (Path(tmp) / "run" / "predictions.parquet").stat().st_size / 1e6
    return {
        "users": n_users,
        "rows": len(frame),
        "folds": folds,
        "results": len(output.splits),
        "wall_s": wall,
        "tasks_s": output.info["timings"]["tasks_s"],
        "timings": output.info["timings"],
        "base_mb": base,
        "predictions_mb": predictions_mb,
        "self_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "children_maxrss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        # Other work on the machine stretches the wall time: say how much there was.
        "load_1min": os.getloadavg()[0],
    }


def _run_size(command: list[str], timeout: float) -> dict:
    """Run one size in a subprocess of its own session; its figures, or what it
    reached when ``timeout`` ran out (the whole session, Dask workers too, is
    killed then)."""
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        lines = [line for line in err.splitlines() if line.startswith("mueval:")]
        return {"timed_out": True, "last_progress": lines[-1] if lines else None}
    if child.returncode != 0:
        message = f"{' '.join(command)} failed ({child.returncode}):\n{err[-2000:]}"
        raise RuntimeError(message)
    return json.loads(out.strip().splitlines()[-1])


def exponent(x: list[float], y: list[float]) -> float:
    """Least-squares slope of log(y) on log(x): ``y ~ x ** slope``."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--folds", type=int, default=10, help="user folds above the first size")
    parser.add_argument(
        "--user-folds", type=int, default=None, help="user folds at every size (no LOUO)"
    )
    parser.add_argument("--workers", type=int, default=2, help="local Dask worker processes")
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds allowed per size (default 1800)"
    )
    parser.add_argument("--one", nargs=2, type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        n_users, folds = options.one
        print(json.dumps(one_size(n_users, folds or None, options.workers)))
        return
    print(f"load average (1, 5, 15 min) at the start: {os.getloadavg()}", flush=True)
    print(
        f"{'users':>6} {'rows':>7} {'protocol':>18} {'fits/clf':>8} {'wall s':>8} {'tasks s':>8} "
        f"{'main MB':>8} {'base MB':>8} {'worker MB':>9} {'us/(user*row)':>13}",
        flush=True,
    )
    measured = []
    for i, n_users in enumerate(options.sizes):
        if options.user_folds is not None:
            folds = options.user_folds
        else:
            folds = 0 if i == 0 else options.folds
        command = [
            sys.executable,
            __file__,
            "--one",
            str(n_users),
            str(folds),
            "--workers",
            str(options.workers),
        ]
        r = _run_size(command, options.timeout)
        if "timed_out" in r:
            print(
                f"{n_users:>6} {n_users * ROWS_PER_USER:>7} stopped after {options.timeout:.0f} s "
                f"(--timeout); last progress: {r['last_progress'] or 'none'}",
                flush=True,
            )
            skipped = options.sizes[i + 1 :]
            if skipped:
                print(f"  larger sizes skipped: {' '.join(map(str, skipped))}", flush=True)
            break
        measured.append(r)
        protocol = "leave-one-user-out" if not folds else f"{folds} user folds"
        fits = folds if folds else n_users
        print(
            f"{r['users']:>6} {r['rows']:>7} {protocol:>18} {fits:>8} {r['wall_s']:>8.1f} "
            f"{r['tasks_s']:>8.1f} "
            f"{r['self_maxrss_mb']:>8.0f} {r['base_mb']:>8.0f} {r['children_maxrss_mb']:>9.0f} "
            f"{1e6 * r['wall_s'] / (r['users'] * r['rows']):>13.3f}",
            flush=True,
        )
    if len(measured) < 2:
        _print_timings(measured)
        return
    work = [r["users"] * r["rows"] for r in measured]
    rows = [r["rows"] for r in measured]
    series = {
        "wall time": [r["wall_s"] for r in measured],
        "main peak": [r["self_maxrss_mb"] for r in measured],
        "main peak - base": [max(r["self_maxrss_mb"] - r["base_mb"], 1e-3) for r in measured],
        "worker peak": [r["children_maxrss_mb"] for r in measured],
    }
    print("growth exponents b of value ~ x ** b (least squares on logarithms):")
    for name, values in series.items():
        print(
            f"  {name:<17} vs users x rows: {exponent(work, values):5.2f}   "
            f"vs rows: {exponent(rows, values):5.2f}"
        )
    _print_timings(measured)


def _print_timings(measured: list[dict]) -> None:
    """Each finished size's ``run.json`` timings."""
    print("per size, run.json timings (s):")
    for r in measured:
        parts = ", ".join(f"{k} {v:.1f}" for k, v in r["timings"].items())
        print(
            f"  {r['users']:>6} users: {parts}; predictions.parquet {r['predictions_mb']:.1f} MB; "
            f"load average at its end {r['load_1min']:.1f}"
        )


if __name__ == "__main__":
    main()
