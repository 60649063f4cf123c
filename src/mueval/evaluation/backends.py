"""Where the tasks of a run are executed: in this process, on loky worker
processes, or on a Dask cluster; the results handed back in task order.

Each backend runs :func:`~mueval.evaluation.task.run_task` on the tasks it is
given and answers every task's results in the order the tasks were made, whatever
the order in which they finished, so that a run's files do not depend on the
backend or the number of workers. What a task does is :mod:`.task`'s concern.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from tqdm import tqdm

from mueval.data.cohorts import RowCohorts
from mueval.errors import EvaluationError, UsageError
from mueval.evaluation.config import EvalConfig
from mueval.evaluation.records import EvalResult, Split
from mueval.evaluation.task import run_task

__all__ = ["TaskInputs", "run_dask", "run_loky", "run_serial", "windowed"]

#: What is handed each task's results as they come, in task order.
OnTask = Callable[[list[EvalResult]], None] | None


@dataclass(frozen=True)
class TaskInputs:
    """What every task of a run takes besides its split and classifier.

    Attributes
    ----------
    X : ndarray of shape (n_rows, n_features), or windows (n_rows, T, C)
    y : ndarray of int, shape (n_rows,)
    n_classes : int
    config : EvalConfig
    cohorts : RowCohorts or None
    """

    X: np.ndarray
    y: np.ndarray
    n_classes: int
    config: EvalConfig
    cohorts: RowCohorts | None = None

    @property
    def leading(self) -> tuple[np.ndarray, np.ndarray, int]:
        """:func:`~mueval.evaluation.task.run_task`'s first arguments: the table and K."""
        return self.X, self.y, self.n_classes


def run_serial(
    inputs: TaskInputs,
    tasks: Iterable[tuple[Split, str]],
    total: int,
    progress: bool | None,
    on_task: OnTask,
) -> list[list[EvalResult]]:
    """Every task in this process, one after the other."""
    gen = (run_task(*inputs.leading, s, c, inputs.config, cohorts=inputs.cohorts) for s, c in tasks)
    return _collect(_progress(gen, total, progress), on_task)


def run_loky(
    inputs: TaskInputs,
    tasks: Iterable[tuple[Split, str]],
    total: int,
    jobs: int,
    progress: bool | None,
    on_task: OnTask,
) -> list[list[EvalResult]]:
    """Every task on ``jobs`` loky worker processes (-1: one per core)."""
    # Ordered generator (joblib >= 1.3), fed lazily (joblib's pre_dispatch
    # takes 2 x jobs tasks ahead). No more workers than tasks: each one started
    # costs a second of imports.
    n_jobs = jobs if jobs == -1 else min(jobs, total)
    parallel = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator")
    stop = threading.Event()

    def fed() -> Iterator[Any]:
        # Read by joblib as it dispatches (in its callback thread too): once a
        # task has failed, no further task starts.
        for s, c in tasks:
            if stop.is_set():
                return
            yield delayed(_task_or_failure)(
                *inputs.leading, s, c, inputs.config, cohorts=inputs.cohorts
            )

    gen = parallel(fed())
    try:
        return _collect(_progress(gen, total, progress), on_task)
    except Exception:
        # The tasks in flight finish and their results are dropped, so that the
        # generator ends rather than being abandoned: an abandoned one shuts the
        # workers down while joblib still dispatches to them from their
        # callbacks, which printed a hundred lines of tracebacks after the error.
        stop.set()
        _drain(gen)
        raise


def _drain(gen: Iterator[Any]) -> None:
    """Consume what ``gen`` still yields (the tasks in flight), whatever it yields."""
    try:
        for _ in gen:
            pass
    except Exception:  # a worker lost on the way: the first error is the one raised
        return


def _progress(iterable: Iterable[Any], total: int, enabled: bool | None) -> Iterator[Any]:
    """Yield from ``iterable`` while reporting progress on stderr.

    ``True``: a tqdm bar. ``None`` (the default): a bar on a terminal, and away
    from one (CI logs, ``nohup``) one plain line every 10 % of the tasks or
    every minute, whichever comes first. ``False``: silence.
    """
    if enabled is None:
        enabled = True if sys.stderr.isatty() else None
    if enabled is False:
        yield from iterable
        return
    if enabled:
        yield from tqdm(iterable, total=total, desc="mueval", unit="task", file=sys.stderr)
        return
    start = last_time = time.monotonic()
    last_tenth = 0
    for done, item in enumerate(iterable, start=1):
        yield item
        now = time.monotonic()
        tenth = (10 * done) // max(total, 1)
        if tenth > last_tenth or now - last_time >= 60 or done == total:
            last_tenth, last_time = tenth, now
            print(
                f"mueval: {done}/{total} tasks ({100 * done / max(total, 1):.0f} %), "
                f"{now - start:.0f} s",
                file=sys.stderr,
                flush=True,
            )


@dataclass
class _TaskFailure:
    """What a worker's task raised, handed back as its result.

    joblib raises the first error a worker reports, which with several
    workers is not always the first task's in order: the same run then failed
    with one message or another. Returned as a value, the failure is raised
    by :func:`_collect` when its turn in task order comes, so a run fails
    with the error ``jobs=1`` gives, after the same tasks were handed to
    ``on_task`` (the same row groups streamed).
    """

    error: Exception
    where: str  # the worker's traceback, for -v


def _task_or_failure(*args: object, **kwargs: object) -> list[EvalResult] | _TaskFailure:
    """:func:`run_task` in a worker, its error (if any) returned instead of raised."""
    try:
        return run_task(*args, **kwargs)  # type: ignore[arg-type]
    except Exception as exc:
        return _TaskFailure(exc, traceback.format_exc())


def _collect(
    results: Iterable[list[EvalResult] | _TaskFailure],
    on_task: Callable[[list[EvalResult]], None] | None,
) -> list[list[EvalResult]]:
    """Every task's results, each handed to ``on_task`` as it arrives, in task order;
    the first failed task's error raised in its turn."""
    nested = []
    for group in results:
        if isinstance(group, _TaskFailure):
            group.error.add_note(f"in a worker process:\n{group.where}")
            raise group.error
        if on_task is not None:
            on_task(group)
        nested.append(group)
    return nested


def windowed(
    submit: Callable[[Split, str], Any], tasks: Iterable[tuple[Split, str]], size: int
) -> Iterator[Any]:
    """Submit ``tasks`` and yield their results in order, ``size`` tasks in flight.

    Dask keeps a task's result in its worker's memory as long as a future
    refers to it, and the scheduler holds every submitted task's arguments
    until it runs: submitting all the tasks at once held every split in the
    scheduler (in the main process on a local cluster) and, with futures kept
    to the end, every result on the workers. Here a task is submitted when
    the oldest one's result is taken, and no future is held once its result is
    yielded. The results come in the order of ``tasks`` (a run's files do not
    depend on the order in which tasks finish, nor on ``size``).
    """
    pending: deque[Any] = deque()
    source = iter(tasks)
    for split, classifier in source:
        pending.append(submit(split, classifier))
        if len(pending) >= size:
            break
    while pending:
        future = pending.popleft()
        result = future.result()
        del future
        for split, classifier in source:
            pending.append(submit(split, classifier))
            break
        yield result
        del result


def run_dask(
    inputs: TaskInputs,
    tasks: Iterable[tuple[Split, str]],
    total: int,
    *,
    scheduler: str | None,
    progress: bool | None,
    workers: int,
    on_task: OnTask = None,
    in_flight: int | None = None,
) -> list[list[EvalResult]]:
    """Run the tasks on a Dask cluster: the one at ``scheduler``, or a local one.

    The table (and the rows' cohorts) is scattered once to every worker, not
    shipped with each task: a task carries its split and the configuration.
    At most ``in_flight`` tasks are submitted and not yet gathered
    (:func:`windowed`).
    """
    try:
        # Here, not at the top: an optional dependency, and a heavy one.
        import dask
        from distributed import Client, KilledWorker, LocalCluster
    except ImportError as exc:  # optional dependency
        message = "the dask backend needs dask.distributed: pip install 'dask[distributed]'"
        raise UsageError(message) from exc
    X, y, n_classes = inputs.leading
    config, cohorts = inputs.config, inputs.cohorts
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout=30, set_as_default=False)
        else:
            # One thread per worker process: the tasks are CPU-bound Python and
            # numpy, and each limits its own OpenMP threads to one. The
            # scheduler's active memory manager is off: its ReduceReplicas
            # policy drops a broadcast table's copies once fewer tasks wait
            # for it than workers hold it (a window of tasks in flight), so a
            # worker lost would take the table's only copy with it.
            with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
                cluster = LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                )
            client = Client(cluster, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        where = f"the dask scheduler at {scheduler!r}" if scheduler else "a local dask cluster"
        message = f"cannot reach {where}: {exc}"
        if cluster is not None:
            cluster.close()
        raise EvaluationError(message) from exc
    try:
        X_f, y_f = client.scatter([X, y], broadcast=True)
        # The cohorts are one code per row: as big as y, so sent once too.
        cohorts_f = None if cohorts is None else client.scatter(cohorts, broadcast=True)
        if in_flight is None and cluster is not None:
            in_flight = max(2, 2 * sum(client.nthreads().values()))
        elif in_flight is None:
            # A scheduler of the user's may run the active memory manager
            # (distributed's default), which keeps a broadcast table on as many
            # workers as tasks wait for it: every task is submitted at once, so
            # that every worker keeps the table while the run lasts.
            in_flight = max(1, total)

        def submit(split: Split, classifier: str) -> Any:
            return client.submit(
                run_task,
                X_f,
                y_f,
                n_classes,
                split,
                classifier,
                config,
                cohorts=cohorts_f,
                pure=False,
            )

        gathered = windowed(submit, tasks, in_flight)
        nested = _collect(_progress(gathered, total, progress), on_task)
    except KilledWorker as exc:
        # Dask moves the tasks of a lost worker to the others (the table is on
        # every worker); it gives a task up once it has lost more workers while
        # running it than distributed.scheduler.allowed-failures lets it.
        message = (
            f"a dask worker died while running a task, and the scheduler gave the task up "
            f"after losing too many workers to it (distributed.scheduler.allowed-failures): "
            f"{' '.join(str(exc).split())[:300]}"
        )
        raise EvaluationError(message) from exc
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return nested
