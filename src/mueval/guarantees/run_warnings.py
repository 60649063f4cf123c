"""Warnings about a run, driven by tests and intervals rather than by point estimates.

One concept: the rules that turn a run's tables into warnings, with the record
(:class:`RunWarning`), the severities and the order they are read in.

Each rule is a pure function from one table to a list of :class:`RunWarning`;
:func:`collect_warnings` runs them all. A coverage rule is an error only when a
test at a stated level rejects, so that "lowest user 0.946 after 5 iterations"
is not reported while "pooled coverage 0.713 [0.70, 0.73]" is.

The rules, for a target coverage ``1 - alpha``:

``pooled-below-target`` (error; a warning without an exact test)
    The exact test of the pooled covered count
    (:mod:`mueval.guarantees.pooled_level`, through
    :func:`~mueval.guarantees.run_verdicts.pooled_table`) rejects at the
    run's level: every iteration's count against its null, the iterations
    combined as the per-user verdicts combine them, so rows re-tested in
    every iteration (``--split blocked``) count once per iteration and not
    as new evidence; under the family ``"run"`` the pooled tests of every
    strategy and classifier are corrected together. Where there is no such
    test (no table given, or a strategy without a rank-k threshold), the
    Clopper-Pearson upper bound below ``1 - alpha`` gives a warning that
    says it is at no stated level (it treats the rows as independent).
``users-below-target`` (warning; error when at least half the users)
    At least one user is below target by the exact per-user test of
    :mod:`mueval.guarantees.user_level` (the covered count against its
    Beta-Binomial null, iterations combined, adjusted across the users of the
    strategy and classifier), at the run's level after its correction: the
    summary's ``n_below``. The message names the level and the correction,
    and gives the count, the share and the lowest-covered user with the
    Clopper-Pearson interval of its observed rate (a description, not the test).
``degenerate-sets`` (warning)
    The mean set size is at least 90 % of the number of classes, or more
    than half of the sets hold every class. Such sets reach coverage by
    saying nothing.
``excess-empty-sets`` (warning)
    An empty set covers nothing, so every empty set is a miss and the rate of
    empty sets is at most the miscoverage rate, which split conformal bounds
    by ``alpha``. A one-sided binomial test of ``#empty`` against
    ``Binomial(n, alpha)`` (alternative: rate > alpha) at ``level`` (0.05)
    flags more empty sets than that bound allows. Rows are treated as
    independent, as in the exact interval.
``calibration-too-small`` (error)
    A calibration set has fewer rows than ``max(1/alpha, 1/(1-alpha))``
    (rounded up), the minimum MAPIE and ``mueval`` accept. With ``n``
    calibration scores the threshold is the ``ceil((n + 1)(1 - alpha))``-th
    smallest; for ``(n + 1) alpha < 1`` that rank exceeds ``n`` and only the
    full set is valid. The rank is never below 1 (``ceil((n + 1)(1 - alpha))
    >= 1`` for every ``alpha < 1``), so no rule empties every set: above
    ``alpha = 0.5`` the ``1/(1-alpha)`` term only refuses sets whose finite
    threshold is valid, as MAPIE does. Under class-conditional calibration
    each class's cell (``n_cal_cell``, the smallest) below the minimum is a
    warning, since the sets stay valid: a cell of fewer than
    ``ceil((1 - alpha)/alpha)`` rows (18 or fewer at alpha = 0.05) puts its
    class in every set; a cell of exactly that many (19) keeps a finite
    threshold, its largest score.
``users-not-exchangeable`` (warning; error when at least half the users)
    The one-sided KS test of :mod:`mueval.guarantees.validity` rejects, after the
    Benjamini-Hochberg adjustment across the users of the strategy and
    classifier, that a user's true-label p-values are super-uniform: that
    user's calibration rows are not exchangeable with their test rows. The
    message gives the count, the test method and the users with their
    adjusted p-values.

Examples
--------
>>> summary = pd.DataFrame({
...     "strategy": ["UIM"], "classifier": ["RF"], "n_users": [36], "n_below": [36],
...     "share_below": [1.0], "worst_user": [17], "worst_n": [300],
...     "worst_coverage": [0.61], "worst_low": [0.552], "worst_high": [0.666],
...     "pooled_n": [10800], "pooled_covered": [9536], "pooled_coverage": [0.883],
...     "pooled_low": [0.877], "pooled_high": [0.889]})
>>> [w.kind for w in coverage_warnings(summary, alpha=0.1)]
['pooled-below-target', 'users-below-target']
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from mueval.conformal.thresholds import min_calibration_size
from mueval.guarantees.adjustment import verdict_label
from mueval.guarantees.intervals import clopper_pearson
from mueval.metrics.frame_checks import (
    as_count_column,
    check_level,
    check_positive_int,
    require_columns,
)

__all__ = [
    "DEGENERATE_FULL_SHARE",
    "DEGENERATE_SIZE_SHARE",
    "SEVERITIES",
    "RunWarning",
    "by_severity",
    "calibration_warnings",
    "collect_warnings",
    "coverage_warnings",
    "degenerate_set_warnings",
    "empty_set_warnings",
    "validity_warnings",
]

#: Mean set size, as a share of the number of classes, from which sets are degenerate.
DEGENERATE_SIZE_SHARE = 0.9
#: Share of sets holding every class above which sets are degenerate.
DEGENERATE_FULL_SHARE = 0.5

_KEYS = ["strategy", "classifier"]

#: The severities, most severe first: the one vocabulary of ``run.json``'s
#: ``severity`` field, the terminal (``evaluate``'s summary, ``report``) and the
#: HTML report. ``error``: the guarantee fails or cannot hold; ``warning``: it
#: holds, but something deserves a look.
SEVERITIES: tuple[str, ...] = ("error", "warning")

# Within a severity, the rules whose failure says most about the guarantee first.
_KIND_ORDER = (
    "pooled-below-target",
    "calibration-too-small",
    "users-below-target",
    "users-not-exchangeable",
    "degenerate-sets",
    "excess-empty-sets",
)


@dataclass(frozen=True)
class RunWarning:
    """One warning about one (strategy, classifier).

    Attributes
    ----------
    strategy, classifier : str
        Where the problem is.
    kind : str
        The rule that fired: ``pooled-below-target``, ``users-below-target``,
        ``degenerate-sets``, ``excess-empty-sets`` or ``calibration-too-small``.
    message : str
        A sentence with the numbers, their intervals and the names involved.
    severity : str
        ``"error"`` (the guarantee fails or cannot hold) or ``"warning"``.
    """

    strategy: str
    classifier: str
    kind: str
    message: str
    severity: str


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def _interval(value: float, low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return f"{value:.3f} (interval undefined)"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def _pooled_warning(
    row: pd.Series, target: float, test: Mapping[str, Any] | None, family: str | None
) -> RunWarning | None:
    """The exact pooled test where there is one (an error at its level), else the
    interval rule, which is no test at a stated level (a warning)."""
    where = f"{row['strategy']} / {row['classifier']}: pooled coverage"
    observed = (
        f"{_interval(row['pooled_coverage'], row['pooled_low'], row['pooled_high'])} over "
        f"{int(row['pooled_n'])} test rows"
    )
    if test is not None and not math.isnan(float(test["p_value"])):
        if not bool(test["below"]):
            return None
        scope = (
            f"corrected by {_CORRECTION_WORDS[test['correction']]} over the pooled tests of "
            "every strategy and classifier of the run"
            if family == "run"
            else "one test for this strategy and classifier"
        )
        message = (
            f"{where} {observed} is below the target {target:.3f} at level "
            f"{test['level']:g} (exact test of the pooled covered count: p = "
            f"{float(test['p_value']):.2g}, adjusted {float(test['p_adjusted']):.2g}, "
            f"{scope}; iterations combined by {test['combine']}, rows re-tested across "
            "iterations counted once per iteration)."
        )
        return RunWarning(
            row["strategy"], row["classifier"], "pooled-below-target", message, "error"
        )
    if not float(row["pooled_high"]) < target:
        return None
    message = (
        f"{where} {observed} is below the target {target:.3f}: the whole Clopper-Pearson "
        "interval lies below it. The interval treats rows as independent, while iterations "
        "re-test rows and share calibration rows; there is no exact pooled test for this "
        "strategy, so this is no test at a stated level."
    )
    return RunWarning(row["strategy"], row["classifier"], "pooled-below-target", message, "warning")


_CORRECTION_WORDS = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no correction"}


def _users_warning(row: pd.Series, target: float, verdict: str) -> RunWarning | None:
    n_below, n_users = int(row["n_below"]), int(row["n_users"])
    if n_below == 0:
        return None
    share = n_below / n_users
    message = (
        f"{row['strategy']} / {row['classifier']}: {n_below} of {n_users} users "
        f"({_pct(share)}) are {verdict} (exact per-user test of the covered count against "
        f"the target {target:.3f}); lowest coverage: user {row['worst_user']}, "
        f"{_interval(row['worst_coverage'], row['worst_low'], row['worst_high'])} "
        f"(Clopper-Pearson interval of the observed rate) over {int(row['worst_n'])} test rows."
    )
    severity = "error" if share >= 0.5 else "warning"
    return RunWarning(row["strategy"], row["classifier"], "users-below-target", message, severity)


def coverage_warnings(
    summary: pd.DataFrame,
    *,
    alpha: float,
    user_level: float = 0.05,
    user_correction: str = "holm",
    user_family: str | None = None,
    pooled: pd.DataFrame | None = None,
) -> list[RunWarning]:
    """The two coverage rules, from a :func:`~mueval.guarantees.intervals.coverage_summary`.

    - ``pooled-below-target``: with ``pooled``, an error where its exact test
      rejects (``below``, at the run's level after the family's correction);
      without it, or for a strategy without that test, a warning where
      ``pooled_high < 1 - alpha`` (the interval rule, at no stated level).
    - ``users-below-target``: ``n_below > 0``; an error when
      ``n_below / n_users >= 0.5``, a warning otherwise.

    Parameters
    ----------
    summary : DataFrame
        One row per (strategy, classifier) with ``n_users, n_below,
        worst_user, worst_n, worst_coverage, worst_low, worst_high, pooled_n,
        pooled_coverage, pooled_low, pooled_high``; ``n_below`` counts the
        users the exact per-user test flags (``below`` of
        :func:`~mueval.guarantees.user_level.user_verdicts`).
    alpha : float
        Target miscoverage level in (0, 1).
    user_level, user_correction : float, str
        The level and the correction of those verdicts, named in the message
        (:func:`~mueval.guarantees.adjustment.verdict_label`).
    user_family : {"run", "pair"}, optional
        The users the correction ran over, named in the message.
    pooled : DataFrame, optional
        :func:`~mueval.guarantees.run_verdicts.pooled_table`: ``strategy,
        classifier, p_value, p_adjusted, below, combine``.

    Returns
    -------
    list of RunWarning
        Per (strategy, classifier) in table order: the pooled warning first.
    """
    target = 1.0 - check_level("alpha", alpha)
    level = check_level("user_level", user_level)
    verdict = verdict_label(level, user_correction, user_family)
    tests: dict[tuple[str, str], dict[str, Any]] = {}
    if pooled is not None:
        require_columns(
            pooled,
            [*_KEYS, "p_value", "p_adjusted", "below", "combine"],
            "pooled tests",
            may_be_missing=("p_value", "p_adjusted", "below"),
        )
        for record in pooled.to_dict("records"):
            key = (str(record["strategy"]), str(record["classifier"]))
            fields = {str(name): value for name, value in record.items()}
            tests[key] = {**fields, "level": level, "correction": user_correction}
    columns = [
        *_KEYS,
        "n_users",
        "n_below",
        "worst_user",
        "worst_n",
        "worst_coverage",
        "worst_low",
        "worst_high",
        "pooled_n",
        "pooled_coverage",
        "pooled_low",
        "pooled_high",
    ]
    require_columns(
        summary, columns, "coverage summary", may_be_missing=("worst_low", "worst_high")
    )
    warnings: list[RunWarning] = []
    for _, row in summary.iterrows():
        test = tests.get((str(row["strategy"]), str(row["classifier"])))
        for found in (
            _pooled_warning(row, target, test, user_family),
            _users_warning(row, target, verdict),
        ):
            if found is not None:
                warnings.append(found)
    return warnings


def degenerate_set_warnings(set_stats: pd.DataFrame, *, n_classes: int) -> list[RunWarning]:
    """``degenerate-sets``: sets that hold (nearly) every class.

    Fires when ``mean_size >= 0.9 * n_classes`` or ``share_full > 0.5``.

    Parameters
    ----------
    set_stats : DataFrame
        ``strategy, classifier, mean_size, share_full`` (see
        :func:`~mueval.metrics.set_sizes.set_statistics`).
    n_classes : int
        Number of classes.

    Returns
    -------
    list of RunWarning

    Examples
    --------
    >>> stats_ = pd.DataFrame({"strategy": ["UCM"], "classifier": ["KNN"],
    ...                        "mean_size": [5.97], "share_full": [0.97]})
    >>> print(degenerate_set_warnings(stats_, n_classes=6)[0].message)
    ... # doctest: +NORMALIZE_WHITESPACE
    UCM / KNN: degenerate sets: mean size 5.97 of 6 classes (99.5 %, threshold
    90 %) and 97.0 % of sets hold all 6 classes (threshold: more than 50 %);
    coverage here says little about the classifier.
    """
    n_classes = check_positive_int("n_classes", n_classes)
    require_columns(set_stats, [*_KEYS, "mean_size", "share_full"], "set statistics")
    warnings = []
    for _, row in set_stats.iterrows():
        size, full = float(row["mean_size"]), float(row["share_full"])
        too_big = size >= DEGENERATE_SIZE_SHARE * n_classes
        too_full = full > DEGENERATE_FULL_SHARE
        if not (too_big or too_full):
            continue
        message = (
            f"{row['strategy']} / {row['classifier']}: degenerate sets: mean size {size:.2f} "
            f"of {n_classes} classes ({_pct(size / n_classes)}, threshold "
            f"{100 * DEGENERATE_SIZE_SHARE:.0f} %) {'and' if too_big == too_full else 'while'} "
            f"{_pct(full)} of sets hold all {n_classes} classes (threshold: more than "
            f"{100 * DEGENERATE_FULL_SHARE:.0f} %); coverage here says little about the classifier."
        )
        warnings.append(
            RunWarning(row["strategy"], row["classifier"], "degenerate-sets", message, "warning")
        )
    return warnings


def empty_set_warnings(
    set_stats: pd.DataFrame, *, alpha: float, level: float = 0.05
) -> list[RunWarning]:
    """``excess-empty-sets``: more empty sets than ``alpha`` would explain.

    An empty set holds no class, so it misses the true one: the rate of empty
    sets is at most the miscoverage rate, which split conformal keeps at or
    below ``alpha``. The rule tests ``H0: rate <= alpha`` against ``rate >
    alpha`` with a one-sided exact binomial test of ``n_empty`` out of ``n``
    and fires when its p-value is below ``level``.

    Parameters
    ----------
    set_stats : DataFrame
        ``strategy, classifier, n`` and ``n_empty`` (or ``share_empty``,
        turned into a count by rounding ``share_empty * n``).
    alpha : float
        Target miscoverage level in (0, 1).
    level : float, default 0.05
        Significance level of the test.

    Returns
    -------
    list of RunWarning

    Examples
    --------
    >>> stats_ = pd.DataFrame({"strategy": ["UCM"], "classifier": ["RF"],
    ...                        "n": [200], "n_empty": [32]})
    >>> [w.kind for w in empty_set_warnings(stats_, alpha=0.1)]
    ['excess-empty-sets']
    """
    alpha = check_level("alpha", alpha)
    level = check_level("level", level)
    what = "set statistics"
    count_col = "n_empty" if "n_empty" in getattr(set_stats, "columns", ()) else "share_empty"
    require_columns(set_stats, [*_KEYS, "n", count_col], what)
    n = as_count_column(set_stats, "n", what)
    if count_col == "n_empty":
        empty = as_count_column(set_stats, "n_empty", what)
    else:
        empty = np.rint(set_stats["share_empty"].to_numpy(np.float64) * n).astype(np.int64)
    warnings = []
    for (_, row), k, total in zip(set_stats.iterrows(), empty, n, strict=True):
        if total == 0 or k > total:
            continue
        p_value = stats.binomtest(int(k), int(total), alpha, alternative="greater").pvalue
        if not p_value < level:
            continue
        low, high = clopper_pearson(int(k), int(total))
        message = (
            f"{row['strategy']} / {row['classifier']}: {k} of {total} sets are empty "
            f"({_interval(k / total, low, high)}); an empty set is a miss, so no more than "
            f"alpha = {alpha:g} of sets should be empty (one-sided binomial test "
            f"p = {p_value:.2g} < {level:g})."
        )
        warnings.append(
            RunWarning(row["strategy"], row["classifier"], "excess-empty-sets", message, "warning")
        )
    return warnings


def _describe_small(small: pd.DataFrame, extra: Sequence[str], limit: int = 5) -> str:
    """'user 3 iteration 0 (4 rows), ...' for the smallest calibration sets."""
    parts = []
    for _, row in small.sort_values("n_cal", kind="stable").head(limit).iterrows():
        where = " ".join(f"{col} {row[col]}" for col in extra)
        parts.append(f"{where} ({int(row['n_cal'])} rows)".strip())
    more = f", and {len(small) - limit} more" if len(small) > limit else ""
    return ", ".join(parts) + more


def calibration_warnings(calibration: pd.DataFrame, *, alpha: float) -> list[RunWarning]:
    """``calibration-too-small`` (error): calibration sets below the minimum size.

    The minimum is :func:`~mueval.conformal.thresholds.min_calibration_size` (``max(1/alpha,
    1/(1-alpha))`` rounded up). Rows with a missing ``n_cal`` (strategies
    without calibration) are ignored.

    Parameters
    ----------
    calibration : DataFrame
        One row per task with ``strategy, classifier, n_cal`` and optionally
        ``user`` and ``iteration``, named in the message.
    alpha : float
        Target miscoverage level in (0, 1).

    Returns
    -------
    list of RunWarning
        One per (strategy, classifier) with at least one set too small.

    Examples
    --------
    >>> cal = pd.DataFrame({"strategy": "UCM", "classifier": "RF",
    ...                     "user": [1, 2, 3], "n_cal": [40, 8, 12]})
    >>> print(calibration_warnings(cal, alpha=0.1)[0].message)
    ... # doctest: +NORMALIZE_WHITESPACE
    UCM / RF: 1 of 3 calibration sets have fewer than 10 rows, the minimum for
    alpha = 0.1 (max(1/alpha, 1/(1-alpha))): user 2 (8 rows).
    """
    alpha = check_level("alpha", alpha)
    minimum = min_calibration_size(alpha)
    require_columns(calibration, [*_KEYS], "calibration sizes")
    require_columns(calibration, ["n_cal"], "calibration sizes", may_be_missing=("n_cal",))
    extra = [
        col for col in ("user", "userid", "target_user", "iteration") if col in calibration.columns
    ]
    present = calibration[calibration["n_cal"].notna()]
    as_count_column(present, "n_cal", "calibration sizes")
    warnings = []
    for (strategy, classifier), group in present.groupby(_KEYS, sort=True, observed=True):
        small = group[group["n_cal"] < minimum]
        if small.empty:
            continue
        message = (
            f"{strategy} / {classifier}: {len(small)} of {len(group)} calibration sets have "
            f"fewer than {minimum} rows, the minimum for alpha = {alpha:g} "
            f"(max(1/alpha, 1/(1-alpha))): {_describe_small(small, extra)}."
        )
        warnings.append(
            RunWarning(str(strategy), str(classifier), "calibration-too-small", message, "error")
        )
    if "n_cal_cell" in present.columns:
        warnings += _cell_warnings(present, minimum, alpha)
    return warnings


def _cell_warnings(present: pd.DataFrame, minimum: int, alpha: float) -> list[RunWarning]:
    """Class-conditional cells below the minimum: those classes are in every set."""
    cells = present[present["n_cal_cell"].notna()]
    # Both rules have a finite threshold from ceil((1 - alpha) / alpha) rows on
    # (19 at alpha = 0.05), one row below the minimum; the 1e-9 keeps
    # 0.95 / 0.05 = 18.999999999999996 at 19.
    first_finite = int(np.ceil((1.0 - alpha) / alpha - 1e-9))
    warnings = []
    for (strategy, classifier), group in cells.groupby(_KEYS, sort=True, observed=True):
        small = group[group["n_cal_cell"].astype("int64") < minimum]
        if small.empty:
            continue
        smallest = int(small["n_cal_cell"].min())
        if smallest < first_finite:
            consequence = (
                f"a class with fewer than {first_finite} calibration rows is in every set, so "
                "the sets are valid but grow towards every class"
            )
        else:
            consequence = (
                f"with {first_finite} or more rows a class keeps a finite threshold (at "
                f"{first_finite} rows its largest calibration score), so the sets stay valid"
            )
        message = (
            f"{strategy} / {classifier}: {len(small)} of {len(group)} class-conditional "
            f"calibrations have a class with fewer than {minimum} calibration rows, the "
            f"minimum for alpha = {alpha:g} (smallest: {smallest}); {consequence}"
        )
        warnings.append(
            RunWarning(str(strategy), str(classifier), "calibration-too-small", message, "warning")
        )
    return warnings


def validity_warnings(validity: pd.DataFrame, *, show: int = 5) -> list[RunWarning]:
    """``users-not-exchangeable``: users the per-user KS test flags.

    Parameters
    ----------
    validity : DataFrame
        :func:`mueval.guarantees.validity.user_validity` output: ``strategy, classifier,
        user, pvalue_bh, flagged, method``.
    show : int, default 5
        Users named in the message (the smallest adjusted p-values first).

    Returns
    -------
    list of RunWarning
        One per (strategy, classifier) with a flagged user; an error when at
        least half of its users are flagged.

    Examples
    --------
    >>> table = pd.DataFrame({"strategy": "UCM", "classifier": "RF", "user": [1, 2, 3, 4],
    ...                       "pvalue_bh": [0.6, 0.001, 0.6, 0.6],
    ...                       "flagged": [False, True, False, False], "method": "rank"})
    >>> print(validity_warnings(table)[0].message)  # doctest: +NORMALIZE_WHITESPACE
    UCM / RF: 1 of 4 users have true-label p-values that are not super-uniform
    (one-sided KS, rank method, Benjamini-Hochberg adjusted at 0.05 over the users of
    this strategy and classifier): their calibration rows are not exchangeable with
    their test rows: user 2 (adjusted p 0.001).
    """
    require_columns(validity, [*_KEYS, "user", "pvalue_bh", "flagged", "method"], "validity")
    warnings = []
    for (strategy, classifier), group in validity.groupby(_KEYS, sort=True, observed=True):
        flagged = group[group["flagged"].astype(bool)].sort_values("pvalue_bh", kind="stable")
        if flagged.empty:
            continue
        named = ", ".join(
            f"user {r.user} (adjusted p {r.pvalue_bh:.3g})" for r in flagged.head(show).itertuples()
        )
        more = f" and {len(flagged) - show} more" if len(flagged) > show else ""
        methods = "/".join(sorted(set(group["method"])))
        message = (
            f"{strategy} / {classifier}: {len(flagged)} of {len(group)} users have true-label "
            f"p-values that are not super-uniform (one-sided KS, {methods} method, "
            "Benjamini-Hochberg adjusted at 0.05 over the users of this strategy and "
            "classifier): their calibration rows are not "
            f"exchangeable with their test rows: {named}{more}."
        )
        severity = "error" if 2 * len(flagged) >= len(group) else "warning"
        warnings.append(
            RunWarning(str(strategy), str(classifier), "users-not-exchangeable", message, severity)
        )
    return warnings


_RULE_ORDER = [
    "pooled-below-target",
    "users-below-target",
    "users-not-exchangeable",
    "calibration-too-small",
    "excess-empty-sets",
    "degenerate-sets",
]


def collect_warnings(
    summary: pd.DataFrame,
    set_stats: pd.DataFrame,
    *,
    alpha: float,
    n_classes: int,
    calibration: pd.DataFrame | None = None,
    level: float = 0.05,
    validity: pd.DataFrame | None = None,
    user_level: float = 0.05,
    user_correction: str = "holm",
    user_family: str | None = None,
    pooled: pd.DataFrame | None = None,
) -> list[RunWarning]:
    """Every rule, sorted by (strategy, classifier) then by rule.

    Parameters
    ----------
    summary : DataFrame
        :func:`~mueval.guarantees.intervals.coverage_summary` output.
    set_stats : DataFrame
        :func:`~mueval.metrics.set_sizes.set_statistics` output (or the same columns).
    alpha : float
        Target miscoverage level in (0, 1).
    n_classes : int
        Number of classes.
    calibration : DataFrame, optional
        Calibration sizes per task (see :func:`calibration_warnings`).
    level : float, default 0.05
        Level of the empty-set test.
    validity : DataFrame, optional
        Per-user validity tests (see :func:`validity_warnings`).
    user_level, user_correction : float, str
        Level and correction of the per-user verdicts counted in ``summary``
        (see :func:`coverage_warnings`).
    user_family, pooled : str, DataFrame, optional
        The family of those verdicts and the exact pooled tests (see
        :func:`coverage_warnings`).

    Returns
    -------
    list of RunWarning
    """
    found = [
        *coverage_warnings(
            summary,
            alpha=alpha,
            user_level=user_level,
            user_correction=user_correction,
            user_family=user_family,
            pooled=pooled,
        ),
        *degenerate_set_warnings(set_stats, n_classes=n_classes),
        *empty_set_warnings(set_stats, alpha=alpha, level=level),
    ]
    if calibration is not None:
        found.extend(calibration_warnings(calibration, alpha=alpha))
    if validity is not None:
        found.extend(validity_warnings(validity))
    return sorted(
        found, key=lambda w: (str(w.strategy), str(w.classifier), _RULE_ORDER.index(w.kind))
    )


def _rank(warning: Mapping[str, Any]) -> tuple[int, int]:
    severity, kind = warning["severity"], warning["kind"]
    s = SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)
    k = _KIND_ORDER.index(kind) if kind in _KIND_ORDER else len(_KIND_ORDER)
    return s, k


def by_severity(warnings: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The warnings (``run.json``'s dicts), most severe first.

    Errors before warnings (:data:`SEVERITIES`); within a severity, a pooled
    shortfall before a calibration problem before per-user findings before set
    shapes; otherwise the run's order (the sort is stable).
    """
    return sorted(warnings, key=_rank)
