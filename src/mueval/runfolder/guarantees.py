"""Read a run folder's per-user guarantees back, checked against its predictions.

The guarantees (:mod:`mueval.guarantees`) are written into the run folder
(``user_coverage.csv``, ``coverage_summary.csv``, ``conditional_coverage.csv``,
``user_validity.csv``, ``run.json``'s ``warnings``) and recomputed on load for
folders written before these files existed. The per-user verdicts are
recomputed on every load and must equal the stored ones; a folder written
before them (no ``user_level`` in its config) gets them, its summary and its
warnings recomputed at the defaults, 0.05 after Holm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from mueval.conformal.condition import Condition, parse_condition
from mueval.data.users import user_text
from mueval.files import restore_formulas
from mueval.guarantees.compute import (
    compute_guarantees,
    summarise_guarantees,
    true_pvalues,
    validity_table,
)
from mueval.guarantees.records import (
    CONDITIONAL_COVERAGE_COLUMNS,
    CONDITIONAL_VERDICT_COLUMNS,
    COVERAGE_SUMMARY_COLUMNS,
    USER_COVERAGE_COLUMNS,
    USER_VALIDITY_COLUMNS,
    USER_VERDICT_COLUMNS,
    Guarantees,
)
from mueval.guarantees.run_cells import shared_cells
from mueval.guarantees.run_warnings import SEVERITIES
from mueval.runfolder.check_guarantees import (
    check_conditional_coverage,
    check_coverage_summary,
    check_run_warnings,
    check_user_cohorts,
    check_user_validity,
    check_user_verdicts,
)
from mueval.runfolder.format import (
    CONDITIONAL_COVERAGE_FILE,
    COVERAGE_SUMMARY_FILE,
    USER_COHORTS_COLUMNS,
    USER_COHORTS_FILE,
    USER_COVERAGE_FILE,
    USER_VALIDITY_FILE,
    WARNING_KEYS,
)
from mueval.runfolder.records import RunFolderError, open_run_file

__all__ = ["load_guarantees"]


def _restore_users(column: pd.Series, users: pd.Series, where: Path) -> pd.Series:
    """Map a CSV's user ids (read as text) back to the predictions' own values.

    A CSV loses the type of an id (``"07"`` and ``7``): the predictions are the
    reference, so each id is looked up in them by its text (the writer's
    formula-safe prefix is already undone).
    """
    known = {user_text(u): u for u in pd.unique(users)}

    def back(text: object) -> object:
        key = str(text)
        if key in known:
            return known[key]
        msg = f"{where}: user {key!r} is not a user of predictions.parquet"
        raise RunFolderError(msg[:300])

    return column.map(back)


def _read_csv(
    path: Path,
    columns: tuple[str, ...],
    users: pd.Series,
    user_cols: list[str],
    text_cols: tuple[str, ...] = (),
) -> pd.DataFrame:
    text = dict.fromkeys([*user_cols, *text_cols], str)
    try:
        with open_run_file(path) as handle:
            frame = restore_formulas(pd.read_csv(handle, encoding="utf-8", dtype=text))
    except (OSError, ValueError) as exc:
        found = " ".join(str(exc).split())[:200] or type(exc).__name__
        msg = f"{path}: expected a CSV file written by `mueval evaluate`, found: {found}"
        raise RunFolderError(msg) from exc
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        msg = f"{path}: missing columns {missing}; found {list(frame.columns)}"
        raise RunFolderError(msg[:600])
    for col in user_cols:
        frame[col] = _restore_users(frame[col], users, path)
    return frame


def _check_counts(path: Path, stored: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """The stored per-user counts are those of the predictions."""
    keys = ["strategy", "classifier", "user"]
    merged = fresh[[*keys, "n", "n_covered"]].merge(
        stored[[*keys, "n", "n_covered"]], on=keys, how="outer", suffixes=("", "_file")
    )
    bad = merged[
        (merged["n"] != merged["n_file"]) | (merged["n_covered"] != merged["n_covered_file"])
    ]
    if len(bad):
        r = bad.iloc[0]
        msg = (
            f"{path}: {r['strategy']} / {r['classifier']} user {r['user']} has "
            f"n={r['n_file']}, n_covered={r['n_covered_file']}; predictions.parquet "
            f"gives n={r['n']}, n_covered={r['n_covered']}"
        )
        raise RunFolderError(msg[:600])


def _check_warnings(path: Path, warnings: object) -> list[dict[str, Any]]:
    # The severity is one of the words the terminal and the report print.
    ok = isinstance(warnings, list) and all(
        isinstance(w, dict)
        and all(isinstance(w.get(k), str) for k in WARNING_KEYS)
        and w["severity"] in SEVERITIES
        for w in warnings
    )
    if not ok:
        msg = (
            f"{path}: expected 'warnings' as a list of objects with text fields "
            f"{', '.join(WARNING_KEYS)} (severity one of {', '.join(SEVERITIES)}), "
            f"found {warnings!r}"
        )
        raise RunFolderError(msg[:300])
    checked = cast(list[dict[str, Any]], warnings)
    return [{k: w[k] for k in WARNING_KEYS} for w in checked]


def _stored_cohorts(root: Path, users: pd.Series) -> pd.DataFrame | None:
    """``user_cohorts.csv``: every user of the predictions, one cohort each."""
    if not (root / USER_COHORTS_FILE).exists():
        return None
    stored = _read_csv(root / USER_COHORTS_FILE, USER_COHORTS_COLUMNS, users, ["user"], ("cohort",))
    check_user_cohorts(root / USER_COHORTS_FILE, stored, users)
    return stored


def _condition(root: Path, run: dict) -> Condition:
    config = run["config"]
    try:
        return parse_condition(config.get("condition"), mondrian=bool(config.get("mondrian")))
    except ValueError as exc:
        msg = f"{root / 'run.json'}: config.condition: {exc}"
        raise RunFolderError(msg[:300]) from exc


def _with_stored_extras(
    root: Path, fresh: Guarantees, predictions: pd.DataFrame, splits: pd.DataFrame, run: dict
) -> Guarantees:
    """Coverage per class and cohort, and the validity tests: the stored files,
    checked against the predictions, or computed when the folder predates them."""
    users = predictions["userid"]
    if (root / CONDITIONAL_COVERAGE_FILE).exists():
        # ``below`` and the test's columns are left out of a run with no test
        # per class or cohort (run_file_frame's optional columns): no verdict.
        stored = _read_csv(
            root / CONDITIONAL_COVERAGE_FILE,
            tuple(c for c in CONDITIONAL_COVERAGE_COLUMNS if c != "below"),
            users,
            [],
            ("by", "value"),
        )
        if "below" not in stored.columns:
            stored["below"] = pd.array([pd.NA] * len(stored), dtype="boolean")
        # compute_guarantees always computes the coverage per class.
        computed = cast(pd.DataFrame, fresh.conditional_coverage)
        check_conditional_coverage(root / CONDITIONAL_COVERAGE_FILE, stored, computed)
        # A folder written before the exact test per class and cohort holds the
        # interval rule in ``below``: its counts are checked, its table recomputed.
        if all(c in stored.columns for c in CONDITIONAL_VERDICT_COLUMNS):
            stored["below"] = _as_verdict(stored["below"])
            fresh.conditional_coverage = stored
    if (root / USER_VALIDITY_FILE).exists():
        stored = _read_csv(root / USER_VALIDITY_FILE, USER_VALIDITY_COLUMNS, users, ["user"])
        rows = predictions[~np.isnan(true_pvalues(predictions, run["classes"]))]
        check_user_validity(root / USER_VALIDITY_FILE, stored, rows)
        fresh.user_validity = stored
    elif fresh.user_validity is None:
        fresh.user_validity = validity_table(
            predictions, splits, run["classes"], _condition(root, run)
        )
    return fresh


def load_guarantees(
    root: Path, run: dict, predictions: pd.DataFrame, splits: pd.DataFrame
) -> Guarantees:
    """The guarantees a run folder holds, or recomputed when it predates them.

    See :func:`_load_guarantees`; the cells of the exact tests are made once for
    the verdicts, the pooled tests and the warnings (:func:`shared_cells`).
    """
    with shared_cells():
        return _load_guarantees(root, run, predictions, splits)


def _load_guarantees(
    root: Path, run: dict, predictions: pd.DataFrame, splits: pd.DataFrame
) -> Guarantees:
    """The guarantees a run folder holds, or recomputed when it predates them.

    Parameters
    ----------
    root : Path
        The run folder.
    run : dict
        Its parsed ``run.json``.
    predictions, splits : DataFrame
        Its prediction rows and splits.

    Returns
    -------
    Guarantees

    Raises
    ------
    RunFolderError
        A file is malformed, names a user the predictions lack, or its counts
        contradict the predictions; ``warnings`` is not a list of warnings.
    """
    alpha = float(run["config"]["alpha"])
    # A folder written before the exact per-user test holds interval flags in
    # its files and warnings: everything per user is recomputed from the rows.
    verdicts = "user_level" in run["config"]
    have = (
        verdicts
        and (root / USER_COVERAGE_FILE).exists()
        and (root / COVERAGE_SUMMARY_FILE).exists()
    )
    user_cohorts = _stored_cohorts(root, predictions["userid"])
    try:
        fresh = compute_guarantees(
            predictions,
            splits,
            alpha=alpha,
            n_classes=len(run["classes"]),
            summarise=not (have and "warnings" in run),
            classes=run["classes"],
            condition=_condition(root, run),
            user_cohorts=user_cohorts,
            config=run["config"],
        )
    except ValueError as exc:
        if isinstance(exc, RunFolderError):
            raise
        msg = f"{root}: the per-user verdicts cannot be computed from this run: {exc}"
        raise RunFolderError(msg[:600]) from exc
    if have:
        users = predictions["userid"]
        stored = _read_csv(
            root / USER_COVERAGE_FILE,
            USER_COVERAGE_COLUMNS + USER_VERDICT_COLUMNS,
            users,
            ["user"],
        )
        _check_counts(root / USER_COVERAGE_FILE, stored, fresh.user_coverage)
        check_user_verdicts(root / USER_COVERAGE_FILE, stored, fresh.user_coverage)
        computed_users = fresh.user_coverage
        stored["below"] = _as_verdict(stored["below"])
        summary = _read_csv(
            root / COVERAGE_SUMMARY_FILE, COVERAGE_SUMMARY_COLUMNS, users, ["worst_user"]
        )
        fresh = Guarantees(
            stored,
            summary,
            fresh.warnings,
            fresh.conditional_coverage,
            fresh.user_validity,
            user_cohorts,
        )
    fresh = _with_stored_extras(root, fresh, predictions, splits, run)
    if "warnings" in run and verdicts:
        fresh.warnings = _check_warnings(root / "run.json", run["warnings"])
    if have and "warnings" in run:
        # What the report and compare show of the run as a whole: recomputed from the
        # checked verdicts and validity tests, and held against the stored word.
        summary, warnings = summarise_guarantees(
            computed_users,
            fresh.user_validity,
            predictions,
            splits,
            alpha=alpha,
            n_classes=len(run["classes"]),
            classes=run["classes"],
            config=run["config"],
        )
        check_coverage_summary(root / COVERAGE_SUMMARY_FILE, fresh.coverage_summary, summary)
        check_run_warnings(root / "run.json", fresh.warnings, warnings)
    return fresh


def _as_verdict(column: pd.Series) -> pd.Series:
    """A CSV's ``below`` (``True``, ``False`` or empty for no verdict) as a boolean column."""
    text = column.astype(str).str.strip().str.lower()
    values = text.map({"true": True, "false": False, "1": True, "0": False})
    return values.astype("boolean")
