"""Differential check of mueval against the reference runner on MAPIE 0.8.6.

Used by ``tests/test_reference_mapie086.py`` (a few iterations) and by
``benchmarks/reference_diff.py`` (the full 20 iterations). Both sides get the
same feature table; :func:`compare` lists every disagreement, for every
strategy, classifier, iteration and user:

- the test rows (as a set of table positions, and in order);
- the point predictions;
- the prediction sets, where a difference names the row, both thresholds and
  the class probability on both sides;
- the p-values;
- every metric per (strategy, classifier, iteration, user), and the mean and SD
  over iterations of the summary table.

Probabilities are compared too: only SVC's (libsvm's Platt scaling) are allowed
to differ, in the last bits, between scikit-learn versions; a set difference
is excused only where that difference puts the class probability on the other
side of the threshold.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mueval.data.table import Table
from mueval.evaluation.aggregate import splits_frame, summary_frame
from mueval.evaluation.records import EvalConfig, EvalResult
from mueval.evaluation.runner import run
from mueval.names import METRICS as ALL_METRICS
from tests.reference.sidevenv import RUNNER

#: The metrics both sides compute (the study's fourteen): mueval's, less the
#: HAR benchmark's weighted F1 and the textbook criteria the study did not report.
METRICS: tuple[str, ...] = tuple(
    m for m in ALL_METRICS if m not in ("weighted_F1", "OF_textbook", "OU_textbook")
)

#: Probability differences allowed for SVC between scikit-learn versions.
SVM_PROBA_TOLERANCE = 1e-9


@dataclass
class Reference:
    """What the reference runner wrote."""

    classes: list[str]
    groups: pd.DataFrame
    metrics: np.ndarray
    summary: dict
    versions: dict
    rows: dict[str, np.ndarray]


@dataclass
class Differences:
    """Every disagreement found, by kind; empty lists mean agreement."""

    rows: list[str] = field(default_factory=list)
    predictions: list[str] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)
    excused_sets: list[str] = field(default_factory=list)
    pvalues: list[str] = field(default_factory=list)
    probabilities: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    set_rows_by_strategy: dict[str, int] = field(default_factory=dict)
    compared_rows_by_strategy: dict[str, int] = field(default_factory=dict)

    def failures(self) -> list[str]:
        """Every difference that is not excused, one line each."""
        return [
            *self.rows,
            *self.predictions,
            *self.sets,
            *self.pvalues,
            *self.probabilities,
            *self.metrics,
            *self.summary,
        ]


def export_table(table: Table, path: Path) -> Path:
    """Write the table as the runner reads it: X, label names and users in row order."""
    labels = np.asarray(table.classes, dtype=str)[table.y]
    np.savez(path, X=table.X, labels=labels, users=np.asarray(table.users))
    return path


def run_reference(
    python: Path,
    table_npz: Path,
    out: Path,
    *,
    iterations: int,
    strategies: Sequence[str],
    classifiers: Sequence[str],
    timeout: float = 3600,
) -> Reference:
    """Run the reference runner in the side environment and read what it wrote."""
    command = [
        str(python),
        str(RUNNER),
        str(table_npz),
        str(out),
        "--iterations",
        str(iterations),
        "--strategies",
        ",".join(strategies),
        "--classifiers",
        ",".join(classifiers),
    ]
    # One OpenMP thread, as mueval's tasks run: among training rows at exactly the
    # same distance, KNN's threads decide which are the neighbours.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
    if proc.returncode != 0:
        message = f"reference runner failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        raise RuntimeError(message)
    data = np.load(out, allow_pickle=False)
    info = json.loads(str(data["info"]))
    groups = pd.DataFrame(
        info["groups"],
        columns=["strategy", "classifier", "iteration", "user", "n_train", "n_cal", "threshold"],
    )
    rows = {k: data[k] for k in ("key", "row", "y_pred", "sets", "pvalues", "proba")}
    return Reference(
        classes=info["classes"],
        groups=groups,
        metrics=np.asarray(data["metrics"]),
        summary=info["summary"],
        versions=info["versions"],
        rows=rows,
    )


def run_ours(
    table: Table,
    *,
    iterations: int,
    strategies: Sequence[str],
    classifiers: Sequence[str],
    threshold: str = "study",
    jobs: int = 1,
) -> tuple[list[EvalResult], pd.DataFrame, pd.DataFrame]:
    """mueval's results, its per-split metrics and its summary table."""
    config = EvalConfig(
        strategies=tuple(strategies),
        classifiers=tuple(classifiers),
        iterations=iterations,
        threshold=threshold,
    )
    output = run(table.X, table.y, table.users, table.classes, config, jobs=jobs, progress=False)
    splits = splits_frame(output.results)
    return output.results, splits, summary_frame(splits)


def _where(strategy: str, classifier: str, iteration: int, user: int) -> str:
    who = "all users" if user < 0 else f"user {user}"
    return f"{strategy}/{classifier} iteration {iteration} {who}"


def _same(a: float, b: float) -> bool:
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return bool(np.isclose(a, b, rtol=1e-9, atol=1e-12))


def _compare_sets(
    where: str,
    result: EvalResult,
    ref: Reference,
    picked: np.ndarray,
    q_ref: float,
    classes: Sequence[str],
    out: Differences,
) -> None:
    ours, theirs = result.sets, ref.rows["sets"][picked]
    differing = np.flatnonzero((ours != theirs).any(axis=1))
    out.set_rows_by_strategy[result.strategy] = out.set_rows_by_strategy.get(
        result.strategy, 0
    ) + len(differing)
    for i in differing:
        for c in np.flatnonzero(ours[i] != theirs[i]):
            p_ours, p_ref = result.proba[i, c], ref.rows["proba"][picked][i, c]
            line = (
                f"{where}, table row {result.rows[i]}, class {classes[c]!r}: in our set "
                f"{bool(ours[i, c])}, in the reference's {bool(theirs[i, c])}; thresholds "
                f"ours {result.threshold!r}, reference {q_ref!r}; probability ours "
                f"{float(p_ours)!r}, reference {float(p_ref)!r}"
            )
            # SVC's probabilities may differ in the last bits between scikit-learn
            # versions; that excuses a set difference only when it straddles the bound.
            bound = 1.0 - q_ref
            straddles = (p_ours - bound) * (p_ref - bound) <= 0
            if (
                result.classifier == "svm"
                and abs(p_ours - p_ref) <= SVM_PROBA_TOLERANCE
                and straddles
            ):
                out.excused_sets.append(line)
            else:
                out.sets.append(line)


def _compare_group(
    result: EvalResult,
    ref: Reference,
    group_index: int,
    q_ref: float,
    classes: Sequence[str],
    out: Differences,
) -> None:
    user = -1 if result.user is None else result.user
    where = _where(result.strategy, result.classifier, result.iteration, user)
    picked = np.flatnonzero(ref.rows["key"] == group_index)
    if not np.array_equal(ref.rows["row"][picked], result.rows):
        out.rows.append(f"{where}: test rows differ (or are in another order)")
        return
    out.compared_rows_by_strategy[result.strategy] = out.compared_rows_by_strategy.get(
        result.strategy, 0
    ) + len(picked)
    proba_gap = np.abs(ref.rows["proba"][picked] - result.proba).max(initial=0.0)
    allowed = SVM_PROBA_TOLERANCE if result.classifier == "svm" else 0.0
    if proba_gap > allowed:
        out.probabilities.append(f"{where}: probabilities differ by up to {proba_gap:.3g}")
    bad = np.flatnonzero(ref.rows["y_pred"][picked] != result.y_pred)
    for i in bad[:5]:
        out.predictions.append(
            f"{where}, table row {result.rows[i]}: predicted {classes[result.y_pred[i]]!r}, "
            f"reference {classes[ref.rows['y_pred'][picked][i]]!r}"
        )
    _compare_sets(where, result, ref, picked, q_ref, classes, out)
    gap = np.flatnonzero((ref.rows["pvalues"][picked] != result.pvalues).any(axis=1))
    for i in gap[:5]:
        out.pvalues.append(
            f"{where}, table row {result.rows[i]}: p-values {result.pvalues[i].tolist()} "
            f"against {ref.rows['pvalues'][picked][i].tolist()}"
        )


def compare(
    table: Table,
    ref: Reference,
    results: Sequence[EvalResult],
    splits: pd.DataFrame,
    summary: pd.DataFrame,
) -> Differences:
    """Every difference between mueval's run and the reference's."""
    out = Differences()
    if list(ref.classes) != list(table.classes):
        out.rows.append(f"classes differ: {ref.classes} against {table.classes}")
        return out
    index = {
        (g.strategy, g.classifier, int(g.iteration), int(g.user)): i
        for i, g in enumerate(ref.groups.itertuples())
    }
    if len(index) != len(results):
        out.rows.append(f"{len(results)} evaluated groups against {len(index)} in the reference")
    for result in results:
        key = (
            result.strategy,
            result.classifier,
            result.iteration,
            -1 if result.user is None else result.user,
        )
        if key not in index:
            out.rows.append(f"{_where(*key)}: missing from the reference")
            continue
        g = index[key]
        _compare_group(result, ref, g, float(ref.groups.threshold[g]), table.classes, out)
    _compare_metrics(ref, index, splits, out)
    _compare_summary(ref, summary, out)
    return out


def _compare_metrics(ref: Reference, index: dict, splits: pd.DataFrame, out: Differences) -> None:
    for row in splits.itertuples(index=False):
        user = -1 if pd.isna(row.user) else int(row.user)
        key = (row.strategy, row.classifier, int(row.iteration), user)
        if key not in index:
            continue
        theirs = ref.metrics[index[key]]
        for m, value in zip(METRICS, theirs):
            ours = float(getattr(row, m))
            if not _same(ours, float(value)):
                out.metrics.append(f"{_where(*key)}: {m} {ours!r} against {float(value)!r}")


def _compare_summary(ref: Reference, summary: pd.DataFrame, out: Differences) -> None:
    for name, values in ref.summary.items():
        strategy, classifier = name.split("/")
        part = summary[(summary.strategy == strategy) & (summary.classifier == classifier)]
        by_metric = part.set_index("metric")
        for m, mean, sd in zip(METRICS, values["mean"], values["sd"]):
            ours_mean = float(by_metric.loc[m, "mean"])
            ours_sd = float(by_metric.loc[m, "sd"])
            if not (_same(ours_mean, float(mean)) and _same(ours_sd, float(sd))):
                out.summary.append(
                    f"{name} {m}: mean±SD {ours_mean!r}±{ours_sd!r} against {mean!r}±{sd!r}"
                )
