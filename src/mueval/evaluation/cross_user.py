"""UXC's splits (an addition to the protocol): per target user, the target's
test rows and the non-target users cut into calibration folds, one per user
or ``--user-folds K`` grouped folds (docs/protocol.md, "Splits").

Owns :func:`cross_user_splits`, whose :class:`~mueval.evaluation.records.CrossSplit`
records the cross-conformal step (:mod:`mueval.evaluation.crossconformal`) reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mueval.errors import SplitError, UsageError
from mueval.evaluation.blocked import blocked_parts
from mueval.evaluation.records import CrossSplit
from mueval.evaluation.row_splits import class_counts, each_user, plain_user, split_rows
from mueval.evaluation.split_seeds import role_seeds
from mueval.evaluation.user_folds import user_folds

__all__ = ["cross_user_splits"]


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
    split_seeds: str = "protocol",
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
    split_seeds : {"protocol", "independent"}
        The target's test half draws from the role ``SECOND``'s seed, as under
        UIM and UCM, and the folds from ``GROUPS``'s
        (:func:`~mueval.evaluation.split_seeds.role_seeds`).

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
    _, second, groups = role_seeds(seed, split_seeds)
    out = []
    for user, others, own in each_user(users):
        what = f"uxc, user {user}"
        if split == "blocked":
            # The later block, as UIM and UCM test on.
            _, test = blocked_parts(own, y, 0.5, 2, gap, what=what, classes=classes)
        else:
            # The same call as UIM/UCM's, so the test rows are theirs.
            test, _ = split_rows(own, y, 0.5, second, what=what, classes=classes)
        folds = tuple(
            others[np.isin(users[others], fold)]
            for fold in _fold_users(others, users, n_folds, groups)
        )
        for k, fold in enumerate(folds):
            rest = np.setdiff1d(others, fold)
            if len(np.unique(y[rest])) < 2:
                message = (
                    f"{what}: without fold {k + 1} ({class_counts(y[fold], classes)}) the "
                    f"training rows hold only one class ({class_counts(y[rest], classes)})"
                )
                raise SplitError(message)
        cal = np.concatenate(folds)
        out.append(
            CrossSplit(iteration, seed, plain_user(user), others, test, {"uxc": cal}, folds=folds)
        )
    return out
