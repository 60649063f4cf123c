"""A user id as text: the one key that joins the files and tables of a run."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa

__all__ = ["user_text", "user_texts"]

#: Kinds of values (pandas' ``infer_dtype``) whose equal values have one text,
#: so each distinct value may be converted once.
_FACTORIZABLE = frozenset(
    {"string", "integer", "floating", "mixed-integer-float", "boolean", "empty"}
)


def user_text(value: object) -> str:
    """A user id as text, whole numbers without a decimal part.

    A missing id (MM's target user) is ``""``; a whole number, integer or float,
    is written without a decimal part (``7.0`` -> ``"7"``), as a CSV that read it
    back as a float would need; anything else is its text, stripped.

    Examples
    --------
    >>> user_text(7.0), user_text(np.int64(12)), user_text(" u3 "), user_text(None)
    ('7', '12', 'u3', '')
    """
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        return ""
    if isinstance(value, (int, float, np.integer, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def user_texts(values: pd.Series) -> pd.Series:
    """:func:`user_text` of every value, as a Series of text with the same index.

    Each distinct value is converted once: a run's prediction rows repeat a few
    thousand ids hundreds of thousands of times.
    """
    objects = values.astype(object)
    if pd.api.types.infer_dtype(objects, skipna=True) not in _FACTORIZABLE:
        # Values of other types can be equal and still read differently (7 and
        # Decimal("7.0")): grouping them would give every one the first's text.
        return objects.map(user_text)
    if not len(objects):
        # An empty Series of objects, as pandas gives for no str at all.
        return pd.Series(np.array([], dtype=object), index=values.index)
    codes, distinct = pd.factorize(objects, use_na_sentinel=False)
    texts = [user_text(value) for value in distinct] + [""]
    # pandas may keep a code of -1 for a missing value even without the sentinel.
    codes = np.where(codes < 0, len(texts) - 1, codes).astype(np.int32)
    # Through an Arrow dictionary, to the ``str`` dtype that a Series of these
    # str objects would infer: the same values, without converting each row.
    arrow = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(texts, pa.large_string()))
    return pd.Series(pd.array(arrow.cast(pa.large_string()), dtype="str"), index=values.index)
