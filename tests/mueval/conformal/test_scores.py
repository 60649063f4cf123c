"""Conformity scores as plug-ins (issue 29, item 3): each named score against MAPIE
1.x's own on the same calibration and test rows, RAPS that is RAPS (never APS in
disguise), randomised ties, and a score function of the user's through
:func:`mueval.evaluate`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from mapie.conformity_scores import (
    APSConformityScore,
    LACConformityScore,
    RAPSConformityScore,
    TopKConformityScore,
)
from mapie.utils import _compute_classification_quantile

import mueval
from mueval.cli.main import main
from mueval.conformal.pvalues import conformal_pvalues
from mueval.conformal.scores import (
    SCORE_REGISTRY,
    aps_scores,
    class_scores,
    get_score,
    lac_scores,
    raps_scores,
    top_k_scores,
)
from mueval.conformal.sets import _scores, conformalize
from mueval.conformal.thresholds import lac_threshold
from mueval.errors import UsageError
from mueval.names import SCORES

K = 5
ALPHA = 0.1
SEED = 7


def _rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Dirichlet probabilities (no two equal in a row: no ties) and labels drawn from them."""
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(K, 0.6), size=n)
    y = np.array([rng.choice(K, p=p) for p in proba])
    return proba, y


@pytest.fixture(scope="module")
def rows():
    proba_cal, y_cal = _rows(300, 1)
    proba_test, y_test = _rows(200, 2)
    assert all(len(set(p)) == K for p in np.vstack([proba_cal, proba_test]))  # no ties
    return proba_cal, y_cal, proba_test, y_test


def _mapie(score_class, **attributes):
    score = score_class()
    score.set_external_attributes(classes=np.arange(K), random_state=SEED, **attributes)
    return score


def test_the_registry_is_the_command_lines_list() -> None:
    # The command line offers names.SCORES without importing numpy: the two agree.
    assert tuple(SCORE_REGISTRY) == SCORES
    for name, record in SCORE_REGISTRY.items():
        assert record.name == name and record.summary


def test_lac_is_mapies_to_the_float(rows) -> None:
    proba_cal, y_cal, _, _ = rows
    theirs = _mapie(LACConformityScore).get_conformity_scores(y_cal, proba_cal, y_enc=y_cal)
    np.testing.assert_array_equal(lac_scores(proba_cal, y_cal), theirs.ravel())


def test_aps_is_mapies_non_randomised_score(rows) -> None:
    """MAPIE's APS score before its random draw is ``get_true_label_cumsum_proba``.
    It sums the sorted probabilities left to right, mueval sums the classes
    ranked above in index order: the same terms in another order, so within
    1e-12 (a few ulps), not to the float."""
    proba_cal, y_cal, _, _ = rows
    theirs, _ = APSConformityScore.get_true_label_cumsum_proba(y_cal, proba_cal, np.arange(K))
    np.testing.assert_allclose(aps_scores(proba_cal, y_cal), theirs.ravel(), rtol=0, atol=1e-12)


def test_randomised_aps_is_mapies_calibration_score(rows) -> None:
    """MAPIE 1.x always randomises APS on the calibration rows: ``cumsum - u * p_y``
    with ``u`` the first draws of ``RandomState(random_state)``; mueval draws the
    same ``u`` for ``randomized=True``."""
    proba_cal, y_cal, proba_test, _ = rows
    theirs = _mapie(APSConformityScore).get_conformity_scores(y_cal, proba_cal, y_enc=y_cal)
    ours, _ = _scores(proba_cal, y_cal, proba_test, get_score("aps", randomized=True), SEED)
    np.testing.assert_allclose(ours, theirs.ravel(), rtol=0, atol=1e-12)
    plain = aps_scores(proba_cal, y_cal)
    assert np.all(ours <= plain) and np.all(ours >= plain - proba_cal[np.arange(300), y_cal])
    assert not np.allclose(ours, plain)


@pytest.mark.parametrize("lam,k_reg", [(0.01, 2), (0.2, 1), (0.5, 3), (0.0, 0)])
def test_raps_is_mapies_regularised_score(rows, lam, k_reg) -> None:
    proba_cal, y_cal, _, _ = rows
    cumsum, cutoff = APSConformityScore.get_true_label_cumsum_proba(y_cal, proba_cal, np.arange(K))
    theirs = RAPSConformityScore._regularize_conformity_score(
        np.array([k_reg]), lam, cumsum, cutoff
    )[:, 0, 0]
    ours = raps_scores(proba_cal, y_cal, lam=lam, k_reg=k_reg)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    if lam == 0.0:  # no penalty: APS exactly
        np.testing.assert_array_equal(ours, aps_scores(proba_cal, y_cal))


def test_top_k_is_mapies_rank_plus_one(rows) -> None:
    """MAPIE's top-k score is the 0-based position of the true label; mueval's is
    the 1-based rank (1 = most probable). A constant shift: the same sets."""
    proba_cal, y_cal, _, _ = rows
    theirs = _mapie(TopKConformityScore).get_conformity_scores(y_cal, proba_cal, y_enc=y_cal)
    np.testing.assert_array_equal(top_k_scores(proba_cal, y_cal), theirs.ravel() + 1.0)


def _mapie_sets(score, proba_cal, y_cal, proba_test, cal_scores):
    """MAPIE's own prediction sets from its quantile of ``cal_scores`` (non-randomised,
    ``include_last_label=False``: no class whose cumulated score passes the quantile)."""
    score.quantiles_ = _compute_classification_quantile(
        cal_scores.reshape(-1, 1), np.array([ALPHA])
    )
    sets = score.get_prediction_sets(
        proba_test[:, :, None], cal_scores, np.array([ALPHA]), "prefit", include_last_label=False
    )
    return np.asarray(sets)[:, :, 0]


@pytest.mark.parametrize("lam,k_reg", [(0.0, 0), (0.01, 2), (0.2, 1)])
def test_aps_and_raps_sets_are_mapies_under_its_rule(rows, lam, k_reg) -> None:
    """RAPS with lambda = 0 is APS. Under --threshold mapie mueval makes these sets
    itself (MAPIE's rank, 1e-8 tolerance); MAPIE's, from the same non-randomised
    calibration scores with its include_last_label=False, are the same, except that
    MAPIE never returns an empty set: where mueval's is empty, MAPIE's holds the
    most probable class alone."""
    proba_cal, y_cal, proba_test, _ = rows
    record = get_score("raps", raps_lambda=lam, raps_k_reg=k_reg)
    ours = conformalize(proba_cal, y_cal, proba_test, alpha=ALPHA, score=record, threshold="mapie")
    cal = raps_scores(proba_cal, y_cal, lam=lam, k_reg=k_reg)
    assert ours.threshold == lac_threshold(cal, ALPHA, rule="mapie")
    theirs_score = _mapie(RAPSConformityScore)
    theirs_score.lambda_star, theirs_score.k_star = lam, np.array([k_reg])
    theirs = _mapie_sets(theirs_score, proba_cal, y_cal, proba_test, cal)
    empty = ~ours.sets.any(axis=1)
    np.testing.assert_array_equal(ours.sets[~empty], theirs[~empty])
    top = np.eye(K, dtype=bool)[np.argmax(proba_test[empty], axis=1)]
    np.testing.assert_array_equal(theirs[empty], top)
    assert ours.sets.sum() > len(proba_test)  # sets of more than one class exist


def test_top_k_sets_are_mapies_under_its_rule(rows) -> None:
    proba_cal, y_cal, proba_test, _ = rows
    out = conformalize(proba_cal, y_cal, proba_test, alpha=ALPHA, score="top_k", threshold="mapie")
    # MAPIE's own sets (SplitConformalClassifier) are the classes ranked within the
    # rule's quantile of the calibration ranks.
    q = lac_threshold(top_k_scores(proba_cal, y_cal), ALPHA, rule="mapie")
    np.testing.assert_array_equal(out.sets, class_scores(proba_test, "top_k") <= q)


def test_lac_sets_are_mapies(rows) -> None:
    proba_cal, y_cal, proba_test, _ = rows
    study = conformalize(proba_cal, y_cal, proba_test, alpha=ALPHA, score="lac")
    mapie = conformalize(proba_cal, y_cal, proba_test, alpha=ALPHA, score="lac", threshold="mapie")
    # The MAPIE-rule sets are MAPIE's own; the hand rule gives them.
    q = lac_threshold(lac_scores(proba_cal, y_cal), ALPHA, rule="mapie")
    np.testing.assert_array_equal(mapie.sets, (1.0 - proba_test) - q <= 1e-8)
    assert study.sets.shape == mapie.sets.shape


def test_raps_is_not_aps_under_the_study_rule(rows) -> None:
    """The defect this fixes: --score raps under --threshold study gave the APS sets
    and p-values bit for bit. Now it is refused without lambda and k_reg, and with
    a penalty its sets are smaller than APS's."""
    proba_cal, y_cal, proba_test, _ = rows
    with pytest.raises(UsageError, match="raps under --threshold study needs --raps-lambda"):
        conformalize(proba_cal, y_cal, proba_test, alpha=ALPHA, score="raps")
    aps = conformalize(proba_cal, y_cal, proba_test, alpha=ALPHA, score="aps")
    raps = conformalize(
        proba_cal,
        y_cal,
        proba_test,
        alpha=ALPHA,
        score=get_score("raps", raps_lambda=0.5, raps_k_reg=1),
    )
    assert not np.array_equal(raps.pvalues, aps.pvalues)
    assert raps.sets.sum(axis=1).mean() < aps.sets.sum(axis=1).mean()
    free = conformalize(
        proba_cal,
        y_cal,
        proba_test,
        alpha=ALPHA,
        score=get_score("raps", raps_lambda=0.0, raps_k_reg=0),
    )
    np.testing.assert_array_equal(free.sets, aps.sets)
    np.testing.assert_array_equal(free.pvalues, aps.pvalues)


def test_mapies_tuned_raps_gives_raps_pvalues(rows) -> None:
    """Under --threshold mapie without lambda and k_reg the sets are MAPIE's tuned
    RAPS and the p-values RAPS's with what MAPIE tuned (they were APS's): they are
    the p-values of one (lambda, k_reg) of MAPIE's grid, found by brute force."""
    proba_cal, y_cal, proba_test, _ = rows
    out = conformalize(
        proba_cal, y_cal, proba_test, alpha=0.2, score="raps", threshold="mapie", seed=SEED
    )
    aps = conformalize(proba_cal, y_cal, proba_test, alpha=0.2, score="aps", threshold="study")
    assert not np.array_equal(out.pvalues, aps.pvalues)
    found = []
    for lam in (0.001, 0.01, 0.1, 0.2, 0.5):
        for k_reg in range(1, K + 1):
            record = get_score("raps", raps_lambda=lam, raps_k_reg=k_reg)
            cal = raps_scores(proba_cal, y_cal, lam=lam, k_reg=k_reg)
            pvalues = conformal_pvalues(cal, class_scores(proba_test, record))
            if np.array_equal(pvalues, out.pvalues):
                found.append((lam, k_reg))
    assert found


def test_the_options_are_refused_where_they_cannot_apply() -> None:
    with pytest.raises(UsageError, match="apply to --score raps, not aps"):
        get_score("aps", raps_lambda=0.1, raps_k_reg=1)
    with pytest.raises(UsageError, match="needs both --raps-lambda and --raps-k-reg"):
        get_score("raps", raps_lambda=0.1)
    with pytest.raises(UsageError, match="score lac has no randomised form"):
        get_score("lac", randomized=True)
    with pytest.raises(UsageError, match="--raps-k-reg must be a whole number"):
        get_score("raps", raps_lambda=0.1, raps_k_reg=1.5)
    with pytest.raises(UsageError, match="--raps-lambda must be a number of 0 or more"):
        get_score("raps", raps_lambda=-1.0, raps_k_reg=1)
    with pytest.raises(UsageError, match="unknown conformity score 'apss'"):
        get_score("apss")
    proba, y = _rows(60, 3)
    with pytest.raises(UsageError, match="--randomized with --threshold mapie"):
        conformalize(proba, y, proba, score=get_score("aps", randomized=True), threshold="mapie")


# --- through mueval.evaluate and the command line -----------------------------


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    parts = []
    for user in (1, 2, 3):
        for c, label in enumerate(("sit", "walk", "run")):
            x = rng.normal(c * 1.2, 1.0, (40, 3)) + rng.normal(0, 0.5, 3)
            part = pd.DataFrame(x, columns=["a", "b", "c"])
            part.insert(0, "label", label)
            part.insert(0, "userid", user)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _evaluate(**options) -> mueval.Run:
    options = {
        "strategies": "mm,ucm",
        "classifiers": "nb,knn",
        "iterations": 2,
        "jobs": 1,
        **options,
    }
    return mueval.evaluate(_frame(), progress=False, **options)


def test_the_default_run_refuses_raps_and_never_gives_aps() -> None:
    with pytest.raises(UsageError, match="raps under --threshold study needs"):
        _evaluate(score="raps")
    aps = _evaluate(score="aps")
    raps = _evaluate(score="raps", raps_lambda=0.2, raps_k_reg=1)
    assert not aps.predictions["p_values"].map(list).equals(raps.predictions["p_values"].map(list))
    config = raps.info["config"]
    assert (config["score"], config["raps_lambda"], config["raps_k_reg"]) == ("raps", 0.2, 1)
    assert config["randomized"] is False


def test_randomised_aps_repeats_and_changes_only_the_ties() -> None:
    one = _evaluate(score="aps", randomized=True)
    again = _evaluate(score="aps", randomized=True)
    pd.testing.assert_frame_equal(one.summary, again.summary)
    plain = _evaluate(score="aps")
    assert not one.summary.equals(plain.summary)
    assert one.info["config"]["randomized"] is True


def test_a_score_function_of_the_users_is_a_score(tmp_path) -> None:
    def margin(proba, y):
        """1 - p(y) minus the best other class: a margin score."""
        own = proba[np.arange(len(y)), y]
        other = np.where(np.eye(proba.shape[1], dtype=bool)[y], -np.inf, proba).max(axis=1)
        return other - own

    out = tmp_path / "run"
    run = _evaluate(score=margin, out=out)
    assert run.info["config"]["score"] == "margin"
    assert run.info["config"]["score_function"].endswith("margin")
    # Each candidate class is scored by calling the function with that class as y.
    record = get_score(margin)
    proba = np.stack(run.predictions["proba"].iloc[:3].map(list))
    np.testing.assert_allclose(
        record.every(proba)[:, 0], [margin(proba[i : i + 1], np.array([0]))[0] for i in range(3)]
    )
    two = _evaluate(score=margin, jobs=2)
    pd.testing.assert_frame_equal(run.summary, two.summary)
    compare = CliRunner().invoke(main, ["compare", str(out)])
    assert compare.exit_code == 0, compare.output
    report = CliRunner().invoke(main, ["report", str(out)])
    assert report.exit_code == 0, report.output
    assert "margin" in (out / "report" / "report.html").read_text(encoding="utf-8")


def test_a_score_function_with_a_builtin_name_is_refused() -> None:
    def lac(proba, y):
        return 1 - proba[np.arange(len(y)), y]

    with pytest.raises(UsageError, match="score function 'lac' has the name of a built-in"):
        _evaluate(score=lac)


def test_the_command_line_takes_the_raps_options(tmp_path) -> None:
    csv = tmp_path / "data.csv"
    _frame().to_csv(csv, index=False)
    base = ["evaluate", "--data", str(csv), "-s", "mm", "-c", "nb", "--iterations", "1"]
    base += ["--jobs", "1", "--no-progress"]
    refused = CliRunner().invoke(main, [*base, "--score", "raps"])
    assert refused.exit_code == 2
    assert "needs --raps-lambda and --raps-k-reg" in refused.output
    done = CliRunner().invoke(
        main,
        [
            *base,
            "--score",
            "raps",
            "--raps-lambda",
            "0.1",
            "--raps-k-reg",
            "2",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert done.exit_code == 0, done.output
    randomized = CliRunner().invoke(main, [*base, "--score", "lac", "--randomized"])
    assert randomized.exit_code == 2 and "no randomised form" in randomized.output
    helped = CliRunner().invoke(main, ["evaluate", "--help"])
    assert "--raps-lambda" in helped.output and "--randomized" in helped.output
