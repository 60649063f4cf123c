"""Per-user guarantees of a run: verdicts, coverage intervals, their summary and the warnings.

Computed from the prediction rows when a run is evaluated, written into the run
folder (``user_coverage.csv``, ``coverage_summary.csv``, ``run.json``'s
``warnings``), and recomputed on load for folders written before these files
existed. A user is *below target* when the exact per-user test of
:mod:`mueval.guarantees.user_level` says so at the run's ``user_level`` after
its ``user_correction`` (``run.json``'s config; 0.05 and Holm for folders
written before them): :func:`verdict_cells` builds its input, one row per
(strategy, classifier, user, iteration) with the calibration size of
``splits.parquet`` and the user's test and covered rows. The Clopper-Pearson
intervals on the rows pooled over iterations describe each user's observed
rate (see :mod:`mueval.guarantees.intervals` for why they are narrow); they
are not the test.

Also here: coverage per class and per group of users
(:func:`mueval.data.groups.group_coverage`, ``group_coverage.csv``) and the per-user
validity test (:func:`mueval.guarantees.validity.user_validity`, ``user_validity.csv``),
whose flagged users feed the ``users-not-exchangeable`` warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mueval.conformal.sets import min_calibration_size
from mueval.data.groups import Condition, group_coverage, parse_condition
from mueval.errors import DataError
from mueval.guarantees.intervals import coverage_summary, per_user_coverage
from mueval.guarantees.run_warnings import collect_warnings, set_statistics
from mueval.guarantees.user_level import default_combine, user_verdicts
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
    USER_VERDICT_COLUMNS,
    WARNING_KEYS,
)
from mueval.runfolder.read import RunFolderError, _open

__all__ = [
    "USER_CORRECTION",
    "USER_LEVEL",
    "Guarantees",
    "compute_guarantees",
    "load_guarantees",
    "no_verdict_reason",
    "verdict_cells",
    "verdict_settings",
    "verdict_table",
]

#: Confidence of every interval written into a run folder.
CONFIDENCE = 0.95

#: Level and correction of the per-user verdicts of a run whose run.json
#: records none (folders written before them): ``--user-level`` and
#: ``--user-correction``'s defaults.
USER_LEVEL = 0.05
USER_CORRECTION = "holm"


@dataclass
class Guarantees:
    """The per-user guarantees of one run.

    Attributes
    ----------
    user_coverage : DataFrame
        :func:`~mueval.guarantees.intervals.per_user_coverage` output (exact
        interval of the observed rate) with the exact test's
        ``expected_covered``, ``p_value``, ``p_adjusted`` and ``below``
        (:func:`verdict_table`; ``<NA>`` where no verdict is given).
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


def verdict_settings(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings of the per-user verdicts, read from a run's configuration.

    Parameters
    ----------
    config : mapping or None
        ``run.json``'s ``config`` (or :meth:`EvalConfig.record
        <mueval.evaluation.runner.EvalConfig.record>` with ``condition``);
        keys it lacks take the protocol's defaults, so a folder written before
        the verdicts gets level 0.05 and Holm.

    Returns
    -------
    dict
        ``level``, ``correction``, ``combine`` (strategy -> ``convolution`` or
        ``bonferroni``, or None: :func:`~mueval.guarantees.user_level.default_combine`),
        ``rule``, ``score``, ``split``, ``small_cal`` and ``condition`` (a
        :class:`~mueval.data.groups.Condition`).

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
        "combine": config.get("user_combine"),
        "rule": str(config.get("threshold") or "study"),
        "score": str(config.get("score") or "lac"),
        "split": str(config.get("split") or "random"),
        "small_cal": str(config.get("small_cal") or "error"),
        "condition": parse_condition(
            config.get("condition"), mondrian=bool(config.get("mondrian"))
        ),
    }


def no_verdict_reason(strategy: str, settings: Mapping[str, Any]) -> str | None:
    """Why a strategy's users get no verdict under ``settings``, or None.

    Where the calibration count behind each test row's threshold is not
    recorded, or no single rank-k threshold exists, no exact null can be
    written down; those users are not flagged (``below`` is ``<NA>``), the
    conservative treatment, and the report says "no verdict".

    Examples
    --------
    >>> settings = verdict_settings({"condition": "class"})
    >>> no_verdict_reason("ucm", settings).split(":")[0]
    'class-conditional calibration'
    >>> no_verdict_reason("ucm", verdict_settings({})) is None
    True
    """
    condition = settings["condition"]
    if strategy == "uxc":
        return "uxc: cross-conformal p-values pooled over fold models, no single rank-k threshold"
    if settings["rule"] == "mapie" and settings["score"] != "lac":
        return (
            f"MAPIE's own {settings['score']} sets (--threshold mapie): no rank-k threshold "
            "describes them"
        )
    if condition.per_class:
        return (
            "class-conditional calibration: splits.parquet records the smallest class cell "
            "(n_cal_cell), not each cell's calibration count, so the per-cell ranks are unknown"
        )
    if condition.by_group and strategy == "mm":
        return (
            "mm under group calibration: each test row is calibrated on its own group, while "
            "n_cal counts every group's calibration rows"
        )
    return None


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
    if "target_user" in predictions.columns:
        target = _key(predictions["target_user"]).to_numpy()
    else:
        pooled = predictions["strategy"].astype(str).str.lower().eq("mm").to_numpy()
        target = np.where(pooled, "", _key(predictions["userid"]).to_numpy())
    rows = pd.DataFrame(
        {
            "strategy": predictions["strategy"].to_numpy(),
            "classifier": predictions["classifier"].to_numpy(),
            "iteration": predictions["iteration"].to_numpy(),
            "user": predictions["userid"].to_numpy(),
            # The task's key in splits.parquet: the target user, empty for MM.
            "target": target,
            "covered": predictions["covered"].astype(bool).to_numpy(dtype=np.int64),
        }
    )
    keys = ["strategy", "classifier", "iteration", "target"]
    counts = (
        rows.groupby([*keys, "user"], sort=True, observed=True)["covered"]
        .agg(n_test="size", n_covered="sum")
        .reset_index()
    )
    cal = pd.DataFrame(
        {
            "strategy": splits["strategy"].to_numpy(),
            "classifier": splits["classifier"].to_numpy(),
            "iteration": splits["iteration"].to_numpy(),
            "target": _key(splits["user"]).to_numpy(),
            "n_cal": pd.to_numeric(splits["n_cal"], errors="coerce").to_numpy(),
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
    return cells[["strategy", "classifier", "user", "iteration", "n_cal", "n_test", "n_covered"]]


_VERDICT_COLUMNS = ["expected_covered", "p_value", "p_adjusted", "below"]


def verdict_table(
    predictions: pd.DataFrame,
    splits: pd.DataFrame,
    *,
    alpha: float,
    config: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Each user's exact test of "below target" in a run.

    Parameters
    ----------
    predictions, splits : DataFrame
        As for :func:`verdict_cells`.
    alpha : float
        The run's miscoverage level.
    config : mapping, optional
        The run's configuration (:func:`verdict_settings`).

    Returns
    -------
    DataFrame
        :func:`~mueval.guarantees.user_level.user_verdicts` output, one row
        per (strategy, classifier, user), for every strategy of the
        predictions; users of a strategy with a :func:`no_verdict_reason`
        have ``nan`` p-values and ``below`` ``<NA>``.
    """
    settings = verdict_settings(config)
    cells = verdict_cells(predictions, splits)
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
        # A calibration set the run's --small-cal policy refuses has no sets to
        # test (the calibration-too-small warning names it): no verdict there.
        refused = (part["n_cal"] < min_calibration_size(alpha)).to_numpy() & (
            settings["small_cal"] != "full-set"
        )
        if no_verdict_reason(strategy, settings) is not None or refused.any():
            parts.append(user_verdicts(part.assign(rank=np.nan), **options))
        else:
            parts.append(
                user_verdicts(
                    part, rule=settings["rule"], small_cal=settings["small_cal"], **options
                )
            )
    if not parts:
        return pd.DataFrame(columns=["strategy", "classifier", "user", *_VERDICT_COLUMNS])
    return pd.concat(parts, ignore_index=True)


def _with_verdicts(per_user: pd.DataFrame, verdicts: pd.DataFrame) -> pd.DataFrame:
    """``per_user`` with the interval's flag replaced by the exact test's verdict."""
    keys = ["strategy", "classifier", "user"]
    table = per_user.drop(columns=[c for c in _VERDICT_COLUMNS if c in per_user.columns])
    table = table.merge(verdicts[keys + _VERDICT_COLUMNS], on=keys, how="left", validate="1:1")
    table["below"] = table["below"].astype("boolean")
    return table


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
    config: Mapping[str, Any] | None = None,
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
        group) and the validity tests are computed too.
    condition : Condition, optional
        The run's conditioning (default: none); it decides the validity test.
    user_groups : DataFrame, optional
        ``user, group``: each user's group, for coverage per group.
    config : mapping, optional
        The run's configuration (``run.json``'s ``config``): the verdicts'
        level, correction and combination, the threshold rule, the split and
        the small-calibration policy (:func:`verdict_settings`).

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
    per_user = _with_verdicts(
        per_user, verdict_table(predictions, splits, alpha=alpha, config=config)
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
    # A folder written before the exact per-user test holds interval flags in
    # its files and warnings: everything per user is recomputed from the rows.
    verdicts = "user_level" in run["config"]
    have = (
        verdicts
        and (root / USER_COVERAGE_FILE).exists()
        and (root / COVERAGE_SUMMARY_FILE).exists()
    )
    user_groups = _stored_groups(root, predictions["userid"])
    try:
        fresh = compute_guarantees(
            predictions,
            splits,
            alpha=alpha,
            n_classes=len(run["classes"]),
            summarise=not (have and "warnings" in run),
            classes=run["classes"],
            condition=_condition(root, run),
            user_groups=user_groups,
            config=run["config"],
        )
    except ValueError as exc:
        if isinstance(exc, RunFolderError):
            raise
        msg = f"{root}: the per-user verdicts cannot be computed from this run: {exc}"
        raise RunFolderError(msg[:600]) from exc
    if have:
        from mueval.runfolder.consistency import check_user_verdicts

        users = predictions["userid"]
        stored = _read_csv(
            root / USER_COVERAGE_FILE,
            USER_COVERAGE_COLUMNS + USER_VERDICT_COLUMNS,
            users,
            ["user"],
        )
        _check_counts(root / USER_COVERAGE_FILE, stored, fresh.user_coverage)
        check_user_verdicts(root / USER_COVERAGE_FILE, stored, fresh.user_coverage)
        stored["below"] = _as_verdict(stored["below"])
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
    if "warnings" in run and verdicts:
        fresh.warnings = _check_warnings(root / "run.json", run["warnings"])
    return fresh


def _as_verdict(column: pd.Series) -> pd.Series:
    """A CSV's ``below`` (``True``, ``False`` or empty for no verdict) as a boolean column."""
    text = column.astype(str).str.strip().str.lower()
    values = text.map({"true": True, "false": False, "1": True, "0": False})
    return values.astype("boolean")
