"""The columns of the run-folder files: user ids as text, and no column that does not apply.

mudata publishes user ids as text (``"1"``, ``"S006"``), ordered naturally
(``"2"`` before ``"10"``). The evaluation keeps whole-number ids as integers in
memory, where they order its tasks; the files of a run folder hold them as
text again (:func:`text_ids`), so that a user is the same value in the table,
every file of the run and the report. Folders written before hold integers;
the reader turns them into text with the same function.

A column that cannot hold a value in a run (``n_cal_cell`` and ``n_cal_class``
without class-conditional calibration) is left out of the file rather than
written empty (:func:`run_file_frame`); readers treat it as absent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mueval.data.users import user_text

__all__ = ["OPTIONAL_COLUMNS", "USER_COLUMNS", "run_file_frame", "text_ids"]

#: Columns of run-folder files that hold user ids.
USER_COLUMNS: tuple[str, ...] = ("user", "userid", "target_user", "worst_user")

#: Per file, the columns that apply to some runs only: absent when they hold no value.
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {
    "splits.parquet": ("n_cal_cell", "n_cal_class"),
}


def text_ids(values: Sequence[object] | np.ndarray | pd.Series) -> pd.arrays.StringArray:
    """User ids as text: whole numbers without a decimal part, missing ids as ``<NA>``.

    The text of each distinct id is computed once (:func:`mueval.data.users.user_text`),
    so a column of millions of rows costs one pass.

    Parameters
    ----------
    values : array-like, shape (n,)
        Ids as integers, whole floats, text, or missing (the mixed model's target user).

    Returns
    -------
    pandas.arrays.StringArray, shape (n,)

    Examples
    --------
    >>> list(text_ids([2, 10, None]))
    ['2', '10', <NA>]
    >>> list(text_ids(pd.array([7, None], dtype="Int64")))
    ['7', <NA>]
    """
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    texts = np.array([user_text(u) for u in uniques] + [None], dtype=object)
    # factorize gives -1 for a missing id: the last entry, None.
    return pd.array(texts[codes], dtype="string")


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
        dtype, or are ``str`` objects for a ``.csv`` file.
    """
    empty = [
        c for c in OPTIONAL_COLUMNS.get(name, ()) if c in frame.columns and frame[c].isna().all()
    ]
    out = frame.drop(columns=empty)
    for column in USER_COLUMNS:
        if column in out.columns:
            ids = text_ids(out[column].to_numpy(dtype=object))
            # A CSV has no types: plain str cells there, which every text
            # function of pandas takes (the string dtype refuses some reductions).
            out[column] = ids.astype(object) if name.endswith(".csv") else ids
    return out
