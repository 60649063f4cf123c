"""The per-user validity test and coverage per class and cohort in the run folder:
computed on evaluate, written, read back and checked, warned about, reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mueval
from mueval.data.synthetic import make_users
from mueval.guarantees.compute import compute_guarantees
from mueval.guarantees.run_warnings import validity_warnings
from mueval.runfolder import RunFolderError, read_run_folder


def _predictions(p_true: dict[int, list[float]], n_cal: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """UCM rows of one iteration: user -> its true-label p-values (class 'a' of 2)."""
    parts = []
    for user, ps in p_true.items():
        parts.append(
            pd.DataFrame(
                {
                    "strategy": "ucm",
                    "classifier": "rf",
                    "iteration": 1,
                    "target_user": user,
                    "userid": user,
                    "y_true": "a",
                    "covered": np.asarray(ps) > 0.1,
                    "set_size": 1,
                    "p_values": [np.array([p, 0.5]) for p in ps],
                }
            )
        )
    preds = pd.concat(parts, ignore_index=True)
    splits = pd.DataFrame(
        {
            "strategy": "ucm",
            "classifier": "rf",
            "iteration": 1,
            "user": list(p_true),
            "n_cal": n_cal,
        }
    )
    return preds, splits


def test_a_user_whose_test_scores_all_exceed_calibration_is_flagged() -> None:
    # n_cal = 19: p-values are (1 + c) / 20. User 1's ten p-values are spread
    # evenly over the grid; user 2's are all 1/20 (every test score above all
    # 19 calibration scores). Rank method: the two-sample one-sided KS of the
    # 19 calibration positions against ten test positions at 19.5 has D+ = 1;
    # its p-value is scipy's ks_2samp on those positions, built here by hand.
    grid = [(1 + c) / 20 for c in range(0, 20, 2)]
    preds, splits = _predictions({1: grid, 2: [1 / 20] * 10}, n_cal=19)
    found = compute_guarantees(preds, splits, alpha=0.1, n_classes=2, classes=["a", "b"])
    table = found.user_validity.set_index("user")
    assert set(table["method"]) == {"rank"}
    expected = stats.ks_2samp(np.arange(1.0, 20), np.full(10, 19.5), alternative="greater")
    assert table.loc[2, "pvalue"] == pytest.approx(expected.pvalue)
    assert table.loc[2, "statistic"] == pytest.approx(1.0)
    assert list(table["flagged"]) == [False, True]
    kinds = [w["kind"] for w in found.warnings]
    assert "users-not-exchangeable" in kinds
    message = next(w for w in found.warnings if w["kind"] == "users-not-exchangeable")["message"]
    assert "1 of 2 users" in message and "user 2" in message
    assert "Benjamini-Hochberg" in message


def test_half_the_users_flagged_is_an_error() -> None:
    table = pd.DataFrame(
        {
            "strategy": "uim",
            "classifier": "nb",
            "user": [1, 2],
            "pvalue_bh": [0.01, 0.5],
            "flagged": [True, False],
            "method": "rank",
        }
    )
    (warning,) = validity_warnings(table)
    assert warning.severity == "error" and warning.kind == "users-not-exchangeable"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    frame = make_users(6, rows_per_user=120, seed=2)
    frame["band"] = np.where(frame["userid"] % 2 == 0, "even", "odd")
    run = mueval.evaluate(
        frame,
        strategies="mm,uim",
        classifiers="nb",
        iterations=2,
        condition="cohort:band",
        progress=False,
        diagnostics="none",
    )
    return run.save(tmp_path_factory.mktemp("runs") / "run")


def _copy(run_folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(run_folder, target)
    return target


def test_the_files_read_back_as_written(run_folder: Path) -> None:
    folder = read_run_folder(run_folder)
    written = pd.read_csv(run_folder / "user_validity.csv")
    assert len(folder.user_validity) == len(written) == 12  # 2 strategies x 6 users
    assert dict(zip(folder.user_validity.strategy, folder.user_validity.method, strict=True)) == {
        "mm": "uniform",
        "uim": "rank",
    }
    counts = folder.conditional_coverage.groupby("by")["n"].sum()
    assert counts["class"] == counts["cohort"] == len(folder.predictions)
    assert sorted(folder.user_cohorts["cohort"]) == ["even"] * 3 + ["odd"] * 3
    # Coverage per cohort recomputed from the predictions, independently of the code.
    preds = folder.predictions.assign(
        cohort=np.where(folder.predictions.userid.astype(int) % 2, "odd", "even")
    )
    mm = preds[preds.strategy == "uim"].groupby("cohort")["covered"].agg(["size", "sum"])
    stored = folder.conditional_coverage.query("by == 'cohort' and strategy == 'uim'").set_index(
        "value"
    )
    assert stored["n"].to_dict() == mm["size"].to_dict()
    assert stored["n_covered"].to_dict() == mm["sum"].to_dict()


@pytest.mark.parametrize(
    ("name", "column", "value", "match"),
    [
        ("conditional_coverage.csv", "n_covered", 1, "conditional_coverage.csv: .* has n="),
        ("user_validity.csv", "flagged", True, "do not follow from the p-values"),
        ("user_validity.csv", "n", 3, "user_validity.csv: .* has n=3"),
        ("user_cohorts.csv", "cohort", "odd", "conditional_coverage.csv"),
    ],
)
def test_an_edited_file_is_refused(
    run_folder: Path, tmp_path: Path, name: str, column: str, value: object, match: str
) -> None:
    target = _copy(run_folder, tmp_path)
    table = pd.read_csv(target / name)
    table.loc[0, column] = value if column != "flagged" else not bool(table.loc[0, column])
    if column == "cohort":  # move the first user to the other cohort
        table.loc[0, column] = "odd" if table.loc[0, column] == "even" else "even"
    table.to_csv(target / name, index=False)
    with pytest.raises(RunFolderError, match=match):
        read_run_folder(target)


def test_a_user_missing_from_the_cohorts_file_is_refused(run_folder: Path, tmp_path: Path) -> None:
    target = _copy(run_folder, tmp_path)
    table = pd.read_csv(target / "user_cohorts.csv")
    table.iloc[1:].to_csv(target / "user_cohorts.csv", index=False)
    with pytest.raises(RunFolderError, match="without a cohort: 1"):
        read_run_folder(target)


def test_an_older_folder_gets_them_computed(run_folder: Path, tmp_path: Path) -> None:
    target = _copy(run_folder, tmp_path)
    (target / "user_validity.csv").unlink()
    (target / "conditional_coverage.csv").unlink()
    folder = read_run_folder(target)
    assert len(folder.user_validity) == 12
    assert set(folder.conditional_coverage["by"]) == {"class", "cohort"}


def test_the_report_shows_both_sections(run_folder: Path, tmp_path: Path) -> None:
    run = mueval.Run.load(run_folder)
    html = run.report(tmp_path / "report", figures="none").read_text(encoding="utf-8")
    assert 'id="conditional-coverage"' in html and 'id="user-validity"' in html
    assert "Coverage per cohort of users (band)" in html
    assert "Calibration conditioned on: cohort:band" in html


def test_a_strategy_answered_only_with_full_sets_gets_its_validity_rows():
    # UIM under a cohort per user: the target's cohort holds no other user's
    # calibration row, so every UIM result is a --small-cal full-set answer
    # over an empty calibration set. The run used to stop in the validity
    # tests (NaN p-values into Benjamini-Hochberg); now each user has D+ = 0
    # and p-value 1, and UCM's rows beside it are tested as before.
    frame = make_users(4, n_classes=2, rows_per_user=30, n_features=3, seed=1)
    frame["group"] = "g" + frame["userid"].astype(str)
    run = mueval.evaluate(
        frame,
        strategies="uim,ucm",
        classifiers="nb",
        iterations=2,
        condition="cohort:group",
        small_cal="full-set",
        jobs=1,
        progress=False,
    )
    uim = run.user_validity[run.user_validity["strategy"] == "uim"]
    assert len(uim) == 4
    assert (uim["statistic"] == 0.0).all() and (uim["pvalue"] == 1.0).all()
    assert not uim["flagged"].any()
    assert (run.splits.loc[run.splits["strategy"] == "uim", "n_cal"] == 0).all()
    ucm = run.user_validity[run.user_validity["strategy"] == "ucm"]
    assert len(ucm) == 4 and ucm["pvalue"].between(0, 1).all()
