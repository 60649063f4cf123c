"""``mudata init``: a label column that takes a class per sample is a signal, not the label.

A label holds one class over many samples: an activity lasts seconds. A
column given (or taken) as the label whose value changes at nearly every row
of a recording, or that takes nearly as many classes as a recording has rows,
or that holds fractional numbers, is a signal (``--label ax``): windowing it
would make one class per sample, and the build would find no window. Here the
draft says so before the build, and names the columns of the first file that
do look like a label (few values, held over runs of rows) or, when none does,
the path template that would take the label from the file names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["label_candidates", "per_sample_label"]

#: A label changing at more than this fraction of a recording's rows is a signal.
CHANGE_SHARE = 0.5
#: ... or taking more classes than this fraction of a recording's rows.
CLASS_SHARE = 0.2
#: Fewest rows a recording needs for the shares to say anything.
MIN_ROWS = 20
#: A column with more values than this, or held over shorter runs, is no label.
MAX_CLASSES = 100
MIN_RUN = 10


def _fractional(values: pd.Series) -> bool:
    """Numbers some of which are not whole: a measurement, never a class code."""
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().sum() < max(0.9 * values.notna().sum(), 1):
        return False  # text labels
    finite = numbers[np.isfinite(numbers)]
    return bool(len(finite)) and bool((finite != np.round(finite)).mean() > 0.1)


def per_sample_label(frame: pd.DataFrame, column: str) -> str | None:
    """Why the reader's ``label`` of ``frame`` is a class per sample, or None when it is a label.

    Parameters
    ----------
    frame : DataFrame
        The reader's samples: ``label``, ``userid`` and, when named, ``recording``.
    column : str
        The label column's name, for the message.

    Examples
    --------
    >>> frame = pd.DataFrame({"userid": ["1"] * 40, "label": [i * 0.37 for i in range(40)]})
    >>> per_sample_label(frame, "ax").split(";")[0]
    "column 'ax' holds fractional numbers (e.g. 0.37, 0.74)"
    >>> per_sample_label(pd.DataFrame({"userid": ["1"] * 40, "label": ["walk"] * 40}), "y")
    """
    labels = frame["label"]
    if len(labels) < MIN_ROWS:
        return None
    keys = [c for c in ("userid", "recording") if c in frame.columns]
    groups = frame.groupby(keys, sort=False, observed=True)["label"] if keys else [(None, labels)]
    changes = rows = 0
    most = 0.0
    for _, values in groups:
        if len(values) < 2:
            continue
        texts = values.astype(str).to_numpy()
        changes += int((texts[1:] != texts[:-1]).sum())
        rows += len(texts) - 1
        if len(texts) >= MIN_ROWS:
            most = max(most, len(set(texts)) / len(texts))
    classes = labels.nunique()
    if _fractional(labels):
        shown = ", ".join(f"{v:g}" for v in pd.to_numeric(labels).dropna().unique()[1:3])
        why = f"column {column!r} holds fractional numbers (e.g. {shown})"
    elif rows and changes / rows > CHANGE_SHARE:
        why = f"column {column!r} changes value at {changes / rows:.0%} of the rows of a recording"
    elif most > CLASS_SHARE and classes > MAX_CLASSES // 10:
        why = f"column {column!r} takes {most:.0%} as many classes as a recording has rows"
    else:
        return None
    return f"{why}; {classes:,} classes: a class per sample, a signal, not the label"


def label_candidates(table: pd.DataFrame, exclude: set[str]) -> list[str]:
    """Columns of ``table`` (the first file) that look like a label: few values, held long.

    A candidate has at most :data:`MAX_CLASSES` distinct values, no fractional
    number among them, and keeps its value over runs of :data:`MIN_RUN` rows
    on average; one value in the whole file is enough for text (a file per
    activity), not for numbers (a device id, a constant). The longest runs first.
    """
    found: list[tuple[float, str]] = []
    for column in table.columns:
        if column in exclude:
            continue
        values = table[column].dropna()
        distinct = values.nunique()
        numeric = pd.to_numeric(values, errors="coerce").notna().all()
        fewest = 2 if numeric else 1
        if not fewest <= distinct <= MAX_CLASSES or len(values) < MIN_ROWS or _fractional(values):
            continue
        texts = values.astype(str).to_numpy()
        runs = 1 + int((texts[1:] != texts[:-1]).sum())
        if len(texts) / runs >= MIN_RUN:
            found.append((-len(texts) / runs, str(column)))
    return [name for _, name in sorted(found)]
