"""UXC, the user cross-conformal strategy: the other users are the folds.

For a target user ``t`` the non-target users are cut into folds: one fold per
user (leave-one-user-out over the others, the default) or ``K`` grouped folds
(``--user-folds K``, :func:`mueval.evaluation.user_folds.user_folds` over the
non-target users; :func:`mueval.evaluation.cross_user.cross_user_splits` makes
the splits). For each fold ``k`` a model ``f_-k`` is trained on the non-target
users outside the fold and scores the fold's rows at their true class: every
non-target row gets one out-of-fold score, and no row of the target user ever
calibrates. A test row ``x`` of the target and a candidate class ``y`` get the
cross-conformal p-value (Vovk 2015)::

    p(x, y) = (1 + sum_k #{i in fold k : s_i >= s_k(x, y)}) / (n + 1)

with ``s_k(x, y)`` the score of ``(x, y)`` under the fold's own model ``f_-k``
and ``n`` the number of non-target rows. The set is ``{y : p(x, y) > alpha}``,
which is the CV+ set of Barber et al. (2021) and Romano et al. (2020). With a
single fold it is split conformal at MAPIE 1.x's rank (the
``ceil((n+1)(1-alpha))``-th smallest score), but without ``--threshold mapie``'s
1e-8 inclusion tolerance: a score within 1e-8 above the threshold (Naive Bayes
probabilities near 0 and 1) is kept by ``--threshold mapie`` and not by
``{p > alpha}``. The study's threshold rule has no cross-conformal form, so
``--threshold`` does not apply to UXC.

The point prediction and the stored probabilities come from one more model,
trained on every non-target row; the test rows are UIM's and UCM's (the
target's first stratified half, or its later block), so the three strategies
are compared on the same rows. See ``docs/per-user-guarantees.md`` for the
guarantee and its gap against UCM.
"""

from __future__ import annotations

import time

import numpy as np

from mueval.conformal.pvalues import cross_conformal_pvalues
from mueval.conformal.scores import class_scores
from mueval.conformal.thresholds import min_calibration_size
from mueval.errors import EvaluationError, SmallCalibrationError
from mueval.evaluation.models import fit_scaled, full_proba
from mueval.evaluation.records import CrossSplit, EvalConfig, EvalResult
from mueval.metrics.classic import classification_metrics
from mueval.metrics.conformal import conformal_metrics

__all__ = ["cross_note", "evaluate_cross_split"]

#: The strategy code (``mueval.names.STRATEGIES``).
CODE = "uxc"


def cross_note(n_folds: int | None) -> str:
    """The run note that says how UXC calibrates."""
    folds = (
        "one fold per other user"
        if n_folds is None
        else f"{n_folds} grouped folds of the other users"
    )
    return (
        f"uxc: cross-conformal p-values over {folds} (out-of-fold scores of every "
        "non-target row); sets are {y : p > alpha} (MAPIE 1.x's rank, without --threshold "
        "mapie's 1e-8 inclusion tolerance), whatever --threshold says; point predictions "
        "from a model trained on every non-target row"
    )


def _fold_scores(
    X: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    split: CrossSplit,
    classifier: str,
    config: EvalConfig,
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Fit each fold's model; return its calibration and test scores and labels."""
    cal_scores, test_scores, labels = [], [], []
    for fold in split.folds:
        rest = np.setdiff1d(split.train, fold)
        scaler, model = fit_scaled(classifier, split.seed, X[rest], y[rest], config.user_models)
        proba = full_proba(
            model, scaler.transform(X[np.concatenate([fold, split.test])]), n_classes
        )
        scores = class_scores(proba[: len(fold)], config.conformal.conformity)
        cal_scores.append(scores[np.arange(len(fold)), y[fold]])
        test_scores.append(class_scores(proba[len(fold) :], config.conformal.conformity))
        labels.append(y[fold])
    return cal_scores, test_scores, labels


def _cross_sets(
    pvalues: np.ndarray, n_cal: int, config: EvalConfig, where: str
) -> tuple[np.ndarray | None, str | None]:
    """Sets from the p-values, or the ``--small-cal`` answer to too few rows."""
    if config.conformal.conditioning.per_class or n_cal >= min_calibration_size(
        config.conformal.alpha
    ):
        return pvalues > config.conformal.alpha, None
    message = (
        f"{where}: calibration set of {n_cal} rows is smaller than "
        f"{min_calibration_size(config.conformal.alpha)} = max(1/alpha, 1/(1-alpha)) at "
        f"alpha={config.conformal.alpha}"
    )
    if config.conformal.small_cal == "error":
        hint = " (use --small-cal skip or --small-cal full-set)"
        raise SmallCalibrationError(message + hint)
    if config.conformal.small_cal == "skip":
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
    config : mueval.evaluation.records.EvalConfig

    Returns
    -------
    list of mueval.evaluation.records.EvalResult
        One, for ``uxc``.
    """
    where = f"strategy uxc, user {split.user}, seed {split.seed}, classifier {classifier}"
    clock = time.perf_counter()
    try:
        scaler, model = fit_scaled(
            classifier, split.seed, X[split.train], y[split.train], config.user_models
        )
        X_test = scaler.transform(X[split.test])
        proba = full_proba(model, X_test, n_classes)
        y_pred = np.asarray(model.predict(X_test), dtype=int)
        fit_s = time.perf_counter() - clock
        clock = time.perf_counter()
        cal_scores, test_scores, labels = _fold_scores(X, y, n_classes, split, classifier, config)
    except ValueError as exc:
        message = f"{where}: model fit failed: {exc}"
        raise EvaluationError(message) from exc
    fold_s = time.perf_counter() - clock
    clock = time.perf_counter()
    pvalues = cross_conformal_pvalues(
        cal_scores, test_scores, labels if config.conformal.conditioning.per_class else None
    )
    n_cal = sum(len(c) for c in cal_scores)
    sets, note = _cross_sets(pvalues, n_cal, config, where)
    conformal_s = time.perf_counter() - clock
    clock = time.perf_counter()
    y_test = y[split.test]
    result = EvalResult.of_rows(
        split,
        strategy=CODE,
        classifier=classifier,
        user=split.user,
        rows=split.test,
        n_cal=n_cal,
        classic=classification_metrics(y_test, y_pred, n_classes),
        y_pred=y_pred,
        proba=proba,
        timings={},
        note=note,
    )
    result.metrics.update(conformal_metrics(y_test, sets, pvalues))
    if sets is not None:
        result.sets, result.pvalues = sets, pvalues
    # The fold models' fits count as fitting; their scores as conformal work.
    result.timings = {
        "fit_s": fit_s + fold_s,
        "predict_s": 0.0,
        "conformal_s": conformal_s,
        "metrics_s": time.perf_counter() - clock,
    }
    return [result]
