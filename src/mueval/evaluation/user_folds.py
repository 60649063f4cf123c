"""Grouped folds of users (``--user-folds K``): which users each fold holds.

Owns :func:`user_folds`, used by the UIM, UCM and UKM splits on folds
(:func:`~mueval.evaluation.leave_user_out.user_fold_splits`) and by UXC's
calibration folds (:func:`~mueval.evaluation.cross_user.cross_user_splits`).
"""

from __future__ import annotations

import inspect

import numpy as np
from sklearn.model_selection import GroupKFold

from mueval.errors import UsageError

__all__ = ["user_folds"]


def user_folds(users: np.ndarray, n_folds: int, seed: int) -> list[np.ndarray]:
    """Grouped folds of users: each user falls in exactly one of ``n_folds`` folds.

    scikit-learn's ``GroupKFold(n_folds, shuffle=True, random_state=seed)`` where
    the installed scikit-learn has ``shuffle`` (1.6 and later); with an older one,
    a permutation of the users drawn by ``numpy.random.default_rng(seed)``, cut
    into ``n_folds`` nearly equal groups (``numpy.array_split``).

    Parameters
    ----------
    users : ndarray of shape (n_rows,)
        User id of each row.
    n_folds : int
        Number of folds, from 2 to the number of users.
    seed : int
        Seed of the iteration.

    Returns
    -------
    list of ndarray
        The users of each fold, each sorted ascending.

    Examples
    --------
    >>> folds = user_folds(np.repeat(np.arange(5), 3), 2, seed=1)
    >>> sorted(u for fold in folds for u in fold.tolist())
    [0, 1, 2, 3, 4]
    """
    unique = np.unique(users)
    if not 2 <= n_folds <= len(unique):
        message = f"user_folds must be from 2 to the number of users ({len(unique)}), got {n_folds}"
        raise UsageError(message, cli={"user_folds must": "--user-folds must"})
    if "shuffle" in inspect.signature(GroupKFold).parameters:
        splitter = GroupKFold(n_splits=n_folds, shuffle=True, random_state=seed)
        tests = splitter.split(np.zeros((len(users), 1)), groups=users)
        return [np.unique(users[test]) for _, test in tests]
    order = np.random.default_rng(seed).permutation(unique)
    return [np.sort(part) for part in np.array_split(order, n_folds)]
