"""Exact verdicts "below target" per class and per cohort of users.

The rows of ``conditional_coverage.csv`` get the exact count test of the
per-user verdicts (:mod:`.user_level`), on the cells of those verdicts
(:func:`~mueval.guarantees.run_cells.strategy_parts`), with the pooled
test's law of a sum of users' counts (:mod:`.pooled_level`):

- **A cohort** of users: its covered count is the sum of its users'
  counts, so its p-value is :func:`~mueval.guarantees.pooled_level.pooled_pvalue`
  on the cells of the cohort's users (MM: one shared calibration set, an
  exact Beta-Binomial; UDM: independent users, their convolution; other
  strategies: the comonotone bound, valid under any dependence between users),
  iterations combined as the strategy's per-user verdicts are.
- **A class under class-conditional (Mondrian) calibration**: each class
  has its own threshold, the rank-``k`` score of the class's own calibration
  rows in the cell, so the class's covered count is Beta-Binomial per cell
  (:func:`~mueval.guarantees.run_cells.class_cells`), and its p-value is
  the same pooled test on the cells of that class.
- **A class under any other calibration** has no exact null: one threshold
  serves every class, and split conformal promises ``1 - alpha`` only on
  average over them (a class the model finds hard is covered less, by
  design). Those rows keep ``p_value`` ``nan`` and ``below`` ``<NA>``; their
  Clopper-Pearson interval describes the observed rate and tests nothing.

The p-values of one kind (``by``: class or cohort) are corrected as the
per-user ones: under the run's family ``"run"`` over every row of that kind
in the run, under ``"pair"`` over the rows of each (strategy, classifier);
a row is below target when its adjusted p-value is at most the run's
``user_level``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from mueval.data.users import user_texts
from mueval.guarantees.adjustment import adjust_family
from mueval.guarantees.pooled_level import pooled_pvalue, within_iteration
from mueval.guarantees.run_cells import strategy_parts
from mueval.guarantees.verdict_settings import verdict_settings

__all__ = ["CONDITIONAL_KEYS", "conditional_family", "conditional_pvalues"]

#: The key of a row of ``conditional_coverage.csv``.
CONDITIONAL_KEYS: list[str] = ["strategy", "classifier", "by", "value"]


def conditional_pvalues(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    config: Mapping[str, Any] | None = None,
    classes: Sequence[str] | None = None,
    cohorts: pd.Series | None = None,
) -> pd.DataFrame:
    """The exact p-value of each class and cohort of each (strategy, classifier).

    Parameters
    ----------
    predictions, splits : DataFrame
        As for :func:`~mueval.guarantees.run_verdicts.verdict_table`.
    alpha : float
        The run's miscoverage level.
    config : mapping, optional
        The run's configuration
        (:func:`~mueval.guarantees.verdict_settings.verdict_settings`).
    classes : sequence of str, optional
        Class names in index order (the class cells need them).
    cohorts : Series, optional
        Cohort per user (text), indexed by the user id as text.

    Returns
    -------
    DataFrame
        ``strategy, classifier, by, value, p_value``: one row per class with
        an exact test (class-conditional runs) and per cohort (``nan`` where
        the strategy has no per-user verdict). Classes without a test are
        absent (a left join gives them ``nan``).
    """
    settings = verdict_settings(config)
    rows: list[dict[str, Any]] = []
    for strategy, options, cells, tested in strategy_parts(
        predictions, splits, alpha, settings, classes
    ):
        if not tested:
            if cohorts is not None:
                rows += _untested(cells, cohorts)
            continue
        dependence = within_iteration(strategy)

        def test(
            part: pd.DataFrame, dependence: str = dependence, how: str = options["combine"]
        ) -> float:
            return pooled_pvalue(part, dependence=dependence, combine=how)

        for classifier, part in cells.groupby("classifier", sort=True):
            if "class" in part.columns:
                for value, cell in part.groupby("class", sort=True):
                    rows.append(_row(strategy, classifier, "class", value, test(cell)))
            if cohorts is not None:
                which = user_texts(part["user"]).map(cohorts).to_numpy()
                for value in pd.unique(which):
                    rows.append(
                        _row(strategy, classifier, "cohort", value, test(part[which == value]))
                    )
    return pd.DataFrame(rows, columns=[*CONDITIONAL_KEYS, "p_value"])


def _row(strategy: str, classifier: object, by: str, value: object, p: float) -> dict[str, Any]:
    return {
        "strategy": strategy,
        "classifier": str(classifier),
        "by": by,
        "value": str(value),
        "p_value": p,
    }


def _untested(cells: pd.DataFrame, cohorts: pd.Series) -> list[dict[str, Any]]:
    """The cohorts of a strategy without a verdict, each with a ``nan`` p-value."""
    which = user_texts(cells["user"]).map(cohorts).to_numpy()
    frame = pd.DataFrame({"classifier": cells["classifier"].to_numpy(), "value": which})
    return [
        _row(str(cells["strategy"].iloc[0]), c, "cohort", v, np.nan)
        for c, v in frame.drop_duplicates().itertuples(index=False)
    ]


def conditional_family(table: pd.DataFrame, config: Mapping[str, Any] | None) -> pd.DataFrame:
    """``p_adjusted`` and ``below`` of a coverage-per-class-and-cohort table.

    Parameters
    ----------
    table : DataFrame
        Rows with ``by``, ``strategy``, ``classifier`` and ``p_value`` (``nan``:
        no exact test, left out of every family).
    config : mapping or None
        The run's configuration: ``user_level``, ``user_correction`` and
        ``user_family`` (:func:`~mueval.guarantees.verdict_settings.verdict_settings`).

    Returns
    -------
    DataFrame
        A copy, in the same row order, with ``p_adjusted`` and ``below``
        (``<NA>`` without a p-value): each ``by`` is its own family, over
        the whole run (``"run"``) or per (strategy, classifier) (``"pair"``).

    Examples
    --------
    >>> t = pd.DataFrame({"strategy": "mm", "classifier": ["nb", "nb", "rf"],
    ...     "by": "class", "value": ["a", "b", "a"], "p_value": [0.03, np.nan, 0.04]})
    >>> conditional_family(t, {"user_family": "pair"})["below"].tolist()
    [True, <NA>, True]
    >>> conditional_family(t, {"user_family": "run"})["below"].tolist()
    [False, <NA>, False]
    """
    settings = verdict_settings(config)
    out = table.copy()
    out["p_adjusted"] = np.nan
    out["below"] = pd.Series(pd.NA, index=out.index, dtype="boolean")
    for _, idx in out.groupby("by", sort=False).groups.items():
        part = adjust_family(
            out.loc[idx, ["strategy", "classifier", "p_value"]],
            level=settings["level"],
            correction=settings["correction"],
            family=settings["family"],
        )
        out.loc[idx, "p_adjusted"] = part["p_adjusted"].to_numpy()
        out.loc[idx, "below"] = part["below"].astype("boolean").to_numpy()
    out["below"] = out["below"].astype("boolean")
    return out
