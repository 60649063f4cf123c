"""UKM, user-clustered calibration: a user with few labelled rows borrows the
calibration rows of the users whose scores look like its own.

Clustered conformal prediction (Ding, Angelopoulos, Bates, Jordan and
Tibshirani, "Class-conditional conformal prediction with many classes",
NeurIPS 2023) pools the calibration scores of classes whose score
distributions look alike. Here the groups are users, not classes. In one
iteration, for one target user and the model trained without it:

1. **Embed.** Every other user is embedded by the quantiles of its
   calibration non-conformity scores (its rows of UIM's calibration set,
   scored at their true class) at the levels :func:`embedding_levels`,
   ``{0.5, 0.6, 0.7, 0.8, 0.9}`` and ``1 - alpha``, Ding et al.'s choice
   (``numpy.quantile``'s default, linear interpolation).
2. **Cluster.** scikit-learn's ``KMeans`` (``n_init=10``, ``random_state``
   the iteration's seed) cuts the other users into ``clusters`` groups;
   by default Ding et al.'s heuristic (:func:`heuristic_clusters`).
3. **Calibrate.** A target with at least ``min_own`` own calibration rows is
   calibrated on them, exactly as UCM (:func:`default_min_own`). A target
   with fewer, but at least one, is calibrated on the pooled calibration rows
   of one cluster's users: by default (``assign="rank"``) the cluster under
   whose pooled scores its own scores have a mean mid-rank closest to 1/2;
   with ``assign="centroid"``, the nearest centroid (Euclidean) to its own
   rows' score quantiles (:data:`ASSIGN_RULES`). A target with no own row is
   calibrated on every other user's rows (Ding et al.'s "null cluster"),
   that is, exactly as UIM.

Three departures from the paper. The default ``assign="rank"`` is not Ding
et al.'s centroid rule (they embed classes with enough rows; a new user has
a handful). The other two are forced by users not being classes:
Ding et al. hold out a share of each class's rows for the clustering, so
that within a cluster the calibration rows stay exchangeable given the
clustering; a target user's test rows are not exchangeable with another
user's rows anyway, so nothing is gained by holding rows out, and every
other user's calibration rows serve both to embed and to calibrate. And the
target's own few rows choose its cluster but are not added to the cluster's
rows (the calibration set is the cluster's, as stated).

A cluster-calibrated user has no finite-sample guarantee: its test rows are
not exchangeable with its cluster's rows. So ukm's users get no exact
per-user verdict (the record's ``no_verdict``); a user with at least
``min_own`` rows has UCM's thresholds, and UCM's verdict in the same run
applies to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.cluster import KMeans

from mueval.conformal.scores import ConformityScore, class_scores
from mueval.conformal.thresholds import min_calibration_size
from mueval.names import UKM_ASSIGN_RULES

__all__ = [
    "ASSIGN_RULES",
    "EMBEDDING_LEVELS",
    "Choice",
    "choose_calibration",
    "cluster_users",
    "clustered_note",
    "default_min_own",
    "embed",
    "embedding_levels",
    "heuristic_clusters",
    "true_class_scores",
]

#: How a target with too few own rows finds its cluster: ``rank`` (the
#: default), the cluster under whose pooled scores its own scores have a mean
#: mid-rank closest to 1/2, which is unbiased for any number of own rows;
#: ``centroid``, the nearest k-means centroid to its own rows' score quantiles
#: (Ding et al.'s embedding), which the upper quantiles of 5 or 10 rows bias
#: towards easier clusters (docs/per-user-guarantees.md, section 6, measures both).
ASSIGN_RULES: tuple[str, ...] = UKM_ASSIGN_RULES

#: The fixed quantile levels of the embedding; ``1 - alpha`` is added to them.
EMBEDDING_LEVELS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)


def embedding_levels(alpha: float) -> np.ndarray:
    """The quantile levels a user is embedded by: :data:`EMBEDDING_LEVELS` and ``1 - alpha``.

    Examples
    --------
    >>> embedding_levels(0.05).tolist()
    [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    """
    return np.array(sorted({*EMBEDDING_LEVELS, round(1.0 - alpha, 12)}))


def default_min_own(alpha: float) -> int:
    """The default ``min_own``: the smallest calibration set mueval thresholds.

    The split-conformal threshold is the ``ceil((n + 1)(1 - alpha))``-th
    smallest of ``n`` scores, which exists (is not the trivial infinite
    threshold) from ``n = ceil(1/alpha) - 1`` on, 19 at ``alpha = 0.05``.
    mueval and MAPIE refuse a calibration set below ``max(1/alpha,
    1/(1-alpha))`` rows (:func:`~mueval.conformal.thresholds.min_calibration_size`,
    20 at ``alpha = 0.05``), one more: a user with fewer rows than that would
    get the ``--small-cal`` answer on its own rows, so it borrows instead.

    Examples
    --------
    >>> default_min_own(0.05), default_min_own(0.1)
    (20, 10)
    """
    return min_calibration_size(alpha)


def heuristic_clusters(rows_per_user: float, n_users: int) -> int:
    """Ding et al.'s number of clusters, with users for classes.

    Their heuristic (at least about 150 rows per cluster on average, more
    rows to tell more distributions apart): ``n_clustering = floor(N K / (75 +
    K))`` and ``M = floor(n_clustering / 2)``, with ``N`` the rows per user
    (here the median of the other users' calibration rows) and ``K`` the
    number of users; clipped to ``1..K``.

    Examples
    --------
    >>> heuristic_clusters(100, 30), heuristic_clusters(10, 4), heuristic_clusters(500, 3)
    (14, 1, 3)
    """
    n_clustering = int(np.floor(rows_per_user * n_users / (75 + n_users)))
    return int(min(max(n_clustering // 2, 1), n_users))


def true_class_scores(proba: np.ndarray, y: np.ndarray, score: ConformityScore) -> np.ndarray:
    """Non-conformity score of every row at its true class (the calibration scores)."""
    return class_scores(proba, score)[np.arange(len(y)), y]


def embed(scores: np.ndarray, alpha: float) -> np.ndarray:
    """A user's embedding: the quantiles of its scores at :func:`embedding_levels`."""
    return np.quantile(np.asarray(scores, dtype=float), embedding_levels(alpha))


def cluster_users(
    scores: np.ndarray, users: np.ndarray, alpha: float, n_clusters: int | None, seed: int
) -> tuple[list[object], np.ndarray, np.ndarray]:
    """k-means clusters of the users by their score quantiles.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Calibration scores of the other users' rows.
    users : ndarray of shape (n,)
        The user of each row.
    alpha : float
    n_clusters : int or None
        Number of clusters (None: :func:`heuristic_clusters`); at most the
        number of users.
    seed : int
        ``random_state`` of ``KMeans``.

    Returns
    -------
    names : list
        The users, ascending.
    labels : ndarray of int, shape (n_users,)
        The cluster of each user of ``names``.
    centroids : ndarray of shape (n_clusters, n_levels)
    """
    names, codes = np.unique(users, return_inverse=True)
    codes = codes.ravel()
    points = np.stack([embed(scores[codes == k], alpha) for k in range(len(names))])
    if n_clusters is None:
        n_clusters = heuristic_clusters(float(np.median(np.bincount(codes))), len(names))
    n_clusters = min(n_clusters, len(names))
    # Users whose embeddings coincide make fewer distinct points than
    # clusters; KMeans then warns and repeats a centroid. Ask for no more
    # clusters than distinct points.
    n_clusters = min(n_clusters, len(np.unique(points, axis=0)))
    model = KMeans(n_clusters=n_clusters, n_init=10, random_state=seed).fit(points)
    return names.tolist(), model.labels_.astype(int), model.cluster_centers_


@dataclass(frozen=True)
class Choice:
    """The calibration rows UKM chose for one target.

    Attributes
    ----------
    rows : ndarray of int
        Positions into the concatenation (own rows, then the pool's rows).
    how : {"own", "cluster", "all"}
        Own rows (UCM), a cluster of other users, or every other user (UIM:
        no own row to embed).
    cluster : tuple
        The users whose rows calibrate (empty for ``"own"``).
    """

    rows: np.ndarray
    how: str
    cluster: tuple[object, ...] = ()


def _rank_nearest(
    own_scores: np.ndarray,
    pool_scores: np.ndarray,
    pool_users: np.ndarray,
    names: Sequence[object],
    labels: np.ndarray,
) -> int:
    """The cluster under whose pooled scores the target's scores have a mean
    mid-rank (the empirical CDF, ties counted half) closest to 1/2; ties: the
    lowest cluster index."""
    label_of = dict(zip(names, labels.tolist(), strict=True))
    pool_labels = np.array([label_of[u] for u in pool_users.tolist()])
    gaps = []
    for c in range(int(labels.max()) + 1):
        ref = np.sort(pool_scores[pool_labels == c])
        below = np.searchsorted(ref, own_scores, side="left")
        tied = np.searchsorted(ref, own_scores, side="right") - below
        gaps.append(abs(float(np.mean((below + 0.5 * tied) / len(ref))) - 0.5))
    return int(np.argmin(gaps))


def choose_calibration(
    own_scores: np.ndarray,
    pool_scores: np.ndarray,
    pool_users: np.ndarray,
    *,
    alpha: float,
    min_own: int | None,
    n_clusters: int | None,
    seed: int,
    assign: str = "rank",
) -> Choice:
    """UKM's rule: own rows from ``min_own`` on, else the nearest cluster's rows.

    Parameters
    ----------
    own_scores : ndarray of shape (n_own,)
        Calibration scores of the target's own calibration rows.
    pool_scores : ndarray of shape (n_pool,)
        Calibration scores of the other users' calibration rows.
    pool_users : ndarray of shape (n_pool,)
        Their users.
    alpha : float
    min_own : int or None
        None: :func:`default_min_own`.
    n_clusters : int or None
        None: :func:`heuristic_clusters`.
    seed : int
        The iteration's seed (k-means).
    assign : {"centroid", "rank"}
        How a target below ``min_own`` finds its cluster (:data:`ASSIGN_RULES`).

    Returns
    -------
    Choice
        Its ``rows`` index ``concatenate([own, pool])``.
    """
    n_own = len(own_scores)
    if min_own is None:
        min_own = default_min_own(alpha)
    if n_own >= min_own:
        return Choice(np.arange(n_own), "own")
    names, labels, centroids = cluster_users(pool_scores, pool_users, alpha, n_clusters, seed)
    if n_own == 0:
        members: Sequence[object] = names
        how = "all"
    else:
        if assign == "rank":
            nearest = _rank_nearest(own_scores, pool_scores, pool_users, names, labels)
        else:
            distances = ((centroids - embed(own_scores, alpha)) ** 2).sum(axis=1)
            nearest = int(np.argmin(distances))  # ties: the lowest cluster index
        members = [u for u, label in zip(names, labels, strict=True) if label == nearest]
        how = "cluster"
    in_cluster = np.isin(pool_users, np.asarray(members, dtype=pool_users.dtype))
    return Choice(n_own + np.flatnonzero(in_cluster), how, tuple(members))


def clustered_note(config: Any) -> str:
    """The run note that says how UKM calibrated (run.json's ``notes``), from an
    :class:`~mueval.evaluation.records.EvalConfig`."""
    alpha = config.conformal.alpha
    threshold = default_min_own(alpha) if config.min_own is None else config.min_own
    how_many = "Ding et al.'s heuristic" if config.clusters is None else str(config.clusters)
    kept = (
        ""
        if config.own_rows is None
        else f"; only the first {config.own_rows} own calibration rows kept"
    )
    finds = {
        "centroid": "the nearest centroid to its own rows' quantiles",
        "rank": "the cluster where its own scores' mean mid-rank is closest to 1/2",
    }[config.assign]
    return (
        f"ukm: a target user with fewer than {threshold} own calibration rows calibrates on the "
        f"other users of its k-means cluster ({how_many} clusters of the users' score quantiles "
        f"at {', '.join(f'{q:g}' for q in embedding_levels(alpha))}; its cluster: {finds}; no "
        f"own row: every other user, as uim), the others on their own rows, as ucm{kept}; ukm "
        "has no per-user verdict"
    )
