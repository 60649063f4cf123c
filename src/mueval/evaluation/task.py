"""One task of an evaluation: one model fit per (split, classifier), then every
target and strategy the split serves.

A task is one :class:`~mueval.evaluation.records.Split` (a strategy group, a seed
and a target user or none) with one classifier. It fits the scaler and the model
once, calls ``predict_proba`` once on every calibration and test row and
``predict`` once on the test rows, then conformalizes once per strategy the split
serves (UIM and UCM of one user and seed share a task;
:mod:`mueval.evaluation.task_sets`). Where the tasks run is
:mod:`mueval.evaluation.runner`'s and :mod:`mueval.evaluation.backends`' concern.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from threadpoolctl import ThreadpoolController

from mueval.conformal.step import CohortRows
from mueval.data.cohorts import RowCohorts
from mueval.errors import EvaluationError
from mueval.evaluation.clustered import choose_calibration, true_class_scores
from mueval.evaluation.config import EvalConfig
from mueval.evaluation.crossconformal import evaluate_cross_split
from mueval.evaluation.hooks import FitPredictClassifier
from mueval.evaluation.models import fit_scaled, full_proba
from mueval.evaluation.records import CrossSplit, EvalResult, Split, Target
from mueval.evaluation.task_sets import fill_sets, shared_calibrations, task_label
from mueval.metrics.classic import classification_metrics

__all__ = ["run_task"]


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


def _evaluate_split(
    X: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    split: Split,
    classifier: str,
    config: EvalConfig,
    cohorts: RowCohorts | None = None,
) -> list[EvalResult]:
    """The body of :func:`run_task`: one fit, then every target and strategy."""
    if isinstance(split, CrossSplit):
        # UXC fits one model per calibration fold (mueval.evaluation.crossconformal).
        return evaluate_cross_split(X, y, n_classes, split, classifier, config)
    clock = time.perf_counter()
    try:
        scaler, model = fit_scaled(
            classifier, split.seed, X[split.train], y[split.train], config.user_models
        )
    except ValueError as exc:
        where = task_label("/".join(split.strategies), split.user, split.seed, classifier)
        message = f"{where}: model fit failed: {exc}"
        raise EvaluationError(message) from exc
    targets = split.served()
    offsets, eval_rows = _eval_layout(targets)
    X_eval = scaler.transform(X[eval_rows])
    fit_s = time.perf_counter() - clock
    clock = time.perf_counter()
    # One predict_proba over every row any target's calibration or test set needs.
    proba_all = full_proba(model, X_eval, n_classes)
    _refuse_non_finite(proba_all, split, classifier)
    # The point prediction is the model's own predict() (for SVC the decision
    # function, not argmax of predict_proba), as in the reference; the test
    # rows of every target come first in eval_rows.
    n_tests = sum(len(t.test) for t in targets)
    y_pred_all = _point_predictions(model, X_eval[:n_tests], proba_all[:n_tests])
    predict_s = time.perf_counter() - clock
    # The fit and the predictions serve every (target, strategy): share them.
    n_results = sum(len(t.calibrations) for t in targets)
    shared_conf = shared_calibrations(targets, proba_all, offsets, y, config, cohorts)
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
            cohort_rows = None if cohorts is None else CohortRows(cohorts, cal, target.test)
            given = shared_conf.get((strategy, id(cal), id(target.test)))
            fill_sets(result, proba_cal, y_cal, y[target.test], config, cohort_rows, given)
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
    score = config.conformal.conformity
    choice = choose_calibration(
        true_class_scores(proba_own, y_own, score),
        true_class_scores(proba_pool, y_pool, score),
        pool_users,
        alpha=config.conformal.alpha,
        min_own=config.min_own,
        n_clusters=config.clusters,
        seed=split.seed,
        assign=config.assign,
    )
    if choice.how == "own":
        # UCM's rows as they are: the same floats, so the same threshold.
        return proba_own, y_own
    return proba_pool[choice.rows - len(y_own)], y_pool[choice.rows - len(y_own)]


def _point_predictions(model: Any, X_test: np.ndarray, proba_test: np.ndarray) -> np.ndarray:
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
        return np.asarray(np.argmax(proba_test, axis=1), dtype=int)
    return np.asarray(model.predict(X_test), dtype=int)


def _eval_layout(targets: Sequence[Target | Split]) -> tuple[dict[int, int], np.ndarray]:
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


def _refuse_non_finite(proba: np.ndarray, split: Split, classifier: str) -> None:
    """Refuse class probabilities that are NaN or infinite, naming the task and a cause.

    Without this, the conformal step refused its own scores ("cal_scores must be
    finite") with no word of which model, split or feature did it.
    """
    bad = ~np.isfinite(proba).all(axis=1)
    if not bad.any():
        return
    where = task_label("/".join(split.strategies), split.user, split.seed, classifier)
    message = (
        f"{where}: the model's class probabilities are not finite (NaN or infinite) in "
        f"{int(bad.sum())} of {len(proba)} rows; a feature constant over the training rows "
        "(naive Bayes divides by each feature's variance) or values near the float limit "
        "can do this: drop such features, or choose another classifier"
    )
    raise EvaluationError(message)
