"""A run's per-user verdicts "below target", from its prediction rows and splits.

The exact test of :mod:`.user_level` at the run's ``user_level`` after its
``user_correction`` (``run.json``'s config; 0.05 and Holm for folders written
before them), on one row per (strategy, classifier, user, iteration) with the
calibration size of ``splits.parquet`` and the user's test and covered rows
(:func:`~mueval.guarantees.run_cells.verdict_cells`), or, under
class-conditional calibration, one per class cell
(:func:`~mueval.guarantees.run_cells.class_cells`); the settings are
:func:`~mueval.guarantees.verdict_settings.verdict_settings`'s.
:func:`user_coverage_table` joins the verdicts to
each user's coverage and its Clopper-Pearson interval, a description of the
observed rate: ``user_coverage.csv``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from mueval.guarantees.adjustment import adjust_family
from mueval.guarantees.intervals import per_user_coverage
from mueval.guarantees.pooled_level import pooled_pvalue, within_iteration
from mueval.guarantees.records import CONFIDENCE
from mueval.guarantees.run_cells import strategy_parts
from mueval.guarantees.user_level import user_verdicts
from mueval.guarantees.verdict_settings import verdict_settings

__all__ = [
    "POOLED_COLUMNS",
    "pooled_family",
    "pooled_table",
    "user_coverage_table",
    "verdict_table",
]

_VERDICT_COLUMNS = ["expected_covered", "p_value", "p_adjusted", "below"]


def verdict_table(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    config: Mapping[str, Any] | None = None,
    classes: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Each user's exact test of "below target" in a run.

    Parameters
    ----------
    predictions, splits : DataFrame
        As for :func:`~mueval.guarantees.run_cells.verdict_cells` (and
        :func:`~mueval.guarantees.run_cells.class_cells` under
        class-conditional calibration).
    alpha : float
        The run's miscoverage level.
    config : mapping, optional
        The run's configuration (:func:`~mueval.guarantees.verdict_settings.verdict_settings`).
    classes : sequence of str, optional
        Class names in index order; a class-conditional run needs them (and
        ``n_cal_class`` in the splits) for its cells, or gets no verdict.

    Returns
    -------
    DataFrame
        :func:`~mueval.guarantees.user_level.user_verdicts` output, one row
        per (strategy, classifier, user), for every strategy of the
        predictions, corrected over the run's family (``"run"``: every user
        of ``predictions`` at once; ``"pair"``: each strategy and classifier);
        users of a strategy with a
        :func:`~mueval.guarantees.verdict_settings.no_verdict_reason` have ``nan``
        p-values and ``below`` ``<NA>``, and so do the users of a strategy
        with a calibration set the run's ``small_cal`` policy refuses (no run
        leaves test rows for one; the ``calibration-too-small`` warning names
        it).
    """
    settings = verdict_settings(config)
    parts = [
        user_verdicts(cells, **options)
        for _, options, cells, _ in strategy_parts(predictions, splits, alpha, settings, classes)
    ]
    if not parts:
        return pd.DataFrame(columns=["strategy", "classifier", "user", *_VERDICT_COLUMNS])
    table = pd.concat(parts, ignore_index=True)
    if settings["family"] == "run":
        table = adjust_family(
            table, level=settings["level"], correction=settings["correction"], family="run"
        ).drop(columns="family")
    return table


#: Columns of :func:`pooled_table`.
POOLED_COLUMNS = [
    "strategy",
    "classifier",
    "pooled_n",
    "pooled_covered",
    "combine",
    "dependence",
    "p_value",
    "p_adjusted",
    "below",
]


def pooled_table(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    config: Mapping[str, Any] | None = None,
    classes: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The exact test of each (strategy, classifier)'s pooled covered count.

    The null and the combinations are :mod:`mueval.guarantees.pooled_level`'s,
    on the cells of the per-user verdicts (:func:`verdict_table`); a strategy
    without a per-user verdict has none either (``p_value`` ``nan``). The
    p-values are corrected with the run's correction across the run's
    (strategy, classifier) pairs under the family ``"run"``, and not at all
    under ``"pair"`` (one test per pair).

    Returns
    -------
    DataFrame
        :data:`POOLED_COLUMNS`, one row per (strategy, classifier).
    """
    settings = verdict_settings(config)
    rows = []
    for strategy, options, cells, tested in strategy_parts(
        predictions, splits, alpha, settings, classes
    ):
        dependence = within_iteration(strategy)
        for classifier, part in cells.groupby("classifier", sort=True):
            p = (
                pooled_pvalue(part, dependence=dependence, combine=options["combine"])
                if tested
                else np.nan
            )
            rows.append(
                {
                    "strategy": strategy,
                    "classifier": classifier,
                    "pooled_n": int(part["n_test"].sum()),
                    "pooled_covered": int(part["n_covered"].sum()),
                    "combine": options["combine"],
                    "dependence": dependence,
                    "p_value": p,
                }
            )
    table = pd.DataFrame(rows, columns=POOLED_COLUMNS[:7])
    return pooled_family(table, settings)


def pooled_family(table: pd.DataFrame, settings: Mapping[str, Any]) -> pd.DataFrame:
    """``p_adjusted`` and ``below`` of a :func:`pooled_table` (or several, concatenated)."""
    correction = settings["correction"] if settings["family"] == "run" else "none"
    out = adjust_family(table, level=settings["level"], correction=correction, family="run").drop(
        columns="family"
    )
    return out[POOLED_COLUMNS]


def user_coverage_table(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    config: Mapping[str, Any] | None = None,
    seed: int = 0,
    classes: Sequence[str] | None = None,
) -> pd.DataFrame:
    """``user_coverage.csv``: each user's coverage, its interval and its verdict.

    Parameters
    ----------
    predictions, splits : DataFrame
        As for :func:`~mueval.guarantees.run_cells.verdict_cells`.
    alpha : float
        The run's miscoverage level.
    config : mapping, optional
        The run's configuration (:func:`~mueval.guarantees.verdict_settings.verdict_settings`).
    seed : int, default 0
        Passed to :func:`~mueval.guarantees.intervals.per_user_coverage`.
    classes : sequence of str, optional
        Class names in index order (see :func:`verdict_table`).

    Returns
    -------
    DataFrame
        :func:`~mueval.guarantees.intervals.per_user_coverage` (exact
        Clopper-Pearson interval ``low, high``, a description of the observed
        rate) whose ``below`` is the exact test's verdict (:func:`verdict_table`,
        ``<NA>`` without one), with ``expected_covered``, ``p_value`` and
        ``p_adjusted`` beside it.
    """
    # Each test row belongs to one user (its own: for MM, the pooled strategy,
    # that is the row's user; for the per-user strategies it is the target).
    rows = predictions[["strategy", "classifier", "iteration", "userid", "covered"]]
    per_user = per_user_coverage(
        rows, alpha=alpha, confidence=CONFIDENCE, user_col="userid", seed=seed
    )
    verdicts = verdict_table(predictions, splits, alpha=alpha, config=config, classes=classes)
    keys = ["strategy", "classifier", "user"]
    table = per_user.drop(columns=[c for c in _VERDICT_COLUMNS if c in per_user.columns])
    table = table.merge(verdicts[keys + _VERDICT_COLUMNS], on=keys, how="left", validate="1:1")
    table["below"] = table["below"].astype("boolean")
    return table
