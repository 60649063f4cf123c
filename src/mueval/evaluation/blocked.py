"""Blocked splits in time: a user's rows cut into contiguous blocks per class,
``gap`` rows apart (``--split blocked``, docs/protocol.md, "Splits").

Owns :func:`blocked_parts`, which the within-user, leave-one-user-out and
cross-user splitters call in place of the random split.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mueval.errors import SplitError

__all__ = ["blocked_parts"]


def blocked_parts(
    idx: np.ndarray,
    y: np.ndarray,
    first_frac: float,
    n_parts: int,
    gap: int,
    *,
    what: str,
    classes: Sequence[str] | None = None,
) -> list[np.ndarray]:
    """Contiguous blocks of each class's rows in time (row) order, ``gap`` rows apart.

    Windows next to each other in time share signal (and overlap, for
    overlapping windows), so a random within-user split lets a test window's
    neighbour sit in the training or calibration set. Blocks do not: per class,
    the earliest ``first_frac`` of the rows (after the gaps are set aside) form
    the first part, the rest is halved between the next parts in order, and
    ``gap`` rows are dropped between two parts. Splitting per class keeps every
    class in every part, as the stratified random split does.

    Parameters
    ----------
    idx : ndarray of shape (m,)
        Row positions of one user (the table's order is time order within a
        user and class).
    y : ndarray of shape (n_rows,)
        Integer labels of the whole table.
    first_frac : float
        Share of each class's rows in the first part.
    n_parts : {2, 3}
        Number of parts: (first, second) or (first, second, third), the
        rest after the first halved between the second and the third.
    gap : int
        Rows left out between two parts (>= 0).
    what : str
        Names the strategy and user in error messages.
    classes : sequence of str, optional
        Class names for error messages.

    Returns
    -------
    list of ndarray
        ``n_parts`` arrays of row positions, each sorted.

    Examples
    --------
    >>> y = np.zeros(12, dtype=int)
    >>> [p.tolist() for p in blocked_parts(np.arange(12), y, 0.6, 3, 1, what="udm")]
    [[0, 1, 2, 3, 4, 5], [7, 8], [10, 11]]
    """
    parts: list[list[np.ndarray]] = [[] for _ in range(n_parts)]
    for c in np.unique(y[idx]):
        rows = np.sort(idx[y[idx] == c])
        usable = len(rows) - gap * (n_parts - 1)
        if usable < n_parts:
            name = classes[c] if classes is not None else str(c)
            message = (
                f"{what}: class {name!r} has {len(rows)} rows, too few for {n_parts} "
                f"blocks with a gap of {gap}; lower --gap or use --split random"
            )
            raise SplitError(message)
        sizes = [max(1, int(np.floor(first_frac * usable)))]
        rest = usable - sizes[0]
        if n_parts == 3:
            sizes.append(max(1, rest // 2))
        sizes.append(usable - sum(sizes))
        if min(sizes) < 1:
            message = f"{what}: too few rows for {n_parts} blocks with a gap of {gap}"
            raise SplitError(message)
        start = 0
        for k, size in enumerate(sizes):
            parts[k].append(rows[start : start + size])
            start += size + gap
    return [np.sort(np.concatenate(p)) for p in parts]
