"""Per-user guarantees of a run, computed from its prediction rows.

Each user's verdict "below target" (:mod:`.run_verdicts`, the exact test of
:mod:`.user_level` at the run's level after its correction) beside its coverage
with an exact Clopper-Pearson interval, a description of the observed rate, and
their summary (:mod:`.intervals`), coverage per class and per cohort of users
(:mod:`.conditional_coverage`, each with its exact test, :mod:`.conditional_verdicts`), the per-user validity test (:mod:`.validity`) and the
warnings they drive (:mod:`.run_warnings`). A run folder stores them
(:mod:`mueval.runfolder.guarantees` reads them back).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

from mueval.conformal.condition import Condition
from mueval.data.frames import frame_column
from mueval.data.users import user_texts
from mueval.guarantees.adjustment import adjust_family
from mueval.guarantees.conditional_coverage import conditional_coverage
from mueval.guarantees.conditional_verdicts import (
    CONDITIONAL_KEYS,
    conditional_family,
    conditional_pvalues,
)
from mueval.guarantees.intervals import coverage_summary
from mueval.guarantees.records import (
    CONDITIONAL_COVERAGE_COLUMNS,
    CONDITIONAL_VERDICT_COLUMNS,
    CONFIDENCE,
    USER_VALIDITY_COLUMNS,
    Guarantees,
)
from mueval.guarantees.run_cells import shared_cells
from mueval.guarantees.run_verdicts import pooled_family, pooled_table, user_coverage_table
from mueval.guarantees.run_warnings import collect_warnings
from mueval.guarantees.validity import user_validity
from mueval.guarantees.verdict_settings import verdict_settings
from mueval.metrics.set_sizes import set_statistics
from mueval.names import is_pooled

__all__ = [
    "compute_guarantees",
    "compute_guarantees_by_block",
    "conditional_tables",
    "summarise_guarantees",
    "true_pvalues",
    "validity_method",
    "validity_table",
]


def validity_method(strategy: str, condition: Condition) -> str:
    """The validity test a strategy's p-values allow (:mod:`mueval.guarantees.validity`).

    ``"rank"`` (exact) needs each user's p-values of one iteration to come
    from one calibration set whose size ``n_cal`` splits.parquet records. Per
    class calibration gives each class its own set, and MM under cohorts gives
    each cohort its own while ``n_cal`` counts them all: ``"uniform"`` there.
    """
    if condition.per_class or (condition.by_cohort and is_pooled(strategy)):
        return "uniform"
    return "rank"


def true_pvalues(predictions: pd.DataFrame, classes: Sequence[str]) -> np.ndarray:
    """The conformal p-value of each row's true class, shape (n,).

    A ``p_true`` column, where a reader already took it from the rows'
    ``p_values`` (:func:`mueval.api.evaluate` does, row group by row group), is
    that p-value.
    """
    if "p_true" in predictions:
        return predictions["p_true"].to_numpy(dtype=float)
    if not len(predictions):
        return np.zeros(0)
    index = {c: i for i, c in enumerate(classes)}
    y = predictions["y_true"].map(index).to_numpy(dtype=np.int64)
    p = np.concatenate(predictions["p_values"].to_numpy()).reshape(len(predictions), -1)
    return p[np.arange(len(y)), y]


def validity_table(
    predictions: pd.DataFrame, splits: pd.DataFrame, classes: Sequence[str], condition: Condition
) -> pd.DataFrame:
    """Per-user validity tests of a run (:func:`mueval.guarantees.validity.user_validity`).

    Rows without p-values (MAPIE's own aps, raps and top_k sets) are left out.
    """
    rows = pd.DataFrame(
        {
            "strategy": frame_column(predictions["strategy"]),
            "classifier": frame_column(predictions["classifier"]),
            "iteration": frame_column(predictions["iteration"]),
            "user": frame_column(predictions["userid"]),
            "p_true": true_pvalues(predictions, classes),
            "target": frame_column(user_texts(predictions["target_user"])),
        }
    )
    rows = rows[rows["p_true"].notna()]
    cal = pd.DataFrame(
        {
            "strategy": frame_column(splits["strategy"]),
            "classifier": frame_column(splits["classifier"]),
            "iteration": frame_column(splits["iteration"]),
            "target": frame_column(user_texts(splits["user"])),
            "n_cal": frame_column(splits["n_cal"]),
        }
    )
    rows = rows.merge(cal, on=["strategy", "classifier", "iteration", "target"], how="left")
    parts = []
    for method in ("rank", "uniform"):
        wanted = [validity_method(s, condition) == method for s in rows["strategy"]]
        part = rows[np.asarray(wanted, dtype=bool)]
        if len(part):
            parts.append(user_validity(part, method=method))
    if not parts:
        return pd.DataFrame(columns=list(USER_VALIDITY_COLUMNS))
    return pd.concat(parts, ignore_index=True)


def conditional_tables(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    classes: Sequence[str],
    cohorts: pd.Series | None,
    config: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Coverage per class, then per cohort of users when the run had cohorts, each
    row with its exact test (:mod:`.conditional_verdicts`): the columns of
    ``conditional_coverage.csv``."""
    rows = predictions[["strategy", "classifier", "userid", "y_true", "covered"]]
    parts = [conditional_coverage(rows, "class", confidence=CONFIDENCE, order=classes)]
    if cohorts is not None:
        parts.append(
            conditional_coverage(rows, "cohort", confidence=CONFIDENCE, user_cohorts=cohorts)
        )
    table = pd.concat(parts, ignore_index=True)
    tests = conditional_pvalues(
        predictions, splits, alpha=alpha, config=config, classes=classes, cohorts=cohorts
    )
    keys = list(CONDITIONAL_KEYS)
    table = table.merge(tests, on=keys, how="left", validate="1:1")
    columns = [*CONDITIONAL_COVERAGE_COLUMNS, *CONDITIONAL_VERDICT_COLUMNS]
    return conditional_family(table, config)[columns]


def _cohorts_series(user_cohorts: pd.DataFrame | None) -> pd.Series | None:
    """``user, cohort`` rows as a Series of cohorts indexed by the user as text."""
    if user_cohorts is None:
        return None
    keys = user_texts(user_cohorts["user"])
    return pd.Series(user_cohorts["cohort"].astype(str).to_numpy(), index=keys.to_numpy())


def _calibration(splits: pd.DataFrame) -> pd.DataFrame | None:
    """Calibration sizes per task, for the ``calibration-too-small`` rule."""
    if "n_cal" not in splits.columns:
        return None
    columns = ["strategy", "classifier", "iteration", "user", "n_cal"]
    cal = splits[columns + (["n_cal_cell"] if "n_cal_cell" in splits.columns else [])]
    # Strategies without a calibration set leave n_cal missing; the rule skips them.
    return cal.reset_index(drop=True)


def compute_guarantees(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    n_classes: int,
    seed: int = 0,
    summarise: bool = True,
    classes: Sequence[str] | None = None,
    condition: Condition | None = None,
    user_cohorts: pd.DataFrame | None = None,
    config: Mapping[str, Any] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> Guarantees:
    """Per-user verdicts and coverage intervals, their summary and the warnings of a run.

    Parameters
    ----------
    predictions : DataFrame
        A run folder's prediction rows (``strategy, classifier, iteration,
        userid, covered, set_size``).
    splits : DataFrame
        A run folder's splits (``n_cal`` per task).
    alpha : float
        The run's miscoverage level.
    n_classes : int
        Number of classes (a set this large holds every class).
    seed : int, default 0
        Seed of the bootstrap of the mean over users.
    summarise : bool, default True
        Also compute the summary, the validity tests and the warnings (a
        reader that holds them needs only the counts, to check the stored
        ones).
    classes : sequence of str, optional
        Class names in index order; with them, coverage per class (and per
        cohort) and the validity tests are computed too.
    condition : Condition, optional
        The run's conditioning (default: none); it decides the validity test.
    user_cohorts : DataFrame, optional
        ``user, cohort``: each user's cohort, for coverage per cohort.
    config : mapping, optional
        The run's configuration (``run.json``'s ``config``): the verdicts'
        level, correction and combination, the threshold rule, the split and
        the small-calibration policy
        (:func:`~mueval.guarantees.verdict_settings.verdict_settings`).
    on_step : callable, optional
        Called with the name of each step as it starts ("verdicts",
        "coverage per class", "validity tests", "warnings"), for a progress bar.

    Returns
    -------
    Guarantees
    """
    with shared_cells():
        return _computed(
            predictions,
            splits,
            alpha=alpha,
            n_classes=n_classes,
            seed=seed,
            summarise=summarise,
            classes=classes,
            condition=condition,
            user_cohorts=user_cohorts,
            config=config,
            on_step=on_step,
        )


def _computed(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    n_classes: int,
    seed: int,
    summarise: bool,
    classes: Sequence[str] | None,
    condition: Condition | None,
    user_cohorts: pd.DataFrame | None,
    config: Mapping[str, Any] | None,
    on_step: Callable[[str], None] | None,
) -> Guarantees:
    """:func:`compute_guarantees`, inside its :func:`shared_cells` block."""
    step = on_step or _quiet
    step("verdicts")
    per_user = user_coverage_table(
        predictions, splits, alpha=alpha, config=config, seed=seed, classes=classes
    )
    conditional = None
    if classes is not None:
        step("coverage per class")
        conditional = conditional_tables(
            predictions,
            splits,
            alpha=alpha,
            classes=classes,
            cohorts=_cohorts_series(user_cohorts),
            config=config,
        )
    if not summarise:
        return Guarantees(per_user, pd.DataFrame(), [], conditional, None, user_cohorts)
    validity = None
    if classes is not None:
        step("validity tests")
        validity = validity_table(predictions, splits, classes, condition or Condition())
    step("warnings")
    sets = set_statistics(predictions, n_classes=n_classes)
    pooled = pooled_table(predictions, splits, alpha=alpha, config=config, classes=classes)
    return _summarised(
        per_user,
        conditional,
        validity,
        sets,
        pooled,
        splits,
        (alpha, n_classes, seed),
        config,
        user_cohorts,
    )


def summarise_guarantees(
    per_user: pd.DataFrame,
    validity: pd.DataFrame | None,
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    n_classes: int,
    seed: int = 0,
    classes: Sequence[str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The summary over users and the warnings of a run, from its per-user table and
    validity tests, as :func:`compute_guarantees` gives them.

    A reader holding a run's stored summary and warnings checks them with these:
    the per-user verdicts and the validity tests it has checked already, the set
    sizes and the pooled tests computed here from the prediction rows.

    Returns
    -------
    summary : DataFrame
        ``coverage_summary.csv``'s table.
    warnings : list of dict
        ``run.json``'s ``warnings``.
    """
    with shared_cells():
        sets = set_statistics(predictions, n_classes=n_classes)
        pooled = pooled_table(predictions, splits, alpha=alpha, config=config, classes=classes)
        found = _summarised(
            per_user, None, validity, sets, pooled, splits, (alpha, n_classes, seed), config, None
        )
    return found.coverage_summary, found.warnings


def _quiet(step: str) -> None:
    """``on_step`` when nobody watches."""


def _summarised(
    per_user: pd.DataFrame,
    conditional: pd.DataFrame | None,
    validity: pd.DataFrame | None,
    sets: pd.DataFrame,
    pooled: pd.DataFrame,
    splits: pd.DataFrame,
    numbers: tuple[float, int, int],
    config: Mapping[str, Any] | None,
    user_cohorts: pd.DataFrame | None,
) -> Guarantees:
    """The summary over users and the warnings, from the per-user tables
    (``numbers``: alpha, the number of classes and the bootstrap's seed)."""
    alpha, n_classes, seed = numbers
    summary = coverage_summary(per_user, alpha=alpha, confidence=CONFIDENCE, seed=seed)
    settings = verdict_settings(config)
    found = collect_warnings(
        summary,
        sets,
        alpha=alpha,
        n_classes=n_classes,
        calibration=_calibration(splits),
        validity=validity,
        user_level=settings["level"],
        user_correction=settings["correction"],
        user_family=settings["family"],
        pooled=pooled,
    )
    return Guarantees(
        per_user, summary, [asdict(w) for w in found], conditional, validity, user_cohorts
    )


def _block_tables(
    rows: pd.DataFrame,
    splits: pd.DataFrame,
    alpha: float,
    n_classes: int,
    classes: Sequence[str],
    seed: int,
    condition: Condition,
    cohorts: pd.Series | None,
    config: Mapping[str, Any] | None,
) -> tuple:
    """One block's tables for :func:`compute_guarantees_by_block`: per user, per
    class and cohort, the validity tests, the set statistics and the pooled test."""
    return (
        user_coverage_table(rows, splits, alpha=alpha, config=config, seed=seed, classes=classes),
        conditional_tables(
            rows, splits, alpha=alpha, classes=classes, cohorts=cohorts, config=config
        ),
        validity_table(rows, splits, classes, condition),
        set_statistics(rows, n_classes=n_classes),
        pooled_table(rows, splits, alpha=alpha, config=config, classes=classes),
    )


def compute_guarantees_by_block(
    read_block: Callable[[str, str], pd.DataFrame],
    strategies: Sequence[str],
    classifiers: Sequence[str],
    splits: pd.DataFrame,
    *,
    alpha: float,
    n_classes: int,
    classes: Sequence[str],
    seed: int = 0,
    condition: Condition | None = None,
    user_cohorts: pd.DataFrame | None = None,
    config: Mapping[str, Any] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> Guarantees:
    """:func:`compute_guarantees` reading one (strategy, classifier)'s rows at a time.

    Every per-row computation of the guarantees (the verdicts and their
    correction, the intervals, the validity tests and their adjustment,
    coverage per class and cohort, the set statistics) stays within one
    strategy and classifier; only the summary over users, the correction
    over the run's family (``user_family`` ``"run"``: every user's verdict
    and every pair's pooled test corrected together) and the warnings take
    several, and they read the per-user and per-pair tables. So the rows are read
    block by block, and the main process holds one block's rows (its share
    of the run's) instead of all of them. The tables are those of
    :func:`compute_guarantees` on all the rows, in its order.

    Parameters
    ----------
    read_block : callable
        ``read_block(strategy, classifier)``: that block's prediction rows, as
        :func:`compute_guarantees` takes them (a ``p_true`` column will do
        for ``p_values``).
    strategies, classifiers : sequence of str
        Every strategy and classifier of the rows, each in the order of its
        first row (coverage per class and cohort keeps that order).
    splits, alpha, n_classes, classes, seed, condition, user_cohorts, config
        As for :func:`compute_guarantees`.
    on_step : callable, optional
        Called with ``"strategy/classifier"`` as each block starts, then with
        ``"warnings"``, for a progress bar.

    Returns
    -------
    Guarantees
    """
    cohorts = _cohorts_series(user_cohorts)
    condition = condition or Condition()
    step = on_step or _quiet
    parts: dict[tuple[str, str], tuple] = {}
    for strategy in strategies:
        for classifier in classifiers:
            step(f"{strategy}/{classifier}")
            rows = read_block(strategy, classifier)
            if not len(rows):
                continue
            with shared_cells():
                parts[strategy, classifier] = _block_tables(
                    rows, splits, alpha, n_classes, classes, seed, condition, cohorts, config
                )
            del rows
    if not parts:
        message = (
            "compute_guarantees_by_block needs prediction rows; give none to compute_guarantees"
        )
        raise ValueError(message)
    # The whole-frame functions sort by strategy and classifier as text ...
    by_text = sorted(parts)
    # ... coverage per class and cohort by their first rows ...
    by_rows = sorted(parts, key=lambda k: (strategies.index(k[0]), classifiers.index(k[1])))
    # ... and the validity tests give the exact ("rank") ones first.
    methods = ("rank", "uniform")
    by_method = sorted(parts, key=lambda k: (methods.index(validity_method(k[0], condition)), k))
    per_user = pd.concat([parts[k][0] for k in by_text], ignore_index=True)
    settings = verdict_settings(config)
    if settings["family"] == "run":
        # One family over the whole run: the blocks' verdicts are corrected again,
        # all users together, as compute_guarantees does on all the rows.
        per_user = adjust_family(
            per_user, level=settings["level"], correction=settings["correction"], family="run"
        ).drop(columns="family")
        per_user["below"] = per_user["below"].astype("boolean")
    pooled = pooled_family(pd.concat([parts[k][4] for k in by_text], ignore_index=True), settings)
    conditional = pd.concat(
        [
            table[table["by"] == by]
            for by in ("class", "cohort")
            for table in (parts[k][1] for k in by_rows)
        ],
        ignore_index=True,
    )
    # Under the family "run" the classes (cohorts) of every block form one family.
    conditional = conditional_family(conditional, config)
    tests = [parts[k][2] for k in by_method if len(parts[k][2])]
    validity = (
        pd.concat(tests, ignore_index=True)
        if tests
        else pd.DataFrame(columns=list(USER_VALIDITY_COLUMNS))
    )
    sets = pd.concat([parts[k][3] for k in by_text], ignore_index=True)
    step("warnings")
    return _summarised(
        per_user,
        conditional,
        validity,
        sets,
        pooled,
        splits,
        (alpha, n_classes, seed),
        config,
        user_cohorts,
    )
