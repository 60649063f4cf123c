"""Tests of mueval.metrics.classic: caret-style macro metrics and the HAR weighted F1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, f1_score, precision_score, recall_score

from mueval.errors import DataError
from mueval.metrics import MetricInputError, classification_metrics


def test_three_classes_by_hand() -> None:
    # y_true = [0,0,1,1,2], y_pred = [0,1,1,1,0], K = 3
    # class 0: TP=1 FN=1 FP=1 TN=2 -> sens 1/2, spec 2/3, prec 1/2, F1 1/2
    # class 1: TP=2 FN=0 FP=1 TN=2 -> sens 1,   spec 2/3, prec 2/3, F1 2*(2/3)/(5/3) = 4/5
    # class 2: TP=0 FN=1 FP=0 TN=4 -> sens 0,   spec 1,   prec 0/0 -> F1 undefined, left out
    out = classification_metrics(np.array([0, 0, 1, 1, 2]), np.array([0, 1, 1, 1, 0]), 3)
    assert out["accuracy"] == pytest.approx(3 / 5)
    assert out["sensitivity"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert out["specificity"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert out["F1"] == pytest.approx((1 / 2 + 4 / 5) / 2)
    # weighted F1 (HAR card): 2/5 * 1/2 + 2/5 * 4/5 + 1/5 * 0 = 0.52
    assert out["weighted_F1"] == pytest.approx(0.52)
    assert all(isinstance(v, float) for v in out.values())


def test_prediction_of_absent_class_leaves_the_table_as_in_caret() -> None:
    # y_true = [0,0,1,1,1], y_pred = [0,2,1,1,0], K = 3; class 2 absent from y_true.
    # caret: factor(pred, levels = c(0, 1)) turns the 2 into NA and table() drops
    # that row. Kept rows: truth [0,1,1,1], pred [0,1,1,0].
    # class 0: TP=1 FN=0 FP=1 TN=2 -> sens 1,   spec 2/3, prec 1/2, F1 2/3
    # class 1: TP=2 FN=1 FP=0 TN=1 -> sens 2/3, spec 1,   prec 1,   F1 4/5
    out = classification_metrics([0, 0, 1, 1, 1], [0, 2, 1, 1, 0], 3)
    assert out["accuracy"] == pytest.approx(3 / 4)  # 3 right of the 4 kept rows
    assert out["sensitivity"] == pytest.approx((1 + 2 / 3) / 2)
    assert out["specificity"] == pytest.approx((2 / 3 + 1) / 2)
    assert out["F1"] == pytest.approx((2 / 3 + 4 / 5) / 2)
    # The HAR weighted F1 is not caret's: over all five rows, class 0 TP=1 FN=1 FP=1
    # (F1 1/2), class 1 TP=2 FN=1 FP=0 (F1 4/5): 2/5 * 1/2 + 3/5 * 4/5.
    assert out["weighted_F1"] == pytest.approx(2 / 5 * 1 / 2 + 3 / 5 * 4 / 5)


def test_every_prediction_outside_the_truth_labels_gives_undefined_accuracy() -> None:
    out = classification_metrics([0, 1], [2, 2], 3)
    assert math.isnan(out["accuracy"])
    assert math.isnan(out["sensitivity"])


def test_single_class_subset_is_undefined_as_caret_refuses_it() -> None:
    # caret stops on a ground truth with one level; the four metrics are undefined.
    out = classification_metrics([1, 1, 1], [1, 0, 1], 2)
    for name in ("accuracy", "sensitivity", "specificity", "F1"):
        assert math.isnan(out[name]), name
    # class 1: TP=2 FN=1 FP=0 -> F1 4/5, weight 1
    assert out["weighted_F1"] == pytest.approx(4 / 5)


def test_f1_with_no_true_positive_is_left_out_like_caret() -> None:
    # y_true = [0,1], y_pred = [1,0]: each class TP=0, so P = R = 0 and F1 = 0/0 in R.
    # sens 0/1 = 0, spec TN/(TN+FP) = 0/1 = 0. The HAR weighted F1 counts 0 instead.
    out = classification_metrics([0, 1], [1, 0], 2)
    assert out["accuracy"] == 0.0
    assert out["sensitivity"] == 0.0
    assert out["specificity"] == 0.0
    assert math.isnan(out["F1"])
    assert out["weighted_F1"] == 0.0


def test_class_never_predicted_drops_only_its_f1() -> None:
    # y_true = [0,0,1,2], y_pred = [0,0,0,2], K = 3
    # class 0: TP=2 FN=0 FP=1 TN=1 -> F1 2*(2/3)*1/(5/3) = 4/5
    # class 1: TP=0 FN=1 FP=0 -> prec 0/0 -> F1 dropped; sens 0 kept; spec 3/3 = 1
    # class 2: TP=1 FN=0 FP=0 -> F1 1
    out = classification_metrics([0, 0, 1, 2], [0, 0, 0, 2], 3)
    assert out["F1"] == pytest.approx((4 / 5 + 1) / 2)
    assert out["sensitivity"] == pytest.approx((1 + 0 + 1) / 3)
    # spec: class 0 1/(1+1) = 1/2, class 1 3/3, class 2 3/3
    assert out["specificity"] == pytest.approx((1 / 2 + 1 + 1) / 3)


def test_matches_sklearn_when_every_class_is_present_and_predicted() -> None:
    rng = np.random.default_rng(7)
    y_true = np.repeat(np.arange(4), 25)
    y_pred = np.where(rng.random(100) < 0.7, y_true, rng.integers(0, 4, 100))
    out = classification_metrics(y_true, y_pred, 4)
    recall = recall_score(y_true, y_pred, average=None)
    precision = precision_score(y_true, y_pred, average=None)
    f1 = f1_score(y_true, y_pred, average=None)
    assert (precision > 0).all()  # so that no per-class value is undefined
    cm = confusion_matrix(y_true, y_pred)
    fp = cm.sum(axis=0) - np.diag(cm)
    tn = cm.sum() - cm.sum(axis=0) - cm.sum(axis=1) + np.diag(cm)
    assert out["sensitivity"] == pytest.approx(recall.mean())
    assert out["F1"] == pytest.approx(f1.mean())
    assert out["specificity"] == pytest.approx(np.mean(tn / (tn + fp)))
    assert out["accuracy"] == pytest.approx(np.mean(y_true == y_pred))
    assert out["weighted_F1"] == pytest.approx(f1_score(y_true, y_pred, average="weighted"))


def test_empty_input_gives_nan() -> None:
    out = classification_metrics(np.array([], dtype=int), np.array([], dtype=int), 3)
    assert all(math.isnan(v) for v in out.values())


@pytest.mark.parametrize(
    ("y_true", "y_pred", "n_classes", "expected"),
    [
        (
            np.array([0.0, 1.0]),
            np.array([0, 1]),
            2,
            "y_true must be a 1-D integer array.*float64.*\\(2,\\)",
        ),
        (np.array([[0, 1]]), np.array([0, 1]), 2, "y_true must be a 1-D.*shape \\(1, 2\\)"),
        (
            np.array([0, 3]),
            np.array([0, 1]),
            3,
            "y_true must hold class indices in 0..2; found values from 0 to 3",
        ),
        (np.array([0, 1]), np.array([0, -1]), 2, "y_pred must hold class indices"),
        (np.array([0, 1]), np.array([0, 1, 1]), 2, "y_true has 2, y_pred has 3"),
        (np.array([0, 1]), np.array([0, 1]), 0, "n_classes must be a positive integer; found 0"),
    ],
)
def test_bad_inputs_raise_naming_the_argument(y_true, y_pred, n_classes, expected) -> None:
    with pytest.raises(MetricInputError, match=expected) as info:
        classification_metrics(y_true, y_pred, n_classes)
    assert isinstance(info.value, DataError) and isinstance(info.value, ValueError)
