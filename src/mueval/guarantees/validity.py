"""Validity per user: are a user's true-label p-values as large as exchangeability implies?

If a user's test rows are exchangeable with the calibration rows, the
conformal p-value of the true class, ``p = (1 + #{calibration scores >= test
score}) / (n_cal + 1)``, satisfies ``P(p <= t) <= t`` for every ``t``: it is
*super-uniform*. Coverage at level ``alpha`` is exactly the event ``p >
alpha``, so a user whose p-values are too small is a user the sets
under-cover, at every ``alpha`` at once.

:func:`user_validity` tests, per (strategy, classifier, user), the one-sided
Kolmogorov-Smirnov hypothesis

``H0: P(p <= t) <= t for all t``  against  ``H1: P(p <= t) > t for some t``

with ``scipy.stats.kstest(p, "uniform", alternative="greater")`` (statistic
``D+ = max_t (F_n(t) - t)``, the largest excess of the empirical CDF over the
uniform one), and adjusts the p-values across users with Benjamini and
Hochberg's (1995) step-up procedure, so that at most a share ``level`` of the
flagged users are expected to be false alarms (for tests that are valid, and
independent or positively dependent across users).

Why one-sided, and why it stays valid:

- Split-conformal p-values are **discrete**, multiples of ``1/(n_cal + 1)``,
  and super-uniform (equal to uniform at those multiples when scores have no
  ties, conservative with ties). Both make ``D+`` stochastically smaller than
  under exact uniformity, so the test keeps its level. A two-sided test would
  flag the conservative, discrete p-values themselves, and p-values that are
  too *large* (over-coverage) do not break the guarantee.
- **Dependence.** ``kstest`` assumes the ``n`` p-values independent. The
  test rows of one iteration share a calibration set, so they are
  independent only given it, with a CDF that departs from uniform by about
  ``1/sqrt(n_cal)``. The test is then anti-conservative unless the test rows
  are far fewer than the calibration rows. In simulated exchangeable data,
  the one-sided test at 0.05 rejects about 5 % of users with ``n_cal = 5000,
  n_test = 60``, 6.5 % with ``500, 60``, 13 % with ``200, 100``, 20 % with
  ``100, 100`` (UCM splits a user's rows in halves, so this is its usual
  case) and 45 % with ``50, 200``. Iterations that reuse rows add to this.

``method="rank"`` removes the problem when the calibration size is known.
Given ``n_cal``, the p-value of a test row says where its score falls among
the calibration scores (``c = p (n_cal + 1) - 1`` of them are at least as
large). The KS distance of the test p-values from uniform is then, up to
the grid of ``1/(n_cal + 1)``, the one-sided two-sample KS distance between
the test scores and their own calibration scores, and its exact null
distribution under exchangeability of those ``n_cal + n_test`` scores is that
of ``scipy.stats.ks_2samp``. That test is exact per (user, iteration)
whatever the two sizes. Across iterations, which reuse rows, per-user results
are combined by Bonferroni, which needs no assumption on their dependence.
It needs one calibration set per (user, iteration), as in UCM; with
class-conditional (Mondrian) calibration each class has its own, and only
``"uniform"`` applies.

References
----------
Benjamini, Y. and Hochberg, Y. (1995). Controlling the false discovery rate: a
practical and powerful approach to multiple testing. *Journal of the Royal
Statistical Society B* 57(1), 289-300.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from mueval.data.frames import frame_column
from mueval.errors import DataError, UsageError
from mueval.metrics.frame_checks import (
    as_count_column,
    check_choice,
    check_level,
    require_columns,
)

__all__ = ["METHODS", "benjamini_hochberg", "rank_ks_test", "user_validity"]

#: Test methods of :func:`user_validity`.
METHODS = ("uniform", "rank")

_KEYS = ["strategy", "classifier"]

#: Largest sample size for which ``scipy.stats.ks_2samp`` (method "auto")
#: computes the exact p-value; above it, the asymptotic formula.
_KS_EXACT_MAX = 10_000

#: scipy's exact (statistic, p-value) by (n_cal, n_test, D+), in this process.
_EXACT_RESULTS: dict[tuple[int, int, float], tuple[float, float]] = {}
_EXACT_RESULTS_MAX = 100_000


def benjamini_hochberg(pvalues: ArrayLike) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (step-up, independent or PRDS tests).

    The adjusted value of the ``i``-th smallest of ``m`` p-values is
    ``min_{j >= i} min(1, m * p_(j) / j)``; rejecting those at most ``q``
    controls the false discovery rate at ``q``.

    Parameters
    ----------
    pvalues : array of float, shape (m,)
        Values in [0, 1], no ``nan``.

    Returns
    -------
    ndarray of float, shape (m,)
        Adjusted p-values, in the input order.

    Examples
    --------
    >>> benjamini_hochberg([0.01, 0.04, 0.03, 0.5]).round(4).tolist()
    [0.04, 0.0533, 0.0533, 0.5]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        message = f"pvalues must be a 1-D array of values in [0, 1]; found {p.ravel()[:5].tolist()}"
        raise UsageError(message)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    # Step-up: each adjusted value is the smallest scaled value at or above its rank.
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def _p_values(frame: pd.DataFrame, p_col: str) -> np.ndarray:
    try:
        p = frame[p_col].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        message = f"test rows: column {p_col!r} must hold numbers in [0, 1]"
        raise DataError(message) from exc
    bad = (p < 0) | (p > 1)
    if bad.any():
        message = (
            f"test rows: column {p_col!r} must hold p-values in [0, 1]; "
            f"found {int(bad.sum())} outside, e.g. {p[bad][:3].tolist()}"
        )
        raise DataError(message)
    return p


def _calibration_positions(p: np.ndarray, n_cal: int, where: str) -> np.ndarray:
    """Place each test row among calibration scores at positions ``1..n_cal``.

    ``p = (1 + c) / (n_cal + 1)`` with ``c = #{calibration scores >= test
    score}``, so the test score ranks just below the ``c`` largest calibration
    scores: at position ``n_cal - c + 0.5``. A tie with calibration scores
    counts them as larger, which can only make the test more conservative.
    """
    above = p * (n_cal + 1) - 1
    counts = np.rint(above)
    if np.abs(above - counts).max() > 1e-6 or counts.min() < 0 or counts.max() > n_cal:
        message = (
            f"test rows of {where}: p-values are not of the form (1 + c) / (n_cal + 1) with "
            f"n_cal = {n_cal} (found e.g. {p[:3].tolist()}); method 'rank' needs the "
            "split-conformal p-values and the size of the calibration set they came from"
        )
        raise DataError(message)
    return n_cal - counts + 0.5


def _ks_test(group: pd.DataFrame, method: str, where: str) -> tuple[float, float]:
    """(D+, p-value) of one group of rows; see :func:`user_validity`."""
    p = group["p"].to_numpy()
    if method == "uniform":
        result = stats.kstest(p, "uniform", alternative="greater")
        return float(result.statistic), float(result.pvalue)
    n_cal_values = group["n_cal"].unique()
    if n_cal_values.size != 1:
        message = (
            f"test rows of {where}: method 'rank' needs one calibration size per user and "
            f"iteration; found n_cal values {sorted(n_cal_values.tolist())}"
        )
        raise DataError(message)
    n_cal = int(n_cal_values[0])
    return rank_ks_test(n_cal, _calibration_positions(p, n_cal, where))


def rank_ks_test(n_cal: int, positions: np.ndarray) -> tuple[float, float]:
    """One-sided two-sample KS test of test positions against calibration positions ``1..n_cal``.

    The same statistic and p-value as ``scipy.stats.ks_2samp(np.arange(1.0, n_cal + 1),
    positions, alternative="greater")``, at a cost that does not grow with
    ``n_cal`` where scipy takes its asymptotic formula (either sample above
    10,000 rows; below, scipy's exact p-value, computed once per sizes and
    statistic): a user's test rows are few while the calibration set of UIM
    or MM holds a share of every other user's rows, so scipy's sort and
    search over the calibration positions made the tests of all users grow
    with the square of the users.

    Parameters
    ----------
    n_cal : int
        Calibration positions ``1, 2, ..., n_cal``.
    positions : ndarray of float, shape (n_test,)
        Test positions, halfway between integers (:func:`_calibration_positions`),
        so no test position ties with a calibration one.

    Returns
    -------
    (float, float)
        ``D+`` (the largest excess of the calibration ECDF over the test
        ECDF) and its p-value. ``(0.0, 1.0)`` for ``n_cal = 0``.

    Notes
    -----
    An empty calibration set (a ``--small-cal full-set`` answer where the
    target's cohort holds no calibration row) gives every test row the
    p-value ``(1 + 0) / (0 + 1) = 1``, at or above the uniform CDF everywhere:
    ``D+ = 0`` and p-value 1, what the one-sample test of those p-values
    (method ``"uniform"``) gives too. There is no calibration sample for the
    two-sample form, whose ECDF would divide by zero.
    """
    positions = np.asarray(positions, dtype=np.float64)
    n_test = positions.size
    if n_cal == 0:
        return 0.0, 1.0
    # The ECDF difference is largest at a test position or at the last
    # calibration position before one (or the last of all): between two test
    # positions the calibration ECDF only rises. Each candidate's value is
    # the float expression scipy evaluates there, so the maximum is its own.
    ordered = np.sort(positions)
    below = np.floor(ordered)
    points = np.concatenate([ordered, below[below >= 1], [float(n_cal)]])
    cal_le = np.minimum(np.floor(points), n_cal).astype(np.int64)
    test_le = np.searchsorted(ordered, points, side="right")
    d = np.max(cal_le / n_cal - test_le / n_test)
    if max(n_cal, n_test) <= _KS_EXACT_MAX:
        # scipy's exact p-value is a function of (n_cal, n_test, d) alone; its
        # call costs milliseconds whatever the sizes, and users with the same
        # sizes share few values of d, so each is computed once.
        key = (n_cal, n_test, float(d))
        if key not in _EXACT_RESULTS:
            if len(_EXACT_RESULTS) >= _EXACT_RESULTS_MAX:
                _EXACT_RESULTS.clear()
            with warnings.catch_warnings():
                # An exact computation that overflows falls back to the asymptotic one.
                warnings.simplefilter("ignore", RuntimeWarning)
                result = stats.ks_2samp(np.arange(1.0, n_cal + 1), positions, alternative="greater")
            _EXACT_RESULTS[key] = (float(result.statistic), float(result.pvalue))
        return _EXACT_RESULTS[key]
    # scipy's asymptotic one-sided p-value (Hodges 1958, eq. 5.3), as it writes it.
    m, n = sorted([float(n_cal), float(n_test)], reverse=True)
    en = m * n / (m + n)
    z = np.sqrt(en) * d
    expt = -2 * z**2 - 2 * z * (m + 2 * n) / np.sqrt(m * n * (m + n)) / 3.0
    return float(d), float(np.clip(np.exp(expt), 0, 1))


def _frame_for_tests(
    frame: pd.DataFrame, method: str, user_col: str, p_col: str, n_cal_col: str
) -> pd.DataFrame:
    columns = [*_KEYS, "iteration", user_col, p_col]
    if method == "rank":
        columns.append(n_cal_col)
    require_columns(frame, columns, "test rows")
    keyed = pd.DataFrame(
        {
            "strategy": frame_column(frame["strategy"]),
            "classifier": frame_column(frame["classifier"]),
            "user": frame[user_col].to_numpy(),
            "iteration": frame_column(frame["iteration"]),
            "p": _p_values(frame, p_col),
        }
    )
    if method == "rank":
        keyed["n_cal"] = as_count_column(frame, n_cal_col, "test rows")
    return keyed


def _per_iteration_tests(keyed: pd.DataFrame, method: str) -> pd.DataFrame:
    keys = [*_KEYS, "user", "iteration"]
    rows = []
    for key, group in keyed.groupby(keys, sort=True, observed=True):
        where = "{} / {} user {} iteration {}".format(*key)
        rows.append((*key, len(group), *_ks_test(group, method, where)))
    return pd.DataFrame(rows, columns=[*keys, "n", "statistic", "pvalue"])


def _bonferroni_over_iterations(tests: pd.DataFrame) -> pd.DataFrame:
    """One row per user: the smallest p-value times the number of iterations."""
    grouped = tests.groupby([*_KEYS, "user"], sort=True, observed=True)
    table = grouped.agg(
        n_iterations=("iteration", "size"),
        n=("n", "sum"),
        statistic=("statistic", "max"),
        pvalue=("pvalue", "min"),
    ).reset_index()
    table["pvalue"] = np.minimum(1.0, table["pvalue"] * table["n_iterations"])
    return table


def user_validity(
    frame: pd.DataFrame,
    *,
    level: float = 0.05,
    method: str = "uniform",
    user_col: str = "user",
    p_col: str = "p_true",
    n_cal_col: str = "n_cal",
    pool_iterations: bool = True,
) -> pd.DataFrame:
    """One-sided KS test of each user's true-label p-values, BH-adjusted across users.

    See the module docstring for the hypothesis, why it is one-sided and how
    to read it.

    Parameters
    ----------
    frame : DataFrame
        Test rows with ``strategy, classifier, iteration``, ``user_col`` and
        ``p_col`` (the conformal p-value of the true class, in [0, 1]); with
        ``method="rank"`` also ``n_cal_col``.
    level : float, default 0.05
        False discovery rate at which users are flagged.
    method : {"uniform", "rank"}
        ``"uniform"``: ``kstest(p, "uniform", alternative="greater")`` on the
        user's p-values. Anti-conservative when the test rows are not many
        fewer than the calibration rows (they share one calibration set).
        ``"rank"``: the exact one-sided two-sample KS test of the test scores
        against their calibration set, recovered from ``p`` and ``n_cal``,
        per (user, iteration); valid under exchangeability whatever the sizes.
    user_col, p_col, n_cal_col : str
        Column names of the user, the true-label p-value and (``"rank"``
        only) the calibration size of the row's task.
    pool_iterations : bool, default True
        True: one result per user. With ``"uniform"``, a single test on the
        rows of all iterations; with ``"rank"``, the per-iteration tests
        combined by Bonferroni (``min(1, m * min p)``, valid under any
        dependence between iterations). False: one result per (user,
        iteration); the adjustment then runs over all of them.

    Returns
    -------
    DataFrame
        One row per (strategy, classifier, user[, iteration]), sorted, with
        ``n`` (rows), ``n_iterations`` (pooled only), ``statistic`` (``D+``;
        pooled ``"rank"``: the largest over iterations), ``pvalue``,
        ``pvalue_bh`` (adjusted within the strategy and classifier),
        ``flagged`` (``pvalue_bh <= level``) and ``method``.

    Raises
    ------
    UsageError
        ``level`` outside (0, 1), or an unknown ``method``.
    DataError
        A missing column or value, a p-value outside [0, 1], or (``"rank"``)
        p-values that are not multiples of ``1/(n_cal + 1)``.

    Examples
    --------
    >>> rows = pd.DataFrame({
    ...     "strategy": "UCM", "classifier": "RF", "iteration": 0,
    ...     "user": [1] * 10 + [2] * 10,
    ...     "p_true": [(i + 0.5) / 10 for i in range(10)] + [0.01] * 10})
    >>> table = user_validity(rows)
    >>> table["flagged"].tolist()
    [False, True]
    >>> float(table.loc[1, "statistic"])
    0.99
    """
    level = check_level("level", level)
    method = check_choice("method", method, METHODS)
    keyed = _frame_for_tests(frame, method, user_col, p_col, n_cal_col)
    if pool_iterations and method == "uniform":
        rows = []
        for key, group in keyed.groupby([*_KEYS, "user"], sort=True, observed=True):
            where = "{} / {} user {}".format(*key)
            n_iterations = group["iteration"].nunique()
            rows.append((*key, n_iterations, len(group), *_ks_test(group, method, where)))
        columns = [*_KEYS, "user", "n_iterations", "n", "statistic", "pvalue"]
        table = pd.DataFrame(rows, columns=columns)
    else:
        table = _per_iteration_tests(keyed, method)
        if pool_iterations:
            table = _bonferroni_over_iterations(table)
    table["pvalue_bh"] = np.nan
    for index in table.groupby(_KEYS, sort=False, observed=True).groups.values():
        table.loc[index, "pvalue_bh"] = benjamini_hochberg(table.loc[index, "pvalue"].to_numpy())
    table["flagged"] = table["pvalue_bh"].to_numpy() <= level
    table["method"] = method
    return table
