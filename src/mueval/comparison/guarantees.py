"""Compare the per-user guarantees of strategies: who falls below target, and is it the same users.

:func:`compare_guarantees` puts the coverage summaries of one or more runs side
by side (pooled coverage and the worst user, each with its Clopper-Pearson
interval, a description of the observed rate, and the share of users *below
target at the run's level after its correction*: the verdicts of the exact
per-user test, :mod:`mueval.guarantees.user_level`, as each run records them),
and tests, for every pair of strategies evaluated with one classifier, whether
one leaves more users below target than the other.

That test is McNemar's exact test on the users both strategies evaluated: each
user is below target or not under each strategy (its verdict; users without a
verdict, as under ``uxc``, are left out), and only the users on which the two
disagree carry information. Under the null hypothesis a disagreeing user is
below under A or under B with probability 1/2, so the count of one kind is
Binomial(b + c, 1/2) (McNemar 1947; the exact form: Fay 2010, The R Journal 2/1).
The pairing treats users as independent; the flags of one strategy are
corrected across its users (Holm by default), so the test compares two sets of
flags each held at the run's level, not two sets of raw p-values.

Runs with the same strategy (a random and a blocked within-user split, say) stay
apart: the strategy is prefixed with its run's label, as in ``mueval compare``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from mueval.comparison.runs import labels_of, merge_runs
from mueval.comparison.significance import TestResult, star_label
from mueval.errors import DataError
from mueval.guarantees.adjustment import verdict_label
from mueval.guarantees.intervals import coverage_summary
from mueval.guarantees.records import CONFIDENCE
from mueval.guarantees.run_verdicts import user_coverage_table
from mueval.guarantees.verdict_settings import verdict_settings
from mueval.names import ordered_classifiers
from mueval.runfolder import RunFolder

__all__ = ["MCNEMAR_TEST", "GuaranteeComparison", "compare_guarantees", "users_below_test"]

MCNEMAR_TEST = "McNemar exact test on users below target (paired by user)"


@dataclass(frozen=True)
class GuaranteeComparison:
    """The outcome of :func:`compare_guarantees`.

    Attributes
    ----------
    summary : DataFrame
        One row per (strategy, classifier): the columns of a run folder's
        ``coverage_summary.csv`` (:data:`mueval.guarantees.records.COVERAGE_SUMMARY_COLUMNS`)
        and ``confidence``.
    tests : DataFrame
        One row per (classifier, strategy_a, strategy_b): ``below_a``,
        ``below_b`` (users below target under each, among the users of both),
        ``only_a``, ``only_b`` (users below under one strategy only), ``n``
        (users of both), ``p_value``, ``stars``, ``note``.
    labels : list of str
        The runs' labels.
    warnings : list of str
        The settings in which the runs differ.
    alpha : float
        The miscoverage level every run shares.
    verdicts : list of str
        What "below target" means in each run, in the runs' order
        (:func:`~mueval.guarantees.adjustment.verdict_label`, e.g. "below
        target at level 0.05 after Holm").
    """

    summary: pd.DataFrame
    tests: pd.DataFrame
    labels: list[str]
    warnings: list[str]
    alpha: float
    verdicts: list[str] = field(default_factory=list)


def users_below_test(a: Mapping[object, bool], b: Mapping[object, bool]) -> TestResult:
    """McNemar's exact test: do two strategies leave different users below target?

    Parameters
    ----------
    a, b : mapping user -> bool
        Whether each user is below target (its verdict) under strategy A and
        under B; only users present in both are used.

    Returns
    -------
    TestResult
        ``statistic`` is the number of users below under A only; ``n`` the users
        of both; the p-value is two-sided (``scipy.stats.binomtest``); NaN, with
        a note, where no user tells the strategies apart.

    Examples
    --------
    >>> r = users_below_test({1: True, 2: True, 3: False}, {1: False, 2: False, 3: False})
    >>> r.statistic, r.n, round(r.p_value, 3)
    (2.0, 3, 0.5)
    """
    users = [u for u in a if u in b]
    only_a = sum(bool(a[u]) and not bool(b[u]) for u in users)
    only_b = sum(bool(b[u]) and not bool(a[u]) for u in users)
    if only_a + only_b == 0:
        note = "no user is below target under one strategy only"
        return TestResult(MCNEMAR_TEST, float(only_a), np.nan, np.nan, "n/a", len(users), note)
    p = float(stats.binomtest(only_a, only_a + only_b, 0.5).pvalue)
    return TestResult(MCNEMAR_TEST, float(only_a), np.nan, p, star_label(p), len(users))


def _common_alpha(runs: Sequence[RunFolder], labels: Sequence[str]) -> float:
    alphas = {r.alpha for r in runs}
    if len(alphas) > 1:
        found = ", ".join(f"{label}: {r.alpha}" for label, r in zip(labels, runs, strict=True))
        msg = (
            f"the runs have different alpha ({found}); users below target are judged "
            "against 1 - alpha, so compare runs of one alpha"
        )
        raise DataError(msg)
    return alphas.pop()


def _per_user(run: RunFolder, names: Mapping[str, str]) -> pd.DataFrame:
    """A run's users with their verdicts, strategies renamed as in the comparison."""
    table = run.user_coverage
    if table is None or "p_value" not in table.columns:
        table = user_coverage_table(
            run.predictions, run.splits, alpha=run.alpha, config=run.config, classes=run.classes
        )
    table = table.copy()
    table["strategy"] = table["strategy"].replace(dict(names))
    return table


def _pair_rows(per_user: pd.DataFrame) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    # Only users with a verdict are paired (uxc's and class-conditional runs'
    # users have none).
    judged = per_user[per_user["below"].notna()]
    for classifier, group in judged.groupby("classifier", sort=False):
        below = {
            strategy: dict(zip(part["user"], part["below"].astype(bool), strict=True))
            for strategy, part in group.groupby("strategy", sort=False)
        }
        for s_a, s_b in itertools.combinations(below, 2):
            result = users_below_test(below[s_a], below[s_b])
            both = [u for u in below[s_a] if u in below[s_b]]
            rows.append(
                {
                    "classifier": classifier,
                    "strategy_a": s_a,
                    "strategy_b": s_b,
                    "below_a": sum(bool(below[s_a][u]) for u in both),
                    "below_b": sum(bool(below[s_b][u]) for u in both),
                    "only_a": int(result.statistic),
                    "only_b": sum(bool(below[s_b][u]) and not below[s_a][u] for u in both),
                    "n": result.n,
                    "p_value": result.p_value,
                    "stars": result.stars,
                    "note": result.note,
                }
            )
    return rows


def compare_guarantees(runs: Sequence[RunFolder], *, seed: int = 0) -> GuaranteeComparison:
    """Per-user coverage guarantees of one or more runs of one dataset, side by side.

    Parameters
    ----------
    runs : sequence of RunFolder
        Runs of one dataset and one ``alpha``.
    seed : int, default 0
        Seed of the bootstrap of the mean over users (in the summary).

    Returns
    -------
    GuaranteeComparison

    Raises
    ------
    DataError
        The runs evaluate different datasets or use different ``alpha``.
    """
    labels = labels_of(runs)
    alpha = _common_alpha(runs, labels)
    _, preds, _, notes = merge_runs(runs, labels)
    # The strategy names merge_runs gives: a strategy found in several runs is
    # prefixed with its run's label.
    seen: dict[str, int] = {}
    for r in runs:
        for s in set(r.splits["strategy"]):
            seen[s] = seen.get(s, 0) + 1
    per_user = pd.concat(
        [
            _per_user(r, {s: f"{label}/{s}" for s in seen if seen[s] > 1 and len(runs) > 1})
            for label, r in zip(labels, runs, strict=True)
        ],
        ignore_index=True,
    )
    verdicts = [
        verdict_label(settings["level"], settings["correction"], settings["family"])
        for settings in (verdict_settings(r.config) for r in runs)
    ]
    if len(set(verdicts)) > 1:
        found = ", ".join(f"{label}: {v}" for label, v in zip(labels, verdicts, strict=True))
        notes.append(f"the runs judge users below target differently ({found})")
    summary = coverage_summary(per_user, alpha=alpha, confidence=CONFIDENCE, seed=seed)
    # The runs' order of strategies and the protocol's of classifiers, not the
    # alphabetical ones.
    order = {
        "strategy": {s: i for i, s in enumerate(dict.fromkeys(preds["strategy"]))},
        "classifier": {c: i for i, c in enumerate(ordered_classifiers(preds["classifier"]))},
    }

    def rank(col: pd.Series) -> pd.Series:
        return col.map(order[str(col.name)])

    summary = summary.sort_values(["classifier", "strategy"], key=rank, kind="stable")
    per_user = per_user.sort_values(["classifier", "strategy"], key=rank, kind="stable")
    tests = pd.DataFrame(
        _pair_rows(per_user),
        columns=[
            "classifier",
            "strategy_a",
            "strategy_b",
            "below_a",
            "below_b",
            "only_a",
            "only_b",
            "n",
            "p_value",
            "stars",
            "note",
        ],
    )
    return GuaranteeComparison(
        summary=summary.reset_index(drop=True),
        tests=tests,
        labels=labels,
        warnings=notes,
        alpha=alpha,
        verdicts=verdicts,
    )
