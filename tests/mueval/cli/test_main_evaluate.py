"""``mueval evaluate`` end to end: own CSV, real gestures data, bad input, run folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mueval.cli.main import main
from tests.user_tables import make_frame

SUMMARY_COLUMNS = ["strategy", "classifier", "metric", "mean", "sd", "n"]


def _csv(tmp_path: Path, frame: pd.DataFrame | None = None) -> Path:
    frame = make_frame(n_users=3) if frame is None else frame
    frame = frame.rename(columns={"userid": "subject", "label": "activity"})
    path = tmp_path / "mine.csv"
    frame.to_csv(path, index=False)
    return path


def _data_args(path: Path) -> tuple[str, ...]:
    """``--data`` naming the user and label columns of :func:`_csv`."""
    return ("--data", str(path), "--user-col", "subject", "--label-col", "activity")


def _invoke(*args: str):
    return CliRunner().invoke(main, ["evaluate", *args], catch_exceptions=False)


def test_own_csv_end_to_end_writes_the_run_folder(tmp_path: Path) -> None:
    path = _csv(tmp_path)
    out = tmp_path / "run"
    result = _invoke(
        *_data_args(path),
        "-s",
        "mm,ucm",
        "-s",
        "ui",
        "-c",
        "nb,knn",
        "--iterations",
        "2",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    assert "MM (mixed): mean±SD over 2 iterations" in result.output
    assert "UCM (user-calibrated)" in result.output and "UIM (user-independent)" in result.output
    assert "Naive Bayes" in result.output and "KNN" in result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "conditional_coverage.csv",
        "coverage_summary.csv",
        "diagnostics.parquet",
        "predictions.parquet",
        "run.json",
        "size_coverage.csv",
        "splits.parquet",
        "summary.csv",
        "user_coverage.csv",
        "user_validity.csv",
    ]
    info = json.loads((out / "run.json").read_text())
    assert info["format_version"] == 1
    assert info["classes"] == ["run", "sit", "walk"]
    assert info["dataset"]["source"] == "file" and info["dataset"]["n_users"] == 3
    assert info["config"]["strategies"] == ["mm", "uim", "ucm"]
    assert info["config"]["threshold"] == "study"  # the reference protocol's rule
    assert "threshold=study" in result.output
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns) == SUMMARY_COLUMNS
    # 3 strategies x 2 classifiers x (17 metrics + 5 basic diagnostics), over 2 iterations.
    assert len(summary) == 3 * 2 * (17 + 5) and set(summary["n"]) == {2}
    splits = pd.read_parquet(out / "splits.parquet")
    # User ids are text in every file, as in the table (mueval.runfolder.columns).
    assert str(splits["user"].dtype) == "string"
    assert splits.loc[splits.strategy == "mm", "user"].isna().all()
    # mm: 1 per (clf, it); uim and ucm: 3 users each.
    assert len(splits) == 2 * 2 * (1 + 3 + 3)
    preds = pd.read_parquet(out / "predictions.parquet")
    assert str(preds["target_user"].dtype) == "string"
    assert str(preds["userid"].dtype) == "string"
    # 315 rows: mm tests on 63 rows; uim/ucm on half of each user's 105 rows (52).
    per_run = {"mm": 63, "uim": 3 * 52, "ucm": 3 * 52}
    assert preds.groupby("strategy").size().to_dict() == {k: v * 4 for k, v in per_run.items()}
    first = preds.iloc[0]
    assert len(first["p_values"]) == 3 and len(first["proba"]) == 3
    assert first["set_size"] == len(first["pred_set"])
    assert first["covered"] == (first["y_true"] in list(first["pred_set"]))
    # Summary accuracy = mean over iterations of the per-iteration mean over users.
    acc = splits[(splits.strategy == "uim") & (splits.classifier == "nb")]
    expected = acc.groupby("iteration")["accuracy"].mean().mean()
    got = summary.query("strategy == 'uim' and classifier == 'nb' and metric == 'accuracy'")
    assert got["mean"].iloc[0] == pytest.approx(expected)


def test_real_gestures_two_iterations(tmp_path: Path, gestures_zip: Path) -> None:
    result = _invoke(
        "--dataset",
        "gestures",
        "--manual-dir",
        str(gestures_zip.parent),
        "--data-home",
        str(tmp_path / "home"),
        "-s",
        "mm,udm",
        "-c",
        "nb,knn",
        "--iterations",
        "2",
        "--out",
        str(tmp_path / "run"),
    )
    assert result.exit_code == 0, result.output
    assert "gestures: 3200 rows, 8 users, 20 classes" in result.output
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["dataset"]["source"] == "registry" and len(info["classes"]) == 20
    assert len(info["dataset"]["provenance_sha256"]) == 64
    summary = pd.read_csv(tmp_path / "run" / "summary.csv")
    cov = summary[summary.metric == "coverage"]["mean"]
    assert ((cov > 0.85) & (cov <= 1.0)).all()


@pytest.mark.parametrize(
    ("option", "value", "valid"),
    [
        (
            "--strategy",
            "loso",
            "mm, udm, uim, ucm, uam, uxc, ukm, mixed, ud, ui, uc, ua, ux, uk, all",
        ),
        ("--classifier", "xgb", "nb, rf, svm, knn, all"),
    ],
)
def test_unknown_choice_exits_2_and_lists_valid_ones(tmp_path, option, value, valid) -> None:
    result = _invoke(
        *_data_args(_csv(tmp_path)),
        option,
        value,
    )
    assert result.exit_code == 2
    assert value in result.output and valid in result.output


def test_unknown_score_exits_2(tmp_path) -> None:
    result = _invoke("--data", str(_csv(tmp_path)), "--score", "bogus")
    assert result.exit_code == 2 and "lac" in result.output and "top_k" in result.output


def test_wrong_user_column_exits_2_and_lists_columns(tmp_path) -> None:
    result = _invoke("--data", str(_csv(tmp_path)), "--user-col", "who")
    assert result.exit_code == 2
    assert "no user column 'who'" in result.output and "subject" in result.output


def test_user_with_one_class_is_a_clear_error_for_udm(tmp_path) -> None:
    frame = make_frame(n_users=3)
    frame.loc[frame.userid == 11, "label"] = "sit"
    path = _csv(tmp_path, frame)
    out = tmp_path / "run"
    result = _invoke(
        *_data_args(path),
        "-s",
        "udm",
        "-c",
        "nb",
        "--iterations",
        "1",
        "--out",
        str(out),
    )
    assert result.exit_code == 1
    assert "udm, user 11: the user has only one class (sit: 105)" in result.output
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run")]


def test_nan_label_is_a_clear_error_with_the_count(tmp_path) -> None:
    frame = make_frame(n_users=3)
    frame.loc[[4, 9, 200], "label"] = np.nan
    result = _invoke(*_data_args(_csv(tmp_path, frame)))
    assert result.exit_code == 1
    assert "label column 'activity' has 3 missing value(s) of 315 rows" in result.output


def test_non_numeric_feature_columns_are_named(tmp_path) -> None:
    frame = make_frame(n_users=3)
    frame["phone"] = "android"
    result = _invoke(*_data_args(_csv(tmp_path, frame)))
    assert result.exit_code == 1 and "not numeric: phone" in result.output


def test_dataset_too_small_for_a_split(tmp_path) -> None:
    frame = make_frame(n_users=2, per_class=2)  # 6 rows per user, 2 per class
    result = _invoke(
        *_data_args(_csv(tmp_path, frame)),
        "-s",
        "udm",
        "-c",
        "nb",
        "--iterations",
        "1",
    )
    assert result.exit_code == 1
    # 6 rows: 3 train (ceil(0.4 * 6) = 3 go to the rest), then 3 rows of 3 classes
    # cannot be halved with stratification.
    assert (
        "udm, user 10: cannot split 3 rows with train_size=0.5 "
        "(class counts run: 1, sit: 1, walk: 1)"
    ) in result.output


def test_failed_run_leaves_no_folder_and_existing_folder_is_kept(tmp_path) -> None:
    small = _csv(tmp_path, make_frame(n_users=3, per_class=10))  # UDM cal of 6 rows
    out = tmp_path / "run"
    args = _data_args(small)
    # At alpha 0.1 a calibration set needs 10 rows: UDM's 6 are too few, MM's 18 are not.
    args += ("-s", "udm,mm", "-c", "nb", "--iterations", "1", "--alpha", "0.1")
    args += ("--out", str(out))
    result = _invoke(*args)
    assert result.exit_code == 1 and "--small-cal skip" in result.output
    assert list(tmp_path.iterdir()) == [small]
    # With skip it completes, recording NaN conformal metrics for UDM and a note.
    result = _invoke(*args, "--small-cal", "skip")
    assert result.exit_code == 0, result.output
    info = json.loads((out / "run.json").read_text())
    assert len(info["skipped"]) == 3
    # An existing non-empty folder is not overwritten without --overwrite.
    again = _invoke(*args)
    assert again.exit_code == 1 and "already exists" in again.output


def test_help_lists_options() -> None:
    result = CliRunner().invoke(main, ["evaluate", "--help"])
    assert result.exit_code == 0
    for option in (
        "--dataset",
        "--data",
        "--strategy",
        "--classifier",
        "--alpha",
        "--mondrian",
        "--adapt-frac",
        "--jobs",
        "--backend",
        "--scheduler",
        "--out",
        "--score",
    ):
        assert option in result.output


def test_mondrian_aps_uam_and_progress_bar(tmp_path) -> None:
    path = _csv(tmp_path)
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            *_data_args(path),
            "-s",
            "uam,mm",
            "-c",
            "nb",
            "--iterations",
            "2",
            "--mondrian",
            "--score",
            "aps",
            "--threshold",
            "mapie",
            "--progress",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "UAM (user-adaptive)" in result.output and "mondrian" in result.output
    # 2 iterations x (1 mm + 3 uam users) x 1 classifier = 8 tasks on the bar.
    assert "8/8" in result.stderr and "task" in result.stderr
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["config"]["mondrian"] is True and info["config"]["score"] == "aps"
    assert info["config"]["threshold"] == "mapie"
    # uam: each user's 105 rows -> 52 to training, 53 halved: 26 calibration, 27 test.
    splits = pd.read_parquet(tmp_path / "run" / "splits.parquet")
    uam = splits[splits.strategy == "uam"]
    assert set(uam["n_cal"]) == {26} and set(uam["n_test"]) == {27}


def test_jobs_zero_is_a_usage_error(tmp_path) -> None:
    result = _invoke(
        *_data_args(_csv(tmp_path)),
        "--jobs",
        "0",
        "-c",
        "nb",
        "-s",
        "mm",
    )
    assert result.exit_code == 2, result.output
    assert "'--jobs' / '-j': must be a positive number of worker processes" in result.output


def test_exactly_one_of_dataset_and_data_is_asked_for(tmp_path) -> None:
    # evaluate and curve choose their table with one function: one message for both.
    both = ("--dataset", "wisdm", "--data", str(_csv(tmp_path)))
    for command in ("evaluate", "curve"):
        for args in ((), both):
            result = CliRunner().invoke(main, [command, *args, "-c", "nb"])
            assert result.exit_code == 2, result.output
            assert "give exactly one of --dataset NAME or --data FILE" in result.output


def test_jobs_default_to_every_usable_cpu(tmp_path) -> None:
    # Here, not at the top: the CPU count is what the default is compared with.
    from mueval.cpus import usable_cpus
    from tests.mueval.runfolder.test_predictions import assert_same_run_folders

    path = _csv(tmp_path)
    args = (*_data_args(path), "-c", "nb", "-s", "mm,ucm", "--iterations", "1")
    default = _invoke(*args, "--out", str(tmp_path / "default"))
    one = _invoke(*args, "--jobs", "1", "--out", str(tmp_path / "one"))
    assert default.exit_code == 0 and one.exit_code == 0, default.output + one.output
    info = json.loads((tmp_path / "default" / "run.json").read_text())
    assert info["config"]["jobs"] == usable_cpus()
    assert_same_run_folders(tmp_path / "one", tmp_path / "default")
    help_text = CliRunner().invoke(main, ["evaluate", "--help"]).output
    assert f"every CPU this process may use, {usable_cpus()} here" in " ".join(help_text.split())


def test_log_lines_instead_of_a_bar_when_stderr_is_not_a_terminal(tmp_path) -> None:
    args = (
        *_data_args(_csv(tmp_path)),
        "-c",
        "nb",
        "-s",
        "mm",
        "--iterations",
        "1",
    )
    result = _invoke(*args)
    assert result.exit_code == 0
    # one plain line (no bar's carriage returns) at 100 % of the single task
    assert "mueval: 1/1 tasks (100 %)" in result.stderr and "\r" not in result.stderr
    quiet = _invoke(*args, "--no-progress")
    assert quiet.exit_code == 0 and "tasks" not in quiet.stderr


def test_string_user_ids_stay_the_users_names(tmp_path) -> None:
    frame = make_frame(n_users=3)
    frame["userid"] = frame["userid"].map({10: "carol", 11: "alice", 12: "bob"})
    out = tmp_path / "run"
    result = _invoke(
        *_data_args(_csv(tmp_path, frame)),
        "-c",
        "nb",
        "-s",
        "ucm",
        "--iterations",
        "1",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    splits = pd.read_parquet(out / "splits.parquet")
    assert splits["user"].tolist() == ["alice", "bob", "carol"]
    predictions = pd.read_parquet(out / "predictions.parquet")
    assert set(predictions["userid"]) == {"alice", "bob", "carol"}


def test_out_that_cannot_be_written_fails_before_any_work(tmp_path) -> None:
    # The parent of --out is a file: no folder can ever be made there. The run must
    # stop with a clean error before evaluating anything, and leave nothing behind.
    path = _csv(tmp_path)
    out = path / "run"
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            *_data_args(path),
            "-s",
            "mm",
            "-c",
            "nb",
            "--iterations",
            "1",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"cannot write the run folder {out}" in result.output
    assert f"expected {path} to be a writable folder" in result.output
    assert "accuracy" not in result.output  # no table: nothing was evaluated
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.csv"]


def test_write_run_turns_an_unusable_parent_into_an_output_error(tmp_path) -> None:
    from mueval.errors import OutputError
    from mueval.runfolder import write_run

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(OutputError, match=r"cannot write the run folder .*file/deeper/run"):
        write_run(
            blocker / "deeper" / "run",
            run_info={},
            summary=pd.DataFrame(),
            splits=pd.DataFrame(),
            predictions=None,
        )


def test_user_ids_of_any_unicode_digits_sort_without_error(tmp_path) -> None:
    # "²" and "①" are digits to str.isdigit but no decimal numbers (int() refuses
    # them), and int() refuses runs of more than 4,300 digits.
    long = "9" * 5000
    frame = make_frame(n_users=3)
    frame["userid"] = frame["userid"].map({10: "①", 11: long, 12: "²"})
    out = tmp_path / "run"
    result = _invoke(
        *_data_args(_csv(tmp_path, frame)), "-c", "nb", "-s", "ucm", "--iterations", "1",
        "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    splits = pd.read_parquet(out / "splits.parquet")
    # A run of digits comes before text; "²" (U+00B2) before "①" (U+2460).
    assert splits["user"].tolist() == [long, "²", "①"]
