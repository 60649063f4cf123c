"""Run the evaluation: one model fit per (split, classifier), in parallel.

A task is one :class:`~mueval.evaluation.splits.Split` (a strategy group, a seed and a
target user or none) with one classifier. It fits the scaler and the model once,
calls ``predict_proba`` once on every calibration and test row and ``predict``
once on the test rows, then conformalizes once per strategy the split serves
(UIM and UCM of one user and seed share a task). Results are sorted by
(strategy, classifier, iteration, user), so they do not depend on the order in
which the tasks ran or on the backend.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from sklearn.ensemble import RandomForestClassifier
from threadpoolctl import ThreadpoolController
from tqdm import tqdm

from mueval.conformal.sets import ConformalOutput, conformalize, full_sets
from mueval.data.cohorts import RowCohorts
from mueval.errors import EvaluationError, SmallCalibrationError, UsageError
from mueval.evaluation.clustered import choose_calibration, clustered_note, true_class_scores
from mueval.evaluation.crossconformal import cross_note, evaluate_cross_split
from mueval.evaluation.estimators import check_picklable, check_shippable
from mueval.evaluation.hooks import FitPredictClassifier
from mueval.evaluation.models import fit_scaled, full_proba
from mueval.evaluation.pooled_order import pooled_order
from mueval.evaluation.records import EvalConfig, EvalResult, RunOutput, Split
from mueval.evaluation.splits import make_splits
from mueval.metrics.classic import classification_metrics
from mueval.metrics.conformal import conformal_metrics
from mueval.names import BACKENDS, CONFORMAL_METRICS, PVALUE_METRICS

__all__ = ["build_splits", "iteration_splits", "run", "run_task", "stage_timings", "windowed"]


def _where(strategy: str, user: int | str | None, seed: int, classifier: str) -> str:
    who = "all users" if user is None else f"user {user}"
    return f"strategy {strategy}, {who}, seed {seed}, classifier {classifier}"


def run_task(
    X: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    split: Split,
    classifier: str,
    config: EvalConfig,
    openmp_threads: int | None = 1,
    cohorts: RowCohorts | None = None,
) -> list[EvalResult]:
    """Fit once, then evaluate every strategy the split serves.

    Every task runs scikit-learn's OpenMP code on one thread, whatever the
    backend. KNN's neighbour search (scikit-learn's chunked pairwise
    reductions) splits the training rows between OpenMP threads and merges
    their candidates, so among training rows at exactly the same distance the
    thread count decides which ones are the neighbours. A loky worker runs one
    OpenMP thread and the main process as many as there are cores, so
    ``--jobs`` changed KNN's probabilities, hence the p-values, on data with
    duplicated feature rows. The limit is set per thread (OpenMP's is a
    per-thread setting), so tasks running side by side on Dask threads do not
    interfere; BLAS thread counts were measured not to change the results.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
        Unscaled features of the whole table.
    y : ndarray of int, shape (n_rows,)
        Class index of every row.
    n_classes : int
        Number of classes K of the table (a split may not hold every class).
    split : Split
    classifier : str
    config : EvalConfig
    openmp_threads : int or None
        OpenMP threads of the task (None: whatever the process has; only a
        test of the hazard below wants that).
    cohorts : RowCohorts, optional
        The cohort of every row, for cohort-conditional calibration.

    Returns
    -------
    list of EvalResult
        One per strategy of ``split.calibrations``.
    """
    if openmp_threads is None:
        return _evaluate_split(X, y, n_classes, split, classifier, config, cohorts)
    with _openmp_controller().limit(limits=openmp_threads, user_api="openmp"):
        return _evaluate_split(X, y, n_classes, split, classifier, config, cohorts)


_CONTROLLER: list[ThreadpoolController] = []


def _openmp_controller() -> ThreadpoolController:
    """The thread pools of this process, found once.

    ``threadpool_limits`` searches the loaded libraries on every call (4 ms, as
    much as fitting GaussianNB); the search is done once per process instead,
    after scikit-learn (hence its OpenMP library) is loaded.
    """
    if not _CONTROLLER:
        # scikit-learn, hence its OpenMP library, is loaded by the imports above.
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def _evaluate_split(X, y, n_classes, split, classifier, config, cohorts=None) -> list[EvalResult]:
    """The body of :func:`run_task`: one fit, then every target and strategy."""
    if hasattr(split, "folds"):
        # UXC fits one model per calibration fold (mueval.evaluation.crossconformal).
        return evaluate_cross_split(X, y, n_classes, split, classifier, config)
    clock = time.perf_counter()
    try:
        scaler, model = fit_scaled(
            classifier, split.seed, X[split.train], y[split.train], config.user_models
        )
    except ValueError as exc:
        where = _where("/".join(split.strategies), split.user, split.seed, classifier)
        message = f"{where}: model fit failed: {exc}"
        raise EvaluationError(message) from exc
    targets = split.served()
    offsets, eval_rows = _eval_layout(targets)
    X_eval = scaler.transform(X[eval_rows])
    fit_s = time.perf_counter() - clock
    clock = time.perf_counter()
    # One predict_proba over every row any target's calibration or test set needs.
    proba_all = full_proba(model, X_eval, n_classes)
    # The point prediction is the model's own predict() (for SVC the decision
    # function, not argmax of predict_proba), as in the reference; the test
    # rows of every target come first in eval_rows.
    n_tests = sum(len(t.test) for t in targets)
    y_pred_all = _point_predictions(model, X_eval[:n_tests], proba_all[:n_tests])
    predict_s = time.perf_counter() - clock
    # The fit and the predictions serve every (target, strategy): share them.
    n_results = sum(len(t.calibrations) for t in targets)
    shared_conf = _shared_calibrations(targets, proba_all, offsets, y, config, cohorts)
    # The labels of each calibration set once: a fold's users share the UIM
    # set, and taking them per user cost a pass over it per user.
    y_cals: dict[int, np.ndarray] = {}
    out = []
    for target in targets:
        n_test = len(target.test)
        start = offsets[id(target.test)]
        y_pred = y_pred_all[start : start + n_test]
        clock = time.perf_counter()
        classic = classification_metrics(y[target.test], y_pred, proba_all.shape[1])
        shared = {
            "fit_s": fit_s / n_results,
            "predict_s": predict_s / n_results,
            "metrics_s": (time.perf_counter() - clock) / len(target.calibrations),
        }
        proba_test = proba_all[start : start + n_test]
        for strategy, cal in target.calibrations.items():
            proba_cal = proba_all[offsets[id(cal)] : offsets[id(cal)] + len(cal)]
            if id(cal) not in y_cals:
                y_cals[id(cal)] = y[cal]
            y_cal = y_cals[id(cal)]
            if strategy in target.borrow:
                # UKM: the calibration rows are chosen from the model's scores.
                pool = target.borrow[strategy].rows
                proba_pool = proba_all[offsets[id(pool)] : offsets[id(pool)] + len(pool)]
                proba_cal, y_cal = _borrowed(
                    proba_cal,
                    y_cal,
                    proba_pool,
                    y[pool],
                    target.borrow[strategy].users,
                    split,
                    config,
                )
            result = EvalResult.of_rows(
                split,
                strategy=strategy,
                classifier=classifier,
                user=target.user,
                rows=target.test,
                n_cal=len(y_cal),
                classic=classic,
                y_pred=y_pred,
                proba=proba_test,
                timings=dict(shared),
            )
            by_cohort = None if cohorts is None else (cohorts, cal, target.test)
            given = shared_conf.get((strategy, id(cal), id(target.test)))
            _conformal_step(result, proba_cal, y_cal, y[target.test], config, by_cohort, given)
            out.append(result)
    return out


def _borrowed(
    proba_own: np.ndarray,
    y_own: np.ndarray,
    proba_pool: np.ndarray,
    y_pool: np.ndarray,
    pool_users: np.ndarray,
    split: Split,
    config: EvalConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """UKM's calibration probabilities and labels for one target
    (:func:`~mueval.evaluation.clustered.choose_calibration`): the target's own
    rows (the first ``config.own_rows`` of them), or its cluster's rows."""
    if config.own_rows is not None:
        proba_own, y_own = proba_own[: config.own_rows], y_own[: config.own_rows]
    score = config.conformity
    choice = choose_calibration(
        true_class_scores(proba_own, y_own, score),
        true_class_scores(proba_pool, y_pool, score),
        pool_users,
        alpha=config.alpha,
        min_own=config.min_own,
        n_clusters=config.clusters,
        seed=split.seed,
        assign=config.assign,
    )
    if choice.how == "own":
        # UCM's rows as they are: the same floats, so the same threshold.
        return proba_own, y_own
    return proba_pool[choice.rows - len(y_own)], y_pool[choice.rows - len(y_own)]


def _point_predictions(model, X_test: np.ndarray, proba_test: np.ndarray) -> np.ndarray:
    """``model.predict(X_test)`` as integers, without a second pass of the forest.

    A random forest's ``predict`` is ``classes_[argmax(predict_proba(X))]``
    (scikit-learn's ``ForestClassifier.predict``): it ran every tree over the
    test rows again. ``proba_test`` holds those probabilities already (widened to
    every class with zeros, which never win: a row's probabilities sum to 1, and
    the known classes keep their order, so ties go to the same class), and each
    row's are the same floats whatever rows are predicted with it. Every other
    model answers its own ``predict`` (SVC's is its decision function, not the
    argmax of its Platt probabilities).
    """
    # The class itself, not a subclass of the user's, which may predict its own way.
    # A fit_predict model's predict is this argmax, and calling it would train
    # the user's model a second time.
    if isinstance(model, FitPredictClassifier) or (
        type(model) is RandomForestClassifier and model.n_outputs_ == 1
    ):
        return np.argmax(proba_test, axis=1).astype(int)
    return np.asarray(model.predict(X_test), dtype=int)


def _shared_calibrations(
    targets: Sequence,
    proba_all: np.ndarray,
    offsets: dict[int, int],
    y: np.ndarray,
    config: EvalConfig,
    cohorts: RowCohorts | None,
) -> dict[tuple[str, int, int], tuple[ConformalOutput, float]]:
    """Sets and p-values of every target whose calibration set other targets share.

    The users of a fold share one UIM calibration set, which holds a share
    of every other user's rows: conformalizing each user on it apart scored,
    sorted and took the quantile of those rows once per user, so a task's
    cost grew with the square of its users. Here the test rows of all the
    targets that share a calibration set are conformalized together, once,
    and each target gets its own rows back. Under the study's threshold rule
    every set and p-value is a function of its own test row and the
    calibration scores only, so they are the same floats as one target at a
    time. MAPIE's rule (its APS and RAPS draw random numbers per test row)
    and cohort calibration (one calibration subset per test row's cohort,
    and a note per target) keep the one-target path, and so does a shared
    set the conformal step refuses (each target then gets its own error or
    ``--small-cal`` answer).

    Returns
    -------
    dict
        ``(strategy, id(calibration rows), id(test rows))`` -> (that target's
        :class:`ConformalOutput`, its share of the seconds spent).
    """
    if config.threshold != "study" or cohorts is not None or config.randomized:
        # A randomised score draws per test row: each target draws its own.
        return {}
    groups: dict[tuple[str, int], list] = {}
    for target in targets:
        for strategy, cal in target.calibrations.items():
            groups.setdefault((strategy, id(cal)), []).append((target, cal))
    shared: dict[tuple[str, int, int], tuple[ConformalOutput, float]] = {}
    for (strategy, cal_id), members in groups.items():
        if len(members) < 2:
            continue
        cal = members[0][1]
        tests = [t.test for t, _ in members]
        proba_test = np.concatenate(
            [proba_all[offsets[id(t)] : offsets[id(t)] + len(t)] for t in tests]
        )
        proba_cal = proba_all[offsets[cal_id] : offsets[cal_id] + len(cal)]
        clock = time.perf_counter()
        try:
            conf = conformalize(
                proba_cal,
                y[cal],
                proba_test,
                alpha=config.alpha,
                score=config.conformity,
                mondrian=config.conditioning.per_class,
                threshold=config.threshold,
            )
        except EvaluationError:
            continue
        seconds = (time.perf_counter() - clock) / len(members)
        start = 0
        for test in tests:
            stop = start + len(test)
            part = ConformalOutput(
                conf.sets[start:stop], conf.pvalues[start:stop], conf.n_cal, conf.threshold
            )
            shared[(strategy, cal_id, id(test))] = (part, seconds)
            start = stop
    return shared


def _eval_layout(targets: Sequence) -> tuple[dict[int, int], np.ndarray]:
    """The rows to predict once for ``targets``: every test set, then every
    calibration set, each array once.

    The users of a fold share one UIM calibration set (the same array): it is
    predicted once, not once per user. With one target the layout is (test,
    calibrations in order), as it always was.

    Returns
    -------
    offsets : dict of int to int
        ``id(array)`` -> position of its first row in ``rows``.
    rows : ndarray of shape (n_eval,)
        Row positions into the table.
    """
    offsets: dict[int, int] = {}
    parts = []
    size = 0
    arrays = [t.test for t in targets] + [c for t in targets for c in t.calibrations.values()]
    # UKM's pool is UIM's calibration set: predicted once when both are run.
    arrays += [b.rows for t in targets for b in t.borrow.values()]
    for array in arrays:
        if id(array) not in offsets:
            offsets[id(array)] = size
            parts.append(array)
            size += len(array)
    return offsets, np.concatenate(parts)


def _conformal_step(
    result: EvalResult,
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    y_test: np.ndarray,
    config: EvalConfig,
    by_cohort: tuple[RowCohorts, np.ndarray, np.ndarray] | None = None,
    given: tuple[ConformalOutput, float] | None = None,
) -> None:
    """Conformalize ``result``'s test rows on one calibration set and fill in its
    sets, p-values, threshold, conformal metrics, note and timings (in place).

    ``by_cohort``: the rows' cohorts and the calibration and test row positions, for
    cohort-conditional calibration. ``given``: the sets and p-values already
    computed with other targets of the same calibration set
    (:func:`_shared_calibrations`), and the seconds they took."""
    metrics = result.metrics
    conf = None
    clock = time.perf_counter()
    try:
        if given is not None:
            conf = given[0]
        else:
            conf = _conformalize(result, proba_cal, y_cal, config, by_cohort)
    except EvaluationError as exc:
        where = _where(result.strategy, result.user, result.seed, result.classifier)
        message = f"{where}: {exc}"
        small = isinstance(exc, SmallCalibrationError)
        if config.small_cal == "error" or (config.small_cal == "full-set" and not small):
            hint = (
                " (use --small-cal skip to record NaN for it, or --small-cal full-set "
                "to answer every class)"
            )
            raise EvaluationError(message + hint) from exc
        if config.small_cal == "skip":
            result.note = message
            metrics.update({m: float("nan") for m in CONFORMAL_METRICS})
        else:
            result.note = f"{message}; answered with the full set (every class)"
            conf = full_sets(
                proba_cal, y_cal, result.proba, score=config.conformity, seed=result.seed
            )
    shared_s = 0.0 if given is None else given[1]
    result.timings["conformal_s"] = time.perf_counter() - clock + shared_s
    clock = time.perf_counter()
    if conf is not None and conf.note:
        result.note = (
            f"{_where(result.strategy, result.user, result.seed, result.classifier)}: {conf.note}"
        )
    if conf is not None and by_cohort is not None:
        result.n_cal = conf.n_cal  # the calibration rows of the test rows' cohorts
    if conf is not None and _stratified_null_applies(config, by_cohort, result.note):
        result.pooled_order = pooled_order(
            result.strategy, proba_cal, y_cal, result.proba, y_test, config.conformity
        )
    if conf is not None and config.conditioning.per_class:
        result.n_cal_cell = _smallest_cell(y_cal, result.proba.shape[1], by_cohort)
        result.n_cal_class = _class_cells(y_cal, result.proba.shape[1], by_cohort)
    if conf is not None:
        pvalues = conf.pvalues
        metrics.update(conformal_metrics(y_test, conf.sets, pvalues))
        if not config.pvalues_describe_sets:
            # MAPIE's own aps/raps/top_k sets: no p-value describes them.
            metrics.update(dict.fromkeys(PVALUE_METRICS, float("nan")))
            pvalues = np.full(pvalues.shape, np.nan)
        result.sets, result.pvalues, result.threshold = conf.sets, pvalues, conf.threshold
    result.timings["metrics_s"] += time.perf_counter() - clock


def _stratified_null_applies(
    config: EvalConfig, by_cohort: object | None, note: str | None
) -> bool:
    """Whether a task's pooled score order is recorded (:mod:`.pooled_order`): a
    random split, one unconditional threshold, sets the p-values describe, and
    no full-set answer (``note``)."""
    return (
        config.split == "random"
        and by_cohort is None
        and not config.conditioning.per_class
        and config.pvalues_describe_sets
        and note is None
    )


def _conformalize(
    result: EvalResult,
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    config: EvalConfig,
    by_cohort: tuple[RowCohorts, np.ndarray, np.ndarray] | None,
) -> ConformalOutput:
    """Sets and p-values of ``result``'s test rows (:func:`~mueval.conformal.sets.conformalize`):
    the cohorts of users are its bins, the class its ``mondrian``."""
    bins = None
    if by_cohort is not None:
        cohorts, cal, test = by_cohort
        bins = (cohorts.codes[cal], cohorts.codes[test])
    return conformalize(
        proba_cal,
        y_cal,
        result.proba,
        alpha=config.alpha,
        score=config.conformity,
        mondrian=config.conditioning.per_class,
        threshold=config.threshold,
        seed=result.seed,
        bins=bins,
        small_bins="full-set" if config.small_cal == "full-set" else "error",
        bin_names=None if by_cohort is None else by_cohort[0].names,
        design=None if by_cohort is None else by_cohort[0].design,
    )


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


def _progress(iterable: Iterable, total: int, enabled: bool | None) -> Iterator:
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
        The cohort of every row; required when ``config.condition`` has a cohort.
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
    if jobs == 0 or jobs < -1:
        message = f"jobs must be a positive number of workers or -1 (all cores), got {jobs}"
        raise UsageError(message)
    if in_flight is not None and in_flight < 1:
        message = f"in_flight must be at least 1 task, got {in_flight}"
        raise UsageError(message)
    if workers is not None and workers < 1:
        message = f"workers must be at least 1, got {workers}"
        raise UsageError(message)
    if config.conditioning.by_cohort != (cohorts is not None):
        message = (
            f"condition {config.condition!r} needs the cohort of every row"
            if cohorts is None
            else "cohorts were given but the condition has no cohort (cohort:COLUMN)"
        )
        raise UsageError(message)
    if config.models and (backend == "dask" or jobs != 1):
        # Before any task: a model the workers cannot be sent fails here, named.
        where = "the dask backend" if backend == "dask" else f"jobs={jobs} (worker processes)"
        check_shippable(config.models, where)
    if callable(config.score) and (backend == "dask" or jobs != 1):
        where = "the dask backend" if backend == "dask" else f"jobs={jobs} (worker processes)"
        check_picklable(config.score, f"score function {config.conformity.name!r}", where)
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
    if backend == "dask":
        if workers is None:
            workers = jobs if jobs > 1 else (os.cpu_count() or 1)
        nested = _run_dask(
            X,
            y,
            n_classes,
            tasks,
            config,
            scheduler,
            progress,
            workers,
            cohorts,
            on_task,
            in_flight=in_flight,
        )
    elif jobs == 1 or tasks.total <= 1:
        gen = (run_task(X, y, n_classes, s, c, config, cohorts=cohorts) for s, c in tasks)
        nested = _collect(_progress(gen, tasks.total, progress), on_task)
    else:
        # Ordered generator (joblib >= 1.3), fed lazily (joblib's pre_dispatch
        # takes 2 x jobs tasks ahead); results are sorted by key below. No more
        # workers than tasks: each one started costs a second of imports.
        n_jobs = jobs if jobs == -1 else min(jobs, tasks.total)
        parallel = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator")
        gen = parallel(
            delayed(_task_or_failure)(X, y, n_classes, s, c, config, cohorts=cohorts)
            for s, c in tasks
        )
        nested = _collect(_progress(gen, tasks.total, progress), on_task)
    # The splits of the later iterations were made while the tasks ran: their
    # seconds are in both figures.
    timings["splits_s"] = tasks.seconds
    timings["tasks_s"] = time.perf_counter() - t0

    results = sorted((r for group in nested for r in group), key=lambda r: r.key)
    notes = [r.note for r in results if r.note]
    if not config.pvalues_describe_sets:
        notes.insert(0, config.pvalue_note())
    if config.user_folds_note() is not None:
        notes.insert(0, config.user_folds_note())
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


def _smallest_cell(
    y_cal: np.ndarray,
    n_classes: int,
    by_cohort: tuple[RowCohorts, np.ndarray, np.ndarray] | None,
) -> int:
    """The fewest calibration rows of a class (within one of the test rows'
    cohorts, under a cohort condition): the smallest cell a threshold came from."""
    if by_cohort is None:
        return int(np.bincount(y_cal, minlength=n_classes).min())
    cohorts, cal, test = by_cohort
    cal_codes = cohorts.codes[cal]
    return min(
        int(np.bincount(y_cal[cal_codes == g], minlength=n_classes).min())
        for g in np.unique(cohorts.codes[test])
    )


def _class_cells(
    y_cal: np.ndarray,
    n_classes: int,
    by_cohort: tuple[RowCohorts, np.ndarray, np.ndarray] | None,
) -> tuple[int, ...] | None:
    """Calibration rows per class of the cell that thresholded the test rows (within
    their cohort), or None when the test rows span several cohorts."""
    if by_cohort is None:
        return tuple(int(n) for n in np.bincount(y_cal, minlength=n_classes))
    cohorts, cal, test = by_cohort
    present = np.unique(cohorts.codes[test])
    if len(present) != 1:
        return None
    own = y_cal[cohorts.codes[cal] == present[0]]
    return tuple(int(n) for n in np.bincount(own, minlength=n_classes))


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


def windowed(submit: Callable[[Split, str], object], tasks: Iterable, size: int) -> Iterator:
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
    pending: deque = deque()
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


def _run_dask(
    X,
    y,
    n_classes,
    tasks,
    config,
    scheduler,
    progress,
    workers,
    cohorts=None,
    on_task=None,
    in_flight=None,
):
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
            in_flight = max(1, tasks.total)

        def submit(split: Split, classifier: str):
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
        nested = _collect(_progress(gathered, tasks.total, progress), on_task)
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
