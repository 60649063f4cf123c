"""The conformal half of a task: each result of a fit filled in with its sets,
p-values, threshold, conformal metrics and calibration cells.

The sets come from :func:`mueval.conformal.step.conformal_step`, which also
applies ``--small-cal``; here is what an evaluation records of them
(:class:`~mueval.evaluation.records.EvalResult`), and the sharing of one
calibration set's work between the targets that calibrate on it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from mueval.conformal.sets import ConformalOutput
from mueval.conformal.step import CohortRows, StepOutcome, conformal_sets, conformal_step
from mueval.data.cohorts import RowCohorts
from mueval.errors import EvaluationError
from mueval.evaluation.config import EvalConfig
from mueval.evaluation.pooled_order import pooled_order
from mueval.evaluation.records import EvalResult, Split, Target
from mueval.metrics.conformal import conformal_metrics
from mueval.names import CONFORMAL_METRICS, PVALUE_METRICS

__all__ = ["fill_sets", "shared_calibrations", "task_label"]

#: A shared calibration's sets: (that target's :class:`ConformalOutput`, its seconds).
Shared = tuple[ConformalOutput, float]


def task_label(strategy: str, user: int | str | None, seed: int, classifier: str) -> str:
    """Where a task's message comes from: its strategy, user, seed and classifier."""
    who = "all users" if user is None else f"user {user}"
    return f"strategy {strategy}, {who}, seed {seed}, classifier {classifier}"


def shared_calibrations(
    targets: Sequence[Target | Split],
    proba_all: np.ndarray,
    offsets: dict[int, int],
    y: np.ndarray,
    config: EvalConfig,
    cohorts: RowCohorts | None,
) -> dict[tuple[str, int, int], Shared]:
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
    settings = config.conformal
    if settings.threshold != "study" or cohorts is not None or settings.randomized:
        # A randomised score draws per test row: each target draws its own.
        return {}
    groups: dict[tuple[str, int], list[tuple[Target | Split, np.ndarray]]] = {}
    for target in targets:
        for strategy, cal in target.calibrations.items():
            groups.setdefault((strategy, id(cal)), []).append((target, cal))
    shared: dict[tuple[str, int, int], Shared] = {}
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
            conf = conformal_sets(proba_cal, y[cal], proba_test, settings, seed=None)
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


def fill_sets(
    result: EvalResult,
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    y_test: np.ndarray,
    config: EvalConfig,
    cohort_rows: CohortRows | None = None,
    given: Shared | None = None,
) -> None:
    """Conformalize ``result``'s test rows on one calibration set and fill in its
    sets, p-values, threshold, conformal metrics, note and timings (in place).

    ``cohort_rows``: the rows' cohorts, for cohort-conditional calibration.
    ``given``: the sets and p-values already computed with other targets of the
    same calibration set (:func:`shared_calibrations`), and the seconds they took.
    """
    assert result.proba is not None  # a result is conformalized before it is written
    settings = config.conformal
    clock = time.perf_counter()
    if given is not None:
        outcome = StepOutcome(given[0])
    else:
        where = task_label(result.strategy, result.user, result.seed, result.classifier)
        outcome = conformal_step(
            proba_cal,
            y_cal,
            result.proba,
            settings,
            seed=result.seed,
            where=where,
            cohort_rows=cohort_rows,
        )
    shared_s = 0.0 if given is None else given[1]
    result.timings["conformal_s"] = time.perf_counter() - clock + shared_s
    clock = time.perf_counter()
    if outcome.note is not None:
        result.note = outcome.note
    conf = outcome.output
    if conf is None:
        # Skipped (--small-cal skip): no sets, NaN conformal metrics.
        result.metrics.update({m: float("nan") for m in CONFORMAL_METRICS})
        result.timings["metrics_s"] += time.perf_counter() - clock
        return
    n_classes = result.proba.shape[1]
    if cohort_rows is not None:
        result.n_cal = conf.n_cal  # the calibration rows of the test rows' cohorts
    if _stratified_null_applies(config, cohort_rows, result.note):
        result.pooled_order = pooled_order(
            result.strategy, proba_cal, y_cal, result.proba, y_test, settings.conformity
        )
    if settings.conditioning.per_class:
        result.n_cal_cell = _smallest_cell(y_cal, n_classes, cohort_rows)
        result.n_cal_class = _class_cells(y_cal, n_classes, cohort_rows)
    pvalues = conf.pvalues
    result.metrics.update(conformal_metrics(y_test, conf.sets, pvalues))
    if not settings.pvalues_describe_sets:
        # MAPIE's own aps/raps/top_k sets: no p-value describes them.
        result.metrics.update(dict.fromkeys(PVALUE_METRICS, float("nan")))
        pvalues = np.full(pvalues.shape, np.nan)
    result.sets, result.pvalues, result.threshold = conf.sets, pvalues, conf.threshold
    result.timings["metrics_s"] += time.perf_counter() - clock


def _stratified_null_applies(
    config: EvalConfig, cohort_rows: CohortRows | None, note: str | None
) -> bool:
    """Whether a task's pooled score order is recorded (:mod:`.pooled_order`): a
    random split, one unconditional threshold, sets the p-values describe, and
    no full-set answer (``note``)."""
    return (
        config.split == "random"
        and cohort_rows is None
        and not config.conformal.conditioning.per_class
        and config.conformal.pvalues_describe_sets
        and note is None
    )


def _smallest_cell(y_cal: np.ndarray, n_classes: int, cohort_rows: CohortRows | None) -> int:
    """The fewest calibration rows of a class (within one of the test rows'
    cohorts, under a cohort condition): the smallest cell a threshold came from."""
    if cohort_rows is None:
        return int(np.bincount(y_cal, minlength=n_classes).min())
    codes = cohort_rows.cohorts.codes
    cal_codes = codes[cohort_rows.cal]
    return min(
        int(np.bincount(y_cal[cal_codes == g], minlength=n_classes).min())
        for g in np.unique(codes[cohort_rows.test])
    )


def _class_cells(
    y_cal: np.ndarray, n_classes: int, cohort_rows: CohortRows | None
) -> tuple[int, ...] | None:
    """Calibration rows per class of the cell that thresholded the test rows (within
    their cohort), or None when the test rows span several cohorts."""
    if cohort_rows is None:
        return tuple(int(n) for n in np.bincount(y_cal, minlength=n_classes))
    codes = cohort_rows.cohorts.codes
    present = np.unique(codes[cohort_rows.test])
    if len(present) != 1:
        return None
    own = y_cal[codes[cohort_rows.cal] == present[0]]
    return tuple(int(n) for n in np.bincount(own, minlength=n_classes))
