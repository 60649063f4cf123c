"""The consistency of a run folder's stored guarantees with their recomputation.

This module owns check 5 of :mod:`mueval.runfolder.consistency`, run by the
reader of the guarantees (:mod:`mueval.runfolder.guarantees`): each user's
cohort, the counts and exact tests of ``conditional_coverage.csv``,
``user_validity.csv``'s counts and adjustment, and the per-user verdicts of
``user_coverage.csv`` (one comparison, :func:`_check_verdicts`, for the verdicts
of both files).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pandas as pd

from mueval.data.frames import frame_column
from mueval.data.users import user_texts
from mueval.guarantees.validity import benjamini_hochberg
from mueval.runfolder.checks import check_numeric, first_wrong, show
from mueval.runfolder.records import RunFolderError

__all__ = [
    "check_conditional_coverage",
    "check_coverage_summary",
    "check_run_warnings",
    "check_user_cohorts",
    "check_user_validity",
    "check_user_verdicts",
]


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
    check_numeric(path, stored, [*counts, "coverage", "low", "high"])
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
        where = f"{r['strategy']} / {r['classifier']} {r['by']} {show(r['value'])}"
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


def check_user_validity(path: object, stored: pd.DataFrame, rows: pd.DataFrame) -> None:
    """``user_validity.csv``: its row counts are the predictions', its adjusted
    p-values the Benjamini-Hochberg adjustment of its p-values, and ``flagged``
    says whether the adjusted value is at most 0.05."""
    check_numeric(path, stored, ["n", "statistic", "pvalue", "pvalue_bh"])
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


def _check_conditional_verdicts(path: object, stored: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """``conditional_coverage.csv``'s exact test per class and cohort: ``p_value``,
    ``p_adjusted`` and ``below`` are those the predictions, the splits and run.json's
    settings give (recomputed in ``fresh``), within a relative 1e-6."""
    columns = ["p_value", "p_adjusted"]
    missing = [c for c in [*columns, "below"] if c not in stored.columns]
    if missing:
        msg = f"{path}: has the exact test's columns only in part; missing {missing}"
        raise RunFolderError(msg)
    _check_verdicts(
        path,
        stored,
        fresh,
        keys=["strategy", "classifier", "by", "value"],
        columns=columns,
        ids=lambda frame: frame.astype({"value": str}),
        unjudged="no test",
        how="inner",
        where=lambda r: f"{r['strategy']} / {r['classifier']} {r['by']} {show(r['value'])}",
        settings="user_family",
    )


def check_user_verdicts(path: object, stored: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """``user_coverage.csv``: the exact test's ``expected_covered``, ``p_value``,
    ``p_adjusted`` and ``below`` are those the predictions, the splits and
    run.json's settings give (recomputed in ``fresh``), within a relative 1e-6."""
    _check_verdicts(
        path,
        stored,
        fresh,
        keys=["strategy", "classifier", "user"],
        columns=["expected_covered", "p_value", "p_adjusted"],
        ids=lambda frame: frame.assign(user=user_texts(frame["user"])),
        unjudged="no verdict",
        how="outer",
        where=lambda r: f"{r['strategy']} / {r['classifier']} user {r['user']}",
        settings="user_combine",
    )


def check_coverage_summary(path: object, stored: pd.DataFrame, fresh: pd.DataFrame) -> None:
    """``coverage_summary.csv``: each (strategy, classifier)'s row is the one the checked
    per-user verdicts give (counts and flags exactly, numbers within a relative 1e-6).

    Edited (``n_below`` 0 for 3), the report showed the file's word for it.
    """
    keys = ["strategy", "classifier"]
    numbers = [c for c in fresh.columns if c not in (*keys, "worst_user", "pooled_below")]
    check_numeric(path, stored, numbers)
    left = fresh.assign(worst_user=user_texts(fresh["worst_user"]))
    right = stored.assign(worst_user=user_texts(stored["worst_user"]))
    merged = left.merge(right, on=keys, how="outer", suffixes=("", "_file"), indicator=True)
    for i in range(len(merged)):
        r = merged.iloc[i]
        where = f"{r['strategy']} / {r['classifier']}"
        if r["_merge"] != "both":
            side = "the file lacks it" if r["_merge"] == "left_only" else "the predictions lack it"
            raise RunFolderError(f"{path}: {where}: {side}")
        wrong = [
            c
            for c in numbers
            if not np.isclose(
                float(r[c]), float(r[f"{c}_file"]), rtol=1e-6, atol=1e-12, equal_nan=True
            )
        ]
        wrong += [
            c
            for c in ("worst_user", "pooled_below")
            if str(r[c]).strip().lower() != str(r[f"{c}_file"]).strip().lower()
        ]
        if wrong:
            c = wrong[0]
            msg = (
                f"{path}: {where} has {c} {_shown(r[f'{c}_file'])}; the per-user verdicts "
                f"of the predictions give {_shown(r[c])}"
            )
            raise RunFolderError(msg[:600])


def _shown(value: object) -> str:
    """A summary cell as the CSV writes it: a number plainly, text as shown elsewhere."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value) if isinstance(value, int | bool) else show(value)


def check_run_warnings(
    path: object, stored: list[dict[str, Any]], fresh: list[dict[str, Any]]
) -> None:
    """``run.json``'s ``warnings``: the same warnings (strategy, classifier, kind,
    severity) as the predictions give. Emptied, the report said "No warning"."""

    def keyed(warnings: list[dict[str, Any]]) -> dict[tuple[str, ...], dict[str, Any]]:
        return {
            (str(w["strategy"]), str(w["classifier"]), str(w["kind"]), str(w["severity"])): w
            for w in warnings
        }

    theirs, ours = keyed(stored), keyed(fresh)
    lacking = [k for k in ours if k not in theirs]
    if lacking:
        s, c, kind, severity = lacking[0]
        msg = (
            f"{path}: 'warnings' lack the {severity} {kind!r} of {s} / {c} that the "
            f"predictions give ({len(lacking)} missing): {ours[lacking[0]]['message']}"
        )
        raise RunFolderError(msg[:600])
    extra = [k for k in theirs if k not in ours]
    if extra:
        s, c, kind, severity = extra[0]
        msg = (
            f"{path}: 'warnings' hold a {severity} {kind!r} of {s} / {c} that the "
            f"predictions do not give"
        )
        raise RunFolderError(msg[:600])


#: How a stored ``below`` (text once read from a CSV) is compared.
_BELOW = {"true": "True", "false": "False", "1": "True", "0": "False"}


def _check_verdicts(
    path: object,
    stored: pd.DataFrame,
    fresh: pd.DataFrame,
    *,
    keys: list[str],
    columns: list[str],
    ids: Callable[[pd.DataFrame], pd.DataFrame],
    unjudged: str,
    how: Literal["inner", "outer"],
    where: Callable[[pd.Series], str],
    settings: str,
) -> None:
    """The stored exact tests (``columns`` and ``below``) against ``fresh``.

    Parameters
    ----------
    path : path
        The file, as its errors name it.
    stored, fresh : DataFrame
        The file's rows and those recomputed from the predictions.
    keys : list of str
        The columns naming one test (``user``, or ``by`` and ``value``).
    columns : list of str
        The numbers compared, within a relative 1e-6 (both undefined too).
    ids : callable
        Makes the keys of a frame comparable (text, as a CSV reads them).
    unjudged : str
        What an undefined ``below`` is compared as.
    how : {"inner", "outer"}
        The merge: ``outer`` makes a test present on one side only a mismatch.
    where : callable
        The merged row's name in the error.
    settings : str
        The run.json setting named beside ``user_level`` and ``user_correction``.
    """
    check_numeric(path, stored, columns)

    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        out = ids(frame[[*keys, *columns, "below"]].copy())
        text = out["below"].astype(str).str.strip().str.lower()
        out["below"] = text.map(_BELOW)
        return out.fillna({"below": unjudged})

    merged = keyed(fresh).merge(keyed(stored), on=keys, how=how, suffixes=("", "_file"))
    wrong = np.zeros(len(merged), dtype=bool)
    for column in columns:
        a = merged[column].to_numpy(dtype=float)
        b = merged[f"{column}_file"].to_numpy(dtype=float)
        wrong |= ~(np.isclose(a, b, rtol=1e-6, atol=1e-12) | (np.isnan(a) & np.isnan(b)))
    wrong |= (merged["below"] != merged["below_file"]).to_numpy()
    i = first_wrong(wrong)
    if i is not None:
        r = merged.iloc[i]
        msg = (
            f"{path}: {where(r)} has p_value "
            f"{r['p_value_file']!r}, p_adjusted {r['p_adjusted_file']!r}, below "
            f"{r['below_file']}; the predictions, splits.parquet and run.json's user_level, "
            f"user_correction and {settings} give {r['p_value']!r}, {r['p_adjusted']!r}, "
            f"{r['below']}"
        )
        raise RunFolderError(msg[:600])
