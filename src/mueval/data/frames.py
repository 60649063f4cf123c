"""Columns moved from one DataFrame into a new one without a detour through Python objects.

A run folder's text columns (strategy, classifier, labels) are read with pandas'
Arrow-backed ``str`` dtype. ``series.to_numpy()`` turns such a column into one
Python ``str`` per row, and a DataFrame built from that array turns them back
into Arrow strings: two conversions of every row, each about 20 ms per 400,000
rows, repeated for every table built from the predictions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["frame_column"]


def frame_column(series: pd.Series) -> pd.api.extensions.ExtensionArray | np.ndarray:
    """``series``'s values for a new DataFrame's column, as ``series.to_numpy()`` gives them.

    A column of the ``str`` dtype (Arrow storage, NaN for a missing value) is
    handed over as its own array: the frame gets the dtype it would infer from
    ``to_numpy()``'s objects, without converting each value twice. Every other
    column is ``series.to_numpy()``, unchanged.

    Examples
    --------
    >>> s = pd.Series(["mm", "ucm"], dtype="str", index=[5, 7])
    >>> pd.DataFrame({"strategy": frame_column(s)}).equals(pd.DataFrame({"strategy": s.to_numpy()}))
    True
    """
    dtype = series.dtype
    if (
        isinstance(dtype, pd.StringDtype)
        and dtype.storage == "pyarrow"
        and dtype.na_value is np.nan
    ):
        return series.array
    return series.to_numpy()
