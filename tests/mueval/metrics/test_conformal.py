"""Tests of mueval.conformal (LAC threshold, sets, p-values) and mueval.metrics.conformal (the criteria)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from mapie.classification import SplitConformalClassifier
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

from mueval.conformal.pvalues import lac_pvalues
from mueval.conformal.scores import lac_scores
from mueval.conformal.thresholds import lac_sets, lac_threshold
from mueval.metrics import MetricInputError, study_conformal_metrics, textbook_criteria

# Four rows, K = 3, used by the hand-computed criteria tests.
Y = np.array([0, 1, 2, 0])
SETS = np.array(
    [
        [True, True, False],  # y=0 covered, |S|=2, false class 1 in S
        [False, True, False],  # y=1 covered, |S|=1
        [False, False, False],  # empty
        [False, True, True],  # y=0 not covered, |S|=2, false classes 1 and 2 in S
    ]
)
P = np.array(
    [
        [0.60, 0.30, 0.05],
        [0.10, 0.80, 0.20],
        [0.02, 0.03, 0.04],
        [0.01, 0.50, 0.25],
    ]
)


def test_study_metrics_by_hand() -> None:
    out = study_conformal_metrics(Y, SETS, P)
    assert set(out) == {
        "coverage", "jaccard", "setsize", "pctempty", "MCriterion",
        "FCriterion", "OM", "OF", "OU", "OE",
    }  # fmt: skip
    assert out["coverage"] == pytest.approx(2 / 4)
    # jaccard: 1/2, 1/1, 0 (empty), 0/3 -> 1.5 / 4
    assert out["jaccard"] == pytest.approx(0.375)
    assert out["setsize"] == pytest.approx((2 + 1 + 0 + 2) / 4)
    assert out["pctempty"] == pytest.approx(1 / 4)
    # non-empty rows 0, 1, 3: |S| > 1 for rows 0 and 3
    assert out["MCriterion"] == pytest.approx(2 / 3)
    # sum - max: .95-.6=.35, 1.1-.8=.3, .09-.04=.05, .76-.5=.26 -> .96/4
    assert out["FCriterion"] == pytest.approx(0.24)
    assert out["OM"] == pytest.approx(2 / 3)
    # false classes in S: row 0 {1}: .3; row 1 none: 0; row 3 {1,2}: .5+.25 -> 1.05/3
    assert out["OF"] == pytest.approx(0.35)
    # max of those: .3, 0, .5 -> .8/3
    assert out["OU"] == pytest.approx(0.8 / 3)
    # |S minus {y}|: 1, 0, 0, 2 -> 3/4
    assert out["OE"] == pytest.approx(0.75)


def test_textbook_criteria_by_hand() -> None:
    out = textbook_criteria(Y, P, epsilon=0.05)
    # all false classes, all rows: .35, .3, .05 (.02+.03), .75 (.5+.25) -> 1.45/4
    assert out["OF_textbook"] == pytest.approx(0.3625)
    # max false p: .3, .2, .03 (row 2's true class holds .04), .5 -> 1.03/4
    assert out["OU_textbook"] == pytest.approx(0.2575)
    assert out["S_criterion"] == pytest.approx((0.95 + 1.1 + 0.09 + 0.76) / 4)
    # second largest p: .3, .2, .03, .25 -> .78/4
    assert out["U_criterion"] == pytest.approx(0.195)
    # #{p > .05}: 2, 3, 0, 2 -> 7/4
    assert out["N_criterion"] == pytest.approx(1.75)
    assert math.isnan(textbook_criteria(Y, P)["N_criterion"])


def test_textbook_differs_from_study_of_ou() -> None:
    study = study_conformal_metrics(Y, SETS, P)
    textbook = textbook_criteria(Y, P)
    assert study["OF"] != pytest.approx(textbook["OF_textbook"])
    assert study["OU"] != pytest.approx(textbook["OU_textbook"])


def test_all_empty_sets() -> None:
    sets = np.zeros((3, 2), dtype=bool)
    out = study_conformal_metrics([0, 1, 1], sets, np.full((3, 2), 0.5))
    assert out["coverage"] == 0.0
    assert out["jaccard"] == 0.0
    assert out["setsize"] == 0.0
    assert out["pctempty"] == 1.0
    assert out["OE"] == 0.0
    assert out["FCriterion"] == pytest.approx(0.5)  # 1.0 - 0.5 per row
    for key in ("MCriterion", "OM", "OF", "OU"):  # means over no non-empty row
        assert math.isnan(out[key])


def test_single_class_problem() -> None:
    out = study_conformal_metrics([0, 0], np.array([[True], [False]]), np.array([[0.9], [0.01]]))
    assert out["coverage"] == 0.5 and out["OE"] == 0.0 and out["OF"] == 0.0 and out["OU"] == 0.0
    assert out["FCriterion"] == 0.0
    textbook = textbook_criteria([0, 0], np.array([[0.9], [0.01]]))
    assert textbook["OF_textbook"] == 0.0
    assert math.isnan(textbook["OU_textbook"]) and math.isnan(textbook["U_criterion"])


def test_full_sets_of_integer_type_are_accepted() -> None:
    out = study_conformal_metrics([0, 1], np.ones((2, 3), dtype=int), np.full((2, 3), 0.5))
    assert out["setsize"] == 3.0 and out["jaccard"] == pytest.approx(1 / 3) and out["OE"] == 2.0


def test_empty_input_gives_nan() -> None:
    out = study_conformal_metrics(np.array([], dtype=int), np.zeros((0, 3), bool), np.zeros((0, 3)))
    assert all(math.isnan(v) for v in out.values())


@pytest.mark.parametrize(
    ("y", "sets", "pvalues", "expected"),
    [
        (
            [0, 1],
            np.ones((2, 3), bool),
            np.full((2, 2), 0.5),
            "pvalues must have 3 columns.*shape \\(2, 2\\)",
        ),
        (
            [0, 1],
            np.ones((2, 3), bool),
            np.full((2, 3), 1.5),
            "pvalues must lie in \\[0.0, 1.0\\].*1.5",
        ),
        (
            [0, 3],
            np.ones((2, 3), bool),
            np.full((2, 3), 0.5),
            "y_true must hold class indices in 0..2",
        ),
        (
            [0, 1],
            np.ones(3, bool),
            np.full((2, 3), 0.5),
            "sets must be a 2-D boolean array.*shape \\(3,\\)",
        ),
        ([0, 1], np.full((2, 3), 0.5), np.full((2, 3), 0.5), "sets must be a 2-D boolean.*float64"),
        ([0, 1, 1], np.ones((2, 3), bool), np.full((2, 3), 0.5), "y_true has 3, sets has 2"),
    ],
)
def test_bad_inputs_raise(y, sets, pvalues, expected) -> None:
    with pytest.raises(MetricInputError, match=expected):
        study_conformal_metrics(np.asarray(y), sets, pvalues)


# --- LAC -------------------------------------------------------------------


def test_lac_threshold_mapie_rule_by_hand() -> None:
    scores = np.arange(1, 41) / 100  # 0.01 .. 0.40, n = 40, shuffled order must not matter
    rng = np.random.default_rng(0)
    # rank ceil(41 * 0.95) = ceil(38.95) = 39 -> 0.39
    assert lac_threshold(rng.permutation(scores), 0.05, rule="mapie") == 0.39
    # n = 9, alpha = 0.25: rank ceil(10 * 0.75) = ceil(7.5) = 8 -> 8th smallest
    assert lac_threshold(np.array([9, 1, 8, 2, 7, 3, 6, 4, 5]) / 10, 0.25, rule="mapie") == 0.8
    # n = 19, alpha = 0.05: rank ceil(20 * 0.95) = 19 = n -> the largest score
    assert lac_threshold(np.linspace(0, 1, 19), 0.05, rule="mapie") == 1.0
    # n = 10, alpha = 0.05: rank ceil(11 * 0.95) = 11 > n -> inf
    assert lac_threshold(np.linspace(0, 1, 10), 0.05, rule="mapie") == math.inf


def test_lac_threshold_study_rule_by_hand() -> None:
    rng = np.random.default_rng(1)
    # n = 40, alpha = 0.05: level 41 * 0.95 / 40 = 0.97375; numpy's "higher" takes
    # 0-based index ceil(0.97375 * 39) = ceil(37.976) = 38 -> 0.39, as the MAPIE rule.
    scores = np.arange(1, 41) / 100
    assert lac_threshold(rng.permutation(scores), 0.05) == 0.39
    # n = 39: level 40 * 0.95 / 39 = 0.974359; index ceil(0.974359 * 38) = ceil(37.03)
    # = 38 -> 0.39, the largest score; the MAPIE rule takes rank ceil(40 * 0.95) = 38,
    # 0-based index 37 -> 0.38. The study's threshold is one rank higher here.
    scores = np.arange(1, 40) / 100
    assert lac_threshold(rng.permutation(scores), 0.05, rule="study") == 0.39
    assert lac_threshold(rng.permutation(scores), 0.05, rule="mapie") == 0.38
    # n = 19 at alpha = 0.05: level 20 * 0.95 / 19 = 1.0 -> the largest score
    assert lac_threshold(np.linspace(0, 1, 19), 0.05) == 1.0
    # n = 10: level 11 * 0.95 / 10 = 1.045 > 1 -> inf
    assert lac_threshold(np.linspace(0, 1, 10), 0.05) == math.inf


def _brute_force_study_threshold(scores: np.ndarray, alpha: float) -> float:
    """numpy's "higher" quantile written out: sort, then index ceil(level * (n - 1))."""
    n = len(scores)
    level = ((n + 1) * (1 - alpha)) / n
    if level > 1:
        return math.inf
    position = level * (n - 1)
    index = int(position) if position == int(position) else int(position) + 1
    return float(sorted(scores)[index])


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_lac_threshold_study_rule_equals_brute_force(alpha: float) -> None:
    rng = np.random.default_rng(7)
    for n in range(5, 301):
        scores = rng.random(n)
        assert lac_threshold(scores, alpha) == _brute_force_study_threshold(scores, alpha), n


def test_lac_threshold_rejects_unknown_rule() -> None:
    with pytest.raises(MetricInputError, match=r"unknown threshold rule 'r'; valid: study, mapie"):
        lac_threshold(np.ones(30), 0.05, rule="r")


def test_lac_threshold_rejects_bad_alpha_and_empty_scores() -> None:
    with pytest.raises(
        MetricInputError, match=r"alpha must be a miscoverage level in \(0, 1\); found 1\.5"
    ):
        lac_threshold(np.ones(5), 1.5)
    with pytest.raises(MetricInputError, match="at least one calibration score"):
        lac_threshold(np.array([]), 0.05)


def test_lac_sets_by_hand_include_exact_ties() -> None:
    proba = np.array([[0.75, 0.125, 0.125], [0.5, 0.25, 0.25]])
    # 1 - p = [[.25, .875, .875], [.5, .75, .75]]; q = .75 keeps scores <= .75 (exact tie kept)
    expected = np.array([[True, False, False], [True, True, True]])
    for rule in ("study", "mapie"):
        np.testing.assert_array_equal(lac_sets(proba, 0.75, rule=rule), expected)
        assert lac_sets(proba, math.inf, rule=rule).all()
        assert lac_sets(proba, 0.1, rule=rule).sum() == 0  # sets may be empty
    # 1e-9 below the tie: excluded by the study's machine-epsilon tolerance, kept by
    # MAPIE 1.x's 1e-8
    below = 0.75 - 1e-9
    np.testing.assert_array_equal(
        lac_sets(proba, below, rule="study"), [[True, False, False], [True, False, False]]
    )
    np.testing.assert_array_equal(lac_sets(proba, below, rule="mapie"), expected)


def test_lac_sets_study_tolerance_is_machine_epsilon() -> None:
    # p - (1 - q) >= -eps: one ulp below the bound at 0.5 is within eps, 3e-16 is not.
    q = 0.5
    within = np.nextafter(0.5, 0.0)  # 0.5 - 5.55e-17
    outside = 0.5 - 3e-16
    sets = lac_sets(np.array([[within, 1 - within], [outside, 1 - outside]]), q, rule="study")
    np.testing.assert_array_equal(sets[:, 0], [True, False])


def test_lac_scores_by_hand() -> None:
    proba = np.array([[0.75, 0.25], [0.5, 0.5], [0.125, 0.875]])
    np.testing.assert_array_equal(lac_scores(proba, [0, 1, 0]), [0.25, 0.5, 0.875])


def test_lac_pvalues_by_hand() -> None:
    cal = np.array([0.125, 0.25, 0.25, 0.75])  # n = 4
    # test scores 1 - p = .25, .75, 1.0; #{cal >= s} = 3, 1, 0 -> (count+1)/5
    p = lac_pvalues(cal, np.array([[0.75, 0.25, 0.0]]))
    np.testing.assert_array_equal(p, [[4 / 5, 2 / 5, 1 / 5]])


def _brute_force_pvalues(cal_scores: np.ndarray, test_proba: np.ndarray) -> np.ndarray:
    n_cal = len(cal_scores)
    out = np.empty(test_proba.shape)
    for r in range(test_proba.shape[0]):
        for c in range(test_proba.shape[1]):
            s = 1.0 - test_proba[r, c]
            out[r, c] = (sum(1 for a in cal_scores if a >= s) + 1) / (n_cal + 1)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lac_pvalues_equal_brute_force_with_exact_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_cal, n_test, k = 60, 40, 4

    def rf_like(n: int) -> np.ndarray:
        # Votes of 50 trees: probabilities on a 1/50 grid, so scores tie often.
        votes = rng.multinomial(50, rng.dirichlet(np.ones(k)), size=n)
        return votes / 50

    cal_proba = rf_like(n_cal)
    cal_scores = lac_scores(cal_proba, rng.integers(0, k, n_cal))
    test_proba = rf_like(n_test)
    test_proba[:5] = cal_proba[:5]  # the very same floats as some calibration rows
    expected = _brute_force_pvalues(cal_scores, test_proba)
    np.testing.assert_array_equal(lac_pvalues(cal_scores, test_proba), expected)
    # ties really occur: some test score equals some calibration score exactly
    assert np.isin(1.0 - test_proba, cal_scores).any()


@pytest.mark.parametrize(("n_features", "train_size"), [(None, 0.5), (2, 0.4)])
def test_lac_sets_match_mapie_split_conformal(n_features: int | None, train_size: float) -> None:
    X, y = load_wine(return_X_y=True)
    if n_features is not None:
        X = X[:, :n_features]  # a weaker model: sets of size 1 to 3
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, train_size=train_size, random_state=0, stratify=y
    )
    X_cal, X_test, y_cal, _ = train_test_split(
        X_rest, y_rest, train_size=0.5, random_state=0, stratify=y_rest
    )
    assert len(y_cal) >= 20
    model = GaussianNB().fit(X_train, y_train)
    mapie = SplitConformalClassifier(
        model, confidence_level=0.95, conformity_score="lac", prefit=True
    ).conformalize(X_cal, y_cal)
    _, mapie_sets = mapie.predict_set(X_test)
    mapie_sets = mapie_sets[:, :, 0]

    q = lac_threshold(lac_scores(model.predict_proba(X_cal), y_cal), alpha=0.05, rule="mapie")
    ours = lac_sets(model.predict_proba(X_test), q, rule="mapie")
    np.testing.assert_array_equal(ours, mapie_sets)
    assert 0 < q < math.inf


# --- properties ------------------------------------------------------------


@st.composite
def conformal_case(draw):
    n = draw(st.integers(1, 30))
    k = draw(st.integers(1, 5))
    y = draw(arrays(np.int64, n, elements=st.integers(0, k - 1)))
    sets = draw(arrays(np.bool_, (n, k)))
    pvalues = draw(arrays(np.float64, (n, k), elements=st.floats(0.0, 1.0)))
    return y, sets, pvalues


@settings(max_examples=50, deadline=None)
@given(conformal_case())
def test_study_metrics_ranges(case) -> None:
    y, sets, pvalues = case
    k = sets.shape[1]
    out = study_conformal_metrics(y, sets, pvalues)
    assert 0.0 <= out["coverage"] <= 1.0
    assert 0.0 <= out["jaccard"] <= out["coverage"]  # jaccard <= 1 and is 0 when uncovered
    assert 0.0 <= out["setsize"] <= k
    assert 0.0 <= out["pctempty"] <= 1.0
    assert 0.0 <= out["OE"] <= k - 1
    assert out["OE"] == pytest.approx(out["setsize"] - out["coverage"])
    for key in ("MCriterion", "OM"):
        assert math.isnan(out[key]) or 0.0 <= out[key] <= 1.0
    textbook = textbook_criteria(y, pvalues)
    assert out["FCriterion"] <= textbook["S_criterion"] + 1e-12


@settings(max_examples=50, deadline=None)
@given(
    cal=arrays(np.float64, st.integers(1, 40), elements=st.floats(0.0, 1.0)),
    proba=arrays(
        np.float64, st.tuples(st.integers(1, 10), st.integers(1, 4)), elements=st.floats(0.0, 1.0)
    ),
)
def test_pvalues_in_unit_interval_and_monotone(cal, proba) -> None:
    p = lac_pvalues(cal, proba)
    assert p.shape == proba.shape
    assert (p > 0).all() and (p <= 1).all()
    assert (p >= 1 / (len(cal) + 1)).all()
    # a larger probability means a smaller score, hence a p-value at least as large
    order = np.argsort(proba.ravel())
    assert (np.diff(p.ravel()[order]) >= 0).all()
