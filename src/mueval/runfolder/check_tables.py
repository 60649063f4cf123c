"""The consistency of a run folder's tables with its predictions and each other.

This module owns checks 3 and 4 of :mod:`mueval.runfolder.consistency`, and the
bounds that come before them: the row counts of ``splits.parquet`` within the
rows they describe (:func:`check_counts`), each split against its prediction
rows (:func:`check_splits`), the per-class calibration counts
(:func:`check_class_cells`), and ``summary.csv`` aggregated again from
``splits.parquet`` and ``diagnostics.parquet`` (:func:`check_summary`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from mueval.data.table import SCORES_ENV, max_score_cells
from mueval.data.users import user_texts
from mueval.names import FULL_DIAGNOSTICS, METRICS, STRATEGIES, is_pooled
from mueval.runfolder.checks import (
    GROUP,
    check_codes_of,
    check_numeric,
    check_whole,
    close_enough,
    first_wrong,
    show,
)
from mueval.runfolder.records import RunFolder, RunFolderError

__all__ = ["check_class_cells", "check_counts", "check_splits", "check_summary"]


def check_splits(run: RunFolder) -> None:
    """Per split: coverage, setsize and n_test are what the prediction rows give."""
    path = run.path / "splits.parquet"
    check_numeric(path, run.splits, ["iteration", "seed", "n_test", "n_cal", "coverage", "setsize"])
    preds = run.predictions
    grouped = (
        pd.DataFrame(
            {
                **{c: preds[c] for c in GROUP},
                "user": preds["target_user"],
                "covered": preds["covered"].astype(float),
                "size": preds["set_size"].astype(float),
            }
        )
        .groupby([*GROUP, "user"], dropna=False, sort=False)
        .agg(p_coverage=("covered", "mean"), p_setsize=("size", "mean"), p_n=("covered", "size"))
        .reset_index()
    )
    grouped["user"] = user_texts(grouped["user"])
    splits = run.splits[[*GROUP, "user", "coverage", "setsize", "n_test"]].copy()
    splits["user"] = user_texts(splits["user"])
    twice = splits.duplicated([*GROUP, "user"])
    if twice.any():
        first = splits[twice].iloc[0]
        msg = (
            f"{path}: {first['strategy']}/{first['classifier']} iteration {first['iteration']} "
            f"user {first['user'] or '(none, MM)'} appears twice"
        )
        raise RunFolderError(msg)
    both = splits.merge(grouped, on=[*GROUP, "user"], how="outer", indicator="side")
    # The rows' fields are numbers or text as merged (pandas types them as any scalar).
    merged: Iterable[Any] = both.itertuples(index=False)
    for r in merged:
        where = f"{r.strategy}/{r.classifier} iteration {r.iteration} user {r.user or '(none, MM)'}"
        contradiction = _split_contradiction(r, where)
        if contradiction:
            raise RunFolderError(f"{path}: {contradiction}")


def _split_contradiction(r: Any, where: str) -> str | None:
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
        if not close_enough(stored, computed):
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
    per_it = splits.groupby(GROUP, sort=False)[metrics].mean().reset_index()
    if diagnostics is not None and extra:
        per_it = per_it.merge(diagnostics[[*GROUP, *extra]], on=GROUP, how="left")
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
    gone = [c for c in [*GROUP, *wanted] if c not in run.diagnostics.columns]
    if gone:
        msg = f"{path}: missing columns {gone}, which summary.csv reports"
        raise RunFolderError(msg)
    check_codes_of(path, run.diagnostics)
    check_numeric(path, run.diagnostics, ["iteration", *wanted])
    if run.diagnostics.duplicated(GROUP).any():
        r = run.diagnostics[run.diagnostics.duplicated(GROUP)].iloc[0]
        msg = f"{path}: {r['strategy']}/{r['classifier']} iteration {r['iteration']} appears twice"
        raise RunFolderError(msg)
    return wanted


def check_summary(run: RunFolder) -> None:
    """Every summary row of a metric splits.parquet holds is recomputed and compared."""
    path = run.path / "summary.csv"
    summary = run.summary
    check_numeric(path, summary, ["mean", "sd", "n"])
    check_whole(path, summary, "n")
    keys = ["strategy", "classifier", "metric"]
    twice = summary.duplicated(keys)
    if twice.any():
        first = summary[twice].iloc[0]
        msg = (
            f"{path}: {first['metric']} of {first['strategy']}/{first['classifier']} appears twice"
        )
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
    _check_every_metric(path, run)
    shared = set(summary["metric"]) & set(run.splits.columns)
    metrics = [m for m in dict.fromkeys(summary["metric"]) if m in shared]
    check_numeric(run.path / "splits.parquet", run.splits, metrics)
    extra = _diagnostic_metrics(
        run, [m for m in dict.fromkeys(summary["metric"]) if m not in shared]
    )
    recomputed = _recompute_summary(run.splits, metrics, run.diagnostics, extra)
    both = summary.merge(recomputed, on=keys, how="inner")
    stored_rows: Iterable[Any] = both.itertuples(index=False)
    for r in stored_rows:
        where = f"{r.metric} of {r.strategy}/{r.classifier}"
        if int(r.n) != r.r_n:
            msg = (
                f"{path}: {where} counts n = {r.n} iterations, but splits.parquet has "
                f"{r.r_n} with a defined value"
            )
            raise RunFolderError(msg)
        if close_enough(r.mean, r.s_mean) and close_enough(r.sd, r.s_sd):
            continue  # undefined iterations skipped: mueval before the study's rule
        for name, stored, computed in (("mean", r.mean, r.r_mean), ("sd", r.sd, r.r_sd)):
            if not close_enough(stored, computed):
                msg = (
                    f"{path}: {where} has {name} {stored:.6g}, but splits.parquet gives "
                    f"{computed:.6g} (mean over users within each iteration, then over "
                    f"{r.r_n} iterations)"
                )
                raise RunFolderError(msg)


def _check_every_metric(path: object, run: RunFolder) -> None:
    """Each (strategy, classifier) has a row of every metric: ``mueval evaluate`` writes
    the study's metrics of splits.parquet and the diagnostics of any pair for every
    pair, so a row gone (and a table quietly without it) is an edit."""
    summary = run.summary
    study = [m for m in METRICS if m in run.splits.columns]
    diagnostics = [m for m in FULL_DIAGNOSTICS if m in set(summary["metric"])]
    required = [*study, *diagnostics]
    for (s, c), group in summary.groupby(["strategy", "classifier"], sort=False):
        missing = [m for m in required if m not in set(group["metric"])]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            msg = (
                f"{path}: has no {missing[0]} row for {s}/{c}{more}; mueval evaluate writes "
                "every metric for every strategy and classifier"
            )
            raise RunFolderError(msg)


#: The row counts of splits.parquet, in the order a split's rows are drawn.
_COUNTS = ("n_train", "n_cal", "n_test")


def check_counts(run: RunFolder) -> None:
    """Row counts bounded by the rows they describe, before anything is sized by them.

    The per-user verdicts allocate arrays of ``n_cal`` values: a splits file
    saying 200 million would ask for gigabytes. A run's table held at most
    :func:`~mueval.data.table.max_score_cells` rows x classes (``mueval
    evaluate`` refuses more), so ``dataset.n_rows`` is bounded by it. A
    split's test rows are rows of that table that it neither trains nor
    calibrates on, so ``n_train + n_test`` and ``n_cal + n_test`` are each at
    most ``n_rows``; training and calibration rows may be the same rows (UXC
    calibrates on the out-of-fold rows of the models it trains); and its
    test rows are rows of ``predictions.parquet``.
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
    check_numeric(path, run.splits, present)
    counts = {c: pd.to_numeric(run.splits[c]).to_numpy(dtype=float) for c in present}
    for column, values in counts.items():
        bad = np.flatnonzero(np.isfinite(values) & ((values < 0) | (values != np.round(values))))
        if bad.size:
            i = int(bad[0])
            msg = f"{path}: row {i}: {column} is {float(values[i])!r}; expected a whole number >= 0"
            raise RunFolderError(msg)
    what = f"dataset.n_rows {bound:,}" if declared is not None else f"the {bound:,} a run holds"
    for pair in (("n_train", "n_test"), ("n_cal", "n_test")):
        given = [c for c in pair if c in counts]
        if not given:
            continue
        total = np.nansum(np.vstack([counts[c] for c in given]), axis=0)
        row = first_wrong(total > bound)
        if row is not None:
            shown = ", ".join(f"{c} {counts[c][row]:,.0f}" for c in given)
            verb = "adds" if len(given) == 1 else "add"
            msg = f"{path}: row {row}: {shown} {verb} up to more than {what}"
            raise RunFolderError(msg)
    if "n_test" in counts:
        row = first_wrong(counts["n_test"] > len(run.predictions))
        if row is not None:
            msg = (
                f"{path}: row {row}: n_test is {counts['n_test'][row]:,.0f}, more than the "
                f"{len(run.predictions):,} rows of predictions.parquet"
            )
            raise RunFolderError(msg)


def check_run_record(run: RunFolder) -> None:
    """``run.json``'s iterations and users are those of the splits and predictions.

    ``config.iterations`` is the number of iterations splits.parquet holds;
    ``dataset.n_users`` is at least the users of the predictions, and each
    built-in strategy with a target user (every one but MM) makes every user a
    target. Edited, the report stated the file's numbers.
    """
    path = run.path / "run.json"
    stated = run.run["config"].get("iterations")
    if isinstance(stated, int) and not isinstance(stated, bool) and "iteration" in run.splits:
        found = int(run.splits["iteration"].nunique())
        if found != stated:
            msg = (
                f"{path}: config.iterations is {stated}, but splits.parquet holds {found} "
                "iteration(s)"
            )
            raise RunFolderError(msg)
    n_users = run.run["dataset"].get("n_users")
    if not isinstance(n_users, int) or isinstance(n_users, bool):
        return
    seen = int(run.predictions["userid"].nunique())
    if seen > n_users:
        msg = f"{path}: dataset.n_users is {n_users}, but predictions.parquet has {seen} users"
        raise RunFolderError(msg)
    targets = run.splits[run.splits["user"].notna()].groupby("strategy", sort=False)["user"]
    for strategy, count in targets.nunique().items():
        if strategy in STRATEGIES and not is_pooled(str(strategy)) and count != n_users:
            msg = (
                f"{path}: dataset.n_users is {n_users}, but {strategy} took {count} target "
                "user(s) in splits.parquet, where it takes every user"
            )
            raise RunFolderError(msg)


def check_class_cells(run: RunFolder) -> None:
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
                f"{where}: n_cal_class is {show(value)}; expected {n_classes} whole counts "
                "(one per class of run.json)"
            )
            raise RunFolderError(msg[:600])
        cell = row.get("n_cal_cell")
        if int(sizes.sum()) != int(row["n_cal"]) or (
            cell is not None and not pd.isna(cell) and int(sizes.min()) != int(cell)
        ):
            msg = (
                f"{where}: n_cal_class {show(value)} adds up to {int(sizes.sum())} with "
                f"smallest {int(sizes.min())}; n_cal is {row['n_cal']} and n_cal_cell {cell}"
            )
            raise RunFolderError(msg[:600])
