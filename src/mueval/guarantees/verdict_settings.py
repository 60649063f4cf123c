"""The settings of a run's per-user verdicts, read from its configuration, and why a
strategy gets no verdict under them.

``run.json``'s config holds the level, correction, family and combination of
the exact per-user test (:mod:`.user_level`); a folder written before one of
them gets the default it was written with (:data:`USER_LEVEL`,
:data:`USER_CORRECTION`, :data:`USER_FAMILY`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mueval.conformal.condition import parse_condition
from mueval.guarantees.user_level import has_verdict
from mueval.names import STRATEGIES, is_pooled
from mueval.strategies import get_strategy

__all__ = [
    "USER_CORRECTION",
    "USER_FAMILY",
    "USER_LEVEL",
    "no_verdict_reason",
    "verdict_settings",
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
