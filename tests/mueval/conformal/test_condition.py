"""Cohort-conditional calibration: thresholds per cohort by hand, the cohorts of users
and their errors, coverage per class and cohort, and the strategies on which a
cohort condition changes nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

import mueval
from mueval.cli.main import main
from mueval.conformal.condition import parse_condition
from mueval.conformal.sets import conformalize
from mueval.data.cohorts import user_cohorts
from mueval.data.synthetic import make_users
from mueval.errors import DataError, SmallCalibrationError, UsageError
from mueval.guarantees.conditional_coverage import conditional_coverage

# Calibration scores (LAC: 1 - p of the true class, every true class 0).
# Group 0: five scores; group 1: ten.
A = [0.1, 0.2, 0.3, 0.4, 0.5]
B = [0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.14, 0.16, 0.18, 0.20]


def _cal() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    scores = np.array(A + B)
    proba = np.column_stack([1 - scores, scores])
    return proba, np.zeros(len(scores), dtype=int), np.repeat([0, 1], [5, 10])


@pytest.mark.parametrize("rule", ["study", "mapie"])
def test_each_group_gets_its_own_threshold_computed_by_hand(rule: str) -> None:
    # alpha = 0.2, so the minimum calibration size is max(5, 1.25) = 5.
    # Group 0, n = 5: study rule quantile level 6 * 0.8 / 5 = 0.96, "higher" of 5
    # sorted scores at position 0.96 * 4 = 3.84 -> the 5th, 0.5; MAPIE rule:
    # the ceil(6 * 0.8) = 5th smallest, 0.5.
    # Group 1, n = 10: level 11 * 0.8 / 10 = 0.88, position 7.92 -> the 9th,
    # 0.18; MAPIE: the ceil(8.8) = 9th smallest, 0.18.
    # Test row p = (0.55, 0.45): scores 0.45 (class 0) and 0.55 (class 1).
    proba, y, g = _cal()
    test = np.array([[0.55, 0.45], [0.55, 0.45]])
    out = conformalize(proba, y, test, bins=(g, np.array([0, 1])), alpha=0.2, threshold=rule)
    assert out.sets.tolist() == [[True, False], [False, False]]
    # p-values: group 0 has one score >= 0.45 and none >= 0.55: 2/6 and 1/6;
    # group 1 none: 1/11 for both classes.
    assert out.pvalues == pytest.approx(np.array([[2 / 6, 1 / 6], [1 / 11, 1 / 11]]))
    assert out.n_cal == 15 and np.isnan(out.threshold)
    one = conformalize(proba, y, test[:1], bins=(g, np.array([0])), alpha=0.2, threshold=rule)
    assert one.threshold == pytest.approx(0.5) and one.n_cal == 5


def test_pooled_calibration_differs_on_the_same_rows() -> None:
    # Pooled, n = 15: level 16 * 0.8 / 15 = 0.8533, position 0.8533 * 14 = 11.95
    # -> the 13th smallest of the 15 scores, 0.3: the score 0.45 is left out.
    proba, y, _ = _cal()
    out = conformalize(proba, y, np.array([[0.55, 0.45]]), alpha=0.2)
    assert out.threshold == pytest.approx(0.3)
    assert out.sets.tolist() == [[False, False]]


def test_a_group_below_the_minimum_is_an_error_or_the_full_set() -> None:
    proba, y, g = _cal()
    test = np.array([[0.55, 0.45], [0.55, 0.45]])
    # alpha = 0.1 needs 10 rows: group 0 has 5.
    with pytest.raises(SmallCalibrationError, match="cohort 'young' has 5 calibration rows"):
        conformalize(
            proba, y, test, bins=(g, np.array([0, 1])), alpha=0.1, bin_names=["young", "old"]
        )
    out = conformalize(proba, y, test, bins=(g, np.array([0, 1])), alpha=0.1, small_bins="full-set")
    assert out.sets[0].tolist() == [True, True]
    assert "cohort '0' has 5 calibration rows" in out.note
    # Group 1 (10 rows, alpha 0.1): level 11 * 0.9 / 10 = 0.99, position 8.91 ->
    # the 10th, 0.20 < 0.45: empty.
    assert out.sets[1].tolist() == [False, False]


def test_class_and_group_calibrates_each_class_within_its_group() -> None:
    # Group 0 holds class 0 rows with scores A and class 1 rows with scores
    # 0.7 (five of them); group 1 only class 0 rows (B). alpha = 0.2.
    # Group 0, class 1: five scores of 0.7, threshold 0.7; a test row with
    # p1 = 0.45 (score 0.55) keeps class 1. Group 1 has no class-1 rows: class 1
    # is always kept (no calibration row can exclude it).
    scores = np.array(A + [0.7] * 5 + B)
    y = np.array([0] * 5 + [1] * 5 + [0] * 10)
    true_p = 1 - scores
    proba = np.where(y[:, None] == 0, np.column_stack([true_p, scores]), 0)
    proba[y == 1] = np.column_stack([scores[y == 1], true_p[y == 1]])
    g = np.repeat([0, 1], 10)
    test = np.array([[0.55, 0.45], [0.55, 0.45]])
    out = conformalize(proba, y, test, bins=(g, np.array([0, 1])), alpha=0.2, mondrian=True)
    # Class 0: group 0 threshold 0.5 (score 0.45 in), group 1 0.18 (out).
    assert out.sets.tolist() == [[True, True], [False, True]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, None),
        ("none", None),
        ("class", "class"),
        ("cohort:age", "cohort:age"),
        ("class+cohort:age", "class+cohort:age"),
        ("cohort", "cohort"),
    ],
)
def test_condition_spellings(text: str | None, expected: str | None) -> None:
    assert parse_condition(text).text == expected


@pytest.mark.parametrize(
    ("text", "mondrian", "match"),
    [
        ("grup:x", False, "unknown condition 'grup:x'"),
        ("class:x", False, "unknown condition"),
        ("cohort:", False, "names no column"),
        ("cohort:age", True, "give condition 'class\\+cohort:age'"),
    ],
)
def test_bad_conditions_are_named(text: str, mondrian: bool, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        parse_condition(text, mondrian=mondrian)


def test_a_cohort_must_be_constant_within_each_user() -> None:
    frame = pd.DataFrame({"userid": [1, 1, 2, 2], "band": ["a", "a", "b", "c"]})
    with pytest.raises(DataError, match="user 2 has 2 values of cohort column 'band'"):
        user_cohorts(frame, "band", where="t")


def test_a_user_without_a_cohort_value_is_named() -> None:
    frame = pd.DataFrame({"userid": [1, 2, 3], "band": ["a", None, "b"]})
    with pytest.raises(DataError, match="user\\(s\\) 2 have no value"):
        user_cohorts(frame, "band", where="t")


def test_cohort_coverage_counts_and_exact_interval_by_hand() -> None:
    rows = pd.DataFrame(
        {
            "strategy": "mm",
            "classifier": "rf",
            "userid": [1, 1, 1, 2, 2, 3, 3, 3, 3, 3],
            "y_true": "a",
            "covered": [1, 1, 0, 1, 1, 1, 1, 1, 1, 0],
        }
    ).astype({"covered": bool})
    cohorts = pd.Series({"1": "x", "2": "x", "3": "y"})
    table = conditional_coverage(rows, "cohort", user_cohorts=cohorts)
    assert table[["value", "n_users", "n", "n_covered"]].values.tolist() == [
        ["x", 2, 5, 4],
        ["y", 1, 5, 4],
    ]
    # Clopper-Pearson 95 % for 4 of 5: Beta(0.025; 4, 2) and Beta(0.975; 5, 1).
    low, high = stats.beta.ppf(0.025, 4, 2), stats.beta.ppf(0.975, 5, 1)
    assert table.loc[0, "low"] == pytest.approx(low) and table.loc[0, "high"] == pytest.approx(high)
    # Beta(5, 1) has CDF t^5, so the upper bound is 0.975 ** (1/5) in closed form.
    assert high == pytest.approx(0.975**0.2)


def _frame(seed: int = 1) -> pd.DataFrame:
    frame = make_users(6, rows_per_user=120, seed=seed)
    frame["band"] = np.where(frame["userid"] <= 3, "young", "old")
    return frame


_FAST = {"classifiers": "nb", "iterations": 2, "progress": False, "diagnostics": "none"}


def test_ucm_and_udm_under_cohorts_equal_unconditional() -> None:
    # Their calibration set is the target user's own rows: one cohort.
    frame = _frame()
    plain = mueval.evaluate(frame.drop(columns="band"), strategies="udm,ucm", **_FAST)
    grouped = mueval.evaluate(frame, strategies="udm,ucm", condition="cohort:band", **_FAST)
    assert plain.predictions["pred_set"].map(list).tolist() == (
        grouped.predictions["pred_set"].map(list).tolist()
    )
    assert plain.splits["n_cal"].tolist() == grouped.splits["n_cal"].tolist()
    assert grouped.config["condition"] == "cohort:band"


def test_uim_calibrates_on_the_other_users_of_the_target_cohort() -> None:
    from mueval.evaluation.splits import make_splits

    frame = _frame()
    run = mueval.evaluate(frame, strategies="uim", condition="cohort:band", **_FAST)
    users = frame["userid"].to_numpy()
    y = pd.factorize(frame["label"], sort=True)[0]
    band = dict(zip(frame["userid"], frame["band"], strict=False))
    expected = {}
    for it in (1, 2):
        for split in make_splits(y, users, ("uim",), it, 100 + it, classes=None):
            for target in split.served():
                cal = target.calibrations["uim"]
                same = [band[u] == band[target.user] for u in users[cal]]
                # The run's ids are text, as in the run folder.
                expected[(it, str(target.user))] = int(np.sum(same))
    got = {(r.iteration, r.user): r.n_cal for r in run.splits.itertuples()}
    assert got == expected
    assert set(run.user_cohorts["cohort"]) == {"young", "old"}


def test_mondrian_is_condition_class() -> None:
    frame = _frame().drop(columns="band")
    a = mueval.evaluate(frame, strategies="mm", mondrian=True, **_FAST)
    b = mueval.evaluate(frame, strategies="mm", condition="class", **_FAST)
    assert a.predictions["pred_set"].map(list).tolist() == (
        b.predictions["pred_set"].map(list).tolist()
    )
    assert a.config["condition"] == b.config["condition"] == "class"
    # Per-class p-values have one calibration set per class: the uniform test.
    assert set(a.user_validity["method"]) == {"uniform"}


def test_cohorts_file_through_the_command_line(tmp_path: Path) -> None:
    frame = _frame()
    data = tmp_path / "t.csv"
    frame.drop(columns="band").to_csv(data, index=False)
    cohorts = tmp_path / "g.csv"
    frame[["userid", "band"]].drop_duplicates().to_csv(cohorts, index=False)
    out = tmp_path / "run"
    args = ["evaluate", "--data", str(data), "-s", "mm", "-c", "nb", "--iterations", "2"]
    args += ["--no-progress", "--diagnostics", "none"]
    result = CliRunner().invoke(
        main, [*args, "--condition", "cohort:band", "--cohorts", str(cohorts), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert {"conditional_coverage.csv", "user_cohorts.csv", "user_validity.csv"} <= {
        p.name for p in out.iterdir()
    }
    table = pd.read_csv(out / "conditional_coverage.csv")
    assert sorted(table.loc[table.by == "cohort", "value"]) == ["old", "young"]
    # MM under cohorts: one calibration set per cohort, so the uniform test.
    assert set(pd.read_csv(out / "user_validity.csv")["method"]) == {"uniform"}
    # A cohorts file that misses a user, and cohorts without a cohort condition.
    frame[["userid", "band"]].drop_duplicates().iloc[:-1].to_csv(cohorts, index=False)
    result = CliRunner().invoke(
        main, [*args, "--condition", "cohort:band", "--cohorts", str(cohorts)]
    )
    assert result.exit_code == 1 and "have no cohort, e.g. 6" in result.output
    result = CliRunner().invoke(main, [*args, "--cohorts", str(cohorts)])
    assert result.exit_code == 2 and "the condition has no cohort" in result.output


# Slow (tens of seconds): .ci/run runs it with -m slow; the default run stays under 5 min.
@pytest.mark.slow
def test_a_cohort_run_on_dask_equals_jobs_1() -> None:
    # On Dask the rows' cohorts are scattered to the workers once, as the
    # table is; the sets and p-values must be those of one process.
    pytest.importorskip("distributed")
    frame = _frame()
    args = {**_FAST, "strategies": "mm,uim", "condition": "cohort:band"}
    local = mueval.evaluate(frame, **args)
    remote = mueval.evaluate(frame, backend="dask", workers=2, **args)
    pd.testing.assert_frame_equal(local.predictions, remote.predictions)
    assert local.splits["n_cal"].tolist() == remote.splits["n_cal"].tolist()
