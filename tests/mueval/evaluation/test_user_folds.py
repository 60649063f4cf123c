"""Grouped folds of users for UIM and UCM (``--user-folds K``, issue 12 item 5)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from click.testing import CliRunner

import mueval.evaluation.models
import mueval.evaluation.task
from mueval.cli.main import main
from mueval.data.synthetic import MIN_PER_CLASS, make_users
from mueval.data.table import table_from_frame
from mueval.errors import UsageError
from mueval.evaluation.records import EvalConfig
from mueval.evaluation.row_splits import user_rows
from mueval.evaluation.runner import run, run_task
from mueval.evaluation.splits import make_splits
from mueval.evaluation.user_folds import user_folds
from mueval.names import METRICS

N_USERS = 7


@pytest.fixture(scope="module")
def table():
    frame = make_users(N_USERS, n_classes=3, rows_per_user=60, n_features=4, seed=3)
    return table_from_frame(frame)


def _run(table, folds, classifiers=("nb", "rf"), iterations=2):
    config = EvalConfig(
        strategies=("uim", "ucm"),
        classifiers=classifiers,
        iterations=iterations,
        user_folds=folds,
    )
    return run(table.X, table.y, table.users, table.classes, config, progress=False)


@pytest.mark.parametrize("k", [2, 3, N_USERS])
def test_fold_assignment_covers_every_user_once(k):
    users = np.repeat(np.array([5, 9, 11, 2, 40, 7, 8]), 4)
    folds = user_folds(users, k, seed=101)
    assert len(folds) == k
    assert all(len(f) >= 1 for f in folds)
    flat = np.concatenate(folds)
    assert sorted(flat.tolist()) == sorted(set(users.tolist()))
    assert len(flat) == len(set(flat.tolist()))  # no user twice


def test_fold_assignment_follows_the_seed():
    users = np.repeat(np.arange(30), 2)
    as_lists = [[f.tolist() for f in user_folds(users, 5, seed)] for seed in (1, 1, 2)]
    assert as_lists[0] == as_lists[1]
    assert as_lists[0] != as_lists[2]


@pytest.mark.parametrize("k", [1, 0, N_USERS + 1])
def test_fold_count_out_of_range_is_refused(k):
    users = np.repeat(np.arange(N_USERS), 3)
    with pytest.raises(UsageError, match="user_folds"):
        user_folds(users, k, seed=1)


@pytest.mark.parametrize("bad", [1, 0, -3, 2.5, True])
def test_config_refuses_a_bad_fold_count(bad):
    with pytest.raises(UsageError, match="user_folds"):
        EvalConfig(user_folds=bad)


def test_default_is_leave_one_user_out():
    assert EvalConfig().user_folds is None
    assert EvalConfig().user_folds_note() is None


def test_fold_splits_hold_out_their_users(table):
    y, users = table.y, table.users
    splits = make_splits(y, users, ["uim", "ucm"], 1, 101, n_user_folds=3)
    assert len(splits) == 3
    served = []
    for split in splits:
        fold_users = {t.user for t in split.targets}
        assert not fold_users & set(users[split.train].tolist())
        assert split.strategies == ["uim", "ucm"]
        for t in split.targets:
            own = set(np.flatnonzero(users == t.user).tolist())
            test, cal = set(t.test.tolist()), set(t.calibrations["ucm"].tolist())
            assert test | cal == own and not test & cal
            # UIM calibrates on the other folds' rows the model was not trained on.
            uim = set(t.calibrations["uim"].tolist())
            assert not uim & set(split.train.tolist())
            assert not uim & own
            served.append(t.user)
    assert sorted(served) == sorted(set(users.tolist()))


def test_k_fits_per_classifier_and_iteration(table, monkeypatch):
    calls = []
    real = mueval.evaluation.models.fit_scaled

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(mueval.evaluation.task, "fit_scaled", counting)
    _run(table, 3, classifiers=("nb", "rf"), iterations=2)
    assert sorted(calls) == sorted(["nb", "rf"] * 3 * 2)
    calls.clear()
    _run(table, None, classifiers=("nb",), iterations=1)
    assert len(calls) == N_USERS  # leave-one-user-out: one fit per user


def test_results_keep_the_per_user_structure(table):
    folded = _run(table, 3).results
    louo = _run(table, None).results
    assert [r.key for r in folded] == [r.key for r in louo]
    for a, b in zip(folded, louo, strict=True):
        # The target's own halves do not depend on the folds.
        np.testing.assert_array_equal(a.rows, b.rows)
        assert (a.n_test, a.user) == (b.n_test, b.user)
        if a.strategy == "ucm":
            assert a.n_cal == b.n_cal
        assert set(a.metrics) == set(METRICS)
        assert a.sets.shape == b.sets.shape
        # Fewer training rows: the fold's other users are left out too.
        assert a.n_train < b.n_train


def test_one_user_per_fold_is_leave_one_user_out(table):
    folded = _run(table, N_USERS).results
    louo = _run(table, None).results
    for a, b in zip(folded, louo, strict=True):
        assert a.key == b.key
        assert a.metrics == pytest.approx(b.metrics, nan_ok=True)
        np.testing.assert_array_equal(a.sets, b.sets)
        np.testing.assert_array_equal(a.pvalues, b.pvalues)


def test_run_notes_say_how_folds_differ(table):
    notes = _run(table, 3, classifiers=("nb",), iterations=1).notes
    assert any("grouped folds" in n and "leave-one-user-out" in n for n in notes)
    assert not any("grouped folds" in n for n in _run(table, None, ("nb",), 1).notes)


def test_cli_user_folds(tmp_path):
    data = tmp_path / "users.csv"
    make_users(6, n_classes=2, rows_per_user=50, n_features=3, seed=2).to_csv(data, index=False)
    args = ["evaluate", "--data", str(data), "-s", "uim,ucm", "-c", "nb", "--iterations", "1"]
    result = CliRunner().invoke(main, [*args, "--user-folds", "3", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "3 user folds" in result.output
    bad = CliRunner().invoke(main, [*args, "--user-folds", "1"])
    assert bad.exit_code == 2
    too_many = CliRunner().invoke(main, [*args, "--user-folds", "7", "--no-progress"])
    assert too_many.exit_code == 2
    # The command line names its flag, not the API's keyword.
    assert "--user-folds must be from 2 to the number of users (6)" in too_many.output


def test_synthetic_users_keep_every_class():
    frame = make_users(40, n_classes=5, rows_per_user=60, imbalance=1.0, seed=4)
    counts = frame.groupby(["userid", "label"]).size().unstack()
    assert counts.shape == (40, 5)
    assert int(counts.min().min()) >= MIN_PER_CLASS
    assert (counts.sum(axis=1) == 60).all()
    # Imbalance: users differ in their proportions.
    assert counts.std(axis=0).min() > 0
    again = make_users(40, n_classes=5, rows_per_user=60, imbalance=1.0, seed=4)
    assert frame.equals(again)


def test_a_fold_predicts_its_shared_uim_calibration_once(table, monkeypatch):
    seen = []
    real = mueval.evaluation.models.full_proba

    def counting(model, X, n_classes):
        seen.append(len(X))
        return real(model, X, n_classes)

    monkeypatch.setattr(mueval.evaluation.task, "full_proba", counting)
    _run(table, 3, classifiers=("nb",), iterations=1)
    splits = make_splits(table.y, table.users, ["uim", "ucm"], 1, 101, n_user_folds=3)
    expected = [
        sum(len(t.test) + len(t.calibrations["ucm"]) for t in s.targets)
        + len(s.targets[0].calibrations["uim"])
        for s in splits
    ]
    assert sorted(seen) == sorted(expected)


@pytest.mark.parametrize("condition", [None, "class"])
@pytest.mark.parametrize("score", ["lac", "aps"])
def test_targets_sharing_a_calibration_set_get_their_one_target_floats(table, condition, score):
    # The users of a fold share one UIM calibration set and are conformalized
    # on it together; the reference is each target served by a split of its
    # own (one model fit on the same rows). Hostile: targets with one test
    # row, and a class left out of the calibration set (Mondrian: no threshold).
    config = EvalConfig(
        strategies=("uim", "ucm"),
        classifiers=("nb",),
        iterations=1,
        user_folds=3,
        score=score,
        condition=condition,
    )
    splits = make_splits(table.y, table.users, ["uim", "ucm"], 1, 101, n_user_folds=3)
    split = splits[0]
    uim = split.targets[0].calibrations["uim"]
    if condition == "class":
        uim = uim[table.y[uim] != 0]
    targets = tuple(
        dataclasses.replace(
            t, test=t.test[:1] if i % 2 else t.test, calibrations={**t.calibrations, "uim": uim}
        )
        for i, t in enumerate(split.targets)
    )
    split = dataclasses.replace(split, targets=targets)
    together = run_task(table.X, table.y, len(table.classes), split, "nb", config)
    apart = [
        r
        for t in targets
        for r in run_task(
            table.X,
            table.y,
            len(table.classes),
            dataclasses.replace(split, targets=(t,)),
            "nb",
            config,
        )
    ]
    assert len(targets) >= 2 and len(together) == len(apart) == 2 * len(targets)
    for a, b in zip(together, apart, strict=True):
        assert (a.strategy, a.user, a.n_cal) == (b.strategy, b.user, b.n_cal)
        np.testing.assert_array_equal(a.sets, b.sets)
        np.testing.assert_array_equal(a.pvalues, b.pvalues)
        assert a.threshold == b.threshold or (np.isnan(a.threshold) and np.isnan(b.threshold))
        assert a.metrics == b.metrics or all(
            a.metrics[k] == b.metrics[k] or (np.isnan(a.metrics[k]) and np.isnan(b.metrics[k]))
            for k in a.metrics
        )


@pytest.mark.parametrize(
    "users",
    [
        np.array([7]),
        np.array([3, 1, 3, 2, 1, 3]),
        np.array(["S10", "S2", "S10", "a"], dtype=object),
        np.random.default_rng(0).integers(0, 50, 2_000),
    ],
)
def test_user_rows_equal_a_pass_per_user(users):
    found = user_rows(users)
    assert list(found) == np.unique(users).tolist()
    for user, rows in found.items():
        expected = np.flatnonzero(users == user)
        assert rows.dtype == expected.dtype
        np.testing.assert_array_equal(rows, expected)
