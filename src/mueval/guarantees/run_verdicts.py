"""A run's per-user verdicts "below target", from its prediction rows and splits.

The exact test of :mod:`.user_level` at the run's ``user_level`` after its
``user_correction`` (``run.json``'s config; 0.05 and Holm for folders written
before them), on one row per (strategy, classifier, user, iteration) with the
calibration size of ``splits.parquet`` and the user's test and covered rows
(:func:`verdict_cells`), or, under class-conditional calibration, one per class
cell (:func:`class_cells`). :func:`user_coverage_table` joins the verdicts to
each user's coverage and its Clopper-Pearson interval, a description of the
observed rate: ``user_coverage.csv``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import pandas as pd

from mueval.conformal.condition import parse_condition
from mueval.conformal.thresholds import min_calibration_size
from mueval.data.frames import frame_column
from mueval.data.users import user_texts
from mueval.errors import DataError
from mueval.guarantees.intervals import per_user_coverage
from mueval.guarantees.pooled_level import pooled_pvalue, within_iteration
from mueval.guarantees.records import CONFIDENCE
from mueval.guarantees.stratified_null import cell_laws
from mueval.guarantees.user_level import (
    adjust_family,
    cell_ranks,
    default_combine,
    has_verdict,
    threshold_rank,
    user_verdicts,
)
from mueval.names import STRATEGIES, is_pooled
from mueval.strategies import get_strategy

__all__ = [
    "POOLED_COLUMNS",
    "USER_CORRECTION",
    "USER_FAMILY",
    "USER_LEVEL",
    "class_cells",
    "no_verdict_reason",
    "pooled_family",
    "pooled_table",
    "strategy_parts",
    "user_coverage_table",
    "verdict_cells",
    "verdict_settings",
    "verdict_table",
]

#: Level and correction of the per-user verdicts of a run whose run.json
#: records none (folders written before them): ``--user-level`` and
#: ``--user-correction``'s defaults.
USER_LEVEL = 0.05
USER_CORRECTION = "holm"
#: The family of a run whose run.json records none: folders written before
#: ``--user-family`` corrected within each strategy and classifier.
USER_FAMILY = "pair"


def verdict_settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings of the per-user verdicts, read from a run's configuration.

    Parameters
    ----------
    config : mapping or None
        ``run.json``'s ``config`` (:meth:`EvalConfig.record
        <mueval.evaluation.records.EvalConfig.record>` with ``condition``);
        keys it lacks take the protocol's defaults, so a folder written before
        the verdicts gets level 0.05 and Holm; one written before
        ``user_family`` gets ``"pair"``, the rule it was written with.

    Returns
    -------
    dict
        ``level``, ``correction``, ``family``, ``combine`` (strategy -> ``convolution`` or
        ``bonferroni``, or None: :func:`~mueval.guarantees.user_level.default_combine`),
        ``rule``, ``score``, ``split``, ``small_cal``, ``condition`` (a
        :class:`~mueval.conformal.condition.Condition`) and ``no_verdict``
        (strategy -> why it has no verdict, for the strategies of the user's that
        ``strategy_records`` describes).

    Examples
    --------
    >>> s = verdict_settings({"alpha": 0.1, "split": "blocked"})
    >>> s["level"], s["correction"], s["rule"], s["split"]
    (0.05, 'holm', 'study', 'blocked')
    """
    config = dict(config or {})
    return {
        "level": float(config.get("user_level", USER_LEVEL)),
        "correction": str(config.get("user_correction", USER_CORRECTION)),
        "family": str(config.get("user_family", USER_FAMILY)),
        "combine": config.get("user_combine"),
        "rule": str(config.get("threshold") or "study"),
        "score": str(config.get("score") or "lac"),
        "split": str(config.get("split") or "random"),
        "small_cal": str(config.get("small_cal") or "error"),
        "condition": parse_condition(
            config.get("condition"), mondrian=bool(config.get("mondrian"))
        ),
        "no_verdict": _recorded_no_verdict(config.get("strategy_records")),
    }


def _recorded_no_verdict(records: object) -> dict[str, str]:
    """Strategy -> why it has no verdict, from run.json's ``strategy_records`` (the
    user's strategies, which the process reading the folder may not have)."""
    if not isinstance(records, Mapping):
        return {}
    return {
        str(code): record["no_verdict"]
        for code, record in records.items()
        # A built-in's record is mueval's own, never the folder's.
        if str(code) not in STRATEGIES
        and isinstance(record, Mapping)
        and isinstance(record.get("no_verdict"), str)
    }


def no_verdict_reason(strategy: str, settings: Mapping[str, Any]) -> str | None:
    """Why a strategy's users get no verdict under ``settings``, or None.

    Where no single rank-k threshold exists, or the calibration count behind
    each test row's threshold is not recorded, no exact null can be written
    down: those users are not flagged (``below`` is ``<NA>``, the conservative
    treatment), and the report says "no verdict".

    Examples
    --------
    >>> no_verdict_reason("uxc", verdict_settings({})).split(":")[0]
    'uxc'
    >>> no_verdict_reason("ucm", verdict_settings({"condition": "class"})).split(" (")[0]
    "class-conditional calibration without each class cell's calibration count"
    >>> settings = {**verdict_settings({"condition": "class"}), "class_cells": True}
    >>> no_verdict_reason("ucm", settings) is None
    True
    >>> no_verdict_reason("ucm", verdict_settings({})) is None
    True
    """
    condition = settings["condition"]
    recorded = settings.get("no_verdict") or {}
    if strategy in recorded:
        return f"{strategy}: {recorded[strategy]}"
    if not has_verdict(strategy):
        return f"{strategy}: {get_strategy(str(strategy).lower()).no_verdict}"
    if settings["rule"] == "mapie" and settings["score"] != "lac":
        return (
            f"MAPIE's own {settings['score']} sets (--threshold mapie): no rank-k threshold "
            "describes them"
        )
    if condition.per_class and not settings.get("class_cells", False):
        return (
            "class-conditional calibration without each class cell's calibration count "
            "(splits.parquet's n_cal_class, written since the exact per-user test): the "
            "per-cell ranks are unknown"
        )
    if condition.regression:
        return (
            f"{condition.text}: each test row's threshold is a conditional quantile "
            "regression's fitted value, no rank-k order statistic"
        )
    if condition.by_cohort and is_pooled(strategy):
        return (
            f"{strategy} under cohort calibration: each test row is calibrated on its own cohort, while "
            "n_cal counts every cohort's calibration rows"
        )
    return None


def _prediction_rows(predictions: pd.DataFrame, **extra: np.ndarray) -> pd.DataFrame:
    """One row per prediction: its task key, user and covered flag, and ``extra`` columns.

    The task's key in splits.parquet is (strategy, classifier, iteration,
    target user), the target user empty for MM.
    """
    if "target_user" in predictions.columns:
        target = frame_column(user_texts(predictions["target_user"]))
    else:
        codes = predictions["strategy"].astype(str).str.lower()
        pooled = codes.isin([c for c in pd.unique(codes) if is_pooled(c)]).to_numpy()
        target = np.where(pooled, "", user_texts(predictions["userid"]).to_numpy())
    return pd.DataFrame(
        {
            "strategy": frame_column(predictions["strategy"]),
            "classifier": frame_column(predictions["classifier"]),
            "iteration": frame_column(predictions["iteration"]),
            "user": frame_column(predictions["userid"]),
            "target": target,
            **extra,
            "covered": predictions["covered"].astype(bool).to_numpy(dtype=np.int64),
        }
    )


def verdict_cells(predictions: pd.DataFrame, splits: pd.DataFrame) -> pd.DataFrame:
    """The input of :func:`~mueval.guarantees.user_level.user_verdicts` for a run.

    Parameters
    ----------
    predictions : DataFrame
        Prediction rows: ``strategy, classifier, iteration, userid, covered``
        and ``target_user`` (without it, every strategy but MM is taken as
        testing each row's own user).
    splits : DataFrame
        ``splits.parquet``: ``strategy, classifier, iteration, user, n_cal``.

    Returns
    -------
    DataFrame
        One row per (strategy, classifier, user, iteration): ``n_cal`` (the
        calibration rows of the task that tested the user: for MM the one
        calibration set of the iteration, shared by every user), ``n_test``
        and ``n_covered`` (the user's test rows and covered ones). ``user``
        holds the predictions' own ids.

    Raises
    ------
    DataError
        A task of the predictions has no calibration size in the splits.
    """
    rows = _prediction_rows(predictions)
    keys = ["strategy", "classifier", "iteration", "target"]
    counts = (
        rows.groupby([*keys, "user"], sort=True, observed=True)["covered"]
        .agg(n_test="size", n_covered="sum")
        .reset_index()
    )
    cal = pd.DataFrame(
        {
            "strategy": frame_column(splits["strategy"]),
            "classifier": frame_column(splits["classifier"]),
            "iteration": frame_column(splits["iteration"]),
            "target": frame_column(user_texts(splits["user"])),
            "n_cal": pd.to_numeric(splits["n_cal"], errors="coerce").to_numpy(),
            **(
                {"pooled_order": frame_column(splits["pooled_order"])}
                if "pooled_order" in splits.columns
                else {}
            ),
        }
    ).drop_duplicates(keys)
    cells = counts.merge(cal, on=keys, how="left")
    missing = cells[cells["n_cal"].isna()]
    if len(missing):
        r = missing.iloc[0]
        msg = (
            f"{r['strategy']} / {r['classifier']} iteration {r['iteration']} user {r['user']}: "
            "prediction rows without a calibration size (n_cal) in the splits, which the "
            "per-user verdict needs"
        )
        raise DataError(msg[:300])
    cells["n_cal"] = cells["n_cal"].astype(np.int64)
    columns = ["strategy", "classifier", "user", "iteration", "n_cal", "n_test", "n_covered"]
    return cells[columns + (["pooled_order"] if "pooled_order" in cells.columns else [])]


def class_cells(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    classes: Sequence[str],
    *,
    alpha: float,
    rule: str,
) -> pd.DataFrame:
    """The Mondrian cells of a class-conditional run, for the exact per-user test.

    Under class-conditional calibration a test row of class ``c`` is covered
    when its score is within class ``c``'s threshold, the ``k``-th smallest of
    the cell's ``n_c`` calibration scores; a user's covered count in one
    iteration is the sum over its classes' cells
    (:func:`~mueval.guarantees.user_level.null_pmf`).

    Parameters
    ----------
    predictions : DataFrame
        As for :func:`verdict_cells`, with ``y_true``.
    splits : DataFrame
        ``splits.parquet`` with ``n_cal_class`` (each class's calibration rows
        in the task's cell, in class order).
    classes : sequence of str
        Class names in index order (``run.json``'s ``classes``).
    alpha : float
        The run's miscoverage level.
    rule : {"study", "mapie"}
        The threshold rule.

    Returns
    -------
    DataFrame
        One row per (strategy, classifier, user, iteration, class) with test
        rows: ``n_cal`` (the cell's calibration rows), ``n_test``,
        ``n_covered`` and ``rank``: the rule's rank in the cell, or
        ``n_cal + 1`` (covered surely) where the task's cohort was below the
        minimum and answered with every class (``--small-cal full-set``), and
        ``class`` (the cell's class name, for the exact test per class of
        :mod:`.conditional_verdicts`). Tasks without ``n_cal_class`` are left out.
    """
    index = {c: i for i, c in enumerate(classes)}
    rows = _prediction_rows(
        predictions, klass=predictions["y_true"].map(index).to_numpy(dtype=np.int64)
    )
    keys = ["strategy", "classifier", "iteration", "target"]
    counts = (
        rows.groupby([*keys, "user", "klass"], sort=True, observed=True)["covered"]
        .agg(n_test="size", n_covered="sum")
        .reset_index()
    )
    tasks = pd.DataFrame(
        {
            "strategy": frame_column(splits["strategy"]),
            "classifier": frame_column(splits["classifier"]),
            "iteration": frame_column(splits["iteration"]),
            "target": frame_column(user_texts(splits["user"])),
            "task_n_cal": pd.to_numeric(splits["n_cal"], errors="coerce").to_numpy(),
            "n_cal_class": frame_column(splits["n_cal_class"]),
        }
    ).drop_duplicates(keys)
    tasks = tasks[[v is not None and not _is_missing(v) for v in tasks["n_cal_class"]]]
    cells = counts.merge(tasks, on=keys, how="inner")
    cells["n_cal"] = [
        int(sizes[k]) for sizes, k in zip(cells["n_cal_class"], cells["klass"], strict=True)
    ]
    minimum = min_calibration_size(alpha)
    full = cells["task_n_cal"].to_numpy() < minimum
    cells["rank"] = [
        n + 1 if surely else threshold_rank(n, alpha, rule)
        for n, surely in zip(cells["n_cal"], full, strict=True)
    ]
    cells["class"] = [str(classes[k]) for k in cells["klass"]]
    columns = ["strategy", "classifier", "user", "iteration", "n_cal", "n_test", "n_covered"]
    return cells[[*columns, "rank", "class"]]


def _is_missing(value: object) -> bool:
    """True for a missing list cell (None or a float NaN)."""
    return isinstance(value, float) and np.isnan(value)


_VERDICT_COLUMNS = ["expected_covered", "p_value", "p_adjusted", "below"]


#: Within :func:`shared_cells`: the :func:`strategy_parts` already made, by the
#: identity of their rows and the value of their settings.
_SHARED_PARTS: ContextVar[dict | None] = ContextVar("mueval_shared_parts", default=None)


@contextmanager
def shared_cells() -> Iterator[None]:
    """Within the block, :func:`strategy_parts` makes the cells of one set of rows once.

    The per-user verdicts, the pooled test and the tests per class and cohort
    each ask for the same cells (:func:`compute_guarantees
    <mueval.guarantees.compute.compute_guarantees>` asks three times); under
    the exact law of a stratified split, each cell's law costs a few
    milliseconds. Inside the block the rows are read, never changed, so the
    cells of the same ``predictions`` and ``splits`` objects (held here, so
    their identities stay theirs) and equal settings are made once; each
    caller gets its own shallow copies.
    """
    token = _SHARED_PARTS.set({})
    try:
        yield
    finally:
        _SHARED_PARTS.reset(token)


def strategy_parts(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    alpha: float,
    settings: Mapping[str, Any],
    classes: Sequence[str] | None,
) -> list[tuple[str, dict[str, Any], pd.DataFrame, bool]]:
    """Per strategy: its verdict options, its cells with their ``rank`` and
    whether it has a test (False: every rank ``nan``).

    See :func:`_made_parts`; inside :func:`shared_cells`, made once per rows.
    """
    shared = _SHARED_PARTS.get()
    if shared is None:
        return _made_parts(predictions, splits, alpha, settings, classes)
    key = (
        id(predictions),
        id(splits),
        float(alpha),
        repr(sorted(settings.items())),
        None if classes is None else tuple(classes),
    )
    if key not in shared:
        shared[key] = (
            predictions,
            splits,
            _made_parts(predictions, splits, alpha, settings, classes),
        )
    parts = shared[key][2]
    return [(s, dict(o), cells.copy(deep=False), t) for s, o, cells, t in parts]


def _made_parts(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    alpha: float,
    settings: Mapping[str, Any],
    classes: Sequence[str] | None,
) -> list[tuple[str, dict[str, Any], pd.DataFrame, bool]]:
    """Per strategy: its verdict options, its cells with their ``rank`` and
    whether it has a test (False: every rank ``nan``).

    The cells are :func:`verdict_cells` with their ranks, or, under
    class-conditional calibration, :func:`class_cells` (with ``class``); the
    per-user verdicts, the pooled test and the tests per class and cohort
    (:mod:`.conditional_verdicts`) all take them from here.
    """
    cells = verdict_cells(predictions, splits)
    condition = settings["condition"]
    by_class = None
    if condition.per_class and classes is not None and "n_cal_class" in splits.columns:
        by_class = class_cells(predictions, splits, classes, alpha=alpha, rule=settings["rule"])
    recorded = settings["combine"] or {}
    parts = []
    for strategy, part in cells.groupby("strategy", sort=True):
        strategy = str(strategy)
        options = {
            "alpha": alpha,
            "level": settings["level"],
            "correction": settings["correction"],
            "combine": recorded.get(strategy) or default_combine(strategy, settings["split"]),
            "split": settings["split"],
        }
        mondrian = None if by_class is None else by_class[by_class["strategy"] == strategy]
        # Class cells count only when every test row of the strategy is in one.
        complete = mondrian is not None and mondrian["n_test"].sum() == part["n_test"].sum()
        reason = no_verdict_reason(strategy, {**settings, "class_cells": complete})
        # A calibration set the --small-cal policy refuses leaves no test rows
        # (class cells without cohorts have no minimum).
        refused = (
            settings["small_cal"] != "full-set"
            and not (condition.per_class and not condition.by_cohort)
            and bool((part["n_cal"] < min_calibration_size(alpha)).any())
        )
        if refused or reason is not None:
            parts.append((strategy, options, part.assign(rank=np.nan), False))
        elif condition.per_class:
            parts.append((strategy, options, mondrian, True))
        else:
            part = _with_stratified_laws(
                part, alpha, settings, None if classes is None else len(classes)
            )
            ranks = cell_ranks(
                part, alpha=alpha, rule=settings["rule"], small_cal=settings["small_cal"]
            )
            parts.append((strategy, options, part.assign(rank=ranks), True))
    return parts


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
        As for :func:`verdict_cells` (and :func:`class_cells` under
        class-conditional calibration).
    alpha : float
        The run's miscoverage level.
    config : mapping, optional
        The run's configuration (:func:`verdict_settings`).
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
        users of a strategy with a :func:`no_verdict_reason` have ``nan``
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


def _with_stratified_laws(
    part: pd.DataFrame, alpha: float, settings: Mapping[str, Any], n_classes: int | None
) -> pd.DataFrame:
    """The cells with ``null_pmf``, the exact law of a class-stratified split
    (:mod:`~mueval.guarantees.stratified_null`) where the task recorded its
    ``pooled_order``; without one, the cells as they are (the Beta-Binomial)."""
    if "pooled_order" not in part.columns:
        return part
    orders = part["pooled_order"]
    if not any(v is not None and not _is_missing(v) for v in orders):
        return part.drop(columns="pooled_order")
    ranks = [threshold_rank(int(n), alpha, settings["rule"]) for n in part["n_cal"]]
    laws = cell_laws(part, ranks, n_classes)
    return part.drop(columns="pooled_order").assign(null_pmf=laws)


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
        As for :func:`verdict_cells`.
    alpha : float
        The run's miscoverage level.
    config : mapping, optional
        The run's configuration (:func:`verdict_settings`).
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
