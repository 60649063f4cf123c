"""The set-size table of a run: per (strategy, classifier), how large the
prediction sets are, and how many hold every class or none.

A description of the sets, read by the warnings of
:mod:`mueval.guarantees.run_warnings` (degenerate and empty sets), by
:func:`mueval.guarantees.compute.compute_guarantees` and by the report.
"""

from __future__ import annotations

import pandas as pd

from mueval.data.frames import frame_column
from mueval.metrics.frame_checks import as_count_column, check_positive_int, require_columns

__all__ = ["set_statistics"]

_KEYS = ["strategy", "classifier"]


def set_statistics(
    frame: pd.DataFrame, *, n_classes: int, set_size_col: str = "set_size"
) -> pd.DataFrame:
    """Per (strategy, classifier): rows, mean set size, full and empty sets.

    Parameters
    ----------
    frame : DataFrame
        Test rows with ``strategy, classifier`` and ``set_size_col`` (int >= 0).
    n_classes : int
        Number of classes; a set of this size holds every class.
    set_size_col : str, default "set_size"

    Returns
    -------
    DataFrame
        ``strategy, classifier, n, mean_size, n_full, share_full, n_empty,
        share_empty``, sorted.

    Examples
    --------
    >>> rows = pd.DataFrame({"strategy": "UCM", "classifier": "KNN",
    ...                      "set_size": [7, 7, 0, 3]})
    >>> row = set_statistics(rows, n_classes=7).iloc[0]
    >>> float(row["mean_size"]), float(row["share_full"]), int(row["n_empty"])
    (4.25, 0.5, 1)
    """
    n_classes = check_positive_int("n_classes", n_classes)
    what = "test rows"
    require_columns(frame, [*_KEYS, set_size_col], what)
    size = as_count_column(frame, set_size_col, what)
    keyed = pd.DataFrame(
        {
            "strategy": frame_column(frame["strategy"]),
            "classifier": frame_column(frame["classifier"]),
            "size": size,
            "full": size >= n_classes,
            "empty": size == 0,
        }
    )
    table = (
        keyed.groupby(_KEYS, sort=True, observed=True)
        .agg(
            n=("size", "size"),
            mean_size=("size", "mean"),
            n_full=("full", "sum"),
            n_empty=("empty", "sum"),
        )
        .reset_index()
    )
    table["share_full"] = table["n_full"] / table["n"]
    table["share_empty"] = table["n_empty"] / table["n"]
    order = [*_KEYS, "n", "mean_size", "n_full", "share_full", "n_empty", "share_empty"]
    return table[order]
