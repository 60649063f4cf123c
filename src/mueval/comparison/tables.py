"""The comparison table adjusted and shaped: p-values corrected within each test,
the notes below the table, and the terminal's one line per pair.

:func:`~mueval.comparison.runs.compare_runs` adjusts the p-values for multiple
comparisons within each test (Holm's step-down over every pair and classifier of
that test, by default; :func:`adjust_table`): a comparison runs dozens of tests
at once, and the study, which corrected nothing, read its stars from raw
p-values. The raw p-value and its stars stay in the table beside the adjusted
ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mueval.comparison.significance import (
    CORRECTED_TEST,
    MIN_ITERATIONS,
    STUDY_TEST,
    WILCOXON_TEST,
    star_label,
)
from mueval.errors import UsageError
from mueval.guarantees.adjustment import adjust_pvalues
from mueval.names import COMPARE_ADJUSTMENTS

__all__ = [
    "adjust_statement",
    "adjust_table",
    "check_adjust",
    "table_notes",
    "wide_table",
]


def table_notes(table: pd.DataFrame) -> list[str]:
    """The few sentences a comparison table needs below it, each said once.

    A caution when t-tests rest on fewer than
    :data:`~mueval.comparison.significance.MIN_ITERATIONS` iterations,
    and one note per kind of library warning (scipy's "catastrophic cancellation"
    on near-identical samples, say) with the number of tests it concerns: the
    tables themselves never carry a library's sentence.

    Parameters
    ----------
    table : DataFrame
        :func:`~mueval.comparison.significance.compare_strategies` output.

    Returns
    -------
    list of str
    """
    notes: list[str] = []
    if "caution" in table.columns:
        few = table[table["caution"].astype(str) != ""]
        if len(few):
            n_it = sorted({int(n) for n in few["n"]})
            notes.append(
                f"caution (!): {len(few)} t-tests rest on {', '.join(map(str, n_it))} iterations "
                f"(fewer than {MIN_ITERATIONS}; 1-3 degrees of freedom): their variance comes "
                "from a handful of values and their p-values are unreliable; run more "
                "--iterations before reading them."
            )
    undefined = table[~np.isfinite(table["p_value"].astype(float))]
    reasons = undefined["note"].astype(str).str.split(";").str[0].replace("", "undefined")
    for reason, group in undefined.groupby(reasons, sort=True):
        tests = ", ".join(sorted(set(group["test"].str.split(" ").str[0])))
        notes.append(f"n/a in {len(group)} tests ({tests}): {reason}.")
    if "library_warning" in table.columns:
        said = table[table["library_warning"].astype(str) != ""]
        for text, group in said.groupby("library_warning", sort=True):
            tests = ", ".join(sorted(set(group["test"].str.split(" ").str[0])))
            notes.append(
                f"note: scipy warned in {len(group)} tests ({tests}): {text}. This happens "
                "when the two samples are nearly identical; the p-values of those rows are "
                "not to be trusted beyond 'no detectable difference'."
            )
    return notes


def check_adjust(adjust: str) -> str:
    """``adjust`` when it is one of :data:`mueval.names.COMPARE_ADJUSTMENTS`.

    Raises
    ------
    UsageError
        Any other value, named.
    """
    if adjust not in COMPARE_ADJUSTMENTS:
        msg = f"adjust must be one of {', '.join(COMPARE_ADJUSTMENTS)}; found {adjust!r}"
        raise UsageError(msg)
    return adjust


def adjust_table(table: pd.DataFrame, adjust: str = "holm") -> pd.DataFrame:
    """The table with its p-values adjusted for multiple comparisons, per test.

    The family of a test (the study's Welch test, the corrected t-test, the
    Wilcoxon test) is every row of that test: all its pairs of strategies and
    classifiers. The three tests ask one question of the same pairs in three
    ways, so they are three families, not one. Undefined (NaN) p-values are not
    counted in a family and stay NaN.

    Parameters
    ----------
    table : DataFrame
        :func:`~mueval.comparison.significance.compare_strategies` output.
    adjust : {"holm", "none"}
        Holm's step-down (:func:`~mueval.guarantees.adjustment.adjust_pvalues`:
        family-wise error at most the level, whatever the dependence between the
        tests), or none (the adjusted
        p-value is the raw one).

    Returns
    -------
    DataFrame
        A copy with the columns ``adjust``, ``family_size`` (the defined p-values
        of the row's test), ``p_adjusted`` and ``stars_adjusted`` added;
        ``p_value`` and ``stars`` are still the raw ones.

    Raises
    ------
    UsageError
        ``adjust`` is not one of :data:`mueval.names.COMPARE_ADJUSTMENTS`.

    Examples
    --------
    >>> t = pd.DataFrame({"test": ["w", "w", "w", "c"], "p_value": [0.01, 0.04, np.nan, 0.03]})
    >>> adjust_table(t)[["family_size", "p_adjusted"]].values.tolist()
    [[2.0, 0.02], [2.0, 0.04], [2.0, nan], [1.0, 0.03]]
    """
    check_adjust(adjust)
    out = table.copy()
    p = out["p_value"].to_numpy(dtype=float)
    adjusted = np.full(p.shape, np.nan)
    size = np.zeros(p.shape, dtype=np.int64)
    for rows in out.groupby("test", sort=False).indices.values():
        adjusted[rows] = adjust_pvalues(p[rows], adjust)
        size[rows] = np.isfinite(p[rows]).sum()
    out["adjust"] = adjust
    out["family_size"] = size
    out["p_adjusted"] = adjusted
    out["stars_adjusted"] = [star_label(v) for v in adjusted]
    return out


_SHORT_TESTS = {STUDY_TEST: "welch", CORRECTED_TEST: "corrected", WILCOXON_TEST: "wilcoxon"}


def adjust_statement(table: pd.DataFrame) -> str:
    """One sentence on the correction of an :func:`adjust_table` output: which,
    and the size of each test's family.

    Examples
    --------
    >>> t = pd.DataFrame({"test": [STUDY_TEST] * 2, "p_value": [0.01, 0.2],
    ...                   "classifier": ["nb", "rf"], "strategy_a": ["mm"] * 2,
    ...                   "strategy_b": ["ucm"] * 2})
    >>> adjust_statement(adjust_table(t))
    "p-values: raw/Holm-adjusted within each test, the stars the adjusted p-value's; family sizes (defined p-values of 1 pairs x 2 classifiers): welch 2."
    """
    adjust = str(table["adjust"].iloc[0]) if len(table) else "none"
    n_pairs = len(table.drop_duplicates(["strategy_a", "strategy_b"]))
    n_clf = table["classifier"].nunique()
    sizes = table.groupby("test", sort=False)["family_size"].first()
    family = ", ".join(f"{_SHORT_TESTS.get(str(t), str(t))} {int(n)}" for t, n in sizes.items())
    where = f"(defined p-values of {n_pairs} pairs x {n_clf} classifiers): {family}."
    if adjust == "none":
        return (
            "p-values: raw, not adjusted for multiple comparisons (--adjust none); "
            f"tests per family {where}"
        )
    name = {"holm": "Holm"}.get(adjust, adjust)
    return (
        f"p-values: raw/{name}-adjusted within each test, the stars the adjusted "
        f"p-value's; family sizes {where}"
    )


def _p_cell(row: pd.Series) -> str:
    if not np.isfinite(row["p_value"]):
        return "n/a"
    mark = "!" if str(row.get("caution", "")) else ""
    if str(row.get("adjust", "none")) != "none":
        # Both p-values; the stars are the adjusted one's.
        return f"{row['p_value']:.3g}/{row['p_adjusted']:.3g} {row['stars_adjusted']}{mark}"
    return f"{row['p_value']:.3g} {row['stars']}{mark}"


def wide_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (classifier, strategy_a, strategy_b), the three tests side by side.

    Each test's cell is ``p stars``, with ``!`` when the row carries a caution
    (a t-test over fewer than
    :data:`~mueval.comparison.significance.MIN_ITERATIONS` iterations); in a table
    adjusted by :func:`adjust_table` (other than ``none``), ``p/p_adjusted
    stars``, the stars of the adjusted p-value. The terminal's form of
    :func:`~mueval.comparison.significance.compare_strategies`'s table (three times shorter).

    Parameters
    ----------
    table : DataFrame
        :func:`~mueval.comparison.significance.compare_strategies` or :func:`adjust_table` output.

    Returns
    -------
    DataFrame
        Columns classifier, strategy_a, strategy_b, mean_a, mean_b, then one per
        test (``welch``, ``corrected``, ``wilcoxon``) and ``n_users``.
    """
    short = _SHORT_TESTS
    keys = ["classifier", "strategy_a", "strategy_b"]
    rows = []
    for key, group in table.groupby(keys, sort=False):
        first = group.iloc[0]
        row = dict(zip(keys, key, strict=True))
        row["mean_a"] = f"{first['mean_a']:.4g}"
        row["mean_b"] = f"{first['mean_b']:.4g}"
        for _, r in group.iterrows():
            row[short.get(r["test"], r["test"])] = _p_cell(r)
            if r["test"] == WILCOXON_TEST:
                row["n_users"] = int(r["n"])
        rows.append(row)
    columns = [*keys, "mean_a", "mean_b", "welch", "corrected", "wilcoxon", "n_users"]
    return pd.DataFrame(rows).reindex(columns=columns).fillna("")
