"""Per-user coverage with intervals, and its summary per (strategy, classifier).

Split-conformal coverage is a marginal statement: on average over users and
draws, at least ``1 - alpha`` of the sets hold the true class. A pooled 90 %
can hide a user at 60 %. This module gives each user's coverage an interval,
a description of the observed rate. Whether a user is *below target* is a
test, :mod:`mueval.guarantees.user_level`'s, not an interval lying below
``1 - alpha``.

Three intervals, from the narrowest to the most honest about the design:

``exact``
    Clopper and Pearson's (1934) interval on ``k`` covered rows of ``n``,
    pooled over iterations. It is exact for ``n`` independent Bernoulli
    trials. The iterations of a run are *not* independent draws: they reuse
    the user's rows (a row is tested in several iterations, with overlapping
    training and calibration sets), so ``n`` overstates the information and
    the interval is too narrow as a statement about a new draw. It remains the
    exact interval for "the coverage of these rows, averaged over these
    iterations", with rows treated as independent.
``bootstrap-iterations``
    A cluster bootstrap that resamples whole iterations with replacement and
    recomputes the user's coverage (covered rows over rows); the interval is
    the percentile interval. It keeps the dependence of rows within an
    iteration and the spread between iterations, so it widens when the
    iterations disagree. With few iterations (fewer than about 10) the
    percentile interval is itself too narrow; with one iteration it is
    undefined (``nan``).
``bootstrap-users``
    Resamples users, for the mean over users of their coverage; it lives in
    :func:`coverage_summary`, since one user's coverage has nothing to
    resample over users.

References
----------
Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial
limits illustrated in the case of the binomial. *Biometrika* 26(4), 404-413.
"""

from __future__ import annotations

import math
from typing import overload

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from mueval.data.frames import frame_column
from mueval.errors import UsageError
from mueval.guarantees.records import COVERAGE_SUMMARY_COLUMNS
from mueval.metrics.frame_checks import (
    as_bool_column,
    as_count_column,
    check_choice,
    check_level,
    check_positive_int,
    require_columns,
)

__all__ = [
    "PER_USER_METHODS",
    "clopper_pearson",
    "coverage_summary",
    "per_user_coverage",
]

#: Interval methods of :func:`per_user_coverage`.
PER_USER_METHODS = ("exact", "bootstrap-iterations")

_KEYS = ["strategy", "classifier"]
_PER_USER_COLUMNS = ["strategy", "classifier", "user", "n", "n_covered", "coverage", "low", "high"]


def _check_counts(k: np.ndarray, n: np.ndarray) -> None:
    for name, arr in (("k", k), ("n", n)):
        if np.isnan(arr).any() or (arr != np.floor(arr)).any() or (arr < 0).any():
            message = f"{name} must hold non-negative integers; found {arr.ravel()[:5].tolist()}"
            raise UsageError(message)
    if (k > n).any():
        bad = np.argwhere(k > n)[0]
        message = f"k must not exceed n; found k={k[tuple(bad)]:g} > n={n[tuple(bad)]:g}"
        raise UsageError(message)


@overload
def clopper_pearson(
    k: int | np.integer, n: int | np.integer, confidence: float = 0.95
) -> tuple[float, float]: ...


@overload
def clopper_pearson(
    k: ArrayLike, n: ArrayLike, confidence: float = 0.95
) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]: ...


def clopper_pearson(
    k: ArrayLike, n: ArrayLike, confidence: float = 0.95
) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) two-sided interval for a binomial proportion.

    The bounds are the Beta quantiles ``Beta(tail; k, n-k+1)`` and
    ``Beta(1-tail; k+1, n-k)`` with ``tail = (1 - confidence) / 2``: the
    values of ``p`` at which ``P(X >= k)`` (lower) and ``P(X <= k)`` (upper)
    equal ``tail`` for ``X ~ Binomial(n, p)``.

    Parameters
    ----------
    k : int or array of int
        Successes (covered rows), ``0 <= k <= n``.
    n : int or array of int
        Trials (rows); broadcast against ``k``.
    confidence : float, default 0.95
        Two-sided confidence level in (0, 1).

    Returns
    -------
    (low, high) : tuple of float, or of arrays of the broadcast shape
        ``low = 0`` when ``k = 0``, ``high = 1`` when ``k = n``, and
        ``(nan, nan)`` where ``n = 0``.

    Raises
    ------
    UsageError
        ``k`` or ``n`` negative or not integers, ``k > n``, or ``confidence``
        outside (0, 1).

    Examples
    --------
    >>> low, high = clopper_pearson(5, 10)
    >>> round(low, 4), round(high, 4)
    (0.1871, 0.8129)
    >>> clopper_pearson(0, 10)[0], round(clopper_pearson(0, 10)[1], 4)
    (0.0, 0.3085)
    >>> lows, highs = clopper_pearson([0, 3], [0, 3])
    >>> lows[0], highs[1]
    (np.float64(nan), np.float64(1.0))
    """
    confidence = check_level("confidence", confidence)
    scalar = np.ndim(k) == 0 and np.ndim(n) == 0
    try:
        k_arr, n_arr = np.broadcast_arrays(
            np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
        )
    except (TypeError, ValueError) as exc:
        message = f"k and n must be numbers or arrays of one shape; found k={k!r}, n={n!r}"
        raise UsageError(message) from exc
    _check_counts(k_arr, n_arr)
    tail = (1.0 - confidence) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        # The Beta quantile is undefined at k = 0 (lower) and k = n (upper);
        # there the bound is the end of [0, 1] itself.
        low = np.where(k_arr > 0, stats.beta.ppf(tail, k_arr, n_arr - k_arr + 1), 0.0)
        high = np.where(k_arr < n_arr, stats.beta.ppf(1 - tail, k_arr + 1, n_arr - k_arr), 1.0)
    low = np.where(n_arr == 0, np.nan, low)
    high = np.where(n_arr == 0, np.nan, high)
    if scalar:
        return float(low), float(high)
    return low, high


def _iteration_counts(frame: pd.DataFrame, user_col: str) -> pd.DataFrame:
    """Rows and covered rows per (strategy, classifier, user, iteration), sorted."""
    what = "test rows"
    require_columns(frame, [*_KEYS, "iteration", user_col, "covered"], what)
    covered = as_bool_column(frame, "covered", what)
    keyed = pd.DataFrame(
        {
            "strategy": frame_column(frame["strategy"]),
            "classifier": frame_column(frame["classifier"]),
            "user": frame[user_col].to_numpy(),
            "iteration": frame_column(frame["iteration"]),
            "covered": covered.astype(np.int64),
        }
    )
    grouped = keyed.groupby([*_KEYS, "user", "iteration"], sort=True, observed=True)["covered"]
    return grouped.agg(n="size", n_covered="sum").reset_index()


def _bootstrap_ratio(
    k: np.ndarray, n: np.ndarray, rng: np.random.Generator, n_boot: int, confidence: float
) -> tuple[float, float]:
    """Percentile interval of ``sum(k) / sum(n)`` over clusters resampled with replacement."""
    m = k.size
    if m < 2:
        return math.nan, math.nan
    idx = rng.integers(0, m, size=(n_boot, m))
    ratios = k[idx].sum(axis=1) / n[idx].sum(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return float(low), float(high)


def per_user_coverage(
    frame: pd.DataFrame,
    *,
    alpha: float,
    confidence: float = 0.95,
    method: str = "exact",
    n_boot: int = 2000,
    seed: int = 0,
    user_col: str = "user",
) -> pd.DataFrame:
    """Each user's coverage over all test rows and iterations, with an interval.

    Parameters
    ----------
    frame : DataFrame
        Test rows, one per (iteration, test window), with at least the columns
        ``strategy``, ``classifier``, ``iteration``, ``user_col`` and
        ``covered`` (bool or 0/1: the true class is in the set).
    alpha : float
        Target miscoverage level in (0, 1); the target coverage is ``1 - alpha``.
    confidence : float, default 0.95
        Two-sided confidence level of the intervals.
    method : {"exact", "bootstrap-iterations"}
        ``"exact"``: Clopper-Pearson on the rows pooled over iterations (too
        narrow as a statement about a new draw, since iterations reuse rows).
        ``"bootstrap-iterations"``: percentile interval of a cluster bootstrap
        over the user's iterations (``nan`` for a user seen in one iteration).
        For resampling users, see :func:`coverage_summary`.
    n_boot : int, default 2000
        Bootstrap replicates (``"bootstrap-iterations"`` only).
    seed : int, default 0
        Seed of the bootstrap; the same frame and seed give the same table.
    user_col : str, default "user"
        Column naming each row's user (``"userid"`` in a run folder's rows).

    Returns
    -------
    DataFrame
        One row per (strategy, classifier, user), sorted (the user column is
        named ``user`` whatever ``user_col``), with columns
        ``strategy, classifier, user, n_iterations, n, n_covered, coverage,
        low, high, below, method, confidence``. ``[low, high]`` describes the
        observed rate; ``below`` is True when the whole interval lies below
        ``1 - alpha`` (``high < 1 - alpha``), False when the interval is
        undefined. That rule is not a test of the user's coverage (it treats
        rows sharing a calibration set as independent): a run folder replaces
        ``below`` with the exact verdict of
        :func:`mueval.guarantees.user_level.user_verdicts`.

    Raises
    ------
    UsageError
        ``alpha``, ``confidence``, ``method``, ``n_boot`` invalid.
    DataError
        A column is missing or has missing values, or ``covered`` is not bool.

    Examples
    --------
    >>> rows = pd.DataFrame({
    ...     "strategy": "UCM", "classifier": "RF", "iteration": [0, 0, 1, 1],
    ...     "user": [7, 7, 7, 7], "covered": [True, False, True, True]})
    >>> table = per_user_coverage(rows, alpha=0.1)
    >>> table[["user", "n", "n_covered", "coverage"]].to_dict("records")
    [{'user': 7, 'n': 4, 'n_covered': 3, 'coverage': 0.75}]
    >>> round(float(table.loc[0, "low"]), 4), round(float(table.loc[0, "high"]), 4)
    (0.1941, 0.9937)
    >>> bool(table.loc[0, "below"])
    False
    """
    alpha = check_level("alpha", alpha)
    confidence = check_level("confidence", confidence)
    if method == "bootstrap-users":
        message = (
            "method 'bootstrap-users' resamples users, so it gives an interval for the mean "
            "over users, not for one user: use coverage_summary(...) for it; per_user_coverage "
            f"takes method in {PER_USER_METHODS}"
        )
        raise UsageError(message)
    method = check_choice("method", method, PER_USER_METHODS)
    n_boot = check_positive_int("n_boot", n_boot)
    counts = _iteration_counts(frame, user_col)
    grouped = counts.groupby([*_KEYS, "user"], sort=True, observed=True)
    table = grouped.agg(
        n_iterations=("iteration", "nunique"), n=("n", "sum"), n_covered=("n_covered", "sum")
    ).reset_index()
    table["coverage"] = table["n_covered"] / table["n"]
    if method == "exact":
        k, n = table["n_covered"].to_numpy(), table["n"].to_numpy()
        low, high = clopper_pearson(k, n, confidence)
    else:
        rng = np.random.default_rng(seed)
        bounds = [
            _bootstrap_ratio(
                g["n_covered"].to_numpy(np.float64),
                g["n"].to_numpy(np.float64),
                rng,
                n_boot,
                confidence,
            )
            for _, g in grouped
        ]
        low = np.array([b[0] for b in bounds], dtype=np.float64)
        high = np.array([b[1] for b in bounds], dtype=np.float64)
    table["low"] = np.asarray(low, dtype=np.float64)
    table["high"] = np.asarray(high, dtype=np.float64)
    # nan < target is False: an undefined interval never counts as below.
    table["below"] = table["high"].to_numpy() < 1.0 - alpha
    table["method"] = method
    table["confidence"] = confidence
    return table


def _bootstrap_mean(
    values: np.ndarray, rng: np.random.Generator, n_boot: int, confidence: float
) -> tuple[float, float]:
    """Percentile interval of the mean of ``values`` resampled with replacement."""
    if values.size < 2:
        return math.nan, math.nan
    idx = rng.integers(0, values.size, size=(n_boot, values.size))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values[idx].mean(axis=1), [tail, 1.0 - tail])
    return float(low), float(high)


def _summarise_group(
    group: pd.DataFrame, target: float, rng: np.random.Generator, n_boot: int, confidence: float
) -> dict[str, object]:
    """One (strategy, classifier) row of :func:`coverage_summary`."""
    if "below" in group.columns:
        # The per-user flag as the table gives it: in a run folder, the exact
        # test's verdict; <NA> (no verdict) is not below.
        below = group["below"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    else:
        below = group["high"].to_numpy(np.float64) < target
    # Lowest coverage; among ties, the narrowest claim against it (lowest
    # upper bound), then the largest user (more rows), then input order.
    order = np.lexsort(
        (
            -group["n"].to_numpy(),
            group["high"].fillna(np.inf).to_numpy(),
            group["coverage"].to_numpy(),
        )
    )
    worst = group.iloc[order[0]]
    coverage = group["coverage"].to_numpy(np.float64)
    mean_low, mean_high = _bootstrap_mean(coverage, rng, n_boot, confidence)
    k, n = int(group["n_covered"].sum()), int(group["n"].sum())
    pooled_low, pooled_high = clopper_pearson(k, n, confidence)
    return {
        "n_users": len(group),
        "n_below": int(below.sum()),
        "share_below": float(below.mean()),
        "worst_user": worst["user"],
        "worst_n": int(worst["n"]),
        "worst_coverage": float(worst["coverage"]),
        "worst_low": float(worst["low"]),
        "worst_high": float(worst["high"]),
        "mean_coverage": float(coverage.mean()),
        "mean_low": mean_low,
        "mean_high": mean_high,
        "pooled_n": n,
        "pooled_covered": k,
        "pooled_coverage": k / n if n else math.nan,
        "pooled_low": pooled_low,
        "pooled_high": pooled_high,
        "pooled_below": bool(pooled_high < target),
    }


def coverage_summary(
    per_user: pd.DataFrame,
    *,
    alpha: float,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Summarise a :func:`per_user_coverage` table per (strategy, classifier).

    Four views of one (strategy, classifier):

    - **users below target**: how many users ``per_user``'s ``below`` column
      flags, and their share. In a run folder that column is the verdict of
      the exact per-user test (:func:`mueval.guarantees.user_level.user_verdicts`,
      at the run's level after its correction); straight from
      :func:`per_user_coverage` it is the interval rule (``high < 1 - alpha``),
      a description of the observed rate that flags valid users too often
      (``docs/per-user-guarantees.md``). Without the column, the interval rule;
    - **worst user**: the lowest coverage (ties: lowest upper bound, then more
      rows), with its interval from ``per_user``;
    - **mean over users**: every user weighs the same; its interval is the
      percentile interval of a cluster bootstrap that resamples users
      (``bootstrap-users``), ``nan`` with fewer than two users;
    - **pooled**: covered rows over rows, every row weighs the same, with its
      Clopper-Pearson interval (as narrow as the exact per-user one, for the
      same reason: iterations reuse rows).

    Parameters
    ----------
    per_user : DataFrame
        The output of :func:`per_user_coverage` (at least ``strategy,
        classifier, user, n, n_covered, coverage, low, high``).
    alpha : float
        Target miscoverage level in (0, 1).
    confidence : float, default 0.95
        Confidence of the mean and pooled intervals.
    n_boot : int, default 2000
        Bootstrap replicates for the mean over users.
    seed : int, default 0
        Seed of that bootstrap.

    Returns
    -------
    DataFrame
        One row per (strategy, classifier), sorted, with columns
        ``strategy, classifier, n_users, n_below, share_below, worst_user,
        worst_n, worst_coverage, worst_low, worst_high, mean_coverage,
        mean_low, mean_high, pooled_n, pooled_covered, pooled_coverage,
        pooled_low, pooled_high, pooled_below, confidence``.

    Examples
    --------
    >>> per_user = pd.DataFrame({
    ...     "strategy": "UCM", "classifier": "RF", "user": [1, 2],
    ...     "n": [100, 100], "n_covered": [95, 60], "coverage": [0.95, 0.60],
    ...     "low": [0.887, 0.497], "high": [0.984, 0.697]})
    >>> row = coverage_summary(per_user, alpha=0.1).iloc[0]
    >>> int(row["n_below"]), float(row["share_below"]), int(row["worst_user"])
    (1, 0.5, 2)
    >>> float(row["pooled_coverage"]), bool(row["pooled_below"])
    (0.775, True)
    """
    alpha = check_level("alpha", alpha)
    confidence = check_level("confidence", confidence)
    n_boot = check_positive_int("n_boot", n_boot)
    what = "per-user table"
    require_columns(per_user, _PER_USER_COLUMNS, what, may_be_missing=("low", "high"))
    as_count_column(per_user, "n", what)
    as_count_column(per_user, "n_covered", what)
    rng = np.random.default_rng(seed)
    rows = []
    for (strategy, classifier), group in per_user.groupby(_KEYS, sort=True, observed=True):
        summary = _summarise_group(group, 1.0 - alpha, rng, n_boot, confidence)
        rows.append({"strategy": strategy, "classifier": classifier, **summary})
    table = pd.DataFrame(rows, columns=list(COVERAGE_SUMMARY_COLUMNS))
    table["confidence"] = confidence
    return table
