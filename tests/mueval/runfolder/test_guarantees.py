"""Per-user guarantees in the run folder: computed on evaluate, written, read back,
recomputed for older folders, and checked against the predictions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mueval
from mueval.guarantees.compute import compute_guarantees
from mueval.runfolder import RUN_FILES, RunFolderError, read_run_folder


def _rows(counts: dict[int, tuple[int, int]]) -> pd.DataFrame:
    """Prediction rows of one (strategy, classifier): user -> (n, n_covered), 3-set sizes."""
    parts = []
    for user, (n, k) in counts.items():
        parts.append(
            pd.DataFrame(
                {
                    "strategy": "UCM",
                    "classifier": "RF",
                    "iteration": np.arange(n) % 2,
                    "userid": user,
                    "covered": np.arange(n) < k,
                    "set_size": 1,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_one_user_clearly_below_target_is_counted_and_named() -> None:
    # User 2 covers 60 of 100 rows: Clopper-Pearson 95 % is [0.4972, 0.6967],
    # entirely below 0.9. User 1 covers 95 of 100: [0.8872, 0.9836], not below.
    # Pooled: 155 of 200 = 0.775.
    # The exact per-user test needs each iteration's calibration size.
    splits = pd.DataFrame(
        {"strategy": "UCM", "classifier": "RF", "iteration": [0, 0, 1, 1], "user": [1, 2, 1, 2]}
    ).assign(n_cal=50)
    found = compute_guarantees(_rows({1: (100, 95), 2: (100, 60)}), splits, alpha=0.1, n_classes=3)
    users = found.user_coverage.set_index("user")
    assert users.loc[2, "n_covered"] == 60
    assert users.loc[2, "low"] == pytest.approx(0.4972, abs=1e-4)
    assert users.loc[2, "high"] == pytest.approx(0.6967, abs=1e-4)
    assert list(users["below"]) == [False, True]
    row = found.coverage_summary.iloc[0]
    assert (row["n_below"], row["share_below"], row["worst_user"]) == (1, 0.5, 2)
    assert row["pooled_coverage"] == pytest.approx(0.775)
    kinds = [w["kind"] for w in found.warnings]
    assert kinds == ["pooled-below-target", "users-below-target"]
    users_warning = found.warnings[1]["message"]
    assert "user 2" in users_warning
    assert "user 2, 0.600 [0.497, 0.697]" in users_warning


def test_degenerate_and_small_calibration_warnings_reach_the_run() -> None:
    rows = _rows({1: (40, 40)})
    rows["set_size"] = 3  # every set holds all 3 classes
    splits = pd.DataFrame(
        {"strategy": "UCM", "classifier": "RF", "iteration": [0, 1], "user": 1, "n_cal": 5}
    )
    found = compute_guarantees(rows, splits, alpha=0.1, n_classes=3)
    assert [w["kind"] for w in found.warnings] == ["calibration-too-small", "degenerate-sets"]


def _frame(seed: int = 0) -> pd.DataFrame:
    """Three users; user 3's classes are relabelled, so pooled models miss it."""
    rng = np.random.default_rng(seed)
    parts = []
    labels = ("sit", "walk", "run")
    for user in (1, 2, 3):
        for c, label in enumerate(labels):
            x = rng.normal(c * 3.0, 0.5, (30, 3))
            own = labels[(c + 1) % 3] if user == 3 else label
            part = pd.DataFrame(x, columns=["a", "b", "c"])
            part.insert(0, "label", own)
            part.insert(0, "userid", user)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def run() -> mueval.Run:
    # One family per strategy and classifier: with two iterations, user 3's
    # MM p-value (0.010) is flagged among MM's 3 users (Holm: 0.030), not
    # among the run's 6 (0.061; test_the_run_family_corrects_over_every_user).
    return mueval.evaluate(
        _frame(),
        strategies="mm,ucm",
        classifiers="nb",
        iterations=2,
        alpha=0.1,
        progress=False,
        user_family="pair",
    )


def test_the_run_family_corrects_over_every_user(run) -> None:
    default = mueval.evaluate(
        _frame(), strategies="mm,ucm", classifiers="nb", iterations=2, alpha=0.1, progress=False
    )
    assert default.config["user_family"] == "run"
    mine, pair = (
        r.user_coverage.set_index(["strategy", "user"]).sort_index() for r in (default, run)
    )
    np.testing.assert_allclose(mine["p_value"], pair["p_value"], rtol=1e-12)
    # Holm over all 6 users by hand: the i-th smallest times (7 - i), then the
    # running maximum.
    p = mine["p_value"].to_numpy()
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, p[order] * (len(p) - np.arange(len(p))))
    holm = np.empty(len(p))
    holm[order] = np.maximum.accumulate(scaled)
    np.testing.assert_allclose(mine["p_adjusted"], holm, rtol=1e-12)
    assert mine.loc[("mm", "3"), "p_value"] < 0.05 / 3  # flagged per pair ...
    assert pair.loc[("mm", "3"), "below"]
    assert mine.loc[("mm", "3"), "p_adjusted"] > 0.05  # ... not over the run's 6 users
    assert not mine["below"].any()
    assert not [w for w in default.warnings if w["kind"] == "users-below-target"]


def test_evaluate_computes_the_guarantees_from_its_rows(run) -> None:
    preds = run.predictions
    mine = preds[(preds.strategy == "mm") & (preds.userid == "3")]
    k, n = int(mine.covered.sum()), len(mine)
    # Clopper-Pearson by hand: beta quantiles.
    high = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    table = run.user_coverage.set_index(["strategy", "classifier", "user"])
    assert table.loc[("mm", "nb", "3"), "n"] == n
    assert table.loc[("mm", "nb", "3"), "high"] == pytest.approx(high)
    assert high < 0.9  # the relabelled user is clearly below target under MM
    summary = run.coverage_summary.set_index("strategy")
    assert summary.loc["mm", "worst_user"] == "3"
    assert any(
        w["kind"] == "users-below-target" and "user 3" in w["message"]
        for w in run.warnings
        if w["strategy"] == "mm"
    )


def test_save_writes_and_load_reads_the_guarantees(run, tmp_path: Path) -> None:
    path = run.save(tmp_path / "r")
    assert (path / "user_coverage.csv").is_file() and (path / "coverage_summary.csv").is_file()
    info = json.loads((path / "run.json").read_text())
    assert {"user_coverage.csv", "coverage_summary.csv"} <= set(info["files"]) <= set(RUN_FILES)
    assert info["warnings"] == run.warnings
    again = mueval.Run.load(path)
    cols = ["strategy", "classifier", "user", "n", "n_covered", "below"]
    pd.testing.assert_frame_equal(again.user_coverage[cols], run.user_coverage[cols])
    assert again.warnings == run.warnings


def test_an_older_folder_without_them_is_recomputed(run, tmp_path: Path) -> None:
    path = run.save(tmp_path / "old")
    (path / "user_coverage.csv").unlink()
    (path / "coverage_summary.csv").unlink()
    info = json.loads((path / "run.json").read_text())
    del info["warnings"]
    info["files"] = [f for f in info["files"] if not f.endswith("coverage.csv")]
    info["files"] = [f for f in info["files"] if f != "coverage_summary.csv"]
    (path / "run.json").write_text(json.dumps(info))
    folder = read_run_folder(path)
    assert folder.warnings == run.warnings
    assert folder.coverage_summary["n_below"].tolist() == run.coverage_summary["n_below"].tolist()


def test_stored_counts_that_contradict_the_predictions_are_refused(run, tmp_path: Path) -> None:
    path = run.save(tmp_path / "bad")
    table = pd.read_csv(path / "user_coverage.csv")
    table.loc[0, "n_covered"] += 1
    table.to_csv(path / "user_coverage.csv", index=False)
    with pytest.raises(RunFolderError, match="user_coverage.csv.*n_covered"):
        read_run_folder(path)


def test_malformed_warnings_in_run_json_are_refused(run, tmp_path: Path) -> None:
    path = run.save(tmp_path / "w")
    info = json.loads((path / "run.json").read_text())
    info["warnings"] = [{"kind": 3}]
    (path / "run.json").write_text(json.dumps(info))
    with pytest.raises(RunFolderError, match="'warnings'"):
        read_run_folder(path)


def test_an_edited_coverage_summary_is_refused(run, tmp_path: Path) -> None:
    """The report showed the file's word: 3 users below target where none is."""
    path = run.save(tmp_path / "s")
    table = pd.read_csv(path / "coverage_summary.csv")
    assert (table["n_below"] < 3).all()
    table.loc[table["strategy"] == "ucm", "n_below"] = 3
    table.to_csv(path / "coverage_summary.csv", index=False)
    with pytest.raises(RunFolderError, match=r"coverage_summary.csv: ucm / nb has n_below 3; the"):
        read_run_folder(path)


@pytest.mark.parametrize("edit", ["emptied", "one dropped", "one added"])
def test_edited_warnings_are_refused(run, tmp_path: Path, edit: str) -> None:
    """Emptied, the report said "No warning" of a run with warnings."""
    path = run.save(tmp_path / edit.replace(" ", "-"))
    info = json.loads((path / "run.json").read_text())
    assert info["warnings"], "the run must have a warning to drop"
    if edit == "emptied":
        info["warnings"] = []
    elif edit == "one dropped":
        info["warnings"] = info["warnings"][1:]
    else:
        fake = {**info["warnings"][0], "kind": "users-below-target", "severity": "error"}
        fake["strategy"] = "mm" if fake["strategy"] != "mm" else "ucm"
        info["warnings"].append(fake)
    (path / "run.json").write_text(json.dumps(info))
    says = (
        "that the predictions do not give" if edit == "one added" else "that the predictions give"
    )
    with pytest.raises(RunFolderError, match=f"run.json: 'warnings' .*{says}"):
        read_run_folder(path)


def test_a_summary_row_removed_is_refused(run, tmp_path: Path) -> None:
    """`mueval table` left the metric out without a word."""
    path = run.save(tmp_path / "m")
    table = pd.read_csv(path / "summary.csv")
    gone = (table["strategy"] == "ucm") & (table["metric"] == "coverage")
    table[~gone].to_csv(path / "summary.csv", index=False)
    with pytest.raises(RunFolderError, match="summary.csv: has no coverage row for ucm/nb"):
        read_run_folder(path)
