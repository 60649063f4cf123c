"""The user-independent splits (UIM, UCM, UKM) of a table they cannot split: named."""

from __future__ import annotations

import pytest

import mueval
from mueval.data.synthetic import make_users
from mueval.errors import SplitError


@pytest.mark.parametrize("strategy", ["uim", "ucm", "ukm"])
def test_a_table_of_one_user_names_why_user_independent_strategies_cannot_run(strategy) -> None:
    """It said "the other users' rows hold only one class ()": an empty list of classes."""
    frame = make_users(2, n_classes=3, rows_per_user=200, n_features=4, seed=3)
    one = frame[frame["userid"] == frame["userid"].iloc[0]]
    with pytest.raises(SplitError, match="the table has no user besides the target: uim, ucm"):
        mueval.evaluate(
            one, strategies=[strategy], classifiers=["nb"], iterations=1, jobs=1, progress=False
        )
