"""The checks on the splits of a strategy registered from outside mueval: its
splitter returned Split records whose rows are in the table, whose roles do
not share a row, and which test each target user on its own rows.

Owns :func:`check_splits`; :func:`mueval.evaluation.splits.make_splits` calls
it on every splitter that is not a built-in's.
"""

from __future__ import annotations

import numpy as np

from mueval.errors import SplitError
from mueval.evaluation.records import CrossSplit, Split, Target
from mueval.strategies import Strategy

__all__ = ["check_splits"]


def check_splits(
    splits: object, served: tuple[str, ...], record: Strategy, users: np.ndarray
) -> None:
    """A user's splitter returned Split records whose rows are in the table, whose
    calibration sets are the served strategies', whose roles do not share a row,
    and which test each target user on its own rows (the run folder's rule), or
    name no target user for a pooled strategy."""
    where = f"strategy {record.code!r}: splitter"
    if not isinstance(splits, list) or not all(isinstance(s, Split) for s in splits):
        message = f"{where} must return a list of mueval.evaluation.records.Split records"
        raise SplitError(message)
    for k, split in enumerate(splits):
        if isinstance(split, CrossSplit):
            message = f"{where}: split {k} is a CrossSplit; cross-conformal splits are uxc's own"
            raise SplitError(message)
        for target in split.served():
            if set(target.calibrations) != set(served):
                message = (
                    f"{where}: split {k} calibrates {sorted(target.calibrations)}, expected "
                    f"one calibration set for each of {list(served)}"
                )
                raise SplitError(message)
            parts = {"train": split.train, "test": target.test, **target.calibrations}
            _check_rows(parts, f"{where}: split {k} (user {target.user})", len(users))
            _check_target(target, record, f"{where}: split {k}", users)


def _check_target(target: Split | Target, record: Strategy, where: str, users: np.ndarray) -> None:
    """A pooled strategy names no target user; any other tests a target user of the
    table on that user's own rows."""
    if record.pooled or target.user is None:
        if record.pooled != (target.user is None):
            message = (
                f"{where}: names target user {target.user!r}, but the record says pooled=True"
                if record.pooled
                else f"{where}: names no target user, but the record says pooled=False"
            )
            raise SplitError(message)
        return
    own = users[np.asarray(target.test)]
    if not (own == target.user).all():
        message = (
            f"{where}: target user {target.user!r} is tested on rows of user "
            f"{own[own != target.user].tolist()[0]!r}; a strategy tests each target user on its own rows"
        )
        raise SplitError(message)


def _check_rows(parts: dict[str, np.ndarray], where: str, n_rows: int) -> None:
    """Each part is a non-empty array of distinct row positions in the table, and
    neither the training nor the test rows share a row with another part (two
    strategies' calibration sets may)."""
    for role, rows in parts.items():
        rows = np.asarray(rows)
        if rows.ndim != 1 or len(rows) == 0 or not np.issubdtype(rows.dtype, np.integer):
            message = f"{where}: {role} must be a non-empty 1-D array of row positions"
            raise SplitError(message)
        if rows.min() < 0 or rows.max() >= n_rows or len(np.unique(rows)) != len(rows):
            message = f"{where}: {role} must hold distinct row positions from 0 to {n_rows - 1}"
            raise SplitError(message)
    roles = list(parts)
    for i, first in enumerate(roles[:2]):
        for second in roles[i + 1 :]:
            shared = np.intersect1d(parts[first], parts[second])
            if len(shared):
                message = f"{where}: row {int(shared[0])} is in both {first} and {second}"
                raise SplitError(message)
