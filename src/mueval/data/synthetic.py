"""Synthetic multi-user activity tables, for tests and scale benchmarks.

Real datasets stop at a few dozen users; :func:`make_users` makes as many as a
benchmark needs, with the two things that make the multi-user strategies differ:
each user's rows are shifted in feature space (drift), so a model trained on
other users fits a new one less well, and each user does the activities in
different proportions (imbalance).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mueval.errors import UsageError

__all__ = ["MIN_PER_CLASS", "make_users"]

#: Rows of every class each user keeps at least: UCM halves a user's rows with
#: a stratified split, which needs two rows of a class, and the user filter of
#: the real datasets keeps users with five.
MIN_PER_CLASS = 5


def make_users(
    n_users: int,
    *,
    n_classes: int = 4,
    rows_per_user: int = 80,
    n_features: int = 8,
    drift: float = 1.0,
    imbalance: float = 0.5,
    seed: int = 0,
) -> pd.DataFrame:
    """A table of ``n_users`` users with per-user drift and class imbalance.

    Every class has a centre in feature space (standard normal, times 2), the
    same for all users. Each user gets an offset drawn from a normal of scale
    ``drift``, added to all of its rows, and class proportions mixing the
    uniform ones with a flat Dirichlet draw (weight ``imbalance``). Every user
    keeps :data:`MIN_PER_CLASS` rows of each class; the rest of its rows are
    drawn with its proportions. A row is its class centre plus the user's
    offset plus standard normal noise.

    Parameters
    ----------
    n_users : int
        Number of users (at least 2); ids 1 to ``n_users``.
    n_classes : int
        Number of classes (at least 2), named ``"c0"``, ``"c1"``, ...
    rows_per_user : int
        Rows of every user, at least ``MIN_PER_CLASS * n_classes``.
    n_features : int
        Numeric feature columns ``f0``, ``f1``, ...
    drift : float
        Scale of the per-user offset (0: every user alike).
    imbalance : float
        From 0 (every class equally likely) to 1 (proportions from a flat
        Dirichlet draw per user).
    seed : int
        Seed of ``numpy.random.default_rng``; the same seed gives the same table.

    Returns
    -------
    DataFrame of shape (n_users * rows_per_user, 2 + n_features)
        Columns ``userid`` (int), ``label`` (str), then the features; rows
        grouped by user, ascending.

    Examples
    --------
    >>> frame = make_users(3, n_classes=2, rows_per_user=20, n_features=2, seed=1)
    >>> frame.shape
    (60, 4)
    >>> frame.columns.tolist()
    ['userid', 'label', 'f0', 'f1']
    >>> int(frame.groupby(["userid", "label"]).size().min()) >= MIN_PER_CLASS
    True
    """
    if n_users < 2 or n_classes < 2:
        message = f"need at least 2 users and 2 classes, got {n_users} and {n_classes}"
        raise UsageError(message)
    if rows_per_user < MIN_PER_CLASS * n_classes:
        message = (
            f"rows_per_user={rows_per_user} is below {MIN_PER_CLASS} rows of each of "
            f"{n_classes} classes ({MIN_PER_CLASS * n_classes})"
        )
        raise UsageError(message)
    if not 0.0 <= imbalance <= 1.0 or drift < 0:
        message = f"imbalance must be in [0, 1] and drift >= 0, got {imbalance} and {drift}"
        raise UsageError(message)
    rng = np.random.default_rng(seed)
    centres = 2.0 * rng.standard_normal((n_classes, n_features))
    offsets = drift * rng.standard_normal((n_users, n_features))
    shares = (1 - imbalance) / n_classes + imbalance * rng.dirichlet(
        np.ones(n_classes), size=n_users
    )
    free = rows_per_user - MIN_PER_CLASS * n_classes
    # Counts per user and class: the guaranteed rows plus a multinomial draw.
    counts = MIN_PER_CLASS + np.array([rng.multinomial(free, p) for p in shares])
    labels = np.concatenate([np.repeat(np.arange(n_classes), c) for c in counts])
    users = np.repeat(np.arange(n_users), rows_per_user)
    noise = rng.standard_normal((n_users * rows_per_user, n_features))
    features = centres[labels] + offsets[users] + noise
    frame = pd.DataFrame(features, columns=[f"f{j}" for j in range(n_features)])
    frame.insert(0, "label", np.array([f"c{k}" for k in range(n_classes)])[labels])
    frame.insert(0, "userid", users + 1)
    return frame
