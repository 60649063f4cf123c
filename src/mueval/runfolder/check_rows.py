"""The consistency of a run folder's prediction rows, each with itself.

This module owns check 2 of :mod:`mueval.runfolder.consistency`: the columns'
types and emptiness, ``y_true`` and ``y_pred`` among the classes, one value per
class in ``p_values`` and ``proba``, each set's members (classes, none twice, in
the class order of run.json), ``set_size`` and ``covered`` as ``pred_set``
gives them, and a per-user strategy's rows on its target user.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mueval.data.users import user_texts
from mueval.runfolder.checks import first_wrong, show
from mueval.runfolder.records import RunFolder, RunFolderError

__all__ = ["check_rows"]


def _row(run: RunFolder, i: int) -> str:
    r = run.predictions.iloc[int(i)]
    return f"row {int(i)} ({r['strategy']}/{r['classifier']}, iteration {r['iteration']})"


def _is_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _classes(run: RunFolder, like: pa.Array) -> pa.Array:
    """The class names as an array of ``like``'s type (string or large_string)."""
    return pa.array(run.classes, like.type)


def _whole_or_null(column: pa.ChunkedArray) -> bool:
    values = column.to_numpy(zero_copy_only=False)
    values = values[~np.isnan(values)]
    return bool(np.all(values == np.round(values)))


def _check_types(run: RunFolder, preds: pa.Table) -> None:
    path = run.path / "predictions.parquet"
    expected = {
        "y_true": _is_text,
        "y_pred": _is_text,
        "set_size": pa.types.is_integer,
        "covered": pa.types.is_boolean,
        "iteration": pa.types.is_integer,
    }
    for column, test in expected.items():
        kind = preds.schema.field(column).type
        if not test(kind):
            msg = f"{path}: column {column} is of type {kind}, not the type mueval writes"
            raise RunFolderError(msg)
    kind = preds.schema.field("pred_set").type
    if not ((pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _is_text(kind.value_type)):
        msg = f"{path}: column pred_set is of type {kind}; expected lists of class names"
        raise RunFolderError(msg)
    kind = preds.schema.field("seed").type
    if not pa.types.is_integer(kind):
        msg = f"{path}: column seed is of type {kind}; expected whole numbers"
        raise RunFolderError(msg)
    # User ids are whole numbers, or text when a dataset names its users ("S006").
    kind = preds.schema.field("userid").type
    if not (pa.types.is_integer(kind) or _is_text(kind)):
        msg = f"{path}: column userid is of type {kind}; expected whole numbers or text"
        raise RunFolderError(msg)
    kind = preds.schema.field("target_user").type
    if not (
        pa.types.is_integer(kind)
        or pa.types.is_null(kind)
        or _is_text(kind)
        or (pa.types.is_floating(kind) and _whole_or_null(preds.column("target_user")))
    ):
        msg = f"{path}: column target_user is of type {kind}; expected whole numbers or text"
        raise RunFolderError(msg)
    for column in ("p_values", "proba"):
        kind = preds.schema.field(column).type
        if not (
            (pa.types.is_list(kind) or pa.types.is_large_list(kind))
            and pa.types.is_floating(kind.value_type)
        ):
            msg = f"{path}: column {column} is of type {kind}; expected lists of numbers"
            raise RunFolderError(msg)
    for column in (
        "y_true",
        "y_pred",
        "pred_set",
        "set_size",
        "covered",
        "iteration",
        "userid",
        "p_values",
        "proba",
    ):
        nulls = preds.column(column).is_null().to_numpy(zero_copy_only=False)
        if nulls.any():
            msg = f"{path}: {_row(run, int(np.argmax(nulls)))}: {column} is empty"
            raise RunFolderError(msg)


def _check_labels(run: RunFolder, preds: pa.Table) -> None:
    """``y_true`` and ``y_pred`` are classes; p_values and proba have one value per class."""
    path = run.path / "predictions.parquet"
    for column in ("y_true", "y_pred"):
        values = preds.column(column).combine_chunks()
        inside = pc.is_in(values, value_set=_classes(run, values)).to_numpy(zero_copy_only=False)
        if not inside.all():
            i = int(np.argmin(inside))
            msg = (
                f"{path}: {_row(run, i)}: {column} {show(values[i].as_py())} is not a class "
                f"of run.json"
            )
            raise RunFolderError(msg)
    k = len(run.classes)
    for column in ("p_values", "proba"):
        lengths = pc.list_value_length(preds.column(column).combine_chunks())
        width = lengths.to_numpy(zero_copy_only=False)
        row = first_wrong(width != k)
        if row is not None:
            msg = (
                f"{path}: {_row(run, row)}: {column} holds {int(width[row])} values; expected "
                f"one per class of run.json ({k})"
            )
            raise RunFolderError(msg)


def _set_members(run: RunFolder, preds: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Row and class index of every member of every set, checked to be a class, once.

    Returns
    -------
    parents, index : ndarray of int, shape (n_members,)
    """
    path = run.path / "predictions.parquet"
    sets = preds.column("pred_set").combine_chunks()
    flat = pc.list_flatten(sets)
    parents = pc.list_parent_indices(sets).to_numpy(zero_copy_only=False).astype(np.int64)
    index = pc.index_in(flat, value_set=_classes(run, flat)).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(np.isnan(index.astype(float)))  # not a class (or empty)
    if bad.size:
        msg = (
            f"{path}: {_row(run, parents[bad[0]])}: pred_set holds "
            f"{show(flat[int(bad[0])].as_py())}, not a class of run.json"
        )
        raise RunFolderError(msg)
    index = index.astype(np.int64)
    k = len(run.classes)
    # Members strictly in class order within every set (the writer's order)
    # cannot repeat: only a set that breaks that order is searched for a repeat.
    same_row = parents[1:] == parents[:-1]
    keys = parents * k + index
    unordered = bool((same_row & (index[1:] <= index[:-1])).any())
    twice = pd.Series(keys).duplicated().to_numpy() if unordered else np.zeros(0, dtype=bool)
    if twice.any():
        first = keys[np.argmax(twice)]
        msg = (
            f"{path}: {_row(run, first // k)}: pred_set names {show(run.classes[first % k])} twice"
        )
        raise RunFolderError(msg)
    # The writer lists each set's members in the order of the class list, the
    # order of p_values and proba too: members out of that order mean run.json's
    # list is not the one the predictions were written with (e.g. reordered).
    i = first_wrong(same_row & (index[1:] < index[:-1]))
    if i is not None:
        before, after = run.classes[index[i]], run.classes[index[i + 1]]
        msg = (
            f"{path}: {_row(run, parents[i])}: pred_set lists {show(before)} before "
            f"{show(after)}, but run.json's classes {show(run.classes)} put "
            f"{show(after)} first; the class order of run.json is not the one the "
            f"predictions (their pred_set, p_values and proba) were written with"
        )
        raise RunFolderError(msg)
    return parents, index


def _check_target_users(run: RunFolder) -> None:
    """A per-user strategy tests on its target user's own rows: ``userid`` is
    ``target_user`` wherever a target user is named."""
    path = run.path / "predictions.parquet"
    target = user_texts(run.predictions["target_user"])
    user = user_texts(run.predictions["userid"])
    i = first_wrong(((target != "") & (target != user)).to_numpy())
    if i is not None:
        msg = (
            f"{path}: {_row(run, i)}: userid {show(user.iloc[i])} is not the target "
            f"user {show(target.iloc[i])}"
        )
        raise RunFolderError(msg)


def check_rows(run: RunFolder, preds: pa.Table) -> None:
    """Labels are classes; ``set_size`` and ``covered`` agree with ``pred_set``."""
    path = run.path / "predictions.parquet"
    _check_types(run, preds)
    _check_labels(run, preds)
    _check_target_users(run)
    parents, index = _set_members(run, preds)
    n = preds.num_rows
    lengths = np.bincount(parents, minlength=n)
    size = preds.column("set_size").to_numpy()
    i = first_wrong(size != lengths)
    if i is not None:
        msg = (
            f"{path}: {_row(run, i)}: set_size is {int(size[i])}, but pred_set holds "
            f"{int(lengths[i])} classes"
        )
        raise RunFolderError(msg)
    y_true = preds.column("y_true").combine_chunks()
    y_index = pc.index_in(y_true, value_set=_classes(run, y_true))
    y_index = y_index.to_numpy(zero_copy_only=False).astype(np.int64)
    holds = np.zeros(n, dtype=bool)
    holds[parents[index == y_index[parents]]] = True
    covered = preds.column("covered").to_numpy()
    i = first_wrong(covered != holds)
    if i is not None:
        where = "is" if holds[i] else "is not"
        msg = (
            f"{path}: {_row(run, i)}: covered is {bool(covered[i])}, but y_true "
            f"{show(run.classes[y_index[i]])} {where} in pred_set"
        )
        raise RunFolderError(msg)
