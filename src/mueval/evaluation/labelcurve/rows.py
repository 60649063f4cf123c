"""How many labelled windows does a new user need? Coverage, set size and
accuracy against ``k`` labelled windows of the target user.

For each target user and iteration (seed ``seed_base + i``):

1. **Test rows first.** The target's rows are split once (stratified when every
   class allows it) into the test rows and a pool of ``max(k)`` rows; the test
   rows are the same for every ``k``, so the curve compares like with like.
   The pool is put in a random order (the iteration's seed) and the ``k``
   labelled windows are its first ``k``: the windows of a smaller ``k`` are
   among those of a larger one.
2. **The other users** are split as UIM splits them (``train_size=0.6``,
   stratified): 60 % train the model, 40 % are the "others" calibration set.
3. **What the k windows do** (``use``):

   - ``calibration``: they are the calibration set (UCM-like); the model is
     the same for every ``k``, so accuracy does not move;
   - ``adaptation``: they join the training rows (UAM-like); calibration
     stays on the others' 40 %;
   - ``both``: the first ``k // 2`` join the training rows, the other
     ``k - k // 2`` calibrate.
   - ``cluster``: as ``calibration`` from ``min_calibration_size(alpha)``
     windows on; below, the target calibrates on the other users of its
     cluster, as the ``ukm`` strategy does with ``--own-rows k``
     (:func:`~mueval.evaluation.clustered.choose_calibration`, its defaults:
     Ding et al.'s number of clusters, the rank rule).

   ``k = 0`` is UIM for every use: train on the others' 60 %, calibrate on
   their 40 %.
4. A calibration set below ``max(1/alpha, 1/(1-alpha))`` rows (20 at
   alpha = 0.05) gets the ``small_cal`` policy: ``full-set`` (the default
   here: every class, valid and uninformative), ``skip`` (NaN) or ``error``;
   the ``n_small_cal`` column counts the (user, iteration) pairs it hit.

Each (user, iteration, use, k) gives coverage and mean set size over the test
rows, and accuracy (the share of test rows whose ``predict()`` is right). A
user's value is its mean over iterations; the curve's point is the mean over
users (each user weighs the same), with a Student-t 95 % interval over users,
clipped to the metric's range.

This module makes the rows of one target user and iteration (:func:`user_rows`);
:mod:`.summary` turns them into the curve.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.model_selection import train_test_split

from mueval.conformal.step import conformal_step
from mueval.evaluation.clustered import choose_calibration, true_class_scores
from mueval.evaluation.labelcurve.config import CurveConfig
from mueval.evaluation.models import fit_scaled, full_proba
from mueval.evaluation.row_splits import split_rows
from mueval.evaluation.split_seeds import role_seeds

__all__ = ["user_rows"]


def _test_and_pool(
    own: np.ndarray, y: np.ndarray, size: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The target's test rows and its pool of ``size`` labelled candidates, in
    the random order in which they are labelled."""
    if size == 0:
        return own, own[:0]
    labels = y[own]
    _, counts = np.unique(labels, return_counts=True)
    # Stratify when both parts can hold every class (scikit-learn's condition).
    strat = counts.min() >= 2 and min(size, len(own) - size) >= len(counts)
    test, pool = train_test_split(
        own, test_size=size, stratify=labels if strat else None, random_state=seed
    )
    pool = np.random.default_rng(seed).permutation(np.asarray(pool))
    return np.sort(np.asarray(test)), pool


def _parts(use: str, k: int) -> int:
    """How many of the k labelled windows join the training rows."""
    return {"calibration": 0, "adaptation": k, "both": k // 2, "cluster": 0}[use]


def _cluster_rows(
    X: np.ndarray,
    y: np.ndarray,
    users: np.ndarray,
    fitted: tuple[Any, Any, int],
    rows: tuple[np.ndarray, np.ndarray],
    config: CurveConfig,
    seed: int,
) -> tuple[np.ndarray, str]:
    """The ``cluster`` use's calibration rows and their source (``target``,
    ``cluster`` or ``others``): the ``ukm`` rule on the model's scores of the
    target's ``k`` windows and of the other users' calibration rows."""
    scaler, model, n_classes = fitted
    own_cal, cal_others = rows
    score = config.conformal.conformity

    def scores(part: np.ndarray) -> np.ndarray:
        if not len(part):  # k = 0: no window of the target to score
            return np.empty(0)
        return true_class_scores(
            full_proba(model, scaler.transform(X[part]), n_classes), y[part], score
        )

    choice = choose_calibration(
        scores(own_cal),
        scores(cal_others),
        users[cal_others],
        alpha=config.conformal.alpha,
        min_own=None,
        n_clusters=None,
        seed=seed,
    )
    if choice.how == "own":
        return own_cal, "target"
    source = "cluster" if choice.how == "cluster" else "others"
    return cal_others[choice.rows - len(own_cal)], source


def user_rows(
    X: np.ndarray,
    y: np.ndarray,
    users: np.ndarray,
    n_classes: int,
    user: Any,
    iteration: int,
    config: CurveConfig,
) -> list[dict[str, Any]]:
    """Every (use, k) of one target user and iteration."""
    seed = config.seed_base + iteration
    # The other users' split comes first, the target's own rows second, as in UIM.
    others_seed, own_seed, _ = role_seeds(seed, config.split_seeds)
    own = np.flatnonzero(users == user)
    others = np.flatnonzero(users != user)
    test, pool = _test_and_pool(own, y, max(config.ks), own_seed)
    train, cal_others = split_rows(others, y, 0.6, others_seed, what=f"curve, user {user}")
    fits: dict[int, tuple[Any, ...]] = {}  # the model for each number of adaptation rows
    rows = []
    for use in config.uses:
        for k in config.ks:
            n_adapt = _parts(use, k)
            if n_adapt not in fits:
                rows_fit = np.concatenate([train, pool[:n_adapt]])
                scaler, model = fit_scaled(config.classifier, seed, X[rows_fit], y[rows_fit])
                X_test = scaler.transform(X[test])
                fits[n_adapt] = (scaler, model, full_proba(model, X_test, n_classes))
                fits[n_adapt] += (np.asarray(model.predict(X_test), dtype=int),)
            scaler, model, proba_test, y_pred = fits[n_adapt]
            own_cal = pool[n_adapt:k]
            cal = own_cal if len(own_cal) else cal_others
            source = "target" if len(own_cal) else "others"
            if use == "cluster":
                fitted = (scaler, model, n_classes)
                cal, source = _cluster_rows(
                    X, y, users, fitted, (own_cal, cal_others), config, seed
                )
            proba_cal = full_proba(model, scaler.transform(X[cal]), n_classes)
            where = f"curve, user {user}, seed {seed}, use {use}, k {k}"
            outcome = conformal_step(
                proba_cal, y[cal], proba_test, config.conformal, seed=seed, where=where
            )
            sets = None if outcome.output is None else outcome.output.sets
            small = outcome.answered
            y_test = y[test]
            coverage = setsize = math.nan  # skipped: no sets
            if sets is not None:
                coverage = float(sets[np.arange(len(test)), y_test].mean())
                setsize = float(sets.sum(axis=1).mean())
            rows.append(
                {
                    "user": user.item() if isinstance(user, np.generic) else user,
                    "iteration": iteration,
                    "seed": seed,
                    "use": use,
                    "k": k,
                    "n_adapt": n_adapt,
                    "n_cal": len(cal),
                    "cal_source": source,
                    "n_test": len(test),
                    "coverage": coverage,
                    "setsize": setsize,
                    "accuracy": float(np.mean(y_pred == y_test)),
                    "small_cal": small,
                }
            )
    return rows
