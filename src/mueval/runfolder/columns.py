"""The columns of the run-folder files: user ids as text, and no column that does not apply.

mudata publishes user ids as text (``"1"``, ``"S006"``), ordered naturally
(``"2"`` before ``"10"``). The evaluation keeps whole-number ids as integers in
memory, where they order its tasks; the files of a run folder hold them as
text again (:func:`text_ids`), so that a user is the same value in the table,
every file of the run and the report. Folders written before hold integers;
the reader turns them into text with the same function.

Rows keyed by a ``user`` column list the users of each block (a strategy and
classifier, an iteration) in natural order, as the text ids no longer sort
that way by themselves.

A column that cannot hold a value in a run (``n_cal_cell`` and ``n_cal_class``
without class-conditional calibration, ``pooled_order`` without a stratified
split of a user's own rows) is left out of the file rather than
written empty (:func:`run_file_frame`); readers treat it as absent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from mueval.data.order import natural_key
from mueval.data.users import user_text

__all__ = [
    "OPTIONAL_COLUMNS",
    "USER_COLUMNS",
    "natural_user_order",
    "run_file_frame",
    "text_ids",
]

#: Columns of run-folder files that hold user ids.
USER_COLUMNS: tuple[str, ...] = ("user", "userid", "target_user", "worst_user")

#: Per file, the columns that apply to some runs only: absent when they hold no value.
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {
    "splits.parquet": ("n_cal_cell", "n_cal_class", "pooled_order"),
    # The tests per class and cohort: none in a run without cohorts or
    # class-conditional calibration (a class has no guarantee there).
    "conditional_coverage.csv": ("p_value", "p_adjusted", "below"),
}


def text_ids(values: Sequence[object] | np.ndarray | pd.Series) -> pd.arrays.ArrowStringArray:
    """User ids as text: whole numbers without a decimal part, missing ids as ``<NA>``.

    The text of each distinct id is computed once (:func:`mueval.data.users.user_text`),
    so a column of millions of rows costs one pass over its codes.

    Parameters
    ----------
    values : array-like, shape (n,)
        Ids as integers, whole floats, text, or missing (the mixed model's target user).

    Returns
    -------
    pandas.arrays.ArrowStringArray, shape (n,)
        Of pandas' ``string`` dtype.

    Examples
    --------
    >>> list(text_ids([2, 10, None]))
    ['2', '10', <NA>]
    >>> list(text_ids(pd.array([7, None], dtype="Int64")))
    ['7', <NA>]
    """
    if not isinstance(values, (np.ndarray, pd.Series, pd.api.extensions.ExtensionArray)):
        values = np.asarray(values, dtype=object)
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    # Through an Arrow dictionary: pandas' own conversion of millions of str
    # objects takes seconds; this takes the time of the codes.
    texts = pa.array([user_text(u) for u in uniques], pa.string())
    arrow = pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), texts)
    return pd.arrays.ArrowStringArray(arrow.cast(pa.string()))


def run_file_frame(name: str, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as the run-folder file ``name`` holds it: user ids as text, and the
    file's optional columns (:data:`OPTIONAL_COLUMNS`) left out where they hold no value.

    Parameters
    ----------
    name : str
        The file's name in the run folder, e.g. ``"splits.parquet"``.
    frame : DataFrame

    Returns
    -------
    DataFrame
        A new frame; ``frame`` is not changed. User ids have pandas' ``string``
        dtype, or are ``str`` objects for a ``.csv`` file; with a ``user``
        column, the users of each block of rows in natural order
        (:func:`natural_user_order`).
    """
    empty = [
        c for c in OPTIONAL_COLUMNS.get(name, ()) if c in frame.columns and frame[c].isna().all()
    ]
    out = frame.drop(columns=empty)
    for column in USER_COLUMNS:
        if column in out.columns:
            ids = text_ids(out[column])
            # A CSV has no types: plain str cells there, which every text
            # function of pandas takes (the string dtype refuses some reductions).
            out[column] = ids.astype(object) if name.endswith(".csv") else ids
    return natural_user_order(out)


def natural_user_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows with the users of each block in natural order ("2" before "10").

    A block is a run of rows with the same values in the columns before
    ``user`` (e.g. strategy and classifier); blocks keep their order, and rows
    without a user (the mixed model) come first in theirs.

    Examples
    --------
    >>> frame = pd.DataFrame({"strategy": ["ucm"] * 3 + ["mm"], "user": ["10", "2", "1", ""]})
    >>> natural_user_order(frame).values.tolist()
    [['ucm', '1'], ['ucm', '2'], ['ucm', '10'], ['mm', '']]
    """
    if "user" not in frame.columns or len(frame) < 2:
        return frame
    before = list(frame.columns[: frame.columns.get_loc("user")])
    if before:
        # A new block starts where any column before ``user`` changes, read as
        # text; compared column by column on factorized codes, not by joining
        # each row's texts in Python (seconds per million rows).
        changed = np.zeros(len(frame), dtype=bool)
        changed[0] = True
        for column in before:
            codes = pd.factorize(frame[column].astype(str))[0]
            changed[1:] |= codes[1:] != codes[:-1]
        block = np.cumsum(changed)
    else:
        block = np.zeros(len(frame), dtype=np.int64)
    codes, uniques = pd.factorize(frame["user"].astype(object), use_na_sentinel=True)
    order = sorted(range(len(uniques)), key=lambda i: natural_key(user_text(uniques[i])))
    rank_of = np.empty(len(uniques) + 1, dtype=np.int64)
    rank_of[order] = np.arange(len(uniques))
    # A missing user (code -1, the last entry) ranks before every id.
    rank_of[-1] = -1
    rank = rank_of[codes]
    return frame.iloc[np.lexsort((rank, block))].reset_index(drop=True)
