"""A model whose class probabilities are NaN (naive Bayes on features constant over
its training rows) stops the run naming the task and the likely cause; the
conformal step said only "cal_scores must be finite"."""

from __future__ import annotations

import warnings

import pytest

import mueval
from mueval.data.synthetic import make_users
from mueval.errors import EvaluationError


def test_non_finite_probabilities_name_the_task_and_a_cause() -> None:
    frame = make_users(6, n_classes=3, rows_per_user=110, n_features=4, seed=3)
    frame[["f0", "f1", "f2", "f3"]] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scikit-learn's own, dividing by 0
        with pytest.raises(EvaluationError) as caught:
            mueval.evaluate(
                frame, strategies=["mm"], classifiers=["nb"], iterations=1, jobs=1, progress=False
            )
    message = str(caught.value)
    assert message.startswith("strategy mm, all users, seed 101, classifier nb: ")
    assert "not finite (NaN or infinite) in 264 of 264 rows" in message
    assert "a feature constant over the training rows" in message
