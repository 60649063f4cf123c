"""Differential check of mueval against the reference runner on MAPIE 0.8.6.

Used by ``tests/project/test_reference_mapie086.py`` (a few iterations) and by
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

Probabilities are compared within :data:`PROBA_TOLERANCE` (1e-12): between
library versions they differ in the last bits (a changed summation order in
NumPy, SciPy's ``logsumexp`` or libsvm moves GaussianNB's and SVC's by up to
about 1e-14). Everything computed from them must agree exactly, except where a
difference that small decides it. Such a place is a *tie*, and every tie is
classified, counted and listed (:attr:`Differences.ties`):

- a point prediction, where the two largest probabilities of the row are
  within :data:`TIE_WINDOW` on both sides;
- a set member, where the class's score is within :data:`TIE_WINDOW` of the
  threshold on both sides, and the two thresholds agree within it;
- a p-value, where the two probabilities agree within the tolerance and the
  difference of the two counts of calibration scores
  ``>= s`` is at most the number of the reference's calibration scores within
  :data:`TIE_WINDOW` of ``s`` (the scores that last-bit differences can move
  across ``s``).

Any other difference is real and fails. The metrics of a group with a tie, and
the summary cells of a (strategy, classifier) with one, are compared all the
same; a difference there is excused (:attr:`Differences.excused_metrics`) only
because the tie decided it.
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

#: Largest probability difference allowed between the two sides, any classifier.
PROBA_TOLERANCE = 1e-12

#: How close a score must be to a threshold, or to a calibration score, for a
#: difference of PROBA_TOLERANCE on each side to put it on the other side.
TIE_WINDOW = 2 * PROBA_TOLERANCE


@dataclass
class Reference:
    """What the reference runner wrote."""

    classes: list[str]
    groups: pd.DataFrame
    metrics: np.ndarray
    summary: dict
    versions: dict
    rows: dict[str, np.ndarray]
    cal: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class Differences:
    """Every disagreement found, by kind; empty lists mean agreement."""

    rows: list[str] = field(default_factory=list)
    predictions: list[str] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)
    pvalues: list[str] = field(default_factory=list)
    probabilities: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    #: Differences decided by a last-bit probability difference, one line each.
    ties: list[str] = field(default_factory=list)
    #: Metric and summary differences of groups whose sets or predictions a tie moved.
    excused_metrics: list[str] = field(default_factory=list)
    set_rows_by_strategy: dict[str, int] = field(default_factory=dict)
    compared_rows_by_strategy: dict[str, int] = field(default_factory=dict)
    #: The largest probability difference seen, per classifier.
    proba_gap_by_classifier: dict[str, float] = field(default_factory=dict)
    #: (strategy, classifier, iteration, user) of every group with a tie.
    tied_groups: set[tuple] = field(default_factory=set)

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
        cal={"key": data["cal_key"], "scores": data["cal"]},
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


def _group_key(result: EvalResult) -> tuple:
    user = -1 if result.user is None else result.user
    return (result.strategy, result.classifier, result.iteration, user)


def _compare_predictions(
    where: str, result: EvalResult, ref_pred: np.ndarray, ref_proba: np.ndarray, classes, out
) -> None:
    """Point predictions: equal, or at a tie of the two largest probabilities."""
    for i in np.flatnonzero(ref_pred != result.y_pred):
        line = (
            f"{where}, table row {result.rows[i]}: predicted {classes[result.y_pred[i]]!r}, "
            f"reference {classes[ref_pred[i]]!r}"
        )
        top_ours = np.sort(result.proba[i])[-2:]
        top_ref = np.sort(ref_proba[i])[-2:]
        gap = max(top_ours[1] - top_ours[0], top_ref[1] - top_ref[0])
        if len(top_ours) == 2 and gap <= TIE_WINDOW:
            out.ties.append(f"prediction at a tie ({gap:.3g} between the top two): {line}")
            out.tied_groups.add(_group_key(result))
        else:
            out.predictions.append(line)


def _compare_sets(
    where: str,
    result: EvalResult,
    ref_sets: np.ndarray,
    ref_proba: np.ndarray,
    q_ref: float,
    classes: Sequence[str],
    out: Differences,
) -> None:
    """Set members: equal, or a score at a tie with the threshold on either side."""
    ours = result.sets
    differing = np.flatnonzero((ours != ref_sets).any(axis=1))
    out.set_rows_by_strategy[result.strategy] = out.set_rows_by_strategy.get(
        result.strategy, 0
    ) + len(differing)
    q_ours = float(result.threshold)
    for i in differing:
        for c in np.flatnonzero(ours[i] != ref_sets[i]):
            p_ours, p_ref = float(result.proba[i, c]), float(ref_proba[i, c])
            line = (
                f"{where}, table row {result.rows[i]}, class {classes[c]!r}: in our set "
                f"{bool(ours[i, c])}, in the reference's {bool(ref_sets[i, c])}; thresholds "
                f"ours {q_ours!r}, reference {q_ref!r}; probability ours "
                f"{p_ours!r}, reference {p_ref!r}"
            )
            # The LAC score of the class is 1 - p; the set holds it when the score
            # is at most the threshold (within the rule's own epsilon).
            distance = max(abs((1.0 - p_ours) - q_ours), abs((1.0 - p_ref) - q_ref))
            if abs(q_ours - q_ref) <= TIE_WINDOW and distance <= TIE_WINDOW:
                out.ties.append(f"set member at a tie ({distance:.3g} from the threshold): {line}")
                out.tied_groups.add(_group_key(result))
            else:
                out.sets.append(line)


def _compare_pvalues(
    where: str,
    result: EvalResult,
    ref_pvalues: np.ndarray,
    ref_proba: np.ndarray,
    cal_scores: np.ndarray,
    out: Differences,
) -> None:
    """P-values: equal, or their counts apart by no more than the tied calibration scores."""
    n = cal_scores.size
    for i, c in zip(*np.nonzero(ref_pvalues != result.pvalues)):
        count_ours = round(float(result.pvalues[i, c]) * (n + 1)) - 1
        count_ref = round(float(ref_pvalues[i, c]) * (n + 1)) - 1
        score = 1.0 - float(ref_proba[i, c])
        tied = int(np.count_nonzero(np.abs(cal_scores - score) <= TIE_WINDOW))
        line = (
            f"{where}, table row {result.rows[i]}, class {c}: p-value "
            f"{float(result.pvalues[i, c])!r} against {float(ref_pvalues[i, c])!r} "
            f"(counts {count_ours} and {count_ref} of {n})"
        )
        close = abs(float(result.proba[i, c]) - float(ref_proba[i, c])) <= PROBA_TOLERANCE
        if close and 0 < abs(count_ours - count_ref) <= tied:
            out.ties.append(f"p-value at a tie ({tied} calibration scores within reach): {line}")
            out.tied_groups.add(_group_key(result))
        else:
            out.pvalues.append(line)


def _compare_group(
    result: EvalResult,
    ref: Reference,
    group_index: int,
    q_ref: float,
    classes: Sequence[str],
    out: Differences,
) -> None:
    where = _where(*_group_key(result))
    picked = np.flatnonzero(ref.rows["key"] == group_index)
    if not np.array_equal(ref.rows["row"][picked], result.rows):
        out.rows.append(f"{where}: test rows differ (or are in another order)")
        return
    out.compared_rows_by_strategy[result.strategy] = out.compared_rows_by_strategy.get(
        result.strategy, 0
    ) + len(picked)
    ref_proba = ref.rows["proba"][picked]
    proba_gap = float(np.abs(ref_proba - result.proba).max(initial=0.0))
    seen = out.proba_gap_by_classifier.get(result.classifier, 0.0)
    out.proba_gap_by_classifier[result.classifier] = max(seen, proba_gap)
    if proba_gap > PROBA_TOLERANCE:
        out.probabilities.append(f"{where}: probabilities differ by up to {proba_gap:.3g}")
    _compare_predictions(where, result, ref.rows["y_pred"][picked], ref_proba, classes, out)
    _compare_sets(where, result, ref.rows["sets"][picked], ref_proba, q_ref, classes, out)
    cal_scores = ref.cal["scores"][ref.cal["key"] == group_index]
    _compare_pvalues(where, result, ref.rows["pvalues"][picked], ref_proba, cal_scores, out)


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
                line = f"{_where(*key)}: {m} {ours!r} against {float(value)!r}"
                excused = key in out.tied_groups
                (out.excused_metrics if excused else out.metrics).append(line)


def _compare_summary(ref: Reference, summary: pd.DataFrame, out: Differences) -> None:
    for name, values in ref.summary.items():
        strategy, classifier = name.split("/")
        part = summary[(summary.strategy == strategy) & (summary.classifier == classifier)]
        by_metric = part.set_index("metric")
        for m, mean, sd in zip(METRICS, values["mean"], values["sd"]):
            ours_mean = float(by_metric.loc[m, "mean"])
            ours_sd = float(by_metric.loc[m, "sd"])
            if not (_same(ours_mean, float(mean)) and _same(ours_sd, float(sd))):
                line = f"{name} {m}: mean±SD {ours_mean!r}±{ours_sd!r} against {mean!r}±{sd!r}"
                tied = any(g[:2] == (strategy, classifier) for g in out.tied_groups)
                (out.excused_metrics if tied else out.summary).append(line)
