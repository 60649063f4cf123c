"""Conditional-coverage diagnostics for prediction sets.

Each function takes the coverage indicator ``covered`` (bool ``(n,)``, True
when the true class is in the set) and what coverage is conditioned on: set
sizes, groups (users, classes), or features ``X``. They follow the MAPIE 1.6
"Metrics for Conformal Prediction - Theory" page and the papers cited there,
implemented here with numpy and scikit-learn only.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mueval.metrics.array_checks import (
    MetricInputError,
    as_bool_vector,
    as_float_matrix,
    as_float_vector,
    check_alpha,
    check_same_rows,
)

__all__ = [
    "coverage_gap",
    "excess_risk_target_coverage",
    "hsic",
    "size_stratified_coverage",
    "weighted_coverage_gap",
    "worst_slab_coverage",
]


def size_stratified_coverage(
    covered: ArrayLike, set_size: ArrayLike
) -> dict[int, tuple[float, int]]:
    """Coverage within each observed set size (Angelopoulos et al., ICLR 2021).

    Parameters
    ----------
    covered : array of bool, shape (n,)
        Coverage indicator.
    set_size : array of int, shape (n,)
        Size of each row's prediction set (``sets.sum(axis=1)``), >= 0.

    Returns
    -------
    dict
        ``{size: (coverage, count)}`` for every size present, ascending; the
        coverage of size 0 is always 0.
    """
    covered = as_bool_vector("covered", covered)
    sizes = np.asarray(set_size)
    if sizes.ndim != 1 or not np.issubdtype(sizes.dtype, np.integer):
        found = f"dtype {sizes.dtype} and shape {sizes.shape}"
        message = f"set_size must be a 1-D integer array; found {found}"
        raise MetricInputError(message)
    if sizes.size and sizes.min() < 0:
        message = f"set_size must be >= 0; found minimum {sizes.min()} (shape {sizes.shape})"
        raise MetricInputError(message)
    check_same_rows(covered=covered, set_size=sizes)
    values, inverse, counts = np.unique(sizes, return_inverse=True, return_counts=True)
    hits = np.bincount(inverse, weights=covered, minlength=values.size)
    return {int(v): (float(h / c), int(c)) for v, h, c in zip(values, hits, counts, strict=True)}


def _group_codes(groups: ArrayLike, n: int) -> tuple[NDArray[np.int64], int]:
    """Integer codes ``0..G-1`` for any array of hashable group labels."""
    arr = np.asarray(groups)
    if arr.ndim != 1:
        message = f"groups must be a 1-D array of group labels; found shape {arr.shape}"
        raise MetricInputError(message)
    if arr.shape[0] != n:
        message = f"groups must have one label per row of covered ({n}); found shape {arr.shape}"
        raise MetricInputError(message)
    if arr.dtype != object:
        _, codes = np.unique(arr, return_inverse=True)
        return codes.astype(np.int64), int(codes.max()) + 1 if n else 0
    # Object arrays may mix types np.unique cannot sort; a dict only needs hashing.
    seen: dict[Hashable, int] = {}
    codes = np.fromiter((seen.setdefault(g, len(seen)) for g in arr), dtype=np.int64, count=n)
    return codes, len(seen)


def _group_gaps(
    covered: ArrayLike, groups: ArrayLike, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    covered = as_bool_vector("covered", covered)
    alpha = check_alpha(alpha)
    if covered.size == 0:
        message = "covered must hold at least one row; found shape (0,)"
        raise MetricInputError(message)
    codes, n_groups = _group_codes(groups, covered.size)
    counts = np.bincount(codes, minlength=n_groups).astype(np.float64)
    group_cov = np.bincount(codes, weights=covered, minlength=n_groups) / counts
    return np.abs(group_cov - (1.0 - alpha)), counts


def coverage_gap(covered: ArrayLike, groups: ArrayLike, alpha: float) -> float:
    """CovGap: mean over groups of ``|coverage_g - (1 - alpha)|``.

    Every observed group weighs the same (Ding, Angelopoulos, Bates, Jordan,
    Tibshirani, "Class-conditional conformal prediction with many classes",
    NeurIPS 2023). A fraction, not a percentage.

    Parameters
    ----------
    covered : array of bool, shape (n,)
        Coverage indicator.
    groups : array, shape (n,)
        Any hashable group label per row (user id, class, ...).
    alpha : float
        Target miscoverage level in (0, 1).

    Returns
    -------
    float
    """
    gaps, _ = _group_gaps(covered, groups, alpha)
    return float(gaps.mean())


def weighted_coverage_gap(covered: ArrayLike, groups: ArrayLike, alpha: float) -> float:
    """WCovGap: ``sum_g (|I_g| / n) |coverage_g - (1 - alpha)|``.

    Like :func:`coverage_gap` (same parameters, a float too) but each group
    weighs its share of the rows.
    """
    gaps, counts = _group_gaps(covered, groups, alpha)
    return float(np.sum(counts / counts.sum() * gaps))


# ---------------------------------------------------------------------------
# HSIC
# ---------------------------------------------------------------------------


def _median_nonzero_distance(values: np.ndarray, counts: np.ndarray) -> float:
    """Median of the nonzero ``|x_i - x_j|`` over row pairs ``i < j``.

    Computed from the distinct values and their counts (pair weight
    ``count_p * count_q``); the lower median (smallest distance whose
    cumulative weight reaches half the total). 1.0 when all values are equal.
    """
    if values.size < 2:
        return 1.0
    p, q = np.triu_indices(values.size, k=1)
    dist = np.abs(values[p] - values[q])
    weight = counts[p] * counts[q]
    order = np.argsort(dist, kind="stable")
    cumulative = np.cumsum(weight[order])
    return float(dist[order][np.searchsorted(cumulative, cumulative[-1] / 2.0)])


def hsic(
    set_size: ArrayLike,
    covered: ArrayLike,
    *,
    bandwidths: tuple[float, float] | None = None,
    max_distinct: int = 2000,
    random_state: int = 0,
) -> float:
    """Biased HSIC between set size and coverage, Gaussian kernels.

    ``HSIC_b = trace(K H L H) / n^2`` with ``H = I - 11^T/n``, ``K_ij =
    exp(-(s_i - s_j)^2 / (2 sigma_s^2))`` on set sizes and ``L`` the same on
    the 0/1 coverage indicator (Gretton, Bousquet, Smola, Schoelkopf, ALT 2005;
    Gretton et al., JMLR 2012). It is >= 0, and 0 when the empirical joint
    distribution is the product of its marginals. MAPIE's ``hsic`` (regression)
    instead divides by ``(n-1)^2``, uses fixed kernel widths and returns the
    square root.

    Because both kernels depend on the values only, the statistic is computed
    exactly from the table of distinct values and their joint counts, in
    ``O(u^2)`` memory for ``u`` distinct set sizes, for any ``n``. Only when
    ``set_size`` has more than ``max_distinct`` distinct values (real-valued
    widths, not class-set sizes) is the statistic computed on ``max_distinct``
    rows drawn without replacement with ``numpy.random.default_rng(random_state)``.

    Parameters
    ----------
    set_size : array of int or float, shape (n,)
        Set size (or interval width) per row.
    covered : array of bool, shape (n,)
        Coverage indicator.
    bandwidths : (float, float), optional
        Kernel widths ``(sigma_s, sigma_c)``. Default: median heuristic, the
        median nonzero pairwise distance of each variable (1.0 for the 0/1
        indicator, and for a constant variable).
    max_distinct : int, default 2000
        Cap on distinct set-size values before subsampling (see above).
    random_state : int, default 0
        Seed of the subsample.

    Returns
    -------
    float
        ``nan`` when ``n = 0``.
    """
    sizes = as_float_vector("set_size", set_size)
    covered = as_bool_vector("covered", covered)
    check_same_rows(set_size=sizes, covered=covered)
    if sizes.size == 0:
        return math.nan
    values, inverse = np.unique(sizes, return_inverse=True)
    if values.size > max_distinct:
        rng = np.random.default_rng(random_state)
        keep = np.sort(rng.choice(sizes.size, size=max_distinct, replace=False))
        sizes, covered = sizes[keep], covered[keep]
        values, inverse = np.unique(sizes, return_inverse=True)
    n = sizes.size
    cov_values = np.array([0.0, 1.0])
    joint = np.zeros((values.size, 2))
    np.add.at(joint, (inverse, covered.astype(np.int64)), 1.0)
    count_s, count_c = joint.sum(axis=1), joint.sum(axis=0)

    if bandwidths is None:
        sigma_s = _median_nonzero_distance(values, count_s)
        sigma_c = _median_nonzero_distance(cov_values[count_c > 0], count_c[count_c > 0])
    else:
        sigma_s, sigma_c = (float(b) for b in bandwidths)
        if not (sigma_s > 0 and sigma_c > 0):
            message = f"bandwidths must be two positive numbers; found {bandwidths!r}"
            raise MetricInputError(message)
    k_values = np.exp(-(np.subtract.outer(values, values) ** 2) / (2 * sigma_s**2))
    l_values = np.exp(-(np.subtract.outer(cov_values, cov_values) ** 2) / (2 * sigma_c**2))

    # trace(KHLH) = sum(K*L) - (2/n) sum_i (K1)_i (L1)_i + (1/n^2) (1'K1)(1'L1),
    # each sum over rows rewritten over the joint table of distinct values.
    sum_kl = float(np.sum((k_values @ joint @ l_values) * joint))
    k_row = k_values @ count_s  # (K1)_i for a row whose size is values[p]
    l_row = l_values @ count_c
    sum_rows = float(k_row @ joint @ l_row)
    total = sum_kl - 2.0 * sum_rows / n + float(count_s @ k_row) * float(count_c @ l_row) / n**2
    return max(total, 0.0) / n**2  # clip float round-off below 0


# ---------------------------------------------------------------------------
# Worst-slab coverage
# ---------------------------------------------------------------------------


def _min_slab_coverage(z: np.ndarray, covered: np.ndarray, min_rows: int) -> float:
    """Minimum coverage over slabs ``a <= z <= b`` holding at least ``min_rows`` rows.

    Rows with equal projections cannot be separated by a slab, so they are
    merged into atoms first; a slab is then a contiguous run of atoms. The
    minimum mean over runs is found by Dinkelbach's iteration: with ``t`` the
    mean of the current best run (first the whole sample), find the run that
    minimises ``sum(c_i - t)`` (for every end, the best start comes from a
    running maximum of the cumulative sums, so one step is a few vectorised
    O(n) passes); if that sum is negative, its run has a mean below ``t`` and
    becomes the new best. ``t`` strictly decreases over the finitely many run
    means, and it is always the exact mean (hits / rows) of an admissible run.
    """
    order = np.argsort(z, kind="stable")
    z_sorted = z[order]
    starts = np.flatnonzero(np.r_[True, z_sorted[1:] != z_sorted[:-1]])
    atom_rows = np.diff(np.r_[starts, z.size]).astype(np.float64)
    atom_hits = np.add.reduceat(covered[order].astype(np.float64), starts)
    rows_cum = np.r_[0.0, np.cumsum(atom_rows)]
    hits_cum = np.r_[0.0, np.cumsum(atom_hits)]
    # For a run ending at atom e (inclusive), the latest start leaving >= min_rows rows.
    last_start = np.searchsorted(rows_cum, rows_cum[1:] - min_rows, side="right") - 1
    ends = np.flatnonzero(last_start >= 0)
    last_start = last_start[ends]
    positions = np.arange(rows_cum.size)

    best = float(hits_cum[-1] / rows_cum[-1])
    while best > 0.0:
        gain = hits_cum - best * rows_cum  # prefix sums of (c_i - best)
        running_max = np.maximum.accumulate(gain)
        argmax = np.maximum.accumulate(np.where(gain == running_max, positions, 0))
        excess = gain[ends + 1] - running_max[last_start]
        k = int(np.argmin(excess))
        if excess[k] >= 0.0:
            break
        s, e = argmax[last_start[k]], ends[k]
        candidate = float((hits_cum[e + 1] - hits_cum[s]) / (rows_cum[e + 1] - rows_cum[s]))
        if candidate >= best:  # round-off only; the true minimum is reached
            break
        best = candidate
    return best


def worst_slab_coverage(
    X: ArrayLike,
    covered: ArrayLike,
    *,
    delta: float = 0.1,
    n_directions: int = 1000,
    random_state: int = 0,
) -> float:
    """Worst-slab coverage, WSC (Cauchois, Gupta, Duchi, JMLR 22(81), 2021).

    For unit directions ``v`` drawn uniformly on the sphere (normalised
    standard normal vectors from ``numpy.random.default_rng(random_state)``),
    the minimum coverage over slabs ``{x : a <= v'x <= b}`` holding at least
    ``ceil(delta * n)`` rows, computed exactly over contiguous runs of the
    sorted projections (ties kept together); then the minimum over directions.

    This is the in-sample estimate of the MAPIE theory page: the same rows
    choose the slab and score it, so it is biased downward (Cauchois et al.
    and Romano et al. 2020 choose the slab on one half and score it on the
    other). The whole sample is one admissible slab, so the result is never
    above the marginal coverage.

    Parameters
    ----------
    X : array of float, shape (n, d)
        Features defining the slabs (scale them comparably first).
    covered : array of bool, shape (n,)
        Coverage indicator.
    delta : float, default 0.1
        Minimum fraction of rows in a slab, in (0, 1].
    n_directions : int, default 1000
        Number of random directions.
    random_state : int, default 0
        Seed of the directions.

    Returns
    -------
    float
        In [0, 1]; ``nan`` when ``n = 0``.
    """
    X = as_float_matrix("X", X)
    covered = as_bool_vector("covered", covered)
    check_same_rows(X=X, covered=covered)
    if not isinstance(delta, (int, float, np.floating)) or not 0.0 < float(delta) <= 1.0:
        message = f"delta must be a fraction of rows in (0, 1]; found {delta!r}"
        raise MetricInputError(message)
    if (
        isinstance(n_directions, bool)
        or not isinstance(n_directions, (int, np.integer))
        or n_directions < 1
    ):
        message = f"n_directions must be a positive integer; found {n_directions!r}"
        raise MetricInputError(message)
    n, d = X.shape
    if n == 0:
        return math.nan
    # Round first so that e.g. 0.1 * 30 = 3.0000000000000004 asks for 3 rows, not 4.
    min_rows = max(1, math.ceil(round(float(delta) * n, 9)))
    rng = np.random.default_rng(random_state)
    directions = rng.standard_normal((n_directions, d))
    norms = np.linalg.norm(directions, axis=1, keepdims=True)
    directions /= np.where(norms > 0, norms, 1.0)
    worst = math.inf
    for v in directions:
        worst = min(worst, _min_slab_coverage(X @ v, covered, min_rows))
        if worst == 0.0:
            break  # cannot go lower
    return worst


# ---------------------------------------------------------------------------
# Excess risk of the target coverage
# ---------------------------------------------------------------------------

_EPS = 1e-12


def _loss(name: str, p: np.ndarray, c: np.ndarray) -> np.ndarray:
    if name == "brier":
        return (p - c) ** 2
    p = np.clip(p, _EPS, 1.0 - _EPS)
    return -(c * np.log(p) + (1.0 - c) * np.log(1.0 - p))


def excess_risk_target_coverage(
    X: ArrayLike,
    covered: ArrayLike,
    alpha: float,
    *,
    n_splits: int = 5,
    random_state: int = 0,
    model: object | None = None,
    loss: str = "brier",
) -> float:
    """Excess risk of the target coverage, ERT (Braun, Holzmueller, Jordan, Bach 2025).

    A classifier ``h`` learns ``P(covered | x)``; out of fold,
    ``ERT = mean_i [ l(1 - alpha, c_i) - l(h(x_i), c_i) ]`` with a proper
    loss ``l`` (arXiv:2512.11779). Positive values mean the features predict
    coverage better than the constant target, i.e. coverage is not the same
    everywhere (or not 1 - alpha on average); about 0 means no detectable
    signal with this classifier. Every row is scored once, by the model fitted
    on the other folds (``StratifiedKFold`` when both outcomes have at least
    ``n_splits`` rows, else ``KFold``; both shuffled with ``random_state``).

    The default ``h`` is ``LogisticRegression(max_iter=1000)``: cheap and
    stable on per-user subsets of a few hundred rows, but it only sees
    coverage that varies monotonically along a direction of ``X``. MAPIE and
    covmetrics default to ``HistGradientBoostingClassifier``; pass it as
    ``model`` for a flexible (and slower, noisier on small data) estimate.

    When a training fold holds a single outcome (e.g. every row is covered),
    no classifier can be fitted; ``h`` is then that fold's constant coverage
    rate. With every row covered, the Brier ERT is therefore ``alpha**2``:
    the constant 1 beats the target ``1 - alpha`` by exactly that much.

    Parameters
    ----------
    X : array of float, shape (n, d)
        Features.
    covered : array of bool, shape (n,)
        Coverage indicator.
    alpha : float
        Target miscoverage level in (0, 1).
    n_splits : int, default 5
        Number of cross-validation folds, 2 <= n_splits <= n.
    random_state : int, default 0
        Seed of the fold assignment (and of ``model`` if it has one unset).
    model : scikit-learn classifier, optional
        Cloned for every fold; must have ``predict_proba``.
    loss : {"brier", "log"}, default "brier"
        Proper loss; the log loss clips probabilities to ``[1e-12, 1 - 1e-12]``.

    Returns
    -------
    float
    """
    X = as_float_matrix("X", X)
    covered = as_bool_vector("covered", covered)
    check_same_rows(X=X, covered=covered)
    alpha = check_alpha(alpha)
    if loss not in ("brier", "log"):
        message = f"loss must be 'brier' or 'log'; found {loss!r}"
        raise MetricInputError(message)
    n = covered.size
    if (
        isinstance(n_splits, bool)
        or not isinstance(n_splits, (int, np.integer))
        or not 2 <= n_splits <= n
    ):
        message = f"n_splits must be an integer in [2, n={n}]; found {n_splits!r}"
        raise MetricInputError(message)
    # Here, not at the top: this module is also imported by readers of a run
    # folder (the report), which never fit a model and do without scikit-learn.
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold, StratifiedKFold

    if model is None:
        model = LogisticRegression(max_iter=1000)
    elif not hasattr(model, "predict_proba"):
        message = f"model must be a classifier with predict_proba; found {type(model).__name__}"
        raise MetricInputError(message)

    c = covered.astype(np.float64)
    minority = int(min(covered.sum(), n - covered.sum()))
    if minority >= n_splits:
        folds = StratifiedKFold(n_splits, shuffle=True, random_state=random_state).split(X, covered)
    else:
        folds = KFold(n_splits, shuffle=True, random_state=random_state).split(X)
    h = np.empty(n)
    for train, test in folds:
        if np.unique(covered[train]).size < 2:
            h[test] = c[train].mean()
            continue
        fitted = clone(model)
        if "random_state" in fitted.get_params() and fitted.get_params()["random_state"] is None:
            fitted.set_params(random_state=random_state)
        fitted.fit(X[train], covered[train])
        proba = fitted.predict_proba(X[test])
        h[test] = proba[:, list(fitted.classes_).index(True)]
    target = np.full(n, 1.0 - alpha)
    return float(np.mean(_loss(loss, target, c) - _loss(loss, h, c)))
