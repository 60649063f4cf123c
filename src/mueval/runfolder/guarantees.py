"""Per-user guarantees of a run: coverage intervals, their summary and the warnings.

Computed from the prediction rows when a run is evaluated, written into the run
folder (``user_coverage.csv``, ``coverage_summary.csv``, ``run.json``'s
``warnings``), and recomputed on load for folders written before these files
existed. The intervals are exact Clopper-Pearson intervals on the rows pooled
over iterations (see :mod:`mueval.guarantees.intervals` for why they are narrow).

Also here: coverage per class and per group of users
(:func:`mueval.data.groups.group_coverage`, ``group_coverage.csv``) and the per-user
validity test (:func:`mueval.guarantees.validity.user_validity`, ``user_validity.csv``),
whose flagged users feed the ``users-not-exchangeable`` warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mueval.data.groups import Condition, group_coverage, parse_condition
from mueval.guarantees.intervals import coverage_summary, per_user_coverage
from mueval.guarantees.run_warnings import collect_warnings, set_statistics
from mueval.guarantees.validity import user_validity
from mueval.runfolder.format import (
    COVERAGE_SUMMARY_COLUMNS,
    COVERAGE_SUMMARY_FILE,
    GROUP_COVERAGE_COLUMNS,
    GROUP_COVERAGE_FILE,
    USER_COVERAGE_COLUMNS,
    USER_COVERAGE_FILE,
    USER_GROUPS_COLUMNS,
    USER_GROUPS_FILE,
    USER_VALIDITY_COLUMNS,
    USER_VALIDITY_FILE,
    WARNING_KEYS,
)
from mueval.runfolder.read import RunFolderError, _open

__all__ = ["Guarantees", "compute_guarantees", "load_guarantees"]

#: Confidence of every interval written into a run folder.
CONFIDENCE = 0.95


@dataclass
class Guarantees:
    """The per-user guarantees of one run.

    Attributes
    ----------
    user_coverage : DataFrame
        :func:`~mueval.guarantees.intervals.per_user_coverage` output (exact).
    coverage_summary : DataFrame
        :func:`~mueval.guarantees.intervals.coverage_summary` output.
    warnings : list of dict
        :class:`~mueval.guarantees.run_warnings.RunWarning` as dicts (``strategy,
        classifier, kind, message, severity``), the form ``run.json`` holds.
    group_coverage : DataFrame or None
        Coverage per class (``by == "class"``) and per group of users
        (``by == "group"``) with Clopper-Pearson intervals.
    user_validity : DataFrame or None
        The one-sided KS test per user, Benjamini-Hochberg adjusted.
    user_groups : DataFrame or None
        ``user, group``: each user's group, when the run had groups.
    """

    user_coverage: pd.DataFrame
    coverage_summary: pd.DataFrame
    warnings: list[dict[str, Any]] = field(default_factory=list)
    group_coverage: pd.DataFrame | None = None
    user_validity: pd.DataFrame | None = None
    user_groups: pd.DataFrame | None = None


def validity_method(strategy: str, condition: Condition) -> str:
    """The validity test a strategy's p-values allow (:mod:`mueval.guarantees.validity`).

    ``"rank"`` (exact) needs each user's p-values of one iteration to come
    from one calibration set whose size ``n_cal`` splits.parquet records. Per
    class calibration gives each class its own set, and MM under groups gives
    each group its own while ``n_cal`` counts them all: ``"uniform"`` there.
    """
    if condition.per_class or (condition.by_group and strategy == "mm"):
        return "uniform"
    return "rank"


def _key(values: pd.Series) -> pd.Series:
    """User ids as text, empty for MM's missing target user, so both files merge."""
    from mueval.runfolder.consistency import _user_key

    return _user_key(values)


def true_pvalues(predictions: pd.DataFrame, classes: Sequence[str]) -> np.ndarray:
    """The conformal p-value of each row's true class, shape (n,)."""
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
            "strategy": predictions["strategy"].to_numpy(),
            "classifier": predictions["classifier"].to_numpy(),
            "iteration": predictions["iteration"].to_numpy(),
            "user": predictions["userid"].to_numpy(),
            "p_true": true_pvalues(predictions, classes),
            "target": _key(predictions["target_user"]).to_numpy(),
        }
    )
    rows = rows[rows["p_true"].notna()]
    cal = pd.DataFrame(
        {
            "strategy": splits["strategy"].to_numpy(),
            "classifier": splits["classifier"].to_numpy(),
            "iteration": splits["iteration"].to_numpy(),
            "target": _key(splits["user"]).to_numpy(),
            "n_cal": splits["n_cal"].to_numpy(),
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


def group_tables(
    predictions: pd.DataFrame, *, alpha: float, classes: Sequence[str], groups: pd.Series | None
) -> pd.DataFrame:
    """Coverage per class, then per group of users when the run had groups."""
    rows = predictions[["strategy", "classifier", "userid", "y_true", "covered"]]
    parts = [group_coverage(rows, "class", alpha=alpha, confidence=CONFIDENCE, order=classes)]
    if groups is not None:
        parts.append(group_coverage(rows, "group", alpha=alpha, user_groups=groups))
    return pd.concat(parts, ignore_index=True)


def _groups_series(user_groups: pd.DataFrame | None) -> pd.Series | None:
    """``user, group`` rows as a Series of groups indexed by the user as text."""
    if user_groups is None:
        return None
    from mueval.data.groups import _user_key

    keys = user_groups["user"].map(_user_key)
    return pd.Series(user_groups["group"].astype(str).to_numpy(), index=keys.to_numpy())


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
    user_groups: pd.DataFrame | None = None,
) -> Guarantees:
    """Per-user coverage with intervals, its summary and the warnings of a run.

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
        group) and the validity tests are computed too.
    condition : Condition, optional
        The run's conditioning (default: none); it decides the validity test.
    user_groups : DataFrame, optional
        ``user, group``: each user's group, for coverage per group.

    Returns
    -------
    Guarantees
    """
    # Each test row belongs to one user (its own: for MM, the pooled strategy,
    # that is the row's user; for the per-user strategies it is the target).
    rows = predictions[["strategy", "classifier", "iteration", "userid", "covered"]]
    per_user = per_user_coverage(
        rows, alpha=alpha, confidence=CONFIDENCE, user_col="userid", seed=seed
    )
    groups = None
    if classes is not None:
        groups = group_tables(
            predictions, alpha=alpha, classes=classes, groups=_groups_series(user_groups)
        )
    if not summarise:
        return Guarantees(per_user, pd.DataFrame(), [], groups, None, user_groups)
    validity = None
    if classes is not None:
        validity = validity_table(predictions, splits, classes, condition or Condition())
    summary = coverage_summary(per_user, alpha=alpha, confidence=CONFIDENCE, seed=seed)
    sets = set_statistics(predictions, n_classes=n_classes)
    found = collect_warnings(
        summary,
        sets,
        alpha=alpha,
        n_classes=n_classes,
        calibration=_calibration(splits),
        validity=validity,
    )
    return Guarantees(per_user, summary, [asdict(w) for w in found], groups, validity, user_groups)


def _user_text(value: object) -> str:
    """A user id as the CSV spells it (whole floats as integers)."""
    if isinstance(value, (int, float, np.integer, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _restore_users(column: pd.Series, users: pd.Series, where: Path) -> pd.Series:
    """Map a CSV's user ids (read as text) back to the predictions' own values.

    A CSV loses the type of an id (``"07"`` and ``7``), and the writer prefixes
    ``'`` to text a spreadsheet would run as a formula: the predictions are the
    reference, so each id is looked up in them by its text.
    """
    known = {_user_text(u): u for u in pd.unique(users)}

    def back(text: object) -> object:
        key = str(text)
        if key in known:
            return known[key]
        if key.startswith("'") and key[1:] in known:
            return known[key[1:]]
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
        with _open(path) as handle:
            frame = pd.read_csv(handle, encoding="utf-8", dtype=text)
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
    ok = isinstance(warnings, list) and all(
        isinstance(w, dict) and all(isinstance(w.get(k), str) for k in WARNING_KEYS)
        for w in warnings
    )
    if not ok:
        msg = (
            f"{path}: expected 'warnings' as a list of objects with text fields "
            f"{', '.join(WARNING_KEYS)}, found {warnings!r}"
        )
        raise RunFolderError(msg[:300])
    return [{k: w[k] for k in WARNING_KEYS} for w in warnings]  # type: ignore[union-attr]


def _stored_groups(root: Path, users: pd.Series) -> pd.DataFrame | None:
    """``user_groups.csv``: every user of the predictions, one group each."""
    if not (root / USER_GROUPS_FILE).exists():
        return None
    stored = _read_csv(root / USER_GROUPS_FILE, USER_GROUPS_COLUMNS, users, ["user"], ("group",))
    from mueval.runfolder.consistency import check_user_groups

    check_user_groups(root / USER_GROUPS_FILE, stored, users)
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
    """Coverage per class and group, and the validity tests: the stored files,
    checked against the predictions, or computed when the folder predates them."""
    from mueval.runfolder.consistency import check_group_coverage, check_user_validity

    users = predictions["userid"]
    if (root / GROUP_COVERAGE_FILE).exists():
        stored = _read_csv(
            root / GROUP_COVERAGE_FILE, GROUP_COVERAGE_COLUMNS, users, [], ("by", "group")
        )
        check_group_coverage(root / GROUP_COVERAGE_FILE, stored, fresh.group_coverage)
        fresh.group_coverage = stored
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
    have = (root / USER_COVERAGE_FILE).exists() and (root / COVERAGE_SUMMARY_FILE).exists()
    user_groups = _stored_groups(root, predictions["userid"])
    fresh = compute_guarantees(
        predictions,
        splits,
        alpha=alpha,
        n_classes=len(run["classes"]),
        summarise=not (have and "warnings" in run),
        classes=run["classes"],
        condition=_condition(root, run),
        user_groups=user_groups,
    )
    if have:
        users = predictions["userid"]
        stored = _read_csv(root / USER_COVERAGE_FILE, USER_COVERAGE_COLUMNS, users, ["user"])
        _check_counts(root / USER_COVERAGE_FILE, stored, fresh.user_coverage)
        summary = _read_csv(
            root / COVERAGE_SUMMARY_FILE, COVERAGE_SUMMARY_COLUMNS, users, ["worst_user"]
        )
        fresh = Guarantees(
            stored,
            summary,
            fresh.warnings,
            fresh.group_coverage,
            fresh.user_validity,
            user_groups,
        )
    fresh = _with_stored_extras(root, fresh, predictions, splits, run)
    if "warnings" in run:
        fresh.warnings = _check_warnings(root / "run.json", run["warnings"])
    return fresh
