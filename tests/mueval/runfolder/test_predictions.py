"""Predictions streamed to ``predictions.parquet`` while the evaluation runs.

``mueval.evaluate(..., out=...)`` writes the prediction rows in row groups as
tasks finish (:class:`mueval.runfolder.PredictionStream`), in task order. The
rows, once put in the in-memory order (strategy, classifier, iteration, target
user), must be those of the in-memory path, the file must be the same for any
number of workers, and a run that fails leaves nothing behind.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import mueval
from mueval.api import evaluate_table
from mueval.data.synthetic import make_users
from mueval.data.table import table_from_frame
from mueval.errors import EvaluationError
from mueval.evaluation.records import EvalConfig
from mueval.evaluation.runner import run
from mueval.guarantees.run_diagnostics import PoolDiagnostics, diagnose
from mueval.names import CLASSIFIERS, STRATEGIES
from mueval.runfolder import PredictionStream, recover_leftovers
from mueval.runfolder import predictions as runfolder_predictions
from mueval.runfolder.format import PREDICTIONS_PART

ARGS = {
    "strategies": ["mm", "udm", "uim", "ucm"],
    "classifiers": ["nb", "knn"],
    "iterations": 2,
    "progress": False,
}


def _frame() -> pd.DataFrame:
    return make_users(5, n_classes=3, rows_per_user=120, n_features=4, seed=3)


def _in_memory_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows ordered as the in-memory path orders its results; a stable sort keeps
    each split's rows in their own order."""
    keys = pd.DataFrame(
        {
            "s": frame["strategy"].map(STRATEGIES.index),
            "c": frame["classifier"].map(CLASSIFIERS.index),
            "i": frame["iteration"],
            "u": frame["target_user"],
        }
    )
    order = keys.sort_values(["s", "c", "i", "u"], kind="stable").index
    return frame.loc[order].reset_index(drop=True)


@pytest.fixture
def small_row_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    # A few hundred rows per group, so that a small run writes many of them.
    monkeypatch.setattr(runfolder_predictions, "ROWS_PER_GROUP", 300)


@pytest.mark.usefixtures("small_row_groups")
def test_streamed_run_equals_the_in_memory_run(tmp_path) -> None:
    frame = _frame()
    streamed = mueval.evaluate(frame, out=tmp_path / "streamed", **ARGS)
    memory = mueval.evaluate(frame, **ARGS)
    memory.save(tmp_path / "memory")

    path = tmp_path / "streamed" / "predictions.parquet"
    meta = pq.ParquetFile(path).metadata
    n_rows = len(memory.predictions)
    # 2 iterations x (mm + 5 udm + 5 uim/ucm) x 2 classifiers; a task gives at most
    # 120 rows (a user's 60 test rows for uim and for ucm), so a group is written
    # once 300 rows wait and holds fewer than 300 + 120.
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert meta.num_rows == n_rows > 3 * 300
    assert all(size < 300 + 120 for size in sizes)
    assert all(size >= 300 for size in sizes[:-1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory", "streamed"]

    on_disk = pq.read_table(path).to_pandas()
    saved = pq.read_table(tmp_path / "memory" / "predictions.parquet").to_pandas()
    pd.testing.assert_frame_equal(saved, memory.predictions)
    # Task order is iteration first: not the in-memory order, the same rows.
    assert not on_disk["strategy"].equals(saved["strategy"])
    pd.testing.assert_frame_equal(_in_memory_order(on_disk), saved)
    # Run.predictions reads the file when first asked for.
    assert streamed.__dict__.get("_predictions_frame") is None
    pd.testing.assert_frame_equal(streamed.predictions, on_disk)

    pd.testing.assert_frame_equal(streamed.summary, memory.summary)
    pd.testing.assert_frame_equal(streamed.splits, memory.splits)
    pd.testing.assert_frame_equal(streamed.user_coverage, memory.user_coverage)
    pd.testing.assert_frame_equal(streamed.coverage_summary, memory.coverage_summary)
    assert streamed.warnings == memory.warnings
    # The validity tests take each row's true-class p-value row group by row
    # group from the file; the diagnostics pool the sets the stream kept.
    pd.testing.assert_frame_equal(streamed.user_validity, memory.user_validity)
    pd.testing.assert_frame_equal(streamed.conditional_coverage, memory.conditional_coverage)
    pd.testing.assert_frame_equal(streamed.diagnostics, memory.diagnostics)
    pd.testing.assert_frame_equal(streamed.size_coverage, memory.size_coverage)
    # The folder reads back with every consistency check.
    again = mueval.Run.load(tmp_path / "streamed")
    pd.testing.assert_frame_equal(again.predictions, on_disk)
    # Saving the streamed run elsewhere copies its file.
    streamed.save(tmp_path / "copy")
    copy = pq.read_table(tmp_path / "copy" / "predictions.parquet").to_pandas()
    pd.testing.assert_frame_equal(copy, on_disk)


@pytest.mark.usefixtures("small_row_groups")
def test_writing_time_is_recorded_per_strategy_and_classifier(tmp_path) -> None:
    mueval.evaluate(_frame(), out=tmp_path / "run", **ARGS)
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    stages = info["stage_timings"]
    assert set(stages) == {f"{s}/{c}" for s in ARGS["strategies"] for c in ARGS["classifiers"]}
    for key, seconds in stages.items():
        assert set(seconds) == {
            "fit_s",
            "predict_s",
            "conformal_s",
            "metrics_s",
            "diagnostics_s",
            "write_s",
        }, key
        assert all(v >= 0 for v in seconds.values())
    assert sum(s["write_s"] for s in stages.values()) == pytest.approx(
        info["timings"]["predictions_write_s"], rel=1e-3, abs=1e-4
    )


#: What run.json records of the machine and the clock, not of the results.
_RUN_CIRCUMSTANCES = ("created", "timings", "stage_timings")


def assert_same_run_folders(one, other) -> None:
    """Every file of two run folders equal byte for byte, but run.json's clock and jobs."""
    names = sorted(p.name for p in one.iterdir())
    assert names == sorted(p.name for p in other.iterdir())
    for name in names:
        if name == "run.json":
            continue
        assert (one / name).read_bytes() == (other / name).read_bytes(), name
    infos = [json.loads((folder / "run.json").read_text()) for folder in (one, other)]
    for info in infos:
        for key in _RUN_CIRCUMSTANCES:
            info.pop(key)
        info["config"].pop("jobs")
    assert infos[0] == infos[1]


# Slow (tens of seconds): .ci/run runs it with -m slow; the default run stays under 5 min.
@pytest.mark.slow
@pytest.mark.usefixtures("small_row_groups")
def test_the_streamed_file_does_not_depend_on_the_workers(tmp_path) -> None:
    # Here, not at the top: the CPU count is what the default is compared with.
    from mueval.cpus import usable_cpus

    frame = _frame()
    args = {**ARGS, "strategies": ["udm", "ucm"], "iterations": 1}
    mueval.evaluate(frame, out=tmp_path / "one", jobs=1, **args)
    mueval.evaluate(frame, out=tmp_path / "two", jobs=2, **args)
    # No jobs: every usable CPU, recorded as the count it came to.
    mueval.evaluate(frame, out=tmp_path / "default", **args)
    one = pq.read_table(tmp_path / "one" / "predictions.parquet")
    two = pq.read_table(tmp_path / "two" / "predictions.parquet")
    assert one.equals(two)
    assert_same_run_folders(tmp_path / "one", tmp_path / "two")
    assert_same_run_folders(tmp_path / "one", tmp_path / "default")
    jobs = [
        json.loads((tmp_path / name / "run.json").read_text())["config"]["jobs"]
        for name in ("one", "two", "default")
    ]
    assert jobs == [1, 2, usable_cpus()]
    assert pq.ParquetFile(tmp_path / "one" / "predictions.parquet").metadata.num_row_groups > 1
    pytest.importorskip("distributed")
    mueval.evaluate(frame, out=tmp_path / "dask", backend="dask", workers=2, **args)
    assert pq.read_table(tmp_path / "dask" / "predictions.parquet").equals(one)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failing_run_leaves_no_file(tmp_path, monkeypatch, jobs) -> None:
    written = []

    class Counting(runfolder_predictions.PredictionStream):
        def _flush(self) -> None:
            super()._flush()
            written.append(self.row_groups)

    monkeypatch.setattr(runfolder_predictions, "ROWS_PER_GROUP", 20)
    monkeypatch.setattr(mueval.api.pipeline, "PredictionStream", Counting)
    frame = _frame()
    # The last two users keep 20 rows of each class: their udm calibration sets (a
    # fifth, 12 rows) are too small for alpha = 0.05, after every other split was
    # streamed. With workers too, the run fails as in one process: with the first
    # of the two in task order, once the tasks before it were streamed.
    small = list(pd.unique(frame["userid"]))[-2:]
    kept = frame[frame.userid.isin(small)].groupby(["userid", "label"]).head(20)
    frame = pd.concat([frame[~frame.userid.isin(small)], kept])
    with pytest.raises(EvaluationError, match="calibration") as caught:
        mueval.evaluate(
            frame,
            out=tmp_path / "run",
            strategies=["mm", "udm"],
            classifiers=["nb"],
            iterations=1,
            progress=False,
            jobs=jobs,
        )
    assert f"user {small[0]}," in str(caught.value), str(caught.value)
    assert max(written) > 1  # row groups were on disk when the run failed
    assert list(tmp_path.iterdir()) == []


def test_a_killed_stream_is_swept_by_the_next_run(tmp_path) -> None:
    # What a run killed while streaming leaves: its temporary folder holding the
    # part file, named with the PID of a process that is gone.
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    partial = tmp_path / f".run.partial-{proc.pid}-abc"
    partial.mkdir()
    (partial / PREDICTIONS_PART).write_bytes(b"PAR1")
    notes = recover_leftovers(tmp_path / "run")
    assert notes == [f"removed {partial}, left by an interrupted run"]
    assert list(tmp_path.iterdir()) == []


def test_written_results_keep_only_what_the_diagnostics_read(tmp_path) -> None:
    table = table_from_frame(_frame())
    config = EvalConfig(strategies=("udm", "ucm"), classifiers=("nb",), iterations=1)
    args = (table.X, table.y, table.users, table.classes, config)
    for rows_per_group in (1, 10**9):
        folder = tmp_path / str(rows_per_group)
        folder.mkdir()
        stream = PredictionStream(
            folder,
            table.classes,
            table.users,
            table.y,
            target_dtype="Int64",
            rows_per_group=rows_per_group,
        )
        seen = []

        def keep(results, stream=stream, seen=seen):
            seen.extend(results)
            stream.add(results)

        run(*args, progress=False, on_task=keep)
        # One row a group: each result written (and let go) as it came; else
        # every result waits for close().
        dropped = [r.proba is None and r.pvalues is None and r.y_pred is None for r in seen]
        assert all(dropped) if rows_per_group == 1 else not any(dropped)
        stream.close()
        assert all(r.proba is None and r.pvalues is None and r.y_pred is None for r in seen)
        # The diagnostics' rows and sets stay.
        assert all(r.sets is not None and len(r.rows) == r.n_test > 0 for r in seen)
        written = pq.read_table(folder / "predictions.parquet")
        assert written.num_rows == sum(r.n_test for r in seen)


@pytest.mark.parametrize("level", ["basic", "full"])
@pytest.mark.parametrize("small_cal", ["error", "skip"])
def test_pools_diagnosed_as_results_arrive_equal_the_whole_run(tmp_path, level, small_cal) -> None:
    # Hostile: --small-cal skip with users too small to calibrate UCM (results
    # without sets, pools of MM and UDM next to them), two iterations, and a
    # stream that lets go of every result's rows and sets once written.
    frame = _frame()
    if small_cal == "skip":
        small = make_users(2, n_classes=3, rows_per_user=24, n_features=4, seed=9)
        frame = pd.concat([frame, small.assign(userid=small["userid"] + 100)], ignore_index=True)
    table = table_from_frame(frame)
    config = EvalConfig(
        strategies=("mm", "udm", "uim", "ucm"),
        classifiers=("nb",),
        iterations=2,
        small_cal=small_cal,
    )
    pooled = PoolDiagnostics(table.X, table.y, table.users, alpha=0.05, level=level)
    stream = PredictionStream(
        tmp_path,
        table.classes,
        table.users,
        table.y,
        target_dtype="Int64",
        rows_per_group=1,
        pooled=True,
    )

    def both(results):
        pooled.add(results)
        stream.add(results)

    out = run(table.X, table.y, table.users, table.classes, config, progress=False, on_task=both)
    stream.close()
    assert all(r.sets is None and r.rows.size == 0 for r in out.results)
    streamed = pooled.finish()
    kept = run(table.X, table.y, table.users, table.classes, config, progress=False)
    if small_cal == "skip":
        assert any(r.sets is None for r in kept.results)
    whole = diagnose(kept.results, table.X, table.y, table.users, alpha=0.05, level=level)
    pd.testing.assert_frame_equal(streamed.frame, whole.frame)
    pd.testing.assert_frame_equal(streamed.size_coverage, whole.size_coverage)
    assert streamed.names == whole.names and len(whole.frame) == 8
    # A result of a pool already diagnosed is refused by name.
    with pytest.raises(ValueError, match="iteration 1 arrived after"):
        pooled.add([kept.results[0]])


@pytest.mark.usefixtures("small_row_groups")
@pytest.mark.parametrize(
    "options",
    [
        {"condition": "class"},
        {"condition": "class+cohort:site"},
        {"strategies": ["mm", "ucm", "uxc"], "user_folds": 2},
        {"strategies": ["mm", "uim"], "condition": "cohort:site", "classifiers": ["nb"]},
    ],
    ids=["class", "class-cohort", "uxc", "mm-cohort"],
)
def test_guarantees_read_block_by_block_equal_the_whole_frame(tmp_path, options) -> None:
    # The streamed run reads one (strategy, classifier)'s rows at a time; the
    # in-memory run computes on every row at once. Hostile: Mondrian cells,
    # cohorts (MM's uniform validity test, coverage per cohort), UXC (no
    # verdict), and blocks whose rows are spread over many row groups.
    frame = _frame()
    if "cohort" in options.get("condition", ""):
        frame["site"] = np.where(frame["userid"] % 2 == 0, "north", "south")
    args = {**ARGS, "small_cal": "full-set", **options}
    streamed = mueval.evaluate(frame, out=tmp_path / "streamed", **args)
    memory = mueval.evaluate(frame, **args)
    pd.testing.assert_frame_equal(streamed.user_coverage, memory.user_coverage)
    pd.testing.assert_frame_equal(streamed.coverage_summary, memory.coverage_summary)
    pd.testing.assert_frame_equal(streamed.user_validity, memory.user_validity)
    pd.testing.assert_frame_equal(streamed.conditional_coverage, memory.conditional_coverage)
    assert streamed.warnings == memory.warnings
    assert len(memory.user_coverage) and len(memory.conditional_coverage)


# Slow (tens of seconds): .ci/run runs it with -m slow; the default run stays under 5 min.
@pytest.mark.slow
@pytest.mark.usefixtures("small_row_groups")
def test_the_files_do_not_depend_on_the_tasks_in_flight(tmp_path) -> None:
    # One task in flight at a time (each gathered before the next is
    # submitted) and more in flight than the run has tasks: the same files.
    pytest.importorskip("distributed")
    table = table_from_frame(_frame())
    config = EvalConfig(strategies=("mm", "uim", "ucm"), classifiers=("nb", "knn"), iterations=2)
    for window in (1, 64):
        evaluate_table(
            table,
            config,
            backend="dask",
            workers=2,
            in_flight=window,
            progress=False,
            out=tmp_path / f"window{window}",
        )
    for name in ("predictions.parquet", "splits.parquet"):
        one = pq.read_table(tmp_path / "window1" / name)
        many = pq.read_table(tmp_path / "window64" / name)
        assert one.equals(many), name
    assert pq.ParquetFile(tmp_path / "window1" / "predictions.parquet").metadata.num_row_groups > 1
    for name in ("user_coverage.csv", "user_validity.csv", "summary.csv"):
        one = (tmp_path / "window1" / name).read_bytes()
        assert one == (tmp_path / "window64" / name).read_bytes(), name
