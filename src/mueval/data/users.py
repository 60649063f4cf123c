"""A user id: as the user's own name in a table (:func:`user_ids`), and as text, the one
key that joins the files and tables of a run (:func:`user_text`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa

from mudata.errors import excerpt
from mueval.errors import DataError

__all__ = [
    "conflict_message",
    "space_twins",
    "text_conflict",
    "user_ids",
    "user_text",
    "user_texts",
]

#: The largest user id kept as a number (larger unsigned ids are kept as text).
_INT64_MAX = np.iinfo(np.int64).max
#: Floats of this magnitude or more do not fit int64 (2**63 itself does not).
_INT64_LIMIT = 2.0**63

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


def text_conflict(values: pd.Series, text: pd.Series) -> tuple[object, object] | None:
    """Two values of a column of mixed Python types that its text would mistake, or None.

    A run's files name users and classes by their text (``text``, one per row).
    In a column of objects, ``1`` and ``"1"`` are two values written alike (one
    name for two users or classes), and ``1`` and ``1.0`` one value written two
    ways (two names for one). Returns the first such pair, as in the column.

    Examples
    --------
    >>> values = pd.Series([1, "1", 2], dtype=object)
    >>> text_conflict(values, values.astype(str))
    (1, '1')
    >>> values = pd.Series([1, 1.0, 2], dtype=object)
    >>> text_conflict(values, values.astype(str))
    (1, 1.0)
    >>> text_conflict(pd.Series(["a", "b"]), pd.Series(["a", "b"])) is None
    True
    """
    if values.dtype != object:
        return None
    # One text per distinct value: a text given twice is two values written alike.
    text_of_value = text[~values.duplicated()]
    twice = text_of_value.duplicated(keep=False)
    if twice.any():
        first, second = values[twice[twice].index[:2]]
        return first, second
    # One value per distinct text: a value given twice is one value written two ways.
    value_of_text = values[~text.duplicated()]
    twice = value_of_text.duplicated(keep=False)
    if twice.any():
        first, second = value_of_text[twice][:2]
        return first, second
    return None


def space_twins(written: pd.Series, stripped: pd.Series) -> tuple[str, str]:
    """The first two texts of ``written`` that only surrounding spaces tell apart
    (``stripped`` is ``written`` stripped, and holds fewer distinct values).

    Examples
    --------
    >>> text = pd.Series(["walk", "run", "walk ", "run"])
    >>> space_twins(text, text.str.strip())
    ('walk', 'walk ')
    """
    pairs = pd.DataFrame({"written": written, "stripped": stripped}).drop_duplicates()
    twice = pairs[pairs["stripped"].duplicated(keep=False)].sort_values("stripped", kind="stable")
    first, second = twice["written"].head(2)
    return str(first), str(second)


def conflict_message(pair: tuple[object, object], what: str) -> str:
    """Says why the pair :func:`text_conflict` found cannot name ``what`` (users, classes)."""
    a, b = pair
    shown = f"{excerpt(str(a))} ({type(a).__name__}) and {excerpt(str(b))} ({type(b).__name__})"
    if str(a) == str(b):
        return f"{shown} are two values written alike: they would be one of the {what}"
    return f"{shown} are one value written two ways: it would be two of the {what}"


def user_ids(raw: pd.Series) -> np.ndarray:
    """Each row's user id as the user's own name.

    Ids that are all whole numbers (integers, whole floats, or digit strings
    that stay distinct as numbers) become an int64 array, so they sort
    numerically; any other ids ("f1", "S006", "subject101") stay text, in an
    object array of str.

    Examples
    --------
    >>> user_ids(pd.Series(["10", "2", "2"])).tolist()
    [10, 2, 2]
    >>> user_ids(pd.Series(["S2", "S10"])).tolist()
    ['S2', 'S10']
    >>> user_ids(pd.Series(["007", "7"])).tolist()  # distinct as text, not as numbers
    ['007', '7']

    Raises
    ------
    DataError
        Two ids differ only in surrounding spaces (``" 1"`` and ``"1"``): they
        would merge two people into one user; or an id is blank.
    """
    if pd.api.types.is_bool_dtype(raw):
        return raw.astype(str).to_numpy(dtype=object)
    if pd.api.types.is_integer_dtype(raw):
        if pd.api.types.is_unsigned_integer_dtype(raw) and len(raw) and raw.max() > _INT64_MAX:
            # Past int64 a cast would wrap to negative ids: ids this large stay text.
            return raw.astype(str).to_numpy(dtype=object)
        return raw.to_numpy(dtype=np.int64)
    if pd.api.types.is_float_dtype(raw):
        values = raw.to_numpy(dtype=float)
        if np.all(np.mod(values, 1) == 0):
            if np.all(np.abs(values) < _INT64_LIMIT):
                return values.astype(np.int64)
            # Past int64 a cast would give every such id the same number: whole
            # numbers as text instead ("10000000000000000000"), each its own.
            return np.array([user_text(v) for v in values], dtype=object)
        return raw.astype(str).to_numpy(dtype=object)
    text = raw.astype(str).str.strip()
    blank = text == ""
    if blank.any():
        # A blank id is no one's name: it is read back as a missing one.
        message = (
            f"{int(blank.sum())} user id(s) are blank (empty or spaces only; first at row "
            f"position {int(np.flatnonzero(blank.to_numpy())[0])}); every row needs its user's id"
        )
        raise DataError(message)
    if text.nunique() < raw.astype(str).nunique():
        # " 1" and "1" would merge two people silently: name both instead.
        a, b = (repr(v[:60]) for v in space_twins(raw.astype(str), text))
        message = (
            f"user ids {a} and {b} differ only in surrounding spaces and would merge into "
            "one user; user ids are text and must differ as text"
        )
        raise DataError(message)
    conflict = text_conflict(raw, text)
    if conflict is not None:
        message = f"user ids {conflict_message(conflict, 'users')}; give each user one id"
        raise DataError(message)
    if text.str.fullmatch(r"[+-]?\d{1,18}").all():
        numbers = text.astype(np.int64)
        if numbers.nunique() == text.nunique():
            return numbers.to_numpy()
    return text.to_numpy(dtype=object)
