"""``mueval curve``: coverage, set size and accuracy against k labelled windows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import MinMaxScaler

import mueval
from mueval.cli.main import main
from mueval.data.synthetic import make_users
from mueval.data.table import table_from_frame
from mueval.errors import DataError, EvaluationError, UsageError
from mueval.evaluation.labelcurve import CurveConfig, curve_run, parse_ks, parse_uses

KS = (0, 5, 20, 30)
ALPHA = 0.05


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return make_users(4, n_classes=3, rows_per_user=100, n_features=4, seed=11)


@pytest.fixture(scope="module")
def result(frame):
    config = CurveConfig(
        classifier="nb", ks=KS, uses=("calibration", "adaptation", "both"), iterations=2
    )
    return curve_run(table_from_frame(frame), config)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("", "no k given"),
        ("5,a", "whole numbers"),
        ("-5", "whole numbers"),
        ("2.5", "whole numbers"),
        ([1.0], "whole numbers"),
        ([True], "whole numbers"),
        ([-1], "0 or more"),
        ("0,5,5,10,10", "repeated: 5, 10"),
        ("\u00b2", "whole numbers"),  # a digit to str.isdigit, no number to int()
        ("9" * 5000, "whole numbers"),
    ],
)
def test_bad_k_lists_are_refused(value, match) -> None:
    with pytest.raises(UsageError, match=match):
        parse_ks(value)


def test_k_lists_and_uses_are_sorted() -> None:
    assert parse_ks(" 20,0, 5") == (0, 5, 20)
    assert parse_ks([np.int64(3), 1]) == (1, 3)
    assert parse_uses(["both", "calibration,adaptation"]) == ("calibration", "adaptation", "both")
    with pytest.raises(UsageError, match="unknown use calib; valid: calibration"):
        parse_uses("calib")


def test_every_use_has_every_k_in_order(result) -> None:
    curve = result.curve
    for column in ("use", "k", "n_users", "n_cal", "n_adapt", "n_small_cal", "n_tasks"):
        assert column in curve.columns
    for metric in ("coverage", "setsize", "accuracy"):
        assert {metric, f"{metric}_low", f"{metric}_high"} <= set(curve.columns)
    assert curve["use"].tolist() == [u for u in ("calibration", "adaptation", "both") for _ in KS]
    for _, group in curve.groupby("use"):
        assert group["k"].tolist() == list(KS)
    assert (curve["n_users"] == 4).all() and (curve["n_tasks"] == 8).all()


def test_intervals_contain_the_points_and_are_student_t_over_users(result) -> None:
    curve, per_user = result.curve, result.per_user
    for metric in ("coverage", "setsize", "accuracy"):
        assert (curve[f"{metric}_low"] <= curve[metric] + 1e-12).all()
        assert (curve[metric] <= curve[f"{metric}_high"] + 1e-12).all()
    # Recompute one point: per-user means over iterations, then mean +- t * s / sqrt(n).
    rows = per_user[(per_user.use == "adaptation") & (per_user.k == 30)]
    values = rows.groupby("user")["coverage"].mean().to_numpy()
    half = stats.t.ppf(0.975, 3) * values.std(ddof=1) / 2.0
    point = curve[(curve.use == "adaptation") & (curve.k == 30)].iloc[0]
    assert point["coverage"] == pytest.approx(values.mean())
    assert point["coverage_low"] == pytest.approx(max(0.0, values.mean() - half))
    assert point["coverage_high"] == pytest.approx(min(1.0, values.mean() + half))


def test_what_the_k_windows_do(result) -> None:
    rows = result.per_user
    # 100 rows per user, 30 in the pool: 70 fixed test rows for every k.
    assert (rows["n_test"] == 70).all()
    zero = rows[rows.k == 0].set_index(["user", "iteration", "use"])
    for metric in ("coverage", "setsize", "accuracy", "n_cal"):
        by_use = zero[metric].unstack("use")
        assert (by_use.nunique(axis=1) == 1).all()  # k = 0 is one thing for every use
    cal = rows[rows.use == "calibration"]
    assert (cal.groupby(["user", "iteration"])["accuracy"].nunique() == 1).all()
    assert (cal[cal.k > 0]["n_cal"] == cal[cal.k > 0]["k"]).all()
    assert (cal["n_adapt"] == 0).all()
    adapt = rows[rows.use == "adaptation"]
    assert (adapt["n_adapt"] == adapt["k"]).all() and (adapt["cal_source"] == "others").all()
    both = rows[(rows.use == "both") & (rows.k > 0)]
    assert (both["n_adapt"] == both["k"] // 2).all()
    assert (both["n_cal"] == both["k"] - both["k"] // 2).all()
    # Fewer than 20 calibration rows at alpha 0.05 (calibration: k = 5; both:
    # k - k // 2 = 3, 10 and 15): every class, flagged.
    small = rows[rows.small_cal]
    assert set(zip(small.use, small.k, strict=True)) == {
        ("calibration", 5),
        ("both", 5),
        ("both", 20),
        ("both", 30),
    }
    assert (small["coverage"] == 1.0).all() and (small["setsize"] == 3.0).all()
    assert result.curve.query("use == 'both' and k == 20")["n_small_cal"].item() == 8


def _independent(frame, user, seed, k):
    """UIM-style (k = 0) or own-window (k > 0) calibration, computed from scratch:
    the study's threshold rule, numpy.quantile(..., method="higher")."""
    X = frame[[c for c in frame.columns if c.startswith("f")]].to_numpy(float)
    y = pd.Categorical(frame["label"]).codes.astype(int)
    users = frame["userid"].to_numpy()
    own, others = np.flatnonzero(users == user), np.flatnonzero(users != user)
    test, pool = train_test_split(own, test_size=max(KS), stratify=y[own], random_state=seed)
    train, cal = train_test_split(others, train_size=0.6, stratify=y[others], random_state=seed)
    if k:
        cal = np.random.default_rng(seed).permutation(pool)[:k]
    scaler = MinMaxScaler().fit(X[train])
    model = GaussianNB().fit(scaler.transform(X[train]), y[train])
    p_cal = model.predict_proba(scaler.transform(X[cal]))
    p_test = model.predict_proba(scaler.transform(X[test]))
    scores = 1 - p_cal[np.arange(len(cal)), y[cal]]
    n = len(scores)
    q = np.quantile(scores, (n + 1) * (1 - ALPHA) / n, method="higher")
    sets = p_test - (1 - q) >= -np.finfo(float).eps
    covered = sets[np.arange(len(test)), y[test]]
    accuracy = np.mean(model.predict(scaler.transform(X[test])) == y[test])
    return covered.mean(), sets.sum(axis=1).mean(), accuracy


@pytest.mark.parametrize("k", [0, 20, 30])
def test_calibration_matches_an_independent_computation(frame, result, k) -> None:
    rows = result.per_user[(result.per_user.use == "calibration") & (result.per_user.k == k)]
    assert len(rows) == 8
    for row in rows.itertuples():
        coverage, setsize, accuracy = _independent(frame, row.user, row.seed, k)
        assert row.coverage == pytest.approx(coverage, abs=1e-12)
        assert row.setsize == pytest.approx(setsize, abs=1e-12)
        assert row.accuracy == pytest.approx(accuracy, abs=1e-12)


def test_small_users_are_skipped_with_a_note(frame) -> None:
    small = frame[~((frame.userid == 2) & (frame.groupby("userid").cumcount() >= 45))]
    config = CurveConfig(classifier="nb", ks=(0, 30), iterations=1)
    out = curve_run(table_from_frame(small), config)
    assert sorted(out.per_user["user"].unique().tolist()) == [1, 3, 4]
    assert out.notes == ["user 2 skipped: 45 rows, fewer than max(k) + min_test = 50"]
    with pytest.raises(DataError, match="no user has max\\(k\\) \\+ min_test = 95 \\+ 20 rows"):
        curve_run(table_from_frame(frame), CurveConfig(classifier="nb", ks=(0, 95)))


def test_small_calibration_policies(frame) -> None:
    table = table_from_frame(frame)
    with pytest.raises(EvaluationError, match="use calibration, k 5: calibration set of 5 rows"):
        curve_run(table, CurveConfig(classifier="nb", ks=(0, 5), small_cal="error"))
    out = curve_run(table, CurveConfig(classifier="nb", ks=(0, 5), iterations=1, small_cal="skip"))
    point = out.curve.set_index("k").loc[5]
    assert point["n_users"] == 0 and np.isnan(point["coverage"])
    assert not np.isnan(point["accuracy"])


def test_python_function_returns_the_curve(frame) -> None:
    curve = mueval.curve(frame, classifier="nb", ks="0,20", use="adaptation", iterations=1)
    assert curve[["use", "k"]].to_dict("records") == [
        {"use": "adaptation", "k": 0},
        {"use": "adaptation", "k": 20},
    ]


def test_cli_writes_the_folder_and_refuses_bad_input(frame, tmp_path) -> None:
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "curve"
    args = ["curve", "--data", str(path), "-c", "nb", "--iterations", "1"]
    ok = CliRunner().invoke(main, [*args, "--k", "0,5,20", "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "calibration     5      4  100.0 [100.0, 100.0]" in ok.output
    assert sorted(p.name for p in out.iterdir()) == [
        "curve.csv",
        "curve.png",
        "curve_users.csv",
        "run.json",
    ]
    assert (out / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert pd.read_csv(out / "curve.csv")["k"].tolist() == [0, 5, 20]
    info = json.loads((out / "run.json").read_text())
    assert info["config"]["ks"] == [0, 5, 20] and info["config"]["small_cal"] == "full-set"
    again = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert again.exit_code == 2 and "is not empty" in again.output
    bad_k = CliRunner().invoke(main, [*args, "--k", "0,-5"])
    assert bad_k.exit_code == 2 and "whole numbers" in bad_k.output
    bad_use = CliRunner().invoke(main, [*args, "--use", "train"])
    assert bad_use.exit_code == 2 and "unknown use train" in bad_use.output
