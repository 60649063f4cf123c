"""Benchmark: where the main process's memory goes during one ``evaluate`` run.

The run of ``benchmarks/scale.py`` (synthetic users, 60 rows each, UIM and UCM,
1 iteration, ``--user-folds``, a local Dask cluster, the run folder written),
with the main process's resident memory and Python's own allocations
(``tracemalloc``) read at each phase's end:

- ``load``: the imports and the table;
- ``splits``: after the first iteration's splits are built (the runner's
  ``make_splits`` is wrapped);
- ``scatter``: after the table is scattered to the workers;
- ``tasks``: the results of the tasks as they arrive (``PoolDiagnostics.add``
  is wrapped; the peak over the phase is printed);
- ``run``: after the runner returned (every result gathered and written);
- ``guarantees``: after the per-user guarantees.

For each phase: resident memory at its end and the highest resident memory
during it (``VmHWM``, reset at each phase's start through
``/proc/self/clear_refs``), the resident memory split into anonymous memory
(the heap) and mapped files (the libraries' code), and the memory Python's allocator holds (traced
current and peak). The ten largest allocation sites at the highest traced
point of the tasks phase are printed at the end, and the pickled size of one
task's arguments (what Dask sends with each task). Two more columns: what
pyarrow's memory pool holds (its own allocator, which ``tracemalloc`` does not
see) and its peak; and a last row after ``malloc_trim(0)``: what the C
allocator held freed but not yet given back to the system.

Run::

    python benchmarks/scale_memory.py --users 3000 --classifiers nb
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import pickle
import tempfile
import time
import tracemalloc
from pathlib import Path

import pyarrow as pa

ROWS_PER_USER = 60


def _status(field: str) -> float:
    """A ``/proc/self/status`` field in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    """Start a new resident-memory peak (``VmHWM``) and traced peak."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    tracemalloc.reset_peak()


class Phases:
    """Figures at each phase boundary."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.start = time.perf_counter()
        self.top: list | None = None
        self._top_at = 0.0
        _reset_peak()

    def mark(self, name: str) -> None:
        current, peak = tracemalloc.get_traced_memory()
        self.rows.append(
            (
                name,
                time.perf_counter() - self.start,
                _status("VmRSS"),
                _status("VmHWM"),
                _status("RssAnon"),
                _status("RssFile"),
                current / 2**20,
                peak / 2**20,
                pa.total_allocated_bytes() / 2**20,
                pa.default_memory_pool().max_memory() / 2**20,
            )
        )
        _reset_peak()

    def maybe_top(self) -> None:
        """Keep the allocation sites of the highest traced point seen so far."""
        current = tracemalloc.get_traced_memory()[0]
        if current > self._top_at:
            self._top_at = current
            self.top = tracemalloc.take_snapshot().statistics("lineno")[:10]


def _instrument(phases: Phases, trim: bool) -> dict:
    """Wrap the functions that end each phase so that they mark it; with
    ``trim``, give the C allocator's free memory back after each task."""
    # Here, not at the top: imported after tracemalloc started, to be traced.
    from distributed import Client

    import mueval.api.pipeline as api
    import mueval.evaluation.runner as runner
    from mueval.guarantees.run_diagnostics import PoolDiagnostics

    seen = {"splits": False, "tasks": 0}
    make_splits = runner.make_splits

    def splits_marked(*args, **kwargs):
        out = make_splits(*args, **kwargs)
        if not seen["splits"]:
            seen["splits"] = True
            phases.mark("splits (first iteration)")
        return out

    runner.make_splits = splits_marked
    scatter = Client.scatter

    def scatter_marked(self, *args, **kwargs):
        out = scatter(self, *args, **kwargs)
        phases.mark("scatter")
        return out

    Client.scatter = scatter_marked
    add = PoolDiagnostics.add

    def add_marked(self, results):
        add(self, results)
        seen["tasks"] += 1
        if trim:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        phases.maybe_top()

    PoolDiagnostics.add = add_marked
    run = api.run

    def run_marked(*args, **kwargs):
        out = run(*args, **kwargs)
        phases.mark(f"tasks ({seen['tasks']} gathered), run returned")
        return out

    api.run = run_marked
    by_block = api.compute_guarantees_by_block

    def by_block_marked(*args, **kwargs):
        phases.mark("splits table, diagnostics")
        out = by_block(*args, **kwargs)
        phases.mark("guarantees")
        return out

    api.compute_guarantees_by_block = by_block_marked
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=3000)
    parser.add_argument("--user-folds", type=int, default=10)
    parser.add_argument("--classifiers", nargs="+", default=["nb"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument(
        "--trim-each-task",
        action="store_true",
        help="call malloc_trim(0) after each task's results are taken",
    )
    options = parser.parse_args()
    tracemalloc.start(1)
    phases = Phases()

    # Here, not at the top: imported after tracemalloc started, to be traced.
    import mueval.api.pipeline as api
    import mueval.evaluation.runner as runner
    from mueval.data.synthetic import make_users
    from mueval.data.table import table_from_frame
    from mueval.evaluation.records import EvalConfig

    frame = make_users(
        options.users, n_classes=4, rows_per_user=ROWS_PER_USER, n_features=12, seed=1
    )
    table = table_from_frame(frame)
    del frame
    config = EvalConfig(
        strategies=("uim", "ucm"),
        classifiers=tuple(options.classifiers),
        iterations=options.iterations,
        user_folds=options.user_folds,
    )
    phases.mark("load")

    # The pickled size of one task's arguments, as Dask's client sends them.
    first = runner.make_splits(
        table.y,
        table.users,
        config.strategies,
        1,
        config.seed(1),
        classes=table.classes,
        n_user_folds=config.user_folds,
    )[0]
    task_bytes = len(pickle.dumps((first, config.classifiers[0], config)))

    _instrument(phases, options.trim_each_task)
    with tempfile.TemporaryDirectory() as tmp:
        api.evaluate_table(
            table,
            config,
            backend="dask",
            workers=options.workers,
            progress=False,
            out=Path(tmp) / "run",
        )
    phases.mark("run folder written")
    # What the C allocator holds freed but not given back to the system.
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    phases.mark("after malloc_trim(0)")

    print(
        f"{options.users} users, {options.users * ROWS_PER_USER} rows, "
        f"classifiers {' '.join(options.classifiers)}, {options.iterations} iteration(s), "
        f"{options.user_folds} user folds; one task's pickled arguments: "
        f"{task_bytes / 1e6:.2f} MB"
    )
    print(
        f"{'phase (figures at its end)':<40} {'s':>7} {'RSS MB':>7} {'RSS peak':>8} "
        f"{'anon':>6} {'file':>6} {'traced':>7} {'tr. peak':>8} {'arrow':>6} {'ar. max':>7}"
    )
    for name, seconds, rss, hwm, anon, file, current, peak, arrow, arrow_max in phases.rows:
        print(
            f"{name:<40} {seconds:>7.1f} {rss:>7.0f} {hwm:>8.0f} {anon:>6.0f} {file:>6.0f} "
            f"{current:>7.0f} {peak:>8.0f} {arrow:>6.0f} {arrow_max:>7.0f}"
        )
    print("largest allocation sites at the highest traced point of the tasks:")
    for stat in phases.top or []:
        print(f"  {stat.size / 2**20:8.1f} MB {stat.count:>8} blocks  {stat.traceback[0]}")


if __name__ == "__main__":
    main()
