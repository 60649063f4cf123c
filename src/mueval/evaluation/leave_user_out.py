"""The splitters of UIM, UCM and UKM: train on the users other than the target
(leave one user out, the protocol) or outside a grouped fold of users
(``--user-folds K``), docs/protocol.md, "Splits".

Owns :func:`user_independent_splits` and :func:`user_fold_splits`, and what
they share: the other users' 60/40 split into training and UIM's calibration
set, a target user's test and UCM calibration halves, and UKM's pool
(:class:`~mueval.evaluation.records.Borrow`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mueval.errors import SplitError
from mueval.evaluation.blocked import blocked_parts
from mueval.evaluation.records import Borrow, Split, Target
from mueval.evaluation.row_splits import (
    class_counts,
    each_user,
    plain_user,
    split_rows,
    user_rows,
)
from mueval.evaluation.split_seeds import role_seeds
from mueval.evaluation.user_folds import user_folds

__all__ = ["user_fold_splits", "user_independent_splits"]


def user_independent_splits(
    y: np.ndarray,
    users: np.ndarray,
    iteration: int,
    seed: int,
    strategies: Sequence[str],
    classes: Sequence[str] | None = None,
    split: str = "random",
    gap: int = 1,
    *,
    split_seeds: str = "protocol",
) -> list[Split]:
    """UIM, UCM and/or UKM, one split per target user serving each of them.

    Other users' rows, ``train_size=0.6``: train (first) and the UIM calibration
    set (second; discarded by UCM). Target user's rows, ``train_size=0.5``: test
    (first) and the UCM calibration set (second; discarded by UIM).
    ``split="blocked"``: the target's earlier half calibrates UCM and the later
    half is the test set of both, ``gap`` rows apart (:func:`blocked_parts`).
    The other users' split draws from the role ``FIRST``'s seed, the target's
    from ``SECOND``'s (:func:`~mueval.evaluation.split_seeds.role_seeds`).
    """
    serve = [s for s in _SERVED if s in strategies]
    first, second, _ = role_seeds(seed, split_seeds)
    out = []
    for user, others, own in each_user(users):
        what = f"{'/'.join(serve)}, user {user}"
        train, cal_others = _train_and_shared_cal(others, y, first, what, "users'", classes)
        test, cals = _target_halves(own, y, second, (split, gap), serve, cal_others, what, classes)
        borrow = _borrow(serve, cal_others, users)
        out.append(Split(iteration, seed, plain_user(user), train, test, cals, borrow=borrow))
    return out


#: The strategies the user-independent splitter serves, in report order.
_SERVED = ("uim", "ucm", "ukm")


def _borrow(serve: Sequence[str], cal_others: np.ndarray, users: np.ndarray) -> dict[str, Borrow]:
    """UKM's pool: the other users' calibration rows (UIM's), and their users."""
    if "ukm" not in serve:
        return {}
    return {"ukm": Borrow(cal_others, users[cal_others])}


def _train_and_shared_cal(
    others: np.ndarray,
    y: np.ndarray,
    seed: int,
    what: str,
    whose: str,
    classes: Sequence[str] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The rows outside the target, split 60/40 into training and the UIM calibration set."""
    if not len(others):
        message = (
            f"{what}: the table has no user besides the target: uim, ucm and ukm train on "
            "the other users' rows, so they need two users at least"
        )
        raise SplitError(message)
    if len(np.unique(y[others])) < 2:
        message = (
            f"{what}: the other {whose} rows hold only one class "
            f"({class_counts(y[others], classes)}); a model needs at least two"
        )
        raise SplitError(message)
    return split_rows(others, y, 0.6, seed, what=what, classes=classes)


def _target_halves(
    own: np.ndarray,
    y: np.ndarray,
    seed: int,
    split_gap: tuple[str, int],
    serve: Sequence[str],
    cal_others: np.ndarray,
    what: str,
    classes: Sequence[str] | None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A target user's test half and the calibration sets of the strategies served.

    UIM calibrates on ``cal_others`` (the other users' rows), UCM on the target's
    other half: the earlier half under ``split="blocked"``, a stratified random
    half otherwise. UKM's calibration set is UCM's array itself (the runner
    may swap it for rows of its pool, :func:`_borrow`), so the two share its
    predictions.
    """
    split, gap = split_gap
    if split == "blocked":
        cal_own, test = blocked_parts(own, y, 0.5, 2, gap, what=what, classes=classes)
    else:
        test, cal_own = split_rows(own, y, 0.5, seed, what=what, classes=classes)
    calibrations = {"uim": cal_others, "ucm": cal_own, "ukm": cal_own}
    return test, {s: calibrations[s] for s in _SERVED if s in serve}


def user_fold_splits(
    y: np.ndarray,
    users: np.ndarray,
    iteration: int,
    seed: int,
    strategies: Sequence[str],
    n_folds: int,
    classes: Sequence[str] | None = None,
    split: str = "random",
    gap: int = 1,
    *,
    split_seeds: str = "protocol",
) -> list[Split]:
    """UIM and/or UCM on grouped folds of users: one split (one fit) per fold.

    As :func:`user_independent_splits`, except that the rows of every user
    outside the fold (not of every user but the target) are split 60/40 into
    training and the UIM calibration set, and each user of the fold is a
    :class:`Target` with its own test and UCM calibration halves.
    """
    serve = [s for s in _SERVED if s in strategies]
    first, second, groups = role_seeds(seed, split_seeds)
    rows_of = user_rows(users)
    out = []
    for k, fold in enumerate(user_folds(users, n_folds, groups), start=1):
        held = np.isin(users, fold)
        others = np.flatnonzero(~held)
        what = f"{'/'.join(serve)}, fold {k} of {n_folds}"
        train, cal_others = _train_and_shared_cal(others, y, first, what, "folds'", classes)
        targets = []
        for user in fold:
            own = rows_of[user]
            who = f"{'/'.join(serve)}, user {user}"
            split_gap = (split, gap)
            test, cals = _target_halves(own, y, second, split_gap, serve, cal_others, who, classes)
            targets.append(Target(plain_user(user), test, cals, _borrow(serve, cal_others, users)))
        empty = np.empty(0, dtype=int)
        out.append(Split(iteration, seed, None, train, empty, {}, tuple(targets)))
    return out
