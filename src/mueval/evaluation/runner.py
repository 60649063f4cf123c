"""Run the evaluation: one model fit per (split, classifier), in parallel.

:func:`run` checks the request, makes the tasks (:class:`_Tasks`, one iteration's
splits at a time) and hands them to a backend (:mod:`.backends`: this process,
loky workers or Dask), which runs each one (:mod:`.task`). Results are sorted by
(strategy, classifier, iteration, user), so they do not depend on the order in
which the tasks ran or on the backend.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from mueval.cpus import check_jobs, usable_cpus
from mueval.data.cohorts import RowCohorts
from mueval.errors import UsageError
from mueval.evaluation.backends import TaskInputs, run_dask, run_loky, run_serial
from mueval.evaluation.clustered import clustered_note
from mueval.evaluation.config import EvalConfig
from mueval.evaluation.crossconformal import cross_note
from mueval.evaluation.estimators import check_picklable, check_shippable
from mueval.evaluation.records import EvalResult, RunOutput, Split
from mueval.evaluation.splits import make_splits
from mueval.evaluation.task import run_task
from mueval.names import BACKENDS

__all__ = ["build_splits", "iteration_splits", "run", "run_task", "stage_timings"]


def iteration_splits(
    y: np.ndarray, users: np.ndarray, config: EvalConfig, classes: Sequence[str], iteration: int
) -> list[Split]:
    """Every split of one iteration, in (strategy, user) order."""
    return make_splits(
        y,
        users,
        config.strategies,
        iteration,
        config.seed(iteration),
        adapt_frac=config.adapt_frac,
        classes=classes,
        split=config.split,
        gap=config.gap,
        n_user_folds=config.user_folds,
        split_seeds=config.split_seeds,
    )


def build_splits(
    y: np.ndarray, users: np.ndarray, config: EvalConfig, classes: Sequence[str]
) -> list[Split]:
    """Every split of every iteration, in (iteration, strategy, user) order."""
    splits: list[Split] = []
    for iteration in range(1, config.iterations + 1):
        splits += iteration_splits(y, users, config, classes, iteration)
    return splits


class _Tasks:
    """The (split, classifier) tasks of a run, one iteration's splits at a time.

    An iteration's splits hold row positions of the whole table (82 bytes a
    row at 60 rows a user with UIM and UCM on user folds): building every
    iteration's before the first task held them all to the end. Here the next
    iteration's splits are made when the tasks of the one before have all been
    handed out, so at most two iterations' splits are held (the last tasks of
    one still running while the next is made). Every iteration has as many
    splits (the same users, strategies and folds), so the first one gives the
    number of tasks of the run. ``seconds`` adds up the time spent making
    splits.
    """

    def __init__(
        self, y: np.ndarray, users: np.ndarray, config: EvalConfig, classes: Sequence[str]
    ) -> None:
        self._args = (y, users, config, classes)
        self._classifiers = config.classifiers
        self._iterations = config.iterations
        self.seconds = 0.0
        self._first = self._make(1)
        self.total = len(self._first) * len(self._classifiers) * self._iterations

    def _make(self, iteration: int) -> list[Split]:
        clock = time.perf_counter()
        y, users, config, classes = self._args
        splits = iteration_splits(y, users, config, classes, iteration)
        self.seconds += time.perf_counter() - clock
        return splits

    def __iter__(self) -> Iterator[tuple[Split, str]]:
        splits, self._first = self._first, []
        for iteration in range(1, self._iterations + 1):
            if iteration > 1:
                splits = self._make(iteration)
            # Popped as handed out: a split is then held only by its tasks.
            queue = deque(splits)
            del splits
            while queue:
                split = queue.popleft()
                for classifier in self._classifiers:
                    yield split, classifier
                del split


def run(
    X: np.ndarray,
    y: np.ndarray,
    users: np.ndarray,
    classes: Sequence[str],
    config: EvalConfig,
    *,
    jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    progress: bool | None = None,
    workers: int | None = None,
    cohorts: RowCohorts | None = None,
    on_task: Callable[[list[EvalResult]], None] | None = None,
    in_flight: int | None = None,
) -> RunOutput:
    """Evaluate every (split, classifier) task and return sorted results.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of int, shape (n_rows,)
        Class index of every row (into ``classes``).
    users : ndarray of shape (n_rows,)
    classes : sequence of str
        Class names, sorted.
    config : EvalConfig
    jobs : int
        Parallel workers for the loky backend (1 = in this process, -1 =
        joblib's count of cores); never more than the tasks. The callers
        (:func:`mueval.evaluate`, ``mueval evaluate``) default to every usable
        CPU (:func:`mueval.cpus.resolve_jobs`).
    backend : {"loky", "dask"}
    scheduler : str, optional
        Address of a dask.distributed scheduler (dask backend only).
    progress : bool, optional
        True: a progress bar on stderr; False: nothing; None (default): a bar
        on a terminal, else a line every 10 % of the tasks or every minute.
    workers : int, optional
        Dask backend without ``scheduler``: the number of worker processes of
        the local cluster started for the run (default: ``jobs`` when above 1,
        else the number of cores).
    cohorts : RowCohorts, optional
        The cohort of every row; required when ``config.conformal.condition`` has a cohort.
    on_task : callable, optional
        Called in this process with each task's results, in the order the
        tasks were made (not the order they finish), whatever ``jobs`` and
        ``backend``: a stream of predictions written from it is the same file
        for any number of workers.
    in_flight : int, optional
        Dask backend: the most tasks submitted and not yet gathered. The main
        process holds the arguments of those tasks and one task's results at a
        time, however many tasks the run has; the results and files do not
        depend on it. Default: on the local cluster started for the run, twice
        its worker threads (at least 2); on a ``scheduler`` of the user's,
        every task (distributed's active memory manager, on by default, drops
        copies of the scattered table that fewer waiting tasks need, and a
        lost worker would then take its last copy with it; give a window
        only where the scheduler runs without it).

    Returns
    -------
    RunOutput
    """
    if backend not in BACKENDS:
        message = f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}"
        raise UsageError(message)
    check_jobs(jobs)
    if in_flight is not None and in_flight < 1:
        message = f"in_flight must be at least 1 task, got {in_flight}"
        raise UsageError(message)
    if workers is not None and workers < 1:
        message = f"workers must be at least 1, got {workers}"
        raise UsageError(message)
    settings = config.conformal
    if settings.conditioning.by_cohort != (cohorts is not None):
        message = (
            f"condition {settings.condition!r} needs the cohort of every row"
            if cohorts is None
            else "cohorts were given but the condition has no cohort (cohort:COLUMN)"
        )
        raise UsageError(message)
    if config.models and (backend == "dask" or jobs != 1):
        # Before any task: a model the workers cannot be sent fails here, named.
        where = "the dask backend" if backend == "dask" else f"jobs={jobs} (worker processes)"
        check_shippable(config.models, where)
    if callable(settings.score) and (backend == "dask" or jobs != 1):
        where = "the dask backend" if backend == "dask" else f"jobs={jobs} (worker processes)"
        check_picklable(settings.score, f"score function {settings.conformity.name!r}", where)
    # Features as float64 (the protocol's); windows of samples (n, T, C) keep
    # their float32, half the memory, which is what a network takes.
    X = np.ascontiguousarray(X, dtype=float if X.ndim == 2 else None)
    y = np.asarray(y, dtype=int)
    users = np.asarray(users)
    n_classes = len(classes)
    timings: dict[str, float] = {}

    # The first iteration's splits are made here, the others as the tasks go.
    tasks = _Tasks(y, users, config, classes)

    t0 = time.perf_counter()
    inputs = TaskInputs(X, y, n_classes, config, cohorts)
    if backend == "dask":
        if workers is None:
            workers = jobs if jobs > 1 else usable_cpus()
        nested = run_dask(
            inputs,
            tasks,
            tasks.total,
            scheduler=scheduler,
            progress=progress,
            workers=workers,
            on_task=on_task,
            in_flight=in_flight,
        )
    elif jobs == 1 or tasks.total <= 1:
        nested = run_serial(inputs, tasks, tasks.total, progress, on_task)
    else:
        nested = run_loky(inputs, tasks, tasks.total, jobs, progress, on_task)
    # The splits of the later iterations were made while the tasks ran: their
    # seconds are in both figures.
    timings["splits_s"] = tasks.seconds
    timings["tasks_s"] = time.perf_counter() - t0

    results = sorted((r for group in nested for r in group), key=lambda r: r.key)
    notes = [r.note for r in results if r.note]
    if not settings.pvalues_describe_sets:
        notes.insert(0, config.pvalue_note())
    folds_note = config.user_folds_note()
    if folds_note is not None:
        notes.insert(0, folds_note)
    if "uxc" in config.strategies:
        notes.insert(0, cross_note(config.user_folds))
    if "ukm" in config.strategies:
        notes.insert(0, clustered_note(config))
    return RunOutput(results=results, notes=notes, timings=timings, stages=stage_timings(results))


def stage_timings(results: Sequence[EvalResult]) -> dict[str, dict[str, float]]:
    """Seconds per stage summed over tasks, for each ``strategy/classifier``.

    Task time is CPU time in the workers: with several workers the sums exceed
    the wall time of the run.
    """
    out: dict[str, dict[str, float]] = {}
    for r in results:
        slot = out.setdefault(f"{r.strategy}/{r.classifier}", {})
        for stage, seconds in r.timings.items():
            slot[stage] = slot.get(stage, 0.0) + seconds
    return {key: {k: round(v, 6) for k, v in stages.items()} for key, stages in out.items()}
