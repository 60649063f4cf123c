"""Statistics of prediction sets: the study's matrices and honest diagnostics.

Pure numpy functions over arrays. Prediction sets are boolean indicator matrices
``sets`` of shape (n, K): ``sets[r, k]`` is True when class ``k`` is in the set of
row ``r``. Labels are integer class indices in ``0..K-1`` (the run's class order).

Two families live here:

* the study's pictures -- the co-occurrence matrix (pair counts within sets,
  diagonal zero, column-normalised) and the column-normalised confusion matrix
  with rows predicted and columns true;
* the diagnostics the correlation review asks for in place of raw co-occurrence:
  inclusion rates, the co-membership rate E[z_i z_j], the phi coefficient with
  its undefined entries and its never-co-occurring floor, the soft confusion
  matrix E[p_b | y = a], the coverage confusion matrix P(b in S | y = a), a
  bootstrap for all of them, and a check for pooling artefacts across users.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mueval.errors import DataError
from mueval.metrics.array_checks import as_labels, as_sets

__all__ = [
    "SET_STATISTICS",
    "PhiResult",
    "PoolingWarning",
    "bootstrap_ci",
    "bootstrap_set_statistics",
    "column_normalise",
    "comembership_rate",
    "confusion_matrix_colnorm",
    "confusion_matrix_rows",
    "cooccurrence_matrix",
    "coverage_confusion",
    "inclusion_rate",
    "phi_matrix",
    "pooled_vs_per_user",
    "soft_confusion",
]


def _as_sets(sets: np.ndarray) -> np.ndarray:
    return as_sets("sets", sets)


def _as_labels(y: np.ndarray, n_classes: int, name: str) -> np.ndarray:
    return as_labels(name, y, n_classes)


def cooccurrence_matrix(sets: np.ndarray) -> np.ndarray:
    """Count how often each pair of classes shares a prediction set.

    Parameters
    ----------
    sets : ndarray of bool, shape (n, K)

    Returns
    -------
    ndarray of int, shape (K, K)
        ``C[i, j]`` = number of rows whose set holds both ``i`` and ``j``; the
        diagonal is set to zero (a class with itself would dominate the picture).
    """
    z = _as_sets(sets).astype(np.int64)
    counts = z.T @ z
    np.fill_diagonal(counts, 0)
    return counts


def column_normalise(matrix: np.ndarray) -> np.ndarray:
    """Divide every column by its sum.

    Parameters
    ----------
    matrix : ndarray, shape (K, K)

    Returns
    -------
    ndarray of float, shape (K, K)
        Columns summing to one; a column whose sum is zero has nothing to
        normalise and is returned as NaN (shown blank), not as a column of zeros
        that would read as "never".
    """
    m = np.asarray(matrix, dtype=float)
    sums = m.sum(axis=0)
    out = np.full_like(m, np.nan)
    ok = sums > 0
    out[:, ok] = m[:, ok] / sums[ok]
    return out


def confusion_matrix_colnorm(
    y_true: np.ndarray, y_pred: np.ndarray, n_classes: int, *, zero_diagonal: bool = False
) -> np.ndarray:
    """Column-normalised confusion matrix, rows predicted and columns true.

    Parameters
    ----------
    y_true, y_pred : ndarray of int, shape (n,)
    n_classes : int
    zero_diagonal : bool
        The study's ZDCM: the diagonal is set to zero *before* normalising, so each
        column shows where the errors of that true class went.

    Returns
    -------
    ndarray of float, shape (K, K)
        ``M[p, t]`` = share of rows with true class ``t`` predicted as ``p``; NaN
        columns for true classes with no row (or, with ``zero_diagonal``, no error).
    """
    yt = _as_labels(y_true, n_classes, "y_true")
    yp = _as_labels(y_pred, n_classes, "y_pred")
    if yt.shape != yp.shape:
        msg = f"y_true and y_pred: expected the same length, found {yt.size} and {yp.size}"
        raise DataError(msg)
    counts = np.zeros((n_classes, n_classes), dtype=float)
    np.add.at(counts, (yp, yt), 1.0)
    if zero_diagonal:
        np.fill_diagonal(counts, 0.0)
    return column_normalise(counts)


def confusion_matrix_rows(
    y_true: np.ndarray, y_pred: np.ndarray, n_classes: int, *, zero_diagonal: bool = False
) -> np.ndarray:
    """Row-normalised confusion matrix, rows true and columns predicted.

    The orientation of every class-by-class matrix of the report (soft and
    coverage confusion too): the true class down the rows. The study's
    column-normalised matrix (:func:`confusion_matrix_colnorm`), transposed.

    Returns
    -------
    ndarray of float, shape (K, K)
        ``M[t, p]`` = share of rows with true class ``t`` predicted as ``p``; each
        row sums to 1; NaN rows for true classes with no row (or, with
        ``zero_diagonal``, no error).
    """
    return confusion_matrix_colnorm(y_true, y_pred, n_classes, zero_diagonal=zero_diagonal).T


def inclusion_rate(sets: np.ndarray) -> np.ndarray:
    """Share of sets that contain each class, p_i = E[z_i]; shape (K,)."""
    return _as_sets(sets).mean(axis=0)


def comembership_rate(sets: np.ndarray) -> np.ndarray:
    """Share of sets that contain both classes, E[z_i z_j]; shape (K, K).

    The diagonal is the inclusion rate. This is the likelihood of co-occurrence
    that a phi coefficient is often mistaken for.
    """
    z = _as_sets(sets).astype(float)
    return (z.T @ z) / max(z.shape[0], 1)


@dataclass(frozen=True)
class PhiResult:
    """Phi coefficients of set membership and what they must be read against.

    Attributes
    ----------
    phi : ndarray, shape (K, K)
        Pearson correlation of the indicators; NaN where undefined (a class in
        every set or in none has zero variance). Diagonal 1 where defined.
    floor : ndarray, shape (K, K)
        The value phi takes for a pair that never shares a set,
        ``-sqrt(r_i r_j / ((1 - r_i)(1 - r_j)))``: set by the inclusion rates
        alone, so a strongly negative entry at this floor says nothing about the
        classifier. NaN where undefined.
    undefined : ndarray of bool, shape (K,)
        Classes with inclusion rate 0 or 1.
    """

    phi: np.ndarray
    floor: np.ndarray
    undefined: np.ndarray


def phi_matrix(sets: np.ndarray) -> PhiResult:
    """Phi coefficient (conformal correlation matrix) with its floor.

    Parameters
    ----------
    sets : ndarray of bool, shape (n, K)

    Returns
    -------
    PhiResult
    """
    z = _as_sets(sets)
    return _phi_from_rates(inclusion_rate(z), comembership_rate(z))


def _phi_from_rates(r: np.ndarray, e: np.ndarray) -> PhiResult:
    """Phi from the inclusion rates ``r`` (K,) and co-membership rates ``e`` (K, K)."""
    var = r * (1.0 - r)
    undefined = ~((r > 0) & (r < 1))
    denom = np.sqrt(np.outer(var, var))
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = (e - np.outer(r, r)) / denom
        odds = r / (1.0 - r)
        floor = -np.sqrt(np.outer(odds, odds))
    bad = undefined[:, None] | undefined[None, :]
    phi[bad] = np.nan
    floor[bad] = np.nan
    # Rounding can push a perfect correlation a hair past 1.
    phi = np.clip(phi, -1.0, 1.0)
    return PhiResult(phi=phi, floor=floor, undefined=undefined)


def soft_confusion(scores: np.ndarray, y_true: np.ndarray) -> np.ndarray:
    """Soft confusion matrix C[a, b] = E[p_b | y = a].

    Parameters
    ----------
    scores : ndarray of float, shape (n, K)
        Class probabilities (or p-values) per row, in class order.
    y_true : ndarray of int, shape (n,)

    Returns
    -------
    ndarray of float, shape (K, K)
        Rows the true class ``a``, columns the class ``b``; NaN rows for classes
        with no row. Directional and threshold free.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 2:
        msg = f"scores: expected shape (n, K), found {s.shape}"
        raise DataError(msg)
    y = _as_labels(y_true, s.shape[1], "y_true")
    if y.size != s.shape[0]:
        msg = (
            f"scores and y_true: expected the same number of rows, found {s.shape[0]} and {y.size}"
        )
        raise DataError(msg)
    k = s.shape[1]
    sums = np.zeros((k, k))
    np.add.at(sums, y, s)
    n = np.bincount(y, minlength=k).astype(float)
    out = np.full((k, k), np.nan)
    out[n > 0] = sums[n > 0] / n[n > 0, None]
    return out


def coverage_confusion(sets: np.ndarray, y_true: np.ndarray) -> np.ndarray:
    """Coverage confusion matrix (Stutz et al.) P(b in S | y = a).

    Parameters
    ----------
    sets : ndarray of bool, shape (n, K)
    y_true : ndarray of int, shape (n,)

    Returns
    -------
    ndarray of float, shape (K, K)
        Rows the true class ``a``, columns ``b``; the diagonal is the class-wise
        coverage. NaN rows for classes with no row.
    """
    z = _as_sets(sets).astype(float)
    return soft_confusion(z, y_true)


def bootstrap_ci(
    stat_fn: Callable[..., np.ndarray],
    *arrays: np.ndarray,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval for every entry of a statistic.

    Parameters
    ----------
    stat_fn : callable
        ``stat_fn(*arrays)`` returns an array of any fixed shape.
    *arrays : ndarray
        Arrays sharing their first axis (rows), resampled together.
    n_boot : int
    level : float
        Coverage of the interval, e.g. 0.95.
    seed : int
    groups : ndarray, shape (n,), optional
        Cluster labels (users): when given, whole clusters are resampled, so the
        interval carries the between-user variation of a pooled statistic.

    Returns
    -------
    (low, high) : tuple of ndarray, each of the statistic's shape
        NaN where the statistic was undefined in more than half the resamples.
    """
    if not arrays:
        msg = "bootstrap_ci: expected at least one array to resample, found none"
        raise DataError(msg)
    n = np.asarray(arrays[0]).shape[0]
    for a in arrays[1:]:
        if np.asarray(a).shape[0] != n:
            msg = f"bootstrap_ci: expected arrays with {n} rows, found {np.asarray(a).shape[0]}"
            raise DataError(msg)
    rng = np.random.default_rng(seed)
    if groups is not None:
        g = np.asarray(groups)
        labels, inverse = np.unique(g, return_inverse=True)
        members = [np.flatnonzero(inverse == i) for i in range(labels.size)]
    draws = []
    for _ in range(n_boot):
        if groups is None:
            idx = np.asarray(rng.integers(0, n, size=n))
        else:
            pick = rng.integers(0, len(members), size=len(members))
            idx = np.concatenate([members[i] for i in pick])
        draws.append(np.asarray(stat_fn(*(np.asarray(a)[idx] for a in arrays)), dtype=float))
    return _percentile_interval(np.stack(draws), level)


def _percentile_interval(stack: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of resampled statistics ``stack`` (n_boot, *S), as
    :func:`bootstrap_ci` forms it."""
    tail = (1.0 - level) / 2.0 * 100.0
    enough = np.isfinite(stack).mean(axis=0) > 0.5
    # All-NaN entries (undefined in every resample) warn; they are masked below.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low = np.nanpercentile(stack, tail, axis=0)
        high = np.nanpercentile(stack, 100.0 - tail, axis=0)
    return np.where(enough, low, np.nan), np.where(enough, high, np.nan)


#: The statistics :func:`bootstrap_set_statistics` returns, by name.
SET_STATISTICS = ("inclusion", "co-membership", "phi", "soft", "coverage confusion")


def _set_statistics(totals: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The set statistics from row totals: ``n`` (), ``z`` (K,), ``zz`` (K, K),
    ``per_class`` (K,), ``proba_by_class`` and ``sets_by_class`` (K, K).

    Each is the function of this module applied to the rows the totals sum
    (:func:`inclusion_rate`, :func:`comembership_rate`, :func:`phi_matrix`,
    :func:`soft_confusion`, :func:`coverage_confusion`), in the same arithmetic.
    """
    n = float(totals["n"])
    r = totals["z"] / n if n > 0 else np.full(totals["z"].shape, np.nan)
    e = totals["zz"] / max(n, 1.0)
    counts = totals["per_class"]
    has = counts > 0
    by_class = {}
    for name in ("proba_by_class", "sets_by_class"):
        out = np.full(totals[name].shape, np.nan)
        out[has] = totals[name][has] / counts[has, None]
        by_class[name] = out
    return {
        "inclusion": r,
        "co-membership": e,
        "phi": _phi_from_rates(r, e).phi,
        "soft": by_class["proba_by_class"],
        "coverage confusion": by_class["sets_by_class"],
    }


def _weighted_totals(
    zf: np.ndarray, one_hot: np.ndarray, scores: np.ndarray, weights: np.ndarray
) -> dict[str, np.ndarray]:
    """Row totals, each row counted ``weights`` times (integers: 0/1 sums stay exact)."""
    wz = zf * weights[:, None]
    wy = one_hot * weights[:, None]
    return {
        "n": weights.sum(),
        "z": wz.sum(axis=0),
        "zz": wz.T @ zf,
        "per_class": wy.sum(axis=0),
        "proba_by_class": wy.T @ scores,
        "sets_by_class": wy.T @ zf,
    }


def bootstrap_set_statistics(
    sets: np.ndarray,
    y_true: np.ndarray,
    scores: np.ndarray,
    *,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Percentile bootstrap intervals of every set statistic, from the same resamples.

    Every statistic here is a ratio of sums over rows, so a resample's value
    follows from each group's totals weighted by how often the resample drew the
    group: the rows are summed once, not once per resample. The resamples are
    the ones :func:`bootstrap_ci` draws with the same ``seed`` and ``groups``
    (each row its own group when ``groups`` is None), and so are the intervals,
    up to the order in which floating-point probabilities are added.

    Parameters
    ----------
    sets : ndarray of bool, shape (n, K)
    y_true : ndarray of int, shape (n,)
    scores : ndarray of float, shape (n, K)
        Class probabilities, for the soft confusion matrix.
    n_boot, level, seed, groups
        As for :func:`bootstrap_ci`.

    Returns
    -------
    dict
        For each name of :data:`SET_STATISTICS`, ``(low, high)`` of the
        statistic's shape: (K,) for the inclusion rates, (K, K) for the others.
    """
    z = _as_sets(sets)
    n, k = z.shape
    s = np.asarray(scores, dtype=float)
    if s.shape != (n, k):
        msg = f"scores: expected shape {(n, k)} (as sets), found {s.shape}"
        raise DataError(msg)
    y = _as_labels(y_true, k, "y_true")
    if y.size != n:
        msg = f"sets and y_true: expected the same number of rows, found {n} and {y.size}"
        raise DataError(msg)
    zf = z.astype(float)
    one_hot = np.zeros((n, k))
    one_hot[np.arange(n), y] = 1.0
    rng = np.random.default_rng(seed)
    draws: dict[str, list[np.ndarray]] = {name: [] for name in SET_STATISTICS}
    if groups is None:
        # Each row its own group: a resample is a weight per row (memory O(n K)).
        def resample() -> dict[str, np.ndarray]:
            weights = np.bincount(rng.integers(0, n, size=n), minlength=n).astype(float)
            return _weighted_totals(zf, one_hot, s, weights)

    else:
        g = np.asarray(groups)
        if g.shape[0] != n:
            msg = f"groups: expected {n} rows (as sets), found {g.shape[0]}"
            raise DataError(msg)
        labels, inverse = np.unique(g, return_inverse=True)
        # Group i is labels[i], as bootstrap_ci numbers them: the same draws pick it.
        per_group = [
            _weighted_totals(zf[m], one_hot[m], s[m], np.ones(int(m.sum())))
            for m in (inverse == i for i in range(labels.size))
        ]
        stacked = {name: np.stack([t[name] for t in per_group]) for name in per_group[0]}

        def resample() -> dict[str, np.ndarray]:
            size = labels.size
            weights = np.bincount(rng.integers(0, size, size=size), minlength=size).astype(float)
            return {name: np.tensordot(weights, t, axes=1) for name, t in stacked.items()}

    for _ in range(n_boot):
        for name, value in _set_statistics(resample()).items():
            draws[name].append(value)
    return {name: _percentile_interval(np.stack(draws[name]), level) for name in SET_STATISTICS}


@dataclass(frozen=True)
class PoolingWarning:
    """One matrix entry where pooling users says something no user says.

    ``kind`` is ``"reversal"`` (the pooled sign differs from every user's sign and
    some user has the opposite sign) or ``"inflation"`` (the pooled value lies
    above every user's value, or below every user's value -- e.g. a pooled
    correlation of 0.64 from users who each show 0).
    """

    index: tuple[int, ...]
    kind: str
    pooled: float
    user_min: float
    user_max: float
    n_users: int

    def describe(self, names: Sequence[str] | None = None) -> str:
        """A sentence for the report, naming the entry by class names if given."""
        where = ", ".join(names[i] if names is not None else str(i) for i in self.index)
        if self.kind == "reversal":
            what = "has the opposite sign to every user's value"
        elif self.pooled > self.user_max:
            what = "is larger than every user's value"
        else:
            what = "is smaller than every user's value"
        return (
            f"({where}): pooled {self.pooled:.3f} {what} "
            f"(users: {self.user_min:.3f} to {self.user_max:.3f}, {self.n_users} users)"
        )


def pooled_vs_per_user(
    pooled: np.ndarray,
    per_user: Mapping[object, np.ndarray] | np.ndarray,
    *,
    tol: float = 1e-9,
    min_users: int = 2,
) -> list[PoolingWarning]:
    """Find entries where the pooled statistic reverses or exceeds every user's.

    Parameters
    ----------
    pooled : ndarray, shape S
        The statistic on all users' rows together.
    per_user : mapping user -> ndarray of shape S, or ndarray of shape (U, *S)
        The same statistic on each user's rows alone; NaN entries (undefined for
        that user) are ignored.
    tol : float
        Differences smaller than this are ties; values within it of zero have
        no sign.
    min_users : int
        Entries defined for fewer users are not judged.

    Returns
    -------
    list of PoolingWarning
        In index order; an entry that is both a reversal and outside the users'
        range is reported once, as a reversal.
    """
    p = np.asarray(pooled, dtype=float)
    if isinstance(per_user, Mapping):
        stack = np.stack([np.asarray(v, dtype=float) for v in per_user.values()])
    else:
        stack = np.asarray(per_user, dtype=float)
    if stack.shape[1:] != p.shape:
        msg = f"per_user: expected entries of shape {p.shape}, found {stack.shape[1:]}"
        raise DataError(msg)
    out: list[PoolingWarning] = []
    for index in np.ndindex(p.shape):
        pv = p[index]
        uv = stack[(slice(None), *index)]
        uv = uv[np.isfinite(uv)]
        if not np.isfinite(pv) or uv.size < min_users:
            continue
        lo, hi = float(uv.min()), float(uv.max())
        psign = 0 if abs(pv) <= tol else int(np.sign(pv))
        usign = np.where(np.abs(uv) <= tol, 0, np.sign(uv)).astype(int)
        if psign != 0 and np.all(usign != psign) and np.any(usign == -psign):
            kind = "reversal"
        elif pv > hi + tol or pv < lo - tol:
            kind = "inflation"
        else:
            continue
        out.append(PoolingWarning(index, kind, float(pv), lo, hi, int(uv.size)))
    return out
