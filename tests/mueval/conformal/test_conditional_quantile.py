"""Coverage over overlapping cohorts (``--condition cohorts:``): the thresholds of the
conditional quantile regression against a brute-force solution of the paper's
augmented programme, against Mondrian calibration where the cohorts are disjoint,
through the pipeline, and in a small simulation."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mueval
import mueval.data.cohorts
from mueval.cli.main import main
from mueval.conformal.condition import parse_condition
from mueval.conformal.conditional_quantile import (
    augmented_fit,
    conditional_threshold,
    pattern_thresholds,
    randomized_thresholds,
)
from mueval.conformal.sets import conformalize
from mueval.data.cohorts import cohort_design
from mueval.data.synthetic import make_users
from mueval.errors import DataError, EvaluationError, SmallCalibrationError, UsageError


def _vertex_fits(scores: np.ndarray, features: np.ndarray, x: np.ndarray, alpha: float):
    """Brute force: every fit that interpolates d points with independent rows.

    The pinball loss of a full-rank design is minimised at such a vertex, and
    its optimal set is the polytope their optimal ones span: the lowest and
    highest fitted value at ``x`` over the optimal fits are among them.
    """
    n, d = features.shape
    rows = np.array(list(itertools.combinations(range(n), d)))
    blocks = features[rows]
    keep = np.abs(np.linalg.det(blocks)) > 1e-9
    rows, blocks = rows[keep], blocks[keep]
    betas = np.linalg.solve(blocks, scores[rows][:, :, None])[:, :, 0]
    residuals = scores[None, :] - betas @ features.T
    losses = np.where(residuals > 0, (1 - alpha) * residuals, -alpha * residuals).sum(axis=1)
    at_x = (betas @ x)[losses <= losses.min() + 1e-9]
    return float(at_x.min()), float(at_x.max())


def _overlapping(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two overlapping binary cohort columns: intercept, a=1, b=1."""
    rng = np.random.default_rng(seed)
    patterns = [(a, b) for a in "01" for b in "01"]
    design = cohort_design(patterns, [[0], [1]]).matrix
    codes = rng.integers(0, 4, n)
    scores = rng.random(n) + 0.3 * design[codes, 1] - 0.2 * design[codes, 2]
    return scores, codes, design


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("alpha", [0.1, 0.2, 0.35])
def test_threshold_is_the_augmented_programme_solved_by_brute_force(seed: int, alpha: float):
    # For every imputed S of a grid, the paper's rule "S <= g_S(x), g_S fitted
    # on the calibration rows and the test point at S" (solved by enumerating
    # the vertices of the augmented programme) against the threshold. At
    # alpha = 0.1 some patterns' cohorts hold too few of the 16 rows: their
    # threshold is infinite, and every S is then reached by every optimal fit.
    scores, codes, design = _overlapping(16, seed)
    features = design[codes]
    finite = 0
    for pattern in range(4):
        x = design[pattern]
        q = conditional_threshold(scores, features, x, alpha)
        finite += math.isfinite(q)
        grid = np.linspace(scores.min() - 0.5, scores.max() + 0.5, 41)
        extra = [q - 1e-6, q, q + 1e-6] if math.isfinite(q) else [1e3]
        for s in np.r_[grid, extra]:
            all_scores = np.append(scores, s)
            all_features = np.vstack([features, x])
            low, high = _vertex_fits(all_scores, all_features, x, alpha)
            # In the set iff every optimal fit reaches S at x (the dual rule
            # eta_{n+1}(S) < 1 - alpha of the paper; where the optimal fits
            # are a segment, some reach S up to its top, but not all).
            included = s <= low + 1e-9
            assert included == (s <= q + 1e-9), (pattern, s, q, low, high)
            if s > q + 1e-7:
                # Above the threshold the lowest optimal fit stays at q.
                assert low == pytest.approx(q, abs=1e-7)
    assert finite >= (1 if alpha == 0.1 else 4)


def test_brute_force_agrees_with_the_primal_programme() -> None:
    # The vertex enumeration and HiGHS's primal agree on the fitted values.
    scores, codes, design = _overlapping(12, 7)
    for s in (-1.0, 0.4, 0.7, 3.0):
        low, high = _vertex_fits(
            np.append(scores, s), np.vstack([design[codes], design[3]]), design[3], 0.1
        )
        lp_low, lp_high = augmented_fit(scores, design[codes], design[3], s, 0.1)
        assert lp_low == pytest.approx(low, abs=1e-6) and lp_high == pytest.approx(high, abs=1e-6)


@pytest.mark.parametrize("n", [18, 19, 20, 39, 40, 59, 79, 200])
def test_one_cohort_is_mapie_rank(n: int) -> None:
    # The ceil((n+1)(1-alpha))-th smallest score (inf above n), including the
    # n where (n+1)(1-alpha) is a whole number (39, 59, 79: the optimum is a
    # segment, and its lowest end is that order statistic).
    scores = np.random.default_rng(n).random(n)
    k = math.ceil(round((n + 1) * 0.95, 9))
    expected = np.sort(scores)[k - 1] if k <= n else math.inf
    assert conditional_threshold(scores, np.ones((n, 1)), np.ones(1), 0.05) == expected


@pytest.mark.parametrize("seed", range(4))
def test_disjoint_cohorts_give_mondrian_sets_under_mapie_rank(seed: int) -> None:
    # One cohort column: the span is that of disjoint cohorts, so the sets are
    # Mondrian by cohort's under MAPIE 1.x's rule, set for set.
    rng = np.random.default_rng(seed)
    n_cal, k = 300, 4
    cohort_cal = rng.integers(0, 3, n_cal)
    cohort_test = rng.integers(0, 3, 200)
    proba_cal = rng.dirichlet(np.ones(k), n_cal)
    proba_test = rng.dirichlet(np.ones(k), 200)
    y_cal = rng.integers(0, k, n_cal)
    design = cohort_design([("a",), ("b",), ("c",)], [[0]]).matrix
    bins = (cohort_cal, cohort_test)
    for alpha in (0.05, 0.1, 0.2):
        ours = conformalize(proba_cal, y_cal, proba_test, alpha=alpha, bins=bins, design=design)
        mondrian = conformalize(
            proba_cal, y_cal, proba_test, alpha=alpha, bins=bins, threshold="mapie"
        )
        assert np.array_equal(ours.sets, mondrian.sets)


def test_a_pattern_with_too_few_rows_gets_the_full_set() -> None:
    # Cohort y has 10 calibration rows, fewer than the 19 a lone cohort needs
    # at alpha = 0.05; cohort x's 50 confident rows give a set of one class.
    design = cohort_design([("a",), ("b",)], [[0]]).matrix
    rng = np.random.default_rng(0)
    cal = np.r_[np.zeros(50, dtype=int), np.ones(10, dtype=int)]
    top = rng.uniform(0.9, 0.99, 60)
    proba_cal = np.column_stack([top, (1 - top) / 2, (1 - top) / 2])
    proba_test = np.tile([[0.995, 0.004, 0.001]], (4, 1))
    args = {"alpha": 0.05, "bins": (cal, np.array([0, 0, 1, 1])), "design": design}
    with pytest.raises(SmallCalibrationError, match="cohort pattern 'y': its cohorts hold"):
        conformalize(proba_cal, np.zeros(60, dtype=int), proba_test, bin_names=["x", "y"], **args)
    out = conformalize(
        proba_cal,
        np.zeros(60, dtype=int),
        proba_test,
        small_bins="full-set",
        bin_names=["x", "y"],
        **args,
    )
    assert out.sets.tolist() == [[True, False, False]] * 2 + [[True, True, True]] * 2
    assert "cohort pattern 'y'" in out.note and "2 test rows got the full set" in out.note
    thresholds = pattern_thresholds(rng.random(60), cal, np.array([0, 1]), design, 0.05)
    assert math.isinf(thresholds[1]) and math.isfinite(thresholds[0])


def test_cohort_design_spans_every_level_and_intersection() -> None:
    patterns = [(a, b) for a in "FM" for b in ("old", "young")]
    design = cohort_design(patterns, [[0], [1], [0, 1]])
    # The intersection's cells after the first (redundant with the margins,
    # which leaves the span as it is).
    assert design.groups == ["0=M", "1=young", "0=F*1=young", "0=M*1=old", "0=M*1=young"]
    named = cohort_design(patterns, [[0], [1, 0]], columns=["sex", "age"])
    assert named.groups == ["sex=M", "age=old*sex=M", "age=young*sex=F", "age=young*sex=M"]
    # Every cohort's indicator is in the span: F = intercept - M, and so on.
    for j, level in ((0, "F"), (0, "M"), (1, "old"), (1, "young")):
        target = np.array([p[j] == level for p in patterns], dtype=float)
        coef, *_ = np.linalg.lstsq(design.matrix, target, rcond=None)
        assert np.allclose(design.matrix @ coef, target)
    for cell in patterns:
        target = np.array([p == cell for p in patterns], dtype=float)
        coef, *_ = np.linalg.lstsq(design.matrix, target, rcond=None)
        assert np.allclose(design.matrix @ coef, target)
    # Without the intersection term a cell is not in the span.
    margins = cohort_design(patterns, [[0], [1]]).matrix
    target = np.array([p == ("F", "old") for p in patterns], dtype=float)
    coef, *_ = np.linalg.lstsq(margins, target, rcond=None)
    assert not np.allclose(margins @ coef, target)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("cohorts:", "an empty column name"),
        ("cohorts:a,,b", "an empty column name"),
        ("cohorts:a,a", "names a term twice"),
        ("cohorts:a*a", "names a column twice"),
        ("cohorts:" + ",".join(f"c{i}" for i in range(17)), "more than the 16"),
    ],
)
def test_bad_cohorts_conditions_are_named(text: str, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        parse_condition(text)


def test_cohorts_condition_spelling() -> None:
    cond = parse_condition(" cohorts: sex , age*device ")
    assert cond.text == "cohorts:sex,age*device"
    assert cond.terms == (("sex",), ("age", "device")) and cond.columns == ("sex", "age", "device")
    assert cond.by_cohort and cond.regression and not cond.per_class
    with pytest.raises(UsageError, match="no per-class form"):
        parse_condition("cohorts:sex", mondrian=True)


def _frame(seed: int = 1) -> pd.DataFrame:
    frame = make_users(8, rows_per_user=100, seed=seed)
    frame["sex"] = np.where(frame["userid"] % 2 == 0, "F", "M")
    frame["band"] = np.where(frame["userid"] <= 4, "young", "old")
    return frame


_FAST = {"classifiers": "nb", "iterations": 2, "progress": False, "diagnostics": "none", "jobs": 1}


def test_ucm_equals_unconditional_and_one_column_equals_mondrian_by_cohort() -> None:
    # UCM calibrates on the target's own rows (one pattern: the intercept), so
    # the sets are the unconditional ones under MAPIE's rank. UIM with one
    # column is Mondrian by that cohort under MAPIE's rank.
    frame = _frame()
    args = {**_FAST, "threshold": "mapie"}
    plain = mueval.evaluate(frame.drop(columns=["sex", "band"]), strategies="ucm", **args)
    ours = mueval.evaluate(
        frame, strategies="ucm", condition="cohorts:sex,band", **args
    ).predictions
    assert plain.predictions["pred_set"].map(list).tolist() == ours["pred_set"].map(list).tolist()
    one = mueval.evaluate(
        frame.drop(columns="sex"), strategies="uim", condition="cohorts:band", **args
    )
    mondrian = mueval.evaluate(
        frame.drop(columns="sex"), strategies="uim", condition="cohort:band", **args
    )
    assert one.predictions["pred_set"].map(list).tolist() == (
        mondrian.predictions["pred_set"].map(list).tolist()
    )
    assert one.config["condition"] == "cohorts:band"


def test_cohorts_file_through_the_command_line(tmp_path: Path) -> None:
    frame = _frame()
    data = tmp_path / "t.csv"
    frame.drop(columns=["sex", "band"]).to_csv(data, index=False)
    cohorts = tmp_path / "g.csv"
    frame[["userid", "sex", "band"]].drop_duplicates().to_csv(cohorts, index=False)
    out = tmp_path / "run"
    args = ["evaluate", "--data", str(data), "-s", "mm", "-s", "uim", "-c", "nb"]
    args += ["--iterations", "2", "--no-progress", "--diagnostics", "none"]
    result = CliRunner().invoke(
        main,
        [*args, "--condition", "cohorts:sex,band", "--cohorts", str(cohorts), "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    cells = pd.read_csv(out / "user_cohorts.csv")
    assert set(cells["cohort"]) == {
        f"sex={s},band={b}" for s in ("F", "M") for b in ("old", "young")
    }
    predictions = pd.read_parquet(out / "predictions.parquet")
    assert len(predictions) and predictions["p_values"].map(lambda p: np.isnan(p).all()).all()
    assert "p-value metrics" in result.output and "cohorts:sex,band" in result.output
    # No p-values, so no validity rows: the folder still reads back and reports.
    assert len(pd.read_csv(out / "user_validity.csv")) == 0
    report = CliRunner().invoke(main, ["report", str(out)])
    assert report.exit_code == 0, report.output
    # A column the file lacks, and a value that would break the pattern names.
    result = CliRunner().invoke(
        main, [*args, "--condition", "cohorts:sex,age", "--cohorts", str(cohorts)]
    )
    assert result.exit_code != 0 and "no cohort column 'age'" in result.output
    bad = frame[["userid", "sex", "band"]].drop_duplicates().assign(sex="a,b")
    bad.to_csv(cohorts, index=False)
    result = CliRunner().invoke(
        main, [*args, "--condition", "cohorts:sex,band", "--cohorts", str(cohorts)]
    )
    assert result.exit_code != 0 and "may not hold ',' or '='" in result.output


def test_a_value_with_a_comma_is_refused_from_python() -> None:
    frame = _frame().assign(sex=lambda f: f["sex"] + ",x")
    with pytest.raises(DataError, match="may not hold"):
        mueval.evaluate(frame, strategies="mm", condition="cohorts:sex,band", **_FAST)


def _simulate(reps: int, alpha: float, seed: int) -> dict[str, dict[str, np.ndarray]]:
    """Each repetition's coverage per cohort of split conformal and of the
    conditional quantile over two overlapping binary cohorts whose scores
    differ in scale (cohorts a=1 and b=1 are noisier)."""
    rng = np.random.default_rng(seed)
    patterns = [(a, b) for a in "01" for b in "01"]
    design = cohort_design(patterns, [[0], [1]]).matrix
    scale = np.array([1.0, 2.0, 1.5, 3.0])
    cells = {"a=0": [0, 1], "a=1": [2, 3], "b=0": [0, 2], "b=1": [1, 3]}
    out: dict[str, dict[str, list]] = {m: {c: [] for c in cells} for m in ("split", "gcc")}
    for _ in range(reps):
        n_cal, n_test = 400, 400
        cal_codes, test_codes = rng.integers(0, 4, n_cal), rng.integers(0, 4, n_test)
        cal = np.abs(rng.normal(size=n_cal)) * scale[cal_codes]
        test = np.abs(rng.normal(size=n_test)) * scale[test_codes]
        k = math.ceil((n_cal + 1) * (1 - alpha))
        q = pattern_thresholds(cal, cal_codes, test_codes, design, alpha)
        flags = {
            "split": test <= np.sort(cal)[k - 1],
            "gcc": test <= np.array([q[c] for c in test_codes]),
        }
        for method, covered in flags.items():
            for name, members in cells.items():
                out[method][name].append(covered[np.isin(test_codes, members)].mean())
    return {m: {c: np.array(v) for c, v in part.items()} for m, part in out.items()}


def test_simulation_covers_every_overlapping_cohort() -> None:
    # 40 repetitions of 400 calibration and 400 test rows. The standard error
    # is taken over repetitions (a repetition's rows share its calibration):
    # about 0.004 here. Split conformal under-covers the noisy cohorts by far
    # more than that; the conditional quantile covers each one.
    alpha = 0.1
    result = _simulate(40, alpha, seed=3)
    for name, per_rep in result["gcc"].items():
        se = per_rep.std(ddof=1) / math.sqrt(len(per_rep))
        assert se < 0.01
        assert per_rep.mean() >= 1 - alpha - 3 * se, (name, per_rep.mean(), se)
    worst_split = min(per_rep.mean() for per_rep in result["split"].values())
    assert worst_split < 1 - alpha - 0.03


def test_column_names_and_values_with_pattern_characters() -> None:
    # '=' in a column name and '*' in a value are kept apart from the pattern
    # names' own separators; ',' or '=' in a value would not be (refused above).
    frame = _frame()
    cohorts = frame[["userid", "sex"]].drop_duplicates()
    cohorts = cohorts.assign(**{"dev=ice": np.where(cohorts["userid"] <= 4, "a*b", "c")})
    run = mueval.evaluate(
        frame.drop(columns=["sex", "band"]),
        strategies="mm",
        condition="cohorts:sex,dev=ice",
        cohorts=cohorts,
        **_FAST,
    )
    assert set(run.user_cohorts["cohort"]) == {
        f"sex={s},dev=ice={d}" for s in ("F", "M") for d in ("a*b", "c")
    }


def test_a_lone_small_pattern_follows_small_cal_through_the_pipeline() -> None:
    # User 8 alone is sex=F, band=solo, with 30 rows: under MM its cohort
    # band=solo holds a handful of calibration rows, too few for a finite
    # threshold at alpha = 0.05.
    frame = _frame()
    frame.loc[frame["userid"] == 8, "band"] = "solo"
    frame = frame[(frame["userid"] != 8) | (frame.groupby("userid").cumcount() < 30)]
    args = {**_FAST, "strategies": "mm", "condition": "cohorts:sex,band"}
    with pytest.raises(EvaluationError, match="cohort pattern 'sex=F,band=solo'.*--small-cal"):
        mueval.evaluate(frame, **args)
    run = mueval.evaluate(frame, small_cal="full-set", **args)
    solo = run.predictions[run.predictions["userid"].astype(str) == "8"]
    assert len(solo) and (solo["set_size"] == frame["label"].nunique()).all()
    assert any("sex=F,band=solo" in note for note in run.notes)


def _optimum(scores: np.ndarray, features: np.ndarray, alpha: float) -> float:
    """Brute force: the least pinball loss, over every vertex fit."""
    n, d = features.shape
    rows = np.array(list(itertools.combinations(range(n), d)))
    blocks = features[rows]
    keep = np.abs(np.linalg.det(blocks)) > 1e-9
    betas = np.linalg.solve(blocks[keep], scores[rows[keep]][:, :, None])[:, :, 0]
    residuals = scores[None, :] - betas @ features.T
    return float(np.where(residuals > 0, (1 - alpha) * residuals, -alpha * residuals).sum(1).min())


@pytest.mark.parametrize("seed", range(3))
def test_randomised_threshold_is_where_the_slope_passes_u(seed: int) -> None:
    # The paper's randomised rule keeps S while eta_{n+1}(S), the slope in S
    # of the augmented optimum, is below U. Brute force: the optimum at S +- h
    # by vertex enumeration, its slope by a central difference (grid points
    # within 2h of a kink are skipped), against the threshold for each U.
    alpha, h = 0.2, 1e-5
    scores, codes, design = _overlapping(14, seed)
    features = design[codes]
    x = design[3]
    all_features = np.vstack([features, x])
    grid = np.linspace(scores.min() - 0.3, scores.max() + 0.3, 40)
    slopes = []
    for s in grid:
        up = _optimum(np.append(scores, s + h), all_features, alpha)
        down = _optimum(np.append(scores, s - h), all_features, alpha)
        mid = _optimum(np.append(scores, s), all_features, alpha)
        linear = abs(up + down - 2 * mid) < 1e-9  # no kink within h
        slopes.append((up - down) / (2 * h) if linear else np.nan)
    checked = 0
    for u in (-0.15, 0.0, 0.3, 0.6, 0.8):
        q = conditional_threshold(scores, features, x, alpha, u=u)
        for s, slope in zip(grid, slopes, strict=True):
            if np.isnan(slope) or abs(s - q) < 1e-4 or abs(slope - u) < 1e-6:
                continue
            assert (slope < u) == (s < q), (u, s, slope, q)
            checked += 1
    assert checked > 150
    # u = 1 - alpha is the unrandomised rule.
    assert conditional_threshold(scores, features, x, alpha, u=0.8) == conditional_threshold(
        scores, features, x, alpha
    )


@pytest.mark.parametrize("n", [19, 39, 100])
def test_randomised_one_cohort_is_the_smoothed_rank(n: int) -> None:
    # One cohort: the first order statistic k with alpha k - (1 - alpha)(n - k)
    # >= u, i.e. k = ceil((1 - alpha) n + u); averaged over U uniform on
    # (-alpha, 1 - alpha), coverage k / (n + 1) is exactly 1 - alpha.
    alpha = 0.05
    scores = np.random.default_rng(n).random(n)
    ordered = np.sort(scores)
    us = np.linspace(-alpha + 1e-3, 1 - alpha, 97)
    covered = []
    for u in us:
        k = math.ceil(round((1 - alpha) * n + u, 9))
        expected = ordered[k - 1] if k <= n else math.inf
        got = conditional_threshold(scores, np.ones((n, 1)), np.ones(1), alpha, u=float(u))
        assert got == expected, (u, k)
        covered.append(min(k, n + 1) / (n + 1))
    assert np.mean(covered) == pytest.approx(1 - alpha, abs=0.01)
    with pytest.raises(UsageError, match="u must be in"):
        conditional_threshold(scores, np.ones((n, 1)), np.ones(1), alpha, u=-alpha)


def test_randomised_thresholds_draw_one_u_per_row() -> None:
    scores, codes, design = _overlapping(60, 2)
    test_codes = np.array([0, 0, 1, 3])
    q = randomized_thresholds(scores, codes, test_codes, design, 0.2, seed=5)
    draws = np.random.default_rng(5).uniform(-0.2, 0.8, size=4)
    expected = [
        conditional_threshold(scores, design[codes], design[c], 0.2, u=float(u))
        for c, u in zip(test_codes, draws, strict=True)
    ]
    assert q.tolist() == expected
    # Never above the unrandomised threshold (a smaller reward, a lower fit).
    plain = pattern_thresholds(scores, codes, test_codes, design, 0.2)
    assert all(q[i] <= plain[c] for i, c in enumerate(test_codes))


def test_too_many_patterns_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cap, lowered to 2, against three users of three patterns.
    frame = make_users(3, rows_per_user=30, seed=2)
    cohorts = pd.DataFrame({"userid": [1, 2, 3], "a": ["x", "y", "z"], "b": ["p", "q", "r"]})
    monkeypatch.setattr(mueval.data.cohorts, "MAX_PATTERNS", 2)
    with pytest.raises(DataError, match="3 combinations of \\['a', 'b'\\], more than the 2"):
        mueval.evaluate(frame, strategies="mm", condition="cohorts:a,b", cohorts=cohorts, **_FAST)
