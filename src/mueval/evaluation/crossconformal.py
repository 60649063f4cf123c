"""UXC, the user cross-conformal strategy: the other users are the folds.

For a target user ``t`` the non-target users are cut into folds: one fold per
user (leave-one-user-out over the others, the default) or ``K`` grouped folds
(``--user-folds K``, :func:`mueval.evaluation.splits.user_folds` over the non-target
users). For each fold ``k`` a model ``f_-k`` is trained on the non-target users
outside the fold and scores the fold's rows at their true class: every
non-target row gets one out-of-fold score, and no row of the target user ever
calibrates. A test row ``x`` of the target and a candidate class ``y`` get the
cross-conformal p-value (Vovk 2015)::

    p(x, y) = (1 + sum_k #{i in fold k : s_i >= s_k(x, y)}) / (n + 1)

with ``s_k(x, y)`` the score of ``(x, y)`` under the fold's own model ``f_-k``
and ``n`` the number of non-target rows. The set is ``{y : p(x, y) > alpha}``,
which is the CV+ set of Barber et al. (2021) and Romano et al. (2020). With a
single fold it is split conformal under MAPIE 1.x's rank rule (the
``ceil((n+1)(1-alpha))``-th smallest score); the study's threshold rule has no
cross-conformal form, so ``--threshold`` does not apply to UXC.

The point prediction and the stored probabilities come from one more model,
trained on every non-target row; the test rows are UIM's and UCM's (the
target's first stratified half, or its later block), so the three strategies
are compared on the same rows. See ``docs/per-user-guarantees.md`` for the
guarantee and its gap against UCM.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mueval.errors import EvaluationError, SmallCalibrationError, SplitError, UsageError
from mueval.evaluation.splits import (
    Split,
    _describe,
    _plain,
    _split,
    blocked_parts,
    each_user,
    user_folds,
)

if TYPE_CHECKING:  # the runner imports this module inside its functions
    from mueval.evaluation.runner import EvalConfig, EvalResult

__all__ = [
    "CrossSplit",
    "cross_conformal_pvalues",
    "cross_note",
    "cross_user_splits",
    "evaluate_cross_split",
]

#: The strategy code (``mueval.names.STRATEGIES``).
CODE = "uxc"


@dataclass(frozen=True)
class CrossSplit(Split):
    """A UXC split: the target model's rows plus the calibration folds.

    ``train`` holds every non-target row, ``calibrations["uxc"]`` the same rows
    in fold order, and ``folds`` the rows of each fold; the model of fold ``k``
    is trained on ``train`` without ``folds[k]``.
    """

    folds: tuple[np.ndarray, ...] = ()


def cross_conformal_pvalues(
    cal_scores: Sequence[np.ndarray],
    test_scores: Sequence[np.ndarray],
    y_cal: Sequence[np.ndarray] | None = None,
) -> np.ndarray:
    """Cross-conformal p-values pooled over folds.

    ``p[r, c] = (1 + sum_k #{i in k : cal_k[i] >= test_k[r, c]}) / (n + 1)``,
    ``n`` the number of calibration scores over all folds. With ``y_cal``
    (Mondrian), class ``c`` counts only the calibration rows of class ``c``
    and ``n`` is their number.

    Parameters
    ----------
    cal_scores : sequence of ndarray, each of shape (n_k,)
        Out-of-fold scores of each fold's rows at their true class.
    test_scores : sequence of ndarray, each of shape (n_test, K)
        Every test row's score for every class under each fold's model.
    y_cal : sequence of ndarray of int, each of shape (n_k,), optional
        True classes of each fold's rows, for class-conditional p-values.

    Returns
    -------
    ndarray of shape (n_test, K)
        Values in ``[1/(n+1), 1]``.

    Examples
    --------
    Two folds; fold 1's model gives the test row scores 0.5 and 0.9, fold 2's
    0.2 and 0.8:

    >>> p = cross_conformal_pvalues(
    ...     [np.array([0.1, 0.6]), np.array([0.3])],
    ...     [np.array([[0.5, 0.9]]), np.array([[0.2, 0.8]])],
    ... )
    >>> p.tolist()   # (1 + 1 + 1) / 4 and (1 + 0 + 0) / 4
    [[0.75, 0.25]]
    """
    if len(cal_scores) != len(test_scores) or not cal_scores:
        message = (
            f"need one test-score array per calibration fold, got {len(cal_scores)} folds "
            f"and {len(test_scores)} test-score arrays"
        )
        raise UsageError(message)
    shape = np.shape(test_scores[0])
    counts = np.zeros(shape, dtype=float)
    totals = np.zeros(shape[1], dtype=float)
    for k, (cal, test) in enumerate(zip(cal_scores, test_scores, strict=True)):
        cal = np.asarray(cal, dtype=float)
        test = np.asarray(test, dtype=float)
        if test.shape != shape:
            message = f"fold {k}: test scores of shape {test.shape}, expected {shape}"
            raise UsageError(message)
        for c in range(shape[1]):
            own = cal if y_cal is None else cal[np.asarray(y_cal[k]) == c]
            ordered = np.sort(own)
            # n - searchsorted(left) counts the scores >= s on the same floats a
            # brute-force comparison would use, ties included.
            counts[:, c] += len(ordered) - np.searchsorted(ordered, test[:, c], side="left")
            totals[c] += len(ordered)
    return (counts + 1.0) / (totals + 1.0)


def _fold_users(
    others: np.ndarray, users: np.ndarray, n_folds: int | None, seed: int
) -> list[np.ndarray]:
    """The users of each calibration fold among the non-target users."""
    unique = np.unique(users[others])
    if n_folds is None:
        return [np.array([u]) for u in unique]
    if n_folds > len(unique):
        message = (
            f"uxc: --user-folds {n_folds} exceeds the {len(unique)} non-target users "
            "(uxc cuts the users other than the target into the folds)"
        )
        raise UsageError(message)
    return user_folds(users[others], n_folds, seed)


def cross_user_splits(
    y: np.ndarray,
    users: np.ndarray,
    iteration: int,
    seed: int,
    *,
    n_folds: int | None = None,
    classes: Sequence[str] | None = None,
    split: str = "random",
    gap: int = 1,
) -> list[CrossSplit]:
    """One :class:`CrossSplit` per target user, users ascending.

    Parameters
    ----------
    y : ndarray of shape (n_rows,)
        Integer labels.
    users : ndarray of shape (n_rows,)
        User id of each row.
    iteration, seed : int
        1-based iteration and its seed (the target's test half, the folds).
    n_folds : int, optional
        Grouped folds over the non-target users; None: one fold per user.
    classes : sequence of str, optional
        Class names for error messages.
    split : {"random", "blocked"}
        How the target's test rows are chosen, as for UIM and UCM.
    gap : int
        Rows between blocks (``split="blocked"``).

    Returns
    -------
    list of CrossSplit
    """
    if len(np.unique(users)) < 3:
        message = (
            f"uxc needs at least 3 users (2 calibration folds besides the target), "
            f"got {len(np.unique(users))}"
        )
        raise SplitError(message)
    out = []
    for user, others, own in each_user(users):
        what = f"uxc, user {user}"
        if split == "blocked":
            # The later block, as UIM and UCM test on.
            _, test = blocked_parts(own, y, 0.5, 2, gap, what=what, classes=classes)
        else:
            # The same call as UIM/UCM's, so the test rows are theirs.
            test, _ = _split(own, y, 0.5, seed, what=what, classes=classes)
        folds = tuple(
            others[np.isin(users[others], fold)]
            for fold in _fold_users(others, users, n_folds, seed)
        )
        for k, fold in enumerate(folds):
            rest = np.setdiff1d(others, fold)
            if len(np.unique(y[rest])) < 2:
                message = (
                    f"{what}: without fold {k + 1} ({_describe(y[fold], classes)}) the "
                    f"training rows hold only one class ({_describe(y[rest], classes)})"
                )
                raise SplitError(message)
        cal = np.concatenate(folds)
        out.append(
            CrossSplit(iteration, seed, _plain(user), others, test, {CODE: cal}, folds=folds)
        )
    return out


def cross_note(n_folds: int | None) -> str:
    """The run note that says how UXC calibrates."""
    folds = (
        "one fold per other user"
        if n_folds is None
        else f"{n_folds} grouped folds of the other users"
    )
    return (
        f"uxc: cross-conformal p-values over {folds} (out-of-fold scores of every "
        "non-target row); sets are {y : p > alpha}, the rank rule of --threshold mapie, "
        "whatever --threshold says; point predictions from a model trained on every "
        "non-target row"
    )


def _fold_scores(
    X: np.ndarray, y: np.ndarray, n_classes: int, split: CrossSplit, classifier: str, score: str
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Fit each fold's model; return its calibration and test scores and labels."""
    from mueval.conformal.sets import class_scores
    from mueval.evaluation.models import fit_scaled, full_proba

    cal_scores, test_scores, labels = [], [], []
    for fold in split.folds:
        rest = np.setdiff1d(split.train, fold)
        scaler, model = fit_scaled(classifier, split.seed, X[rest], y[rest])
        proba = full_proba(
            model, scaler.transform(X[np.concatenate([fold, split.test])]), n_classes
        )
        cal_scores.append(class_scores(proba[: len(fold)], score)[np.arange(len(fold)), y[fold]])
        test_scores.append(class_scores(proba[len(fold) :], score))
        labels.append(y[fold])
    return cal_scores, test_scores, labels


def _conformal_metrics(y_test: np.ndarray, sets: np.ndarray, pvalues: np.ndarray) -> dict:
    """The conformal metrics of :data:`mueval.names.CONFORMAL_METRICS`."""
    from mueval.metrics.conformal import study_conformal_metrics, textbook_criteria
    from mueval.names import CONFORMAL_METRICS

    study = study_conformal_metrics(y_test, sets, pvalues)
    textbook = textbook_criteria(y_test, pvalues)
    return {m: float(study.get(m, textbook.get(m, np.nan))) for m in CONFORMAL_METRICS}


def _cross_sets(
    pvalues: np.ndarray, n_cal: int, config: EvalConfig, where: str
) -> tuple[np.ndarray | None, str | None]:
    """Sets from the p-values, or the ``--small-cal`` answer to too few rows."""
    from mueval.conformal.sets import min_calibration_size

    if config.conditioning.per_class or n_cal >= min_calibration_size(config.alpha):
        return pvalues > config.alpha, None
    message = (
        f"{where}: calibration set of {n_cal} rows is smaller than "
        f"{min_calibration_size(config.alpha)} = max(1/alpha, 1/(1-alpha)) at "
        f"alpha={config.alpha}"
    )
    if config.small_cal == "error":
        hint = " (use --small-cal skip or --small-cal full-set)"
        raise SmallCalibrationError(message + hint)
    if config.small_cal == "skip":
        return None, message
    return np.ones(pvalues.shape, dtype=bool), f"{message}; answered with the full set"


def evaluate_cross_split(
    X: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    split: CrossSplit,
    classifier: str,
    config: EvalConfig,
) -> list[EvalResult]:
    """Fit the target's model and every fold's model; conformalize the test rows.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of int, shape (n_rows,)
    n_classes : int
    split : CrossSplit
    classifier : str
    config : mueval.evaluation.runner.EvalConfig

    Returns
    -------
    list of mueval.evaluation.runner.EvalResult
        One, for ``uxc``.
    """
    from mueval.evaluation.models import fit_scaled, full_proba
    from mueval.evaluation.runner import EvalResult
    from mueval.metrics.classic import classification_metrics
    from mueval.names import CLASSIC_METRICS, CONFORMAL_METRICS

    where = f"strategy uxc, user {split.user}, seed {split.seed}, classifier {classifier}"
    clock = time.perf_counter()
    try:
        scaler, model = fit_scaled(classifier, split.seed, X[split.train], y[split.train])
        X_test = scaler.transform(X[split.test])
        proba = full_proba(model, X_test, n_classes)
        y_pred = np.asarray(model.predict(X_test), dtype=int)
        fit_s = time.perf_counter() - clock
        clock = time.perf_counter()
        cal_scores, test_scores, labels = _fold_scores(
            X, y, n_classes, split, classifier, config.score
        )
    except ValueError as exc:
        message = f"{where}: model fit failed: {exc}"
        raise EvaluationError(message) from exc
    fold_s = time.perf_counter() - clock
    clock = time.perf_counter()
    pvalues = cross_conformal_pvalues(
        cal_scores, test_scores, labels if config.conditioning.per_class else None
    )
    n_cal = sum(len(c) for c in cal_scores)
    sets, note = _cross_sets(pvalues, n_cal, config, where)
    conformal_s = time.perf_counter() - clock
    clock = time.perf_counter()
    y_test = y[split.test]
    classic = classification_metrics(y_test, y_pred, n_classes)
    metrics = {m: float(classic.get(m, np.nan)) for m in CLASSIC_METRICS}
    if sets is None:
        metrics.update(dict.fromkeys(CONFORMAL_METRICS, float("nan")))
        pvalues = None
    else:
        metrics.update(_conformal_metrics(y_test, sets, pvalues))
    result = EvalResult(
        strategy=CODE,
        classifier=classifier,
        iteration=split.iteration,
        seed=split.seed,
        user=split.user,
        n_train=len(split.train),
        n_test=len(split.test),
        n_cal=n_cal,
        metrics=metrics,
        rows=split.test,
        y_pred=y_pred,
        sets=sets,
        pvalues=pvalues,
        proba=proba,
        note=note,
        # The fold models' fits count as fitting; their scores as conformal work.
        timings={
            "fit_s": fit_s + fold_s,
            "predict_s": 0.0,
            "conformal_s": conformal_s,
            "metrics_s": time.perf_counter() - clock,
        },
    )
    return [result]
