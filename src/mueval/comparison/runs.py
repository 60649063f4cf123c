"""Several run folders as one comparison: labels, merged tables, matched pairs, and
what is left out.

:func:`compare_runs` stacks the runs (:func:`merge_runs`), pairs each strategy
with itself in the other runs, tests every pair
(:func:`~mueval.comparison.significance.compare_strategies`), adjusts the
p-values (:func:`~mueval.comparison.tables.adjust_table`) and lists what has
nothing to be compared with (:func:`unmatched_lines`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mudata.display import plain
from mueval.comparison.significance import compare_strategies
from mueval.comparison.tables import adjust_table, check_adjust
from mueval.errors import DataError, UsageError
from mueval.runfolder import RunFolder

__all__ = [
    "UNSAVED",
    "Comparison",
    "compare_runs",
    "labels_of",
    "merge_runs",
    "run_labels",
    "unmatched_lines",
]

#: The path of a run that was never saved (:meth:`mueval.Run.folder`).
UNSAVED = Path("<unsaved run>")


def run_labels(paths: Sequence[Path]) -> list[str]:
    """One distinct label per run folder: its name, with as many parent folders as it
    takes to tell it from the others (``a/run`` and ``b/run``, not ``run`` twice).

    Parameters
    ----------
    paths : sequence of Path

    Returns
    -------
    list of str

    Raises
    ------
    UsageError
        The same folder is given twice.

    Examples
    --------
    >>> run_labels([Path("/x/a/run"), Path("/x/b/run"), Path("/x/other")])
    ['a/run', 'b/run', 'other']
    """
    real = [p.resolve() for p in paths]
    for i, r in enumerate(real):
        if r in real[:i]:
            msg = f"{paths[i]} is given twice (it is {r}); give each run folder once"
            raise UsageError(msg)
    depth = [1] * len(real)
    while True:
        labels = [
            _label("/".join(r.parts[-d:]).lstrip("/") or "/")
            for r, d in zip(real, depth, strict=True)
        ]
        clashes = {label for label in labels if labels.count(label) > 1}
        if not clashes:
            return labels
        for i, label in enumerate(labels):
            if label in clashes:
                depth[i] += 1


def _label(text: str) -> str:
    """A folder name as a label: escaped (``\\x1b``, ``\\u202e``) wherever it is shown,
    its own backslashes doubled so that two names never give one label (distinct
    folders reach distinct labels, and :func:`run_labels` ends)."""
    return plain(text.replace("\\", "\\\\"))


@dataclass
class Comparison:
    """The result of :func:`compare_runs`.

    Attributes
    ----------
    table : DataFrame
        As :func:`~mueval.comparison.significance.compare_strategies` returns it,
        adjusted (:func:`~mueval.comparison.tables.adjust_table`).
    labels : list of str
        One label per run.
    warnings : list of str
        Settings in which the runs differ (alpha, score, threshold, Mondrian).
    unmatched : list of str
        One line per strategy, classifier or pair left out of the table because
        the other side lacks it (:func:`unmatched_lines`).
    """

    table: pd.DataFrame
    labels: list[str]
    warnings: list[str]
    unmatched: list[str] = field(default_factory=list)


#: What a run folder written before a setting existed ran: deterministic scores
#: before --randomized, the protocol's seeds before --split-seeds. Runs that
#: differ in the split settings (split, user_folds, split_seeds) were scored
#: on other splits, so their iterations pair no common split.
_UNRECORDED: dict[str, object] = {"randomized": False, "split_seeds": "protocol"}


def labels_of(runs: Sequence[RunFolder]) -> list[str]:
    """A short label per run: its folder's distinguishing name, or ``run N`` unsaved."""
    saved = [r for r in runs if r.path != UNSAVED]
    labels = iter(run_labels([r.path for r in saved]))
    unsaved = iter(range(1, len(runs) + 1))
    return [next(labels) if r.path != UNSAVED else f"run {next(unsaved)}" for r in runs]


def merge_runs(
    runs: Sequence[RunFolder],
    labels: Sequence[str],
    *,
    strategies: Sequence[str] | None = None,
    classifiers: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, int, list[str]]:
    """Stack several runs of one dataset; a strategy found in more than one run is
    prefixed by its run's label, so that two runs never merge into one.

    ``strategies`` and ``classifiers`` (codes), when given, keep only those rows.

    Returns
    -------
    splits, predictions : DataFrame
    n_rows : int
        Rows of the dataset.
    warnings : list of str
        The settings in which the runs differ.

    Raises
    ------
    DataError
        The runs evaluate different datasets.
    """
    hashes = {r.run["dataset"].get("provenance_sha256") for r in runs}
    if len(hashes) > 1:
        names = ", ".join(
            f"{label}: {r.run['dataset'].get('name')}"
            for label, r in zip(labels, runs, strict=True)
        )
        msg = f"runs evaluate different datasets ({names}); compare runs of one dataset"
        raise DataError(msg)
    # Runs at other levels or with other scores answer other questions; comparing
    # them is allowed (that may be the point) but must not go unnoticed.
    notes = []
    for key in (
        "alpha",
        "score",
        "score_function",
        "randomized",
        "raps_lambda",
        "raps_k_reg",
        "threshold",
        "mondrian",
        "condition",
        "split",
        "user_folds",
        "split_seeds",
    ):
        default = _UNRECORDED.get(key)
        values = {str(r.run.get("config", {}).get(key, default)) for r in runs}
        if len(values) > 1:
            found = ", ".join(
                f"{label}: {r.run.get('config', {}).get(key, default)}"
                for label, r in zip(labels, runs, strict=True)
            )
            notes.append(f"the runs differ in {key} ({found})")
    kept = [_filtered(r, strategies, classifiers) for r in runs]
    seen: dict[str, int] = {}
    for sp, _ in kept:
        for s in set(sp["strategy"]):
            seen[s] = seen.get(s, 0) + 1
    splits, preds = [], []
    for label, (sp, pr) in zip(labels, kept, strict=True):
        if len(runs) > 1:
            rename = {s: f"{label}/{s}" for s in seen if seen[s] > 1}
            sp["strategy"] = sp["strategy"].replace(rename)
            pr["strategy"] = pr["strategy"].replace(rename)
        splits.append(sp)
        preds.append(pr)
    merged = pd.concat(splits, ignore_index=True), pd.concat(preds, ignore_index=True)
    return merged[0], merged[1], runs[0].n_rows, notes


def _filtered(
    run: RunFolder, strategies: Sequence[str] | None, classifiers: Sequence[str] | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run's splits and the prediction columns the tests read, filtered by code."""
    columns = ["strategy", "classifier", "iteration", "userid", "covered", "set_size"]
    sp, pr = run.splits, run.predictions[columns]
    if strategies is not None:
        sp, pr = sp[sp.strategy.isin(strategies)], pr[pr.strategy.isin(strategies)]
    if classifiers is not None:
        sp, pr = sp[sp.classifier.isin(classifiers)], pr[pr.classifier.isin(classifiers)]
    return sp.copy(), pr.copy()


def _matched_pairs(
    runs: Sequence[RunFolder],
    labels: Sequence[str],
    strategies: Sequence[str] | None,
    classifiers: Sequence[str] | None,
) -> list[tuple[str, str]]:
    """Each strategy against itself in every other run (labels as :func:`merge_runs`
    gives them), in the runs' order and the first run's strategy order."""
    present = [list(_held(r, strategies, classifiers)) for r in runs]
    order = list(dict.fromkeys(s for codes in present for s in codes))
    pairs = []
    for s in order:
        having = [label for label, codes in zip(labels, present, strict=True) if s in codes]
        pairs += [(f"{a}/{s}", f"{b}/{s}") for a, b in itertools.combinations(having, 2)]
    return pairs


def _held(
    run: RunFolder, strategies: Sequence[str] | None, classifiers: Sequence[str] | None
) -> dict[str, set[str]]:
    """strategy -> its classifiers in one run, after the filters."""
    pairs = run.splits[["strategy", "classifier"]].drop_duplicates()
    if strategies is not None:
        pairs = pairs[pairs.strategy.isin(strategies)]
    if classifiers is not None:
        pairs = pairs[pairs.classifier.isin(classifiers)]
    held: dict[str, set[str]] = {}
    for strategy, classifier in zip(pairs.strategy, pairs.classifier, strict=True):
        held.setdefault(strategy, set()).add(classifier)
    return held


def _only_in(what: str, code: str, having: list[str], labels: Sequence[str]) -> str:
    missing = [label for label in labels if label not in having]
    if len(having) == 1:
        return f"not compared: {what} {code} only in {having[0]}"
    return f"not compared: {what} {code} with {', '.join(missing)} (only in {', '.join(having)})"


def unmatched_lines(
    runs: Sequence[RunFolder],
    labels: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    *,
    strategies: Sequence[str] | None = None,
    classifiers: Sequence[str] | None = None,
    all_pairs: bool = False,
) -> list[str]:
    """What a comparison leaves out, one line each, instead of dropping it silently.

    Several runs: a classifier some run lacks (``not compared: classifier rf only
    in a``), and unless ``all_pairs``, a strategy some run lacks (it has nothing
    to be matched with there). Any number of runs: a pair of strategies whose
    two sides do not share a classifier the runs otherwise hold (``a/mm`` with
    ``nb``, ``b/mm`` without).

    Parameters
    ----------
    runs : sequence of RunFolder
    labels : sequence of str
        One per run, as :func:`labels_of` gives them.
    pairs : sequence of (str, str)
        The pairs compared, strategies named as :func:`merge_runs` names them.
    strategies, classifiers : sequence of str, optional
        The filters of the comparison.
    all_pairs : bool, default False

    Returns
    -------
    list of str
    """
    held = [_held(r, strategies, classifiers) for r in runs]
    lines: list[str] = []
    absent: set[tuple[str, str]] = set()  # (run label, classifier) said already
    if len(runs) > 1:
        every_c = list(dict.fromkeys(c for h in held for cs in h.values() for c in sorted(cs)))
        for c in every_c:
            having = [
                lab for lab, h in zip(labels, held, strict=True) if any(c in v for v in h.values())
            ]
            if len(having) < len(runs):
                lines.append(_only_in("classifier", c, having, labels))
                absent |= {(lab, c) for lab in labels if lab not in having}
        if not all_pairs:
            every_s = list(dict.fromkeys(s for h in held for s in h))
            for s in every_s:
                having = [lab for lab, h in zip(labels, held, strict=True) if s in h]
                if len(having) < len(runs):
                    line = _only_in("strategy", s, having, labels)
                    if len(having) == 1:
                        line += " (--all-pairs tests it against the other runs' strategies)"
                    lines.append(line)
    # The name merge_runs gives each (run, strategy), and the run it belongs to.
    seen: dict[str, int] = {}
    for h in held:
        for s in h:
            seen[s] = seen.get(s, 0) + 1
    owner: dict[str, tuple[str, set[str]]] = {}
    for label, h in zip(labels, held, strict=True):
        for s, cs in h.items():
            name = f"{label}/{s}" if len(runs) > 1 and seen[s] > 1 else s
            owner[name] = (label, cs)
    for sa, sb in pairs:
        if sa not in owner or sb not in owner:
            continue
        (la, ca), (lb, cb) = owner[sa], owner[sb]
        for c in sorted(ca ^ cb):
            lacking, holding = (sb, sa) if c in ca else (sa, sb)
            if ((lb if c in ca else la), c) in absent:
                continue  # the run lacks the classifier altogether: said above
            lines.append(
                f"not compared: {sa} against {sb} with classifier {c} "
                f"(evaluated under {holding}, not under {lacking})"
            )
    return lines


def compare_runs(
    runs: Sequence[RunFolder],
    *,
    metric: str = "coverage",
    strategies: Sequence[str] | None = None,
    classifiers: Sequence[str] | None = None,
    all_pairs: bool = False,
    adjust: str = "holm",
) -> Comparison:
    """:func:`~mueval.comparison.significance.compare_strategies` over one or more
    runs of one dataset.

    With one run, every pair of its strategies. With several, each strategy is
    matched with itself in the other runs (``a/uim`` against ``b/uim``), per
    classifier; ``all_pairs`` adds every mismatched pair (``a/uim`` against
    ``b/mm``, and the pairs within each run). What has nothing to be compared
    with (a classifier or strategy of one run only) is listed in
    :attr:`Comparison.unmatched`; the p-values are adjusted within each test
    (:func:`~mueval.comparison.tables.adjust_table`).

    Parameters
    ----------
    runs : sequence of RunFolder
    metric : str
        A per-split metric.
    strategies, classifiers : sequence of str, optional
        Codes to keep; default every one in the runs.
    all_pairs : bool, default False
        Several runs: every pair of strategies, not only the matched ones.
    adjust : {"holm", "none"}, default "holm"
        Multiple-comparison correction within each test: a comparison runs many
        tests at once, and Holm's keeps the chance of any false "significant"
        at the level whatever their dependence. The raw p-values stay in
        ``p_value`` and ``stars``.

    Raises
    ------
    UsageError
        A run folder given twice, a metric the runs do not hold, a strategy or
        classifier no run holds, or an unknown ``adjust``.
    DataError
        The runs evaluate different datasets, or hold nothing to compare (several
        runs without a strategy in common need ``all_pairs``).
    """
    labels = labels_of(runs)
    for what, asked, column in (
        ("strategy", strategies, "strategy"),
        ("classifier", classifiers, "classifier"),
    ):
        present = list(dict.fromkeys(v for r in runs for v in r.splits[column]))
        unknown = [a for a in asked or () if a not in present]
        if unknown:
            msg = f"{what} {', '.join(unknown)} not in the runs; they hold {', '.join(present)}"
            raise UsageError(msg)
    splits, preds, n_rows, notes = merge_runs(
        runs, labels, strategies=strategies, classifiers=classifiers
    )
    if metric not in splits.columns:
        msg = f"the runs have no per-split metric {metric!r}"
        raise UsageError(msg)
    pairs = (
        None
        if len(runs) == 1 or all_pairs
        else _matched_pairs(runs, labels, strategies, classifiers)
    )
    check_adjust(adjust)
    table = compare_strategies(splits, preds, n_rows, metric=metric, pairs=pairs)
    if table.empty and pairs is not None:
        held = "; ".join(
            f"{label}: {', '.join(dict.fromkeys(r.splits['strategy']))}"
            for label, r in zip(labels, runs, strict=True)
        )
        msg = (
            f"nothing to compare: the runs share no strategy evaluated with one classifier "
            f"({held}); give all_pairs=True to compare different strategies across runs"
        )
        raise DataError(msg, cli={"all_pairs=True": "--all-pairs"})
    if table.empty:
        found = ", ".join(dict.fromkeys(splits["strategy"])) or "none"
        where = [
            label if r.path == UNSAVED else str(r.path)
            for label, r in zip(labels, runs, strict=True)
        ]
        msg = (
            f"nothing to compare: expected at least two strategies evaluated with one "
            f"classifier in {', '.join(where)}, found strategies: {found} "
            "(run `mueval evaluate` with more than one --strategy, or give several runs)"
        )
        raise DataError(msg)
    if pairs is None:
        pairs = list(itertools.combinations(dict.fromkeys(splits["strategy"]), 2))
    unmatched = unmatched_lines(
        runs, labels, pairs, strategies=strategies, classifiers=classifiers, all_pairs=all_pairs
    )
    return Comparison(
        table=adjust_table(table, adjust), labels=labels, warnings=notes, unmatched=unmatched
    )
