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
   was skipped has undefined coverage and no rows); and ``run.json``'s
   ``config.iterations`` and ``dataset.n_users`` against them
   (:func:`~.check_tables.check_run_record`);
4. ``summary.csv`` against ``splits.parquet``: every (strategy, classifier)
   has a row of every metric, and every metric that splits.parquet
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
   ``pvalue`` (:func:`check_user_validity`); ``coverage_summary.csv`` and
   ``run.json``'s ``warnings`` are those the checked verdicts, validity tests,
   set sizes and pooled tests give (:func:`check_coverage_summary`,
   :func:`check_run_warnings`).

Checks 1 and the helpers they share are :mod:`.checks`', check 2
:mod:`.check_rows`', checks 3 and 4 (with the row counts' bounds)
:mod:`.check_tables`' and check 5 :mod:`.check_guarantees`'. This module runs
them in order.

``alpha`` in (0, 1) and the types of ``run.json`` are checked by the reader
(:mod:`mueval.runfolder.read`). Not checked: the p-values and probabilities
themselves, the classic metrics against the predictions, and the per-iteration
values of the conditional-coverage diagnostics (computed from the features, which
the folder does not hold).
"""

from __future__ import annotations

import pyarrow as pa

from mueval.runfolder.check_guarantees import (
    check_conditional_coverage,
    check_user_cohorts,
    check_user_validity,
    check_user_verdicts,
)
from mueval.runfolder.check_rows import check_rows
from mueval.runfolder.check_tables import (
    check_class_cells,
    check_counts,
    check_run_record,
    check_splits,
    check_summary,
)
from mueval.runfolder.checks import RTOL, check_codes
from mueval.runfolder.records import RunFolder

__all__ = [
    "RTOL",
    "check_conditional_coverage",
    "check_consistency",
    "check_user_cohorts",
    "check_user_validity",
    "check_user_verdicts",
]


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
    check_counts(run)
    check_codes(run)
    check_rows(run, predictions)
    check_splits(run)
    check_run_record(run)
    check_class_cells(run)
    check_summary(run)
