"""Runner: one fit serving UIM and UCM, determinism across backends, aggregation."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from mueval.cpus import JOBS_RULE
from mueval.data.table import table_from_frame
from mueval.errors import EvaluationError, UsageError
from mueval.evaluation.aggregate import splits_frame, summary_frame
from mueval.evaluation.backends import windowed
from mueval.evaluation.records import EvalConfig
from mueval.evaluation.runner import run
from mueval.names import CLASSIC_METRICS, CONFORMAL_METRICS, METRICS
from tests.user_tables import make_frame


@pytest.fixture(scope="module")
def table():
    return table_from_frame(make_frame())


def _run(table, jobs=1, **kw):
    config = EvalConfig(
        strategies=("mm", "udm", "uim", "ucm", "uam"),
        classifiers=("nb", "rf", "knn"),
        iterations=2,
        **kw,
    )
    return run(table.X, table.y, table.users, table.classes, config, jobs=jobs, progress=False)


def test_jobs_neither_positive_nor_minus_one_is_refused_before_any_task(table) -> None:
    for jobs in (0, -2):
        with pytest.raises(UsageError, match=f"jobs must be {JOBS_RULE}, got {jobs}"):
            _run(table, jobs=jobs)


def _as_frame(output) -> pd.DataFrame:
    return splits_frame(output.results)


def test_uim_and_ucm_share_non_conformal_metrics_and_differ_in_calibration(table) -> None:
    frame = _as_frame(_run(table)).set_index(["classifier", "iteration", "user"])
    uim, ucm = frame[frame.strategy == "uim"], frame[frame.strategy == "ucm"]
    assert len(uim) == len(ucm) == 3 * 2 * 4
    pd.testing.assert_frame_equal(uim[list(CLASSIC_METRICS)], ucm[list(CLASSIC_METRICS)])
    assert (uim["n_test"] == ucm["n_test"]).all()
    # UIM calibrates on 40 % of the 3 other users (315 rows -> 126), UCM on the
    # target user's other half (105 rows -> 53; the test half gets 52).
    assert set(uim["n_cal"]) == {126} and set(ucm["n_cal"]) == {53}
    assert set(uim["n_test"]) == {52}
    assert not np.allclose(uim["setsize"], ucm["setsize"])


def test_results_identical_for_jobs_1_and_2(table) -> None:
    out_one, out_two = _run(table, jobs=1), _run(table, jobs=2)
    pd.testing.assert_frame_equal(_as_frame(out_one), _as_frame(out_two))
    for a, b in zip(out_one.results, out_two.results):
        assert np.array_equal(a.sets, b.sets) and np.array_equal(a.proba, b.proba)
    # Sorted by (strategy, classifier, iteration, user), whatever order tasks ended in.
    keys = [r.key for r in out_two.results]
    assert keys == sorted(keys) and keys[0] == (0, (0, ""), 1, ())


def test_results_identical_on_a_dask_cluster(table) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        config = EvalConfig(
            strategies=("mm", "uim", "ucm"), classifiers=("nb", "knn"), iterations=2
        )
        local = run(table.X, table.y, table.users, table.classes, config, progress=False)
        remote = run(
            table.X,
            table.y,
            table.users,
            table.classes,
            config,
            backend="dask",
            scheduler=cluster.scheduler_address,
            progress=False,
        )
    pd.testing.assert_frame_equal(_as_frame(local), _as_frame(remote))
    for a, b in zip(local.results, remote.results):
        assert np.array_equal(a.sets, b.sets) and np.array_equal(a.pvalues, b.pvalues)


def test_small_calibration_error_or_skip() -> None:
    # 10 rows per class per user: UDM calibration = 20 % of 30 = 6 rows < 20.
    small = table_from_frame(make_frame(n_users=3, per_class=10))
    config = EvalConfig(strategies=("udm",), classifiers=("nb",), iterations=1)
    with pytest.raises(EvaluationError, match=r"strategy udm, user 10, seed 101.*6 rows"):
        run(small.X, small.y, small.users, small.classes, config, progress=False)
    skip = EvalConfig(strategies=("udm",), classifiers=("nb",), iterations=1, small_cal="skip")
    out = run(small.X, small.y, small.users, small.classes, skip, progress=False)
    frame = _as_frame(out)
    assert frame[list(CONFORMAL_METRICS)].isna().all().all()
    assert frame[list(CLASSIC_METRICS[:4])].notna().all().all()
    assert len(out.notes) == 3


def test_small_calibration_full_set_answers_every_class() -> None:
    small = table_from_frame(make_frame(n_users=3, per_class=10))
    config = EvalConfig(strategies=("udm",), classifiers=("nb",), iterations=1)
    with pytest.raises(EvaluationError, match=r"smaller than 20 = max\(1/alpha, 1/\(1-alpha\)\)"):
        run(small.X, small.y, small.users, small.classes, config, progress=False)
    full = EvalConfig(strategies=("udm",), classifiers=("nb",), iterations=1, small_cal="full-set")
    out = run(small.X, small.y, small.users, small.classes, full, progress=False)
    assert len(out.results) == 3 and len(out.notes) == 3
    assert all("answered with the full set" in n for n in out.notes)
    for r in out.results:
        assert r.sets.all() and r.threshold == np.inf
        assert r.metrics["coverage"] == 1.0 and r.metrics["setsize"] == 3.0
        # p-values still count the 6 calibration rows: multiples of 1/7
        assert np.allclose(r.pvalues * 7, np.round(r.pvalues * 7))


def _udm_rows(metric: str, cells: list[tuple[int, int, float]]) -> pd.DataFrame:
    """Per-split UDM rows: every metric 1.0 except ``metric``, set per (iteration, user)."""
    rows = []
    for it, user, value in cells:
        row = {"strategy": "udm", "classifier": "nb", "iteration": it, "seed": 100 + it}
        row.update({"user": user, "n_test": 5, "n_cal": 20})
        row.update(dict.fromkeys(METRICS, 1.0))
        row[metric] = value
        rows.append(row)
    return pd.DataFrame(rows)


def test_aggregation_means_users_first_then_iterations_with_sample_sd() -> None:
    cells = [(1, 1, 0.5), (1, 2, 0.7), (1, 3, np.nan), (2, 1, 0.9), (2, 2, 0.9)]
    summary = summary_frame(_udm_rows("accuracy", cells)).set_index("metric")
    assert summary.loc["accuracy", "mean"] == pytest.approx(0.75)
    # sample SD of (0.6, 0.9): |0.9 - 0.6| / sqrt(2)
    assert summary.loc["accuracy", "sd"] == pytest.approx(0.3 / np.sqrt(2))
    assert summary.loc["accuracy", "n"] == 2
    assert summary.loc["coverage", "sd"] == 0.0


def test_an_undefined_iteration_makes_the_study_metric_undefined() -> None:
    # iteration 1: both users NaN for MCriterion (every set empty) -> the iteration's
    # mean over users is NaN; the study's R code then averages iterations without
    # na.rm, so the mean and SD are NaN while n counts the one defined iteration.
    cells = [(1, 1, np.nan), (1, 2, np.nan), (2, 1, 0.2), (2, 2, 0.4)]
    summary = summary_frame(_udm_rows("MCriterion", cells)).set_index("metric")
    assert np.isnan(summary.loc["MCriterion", "mean"])
    assert np.isnan(summary.loc["MCriterion", "sd"])
    assert summary.loc["MCriterion", "n"] == 1
    assert summary.loc["accuracy", "mean"] == 1.0


def _tied_frame(n_users: int = 8, per_user: int = 400, n_features: int = 32) -> pd.DataFrame:
    """Every user repeats the same feature rows with random labels: the training rows
    hold many exact duplicates, so KNN meets neighbours at exactly equal distance."""
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, (per_user, n_features))
    parts = []
    for u in range(n_users):
        part = pd.DataFrame(base, columns=[f"f{i}" for i in range(n_features)])
        part.insert(0, "label", rng.choice(["a", "b", "c"], per_user))
        part.insert(0, "userid", u + 1)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


# Slow (tens of seconds): .ci/run runs it with -m slow; the default run stays under 5 min.
@pytest.mark.slow
def test_ties_give_the_same_predictions_for_any_jobs_and_dask(tmp_path) -> None:
    import os

    from mueval.evaluation.runner import build_splits, run_task
    from mueval.runfolder import predictions_table

    table = table_from_frame(_tied_frame())
    config = EvalConfig(strategies=("uim", "ucm", "uam"), classifiers=("knn",), iterations=1)
    if (os.cpu_count() or 1) >= 2:
        # The hazard is real on this data: with two OpenMP threads the neighbour
        # search picks other tied neighbours than with one.
        changed = 0
        for split in build_splits(table.y, table.users, config, table.classes)[:8]:
            one = run_task(table.X, table.y, 3, split, "knn", config, openmp_threads=1)
            two = run_task(table.X, table.y, 3, split, "knn", config, openmp_threads=2)
            changed += sum(not np.array_equal(a.proba, b.proba) for a, b in zip(one, two))
        assert changed > 0, "the data no longer exercises tied neighbours"

    def predictions(output) -> pd.DataFrame:
        frame = predictions_table(output.results, table.classes, table.users, table.y)
        return frame.to_pandas()

    args = (table.X, table.y, table.users, table.classes, config)
    serial = predictions(run(*args, jobs=1, progress=False))
    loky = predictions(run(*args, jobs=2, progress=False))
    pd.testing.assert_frame_equal(serial, loky)
    pytest.importorskip("distributed")
    # --backend dask without an address: a LocalCluster of two worker processes.
    remote = run(*args, backend="dask", workers=2, progress=False)
    pd.testing.assert_frame_equal(serial, predictions(remote))


@pytest.mark.parametrize(
    ("score", "threshold", "described"),
    [
        ("aps", "mapie", False),
        ("top_k", "mapie", False),
        ("lac", "mapie", True),
        ("aps", "study", True),
    ],
)
def test_pvalue_metrics_only_where_pvalues_describe_the_sets(
    table, score: str, threshold: str, described: bool
) -> None:
    from mueval.names import PVALUE_METRICS

    config = EvalConfig(
        strategies=("mm",), classifiers=("nb",), iterations=1, score=score, threshold=threshold
    )
    out = run(table.X, table.y, table.users, table.classes, config, progress=False)
    (result,) = out.results
    assert np.isnan(result.pvalues).all() != described
    for m in PVALUE_METRICS:
        assert np.isnan(result.metrics[m]) != described, m
    assert not np.isnan(result.metrics["coverage"])
    assert any("p-value metrics" in n for n in out.notes) != described


def test_progress_away_from_a_terminal_logs_every_tenth(table, capsys) -> None:
    config = EvalConfig(strategies=("udm",), classifiers=("nb",), iterations=5)
    out = run(table.X, table.y, table.users, table.classes, config, progress=None)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mueval:")]
    # 5 iterations x 4 users = 20 tasks: a line at every 10 % (every 2 tasks).
    assert len(lines) == 10
    assert lines[0].startswith("mueval: 2/20 tasks (10 %)")
    assert lines[-1].startswith("mueval: 20/20 tasks (100 %)")
    run(table.X, table.y, table.users, table.classes, config, progress=False)
    assert "mueval:" not in capsys.readouterr().err
    # every task's stages were timed, per strategy and classifier
    assert set(out.stages) == {"udm/nb"}
    assert set(out.stages["udm/nb"]) == {"fit_s", "predict_s", "conformal_s", "metrics_s"}


@pytest.mark.parametrize("size", [1, 2, 5])
def test_windowed_holds_at_most_size_tasks_and_keeps_their_order(size) -> None:
    # Tasks run on 4 threads, later ones often finishing first; a task is in
    # flight from its submission until its result is taken.
    in_flight = [0]
    most = [0]

    class Watched:
        def __init__(self, future):
            self.future = future

        def result(self):
            in_flight[0] -= 1
            return self.future.result()

    def work(task):
        time.sleep(0.002 * (3 - task[0] % 3))
        return task

    with ThreadPoolExecutor(4) as pool:

        def submit(split, classifier):
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
            return Watched(pool.submit(work, (split, classifier)))

        tasks = [(i, c) for i in range(12) for c in ("nb", "rf")]
        got = list(windowed(submit, iter(tasks), size))
    assert got == tasks
    assert most[0] == size
    assert in_flight[0] == 0


def test_windowed_submits_lazily() -> None:
    # The next task is not even made before a result is taken: an
    # iteration's splits are built when the tasks reach them.
    made = []

    def tasks():
        for i in range(6):
            made.append(i)
            yield i, "nb"

    class Done:
        def __init__(self, value):
            self.value = value

        def result(self):
            return self.value

    stream = windowed(lambda s, c: Done((s, c)), tasks(), 2)
    assert made == []
    assert next(stream) == (0, "nb")
    assert made == [0, 1, 2]
    assert list(stream) == [(i, "nb") for i in range(1, 6)]


def test_a_failed_task_is_raised_in_task_order_after_those_before_it() -> None:
    # Here, not at the top: the backends' private pieces, tested as workers use them.
    import pickle

    from mueval.evaluation.backends import _collect, _task_or_failure, _TaskFailure

    failure = _task_or_failure(None, None, 2, None, "nb", None)  # no split: run_task fails
    assert isinstance(failure, _TaskFailure) and "Traceback" in failure.where
    # A worker's failure crosses to the main process pickled, as joblib returns it.
    failure = pickle.loads(pickle.dumps(failure))
    later = _TaskFailure(UsageError("the later one"), "")
    seen = []
    with pytest.raises(type(failure.error)) as caught:
        _collect([["a"], ["b"], failure, later, ["c"]], seen.append)
    assert seen == [["a"], ["b"]]  # what came before it was handed on, nothing after
    assert caught.value is failure.error
    assert any("in a worker process" in note for note in caught.value.__notes__)
