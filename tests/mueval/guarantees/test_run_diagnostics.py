"""Conditional-coverage diagnostics of ``mueval evaluate`` runs (``--diagnostics``).

The wiring is checked against the diagnostics functions applied here, by hand,
to the rows of ``predictions.parquet`` of the same (strategy, classifier,
iteration), on a real gestures run; the pooling rules on a hand-made example.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.preprocessing import MinMaxScaler

from mueval.cli.main import main
from mueval.data.table import load_registered
from mueval.evaluation.records import EvalResult
from mueval.guarantees.run_diagnostics import diagnose, diagnose_pool
from mueval.metrics.diagnostics import (
    coverage_gap,
    excess_risk_target_coverage,
    hsic,
    weighted_coverage_gap,
    worst_slab_coverage,
)
from mueval.names import BASIC_DIAGNOSTICS, FULL_DIAGNOSTICS, METRICS

KEYS = ["strategy", "classifier", "iteration"]


def _evaluate(*args: str):
    return CliRunner().invoke(main, ["evaluate", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def gestures_runs(tmp_path_factory: pytest.TempPathFactory, gestures_zip: Path) -> dict:
    """One real gestures run per level: full (2 workers), basic (default), none."""
    root = tmp_path_factory.mktemp("diag")
    common = [
        "--dataset",
        "gestures",
        "--manual-dir",
        str(gestures_zip.parent),
        "--data-home",
        str(root / "home"),
        "-c",
        "nb",
        "--iterations",
        "2",
    ]
    full = _evaluate(
        *common, "-s", "all", "--diagnostics", "full", "--jobs", "2", "--out", str(root / "full")
    )
    assert full.exit_code == 0, full.output
    basic = _evaluate(*common, "-s", "mm,ucm", "--out", str(root / "basic"))
    assert basic.exit_code == 0, basic.output
    none = _evaluate(*common, "-s", "mm,ucm", "--diagnostics", "none", "--out", str(root / "none"))
    assert none.exit_code == 0, none.output
    table = load_registered("gestures", data_home=root / "home", manual_dir=gestures_zip.parent)
    return {"root": root, "table": table, "full": full, "basic": basic, "none": none}


def test_full_diagnostics_equal_the_functions_on_predictions(gestures_runs) -> None:
    run = gestures_runs["root"] / "full"
    alpha = json.loads((run / "run.json").read_text())["config"]["alpha"]
    preds = pd.read_parquet(run / "predictions.parquet")
    diag = pd.read_parquet(run / "diagnostics.parquet").set_index(KEYS)
    # The documented feature space: the whole table MinMax-scaled.
    X_scaled = MinMaxScaler().fit_transform(gestures_runs["table"].X)
    assert list(diag.columns) == ["seed", "n_rows", *FULL_DIAGNOSTICS]
    # 7 strategies x 1 classifier x 2 iterations.
    assert len(diag) == 14
    for key, rows in preds.groupby(KEYS, sort=False):
        got = diag.loc[key]
        covered = rows["covered"].to_numpy()
        sizes = rows["set_size"].to_numpy()
        seed = int(rows["seed"].iloc[0])
        X_rows = X_scaled[rows["row_id"].to_numpy()]
        assert got["seed"] == seed and got["n_rows"] == len(rows)
        expected = {
            "covgap_user": coverage_gap(covered, rows["userid"].to_numpy(), alpha),
            "wcovgap_user": weighted_coverage_gap(covered, rows["userid"].to_numpy(), alpha),
            "covgap_class": coverage_gap(covered, rows["y_true"].to_numpy(), alpha),
            "wcovgap_class": weighted_coverage_gap(covered, rows["y_true"].to_numpy(), alpha),
            "hsic_size_coverage": hsic(sizes, covered),
            "wsc": worst_slab_coverage(
                X_rows, covered, delta=0.1, n_directions=200, random_state=seed
            ),
            "ert": excess_risk_target_coverage(
                X_rows, covered, alpha, random_state=seed, loss="brier"
            ),
        }
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, rel=1e-9, abs=1e-12), (key, name)
        # The whole pool is one admissible slab: WSC never exceeds its coverage.
        assert got["wsc"] <= covered.mean() + 1e-12


def test_wsc_is_at_most_the_mm_coverage_of_its_iteration(gestures_runs) -> None:
    run = gestures_runs["root"] / "full"
    splits = pd.read_parquet(run / "splits.parquet")
    mm = splits[splits.strategy == "mm"].set_index(KEYS)["coverage"]
    diag = pd.read_parquet(run / "diagnostics.parquet").set_index(KEYS)
    wsc = diag.loc[mm.index, "wsc"]
    assert len(wsc) == 2 and (wsc <= mm).all()
    # A user-pooled strategy is diagnosed over its users: the user groups are there.
    ucm = diag.xs("ucm", level="strategy")
    assert (ucm["n_rows"] == 8 * 200).all()  # 8 users, half of each user's 400 rows


def test_size_coverage_counts_sum_to_the_test_rows(gestures_runs) -> None:
    run = gestures_runs["root"] / "full"
    ssc = pd.read_csv(run / "size_coverage.csv")
    assert list(ssc.columns) == [*KEYS, "set_size", "coverage", "count"]
    preds = pd.read_parquet(run / "predictions.parquet")
    counts = ssc.groupby(KEYS)["count"].sum()
    assert counts.to_dict() == preds.groupby(KEYS).size().to_dict()
    # Coverage per set size, by hand from the rows.
    by_hand = preds.groupby([*KEYS, "set_size"])["covered"].agg(["mean", "size"])
    got = ssc.set_index([*KEYS, "set_size"]).sort_index()
    assert got.index.equals(by_hand.index)
    np.testing.assert_allclose(got["coverage"], by_hand["mean"], rtol=1e-12)
    assert (got["count"].to_numpy() == by_hand["size"].to_numpy()).all()


def test_summary_rows_are_mean_and_sd_over_iterations(gestures_runs) -> None:
    run = gestures_runs["root"] / "full"
    summary = pd.read_csv(run / "summary.csv")
    diag = pd.read_parquet(run / "diagnostics.parquet")
    ucm = summary[(summary.strategy == "ucm") & (summary.classifier == "nb")]
    # The study's metrics first, in their order, then the diagnostics.
    assert ucm["metric"].tolist() == [*METRICS, *FULL_DIAGNOSTICS]
    values = diag.loc[diag.strategy == "ucm", "covgap_class"].to_numpy()
    row = ucm.set_index("metric").loc["covgap_class"]
    assert row["mean"] == pytest.approx((values[0] + values[1]) / 2)
    assert row["sd"] == pytest.approx(abs(values[0] - values[1]) / math.sqrt(2))
    assert row["n"] == 2
    info = json.loads((run / "run.json").read_text())
    assert info["config"]["diagnostics"] == "full" and info["format_version"] == 1
    assert info["config"]["diagnostics_wsc_directions"] == 200


def test_cli_prints_the_diagnostics_below_a_rule(gestures_runs) -> None:
    full = gestures_runs["full"].output.splitlines()
    blocks = [i for i, line in enumerate(full) if line.startswith("OU_textbook")]
    assert len(blocks) == 7  # one per strategy
    for i in blocks:
        assert set(full[i + 1]) == {"-"}
        assert [line.split()[0] for line in full[i + 2 : i + 9]] == list(FULL_DIAGNOSTICS)
    wsc = next(line for line in full if line.startswith("wsc"))
    assert wsc.split()[1].startswith("0.")  # a fraction with two decimals
    hsic_line = next(line for line in full if line.startswith("hsic_size_coverage"))
    assert "e-" in hsic_line  # tiny: scientific notation
    basic = gestures_runs["basic"].output
    assert "covgap_user" in basic and "wsc " not in basic and "ert " not in basic


def test_basic_is_the_default_and_none_writes_no_diagnostics(gestures_runs) -> None:
    root = gestures_runs["root"]
    basic = pd.read_parquet(root / "basic" / "diagnostics.parquet")
    assert list(basic.columns) == [
        "strategy",
        "classifier",
        "iteration",
        "seed",
        "n_rows",
        *BASIC_DIAGNOSTICS,
    ]
    assert json.loads((root / "basic" / "run.json").read_text())["config"]["diagnostics"] == "basic"
    none = root / "none"
    assert not (none / "diagnostics.parquet").exists()
    assert not (none / "size_coverage.csv").exists()
    assert set(pd.read_csv(none / "summary.csv")["metric"]) == set(METRICS)
    assert "covgap_user" not in gestures_runs["none"].output
    assert json.loads((none / "run.json").read_text())["config"]["diagnostics"] == "none"
    # The study's numbers do not depend on the diagnostics level.
    a = pd.read_csv(root / "basic" / "summary.csv")
    b = pd.read_csv(none / "summary.csv")
    pd.testing.assert_frame_equal(a[a.metric.isin(METRICS)].reset_index(drop=True), b)


@pytest.mark.parametrize("name", ["basic", "none"])
def test_compare_reads_runs_with_and_without_diagnostics(gestures_runs, name) -> None:
    run = gestures_runs["root"] / name
    result = CliRunner().invoke(main, ["compare", str(run), "--metric", "coverage"])
    assert result.exit_code == 0, result.output
    assert "mm" in result.output and "ucm" in result.output


def test_unknown_level_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("userid,label,f0\n1,a,0.5\n")
    result = CliRunner().invoke(main, ["evaluate", "--data", str(path), "--diagnostics", "some"])
    assert result.exit_code == 2 and "none" in result.output and "full" in result.output


def test_pool_by_hand() -> None:
    # alpha 0.25, target 0.75. Users: 0 covers 2 of 3 (gap 1/12), 1 covers 1 of 1
    # (gap 1/4). Classes: 0 covers rows 0, 2 -> 1/2 (gap 1/4); 1 covers rows 1, 3
    # -> 1 (gap 1/4).
    covered = np.array([True, True, False, True])
    values, ssc = diagnose_pool(
        covered,
        np.array([1, 2, 2, 1]),
        np.array([0, 0, 0, 1]),
        np.array([0, 1, 0, 1]),
        None,
        alpha=0.25,
        seed=0,
        level="basic",
    )
    assert values["covgap_user"] == pytest.approx((1 / 12 + 1 / 4) / 2)
    assert values["wcovgap_user"] == pytest.approx(3 / 4 * 1 / 12 + 1 / 4 * 1 / 4)
    assert values["covgap_class"] == pytest.approx(0.25)
    assert values["wcovgap_class"] == pytest.approx(0.25)
    assert ssc == {1: (1.0, 2), 2: (0.5, 2)}
    assert set(values) == set(BASIC_DIAGNOSTICS)


def _result(user: int, rows: list[int], sets: np.ndarray | None) -> EvalResult:
    n = len(rows)
    return EvalResult(
        strategy="ucm",
        classifier="nb",
        iteration=1,
        seed=101,
        user=user,
        n_train=10,
        n_test=n,
        n_cal=5,
        metrics={},
        rows=np.array(rows),
        y_pred=np.zeros(n, dtype=int),
        sets=sets,
        pvalues=None if sets is None else np.zeros(sets.shape),
        proba=np.zeros((n, 2)),
    )


def test_skipped_users_leave_the_pool_and_an_empty_pool_is_nan() -> None:
    y = np.array([0, 1, 0, 1])
    users = np.array([0, 0, 1, 1])
    X = np.arange(8.0).reshape(4, 2)
    # User 1's calibration was skipped (--small-cal skip): only user 0's rows 0, 1
    # are pooled; row 0's set {1} misses class 0, row 1's set {0, 1} holds class 1.
    kept = _result(0, [0, 1], np.array([[False, True], [True, True]]))
    out = diagnose([_result(1, [2, 3], None), kept], X, y, users, alpha=0.5, level="basic")
    row = out.frame.iloc[0]
    assert row["n_rows"] == 2
    assert row["covgap_user"] == pytest.approx(0.0)  # user 0 covers 1/2 = 1 - alpha
    assert row["covgap_class"] == pytest.approx(0.5)  # classes: 0 and 1, gaps 0.5 each
    assert out.size_coverage[["set_size", "coverage", "count"]].values.tolist() == [
        [1, 0.0, 1],
        [2, 1.0, 1],
    ]
    empty = diagnose([_result(1, [2, 3], None)], X, y, users, alpha=0.5, level="full")
    assert empty.frame[list(FULL_DIAGNOSTICS)].isna().all(axis=None)
    assert empty.size_coverage.empty
    assert diagnose([kept], X, y, users, alpha=0.5, level="none").frame.empty
