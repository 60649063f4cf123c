"""What the label curve sweeps: its k values and uses, read from text, and
:class:`CurveConfig`, checked once when it is made.

The conformal settings are one :class:`~mueval.conformal.settings.ConformalSettings`,
checked there; the curve offers four of them (alpha, a score by name, the
threshold rule, the small-calibration policy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mueval.conformal.settings import ConformalSettings, refuse_tuned_raps
from mueval.conformal.thresholds import min_calibration_size
from mueval.errors import DataError, UsageError
from mueval.evaluation.config import check_seeds, check_whole
from mueval.evaluation.split_seeds import check_split_seeds
from mueval.names import CLASSIFIERS, CURVE_USES, SCORES

__all__ = ["CURVE_SETTINGS", "CurveConfig", "auto_ks", "parse_ks", "parse_uses"]

#: The conformal settings the curve offers; the others keep their defaults.
CURVE_SETTINGS = ("alpha", "score", "threshold", "small_cal")


def parse_ks(value: str | Sequence[int]) -> tuple[int, ...]:
    """Numbers of labelled windows, ascending.

    Parameters
    ----------
    value : str or sequence of int
        ``"0,5,10,20,50"`` or ``[0, 5, 10]``.

    Returns
    -------
    tuple of int

    Raises
    ------
    UsageError
        Empty, not whole numbers, negative or repeated values.

    Examples
    --------
    >>> parse_ks("10, 0,5")
    (0, 5, 10)
    """
    parts = value.split(",") if isinstance(value, str) else list(value)
    ks = []
    for part in parts:
        if isinstance(part, str):
            text = part.strip()
            if not text:
                continue
            # isdecimal, not isdigit: int() refuses "²"; and it refuses 4,300 digits and more.
            number = int(text) if text.isdecimal() and len(text) <= 18 else None
        else:
            whole = isinstance(part, int | np.integer) and not isinstance(part, bool)
            text, number = repr(part), int(part) if whole else None
        if number is None:
            message = f"k values must be whole numbers of windows (0 or more), got {text!r}"
            raise UsageError(message)
        if number < 0:
            message = f"k values must be 0 or more windows, got {number}"
            raise UsageError(message)
        ks.append(number)
    if not ks:
        message = "no k given; e.g. 0,5,10,20,50"
        raise UsageError(message)
    repeated = sorted({k for k in ks if ks.count(k) > 1})
    if repeated:
        message = f"k values repeated: {', '.join(map(str, repeated))}"
        raise UsageError(message)
    return tuple(sorted(ks))


def parse_uses(value: str | Sequence[str]) -> tuple[str, ...]:
    """Uses of the k windows (comma lists allowed), in :data:`CURVE_USES` order.

    Examples
    --------
    >>> parse_uses("both,calibration")
    ('calibration', 'both')
    """
    parts = [value] if isinstance(value, str) else list(value)
    wanted = {u.strip().lower() for part in parts for u in str(part).split(",") if u.strip()}
    bad = sorted(wanted - set(CURVE_USES))
    if bad or not wanted:
        message = f"unknown use {', '.join(bad) or '(none)'}; valid: {', '.join(CURVE_USES)}"
        raise UsageError(message)
    return tuple(u for u in CURVE_USES if u in wanted)


@dataclass(frozen=True)
class CurveConfig:
    """What the curve sweeps and how (see :mod:`mueval.evaluation.labelcurve`).

    ``conformal``: the conformal settings, of which the curve offers ``alpha``,
    ``score`` (a name), ``threshold`` and ``small_cal`` (``full-set`` by default
    here: the curve's small k are below the minimum by design). They may also be
    given one by one (``CurveConfig(alpha=0.1)``), each replacing that field of
    ``conformal``; they are no attributes: read ``config.conformal.alpha``.

    ``split_seeds``: ``"protocol"`` draws the target user's test and pool rows and
    the other users' training and calibration rows from the iteration's one seed;
    ``"independent"`` gives the two splits seeds of their own
    (:func:`~mueval.evaluation.split_seeds.role_seeds`), as ``mueval evaluate
    --split-seeds`` does. The model's seed stays the iteration's.
    """

    classifier: str = "rf"
    ks: tuple[int, ...] = (0, 5, 10, 20, 50)
    uses: tuple[str, ...] = ("calibration",)
    iterations: int = 5
    seed_base: int = 100
    min_test: int = 20
    split_seeds: str = "protocol"
    conformal: ConformalSettings = field(
        default_factory=lambda: ConformalSettings(small_cal="full-set")
    )
    # The offered settings one by one (None: conformal's own); read them from conformal.
    alpha: InitVar[float | None] = None
    score: InitVar[str | None] = None
    threshold: InitVar[str | None] = None
    small_cal: InitVar[str | None] = None

    def __post_init__(
        self,
        alpha: float | None,
        score: str | None,
        threshold: str | None,
        small_cal: str | None,
    ) -> None:
        # ConformalSettings checks its fields as it is made.
        conformal = self.conformal.with_given(
            alpha=alpha, score=score, threshold=threshold, small_cal=small_cal
        )
        object.__setattr__(self, "conformal", conformal)
        self._check_settings()
        if self.classifier not in CLASSIFIERS:
            message = f"unknown classifier {self.classifier!r}; valid: {', '.join(CLASSIFIERS)}"
            raise UsageError(message)
        if parse_uses(list(self.uses)) != tuple(self.uses):
            message = f"uses must be unique and ordered as {', '.join(CURVE_USES)}, got {self.uses}"
            raise UsageError(message)
        if tuple(parse_ks(list(self.ks))) != tuple(self.ks):
            message = f"ks must be ascending whole numbers, got {self.ks}"
            raise UsageError(message)
        check_split_seeds(self.split_seeds)
        check_whole("iterations", self.iterations, 1)
        check_whole("min_test", self.min_test, 1)
        check_seeds(self.seed_base, self.iterations)

    def _check_settings(self) -> None:
        """Only the offered settings are set, the score is a name, and the cluster
        use has scores of its own."""
        settings = self.conformal
        if not isinstance(settings.score, str):
            message = f"unknown score {settings.score!r}; valid: {', '.join(SCORES)}"
            raise UsageError(message)
        offered = ConformalSettings(**{name: getattr(settings, name) for name in CURVE_SETTINGS})
        if offered != settings:
            message = (
                f"the label curve offers {', '.join(CURVE_SETTINGS)} of the conformal settings, "
                f"not {settings!r}"
            )
            raise UsageError(message)
        refuse_tuned_raps(settings.conformity, ["cluster use"] if "cluster" in self.uses else [])

    def record(self) -> dict[str, Any]:
        """The configuration as the curve's ``run.json`` records it."""
        settings = self.conformal
        return {
            "classifier": self.classifier,
            "ks": self.ks,
            "uses": self.uses,
            "iterations": self.iterations,
            "alpha": settings.alpha,
            "seed_base": self.seed_base,
            "score": settings.score,
            "threshold": settings.threshold,
            "small_cal": settings.small_cal,
            "min_test": self.min_test,
            "split_seeds": self.split_seeds,
        }


def _smallest_informative_k(use: str, alpha: float) -> int:
    """The fewest labelled windows whose calibration set the threshold rule takes.

    Below :func:`~mueval.conformal.thresholds.min_calibration_size` rows (20 at alpha
    0.05) the conformal quantile is infinite: every set holds every class (or,
    with ``--small-cal skip``, there is no set). Adaptation calibrates on the
    other users, so one window is already informative; ``both`` calibrates on
    ``k - k // 2`` of them.
    """
    need = min_calibration_size(alpha)
    return {"calibration": need, "adaptation": 1, "both": 2 * need - 1, "cluster": 1}[use]


def auto_ks(
    users: Sequence[object] | np.ndarray,
    uses: Sequence[str],
    alpha: float,
    min_test: int,
    *,
    points: int = 4,
) -> tuple[int, ...]:
    """k values for the curve from the data: 0 and ``points`` values from the
    smallest informative k to the largest most users can give.

    The lower end is the smallest k whose calibration set is large enough for
    the threshold rule for every use asked (:func:`_smallest_informative_k`):
    below it a set is the full set of classes, which says nothing about k. The
    upper end is the largest k that leaves every user ``min_test`` test rows
    (a user who cannot give max(k) is left out of the whole curve); when the
    smallest user cannot give the lower end, the largest k the median user
    can give. In between, the values are spaced geometrically (the curve
    changes fastest at small k) and rounded to multiples of 5.

    Parameters
    ----------
    users : sequence
        Each row's user.
    uses : sequence of str
    alpha : float
    min_test : int
    points : int, default 4
        Values above 0.

    Returns
    -------
    tuple of int
        Ascending, starting at 0.

    Raises
    ------
    DataError
        The median user has too few rows for one informative k.

    Examples
    --------
    >>> auto_ks(["a"] * 170 + ["b"] * 150 + ["c"] * 120, ["calibration"], 0.05, 20)
    (0, 20, 35, 60, 100)
    >>> auto_ks(["a"] * 170 + ["b"] * 150 + ["c"] * 30, ["calibration"], 0.05, 20)
    (0, 20, 35, 70, 130)
    """
    counts = np.sort(pd.Series(list(users)).value_counts().to_numpy())
    low = max(_smallest_informative_k(use, alpha) for use in uses)
    if not len(counts):
        message = "no informative k: the table has no rows"
        raise DataError(message)
    # Every user when the smallest can give an informative k (a user with fewer
    # rows than max(k) + min_test is left out of the whole curve), else half of them.
    high = int(counts[0]) - min_test
    if high < low:
        high = int(counts[len(counts) // 2]) - min_test
    if high < low:
        message = (
            f"no informative k: at alpha {alpha:g} the curve's calibration needs k >= {low} "
            f"windows (a smaller calibration set gives every class), but the median user "
            f"has {high + min_test} rows, {high} beside --min-test {min_test}; give --k "
            "yourself, or lower --min-test or raise --alpha"
        )
        raise DataError(message)
    grid = np.geomspace(low, high, points) if high > low else np.array([low])
    rounded = [low] + [int(5 * round(v / 5)) for v in grid[1:-1]] + [high]
    return tuple(sorted({0, *(k for k in rounded if low <= k <= high)}))
