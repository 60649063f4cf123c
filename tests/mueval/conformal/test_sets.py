"""Conformal step: MAPIE sets equal the hand LAC sets; Mondrian; p-values; limits."""

from __future__ import annotations

import numpy as np
import pytest

from mueval.conformal.pvalues import lac_pvalues
from mueval.conformal.scores import class_scores, get_score, lac_scores
from mueval.conformal.sets import conformalize
from mueval.conformal.thresholds import lac_sets, lac_threshold, min_calibration_size
from mueval.errors import EvaluationError, UsageError
from mueval.evaluation.models import CLASSIFIERS, fit_scaled, full_proba
from mueval.evaluation.splits import make_splits


def _dirichlet(n: int, k: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(k) * 0.7, size=n)


def test_mapie_lac_sets_equal_hand_sets_on_random_probabilities() -> None:
    for seed in range(5):
        proba_cal, proba_test = _dirichlet(60, 5, seed), _dirichlet(200, 5, seed + 100)
        y_cal = np.random.default_rng(seed).integers(0, 5, 60)
        for rule in ("study", "mapie"):
            out = conformalize(proba_cal, y_cal, proba_test, alpha=0.1, threshold=rule)
            q = lac_threshold(lac_scores(proba_cal, y_cal), 0.1, rule=rule)
            assert np.array_equal(out.sets, lac_sets(proba_test, q, rule=rule))
        assert out.n_cal == 60


def test_mapie_sets_equal_hand_sets_on_real_models(wisdm_dir, tmp_path) -> None:
    from mueval.data.table import load_registered

    table = load_registered("wisdm", data_home=tmp_path, manual_dir=wisdm_dir)
    (split,) = make_splits(table.y, table.users, ["mm"], 1, 101)
    cal = split.calibrations["mm"]
    for code in CLASSIFIERS:
        if code == "svm":
            continue  # keeps this test fast; SVC is covered by the Table 6 test
        scaler, model = fit_scaled(code, 101, table.X[split.train], table.y[split.train])
        p_cal = full_proba(model, scaler.transform(table.X[cal]), 6)
        p_test = full_proba(model, scaler.transform(table.X[split.test]), 6)
        out = conformalize(p_cal, table.y[cal], p_test, threshold="mapie")
        q = lac_threshold(lac_scores(p_cal, table.y[cal]), 0.05, rule="mapie")
        assert np.array_equal(out.sets, lac_sets(p_test, q, rule="mapie")), code
        assert np.array_equal(out.pvalues, lac_pvalues(lac_scores(p_cal, table.y[cal]), p_test))


def test_hand_example_threshold_and_pvalues() -> None:
    # 19 calibration rows with true-class probability 0.05, 0.10, ..., 0.95:
    # scores 0.95 .. 0.05. alpha=0.05: rank ceil(20*0.95) = 19 -> q = 0.95 (largest).
    # alpha=0.1 would need 19 rows too... use alpha=0.05 with 19 rows is below MAPIE's
    # minimum of 20, so add one more row with p=1.0 (score 0): n=20, rank ceil(21*.95)=20.
    p_true = np.r_[np.arange(1, 20) * 0.05, 1.0]
    proba_cal = np.column_stack([p_true, 1 - p_true])
    y_cal = np.zeros(20, dtype=int)
    proba_test = np.array([[0.5, 0.5], [0.02, 0.98]])
    out = conformalize(proba_cal, y_cal, proba_test, alpha=0.05)
    # q = 20th smallest score = 0.95: class kept iff 1 - p <= 0.95, i.e. p >= 0.05.
    assert out.sets.tolist() == [[True, True], [False, True]]
    # p(row 0, class 0): scores >= 0.5 are 0.5, 0.55, ..., 0.95 -> 10; (10 + 1) / 21.
    assert out.pvalues[0, 0] == pytest.approx(11 / 21)
    # p(row 1, class 0): score 0.98, none >= -> 1 / 21.
    assert out.pvalues[1, 0] == pytest.approx(1 / 21)


def test_too_small_calibration_set_is_refused_with_its_size() -> None:
    assert min_calibration_size(0.05) == 20
    assert min_calibration_size(0.2) == 5
    proba = _dirichlet(19, 3, 0)
    with pytest.raises(EvaluationError, match=r"19 rows is smaller than 20"):
        conformalize(proba, np.zeros(19, dtype=int), proba, alpha=0.05)


def test_mondrian_uses_one_threshold_per_class() -> None:
    # Class 0 calibration rows are confident (p_true 0.9), class 1 rows not (0.3).
    n = 40
    proba_cal = np.vstack([np.tile([0.9, 0.1], (n, 1)), np.tile([0.7, 0.3], (n, 1))])
    y_cal = np.r_[np.zeros(n, int), np.ones(n, int)]
    proba_test = np.array([[0.85, 0.15], [0.6, 0.4]])
    out = conformalize(proba_cal, y_cal, proba_test, alpha=0.1, mondrian=True)
    # Class 0 threshold 0.1 (all its scores): in the set iff p0 >= 0.9 -> never here.
    # Class 1 threshold 0.7: in the set iff p1 >= 0.3 -> row 1 only.
    assert out.sets.tolist() == [[False, False], [False, True]]
    # p-values count only the class's own rows: row 1, class 1 score 0.6 <= 0.7 for
    # all 40 -> 41/41; row 0, class 0 score 0.15 > 0.1 for all -> 1/41.
    assert out.pvalues[1, 1] == pytest.approx(1.0)
    assert out.pvalues[0, 0] == pytest.approx(1 / 41)
    # Pooled, the threshold is the 73rd smallest of 40 x 0.1 and 40 x 0.7 = 0.7.
    pooled = conformalize(proba_cal, y_cal, proba_test, alpha=0.1)
    assert pooled.sets.tolist() == [[True, False], [True, True]]


def test_mondrian_class_without_calibration_rows_is_always_kept() -> None:
    proba_cal = np.tile([0.8, 0.1, 0.1], (30, 1))
    y_cal = np.zeros(30, dtype=int)
    out = conformalize(proba_cal, y_cal, np.array([[0.98, 0.01, 0.01]]), mondrian=True)
    assert out.sets[0, 1] and out.sets[0, 2]


def test_other_scores_give_sets_and_rank_based_pvalues() -> None:
    proba = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    # top_k: rank of each class (ties share the better rank).
    assert class_scores(proba, "top_k").tolist() == [[1, 2, 3], [2, 2, 1]]
    # aps: mass of the classes ranked at or above (row 1, class 0: 0.6 + 0.2).
    assert np.allclose(class_scores(proba, "aps"), [[0.5, 0.8, 1.0], [0.8, 0.8, 0.6]])
    proba_cal, proba_test = _dirichlet(500, 4, 1), _dirichlet(30, 4, 2)
    y_cal = np.random.default_rng(3).integers(0, 4, 500)
    raps = get_score("raps", raps_lambda=0.01, raps_k_reg=2)
    for score in ("aps", raps, "top_k"):
        out = conformalize(proba_cal, y_cal, proba_test, score=score, seed=1)
        assert out.sets.shape == (30, 4) and out.pvalues.shape == (30, 4)
        assert ((out.pvalues >= 1 / 501 - 1e-12) & (out.pvalues <= 1)).all()
        again = conformalize(proba_cal, y_cal, proba_test, score=score, seed=1)
        assert np.array_equal(out.sets, again.sets)  # seeded: reproducible


def test_raps_needs_about_ten_times_the_minimum_calibration_size() -> None:
    # 150 rows pass LAC's minimum of 20, but RAPS tunes on 10 % = 15 < 20 of them.
    proba = _dirichlet(150, 3, 0)
    y_cal = np.random.default_rng(0).integers(0, 3, 150)
    conformalize(proba, y_cal, proba, score="lac", threshold="mapie")
    with pytest.raises(EvaluationError, match=r"of 150 rows \(raps tunes its penalty"):
        conformalize(proba, y_cal, proba, score="raps", seed=0, threshold="mapie")
    # The study rule has no tuning split: it takes RAPS with a given penalty only.
    with pytest.raises(UsageError, match="raps under --threshold study needs --raps-lambda"):
        conformalize(proba, y_cal, proba, score="raps")
    raps = get_score("raps", raps_lambda=0.01, raps_k_reg=2)
    assert conformalize(proba, y_cal, proba, score=raps).sets.shape == (150, 3)


@pytest.mark.parametrize("score", ["aps", "top_k"])
def test_study_rule_sets_come_from_the_pvalue_scores(score: str) -> None:
    # The sets and the p-values describe the same scores: a class is in the set
    # exactly when its score is at most the study threshold of the calibration scores.
    proba_cal, proba_test = _dirichlet(137, 4, 5), _dirichlet(60, 4, 6)
    # Labels drawn from the probabilities, so the model is calibrated and q < max.
    rng = np.random.default_rng(4)
    y_cal = np.array([rng.choice(4, p=row) for row in proba_cal])
    out = conformalize(proba_cal, y_cal, proba_test, score=score, alpha=0.1)
    cal_scores = class_scores(proba_cal, score)[np.arange(137), y_cal]
    q = lac_threshold(cal_scores, 0.1, rule="study")
    assert q < cal_scores.max()
    test_scores = class_scores(proba_test, score)
    assert np.array_equal(out.sets, test_scores - q <= np.finfo(float).eps)
    assert 0 < out.sets.sum() < out.sets.size
    # and the p-value of a class in the set is never below that of a class outside it
    assert out.pvalues[out.sets].min() >= out.pvalues[~out.sets].max()
