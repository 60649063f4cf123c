"""A label column as classes: each row's class index and the classes' names.

This module owns the one rule that names a user's classes. Classes come in a
label encoder's order, as docs/protocol.md says: numeric labels by value (1, 2,
10), coded by value (``-0.0`` is ``0.0``), and text labels alphabetically, each
label's text the class's name in every file of the run. A label that is blank,
or two that only their spaces tell apart, or values of mixed types that their
text would mistake, are refused by name.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mueval.data.users import conflict_message, space_twins, text_conflict
from mueval.errors import DataError

__all__ = ["label_classes"]


def label_classes(labels: pd.Series, label_col: str, source: str) -> tuple[np.ndarray, list[str]]:
    """Each row's class index (int) and the class names, in a label encoder's order.

    Parameters
    ----------
    labels : Series
        The label column, with no missing value.
    label_col : str
        Its name, for messages.
    source : str
        How messages name the table.

    Returns
    -------
    y : ndarray of int
    classes : list of str

    Raises
    ------
    DataError
        A blank label, labels that differ only in surrounding spaces, or values
        of mixed types written alike (``1`` and ``"1"``) or one value written
        two ways (``1`` and ``1.0``).

    Examples
    --------
    >>> label_classes(pd.Series([10, 2, 1, 10]), "label", "t")
    (array([2, 1, 0, 2]), ['1', '2', '10'])
    >>> label_classes(pd.Series(["walk", "Sit", "lie"]), "label", "t")
    (array([2, 0, 1]), ['Sit', 'lie', 'walk'])
    """
    if pd.api.types.is_numeric_dtype(labels) and not pd.api.types.is_bool_dtype(labels):
        return _numeric_classes(labels)
    names, y = np.unique(_label_text(labels, label_col, source), return_inverse=True)
    return y, names.tolist()


def _label_text(labels: pd.Series, label_col: str, source: str) -> np.ndarray:
    """The text of each label, each a class's name in every file of the run.

    Raises
    ------
    DataError
        A label is blank (empty or spaces only: a missing label written as
        text), or two labels differ only in surrounding spaces (``"walk"`` and
        ``"walk "``: two classes that every table would show alike).
    """
    text = labels.astype(str)
    stripped = text.str.strip()
    blank = (stripped == "").to_numpy()
    if blank.any():
        message = (
            f"{source}: label column {label_col!r} has {int(blank.sum())} blank label(s) "
            f"(empty or spaces only; first at row position {int(np.flatnonzero(blank)[0])}); "
            "drop or fill them"
        )
        raise DataError(message)
    if stripped.nunique() < text.nunique():
        a, b = (repr(v[:60]) for v in space_twins(text, stripped))
        message = (
            f"{source}: labels {a} and {b} in column {label_col!r} differ only in surrounding "
            "spaces; they would be two classes shown alike: write each class one way"
        )
        raise DataError(message)
    conflict = text_conflict(labels, text)
    if conflict is not None:
        message = (
            f"{source}: label column {label_col!r}: {conflict_message(conflict, 'classes')}; "
            "write each class one way"
        )
        raise DataError(message)
    return text.to_numpy()


def _numeric_classes(labels: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Each row's class index and the class names of a numeric label column, by value.

    The rows are coded by value, not by their text: ``-0.0`` is the class
    ``0.0``, and a float32 ``0.1`` the class ``0.1`` (its own shortest text,
    not ``0.10000000149011612``); the names are the values' text in the
    column's own type, one per value.
    """
    codes, values = pd.factorize(labels, sort=True)
    if values.dtype.kind == "f":
        values = values + 0.0  # a -0.0 among the values is 0.0 (factorize merged them)
    classes = [str(v) for v in pd.Series(values, dtype=labels.dtype).astype(str)]
    return codes.astype(int), classes
