"""Per-user verdicts "below target": an exact test of each user's covered count.

The null hypothesis
-------------------
For one target user and one iteration, the calibration scores that set the
threshold and the user's test scores are **exchangeable** (the ``n`` calibration
rows and the ``m`` test rows of the user could have been drawn in any order).
Split conformal then keeps a test row when its score is at most the ``k``-th
smallest calibration score, and, with no ties, the number ``X`` of the user's
covered test rows is Beta-Binomial:

    X ~ BetaBinomial(m, k, n + 1 - k),

because all the user's test rows share one calibration set: given that set
their coverage is one random number ``t ~ Beta(k, n + 1 - k)`` (the rank of the
threshold among ``n + 1`` exchangeable values), and ``X`` is Binomial(m, t)
given ``t``. Treating the rows as independent Bernoulli(1 - alpha) draws (the
plain binomial test) ignores the spread of ``t`` and flags valid users far
more often than its level says.

- **Ties** (Naive Bayes probabilities at 0 or 1, KNN's few values, ``top_k``)
  and the rules' inclusion tolerances only add covered rows: the covered count
  is then at least the tie-broken one, so the p-value below stays valid
  (conservative).
- **Class-conditional (Mondrian) calibration**: one threshold per class; the
  count is the sum over the classes ("cells") of each cell's Beta-Binomial,
  with that cell's calibration size, its own rank and the user's test rows of
  that class. The cells are taken as independent (independent rows given
  their class).
- **A set that always holds every class** (the rank exceeds ``n``: too few
  rows in a Mondrian cell, or ``--small-cal full-set``): every row is covered
  surely, a point mass at ``m``.
- **Iterations.** ``combine="convolution"`` adds the iterations' counts and
  uses the exact law of the sum, the convolution of the iterations'
  distributions; this needs the iterations to be independent. They are when
  each iteration draws the user's calibration and test rows afresh from the
  user's own rows by a uniformly random split (UDM, UCM, UAM): given the
  user's rows, each iteration's count is Beta-Binomial whatever the rows are,
  and the splits are independent. Under MM and UIM the user's test rows are
  scored against a calibration set drawn from (other) users, and the same
  rows of the user come back in every iteration: a user who is, by chance or
  not, unlike the calibration rows is unlike them in every iteration, so the
  counts are positively dependent and the convolution is anti-conservative
  (the benchmark ``benchmarks/user_level.py`` measures how much).
  ``combine="bonferroni"`` takes each iteration's exact p-value and returns
  ``min(1, B * min_i p_i)`` over ``B`` iterations, valid however the
  iterations depend on each other. :func:`default_combine` holds the choice
  per strategy and split: under ``--split blocked`` every iteration tests the
  same rows against the same calibration rows, so Bonferroni for every
  strategy.
- **Stratified splits.** UDM, UCM and UAM split the user's rows stratified by
  class, which makes the scores exchangeable within each class only; a cell
  may carry its own exact law (a ``null_pmf`` column, from
  :mod:`mueval.guarantees.stratified_null`), used in place of the
  Beta-Binomial.
- **Across users** of one (strategy, classifier), the p-values are adjusted by
  Holm (family-wise error at ``level``, any dependence), Benjamini-Hochberg
  (false discovery rate at ``level`` when the users' p-values are independent
  or positively dependent, PRDS) or not at all; a user is below target when
  the adjusted p-value is at most ``level``.

What it does not promise
------------------------
A verdict "not below target" does not show that the user is covered at
1 - alpha: it says only that the count is not unusually low under the null.
The test is one-sided (over-coverage is never flagged), it is exact only for
scores without ties under an exchangeable split, and stratified splits (the
protocol's) are close to, but not exactly, uniformly random. No verdict
(``nan``) is given where no single rank-``k`` threshold exists: ``uxc``
(cross-conformal p-values pooled over fold models) and MAPIE's own
``aps``/``raps``/``top_k`` sets under ``--threshold mapie`` (give ``rank``
as ``nan`` for them). The Clopper-Pearson interval of a user's covered rate
remains a description of the observed rate, not this test.

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
import pandas as pd
from scipy import stats

from mueval.conformal.thresholds import min_calibration_size
from mueval.guarantees.frame_checks import check_choice, check_level
from mueval.names import USER_CORRECTIONS, USER_FAMILIES, USER_FAMILY_WORDS
from mueval.strategies import BUILTIN_STRATEGIES, Strategy, registered_strategies
from mueval.strategies import COMBINES as STRATEGY_COMBINES

__all__ = [
    "COMBINES",
    "CORRECTIONS",
    "DEFAULT_COMBINE",
    "FAMILIES",
    "NO_VERDICT_STRATEGIES",
    "adjust_family",
    "adjust_pvalues",
    "cell_ranks",
    "covered_pmf",
    "default_combine",
    "has_verdict",
    "lower_pvalue",
    "null_pmf",
    "threshold_rank",
    "user_verdicts",
    "verdict_label",
]

#: Multiplicity corrections across the users of one (strategy, classifier)
#: (declared in :mod:`mueval.names`, which the command line offers).
CORRECTIONS: tuple[str, ...] = USER_CORRECTIONS

#: Over which users a correction runs: the whole run, or each (strategy, classifier).
FAMILIES: tuple[str, ...] = USER_FAMILIES

#: How iterations are combined per user (:data:`mueval.strategies.COMBINES`).
COMBINES: tuple[str, ...] = STRATEGY_COMBINES

#: Per built-in strategy: "convolution" where each iteration redraws the user's
#: calibration and test rows from the user's own rows (independent iterations),
#: "bonferroni" where the user's test rows are reused against calibration rows
#: of other users (dependent iterations). Each strategy's record holds its own
#: (:attr:`mueval.strategies.Strategy.combine`); strategies no record knows get
#: "bonferroni", the choice valid under any dependence.
DEFAULT_COMBINE: dict[str, str] = {s.code: s.combine for s in BUILTIN_STRATEGIES}

#: Built-in strategies without a single rank-k threshold: their verdict is ``nan``
#: (:attr:`mueval.strategies.Strategy.no_verdict`; :func:`has_verdict` knows every one).
NO_VERDICT_STRATEGIES: tuple[str, ...] = tuple(
    s.code for s in BUILTIN_STRATEGIES if not s.has_verdict
)


def _record(strategy: str) -> Strategy | None:
    """The registered record of a strategy code (any case), or None."""
    return {s.code: s for s in registered_strategies()}.get(str(strategy).lower())


def has_verdict(strategy: str) -> bool:
    """Whether the exact test gives a strategy's users a verdict (its record's
    ``no_verdict`` is None; a code no record knows is tested).

    Examples
    --------
    >>> has_verdict("ucm"), has_verdict("uxc")
    (True, False)
    """
    record = _record(strategy)
    return record is None or record.has_verdict


def default_combine(strategy: str, split: str = "random") -> str:
    """How to combine a user's iterations under a strategy and split method.

    Parameters
    ----------
    strategy : str
        ``"mm"``, ``"udm"``, ``"uim"``, ``"ucm"``, ``"uam"``, ...
    split : {"random", "blocked"}
        The run's ``--split``.

    Returns
    -------
    str
        ``"convolution"`` only where each iteration redraws the user's
        calibration and test rows from the user's own rows at random (UDM,
        UCM, UAM under a random split); ``"bonferroni"`` otherwise.

    Examples
    --------
    >>> default_combine("ucm"), default_combine("uim"), default_combine("ucm", "blocked")
    ('convolution', 'bonferroni', 'bonferroni')
    """
    check_choice("split", split, ("random", "blocked"))
    if split == "blocked":
        return "bonferroni"
    record = _record(strategy)
    return "bonferroni" if record is None else record.combine


_CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no correction"}


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
    pmf = stats.betabinom.pmf(np.arange(m + 1), m, k, n + 1 - k)
    pmf = np.clip(pmf, 0.0, None)
    pmf.flags.writeable = False
    return pmf / pmf.sum()


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


def adjust_pvalues(pvalues: Sequence[float] | np.ndarray, correction: str = "holm") -> np.ndarray:
    """Multiplicity-adjusted p-values of one family (the users of one
    strategy and classifier).

    Parameters
    ----------
    pvalues : array of float, shape (u,)
        ``nan`` entries (users without a verdict) stay ``nan`` and are not
        counted in the family.
    correction : {"holm", "bh", "none"}
        Holm's step-down (family-wise error, any dependence),
        Benjamini-Hochberg's step-up (false discovery rate, independent or
        PRDS p-values), or none.

    Returns
    -------
    ndarray of float, shape (u,)
        Rejecting where the adjusted value is at most ``level`` is the
        procedure at ``level``.

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.04, 0.03, 0.5], "holm").round(4).tolist()
    [0.04, 0.09, 0.09, 0.5]
    >>> adjust_pvalues([0.01, 0.04, 0.03, 0.5], "bh").round(4).tolist()
    [0.04, 0.0533, 0.0533, 0.5]
    """
    check_choice("correction", correction, CORRECTIONS)
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or ((p < 0) | (p > 1)).any():
        message = f"pvalues must be a 1-D array of values in [0, 1] or nan; found {p.tolist()[:5]}"
        raise ValueError(message)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    u = q.size
    if u == 0 or correction == "none":
        out[ok] = q
        return out
    order = np.argsort(q, kind="stable")
    ranked = q[order]
    i = np.arange(1, u + 1)
    if correction == "holm":
        # Step-down: the i-th smallest is tested at level/(u - i + 1); an
        # adjusted value can never fall below an earlier one.
        adjusted = np.maximum.accumulate(np.minimum(1.0, (u - i + 1) * ranked))
    else:
        # Step-up: each adjusted value is the smallest scaled value at or above it.
        adjusted = np.minimum.accumulate((np.minimum(1.0, ranked * u / i))[::-1])[::-1]
    back = np.empty(u)
    back[order] = adjusted
    out[ok] = back
    return out


def verdict_label(level: float, correction: str, family: str | None = None) -> str:
    """The words for a flag: ``"below target at level 0.05 after Holm"``.

    With ``family``, the users the correction ran over follow.

    Examples
    --------
    >>> verdict_label(0.05, "bh")
    'below target at level 0.05 after Benjamini-Hochberg'
    >>> verdict_label(0.05, "holm", "run")
    'below target at level 0.05 after Holm over every user of the run'
    """
    check_choice("correction", correction, CORRECTIONS)
    label = f"below target at level {level:g} after {_CORRECTION_NAMES[correction]}"
    if family is None:
        return label
    check_choice("family", family, FAMILIES)
    return f"{label} over {USER_FAMILY_WORDS[family]}"


def adjust_family(
    table: pd.DataFrame, *, level: float, correction: str, family: str
) -> pd.DataFrame:
    """``p_adjusted`` and ``below`` of a verdict table, corrected over ``family``.

    Parameters
    ----------
    table : DataFrame
        Rows with ``strategy``, ``classifier`` and ``p_value`` (``nan``: no
        verdict, left out of every family), such as :func:`user_verdicts`
        gives for one or several strategies.
    level : float
        Level of the verdict after the correction.
    correction : {"holm", "bh", "none"}
        The correction.
    family : {"run", "pair"}
        ``"run"``: every row of ``table`` is one family, so Holm's
        family-wise error (BH's false discovery rate) holds over all of them
        at once; ``"pair"``: each (strategy, classifier) is a family.

    Returns
    -------
    DataFrame
        A copy with ``p_adjusted`` and ``below`` (``<NA>`` without a
        p-value) recomputed, and ``family``.

    Examples
    --------
    >>> t = pd.DataFrame({"strategy": ["mm", "mm", "uim"], "classifier": "nb",
    ...                   "p_value": [0.02, 0.5, 0.03]})
    >>> adjust_family(t, level=0.05, correction="holm", family="pair")["below"].tolist()
    [True, False, True]
    >>> adjust_family(t, level=0.05, correction="holm", family="run")["below"].tolist()
    [False, False, False]
    """
    level = check_level("level", level)
    check_choice("correction", correction, CORRECTIONS)
    check_choice("family", family, FAMILIES)
    out = table.copy()
    p = out["p_value"].to_numpy(dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    if family == "run":
        adjusted = adjust_pvalues(p, correction)
    else:
        for idx in out.groupby(["strategy", "classifier"], sort=False).indices.values():
            adjusted[idx] = adjust_pvalues(p[idx], correction)
    out["p_adjusted"] = adjusted
    below = pd.Series(adjusted <= level, index=out.index)
    out["below"] = below.astype("boolean").mask(np.isnan(adjusted))
    out["family"] = family
    return out


_REQUIRED = ("strategy", "classifier", "user", "iteration", "n_cal", "n_test", "n_covered")
_USER_KEYS = ["strategy", "classifier", "user"]


def _per_user_pvalues(frame: pd.DataFrame, combine: str | None, split: str) -> pd.DataFrame:
    """One row per (strategy, classifier, user) of ``cells`` with its p-value.

    The cells are grouped once (a group number per row, then one stable sort)
    and each user's p-value computed on array slices: a pandas group object
    per user cost more than the exact p-values themselves. The rows of a
    user keep their order in ``frame``, as pandas' groups do, so every sum is
    the same float.
    """
    grouped = frame.groupby(_USER_KEYS, sort=True)
    group_of = grouped.ngroup().to_numpy()
    # Rows with a missing key (group -1) belong to no group, as in pandas.
    order = np.argsort(group_of, kind="stable")
    order = order[group_of[order] >= 0]
    bounds = np.flatnonzero(np.diff(group_of[order])) + 1
    starts = np.concatenate([[0], bounds])
    stops = np.concatenate([bounds, [len(order)]])
    columns = {
        name: frame[name].to_numpy()[order]
        for name in ("n_test", "n_cal", "rank", "n_covered", "iteration")
    }
    # A cell's own null law where the cells give one (the stratified split's,
    # mueval.guarantees.stratified_null); the Beta-Binomial elsewhere.
    given = frame["null_pmf"].to_numpy()[order] if "null_pmf" in frame.columns else None
    keys = frame[_USER_KEYS].iloc[order[starts]].reset_index(drop=True)
    how = [combine or default_combine(str(s), split) for s in keys["strategy"]]
    pvalues, expected = [], []
    for start, stop, way in zip(starts.tolist(), stops.tolist(), how, strict=True):
        p, e = _user_pvalue(
            columns["n_test"][start:stop],
            columns["n_cal"][start:stop],
            columns["rank"][start:stop].astype(np.float64),
            columns["n_covered"][start:stop].astype(np.int64),
            columns["iteration"][start:stop],
            way,
            None if given is None else given[start:stop],
        )
        pvalues.append(p)
        expected.append(e)
    sums = grouped.agg(
        n_iterations=("iteration", "nunique"),
        n_test=("n_test", "sum"),
        n_covered=("n_covered", "sum"),
    ).reset_index(drop=True)
    out = keys.assign(
        n_iterations=sums["n_iterations"].astype(int).to_numpy(),
        n_test=sums["n_test"].astype(int).to_numpy(),
        n_covered=sums["n_covered"].astype(int).to_numpy(),
        expected_covered=expected,
        p_value=pvalues,
        combine=how,
    )
    return out


def cell_ranks(
    cells: pd.DataFrame, *, alpha: float, rule: str | None = None, small_cal: str = "error"
) -> np.ndarray:
    """Threshold rank of every row of ``cells``, as :func:`user_verdicts` derives it.

    ``cells`` as for :func:`user_verdicts`; ``nan`` where a ``rank`` column
    says no verdict.
    """
    return _ranks(cells, check_level("alpha", alpha), rule, small_cal)


def _ranks(cells: pd.DataFrame, alpha: float, rule: str | None, small_cal: str) -> np.ndarray:
    """Threshold rank of every row of ``cells`` (nan: no verdict)."""
    if "rank" in cells.columns:
        return cells["rank"].to_numpy(dtype=np.float64)
    rules = cells["threshold"] if "threshold" in cells.columns else pd.Series(rule, cells.index)
    if rules.isna().any():
        message = "give a 'rank' or 'threshold' column, or rule= (study or mapie)"
        raise ValueError(message)
    mondrian = (
        cells["mondrian"].to_numpy(dtype=bool)
        if "mondrian" in cells.columns
        else np.zeros(len(cells), dtype=bool)
    )
    minimum = min_calibration_size(alpha)
    out = np.empty(len(cells))
    for j, (n, r, cond) in enumerate(zip(cells["n_cal"], rules, mondrian, strict=True)):
        n = int(n)
        if not cond and n < minimum:
            # Below the minimum, the non-Mondrian code either stops (error,
            # skip: no rows reach here) or answers with the full set.
            if small_cal != "full-set":
                message = (
                    f"a calibration set of {n} rows is below {minimum} at alpha={alpha} and "
                    f"small_cal={small_cal!r}: such rows have no sets to test"
                )
                raise ValueError(message)
            out[j] = n + 1
        else:
            out[j] = threshold_rank(n, alpha, r)
    return out


def _user_pvalue(
    m: np.ndarray,
    n: np.ndarray,
    k: np.ndarray,
    covered: np.ndarray,
    iteration: np.ndarray,
    combine: str,
    given: np.ndarray | None = None,
) -> tuple[float, float]:
    """(p-value, expected covered count) of one user's cells; nan when any rank is nan.

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


def user_verdicts(
    cells: pd.DataFrame,
    *,
    alpha: float,
    level: float = 0.05,
    correction: str = "holm",
    rule: str | None = None,
    combine: str | None = None,
    split: str = "random",
    small_cal: str = "error",
    family: str = "pair",
) -> pd.DataFrame:
    """Per-user exact p-values and "below target" verdicts at ``level``.

    Parameters
    ----------
    cells : DataFrame
        One row per (strategy, classifier, user, iteration) calibration set,
        or per Mondrian cell of it (several rows for one iteration are cells
        whose counts add up). Columns: ``strategy``, ``classifier``, ``user``,
        ``iteration``, ``n_cal`` (calibration scores of the set or cell),
        ``n_test`` (the user's test rows it thresholds), ``n_covered``, and
        either ``rank`` (the threshold's rank; ``n_cal + 1`` for a full set,
        ``nan`` for no verdict) or the rule, as a ``threshold`` column or
        ``rule=``; an optional bool ``mondrian`` column marks class cells
        (they have no minimum size), and an optional ``null_pmf`` column holds
        a cell's own null law (an array over ``0..n_test``, or None for the
        Beta-Binomial).
    alpha : float
        Miscoverage level of the sets.
    level : float
        Level of the verdict after the correction.
    correction : {"holm", "bh", "none"}
        Across the users of ``family``.
    rule : {"study", "mapie"}, optional
        Threshold rule when ``cells`` has neither ``rank`` nor ``threshold``.
    combine : {"convolution", "bonferroni"}, optional
        How iterations are combined; by default :func:`default_combine` of
        the strategy and ``split``.
    split : {"random", "blocked"}
        The run's ``--split`` (only used to choose ``combine``).
    small_cal : {"error", "skip", "full-set"}
        What the run did with a non-Mondrian calibration set below
        :func:`min_calibration_size` (only ``"full-set"`` leaves sets to test:
        all rows covered surely).
    family : {"pair", "run"}
        ``"pair"``: the correction runs over the users of each (strategy,
        classifier); ``"run"``: over every user of ``cells`` at once
        (:func:`adjust_family`).

    Returns
    -------
    DataFrame
        One row per (strategy, classifier, user): ``n_iterations``,
        ``n_test``, ``n_covered``, ``expected_covered`` (under the null),
        ``p_value`` (exact, one-sided), ``p_adjusted``, ``below`` (bool, or
        ``<NA>`` without a verdict), ``level``, ``correction``, ``combine``.
        Strategies without a verdict (:func:`has_verdict`) get ``nan`` p-values.

    Examples
    --------
    Two users with 20 calibration rows (rank 20: coverage Beta(20, 1)) and 40
    test rows in each of 2 iterations; the second covers 60 of 80:

    >>> cells = pd.DataFrame({"strategy": "ucm", "classifier": "nb",
    ...     "user": [1, 1, 2, 2], "iteration": [0, 1, 0, 1], "n_cal": 20,
    ...     "n_test": 40, "n_covered": [40, 38, 25, 35]})
    >>> out = user_verdicts(cells, alpha=0.05, rule="study")
    >>> print(out[["user", "n_covered", "p_value", "below"]].round(4).to_string(index=False))
     user  n_covered  p_value  below
        1         78   0.7382  False
        2         60   0.0007   True
    """
    alpha = check_level("alpha", alpha)
    level = check_level("level", level)
    check_choice("correction", correction, CORRECTIONS)
    check_choice("small_cal", small_cal, ("error", "skip", "full-set"))
    check_choice("split", split, ("random", "blocked"))
    if combine is not None:
        check_choice("combine", combine, COMBINES)
    missing = [c for c in _REQUIRED if c not in cells.columns]
    if missing:
        message = f"cells lacks the columns {missing}; needs {list(_REQUIRED)}"
        raise ValueError(message)
    frame = cells.copy()
    counts = frame[["n_cal", "n_test", "n_covered"]].to_numpy(dtype=np.float64)
    if (counts < 0).any() or (frame["n_covered"] > frame["n_test"]).any():
        message = "n_cal, n_test and n_covered must be counts with n_covered <= n_test"
        raise ValueError(message)
    frame["rank"] = _ranks(frame, alpha, rule, small_cal)
    without = [s for s in pd.unique(frame["strategy"]) if not has_verdict(s)]
    frame.loc[frame["strategy"].isin(without), "rank"] = np.nan

    if frame.empty:
        return pd.DataFrame()
    out = _per_user_pvalues(frame, combine, split)
    out = adjust_family(out, level=level, correction=correction, family=family)
    out["level"] = level
    out["correction"] = correction
    columns = [
        "strategy",
        "classifier",
        "user",
        "n_iterations",
        "n_test",
        "n_covered",
        "expected_covered",
        "p_value",
        "p_adjusted",
        "below",
        "level",
        "correction",
        "combine",
    ]
    return out[columns]
