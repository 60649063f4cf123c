"""The stratified random split of row positions, and the per-user row lookups
every splitter walks (docs/protocol.md, "Splits").

Owns :func:`split_rows` (scikit-learn's ``train_test_split``, stratified, with
an error naming the strategy, user and class counts when it cannot split),
:func:`can_stratify`, :func:`each_user`, :func:`user_rows`, and the two small
helpers the splitters share: :func:`plain_user` (a user id fit for a record)
and :func:`class_counts` (class counts for an error message).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import cast

import numpy as np
from sklearn.model_selection import train_test_split

from mudata.display import shown
from mueval.errors import SplitError

__all__ = [
    "can_stratify",
    "class_counts",
    "each_user",
    "plain_user",
    "split_rows",
    "user_rows",
]


def plain_user(user: object) -> int | str:
    """A user id as a plain Python int or str (numpy scalars do not pickle small)."""
    # The table's loader keeps user ids integer or text (mueval.data.table).
    return cast("int | str", user.item() if isinstance(user, np.generic) else user)


#: The most classes :func:`class_counts` names one by one.
SHOWN_CLASSES = 12


def class_counts(y: np.ndarray, classes: Sequence[str] | None) -> str:
    """The class counts of labels ``y`` as ``"name: count, ..."`` (error messages).

    Past :data:`SHOWN_CLASSES` classes, the ones with the fewest rows are named
    (they are why a split fails) and the rest are summed up, so that a table of
    hundreds of classes still gives a message one can read.

    Examples
    --------
    >>> class_counts(np.array([0, 1, 1, 2, 2, 2]), ["sit", "stand", "walk"])
    'sit: 1, stand: 2, walk: 3'
    >>> class_counts(np.repeat(np.arange(20), np.arange(1, 21)), None)
    '0: 1, 1: 2, 2: 3, 3: 4, 4: 5, 5: 6, 6: 7, 7: 8, 8: 9, 9: 10, 10: 11, 11: 12 and 8 more classes with 13 to 20 rows'
    """
    values, counts = np.unique(y, return_counts=True)
    names = [classes[v] if classes is not None else str(v) for v in values]
    if len(values) <= SHOWN_CLASSES:
        return ", ".join(f"{n}: {c}" for n, c in zip(names, counts, strict=True))
    # The fewest first (stable, so ties keep the classes' order).
    order = np.argsort(counts, kind="stable")
    shown, rest = order[:SHOWN_CLASSES], counts[order[SHOWN_CLASSES:]]
    listed = ", ".join(f"{names[i]}: {counts[i]}" for i in shown)
    low, high = int(rest.min()), int(rest.max())
    span = f"{low} rows each" if low == high else f"{low} to {high} rows"
    return f"{listed} and {len(rest)} more classes with {span}"


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
        # scikit-learn lists every class with too few rows: hundreds, at times.
        why = shown(str(exc), 300, quote=False)
        message = (
            f"{what}: cannot split {len(idx)} rows with train_size={train_size} "
            f"(class counts {class_counts(labels, classes)}): {why}"
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
