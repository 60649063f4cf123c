""":func:`compare` runs strategy against strategy, and :func:`compare_guarantees`
their per-user guarantees side by side, from runs in memory or their folders.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from mueval.comparison.guarantees import compare_guarantees as compare_folders
from mueval.comparison.runs import compare_runs
from mueval.names import (
    parse_classifiers,
    parse_strategies,
)
from mueval.run import Run
from mueval.runfolder import (
    read_run_folder,
)

if TYPE_CHECKING:
    from mueval.comparison.guarantees import GuaranteeComparison

__all__ = ["compare", "compare_guarantees"]


def _as_list(value: Sequence[str] | str) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def compare(
    runs: Sequence[Run | str | Path],
    *,
    metric: str = "coverage",
    strategies: str | Sequence[str] | None = None,
    classifiers: str | Sequence[str] | None = None,
    all_pairs: bool = False,
    adjust: str = "holm",
) -> pd.DataFrame:
    """Test the differences between strategies in one or more runs of one dataset.

    One run: every pair of its strategies, per classifier. Several runs: each
    strategy against itself in the other runs (``all_pairs=True``: every pair).
    Three labelled tests per pair: the study's Welch t-test over iterations
    (uncorrected), Nadeau and Bengio's corrected resampled t-test (paired by
    seed) and a Wilcoxon signed-rank test over users. A strategy found in
    several runs is prefixed with its run's label.

    Parameters
    ----------
    runs : sequence of Run, str or Path
        Runs in memory or run folders.
    metric : str
        A per-split metric (a column of ``Run.splits``).
    strategies, classifiers : str or sequence of str, optional
        Codes (comma lists and aliases allowed) to compare; default every one in the runs.
    all_pairs : bool, default False
        Several runs: also the mismatched pairs (``a/uim`` against ``b/mm``).
    adjust : {"holm", "none"}, default "holm"
        Multiple-comparison correction of the p-values within each test, over
        all its pairs and classifiers (``p_adjusted``; ``p_value`` stays raw).

    Returns
    -------
    DataFrame
        One row per (classifier, strategy_a, strategy_b, test): means, statistic,
        df, p_value, stars, n, note, library_warning, caution, and adjust,
        family_size, p_adjusted, stars_adjusted.

    Raises
    ------
    mueval.errors.UsageError
        A strategy or classifier that is no code, or that no run holds.
    mueval.errors.DataError
        The runs evaluate different datasets, or hold nothing to compare.
    """
    folders = [r.folder() if isinstance(r, Run) else read_run_folder(r) for r in runs]
    present = {c for f in folders for c in pd.unique(f.splits["classifier"])}
    known = {s for f in folders for s in pd.unique(f.splits["strategy"])}
    return compare_runs(
        folders,
        metric=metric,
        strategies=None if strategies is None else parse_strategies(strategies, known),
        classifiers=None
        if classifiers is None
        else parse_classifiers(_as_list(classifiers), extra=present),
        all_pairs=all_pairs,
        adjust=adjust,
    ).table


def compare_guarantees(runs: Sequence[Run | str | Path]) -> GuaranteeComparison:
    """Per-user coverage guarantees of strategies in one or more runs, side by side.

    For each (strategy, classifier): pooled coverage and the worst user, each
    with a Clopper-Pearson interval, and the share of users below target (each
    run's verdicts, :mod:`mueval.guarantees.user_level`). For each pair of
    strategies of one classifier, McNemar's exact test of whether they leave
    different users below target.
    Runs with the same strategies (a random and a blocked split) stay apart,
    prefixed with their labels.

    Parameters
    ----------
    runs : sequence of Run, str or Path
        Runs in memory or run folders, of one dataset and one alpha.

    Returns
    -------
    GuaranteeComparison
        ``.summary`` and ``.tests`` (DataFrames), ``.labels``, ``.warnings``.

    Raises
    ------
    mueval.errors.DataError
        The runs evaluate different datasets or use different alpha.
    """
    folders = [r.folder() if isinstance(r, Run) else read_run_folder(r) for r in runs]
    return compare_folders(folders)
