"""The splitters that calibrate and test on the rows they also train from: MM
(all rows pooled), UDM (each user's own rows) and UAM (the other users plus a
part of the target user's rows), docs/protocol.md, "Splits".

Owns :func:`mixed_splits`, :func:`user_dependent_splits` and
:func:`user_adaptive_splits`: the random splits of one iteration, in the order
and with the seeds of the reference code, or the blocked ones
(:func:`~mueval.evaluation.blocked.blocked_parts`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mueval.errors import SplitError, UsageError
from mueval.evaluation.blocked import blocked_parts
from mueval.evaluation.records import Split
from mueval.evaluation.row_splits import (
    can_stratify,
    class_counts,
    each_user,
    plain_user,
    split_rows,
)
from mueval.evaluation.split_seeds import role_seeds

__all__ = ["mixed_splits", "user_adaptive_splits", "user_dependent_splits"]


def mixed_splits(
    y: np.ndarray,
    iteration: int,
    seed: int,
    classes: Sequence[str] | None = None,
    *,
    split_seeds: str = "protocol",
) -> list[Split]:
    """MM: 60% train, then the rest halved into calibration (first) and test."""
    first, second, _ = role_seeds(seed, split_seeds)
    idx = np.arange(len(y))
    train, rest = split_rows(idx, y, 0.6, first, what="mm", classes=classes)
    cal, test = split_rows(rest, y, 0.5, second, what="mm", classes=classes)
    return [Split(iteration, seed, None, train, test, {"mm": cal})]


def user_dependent_splits(
    y: np.ndarray,
    users: np.ndarray,
    iteration: int,
    seed: int,
    classes: Sequence[str] | None = None,
    split: str = "random",
    gap: int = 1,
    *,
    split_seeds: str = "protocol",
) -> list[Split]:
    """UDM: the MM splits on each user's own rows (users ascending).

    ``split="blocked"``: per class, the earliest 60 % train, the next 20 %
    calibrate and the last 20 % test, ``gap`` rows apart (:func:`blocked_parts`).
    """
    first, second, _ = role_seeds(seed, split_seeds)
    out = []
    for user in np.unique(users):
        idx = np.flatnonzero(users == user)
        what = f"udm, user {user}"
        n_classes = len(np.unique(y[idx]))
        if n_classes < 2:
            message = (
                f"{what}: the user has only one class "
                f"({class_counts(y[idx], classes)}); udm trains a model on each user's "
                "own rows and needs at least two classes per user"
            )
            raise SplitError(message)
        if split == "blocked":
            train, cal, test = blocked_parts(idx, y, 0.6, 3, gap, what=what, classes=classes)
        else:
            train, rest = split_rows(idx, y, 0.6, first, what=what, classes=classes)
            cal, test = split_rows(rest, y, 0.5, second, what=what, classes=classes)
        out.append(Split(iteration, seed, plain_user(user), train, test, {"udm": cal}))
    return out


def user_adaptive_splits(
    y: np.ndarray,
    users: np.ndarray,
    iteration: int,
    seed: int,
    adapt_frac: float = 0.5,
    classes: Sequence[str] | None = None,
    split: str = "random",
    gap: int = 1,
    *,
    split_seeds: str = "protocol",
) -> list[Split]:
    """UAM (an addition to the protocol): train on the other users plus a part of
    the target user's rows, calibrate and test on the rest of the target's rows.

    The target user's rows are split with ``train_size=adapt_frac`` into the
    adaptation part (first, added to training) and the rest, which is halved into
    calibration (first) and test (second). Every split is stratified when each
    class has at least two rows and both parts can hold every class; otherwise it
    is a plain random split with the same seed. ``split="blocked"``: per class
    the earliest ``adapt_frac`` adapts, the next half of the rest calibrates and
    the last half tests, ``gap`` rows apart (:func:`blocked_parts`).
    """
    if not 0.0 < adapt_frac < 1.0:
        message = f"adapt_frac must be strictly between 0 and 1, got {adapt_frac}"
        raise UsageError(message)
    first, second, _ = role_seeds(seed, split_seeds)
    out = []
    for user, others, own in each_user(users):
        what = f"uam, user {user}"
        if split == "blocked":
            adapt, cal, test = blocked_parts(own, y, adapt_frac, 3, gap, what=what, classes=classes)
        else:
            strat = can_stratify(y[own], adapt_frac)
            adapt, rest = split_rows(
                own, y, adapt_frac, first, what=what, classes=classes, stratify=strat
            )
            strat = can_stratify(y[rest], 0.5)
            cal, test = split_rows(rest, y, 0.5, second, what=what, classes=classes, stratify=strat)
        train = np.concatenate([others, adapt])
        if len(np.unique(y[train])) < 2:
            message = f"{what}: the training rows hold only one class"
            raise SplitError(message)
        out.append(Split(iteration, seed, plain_user(user), train, test, {"uam": cal}))
    return out
