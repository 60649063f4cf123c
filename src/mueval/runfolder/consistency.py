"""Is a run folder consistent with itself? The first contradiction, named, or nothing.

A run folder is plain files: anyone can edit them, and a report drawn from edited
numbers looks as honest as any other. What the folder states twice is checked to
agree, from the bottom up, so that every number the report shows is backed by the
predictions:

1. every strategy is a code this mueval knows, and every classifier a built-in
   code or a user model's name (:func:`mueval.names.is_model_name`: letters,
   digits, ``_`` and ``-``, no two alike but for case), as file names of the
   report are built from them;
2. each prediction row: ``y_true``, ``y_pred`` and every member of ``pred_set``
   are classes of ``run.json``, the set names no class twice,
   ``set_size == len(pred_set)`` and ``covered == (y_true in pred_set)``;
3. ``splits.parquet`` against the predictions: for each (strategy, classifier,
   iteration, user), ``coverage`` and ``setsize`` are the means over its
   prediction rows and ``n_test`` is their number (a split whose conformal step
   was skipped has undefined coverage and no rows);
4. ``summary.csv`` against ``splits.parquet``: every metric that splits.parquet
   holds is aggregated again as ``mueval evaluate`` does
   (:func:`mueval.evaluation.aggregate.summary_frame`: the mean over users within each
   iteration, undefined values skipped, then the mean, the sample SD and the count
   over iterations, undefined if one iteration is) and must match within float
   tolerance; the conditional-coverage diagnostics in the summary likewise
   against ``diagnostics.parquet``;
5. the files of conditional coverage (read by :mod:`.guarantees`):
   ``user_cohorts.csv`` gives every user of the predictions one cohort;
   ``conditional_coverage.csv``'s counts per class and cohort are the predictions',
   and its exact tests those they give
   (:func:`check_conditional_coverage`); ``user_validity.csv``'s row counts are the
   predictions', and its ``pvalue_bh`` and ``flagged`` follow from its
   ``pvalue`` (:func:`check_user_validity`).

``alpha`` in (0, 1) and the types of ``run.json`` are checked by the reader
(:mod:`mueval.runfolder.read`). Not checked: the p-values and probabilities
themselves, the classic metrics against the predictions, and the per-iteration
values of the conditional-coverage diagnostics (computed from the features, which
the folder does not hold).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mudata.display import shown
from mueval.data.frames import frame_column
from mueval.data.table import SCORES_ENV, max_score_cells
from mueval.data.users import user_texts
from mueval.guarantees.validity import benjamini_hochberg
from mueval.names import (
    CLASSIFIERS,
    FULL_DIAGNOSTICS,
    MODEL_NAME_RULE,
    STRATEGIES,
    is_model_name,
    is_strategy_code,
)
from mueval.runfolder.records import RunFolder, RunFolderError
from mueval.strategies import STRATEGY_CODE_RULE

__all__ = [
    "RTOL",
    "check_conditional_coverage",
    "check_consistency",
    "check_user_cohorts",
    "check_user_validity",
    "check_user_verdicts",
]

#: Relative tolerance between a stored mean and its recomputation (float sums in
#: another order differ in the last bits, never more).
RTOL = 1e-9
_ATOL = 1e-12
_GROUP = ["strategy", "classifier", "iteration"]


def _first(wrong: np.ndarray) -> int | None:
    """Index of the first True of ``wrong`` (the row an error names), or None."""
    rows = np.flatnonzero(wrong)
    return int(rows[0]) if rows.size else None


def _show(value: object) -> str:
    return shown(value, 60)


def _check_codes_of(path: object, frame: pd.DataFrame) -> None:
    values = pd.unique(frame["strategy"])
    unknown = [v for v in values if not is_strategy_code(v)]
    if unknown:
        msg = (
            f"{path}: strategy {_show(unknown[0])} is not a strategy code of mueval "
            f"(expected one of {', '.join(STRATEGIES)}, or a strategy of your own: "
            f"{STRATEGY_CODE_RULE})"
        )
        raise RunFolderError(msg)
    values = pd.unique(frame["classifier"])
    unknown = [v for v in values if not is_model_name(v)]
    if unknown:
        msg = (
            f"{path}: classifier {_show(unknown[0])} is neither a classifier code of mueval "
            f"({', '.join(CLASSIFIERS)}) nor a model's name ({MODEL_NAME_RULE})"
        )
        raise RunFolderError(msg)
    folded: dict[str, str] = {}
    for value in values:
        other = folded.setdefault(value.casefold(), value)
        if other != value:
            msg = f"{path}: classifiers {other!r} and {value!r} differ only in case"
            raise RunFolderError(msg)


def _check_codes(run: RunFolder) -> None:
    """Strategy and classifier values are codes of mueval, in every file."""
    for name, frame in (
        ("predictions.parquet", run.predictions),
        ("splits.parquet", run.splits),
        ("summary.csv", run.summary),
    ):
        _check_codes_of(run.path / name, frame)


def _row(run: RunFolder, i: int) -> str:
    r = run.predictions.iloc[int(i)]
    return f"row {int(i)} ({r['strategy']}/{r['classifier']}, iteration {r['iteration']})"


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _classes(run: RunFolder, like: pa.Array) -> pa.Array:
    """The class names as an array of ``like``'s type (string or large_string)."""
    return pa.array(run.classes, like.type)


def _whole_or_null(column: pa.ChunkedArray) -> bool:
    values = column.to_numpy(zero_copy_only=False)
    values = values[~np.isnan(values)]
    return bool(np.all(values == np.round(values)))


def _check_types(run: RunFolder, preds: pa.Table) -> None:
    path = run.path / "predictions.parquet"
    expected = {
        "y_true": _is_text,
        "y_pred": _is_text,
        "set_size": pa.types.is_integer,
        "covered": pa.types.is_boolean,
        "iteration": pa.types.is_integer,
    }
    for column, test in expected.items():
        kind = preds.schema.field(column).type
        if not test(kind):
            msg = f"{path}: column {column} is of type {kind}, not the type mueval writes"
            raise RunFolderError(msg)
    kind = preds.schema.field("pred_set").type
    if not ((pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _is_text(kind.value_type)):
        msg = f"{path}: column pred_set is of type {kind}; expected lists of class names"
        raise RunFolderError(msg)
    kind = preds.schema.field("seed").type
    if not pa.types.is_integer(kind):
        msg = f"{path}: column seed is of type {kind}; expected whole numbers"
        raise RunFolderError(msg)
    # User ids are whole numbers, or text when a dataset names its users ("S006").
    kind = preds.schema.field("userid").type
    if not (pa.types.is_integer(kind) or _is_text(kind)):
        msg = f"{path}: column userid is of type {kind}; expected whole numbers or text"
        raise RunFolderError(msg)
    kind = preds.schema.field("target_user").type
    if not (
        pa.types.is_integer(kind)
        or pa.types.is_null(kind)
        or _is_text(kind)
        or (pa.types.is_floating(kind) and _whole_or_null(preds.column("target_user")))
    ):
        msg = f"{path}: column target_user is of type {kind}; expected whole numbers or text"
        raise RunFolderError(msg)
    for column in ("p_values", "proba"):
        kind = preds.schema.field(column).type
        if not (
            (pa.types.is_list(kind) or pa.types.is_large_list(kind))
            and pa.types.is_floating(kind.value_type)
        ):
            msg = f"{path}: column {column} is of type {kind}; expected lists of numbers"
            raise RunFolderError(msg)
    for column in (
        "y_true",
        "y_pred",
        "pred_set",
        "set_size",
        "covered",
        "iteration",
        "userid",
        "p_values",
        "proba",
    ):
        nulls = preds.column(column).is_null().to_numpy(zero_copy_only=False)
        if nulls.any():
            msg = f"{path}: {_row(run, np.argmax(nulls))}: {column} is empty"
            raise RunFolderError(msg)


def _check_labels(run: RunFolder, preds: pa.Table) -> None:
    """``y_true`` and ``y_pred`` are classes; p_values and proba have one value per class."""
    path = run.path / "predictions.parquet"
    for column in ("y_true", "y_pred"):
        values = preds.column(column).combine_chunks()
        inside = pc.is_in(values, value_set=_classes(run, values)).to_numpy(zero_copy_only=False)
        if not inside.all():
            i = int(np.argmin(inside))
            msg = (
                f"{path}: {_row(run, i)}: {column} {_show(values[i].as_py())} is not a class "
                f"of run.json"
            )
            raise RunFolderError(msg)
    k = len(run.classes)
    for column in ("p_values", "proba"):
        width = pc.list_value_length(preds.column(column).combine_chunks())
        width = width.to_numpy(zero_copy_only=False)
        i = _first(width != k)
        if i is not None:
            msg = (
                f"{path}: {_row(run, i)}: {column} holds {int(width[i])} values; expected "
                f"one per class of run.json ({k})"
            )
            raise RunFolderError(msg)


def _set_members(run: RunFolder, preds: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Row and class index of every member of every set, checked to be a class, once.

    Returns
    -------
    parents, index : ndarray of int, shape (n_members,)
    """
    path = run.path / "predictions.parquet"
    sets = preds.column("pred_set").combine_chunks()
    flat = pc.list_flatten(sets)
    parents = pc.list_parent_indices(sets).to_numpy(zero_copy_only=False).astype(np.int64)
    index = pc.index_in(flat, value_set=_classes(run, flat)).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(np.isnan(index.astype(float)))  # not a class (or empty)
    if bad.size:
        msg = (
            f"{path}: {_row(run, parents[bad[0]])}: pred_set holds "
            f"{_show(flat[int(bad[0])].as_py())}, not a class of run.json"
        )
        raise RunFolderError(msg)
    index = index.astype(np.int64)
    k = len(run.classes)
    # Members strictly in class order within every set (the writer's order)
    # cannot repeat: only a set that breaks that order is searched for a repeat.
    same_row = parents[1:] == parents[:-1]
    keys = parents * k + index
    unordered = bool((same_row & (index[1:] <= index[:-1])).any())
    twice = pd.Series(keys).duplicated().to_numpy() if unordered else np.zeros(0, dtype=bool)
    if twice.any():
        first = keys[np.argmax(twice)]
        msg = (
            f"{path}: {_row(run, first // k)}: pred_set names {_show(run.classes[first % k])} twice"
        )
        raise RunFolderError(msg)
    # The writer lists each set's members in the order of the class list, the
    # order of p_values and proba too: members out of that order mean run.json's
    # list is not the one the predictions were written with (e.g. reordered).
    i = _first(same_row & (index[1:] < index[:-1]))
    if i is not None:
        before, after = run.classes[index[i]], run.classes[index[i + 1]]
        msg = (
            f"{path}: {_row(run, parents[i])}: pred_set lists {_show(before)} before "
            f"{_show(after)}, but run.json's classes {_show(run.classes)} put "
            f"{_show(after)} first; the class order of run.json is not the one the "
            f"predictions (their pred_set, p_values and proba) were written with"
        )
        raise RunFolderError(msg)
    return parents, index


def _check_target_users(run: RunFolder) -> None:
    """A per-user strategy tests on its target user's own rows: ``userid`` is
    ``target_user`` wherever a target user is named."""
    path = run.path / "predictions.parquet"
    target = user_texts(run.predictions["target_user"])
    user = user_texts(run.predictions["userid"])
    i = _first(((target != "") & (target != user)).to_numpy())
    if i is not None:
        msg = (
            f"{path}: {_row(run, i)}: userid {_show(user.iloc[i])} is not the target "
            f"user {_show(target.iloc[i])}"
        )
        raise RunFolderError(msg)


def _check_rows(run: RunFolder, preds: pa.Table) -> None:
    """Labels are classes; ``set_size`` and ``covered`` agree with ``pred_set``."""
    path = run.path / "predictions.parquet"
    _check_types(run, preds)
    _check_labels(run, preds)
    _check_target_users(run)
    parents, index = _set_members(run, preds)
    n = preds.num_rows
    lengths = np.bincount(parents, minlength=n)
    size = preds.column("set_size").to_numpy()
    i = _first(size != lengths)
    if i is not None:
        msg = (
            f"{path}: {_row(run, i)}: set_size is {int(size[i])}, but pred_set holds "
            f"{int(lengths[i])} classes"
        )
        raise RunFolderError(msg)
    y_true = preds.column("y_true").combine_chunks()
    y_index = pc.index_in(y_true, value_set=_classes(run, y_true))
    y_index = y_index.to_numpy(zero_copy_only=False).astype(np.int64)
    holds = np.zeros(n, dtype=bool)
    holds[parents[index == y_index[parents]]] = True
    covered = preds.column("covered").to_numpy()
    i = _first(covered != holds)
    if i is not None:
        where = "is" if holds[i] else "is not"
        msg = (
            f"{path}: {_row(run, i)}: covered is {bool(covered[i])}, but y_true "
            f"{_show(run.classes[y_index[i]])} {where} in pred_set"
        )
        raise RunFolderError(msg)


def _numeric(path: object, frame: pd.DataFrame, columns: list[str]) -> None:
    for column in columns:
        values = frame[column]
        # A table without rows (no p-values to test) reads back as text columns.
        if not len(values):
            continue
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            as_num = pd.to_numeric(values, errors="coerce")
            bad = values[as_num.isna() & values.notna()]
            shown = _show(bad.iloc[0]) if len(bad) else f"of type {values.dtype}"
            msg = f"{path}: column {column} holds {shown}; expected numbers"
            raise RunFolderError(msg)


def _whole(path: object, frame: pd.DataFrame, column: str) -> None:
    """A count column: no gaps, no fractions (a cut-short CSV leaves NaN here)."""
    values = frame[column].to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values)) | (values < 0))
    if bad.size:
        i = int(bad[0])
        msg = f"{path}: row {i}: {column} is {float(values[i])!r}; expected a whole number >= 0"
        raise RunFolderError(msg)


def _close(a: float, b: float) -> bool:
    return bool(np.isclose(a, b, rtol=RTOL, atol=_ATOL, equal_nan=True))


def _check_splits(run: RunFolder) -> None:
    """Per split: coverage, setsize and n_test are what the prediction rows give."""
    path = run.path / "splits.parquet"
    _numeric(path, run.splits, ["iteration", "seed", "n_test", "n_cal", "coverage", "setsize"])
    preds = run.predictions
    grouped = (
        pd.DataFrame(
            {
                **{c: preds[c] for c in _GROUP},
                "user": preds["target_user"],
                "covered": preds["covered"].astype(float),
                "size": preds["set_size"].astype(float),
            }
        )
        .groupby([*_GROUP, "user"], dropna=False, sort=False)
        .agg(p_coverage=("covered", "mean"), p_setsize=("size", "mean"), p_n=("covered", "size"))
        .reset_index()
    )
    grouped["user"] = user_texts(grouped["user"])
    splits = run.splits[[*_GROUP, "user", "coverage", "setsize", "n_test"]].copy()
    splits["user"] = user_texts(splits["user"])
    twice = splits.duplicated([*_GROUP, "user"])
    if twice.any():
        r = splits[twice].iloc[0]
        msg = (
            f"{path}: {r['strategy']}/{r['classifier']} iteration {r['iteration']} user "
            f"{r['user'] or '(none, MM)'} appears twice"
        )
        raise RunFolderError(msg)
    both = splits.merge(grouped, on=[*_GROUP, "user"], how="outer", indicator="side")
    for r in both.itertuples(index=False):
        where = f"{r.strategy}/{r.classifier} iteration {r.iteration} user {r.user or '(none, MM)'}"
        msg = _split_contradiction(r, where)
        if msg:
            raise RunFolderError(f"{path}: {msg}")


def _split_contradiction(r: object, where: str) -> str | None:
    """The first disagreement of one merged (splits, predictions) row, or None."""
    if r.side == "right_only":
        return f"has no row for {where}, which predictions.parquet holds {int(r.p_n)} rows of"
    defined = np.isfinite(r.coverage)
    if r.side == "left_only":
        if defined:
            return (
                f"coverage of {where} is {r.coverage:.6g}, but predictions.parquet has no row of it"
            )
        return None  # conformal step skipped: no sets, no rows
    if not defined:
        return (
            f"coverage of {where} is undefined, but predictions.parquet holds "
            f"{int(r.p_n)} rows of it"
        )
    if int(r.n_test) != int(r.p_n):
        return f"n_test of {where} is {r.n_test}, but predictions.parquet holds {int(r.p_n)} rows"
    for name, stored, computed in (
        ("coverage", r.coverage, r.p_coverage),
        ("setsize", r.setsize, r.p_setsize),
    ):
        if not _close(stored, computed):
            return (
                f"{name} of {where} is {stored:.6g}, but its {int(r.p_n)} rows in "
                f"predictions.parquet give {computed:.6g}"
            )
    return None


def _recompute_summary(
    splits: pd.DataFrame, metrics: list[str], diagnostics: pd.DataFrame | None, extra: list[str]
) -> pd.DataFrame:
    """mean, sd, n per (strategy, classifier, metric), aggregated as summary_frame does.

    ``extra`` names diagnostic columns of ``diagnostics`` (one row per strategy,
    classifier and iteration), joined to the per-iteration means as the writer does.
    For the study's metrics (``metrics``, the columns of splits.parquet) an
    undefined iteration makes the mean and SD undefined, as in the study's R code
    (``r_mean``, ``r_sd``); mueval before that rule skipped undefined iterations
    (``s_mean``, ``s_sd``), which is still how the diagnostics are aggregated, so a
    folder written either way is recognised.
    """
    per_it = splits.groupby(_GROUP, sort=False)[metrics].mean().reset_index()
    if diagnostics is not None and extra:
        per_it = per_it.merge(diagnostics[[*_GROUP, *extra]], on=_GROUP, how="left")
    rows = []
    for (s, c), group in per_it.groupby(["strategy", "classifier"], sort=False):
        for m in [*metrics, *extra]:
            values = group[m].to_numpy(dtype=float)
            defined = values[~np.isnan(values)]
            n = len(defined)
            mean = float(defined.mean()) if n else np.nan
            sd = float(defined.std(ddof=1)) if n > 1 else np.nan
            strict = m in metrics and n < len(values)
            rows.append(
                (s, c, m, np.nan if strict else mean, np.nan if strict else sd, mean, sd, n)
            )
    columns = ["strategy", "classifier", "metric", "r_mean", "r_sd", "s_mean", "s_sd", "r_n"]
    return pd.DataFrame(rows, columns=columns)


def _diagnostic_metrics(run: RunFolder, names: list[str]) -> list[str]:
    """Summary metrics not in splits.parquet: diagnostics, backed by diagnostics.parquet."""
    wanted = [m for m in names if m in FULL_DIAGNOSTICS]
    if not wanted:
        return []
    path = run.path / "diagnostics.parquet"
    if run.diagnostics is None:
        msg = (
            f"{run.path / 'summary.csv'}: has {wanted[0]} rows, but the run folder has no "
            "diagnostics.parquet to back them"
        )
        raise RunFolderError(msg)
    gone = [c for c in [*_GROUP, *wanted] if c not in run.diagnostics.columns]
    if gone:
        msg = f"{path}: missing columns {gone}, which summary.csv reports"
        raise RunFolderError(msg)
    _check_codes_of(path, run.diagnostics)
    _numeric(path, run.diagnostics, ["iteration", *wanted])
    if run.diagnostics.duplicated(_GROUP).any():
        r = run.diagnostics[run.diagnostics.duplicated(_GROUP)].iloc[0]
        msg = f"{path}: {r['strategy']}/{r['classifier']} iteration {r['iteration']} appears twice"
        raise RunFolderError(msg)
    return wanted


def _check_summary(run: RunFolder) -> None:
    """Every summary row of a metric splits.parquet holds is recomputed and compared."""
    path = run.path / "summary.csv"
    summary = run.summary
    _numeric(path, summary, ["mean", "sd", "n"])
    _whole(path, summary, "n")
    keys = ["strategy", "classifier", "metric"]
    twice = summary.duplicated(keys)
    if twice.any():
        r = summary[twice].iloc[0]
        msg = f"{path}: {r['metric']} of {r['strategy']}/{r['classifier']} appears twice"
        raise RunFolderError(msg)
    pairs_split = set(zip(run.splits["strategy"], run.splits["classifier"], strict=True))
    for s, c in dict.fromkeys(zip(summary["strategy"], summary["classifier"], strict=True)):
        if (s, c) not in pairs_split:
            msg = f"{path}: has rows for {s}/{c}, but splits.parquet has none"
            raise RunFolderError(msg)
    for s, c in sorted(
        pairs_split - set(zip(summary["strategy"], summary["classifier"], strict=True))
    ):
        msg = f"{path}: has no row for {s}/{c}, which splits.parquet holds"
        raise RunFolderError(msg)
    shared = set(summary["metric"]) & set(run.splits.columns)
    metrics = [m for m in dict.fromkeys(summary["metric"]) if m in shared]
    _numeric(run.path / "splits.parquet", run.splits, metrics)
    extra = _diagnostic_metrics(
        run, [m for m in dict.fromkeys(summary["metric"]) if m not in shared]
    )
    recomputed = _recompute_summary(run.splits, metrics, run.diagnostics, extra)
    both = summary.merge(recomputed, on=keys, how="inner")
    for r in both.itertuples(index=False):
        where = f"{r.metric} of {r.strategy}/{r.classifier}"
        if int(r.n) != r.r_n:
            msg = (
                f"{path}: {where} counts n = {r.n} iterations, but splits.parquet has "
                f"{r.r_n} with a defined value"
            )
            raise RunFolderError(msg)
        if _close(r.mean, r.s_mean) and _close(r.sd, r.s_sd):
            continue  # undefined iterations skipped: mueval before the study's rule
        for name, stored, computed in (("mean", r.mean, r.r_mean), ("sd", r.sd, r.r_sd)):
            if not _close(stored, computed):
                msg = (
                    f"{path}: {where} has {name} {stored:.6g}, but splits.parquet gives "
                    f"{computed:.6g} (mean over users within each iteration, then over "
                    f"{r.r_n} iterations)"
                )
                raise RunFolderError(msg)


def check_consistency(run: RunFolder, predictions: pa.Table) -> None:
    """Raise on the first contradiction inside a run folder.

    Parameters
    ----------
    run : RunFolder
        The folder as read (its frames).
    predictions : pyarrow.Table
        ``predictions.parquet`` as read, for the row checks over the set lists.

    Raises
    ------
    RunFolderError
        Naming the file, the row or group, the field, the stored value and the
        value it contradicts.
    """
    _check_counts(run)
    _check_codes(run)
    _check_rows(run, predictions)
    _check_splits(run)
    _check_class_cells(run)
    _check_summary(run)


#: The row counts of splits.parquet, in the order a split's rows are drawn.
_COUNTS = ("n_train", "n_cal", "n_test")


def _check_counts(run: RunFolder) -> None:
    """Row counts bounded by the rows they describe, before anything is sized by them.

    The per-user verdicts allocate arrays of ``n_cal`` values: a splits file
    saying 200 million would ask for gigabytes. A run's table held at most
    :func:`~mueval.data.table.max_score_cells` rows x classes (``mueval
    evaluate`` refuses more), so ``dataset.n_rows`` is bounded by it; each
    split's training, calibration and test rows are disjoint rows of that
    table, so they add up to at most ``n_rows``; and its test rows are rows
    of ``predictions.parquet``.
    """
    cells = max_score_cells()
    limit = cells // max(2, len(run.classes))
    declared = run.run["dataset"].get("n_rows")
    if declared is not None and declared > limit:
        msg = (
            f"{run.path / 'run.json'}: dataset.n_rows is {int(declared):,}; with "
            f"{len(run.classes):,} classes a run holds at most {limit:,} rows "
            f"({cells:,} rows x classes; ${SCORES_ENV} sets another cap)"
        )
        raise RunFolderError(msg)
    bound = limit if declared is None else int(declared)
    path = run.path / "splits.parquet"
    present = [c for c in _COUNTS if c in run.splits.columns]
    _numeric(path, run.splits, present)
    counts = {c: pd.to_numeric(run.splits[c]).to_numpy(dtype=float) for c in present}
    for column, values in counts.items():
        bad = np.flatnonzero(np.isfinite(values) & ((values < 0) | (values != np.round(values))))
        if bad.size:
            i = int(bad[0])
            msg = f"{path}: row {i}: {column} is {float(values[i])!r}; expected a whole number >= 0"
            raise RunFolderError(msg)
    total = np.nansum(np.vstack(list(counts.values())), axis=0) if counts else np.zeros(0)
    i = _first(total > bound)
    if i is not None:
        given = ", ".join(f"{c} {counts[c][i]:,.0f}" for c in present)
        what = f"dataset.n_rows {bound:,}" if declared is not None else f"the {bound:,} a run holds"
        msg = f"{path}: row {i}: {given} add up to more than {what}"
        raise RunFolderError(msg)
    if "n_test" in counts:
        i = _first(counts["n_test"] > len(run.predictions))
        if i is not None:
            msg = (
                f"{path}: row {i}: n_test is {counts['n_test'][i]:,.0f}, more than the "
                f"{len(run.predictions):,} rows of predictions.parquet"
            )
            raise RunFolderError(msg)


def _check_class_cells(run: RunFolder) -> None:
    """``n_cal_class`` (class-conditional runs): one whole count per class, adding up
    to ``n_cal`` and with ``n_cal_cell`` as their smallest (the per-user verdicts
    take each cell's rank from them)."""
    if "n_cal_class" not in run.splits.columns:
        return
    path = run.path / "splits.parquet"
    n_classes = len(run.classes)
    for i, value in enumerate(run.splits["n_cal_class"]):
        if value is None or (isinstance(value, float) and np.isnan(value)):
            continue
        try:
            sizes = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            sizes = np.full(1, np.nan)  # reported below as not whole counts
        row = run.splits.iloc[i]
        where = (
            f"{path}: {row['strategy']}/{row['classifier']} iteration {row['iteration']} "
            f"user {user_texts(pd.Series([row['user']])).iloc[0] or '(none, MM)'}"
        )
        if (
            sizes.shape != (n_classes,)
            or not np.isfinite(sizes).all()
            or (sizes < 0).any()
            or (sizes != np.floor(sizes)).any()
        ):
            msg = (
                f"{where}: n_cal_class is {_show(value)}; expected {n_classes} whole counts "
                "(one per class of run.json)"
            )
            raise RunFolderError(msg[:600])
        cell = row.get("n_cal_cell")
        if int(sizes.sum()) != int(row["n_cal"]) or (
            cell is not None and not pd.isna(cell) and int(sizes.min()) != int(cell)
        ):
            msg = (
                f"{where}: n_cal_class {_show(value)} adds up to {int(sizes.sum())} with "
                f"smallest {int(sizes.min())}; n_cal is {row['n_cal']} and n_cal_cell {cell}"
            )
            raise RunFolderError(msg[:600])


def check_user_cohorts(path: object, stored: pd.DataFrame, users: pd.Series) -> None:
    """``user_cohorts.csv``: each user of the predictions once, each with a cohort."""
    keys = user_texts(stored["user"])
    twice = keys[keys.duplicated()]
    if len(twice):
        msg = f"{path}: user {twice.iloc[0]} is listed more than once; expected one cohort per user"
        raise RunFolderError(msg[:300])
    empty = stored["cohort"].isna() | (stored["cohort"].astype(str).str.strip() == "")
    if empty.any():
        msg = f"{path}: user {keys[empty].iloc[0]} has no cohort"
        raise RunFolderError(msg[:300])
    absent = sorted(set(user_texts(pd.Series(pd.unique(users)))) - set(keys))
    if absent:
        msg = f"{path}: users of predictions.parquet without a cohort: {', '.join(absent[:5])}"
        raise RunFolderError(msg[:300])


def check_conditional_coverage(path: object, stored: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """``conditional_coverage.csv``: the counts per (strategy, classifier, by, value) are
    those of the predictions (and the cohorts of ``user_cohorts.csv``), and, in a
    folder written since the exact test per class and cohort, its ``p_value``,
    ``p_adjusted`` and ``below`` are those recomputed in ``fresh``."""
    counts = ["n_users", "n", "n_covered"]
    _numeric(path, stored, [*counts, "coverage", "low", "high"])
    keys = ["strategy", "classifier", "by", "value"]
    left = fresh[[*keys, *counts]].astype({"value": str})
    right = stored[[*keys, *counts]].astype({"value": str})
    merged = left.merge(right, on=keys, how="outer", suffixes=("", "_file"), indicator=True)
    bad = merged[
        (merged["_merge"] != "both")
        | np.logical_or.reduce([merged[c] != merged[f"{c}_file"] for c in counts])
    ]
    if len(bad):
        r = bad.iloc[0]
        where = f"{r['strategy']} / {r['classifier']} {r['by']} {_show(r['value'])}"
        if r["_merge"] != "both":
            side = "the file lacks it" if r["_merge"] == "left_only" else "the predictions lack it"
            msg = f"{path}: {where}: {side}"
        else:
            msg = (
                f"{path}: {where} has n={r['n_file']}, n_covered={r['n_covered_file']}, "
                f"n_users={r['n_users_file']}; predictions.parquet gives n={r['n']}, "
                f"n_covered={r['n_covered']}, n_users={r['n_users']}"
            )
        raise RunFolderError(msg[:600])
    if "p_value" in stored.columns or "p_adjusted" in stored.columns:
        _check_conditional_verdicts(path, stored, fresh)


def _check_conditional_verdicts(path: object, stored: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """``conditional_coverage.csv``'s exact test per class and cohort: ``p_value``,
    ``p_adjusted`` and ``below`` are those the predictions, the splits and run.json's
    settings give (recomputed in ``fresh``), within a relative 1e-6."""
    columns = ["p_value", "p_adjusted"]
    missing = [c for c in [*columns, "below"] if c not in stored.columns]
    if missing:
        msg = f"{path}: has the exact test's columns only in part; missing {missing}"
        raise RunFolderError(msg)
    _numeric(path, stored, columns)
    keys = ["strategy", "classifier", "by", "value"]

    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        out = frame[[*keys, *columns, "below"]].astype({"value": str})
        text = out["below"].astype(str).str.strip().str.lower()
        out["below"] = text.map({"true": "True", "false": "False", "1": "True", "0": "False"})
        return out.fillna({"below": "no test"})

    merged = keyed(fresh).merge(keyed(stored), on=keys, how="inner", suffixes=("", "_file"))
    wrong = np.zeros(len(merged), dtype=bool)
    for column in columns:
        a = merged[column].to_numpy(dtype=float)
        b = merged[f"{column}_file"].to_numpy(dtype=float)
        wrong |= ~(np.isclose(a, b, rtol=1e-6, atol=1e-12) | (np.isnan(a) & np.isnan(b)))
    wrong |= (merged["below"] != merged["below_file"]).to_numpy()
    i = _first(wrong)
    if i is not None:
        r = merged.iloc[i]
        msg = (
            f"{path}: {r['strategy']} / {r['classifier']} {r['by']} {_show(r['value'])} has "
            f"p_value {r['p_value_file']!r}, p_adjusted {r['p_adjusted_file']!r}, below "
            f"{r['below_file']}; the predictions, splits.parquet and run.json's user_level, "
            f"user_correction and user_family give {r['p_value']!r}, {r['p_adjusted']!r}, "
            f"{r['below']}"
        )
        raise RunFolderError(msg[:600])


def check_user_validity(path: object, stored: pd.DataFrame, rows: pd.DataFrame) -> None:
    """``user_validity.csv``: its row counts are the predictions', its adjusted
    p-values the Benjamini-Hochberg adjustment of its p-values, and ``flagged``
    says whether the adjusted value is at most 0.05."""
    _numeric(path, stored, ["n", "statistic", "pvalue", "pvalue_bh"])
    p = stored["pvalue"].to_numpy(dtype=float)
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        msg = f"{path}: pvalue must be in [0, 1]; found {p[:5].tolist()}"
        raise RunFolderError(msg)
    keys = ["strategy", "classifier", "user"]
    fresh = (
        pd.DataFrame(
            {
                "strategy": frame_column(rows["strategy"]),
                "classifier": frame_column(rows["classifier"]),
                "user": frame_column(user_texts(rows["userid"])),
            }
        )
        .groupby(keys, sort=False)
        .size()
        .rename("n_rows")
        .reset_index()
    )
    table = stored.assign(user=user_texts(stored["user"]))
    merged = table.merge(fresh, on=keys, how="outer", indicator=True)
    bad = merged[(merged["_merge"] != "both") | (merged["n"] != merged["n_rows"])]
    if len(bad):
        r = bad.iloc[0]
        msg = (
            f"{path}: {r['strategy']} / {r['classifier']} user {r['user']} has n={r['n']}; "
            f"predictions.parquet gives {r['n_rows']} rows with a p-value"
        )
        raise RunFolderError(msg[:600])
    for (s, c), group in table.groupby(["strategy", "classifier"], sort=False):
        adjusted = benjamini_hochberg(group["pvalue"].to_numpy(dtype=float))
        stored_bh = group["pvalue_bh"].to_numpy(dtype=float)
        flagged = group["flagged"].astype(str).str.lower().isin(["true", "1"]).to_numpy()
        wrong = np.flatnonzero(
            ~np.isclose(adjusted, stored_bh, rtol=1e-6, atol=1e-12)
            | (flagged != (stored_bh <= 0.05))
        )
        if wrong.size:
            i = int(wrong[0])
            msg = (
                f"{path}: {s} / {c} user {group['user'].iloc[i]}: pvalue_bh "
                f"{stored_bh[i]!r} and flagged {bool(flagged[i])} do not follow from the "
                f"p-values (Benjamini-Hochberg gives {adjusted[i]!r}, flagged when <= 0.05)"
            )
            raise RunFolderError(msg[:600])


def check_user_verdicts(path: object, stored: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """``user_coverage.csv``: the exact test's ``expected_covered``, ``p_value``,
    ``p_adjusted`` and ``below`` are those the predictions, the splits and
    run.json's settings give (recomputed in ``fresh``), within a relative 1e-6."""
    columns = ["expected_covered", "p_value", "p_adjusted"]
    _numeric(path, stored, columns)
    keys = ["strategy", "classifier", "user"]

    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        out = frame[[*keys, *columns, "below"]].copy()
        out["user"] = user_texts(out["user"])
        text = out["below"].astype(str).str.strip().str.lower()
        out["below"] = text.map({"true": "True", "false": "False", "1": "True", "0": "False"})
        return out.fillna({"below": "no verdict"})

    merged = keyed(fresh).merge(keyed(stored), on=keys, how="outer", suffixes=("", "_file"))
    wrong = np.zeros(len(merged), dtype=bool)
    for column in columns:
        a = merged[column].to_numpy(dtype=float)
        b = merged[f"{column}_file"].to_numpy(dtype=float)
        wrong |= ~(np.isclose(a, b, rtol=1e-6, atol=1e-12) | (np.isnan(a) & np.isnan(b)))
    wrong |= (merged["below"] != merged["below_file"]).to_numpy()
    i = _first(wrong)
    if i is not None:
        r = merged.iloc[i]
        msg = (
            f"{path}: {r['strategy']} / {r['classifier']} user {r['user']} has p_value "
            f"{r['p_value_file']!r}, p_adjusted {r['p_adjusted_file']!r}, below "
            f"{r['below_file']}; the predictions, splits.parquet and run.json's user_level, "
            f"user_correction and user_combine give {r['p_value']!r}, {r['p_adjusted']!r}, "
            f"{r['below']}"
        )
        raise RunFolderError(msg[:600])
