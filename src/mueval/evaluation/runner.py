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

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from threadpoolctl import ThreadpoolController

from mueval.data.groups import Condition, parse_condition
from mueval.errors import EvaluationError, SmallCalibrationError, UsageError
from mueval.evaluation.splits import SPLIT_METHODS, Split, make_splits
from mueval.names import (
    BACKENDS,
    CLASSIC_METRICS,
    CLASSIFIERS,
    CONFORMAL_METRICS,
    PVALUE_METRICS,
    SCORES,
    SMALL_CAL_POLICIES,
    STRATEGIES,
    THRESHOLD_RULES,
    USER_CORRECTIONS,
)

if TYPE_CHECKING:
    from mueval.data.groups import RowGroups

__all__ = [
    "BACKENDS",
    "SMALL_CAL_POLICIES",
    "EvalConfig",
    "EvalResult",
    "RunOutput",
    "run",
    "run_task",
    "stage_timings",
]


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate and how (defaults = the reference protocol).

    ``user_folds``: None (the protocol) leaves one user out, so UIM and UCM fit
    one model per user; an integer K from 2 to the number of users fits one per
    grouped fold of users instead (:func:`~mueval.evaluation.splits.user_fold_splits`),
    K fits per classifier and iteration whatever the number of users.

    ``condition``: None (the protocol), ``"class"``, ``"group:COLUMN"`` or
    ``"class+group:COLUMN"`` (:mod:`mueval.data.groups`); ``mondrian=True`` is
    ``"class"``.

    ``user_level`` and ``user_correction``: a user is *below target* when the
    exact per-user test (:mod:`mueval.guarantees.user_level`) rejects at
    ``user_level`` after ``user_correction`` (``holm``, ``bh`` or ``none``)
    across the users of each strategy and classifier. They change no set,
    only the verdicts a run folder records.
    """

    strategies: tuple[str, ...] = STRATEGIES[:4]
    classifiers: tuple[str, ...] = CLASSIFIERS
    alpha: float = 0.05
    iterations: int = 20
    seed_base: int = 100
    score: str = "lac"
    mondrian: bool = False
    threshold: str = "study"
    adapt_frac: float = 0.5
    small_cal: str = "error"
    split: str = "random"
    gap: int = 1
    user_folds: int | None = None
    condition: str | None = None
    user_level: float = 0.05
    user_correction: str = "holm"

    def __post_init__(self) -> None:
        condition = parse_condition(self.condition, mondrian=self.mondrian)  # fails early
        if condition.by_group and "uxc" in self.strategies:
            message = (
                "uxc pools out-of-fold scores over the other users and has no per-group "
                "form: run it without --condition group (class works)"
            )
            raise UsageError(message)
        if not 0.0 < self.alpha < 1.0:
            message = f"alpha must be strictly between 0 and 1, got {self.alpha}"
            raise UsageError(message)
        if self.iterations < 1:
            message = f"iterations must be at least 1, got {self.iterations}"
            raise UsageError(message)
        if self.score not in SCORES:
            message = f"unknown score {self.score!r}; valid: {', '.join(SCORES)}"
            raise UsageError(message)
        if self.threshold not in THRESHOLD_RULES:
            message = (
                f"unknown threshold rule {self.threshold!r}; valid: {', '.join(THRESHOLD_RULES)}"
            )
            raise UsageError(message)
        if self.split not in SPLIT_METHODS:
            message = f"unknown split method {self.split!r}; valid: {', '.join(SPLIT_METHODS)}"
            raise UsageError(message)
        if self.gap < 0:
            message = f"gap must be 0 or more rows, got {self.gap}"
            raise UsageError(message)
        if self.user_folds is not None and (
            isinstance(self.user_folds, bool)
            or not isinstance(self.user_folds, int)
            or self.user_folds < 2
        ):
            message = f"user_folds must be None or an integer of 2 or more, got {self.user_folds!r}"
            raise UsageError(message)
        if isinstance(self.user_level, bool) or not 0.0 < self.user_level < 1.0:
            message = f"user_level must be strictly between 0 and 1, got {self.user_level!r}"
            raise UsageError(message)
        if self.user_correction not in USER_CORRECTIONS:
            message = (
                f"unknown user correction {self.user_correction!r}; valid: "
                f"{', '.join(USER_CORRECTIONS)}"
            )
            raise UsageError(message)
        if self.small_cal not in SMALL_CAL_POLICIES:
            message = (
                f"unknown small-cal policy {self.small_cal!r}; valid: "
                f"{', '.join(SMALL_CAL_POLICIES)}"
            )
            raise UsageError(message)

    @property
    def conditioning(self) -> Condition:
        """What the threshold is conditioned on (``mondrian`` folded in)."""
        return parse_condition(self.condition, mondrian=self.mondrian)

    @property
    def pvalues_describe_sets(self) -> bool:
        """Whether the p-values come from the scores the sets were made from.

        Under the study rule every score's sets and p-values come from the same
        deterministic scores; under the MAPIE rule only LAC's do (MAPIE's aps
        and raps draw random numbers, and its top_k breaks ties its own way).
        """
        return self.threshold == "study" or self.score == "lac"

    def pvalue_note(self) -> str:
        """Why the p-value metrics are not reported (see :attr:`pvalues_describe_sets`)."""
        return (
            f"p-value metrics ({', '.join(PVALUE_METRICS)}) are not reported for --score "
            f"{self.score} with --threshold mapie: MAPIE makes those sets from its own "
            "scores, which no p-value here describes; --threshold study gives sets and "
            "p-values from the same scores"
        )

    def user_folds_note(self) -> str | None:
        """How grouped folds differ from the protocol, or None without them."""
        if self.user_folds is None or not {"uim", "ucm"} & set(self.strategies):
            return None
        return (
            f"uim/ucm on {self.user_folds} grouped folds of users (GroupKFold, shuffled with "
            "each iteration's seed), not leave-one-user-out: one model per fold, trained "
            "on 60 % of the other folds' users' rows (uim calibrates on the other 40 %), "
            "so each target user's model also leaves out the other users of its fold"
        )

    def record(self) -> dict[str, Any]:
        """The configuration as ``run.json`` records it (lists, not tuples)."""
        record = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in record.items()}

    def seed(self, iteration: int) -> int:
        """Seed of 1-based ``iteration``: ``seed_base + iteration``."""
        return self.seed_base + iteration


@dataclass
class EvalResult:
    """Everything one (strategy, classifier, iteration, user) produced.

    Attributes
    ----------
    strategy, classifier : str
    iteration, seed : int
    user : int, str or None
    n_train, n_test, n_cal : int
        Sizes of the training, test and calibration sets (the corrected
        resampled t-test of the report needs n_test / n_train).
    metrics : dict of str to float
        Every name of :data:`METRICS` (NaN when undefined or skipped).
    rows : ndarray of int, shape (n_test,)
        Row positions of the test rows.
    y_pred : ndarray of int, shape (n_test,)
    sets : ndarray of bool, shape (n_test, K), or None when skipped
    pvalues : ndarray of float, shape (n_test, K), or None when skipped
    proba : ndarray of float, shape (n_test, K)
    note : str or None
        Why the conformal metrics are NaN (``--small-cal skip``).
    n_cal_cell : int or None
        Under class-conditional calibration, the fewest calibration rows of one
        threshold's cell (a class, or a group and class, among the test rows'
        groups); None otherwise. A cell below the minimum size keeps its class
        in every set.
    threshold : float
        The conformal threshold (NaN when skipped, per class or MAPIE's own).
    timings : dict of str to float
        Seconds spent in ``fit_s``, ``predict_s`` (``predict_proba`` and
        ``predict``), ``conformal_s`` and ``metrics_s``; a fit serving several
        strategies is shared equally between them.
    """

    strategy: str
    classifier: str
    iteration: int
    seed: int
    user: int | str | None
    n_train: int
    n_test: int
    n_cal: int
    metrics: dict[str, float]
    rows: np.ndarray
    y_pred: np.ndarray
    sets: np.ndarray | None
    pvalues: np.ndarray | None
    proba: np.ndarray
    note: str | None = None
    n_cal_cell: int | None = None
    threshold: float = float("nan")
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> tuple:
        """(strategy order, classifier order, iteration, user in natural order)."""
        from mueval.data.table import natural_key  # pandas: not at the command line's start

        return (
            STRATEGIES.index(self.strategy),
            CLASSIFIERS.index(self.classifier),
            self.iteration,
            () if self.user is None else natural_key(self.user),
        )


@dataclass
class RunOutput:
    """Sorted results plus what happened along the way."""

    results: list[EvalResult]
    notes: list[str] = field(default_factory=list)
    #: Wall seconds per phase of the run.
    timings: dict[str, float] = field(default_factory=dict)
    #: Task seconds per stage for each strategy/classifier (:func:`stage_timings`).
    stages: dict[str, dict[str, float]] = field(default_factory=dict)


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
    groups: RowGroups | None = None,
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
    groups : RowGroups, optional
        The group of every row, for group-conditional calibration.

    Returns
    -------
    list of EvalResult
        One per strategy of ``split.calibrations``.
    """
    if openmp_threads is None:
        return _evaluate_split(X, y, n_classes, split, classifier, config, groups)
    with _openmp_controller().limit(limits=openmp_threads, user_api="openmp"):
        return _evaluate_split(X, y, n_classes, split, classifier, config, groups)


_CONTROLLER: list[ThreadpoolController] = []


def _openmp_controller() -> ThreadpoolController:
    """The thread pools of this process, found once.

    ``threadpool_limits`` searches the loaded libraries on every call (4 ms, as
    much as fitting GaussianNB); the search is done once per process instead,
    after scikit-learn (hence its OpenMP library) is loaded.
    """
    if not _CONTROLLER:
        import mueval.evaluation.models  # noqa: F401  (loads scikit-learn's OpenMP library)

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def _evaluate_split(X, y, n_classes, split, classifier, config, groups=None) -> list[EvalResult]:
    """The body of :func:`run_task`: one fit, then every target and strategy."""
    # Imported here, not at the top: the command line imports this module for
    # EvalConfig, and must start without scikit-learn and MAPIE.
    from mueval.evaluation.models import fit_scaled, full_proba
    from mueval.metrics.classic import classification_metrics

    if hasattr(split, "folds"):
        # UXC fits one model per calibration fold (mueval.evaluation.crossconformal).
        from mueval.evaluation.crossconformal import evaluate_cross_split

        return evaluate_cross_split(X, y, n_classes, split, classifier, config)
    clock = time.perf_counter()
    try:
        scaler, model = fit_scaled(classifier, split.seed, X[split.train], y[split.train])
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
    y_pred_all = np.asarray(model.predict(X_eval[:n_tests]), dtype=int)
    predict_s = time.perf_counter() - clock
    # The fit and the predictions serve every (target, strategy): share them.
    n_results = sum(len(t.calibrations) for t in targets)
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
            metrics = {m: float(classic.get(m, np.nan)) for m in CLASSIC_METRICS}
            result = EvalResult(
                strategy=strategy,
                classifier=classifier,
                iteration=split.iteration,
                seed=split.seed,
                user=target.user,
                n_train=len(split.train),
                n_test=n_test,
                n_cal=len(cal),
                metrics=metrics,
                rows=target.test,
                y_pred=y_pred,
                sets=None,
                pvalues=None,
                proba=proba_test,
                timings=dict(shared),
            )
            grouped = None if groups is None else (groups, cal, target.test)
            _conformal_step(result, proba_cal, y[cal], y[target.test], config, grouped)
            out.append(result)
    return out


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
    grouped: tuple[RowGroups, np.ndarray, np.ndarray] | None = None,
) -> None:
    """Conformalize ``result``'s test rows on one calibration set and fill in its
    sets, p-values, threshold, conformal metrics, note and timings (in place).

    ``grouped``: the row groups and the calibration and test row positions, for
    group-conditional calibration."""
    from mueval.conformal.sets import full_sets
    from mueval.metrics.conformal import study_conformal_metrics, textbook_criteria

    metrics = result.metrics
    conf = None
    clock = time.perf_counter()
    try:
        conf = _conformalize(result, proba_cal, y_cal, config, grouped)
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
            conf = full_sets(proba_cal, y_cal, result.proba, score=config.score)
    result.timings["conformal_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    if conf is not None and conf.note:
        result.note = (
            f"{_where(result.strategy, result.user, result.seed, result.classifier)}: {conf.note}"
        )
    if conf is not None and grouped is not None:
        result.n_cal = conf.n_cal  # the calibration rows of the test rows' groups
    if conf is not None and config.conditioning.per_class:
        result.n_cal_cell = _smallest_cell(y_cal, result.proba.shape[1], grouped)
    if conf is not None:
        pvalues = conf.pvalues
        study = study_conformal_metrics(y_test, conf.sets, pvalues)
        textbook = textbook_criteria(y_test, pvalues)
        for m in CONFORMAL_METRICS:
            metrics[m] = float(study.get(m, textbook.get(m, np.nan)))
        if not config.pvalues_describe_sets:
            # MAPIE's own aps/raps/top_k sets: no p-value describes them.
            metrics.update(dict.fromkeys(PVALUE_METRICS, float("nan")))
            pvalues = np.full(pvalues.shape, np.nan)
        result.sets, result.pvalues, result.threshold = conf.sets, pvalues, conf.threshold
    result.timings["metrics_s"] += time.perf_counter() - clock


def _conformalize(result, proba_cal, y_cal, config, grouped):
    """Sets and p-values of ``result``'s test rows: unconditional or per class
    (:func:`~mueval.conformal.sets.conformalize`), or per group of users
    (:func:`~mueval.conformal.sets.conformalize_groups`)."""
    from mueval.conformal.sets import conformalize, conformalize_groups

    options = {
        "alpha": config.alpha,
        "score": config.score,
        "mondrian": config.conditioning.per_class,
        "threshold": config.threshold,
        "seed": result.seed,
    }
    if grouped is None:
        return conformalize(proba_cal, y_cal, result.proba, **options)
    groups, cal, test = grouped
    return conformalize_groups(
        proba_cal,
        y_cal,
        groups.codes[cal],
        result.proba,
        groups.codes[test],
        small_groups="full-set" if config.small_cal == "full-set" else "error",
        group_names=groups.names,
        **options,
    )


def build_splits(
    y: np.ndarray, users: np.ndarray, config: EvalConfig, classes: Sequence[str]
) -> list[Split]:
    """Every split of every iteration, in (iteration, strategy, user) order."""
    splits: list[Split] = []
    for iteration in range(1, config.iterations + 1):
        splits += make_splits(
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
        )
    return splits


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
        from tqdm import tqdm

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
    groups: RowGroups | None = None,
    on_task: Callable[[list[EvalResult]], None] | None = None,
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
        Parallel workers for the loky backend (1 = in this process).
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
    groups : RowGroups, optional
        The group of every row; required when ``config.condition`` has a group.
    on_task : callable, optional
        Called in this process with each task's results, in the order the
        tasks were made (not the order they finish), whatever ``jobs`` and
        ``backend``: a stream of predictions written from it is the same file
        for any number of workers.

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
    if workers is not None and workers < 1:
        message = f"workers must be at least 1, got {workers}"
        raise UsageError(message)
    if config.conditioning.by_group != (groups is not None):
        message = (
            f"condition {config.condition!r} needs the group of every row"
            if groups is None
            else "groups were given but the condition has no group (group:COLUMN)"
        )
        raise UsageError(message)
    X = np.ascontiguousarray(X, dtype=float)
    y = np.asarray(y, dtype=int)
    users = np.asarray(users)
    n_classes = len(classes)
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    splits = build_splits(y, users, config, classes)
    tasks = [(s, c) for s in splits for c in config.classifiers]
    timings["splits_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    if backend == "dask":
        if workers is None:
            workers = jobs if jobs > 1 else (os.cpu_count() or 1)
        nested = _run_dask(
            X, y, n_classes, tasks, config, scheduler, progress, workers, groups, on_task
        )
    elif jobs == 1:
        gen = (run_task(X, y, n_classes, s, c, config, groups=groups) for s, c in tasks)
        nested = _collect(_progress(gen, len(tasks), progress), on_task)
    else:
        from joblib import Parallel, delayed

        # Ordered generator (joblib >= 1.3); the order does not matter, results are
        # sorted by key below.
        parallel = Parallel(n_jobs=jobs, backend="loky", return_as="generator")
        gen = parallel(
            delayed(run_task)(X, y, n_classes, s, c, config, groups=groups) for s, c in tasks
        )
        nested = _collect(_progress(gen, len(tasks), progress), on_task)
    timings["tasks_s"] = time.perf_counter() - t0

    results = sorted((r for group in nested for r in group), key=lambda r: r.key)
    notes = [r.note for r in results if r.note]
    if not config.pvalues_describe_sets:
        notes.insert(0, config.pvalue_note())
    if config.user_folds_note() is not None:
        notes.insert(0, config.user_folds_note())
    if "uxc" in config.strategies:
        from mueval.evaluation.crossconformal import cross_note

        notes.insert(0, cross_note(config.user_folds))
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
    grouped: tuple[RowGroups, np.ndarray, np.ndarray] | None,
) -> int:
    """The fewest calibration rows of a class (within one of the test rows'
    groups, under a group condition): the smallest cell a threshold came from."""
    if grouped is None:
        return int(np.bincount(y_cal, minlength=n_classes).min())
    groups, cal, test = grouped
    cal_codes = groups.codes[cal]
    return min(
        int(np.bincount(y_cal[cal_codes == g], minlength=n_classes).min())
        for g in np.unique(groups.codes[test])
    )


def _collect(
    results: Iterable[list[EvalResult]], on_task: Callable[[list[EvalResult]], None] | None
) -> list[list[EvalResult]]:
    """Every task's results, each handed to ``on_task`` as it arrives."""
    nested = []
    for group in results:
        if on_task is not None:
            on_task(group)
        nested.append(group)
    return nested


def _run_dask(
    X, y, n_classes, tasks, config, scheduler, progress, workers, groups=None, on_task=None
):
    """Run the tasks on a Dask cluster: the one at ``scheduler``, or a local one.

    The table is scattered once to every worker (not shipped with each task).
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # optional dependency
        message = "the dask backend needs dask.distributed: pip install 'dask[distributed]'"
        raise UsageError(message) from exc
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout=30, set_as_default=False)
        else:
            # One thread per worker process: the tasks are CPU-bound Python and
            # numpy, and each limits its own OpenMP threads to one.
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
        futures = [
            client.submit(run_task, X_f, y_f, n_classes, s, c, config, groups=groups, pure=False)
            for s, c in tasks
        ]
        # In submission order (as_completed would need a default client); the
        # results are sorted by key afterwards anyway.
        nested = _collect((f.result() for f in _progress(futures, len(futures), progress)), on_task)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return nested
