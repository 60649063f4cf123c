"""The exact null law of a covered count: threshold ranks, the Beta-Binomial of one
calibration set, and its convolution over cells and iterations.

Under exchangeability the count of covered rows among ``m`` test rows that
share ``n`` calibration scores thresholded at rank ``k`` is
``BetaBinomial(m, k, n + 1 - k)`` (:func:`covered_pmf`); independent sets
(Mondrian cells, iterations) add up by convolution (:func:`null_pmf`). The
per-user verdicts of :mod:`mueval.guarantees.user_level` and the pooled tests
of :mod:`mueval.guarantees.pooled_level` read their p-values from here.

Threshold ranks
---------------
:func:`threshold_rank` derives ``k`` for each rule by the same floating-point
expressions as the threshold code (``mueval.conformal.thresholds.lac_threshold``),
and returns ``n + 1`` when the rule has no finite threshold. With
``x = (n + 1)(1 - alpha)``:

- ``"mapie"``: ``k = ceil(x)``, or ``n + 1`` when ``ceil(x) > n``.
- ``"study"``: ``numpy.quantile(scores, x / n, method="higher")`` is the
  order statistic at 0-based index ``ceil((x / n)(n - 1))``, so
  ``k = ceil(x (n - 1) / n) + 1``, or ``n + 1`` when ``x / n > 1``. It equals
  the MAPIE rank, or one more: one more when ``x`` is an integer below ``n``
  or its fractional part exceeds ``x / n``; at alpha = 0.05 only the former,
  ``n = 39, 59, 79, ...`` (not ``n = 19``, where ``x = n``).

These are the formulas in exact arithmetic. The code computes ``x`` in
floats, which can land just above an integer (alpha = 0.7, n = 9:
``10 * (1 - 0.7) = 3.0000000000000004``, so MAPIE's rank is 4, not 3);
:func:`threshold_rank` follows the floats, as the sets do.

Both rules have a finite threshold exactly when ``x <= n``, that is
``n >= (1 - alpha) / alpha``: 19 rows at alpha = 0.05, one fewer than
:func:`mueval.conformal.thresholds.min_calibration_size` (20), which the
non-Mondrian code demands.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np
from scipy import stats

from mueval.metrics.frame_checks import check_choice, check_level

__all__ = [
    "cells_pvalue",
    "covered_pmf",
    "lower_pvalue",
    "null_pmf",
    "threshold_rank",
]


def threshold_rank(n: int, alpha: float, rule: str = "study") -> int:
    """Rank ``k`` (1-based) of the calibration score that a rule takes as threshold.

    Parameters
    ----------
    n : int
        Number of calibration scores (of the set, or of a Mondrian cell), >= 0.
    alpha : float
        Miscoverage level in (0, 1).
    rule : {"study", "mapie"}
        The threshold rule (``--threshold``).

    Returns
    -------
    int
        ``k`` in ``1..n``, or ``n + 1`` when the rule has no finite threshold
        (every class in every set; ``n = 0`` included).

    Notes
    -----
    The floats are those of the threshold code: ``"mapie"`` is
    ``ceil((n + 1) * (1 - alpha))``; ``"study"`` is the index that
    ``numpy.quantile(..., (n + 1) * (1 - alpha) / n, method="higher")`` picks,
    obtained from numpy itself on ``arange(n)`` so it rounds as the real call.

    Examples
    --------
    >>> [threshold_rank(n, 0.05, "study") for n in (19, 20, 39, 199, 200)]
    [19, 20, 39, 191, 191]
    >>> [threshold_rank(n, 0.05, "mapie") for n in (18, 19, 20, 39, 199, 200)]
    [19, 19, 20, 38, 190, 191]
    """
    alpha = check_level("alpha", alpha)
    check_choice("threshold rule", rule, ("study", "mapie"))
    n = int(n)
    if n < 0:
        message = f"n must be a count of calibration scores, >= 0; found {n}"
        raise ValueError(message)
    if n == 0:
        return 1
    if rule == "mapie":
        rank = int(np.ceil((n + 1) * (1 - alpha)))
        return min(rank, n + 1)
    level = ((n + 1) * (1 - alpha)) / n
    if level > 1.0:
        return n + 1
    return _study_index(n, level) + 1


@lru_cache(maxsize=4096)
def _study_index(n: int, level: float) -> int:
    # numpy.quantile's index for method="higher", read off arange(n) so that
    # the virtual index is rounded exactly as in the threshold code.
    return int(np.quantile(np.arange(n, dtype=np.float64), level, method="higher"))


@lru_cache(maxsize=4096)
def _covered_pmf_cached(m: int, n: int, k: int) -> np.ndarray:
    if k > n:
        pmf = np.zeros(m + 1)
        pmf[m] = 1.0
        return pmf
    # scipy is untyped: its float64 array, named as one.
    raw = np.asarray(stats.betabinom.pmf(np.arange(m + 1), m, k, n + 1 - k), dtype=np.float64)
    pmf = np.clip(raw, 0.0, None)
    pmf.flags.writeable = False
    total = float(pmf.sum())
    return pmf / total


def covered_pmf(m: int, n: int, k: int) -> np.ndarray:
    """Null distribution of the number of covered rows among ``m`` test rows.

    Parameters
    ----------
    m : int
        Test rows sharing one calibration set (>= 0).
    n : int
        Calibration scores (>= 0).
    k : int
        Rank of the threshold, ``1..n + 1`` (``n + 1``: no finite threshold).

    Returns
    -------
    ndarray of float, shape (m + 1,)
        ``P(X = c)`` for ``c = 0..m``: Beta-Binomial(m, k, n + 1 - k), or a
        point mass at ``m`` when ``k > n``.

    Examples
    --------
    One calibration score and its smallest rank: coverage is uniform, so the
    count of 2 test rows is uniform on 0, 1, 2:

    >>> covered_pmf(2, 1, 1).round(4).tolist()
    [0.3333, 0.3333, 0.3333]
    >>> covered_pmf(3, 5, 6).tolist()
    [0.0, 0.0, 0.0, 1.0]
    """
    m, n, k = int(m), int(n), int(k)
    if m < 0 or n < 0 or not 1 <= k <= n + 1:
        message = f"need m >= 0, n >= 0 and 1 <= k <= n + 1; found m={m}, n={n}, k={k}"
        raise ValueError(message)
    return _covered_pmf_cached(m, n, k).copy()


def null_pmf(m: Iterable[int], n: Iterable[int], k: Iterable[int]) -> np.ndarray:
    """Distribution of the total covered count over independent calibration sets.

    Each element of ``m``, ``n``, ``k`` describes one calibration set (an
    iteration, or a Mondrian cell of an iteration); the total is the sum of
    their independent counts, whose law is the convolution of their
    :func:`covered_pmf`.

    Parameters
    ----------
    m, n, k : iterables of int, same length
        Test rows, calibration scores and threshold rank of each set.

    Returns
    -------
    ndarray of float, shape (sum(m) + 1,)

    Examples
    --------
    Two sets whose rows are always covered and one uniform row:

    >>> null_pmf([1, 2], [1, 3], [1, 4]).round(3).tolist()
    [0.0, 0.0, 0.5, 0.5]
    """
    ms, ns, ks = (np.atleast_1d(np.asarray(v, dtype=np.int64)) for v in (m, n, k))
    if not ms.shape == ns.shape == ks.shape:
        message = f"m, n and k must have one entry per set; found {ms.size}, {ns.size}, {ks.size}"
        raise ValueError(message)
    total = np.ones(1)
    for mi, ni, ki in zip(ms.tolist(), ns.tolist(), ks.tolist(), strict=True):
        part = _covered_pmf_cached(mi, ni, ki) if mi else None
        if part is None:
            continue
        # Direct convolution: exact sums of non-negative terms (no FFT error
        # in the far tail, where the small p-values live).
        total = np.convolve(total, part)
    return total


def lower_pvalue(covered: int, m: Iterable[int], n: Iterable[int], k: Iterable[int]) -> float:
    """Exact one-sided p-value ``P(X <= covered)`` under the null.

    Parameters
    ----------
    covered : int
        Observed total covered count.
    m, n, k : iterables of int
        As in :func:`null_pmf`.

    Returns
    -------
    float
        In (0, 1]; small when the user is covered less than exchangeability
        allows.

    Examples
    --------
    >>> round(lower_pvalue(0, [2], [1], [1]), 4)
    0.3333
    """
    pmf = null_pmf(m, n, k)
    covered = int(covered)
    if not 0 <= covered < pmf.size:
        message = f"covered must be in 0..{pmf.size - 1} (the test rows); found {covered}"
        raise ValueError(message)
    return float(min(1.0, pmf[: covered + 1].sum()))


def _tail(covered: int, laws: Sequence[np.ndarray]) -> float:
    """``P(X <= covered)`` for the sum of independent counts with laws ``laws``
    (direct convolution, as :func:`null_pmf`)."""
    total = np.ones(1)
    for part in laws:
        if len(part) > 1:
            total = np.convolve(total, part)
    return float(min(1.0, total[: covered + 1].sum()))


def cells_pvalue(
    m: np.ndarray,
    n: np.ndarray,
    k: np.ndarray,
    covered: np.ndarray,
    iteration: np.ndarray,
    combine: str,
    given: np.ndarray | None = None,
) -> tuple[float, float]:
    """(p-value, expected covered count) of one user's cells; nan when any rank is nan.

    The iterations are combined by ``combine``: ``"convolution"``, the exact law
    of the summed count; ``"bonferroni"``, ``min(1, B * min_i p_i)`` over the
    ``B`` iterations' exact p-values.

    ``k`` holds float ranks (nan: no verdict); the others one entry per cell.
    ``given``: per cell, its own null law (an array over ``0..m``) or None for
    the Beta-Binomial.
    """
    if np.isnan(k).any():
        return math.nan, math.nan
    m = m.astype(np.int64)
    n = n.astype(np.int64)
    k = k.astype(np.int64)
    if given is None:
        given = np.full(len(m), None, dtype=object)
    laws = [
        _covered_pmf_cached(mi, ni, ki) if g is None else g
        for mi, ni, ki, g in zip(m.tolist(), n.tolist(), k.tolist(), given, strict=True)
    ]
    # Expected coverage of a rank-k threshold: k / (n + 1), or 1 without one;
    # a cell's own law gives its own mean.
    beta = m * np.where(k > n, 1.0, k / (n + 1))
    own = [float(np.dot(np.arange(len(g)), g)) for g in given if g is not None]
    expected = float(np.sum(beta[[g is None for g in given]])) + float(sum(own))
    if combine == "convolution":
        return _tail(int(covered.sum()), laws), expected
    # One exact p-value per iteration (the sum over its cells).
    _, which = np.unique(iteration, return_inverse=True)
    per_iteration = [
        _tail(int(covered[mask].sum()), [laws[j] for j in np.flatnonzero(mask)])
        for mask in (which == i for i in range(which.max() + 1))
    ]
    return float(min(1.0, len(per_iteration) * min(per_iteration))), expected
