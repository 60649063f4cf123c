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
from mueval.evaluation.labelcurve import CurveConfig, auto_ks, curve_run, parse_ks, parse_uses

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


def _independent(frame, user, seed, k, others_seed=None):
    """UIM-style (k = 0) or own-window (k > 0) calibration, computed from scratch:
    the study's threshold rule, numpy.quantile(..., method="higher"). ``seed``
    draws the target's rows, ``others_seed`` (default ``seed``) the other users'."""
    others_seed = seed if others_seed is None else others_seed
    X = frame[[c for c in frame.columns if c.startswith("f")]].to_numpy(float)
    y = pd.Categorical(frame["label"]).codes.astype(int)
    users = frame["userid"].to_numpy()
    own, others = np.flatnonzero(users == user), np.flatnonzero(users != user)
    test, pool = train_test_split(own, test_size=max(KS), stratify=y[own], random_state=seed)
    train, cal = train_test_split(
        others, train_size=0.6, stratify=y[others], random_state=others_seed
    )
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


def test_independent_split_seeds_draw_each_split_from_its_own_child_seed(frame) -> None:
    """--split-seeds independent: the other users' split from child 0 of
    SeedSequence(seed), the target's rows from child 1 (computed here from numpy,
    not from mueval), and the setting recorded."""
    config = CurveConfig(
        classifier="nb", ks=KS, uses=("calibration",), iterations=1, split_seeds="independent"
    )
    run = curve_run(table_from_frame(frame), config)
    assert run.info["config"]["split_seeds"] == "independent"
    protocol = curve_run(table_from_frame(frame), CurveConfig(classifier="nb", ks=KS, iterations=1))
    assert protocol.info["config"]["split_seeds"] == "protocol"
    for k in (0, 20):
        rows = run.per_user[run.per_user.k == k]
        assert len(rows) == 4
        for row in rows.itertuples():
            children = np.random.SeedSequence(row.seed).spawn(3)
            others_seed, own_seed = (int(c.generate_state(1, np.uint32)[0]) for c in children[:2])
            coverage, setsize, accuracy = _independent(frame, row.user, own_seed, k, others_seed)
            assert row.coverage == pytest.approx(coverage, abs=1e-12)
            assert row.setsize == pytest.approx(setsize, abs=1e-12)
            assert row.accuracy == pytest.approx(accuracy, abs=1e-12)
    # Other splits, so other numbers for at least one user (the same seed column).
    merged = run.per_user.merge(protocol.per_user, on=["user", "k", "use", "seed"])
    assert (merged.coverage_x != merged.coverage_y).any() or (
        merged.setsize_x != merged.setsize_y
    ).any()
    with pytest.raises(UsageError, match="split_seeds"):
        CurveConfig(split_seeds="shared")


def test_small_users_are_skipped_with_a_note(frame) -> None:
    small = frame[~((frame.userid == 2) & (frame.groupby("userid").cumcount() >= 45))]
    config = CurveConfig(classifier="nb", ks=(0, 30), iterations=1)
    out = curve_run(table_from_frame(small), config)
    assert sorted(out.per_user["user"].unique().tolist()) == [1, 3, 4]
    assert out.notes == ["user 2 skipped: 45 rows, fewer than max(k) + min_test = 50"]
    with pytest.raises(DataError, match="no user has max\\(k\\) \\+ min_test = 95 \\+ 20 rows"):
        curve_run(table_from_frame(frame), CurveConfig(classifier="nb", ks=(0, 95)))


def test_jobs_are_checked_as_evaluate_checks_them_and_do_not_change_the_rows(frame) -> None:
    """-2 (joblib's "all but one") and 0 are refused with the one message of
    mueval.cpus; two workers give the rows of one."""
    from mueval.cpus import JOBS_RULE

    config = CurveConfig(classifier="nb", ks=(0, 20), iterations=1)
    table = table_from_frame(frame)
    for jobs in (0, -2):
        with pytest.raises(UsageError, match=f"{JOBS_RULE.split(',')[0]}.*got {jobs}"):
            curve_run(table, config, jobs=jobs)
    one, two = curve_run(table, config, jobs=1), curve_run(table, config, jobs=2)
    pd.testing.assert_frame_equal(one.per_user, two.per_user)


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
        "curve.svg",
        "curve_users.csv",
        "run.json",
    ]
    assert (out / "curve.svg").read_bytes()[:5] == b"<?xml"
    # The figure names what the curve is of (here: no dataset name, the file's table).
    svg = (out / "curve.svg").read_text(encoding="utf-8")
    assert "classifier nb, alpha = 0.05" in svg
    assert pd.read_csv(out / "curve.csv")["k"].tolist() == [0, 5, 20]
    info = json.loads((out / "run.json").read_text())
    assert info["config"]["ks"] == [0, 5, 20] and info["config"]["small_cal"] == "full-set"
    assert info["config"]["split_seeds"] == "protocol"
    independent = tmp_path / "independent"
    seeds = ["--k", "0,5", "--split-seeds", "independent", "--out", str(independent)]
    other = CliRunner().invoke(main, [*args, *seeds])
    assert other.exit_code == 0, other.output
    recorded = json.loads((independent / "run.json").read_text())["config"]
    assert recorded["split_seeds"] == "independent"
    bad_seeds = CliRunner().invoke(main, [*args, "--split-seeds", "shared"])
    assert bad_seeds.exit_code == 2 and "'shared' is not one of" in bad_seeds.output
    again = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert again.exit_code == 2 and "is not empty" in again.output
    bad_k = CliRunner().invoke(main, [*args, "--k", "0,-5"])
    assert bad_k.exit_code == 2 and "whole numbers" in bad_k.output
    bad_use = CliRunner().invoke(main, [*args, "--use", "train"])
    assert bad_use.exit_code == 2 and "unknown use train" in bad_use.output


def test_cli_writes_the_figure_as_png_at_its_dpi_or_pdf(frame, tmp_path) -> None:
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    args = ["curve", "--data", str(path), "-c", "nb", "--iterations", "1", "--k", "0,20"]
    png = CliRunner().invoke(
        main, [*args, "--out", str(tmp_path / "png"), "--figure-format", "png", "--dpi", "50"]
    )
    assert png.exit_code == 0, png.output
    import matplotlib.image as mpimg

    # 12 x 3.8 inches at 50 dpi.
    assert mpimg.imread(tmp_path / "png" / "curve.png").shape[:2] == (190, 600)
    pdf = CliRunner().invoke(
        main, [*args, "--out", str(tmp_path / "pdf"), "--figure-format", "pdf"]
    )
    assert pdf.exit_code == 0, pdf.output
    assert (tmp_path / "pdf" / "curve.pdf").read_bytes()[:5] == b"%PDF-"
    bad = CliRunner().invoke(main, [*args, "--figure-format", "jpg"])
    assert bad.exit_code == 2 and "jpg" in bad.output


def test_auto_ks_start_where_sets_become_informative_and_keep_every_user() -> None:
    users = ["a"] * 170 + ["b"] * 150 + ["c"] * 120
    ks = auto_ks(users, ["calibration"], 0.05, 20)
    # 0, then from 20 (max(1/0.05, 1/0.95) calibration rows) to 120 - 20.
    assert ks[0] == 0 and ks[1] == 20 and ks[-1] == 100 and len(ks) == 5
    assert list(ks) == sorted(set(ks))
    # both: k - k // 2 calibrate, so k = 39 is the first with 20 of them.
    assert auto_ks(users, ["calibration", "both"], 0.05, 20)[1] == 39
    # alpha 0.1 needs 10 rows.
    assert auto_ks(users, ["calibration"], 0.1, 20)[1] == 10
    # A tiny user gives way to the median user rather than shrinking every k.
    assert auto_ks([*users[:320], "d", "d"], ["calibration"], 0.05, 20)[-1] == 130
    with pytest.raises(
        DataError, match="no informative k: at alpha 0.05 the curve's calibration needs k >= 20"
    ):
        auto_ks(["a"] * 30 + ["b"] * 30, ["calibration"], 0.05, 20)


@pytest.fixture(scope="module")
def wisdm_curve(wisdm_dir):
    """The default curve (--k auto, calibration) on the official WISDM data, naive Bayes,
    one iteration, beside the old default k values 5 and 10."""
    from mueval.data.table import load_data

    table = load_data("wisdm", manual_dir=wisdm_dir)
    ks = auto_ks(table.users, ["calibration"], ALPHA, 20)
    config = CurveConfig(classifier="nb", ks=tuple(sorted({*ks, 5, 10})), iterations=1)
    return table, ks, curve_run(table, config)


def test_auto_ks_give_informative_sets_on_wisdm(wisdm_curve) -> None:
    table, ks, result = wisdm_curve
    n_classes = len(table.classes)
    assert n_classes == 6
    curve = result.curve.set_index("k")
    for k in ks[1:]:
        # Neither every class nor a single guess, and no small calibration set.
        assert 1.0 < curve.loc[k, "setsize"] < n_classes, k
        assert curve.loc[k, "n_small_cal"] == 0, k
    # Every user is in the curve (the smallest user can give the largest k).
    assert result.info["skipped_users"] == []
    # The old defaults: every set holds all six classes, and a note says so.
    for k in (5, 10):
        assert curve.loc[k, "setsize"] == n_classes
        assert any(f"k={k}: every set holds all 6 classes" in n for n in result.notes)
    assert not any(f"k={k}: every set" in n for k in ks for n in result.notes)


def test_curve_figure_names_the_run_and_keeps_its_legend_off_the_data(wisdm_curve) -> None:
    import itertools

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from mueval.evaluation.labelcurve import curve_figure, curve_label

    _, _, result = wisdm_curve
    fig = curve_figure(result.curve, ALPHA, label=curve_label(result.info))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    (legend,) = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legend.get_title().get_text().startswith("wisdm, classifier nb, alpha = 0.05")
    box = legend.get_window_extent(renderer)
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent(renderer))
        for line in ax.get_lines():
            xy = line.get_transform().transform(line.get_xydata())
            assert not (
                (xy[:, 0] > box.x0)
                & (xy[:, 0] < box.x1)
                & (xy[:, 1] > box.y0)
                & (xy[:, 1] < box.y1)
            ).any()
        for axis in (ax.get_xticklabels(), ax.get_yticklabels()):
            boxes = [t.get_window_extent(renderer) for t in axis if t.get_text()]
            assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
    # No title unless asked; the metric is each panel's y label.
    assert not fig.get_suptitle() and all(not ax.get_title() for ax in fig.axes)
    assert [ax.get_ylabel() for ax in fig.axes] == ["coverage", "mean set size", "accuracy"]
