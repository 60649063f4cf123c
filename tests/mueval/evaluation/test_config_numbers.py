"""A run's counts are whole numbers in range, refused by name otherwise.

``iterations=2.5`` reached ``range()`` as a TypeError, ``seed_base`` of -5, 1.5
or 2**32 reached scikit-learn as a "cannot split" SplitError, and ``gap=0.5`` or
``iterations=True`` were taken as they were.
"""

from __future__ import annotations

import numpy as np
import pytest

from mueval.errors import UsageError
from mueval.evaluation.config import MAX_SEED, EvalConfig
from mueval.evaluation.labelcurve.config import CurveConfig


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"iterations": 2.5}, "iterations must be a whole number of 1 or more, got 2.5"),
        ({"iterations": True}, "iterations must be a whole number of 1 or more, got True"),
        ({"iterations": 0}, "iterations must be a whole number of 1 or more, got 0"),
        ({"gap": 0.5}, "gap must be a whole number of 0 or more, got 0.5"),
        ({"gap": -1}, "gap must be a whole number of 0 or more, got -1"),
        ({"seed_base": -5}, "seed_base must be a whole number of 0 or more, got -5"),
        ({"seed_base": 1.5}, "seed_base must be a whole number of 0 or more, got 1.5"),
        ({"seed_base": MAX_SEED}, "seed_base must leave room for 20 iteration seeds"),
    ],
)
def test_a_count_out_of_range_is_refused_by_name(settings: dict, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        EvalConfig(**settings)


def test_the_last_seeds_scikit_learn_takes_are_allowed() -> None:
    config = EvalConfig(iterations=2, seed_base=MAX_SEED - 2, gap=np.int64(3))
    assert [config.seed_base + i for i in (1, 2)] == [MAX_SEED - 1, MAX_SEED]


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"iterations": 1.5}, "iterations must be a whole number of 1 or more"),
        ({"min_test": 0}, "min_test must be a whole number of 1 or more, got 0"),
        ({"seed_base": -1}, "seed_base must be a whole number of 0 or more"),
    ],
)
def test_the_curve_takes_the_same_rules(settings: dict, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        CurveConfig(**settings)
