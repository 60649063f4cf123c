"""Row splits of the multi-user evaluation strategies (docs/protocol.md, "Splits").

Every split is index-based: arrays of row positions into the dataset table, made
with scikit-learn's ``train_test_split(..., stratify=<labels>, random_state=seed)``
in exactly the order the reference code made them, since the order of the calls
and which returned part plays which role decide the numbers.

Each strategy's record (:mod:`mueval.strategies`) names its splitter, a
function of one :class:`~mueval.evaluation.records.SplitRequest`:
:func:`split_mixed`, :func:`split_user_dependent`, :func:`split_user_independent`
(UIM and UCM), :func:`split_user_adaptive` and :func:`split_cross_user`, over the
functions below; :func:`make_splits` calls each requested splitter once.

A :class:`Split` holds one training set and one test set, and one calibration set
per strategy it serves: UIM and UCM of one (user, seed) share training and test
rows by construction, so one split (one model fit) serves both. With grouped
folds of users (``user_folds=K``), one split serves every user of a fold: it
holds one :class:`Target` (test and calibration rows) per held-out user.

Every splitter takes ``split_seeds`` (``--split-seeds``): ``"protocol"`` hands
the iteration's seed to each of its splits, as the reference code;
``"independent"`` hands each role its own seed
(:func:`~mueval.evaluation.split_seeds.role_seeds`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator, Sequence
from typing import cast

import numpy as np
from sklearn.model_selection import GroupKFold, train_test_split

from mueval.errors import SplitError, UsageError
from mueval.evaluation.records import Borrow, CrossSplit, Split, SplitRequest, Target
from mueval.evaluation.split_seeds import role_seeds
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


def _plain(user: object) -> int | str:
    """A user id as a plain Python int or str (numpy scalars do not pickle small)."""
    # The table's loader keeps user ids integer or text (mueval.data.table).
    return cast("int | str", user.item() if isinstance(user, np.generic) else user)


def _describe(y: np.ndarray, classes: Sequence[str] | None) -> str:
    values, counts = np.unique(y, return_counts=True)
    names = [classes[v] if classes is not None else str(v) for v in values]
    return ", ".join(f"{n}: {c}" for n, c in zip(names, counts, strict=True))


def split_rows(
    idx: np.ndarray,
    y: np.ndarray,
    train_size: float,
    seed: int,
    *,
    what: str,
    classes: Sequence[str] | None = None,
    stratify: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """``train_test_split`` of row positions, stratified on their labels.

    Parameters
    ----------
    idx : ndarray of shape (m,)
        Row positions to split, in the order the reference code had them.
    y : ndarray of shape (n_rows,)
        Integer labels of the whole table.
    train_size : float
        Fraction given to the first returned part.
    seed : int
        ``random_state`` of the split.
    what : str
        Names the strategy and user in error messages.
    classes : sequence of str, optional
        Class names for error messages.
    stratify : bool
        Stratify on the labels (the protocol always does).

    Returns
    -------
    first, second : ndarray
        The ``train_size`` part and the rest.
    """
    labels = y[idx]
    try:
        first, second = train_test_split(
            idx,
            train_size=train_size,
            stratify=labels if stratify else None,
            random_state=seed,
        )
    except ValueError as exc:
        message = (
            f"{what}: cannot split {len(idx)} rows with train_size={train_size} "
            f"(class counts {_describe(labels, classes)}): {exc}"
        )
        raise SplitError(message) from exc
    return np.asarray(first), np.asarray(second)


def each_user(users: np.ndarray) -> Iterator[tuple[object, np.ndarray, np.ndarray]]:
    """``(user, other users' rows, the user's rows)`` for every user, in sorted order."""
    for user in np.unique(users):
        yield user, np.flatnonzero(users != user), np.flatnonzero(users == user)


def user_rows(users: np.ndarray) -> dict[object, np.ndarray]:
    """Each user's row positions, ascending: ``np.flatnonzero(users == user)``
    for every user, from one sort instead of one pass over the table per user.

    Parameters
    ----------
    users : ndarray of shape (n_rows,)

    Returns
    -------
    dict
        User id (as ``np.unique`` gives it) -> int64 row positions.

    Examples
    --------
    >>> {int(u): r.tolist() for u, r in user_rows(np.array([3, 1, 3, 2, 1])).items()}
    {1: [1, 4], 2: [3], 3: [0, 2]}
    """
    unique, codes = np.unique(users, return_inverse=True)
    # A stable sort keeps each user's positions ascending.
    order = np.argsort(codes.ravel(), kind="stable").astype(np.int64)
    bounds = np.cumsum(np.bincount(codes.ravel(), minlength=len(unique)))[:-1]
    return dict(zip(unique.tolist(), np.split(order, bounds), strict=True))


def can_stratify(labels: np.ndarray, train_size: float) -> bool:
    """Whether a stratified split of ``labels`` is possible (each class >= 2 rows
    and both parts at least as large as the number of classes)."""
    _, counts = np.unique(labels, return_counts=True)
    n = len(labels)
    n_first = int(np.floor(train_size * n))
    n_second = n - n_first
    return bool(counts.min() >= 2 and min(n_first, n_second) >= len(counts))


def blocked_parts(
    idx: np.ndarray,
    y: np.ndarray,
    first_frac: float,
    n_parts: int,
    gap: int,
    *,
    what: str,
    classes: Sequence[str] | None = None,
) -> list[np.ndarray]:
    """Contiguous blocks of each class's rows in time (row) order, ``gap`` rows apart.

    Windows next to each other in time share signal (and overlap, for
    overlapping windows), so a random within-user split lets a test window's
    neighbour sit in the training or calibration set. Blocks do not: per class,
    the earliest ``first_frac`` of the rows (after the gaps are set aside) form
    the first part, the rest is halved between the next parts in order, and
    ``gap`` rows are dropped between two parts. Splitting per class keeps every
    class in every part, as the stratified random split does.

    Parameters
    ----------
    idx : ndarray of shape (m,)
        Row positions of one user (the table's order is time order within a
        user and class).
    y : ndarray of shape (n_rows,)
        Integer labels of the whole table.
    first_frac : float
        Share of each class's rows in the first part.
    n_parts : {2, 3}
        Number of parts: (first, second) or (first, second, third), the
        rest after the first halved between the second and the third.
    gap : int
        Rows left out between two parts (>= 0).
    what : str
        Names the strategy and user in error messages.
    classes : sequence of str, optional
        Class names for error messages.

    Returns
    -------
    list of ndarray
        ``n_parts`` arrays of row positions, each sorted.

    Examples
    --------
    >>> y = np.zeros(12, dtype=int)
    >>> [p.tolist() for p in blocked_parts(np.arange(12), y, 0.6, 3, 1, what="udm")]
    [[0, 1, 2, 3, 4, 5], [7, 8], [10, 11]]
    """
    parts: list[list[np.ndarray]] = [[] for _ in range(n_parts)]
    for c in np.unique(y[idx]):
        rows = np.sort(idx[y[idx] == c])
        usable = len(rows) - gap * (n_parts - 1)
        if usable < n_parts:
            name = classes[c] if classes is not None else str(c)
            message = (
                f"{what}: class {name!r} has {len(rows)} rows, too few for {n_parts} "
                f"blocks with a gap of {gap}; lower --gap or use --split random"
            )
            raise SplitError(message)
        sizes = [max(1, int(np.floor(first_frac * usable)))]
        rest = usable - sizes[0]
        if n_parts == 3:
            sizes.append(max(1, rest // 2))
        sizes.append(usable - sum(sizes))
        if min(sizes) < 1:
            message = f"{what}: too few rows for {n_parts} blocks with a gap of {gap}"
            raise SplitError(message)
        start = 0
        for k, size in enumerate(sizes):
            parts[k].append(rows[start : start + size])
            start += size + gap
    return [np.sort(np.concatenate(p)) for p in parts]


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
                f"({_describe(y[idx], classes)}); udm trains a model on each user's "
                "own rows and needs at least two classes per user"
            )
            raise SplitError(message)
        if split == "blocked":
            train, cal, test = blocked_parts(idx, y, 0.6, 3, gap, what=what, classes=classes)
        else:
            train, rest = split_rows(idx, y, 0.6, first, what=what, classes=classes)
            cal, test = split_rows(rest, y, 0.5, second, what=what, classes=classes)
        out.append(Split(iteration, seed, _plain(user), train, test, {"udm": cal}))
    return out


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
        out.append(Split(iteration, seed, _plain(user), train, test, cals, borrow=borrow))
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
    if len(np.unique(y[others])) < 2:
        message = (
            f"{what}: the other {whose} rows hold only one class "
            f"({_describe(y[others], classes)}); a model needs at least two"
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
            targets.append(Target(_plain(user), test, cals, _borrow(serve, cal_others, users)))
        empty = np.empty(0, dtype=int)
        out.append(Split(iteration, seed, None, train, empty, {}, tuple(targets)))
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
        out.append(Split(iteration, seed, _plain(user), train, test, {"uam": cal}))
    return out


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
        UIM and UCM: fit on grouped folds of users (:func:`user_fold_splits`)
        instead of leaving one user out (None, the protocol). UXC: cut the
        non-target users into this many calibration folds instead of one per
        user (:func:`cross_user_splits`).
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
            _check_splits(splits, served, record, request.users)
        out += splits
    return out


#: The built-in codes, whose splitters are this module's own (their splits are not checked).
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


def _check_splits(
    splits: object, served: tuple[str, ...], record: Strategy, users: np.ndarray
) -> None:
    """A user's splitter returned Split records whose rows are in the table, whose
    calibration sets are the served strategies', whose roles do not share a row,
    and which test each target user on its own rows (the run folder's rule), or
    name no target user for a pooled strategy."""
    where = f"strategy {record.code!r}: splitter"
    if not isinstance(splits, list) or not all(isinstance(s, Split) for s in splits):
        message = f"{where} must return a list of mueval.evaluation.records.Split records"
        raise SplitError(message)
    for k, split in enumerate(splits):
        if isinstance(split, CrossSplit):
            message = f"{where}: split {k} is a CrossSplit; cross-conformal splits are uxc's own"
            raise SplitError(message)
        for target in split.served():
            if set(target.calibrations) != set(served):
                message = (
                    f"{where}: split {k} calibrates {sorted(target.calibrations)}, expected "
                    f"one calibration set for each of {list(served)}"
                )
                raise SplitError(message)
            parts = {"train": split.train, "test": target.test, **target.calibrations}
            _check_rows(parts, f"{where}: split {k} (user {target.user})", len(users))
            _check_target(target, record, f"{where}: split {k}", users)


def _check_target(target: Split | Target, record: Strategy, where: str, users: np.ndarray) -> None:
    """A pooled strategy names no target user; any other tests a target user of the
    table on that user's own rows."""
    if record.pooled or target.user is None:
        if record.pooled != (target.user is None):
            message = (
                f"{where}: names target user {target.user!r}, but the record says pooled=True"
                if record.pooled
                else f"{where}: names no target user, but the record says pooled=False"
            )
            raise SplitError(message)
        return
    own = users[np.asarray(target.test)]
    if not (own == target.user).all():
        message = (
            f"{where}: target user {target.user!r} is tested on rows of user "
            f"{own[own != target.user].tolist()[0]!r}; a strategy tests each target user on its own rows"
        )
        raise SplitError(message)


def _check_rows(parts: dict[str, np.ndarray], where: str, n_rows: int) -> None:
    """Each part is a non-empty array of distinct row positions in the table, and
    neither the training nor the test rows share a row with another part (two
    strategies' calibration sets may)."""
    for role, rows in parts.items():
        rows = np.asarray(rows)
        if rows.ndim != 1 or len(rows) == 0 or not np.issubdtype(rows.dtype, np.integer):
            message = f"{where}: {role} must be a non-empty 1-D array of row positions"
            raise SplitError(message)
        if rows.min() < 0 or rows.max() >= n_rows or len(np.unique(rows)) != len(rows):
            message = f"{where}: {role} must hold distinct row positions from 0 to {n_rows - 1}"
            raise SplitError(message)
    roles = list(parts)
    for i, first in enumerate(roles[:2]):
        for second in roles[i + 1 :]:
            shared = np.intersect1d(parts[first], parts[second])
            if len(shared):
                message = f"{where}: row {int(shared[0])} is in both {first} and {second}"
                raise SplitError(message)


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
                    f"{what}: without fold {k + 1} ({_describe(y[fold], classes)}) the "
                    f"training rows hold only one class ({_describe(y[rest], classes)})"
                )
                raise SplitError(message)
        cal = np.concatenate(folds)
        out.append(
            CrossSplit(iteration, seed, _plain(user), others, test, {"uxc": cal}, folds=folds)
        )
    return out
