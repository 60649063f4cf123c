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

The law itself is :mod:`mueval.guarantees.covered_law`; the corrections
across users are :mod:`mueval.guarantees.adjustment`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mueval.conformal.thresholds import min_calibration_size
from mueval.guarantees.adjustment import CORRECTIONS, adjust_family
from mueval.guarantees.covered_law import cells_pvalue, threshold_rank
from mueval.metrics.frame_checks import check_choice, check_level
from mueval.strategies import BUILTIN_STRATEGIES, Strategy, registered_strategies
from mueval.strategies import COMBINES as STRATEGY_COMBINES

__all__ = [
    "COMBINES",
    "DEFAULT_COMBINE",
    "NO_VERDICT_STRATEGIES",
    "cell_ranks",
    "default_combine",
    "has_verdict",
    "user_verdicts",
]

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
        p, e = cells_pvalue(
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
