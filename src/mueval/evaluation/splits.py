"""The entry point of the row splits (docs/protocol.md, "Splits"): the splitters
the strategy records name, and :func:`make_splits`, which calls each requested
splitter once.

Every split is index-based: arrays of row positions into the dataset table, made
with scikit-learn's ``train_test_split(..., stratify=<labels>, random_state=seed)``
in exactly the order the reference code made them, since the order of the calls
and which returned part plays which role decide the numbers.

Each strategy's record (:mod:`mueval.strategies`) names its splitter here, a
function of one :class:`~mueval.evaluation.records.SplitRequest`:
:func:`split_mixed`, :func:`split_user_dependent`, :func:`split_user_independent`
(UIM, UCM and UKM), :func:`split_user_adaptive` and :func:`split_cross_user`.
Each hands the request to the splits of its room:

- :mod:`mueval.evaluation.within_user`: MM, UDM and UAM;
- :mod:`mueval.evaluation.leave_user_out`: UIM, UCM and UKM, leaving one user
  out or one grouped fold of users (:mod:`mueval.evaluation.user_folds`);
- :mod:`mueval.evaluation.cross_user`: UXC;

over the random split of :mod:`mueval.evaluation.row_splits` or the blocked one
of :mod:`mueval.evaluation.blocked`. The splits of a strategy registered from
outside are checked (:mod:`mueval.evaluation.split_checks`). This module also
hands on the row-split functions under their old address.

A :class:`~mueval.evaluation.records.Split` holds one training set and one test
set, and one calibration set per strategy it serves: UIM and UCM of one (user,
seed) share training and test rows by construction, so one split (one model
fit) serves both. With grouped folds of users (``user_folds=K``), one split
serves every user of a fold: it holds one
:class:`~mueval.evaluation.records.Target` (test and calibration rows) per
held-out user.

Every splitter takes ``split_seeds`` (``--split-seeds``): ``"protocol"`` hands
the iteration's seed to each of its splits, as the reference code;
``"independent"`` hands each role its own seed
(:func:`~mueval.evaluation.split_seeds.role_seeds`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from mueval.errors import UsageError
from mueval.evaluation.blocked import blocked_parts
from mueval.evaluation.cross_user import cross_user_splits
from mueval.evaluation.leave_user_out import user_fold_splits, user_independent_splits
from mueval.evaluation.records import Split, SplitRequest
from mueval.evaluation.row_splits import can_stratify, each_user, split_rows, user_rows
from mueval.evaluation.split_checks import check_splits
from mueval.evaluation.user_folds import user_folds
from mueval.evaluation.within_user import (
    mixed_splits,
    user_adaptive_splits,
    user_dependent_splits,
)
from mueval.names import SPLIT_METHODS, strategy_codes
from mueval.strategies import BUILTIN_STRATEGIES, Strategy, registered_strategies

__all__ = [
    "blocked_parts",
    "can_stratify",
    "cross_user_splits",
    "each_user",
    "make_splits",
    "split_cross_user",
    "split_mixed",
    "split_rows",
    "split_user_adaptive",
    "split_user_dependent",
    "split_user_independent",
    "user_folds",
    "user_rows",
]


def make_splits(
    y: np.ndarray,
    users: np.ndarray,
    strategies: Sequence[str],
    iteration: int,
    seed: int,
    *,
    adapt_frac: float = 0.5,
    classes: Sequence[str] | None = None,
    split: str = "random",
    gap: int = 1,
    n_user_folds: int | None = None,
    split_seeds: str = "protocol",
) -> list[Split]:
    """Every split of one iteration for the requested strategies.

    Parameters
    ----------
    y : ndarray of shape (n_rows,)
        Integer labels (index into ``classes``).
    users : ndarray of shape (n_rows,)
        User id of each row.
    strategies : sequence of str
        Strategy codes (already parsed).
    iteration : int
        1-based iteration number.
    seed : int
        Seed of the iteration.
    adapt_frac : float
        Fraction of the target user's rows added to training by UAM.
    classes : sequence of str, optional
        Class names, for error messages.
    split : {"random", "blocked"}
        How UDM, UCM (and UIM's test rows) and UAM split a user's own rows;
        MM and the other users' rows are always split at random.
    gap : int
        Rows left out between blocks (``split="blocked"``).
    n_user_folds : int, optional
        UIM and UCM: fit on grouped folds of users
        (:func:`~mueval.evaluation.leave_user_out.user_fold_splits`)
        instead of leaving one user out (None, the protocol). UXC: cut the
        non-target users into this many calibration folds instead of one per
        user (:func:`~mueval.evaluation.cross_user.cross_user_splits`).
    split_seeds : {"protocol", "independent"}
        The iteration's seed for every split (the reference code), or one seed
        per role (:func:`~mueval.evaluation.split_seeds.role_seeds`).

    Returns
    -------
    list of Split
        In report order of the strategies (:mod:`mueval.strategies`): MM first,
        then UDM, UIM/UCM, UAM and UXC, then the user's, users ascending in each.
        Each strategy's records say its splitter; one call serves every
        requested strategy of a splitter.
    """
    if split not in SPLIT_METHODS:
        message = f"unknown split method {split!r}; valid: {', '.join(SPLIT_METHODS)}"
        raise UsageError(message)
    if gap < 0:
        message = f"gap must be 0 or more rows, got {gap}"
        raise UsageError(message)
    request = SplitRequest(
        y=np.asarray(y),
        users=np.asarray(users),
        iteration=iteration,
        seed=seed,
        strategies=(),
        classes=classes,
        split=split,
        gap=gap,
        adapt_frac=adapt_frac,
        user_folds=n_user_folds,
        split_seeds=split_seeds,
    )
    out: list[Split] = []
    for record, served in _splitter_groups(strategies):
        splits = record.split_function()(dataclasses.replace(request, strategies=served))
        if record.code not in _BUILTIN:
            check_splits(splits, served, record, request.users)
        out += splits
    return out


#: The built-in codes, whose splitters are mueval's own (their splits are not checked).
_BUILTIN = frozenset(s.code for s in BUILTIN_STRATEGIES)


def _splitter_groups(strategies: Sequence[str]) -> list[tuple[Strategy, tuple[str, ...]]]:
    """The requested strategies grouped by splitter, in report order: one call per
    splitter serves every requested strategy whose record names it."""
    wanted = set(strategies)
    unknown = sorted(wanted - {s.code for s in registered_strategies()})
    if unknown:
        message = f"unknown strategy {unknown[0]!r}; registered: {', '.join(strategy_codes())}"
        raise UsageError(message)
    groups: dict[object, tuple[Strategy, list[str]]] = {}
    for record in registered_strategies():
        if record.code in wanted:
            groups.setdefault(record.splitter, (record, []))[1].append(record.code)
    return [(record, tuple(codes)) for record, codes in groups.values()]


def split_mixed(request: SplitRequest) -> list[Split]:
    """MM's splitter (:func:`mixed_splits`)."""
    r = request
    return mixed_splits(r.y, r.iteration, r.seed, r.classes, split_seeds=r.split_seeds)


def split_user_dependent(request: SplitRequest) -> list[Split]:
    """UDM's splitter (:func:`user_dependent_splits`)."""
    r = request
    return user_dependent_splits(
        r.y, r.users, r.iteration, r.seed, r.classes, r.split, r.gap, split_seeds=r.split_seeds
    )


def split_user_independent(request: SplitRequest) -> list[Split]:
    """The splitter UIM, UCM and UKM share: one split per target user
    (:func:`user_independent_splits`), or per grouped fold of users with
    ``user_folds`` (:func:`user_fold_splits`)."""
    r = request
    if r.user_folds is not None:
        return user_fold_splits(
            r.y,
            r.users,
            r.iteration,
            r.seed,
            r.strategies,
            r.user_folds,
            r.classes,
            r.split,
            r.gap,
            split_seeds=r.split_seeds,
        )
    return user_independent_splits(
        r.y,
        r.users,
        r.iteration,
        r.seed,
        r.strategies,
        r.classes,
        r.split,
        r.gap,
        split_seeds=r.split_seeds,
    )


def split_user_adaptive(request: SplitRequest) -> list[Split]:
    """UAM's splitter (:func:`user_adaptive_splits`)."""
    r = request
    return user_adaptive_splits(
        r.y,
        r.users,
        r.iteration,
        r.seed,
        r.adapt_frac,
        r.classes,
        r.split,
        r.gap,
        split_seeds=r.split_seeds,
    )


def split_cross_user(request: SplitRequest) -> list[Split]:
    """UXC's splitter (:func:`cross_user_splits`)."""
    r = request
    return list(
        cross_user_splits(
            r.y,
            r.users,
            r.iteration,
            r.seed,
            n_folds=r.user_folds,
            classes=r.classes,
            split=r.split,
            gap=r.gap,
            split_seeds=r.split_seeds,
        )
    )
