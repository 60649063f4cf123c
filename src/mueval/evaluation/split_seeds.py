"""How the successive splits of one iteration are seeded (``--split-seeds``).

An iteration of the protocol makes more than one random split from its one
seed ``seed_base + i``: MM and UDM split train/rest and then calibration/test,
UIM, UCM and UKM split the other users' rows (which picks the model's training
rows) and the target user's own rows, UAM adapt/rest and calibration/test, and
the user folds of ``--user-folds`` and UXC group users. The reference code gives
every one of them the same seed (``protocol``, the default: the study's numbers).

``independent`` gives each *role* its own seed, derived from the iteration's by
numpy's :class:`~numpy.random.SeedSequence`: role ``r`` draws from the ``r``-th
child of ``SeedSequence(seed).spawn(...)``, that is ``SeedSequence(seed,
spawn_key=(r,))``, whose first 32-bit word (``generate_state(1)``) is the
``random_state`` handed to scikit-learn. The roles are :data:`FIRST` (the first
split of an iteration: MM's and UDM's train/rest, the other users' train and
UIM-calibration split, UAM's adaptation split), :data:`SECOND` (the split after
it: MM's and UDM's calibration/test, the target user's test/calibration halves
under UIM, UCM, UKM and UXC, UAM's calibration/test) and :data:`GROUPS` (the
grouping of users into ``--user-folds`` folds and UXC's calibration folds).
The model's own ``random_state`` stays the iteration's seed under both.
"""

from __future__ import annotations

import numpy as np

from mueval.errors import UsageError
from mueval.names import SPLIT_SEEDS

__all__ = ["FIRST", "GROUPS", "SECOND", "check_split_seeds", "role_seeds"]

#: Role index of an iteration's first split.
FIRST = 0
#: Role index of the split that follows it (the target user's own rows).
SECOND = 1
#: Role index of the grouping of users into folds.
GROUPS = 2


def check_split_seeds(split_seeds: object) -> None:
    """Refuse a ``split_seeds`` that is not one of :data:`~mueval.names.SPLIT_SEEDS`.

    The one rule and message of the setting, for the evaluation's and the label
    curve's configurations and for :func:`role_seeds`.

    Raises
    ------
    UsageError
        ``split_seeds`` is not ``"protocol"`` or ``"independent"``.

    Examples
    --------
    >>> check_split_seeds("independent")
    >>> check_split_seeds("fresh")
    Traceback (most recent call last):
    ...
    mueval.errors.UsageError: unknown split_seeds 'fresh'; valid: protocol, independent
    """
    if split_seeds not in SPLIT_SEEDS:
        message = f"unknown split_seeds {split_seeds!r}; valid: {', '.join(SPLIT_SEEDS)}"
        raise UsageError(message, cli={"split_seeds": "--split-seeds"})


def role_seeds(seed: int, split_seeds: str = "protocol") -> tuple[int, int, int]:
    """The seeds of the roles :data:`FIRST`, :data:`SECOND` and :data:`GROUPS`.

    Parameters
    ----------
    seed : int
        The iteration's seed.
    split_seeds : {"protocol", "independent"}
        ``protocol``: ``seed`` for every role, as the reference code. ``independent``:
        the first 32-bit word of the ``r``-th child of ``numpy.random.SeedSequence(seed)``
        for role ``r``.

    Returns
    -------
    tuple of int
        One ``random_state`` per role.

    Examples
    --------
    >>> role_seeds(101)
    (101, 101, 101)
    >>> first, second, groups = role_seeds(101, "independent")
    >>> len({first, second, groups, 101})
    4
    >>> role_seeds(101, "independent") == role_seeds(101, "independent")
    True
    """
    check_split_seeds(split_seeds)
    if split_seeds == "protocol":
        return (seed, seed, seed)
    children = np.random.SeedSequence(seed).spawn(3)
    first, second, groups = (int(c.generate_state(1, np.uint32)[0]) for c in children)
    return (first, second, groups)
