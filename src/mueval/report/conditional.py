"""Report sections for conditional coverage: coverage per class and per cohort of
users (``conditional_coverage.csv``), and the per-user validity test
(``user_validity.csv``).

Both are tables, no figures: a matrix of coverage with its Clopper-Pearson
interval per (strategy, classifier) and class or cohort, and per (strategy, classifier)
the users whose p-values the one-sided KS test rejects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from mueval.report.html import Section, note_html, table_html

__all__ = ["conditional_coverage_section", "validity_section"]

Namer = Callable[[str, str], tuple[str, str]]


def _cell(row: pd.Series) -> str:
    text = f"{row['coverage']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"
    # The mark is the exact test's verdict, never the interval's position.
    below = row.get("below")
    if below is None or pd.isna(below) or not bool(below):
        return text
    return f"{text} below target (adjusted p {float(row['p_adjusted']):.3g})"


def _matrix(
    table: pd.DataFrame, strategies: Sequence[str], classifiers: Sequence[str], name: Namer
) -> tuple[list[str], list[list[object]]]:
    """One row per (strategy, classifier), one column per value, in the file's order."""
    values = list(dict.fromkeys(table["value"].astype(str)))
    rows: list[list[object]] = []
    for s, c, sub in _per_task(table, strategies, classifiers):
        cells = {str(r["value"]): _cell(r) for _, r in sub.iterrows()}
        rows.append([*name(s, c), *(cells.get(v, "") for v in values)])
    return values, rows


def _per_task(
    table: pd.DataFrame, strategies: Sequence[str], classifiers: Sequence[str]
) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """``(strategy, classifier, rows)`` for every pair the table holds, in report order."""
    for s in strategies:
        for c in classifiers:
            sub = table[(table["strategy"] == s) & (table["classifier"] == c)]
            if not sub.empty:
                yield s, c, sub


def conditional_coverage_section(
    table: pd.DataFrame | None,
    config: dict,
    strategies: Sequence[str],
    classifiers: Sequence[str],
    *,
    target: float,
    name: Namer,
) -> Section | None:
    """Coverage per class, and per cohort of users when the run had cohorts.

    Parameters
    ----------
    table : DataFrame or None
        ``conditional_coverage.csv``; None for a folder without it.
    config : dict
        The run's configuration (``condition``, ``cohort_column``).
    strategies, classifiers : sequence of str
    target : float
        ``1 - alpha``.
    name : callable
        ``(strategy, classifier) -> (strategy label, classifier label)``.
    """
    if table is None or table.empty:
        return None
    condition = config.get("condition") or ("class" if config.get("mondrian") else "none")
    body = [
        note_html(
            f"Calibration conditioned on: {condition}. Coverage of the test rows of each class "
            "(true class) and, when the run had cohorts, of each cohort of users, pooled over "
            "users and iterations, with its exact 95 % (Clopper-Pearson) interval, a "
            "description of the observed rate. 'below target' marks a row whose covered "
            f"count is lower than exchangeability allows at the target {target:.2f}: the exact "
            "count test of the per-user verdicts, at the run's user level after its "
            "correction over the classes (cohorts) of its family. A cohort is tested under "
            "every calibration with a per-user verdict; a class only under class-conditional "
            "calibration: unconditional calibration promises the target only on average over "
            "classes, so a class row has no test there (mueval's documentation, "
            "per-user-guarantees, section 4)."
        )
    ]
    for by, title in (("class", "Coverage per class"), ("cohort", "Coverage per cohort of users")):
        part = table[table["by"].astype(str) == by]
        if part.empty:
            continue
        values, rows = _matrix(part, strategies, classifiers, name)
        if by == "cohort":
            column = config.get("cohort_column") or "cohort"
            title = f"{title} ({column})"
            users = part.groupby("value", sort=False)["n_users"].max()
            values_head = [f"{v} ({int(users[v])} users)" for v in values]
        else:
            values_head = values
        body.append(table_html(["strategy", "classifier", *values_head], rows, caption=title))
    return Section("Coverage per class and cohort", "conditional-coverage", body)


def validity_section(
    table: pd.DataFrame | None,
    strategies: Sequence[str],
    classifiers: Sequence[str],
    *,
    name: Namer,
    show: int = 8,
) -> Section | None:
    """The per-user validity test: users tested, users flagged, and who.

    Parameters
    ----------
    table : DataFrame or None
        ``user_validity.csv``; None for a folder without it.
    strategies, classifiers : sequence of str
    name : callable
        ``(strategy, classifier) -> (strategy label, classifier label)``.
    show : int
        Flagged users named per row.
    """
    if table is None or table.empty:
        return None
    rows = []
    for s, c, sub in _per_task(table, strategies, classifiers):
        flagged = sub[sub["flagged"].astype(str).str.lower().isin(["true", "1"])]
        flagged = flagged.sort_values("pvalue_bh", kind="stable")
        shown = flagged.head(show)
        named = ", ".join(
            f"{u} ({p:.3g})" for u, p in zip(shown["user"], shown["pvalue_bh"], strict=True)
        )
        smallest = float(np.min(sub["pvalue_bh"])) if len(sub) else float("nan")
        rows.append(
            [
                *name(s, c),
                "/".join(sorted(set(sub["method"].astype(str)))),
                len(sub),
                len(flagged),
                smallest,
                named or "none",
            ]
        )
    body = [
        note_html(
            "Is each user's calibration exchangeable with their test rows? A one-sided "
            "Kolmogorov-Smirnov test of the user's true-label p-values against the uniform "
            "distribution (H0: P(p <= t) <= t for all t). Method rank: the exact two-sample "
            "test of the test scores against their own calibration set, per iteration, "
            "combined over iterations by Bonferroni; method uniform (per-class calibration, "
            "and MM under cohorts): the one-sample test on the pooled p-values, a screen that "
            "flags too readily. The p-values are adjusted across the users of each strategy "
            "and classifier by Benjamini-Hochberg; a user is flagged when the adjusted value "
            "is at most 0.05 (mueval's documentation, per-user-guarantees, section 3)."
        ),
        table_html(
            [
                "strategy",
                "classifier",
                "method",
                "users tested",
                "users flagged",
                "smallest adjusted p",
                "flagged users (adjusted p)",
            ],
            rows,
            caption="Validity per user",
        ),
    ]
    return Section("Validity per user", "user-validity", body)
