"""UXC, the user cross-conformal strategy: p-values, folds, sets (mueval.evaluation.crossconformal)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import MinMaxScaler

from mueval.cli.main import main
from mueval.conformal.pvalues import conformal_pvalues, cross_conformal_pvalues
from mueval.conformal.thresholds import lac_threshold
from mueval.data.synthetic import make_users
from mueval.data.table import table_from_frame
from mueval.errors import EvaluationError, SplitError, UsageError
from mueval.evaluation.cross_user import cross_user_splits
from mueval.evaluation.records import EvalConfig
from mueval.evaluation.runner import run
from mueval.evaluation.splits import make_splits


def test_pvalues_by_hand() -> None:
    # Fold A (2 rows) scores 0.1, 0.6; fold B (3 rows) 0.3, 0.3, 0.9; n = 5.
    # The test row scores (class 0, class 1) are (0.3, 0.7) under A's model and
    # (0.3, 0.95) under B's.
    # class 0: A has 0.6 >= 0.3 (1); B has 0.3, 0.3, 0.9 >= 0.3 (3): (1+4)/6.
    # class 1: A none >= 0.7 (0); B none >= 0.95 (0): 1/6.
    p = cross_conformal_pvalues(
        [np.array([0.1, 0.6]), np.array([0.3, 0.3, 0.9])],
        [np.array([[0.3, 0.7]]), np.array([[0.3, 0.95]])],
    )
    np.testing.assert_allclose(p, [[5 / 6, 1 / 6]])


def test_mondrian_pvalues_count_only_the_class() -> None:
    # Fold A: scores 0.1 (class 0), 0.6 (class 1); fold B: 0.3 (class 0), 0.9 (1).
    # Test scores (0.2, 0.5) under A, (0.4, 0.95) under B.
    # class 0 rows: A {0.1} >= 0.2: 0; B {0.3} >= 0.4: 0 -> (0+1)/(2+1).
    # class 1 rows: A {0.6} >= 0.5: 1; B {0.9} >= 0.95: 0 -> (1+1)/(2+1).
    p = cross_conformal_pvalues(
        [np.array([0.1, 0.6]), np.array([0.3, 0.9])],
        [np.array([[0.2, 0.5]]), np.array([[0.4, 0.95]])],
        [np.array([0, 1]), np.array([0, 1])],
    )
    np.testing.assert_allclose(p, [[1 / 3, 2 / 3]])


def test_mismatched_folds_are_refused() -> None:
    with pytest.raises(UsageError, match="one test-score array per calibration fold"):
        cross_conformal_pvalues([np.array([0.1])], [])
    with pytest.raises(UsageError, match="fold 1: test scores of shape"):
        cross_conformal_pvalues(
            [np.array([0.1]), np.array([0.2])], [np.zeros((2, 3)), np.zeros((1, 3))]
        )


@given(
    cal=st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 0.9]), min_size=20, max_size=60),
    test=st.lists(st.sampled_from([0.0, 0.1, 0.2, 0.25, 0.5, 0.8, 1.0]), min_size=2, max_size=8),
)
def test_one_fold_is_split_conformal_under_the_rank_rule(cal, test) -> None:
    cal_scores = np.array(cal)
    test_scores = np.array(test).reshape(1, -1)
    p = cross_conformal_pvalues([cal_scores], [test_scores])
    np.testing.assert_array_equal(p, conformal_pvalues(cal_scores, test_scores))
    # {p > alpha} is the set {s <= q} of MAPIE 1.x's ceil((n+1)(1-alpha))-th score.
    q = lac_threshold(cal_scores, 0.05, rule="mapie")
    np.testing.assert_array_equal(p > 0.05, test_scores <= q)


def _tiny_frame() -> pd.DataFrame:
    # 4 users, 2 classes, 2 features; user 4 is shifted, so scores differ by user.
    rng = np.random.default_rng(7)
    parts = []
    for user, shift in ((1, 0.0), (2, 0.3), (3, -0.2), (4, 1.0)):
        labels = np.repeat(["a", "b"], 12)
        centre = np.where(labels == "a", 0.0, 1.5)[:, None]
        features = centre + shift + rng.normal(size=(24, 2))
        frame = pd.DataFrame(features, columns=["f0", "f1"])
        frame.insert(0, "label", labels)
        frame.insert(0, "userid", user)
        parts.append(frame)
    return pd.concat(parts, ignore_index=True)


def _nb_proba(X, y, train, rows):
    """Independent fit: MinMaxScaler on the training rows, then GaussianNB."""
    scaler = MinMaxScaler().fit(X[train])
    model = GaussianNB().fit(scaler.transform(X[train]), y[train])
    return model.predict_proba(scaler.transform(X[rows])), model.predict(scaler.transform(X[rows]))


def test_sets_and_pvalues_match_a_brute_force_loop() -> None:
    table = table_from_frame(_tiny_frame())
    X, y, users = table.X, table.y, table.users
    config = EvalConfig(strategies=("uxc",), classifiers=("nb",), iterations=1)
    out = run(X, y, users, table.classes, config, progress=False)
    assert len(out.results) == 4
    seed = 101
    for result in out.results:
        target = result.user
        own = np.flatnonzero(users == target)
        test, _ = train_test_split(own, train_size=0.5, stratify=y[own], random_state=seed)
        np.testing.assert_array_equal(result.rows, test)
        # Leave-one-user-out over the other users: the fold of user u is scored
        # by a model trained on neither u nor the target.
        cal_scores, test_scores = [], []
        for u in sorted(set(users.tolist()) - {target}):
            fold = np.flatnonzero(users == u)
            train = np.flatnonzero((users != u) & (users != target))
            proba_fold, _ = _nb_proba(X, y, train, fold)
            proba_test, _ = _nb_proba(X, y, train, test)
            cal_scores += [1 - proba_fold[i, y[i_row]] for i, i_row in enumerate(fold)]
            test_scores.append(1 - proba_test)
        n = len(cal_scores)
        assert result.n_cal == n == 72
        expected = np.zeros((len(test), 2))
        for r in range(len(test)):
            for c in range(2):
                count = 0
                i = 0
                for k, u in enumerate(sorted(set(users.tolist()) - {target})):
                    for _ in np.flatnonzero(users == u):
                        count += cal_scores[i] >= test_scores[k][r, c]
                        i += 1
                expected[r, c] = (count + 1) / (n + 1)
        np.testing.assert_allclose(result.pvalues, expected, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(result.sets, expected > 0.05)
        # The point prediction comes from a model on every non-target row.
        proba, pred = _nb_proba(X, y, np.flatnonzero(users != target), test)
        np.testing.assert_array_equal(result.y_pred, pred)
        np.testing.assert_allclose(result.proba, proba)


@pytest.mark.parametrize("n_folds", [None, 2, 3])
def test_every_other_user_calibrates_and_the_target_never_does(n_folds) -> None:
    users = np.repeat([4, 8, 15, 16, 23], 10)
    y = np.tile(np.repeat([0, 1], 5), 5)
    splits = cross_user_splits(y, users, 1, 101, n_folds=n_folds)
    assert [s.user for s in splits] == [4, 8, 15, 16, 23]
    for split in splits:
        others = set(np.flatnonzero(users != split.user).tolist())
        cal = split.calibrations["uxc"]
        # Every non-target row calibrates exactly once; no target row does.
        assert sorted(cal.tolist()) == sorted(others)
        assert set(users[cal].tolist()) == {4, 8, 15, 16, 23} - {split.user}
        assert not set(cal.tolist()) & set(np.flatnonzero(users == split.user).tolist())
        assert len(split.folds) == (4 if n_folds is None else n_folds)
        for fold in split.folds:
            # A fold holds whole users, and its model never sees it or the target.
            fold_users = set(users[fold].tolist())
            assert set(np.flatnonzero(np.isin(users, list(fold_users))).tolist()) == set(
                fold.tolist()
            )
            rest = np.setdiff1d(split.train, fold)
            assert not set(users[rest].tolist()) & (fold_users | {split.user})
        assert set(split.test.tolist()) <= set(np.flatnonzero(users == split.user).tolist())


def test_run_calibrates_on_every_non_target_row() -> None:
    frame = make_users(5, n_classes=3, rows_per_user=40, n_features=3, seed=2)
    frame = frame[~((frame.userid == 3) & (frame.index % 40 >= 30))]  # user 3: 30 rows
    table = table_from_frame(frame)
    config = EvalConfig(strategies=("uxc",), classifiers=("nb",), iterations=1)
    out = run(table.X, table.y, table.users, table.classes, config, progress=False)
    sizes = pd.Series(table.users).value_counts()
    for result in out.results:
        assert result.n_cal == result.n_train == len(table.users) - sizes[result.user]
    assert out.notes[0].startswith("uxc: cross-conformal p-values over one fold per other user")


@pytest.mark.parametrize("split_method", ["random", "blocked"])
def test_test_rows_are_those_of_uim_and_ucm(split_method) -> None:
    users = np.repeat([1, 2, 3, 4], 16)
    y = np.tile(np.repeat([0, 1], 8), 4)
    both = make_splits(y, users, ["uim", "uxc"], 2, 102, split=split_method)
    uim = [s for s in both if "uim" in s.calibrations]
    uxc = [s for s in both if "uxc" in s.calibrations]
    assert [s.user for s in uim] == [s.user for s in uxc] == [1, 2, 3, 4]
    for a, b in zip(uim, uxc, strict=True):
        np.testing.assert_array_equal(a.test, b.test)


def test_too_few_users_or_too_many_folds_are_refused() -> None:
    users = np.repeat([1, 2], 10)
    y = np.tile(np.repeat([0, 1], 5), 2)
    with pytest.raises(SplitError, match="uxc needs at least 3 users"):
        cross_user_splits(y, users, 1, 101)
    users = np.repeat([1, 2, 3, 4], 10)
    y = np.tile(np.repeat([0, 1], 5), 4)
    with pytest.raises(UsageError, match="--user-folds 4 exceeds the 3 non-target users"):
        cross_user_splits(y, users, 1, 101, n_folds=4)


def test_a_fold_whose_rest_has_one_class_is_named() -> None:
    # User 2 has only class 0. For target 1 the folds are users 2 and 3, and
    # without fold 2 (user 3) the model would train on user 2 alone.
    users = np.repeat([1, 2, 3], 10)
    y = np.concatenate([np.repeat([0, 1], 5), np.zeros(10, int), np.repeat([0, 1], 5)])
    with pytest.raises(SplitError, match="uxc, user 1: without fold 2 .* only one class"):
        cross_user_splits(y, users, 1, 101)


def _small_table():
    # 3 users of 8 rows (5 of one class, 3 of the other): each target's two
    # folds hold 16 rows, fewer than the 20 that alpha = 0.05 needs.
    frame = make_users(3, n_classes=2, rows_per_user=10, n_features=2, seed=1)
    return table_from_frame(frame[frame.index % 10 < 8].reset_index(drop=True))


def test_small_calibration_follows_the_policy() -> None:
    table = _small_table()
    args = (table.X, table.y, table.users, table.classes)
    base = {"strategies": ("uxc",), "classifiers": ("nb",), "iterations": 1}
    with pytest.raises(EvaluationError, match="calibration set of 16 rows is smaller than 20"):
        run(*args, EvalConfig(**base), progress=False)
    skipped = run(*args, EvalConfig(**base, small_cal="skip"), progress=False)
    assert all(np.isnan(r.metrics["coverage"]) and r.sets is None for r in skipped.results)
    assert any("16 rows" in n for n in skipped.notes)
    full = run(*args, EvalConfig(**base, small_cal="full-set"), progress=False)
    assert all(r.sets.all() and r.metrics["coverage"] == 1.0 for r in full.results)


def test_coverage_holds_on_exchangeable_users() -> None:
    # No drift: every user's rows come from one distribution, the case in which
    # cross-conformal sets cover at least 1 - 2 alpha (and about 1 - alpha).
    frame = make_users(6, n_classes=3, rows_per_user=80, drift=0.0, imbalance=0.0, seed=5)
    table = table_from_frame(frame)
    config = EvalConfig(strategies=("uxc",), classifiers=("nb",), iterations=3, alpha=0.1)
    out = run(table.X, table.y, table.users, table.classes, config, progress=False)
    covered = np.concatenate([r.sets[np.arange(len(r.rows)), table.y[r.rows]] for r in out.results])
    assert len(covered) == 3 * 6 * 40
    assert covered.mean() >= 0.8


def test_cli_evaluates_uxc(tmp_path) -> None:
    frame = make_users(4, n_classes=2, rows_per_user=30, n_features=3, seed=4)
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    result = CliRunner().invoke(
        main,
        ["evaluate", "--data", str(path), "-s", "ux", "-c", "nb", "--iterations", "1"],
    )
    assert result.exit_code == 0, result.output
    assert "UXC (user cross-conformal)" in result.output


def test_condition_class_is_mondrian_and_groups_are_refused() -> None:
    table = table_from_frame(make_users(4, rows_per_user=60, seed=5))
    args = (table.X, table.y, table.users, table.classes)
    by_flag = run(
        *args, EvalConfig(strategies=("uxc",), classifiers=("nb",), iterations=1, mondrian=True)
    )
    by_condition = run(
        *args, EvalConfig(strategies=("uxc",), classifiers=("nb",), iterations=1, condition="class")
    )
    plain = run(*args, EvalConfig(strategies=("uxc",), classifiers=("nb",), iterations=1))
    for a, b in zip(by_flag.results, by_condition.results, strict=True):
        np.testing.assert_array_equal(a.pvalues, b.pvalues)
    # Class-conditional p-values count only the rows of the class: they differ.
    assert any(
        not np.array_equal(a.pvalues, b.pvalues)
        for a, b in zip(plain.results, by_flag.results, strict=True)
    )
    with pytest.raises(UsageError, match="uxc .* no per-cohort form"):
        EvalConfig(strategies=("uxc",), condition="cohort:site")


def test_a_uxc_run_folder_is_read_back_by_table_report_and_compare(tmp_path) -> None:
    """UXC calibrates on the out-of-fold rows of the models it trains: its n_cal and
    n_train count the same rows, and the run folder's checks must take it so."""
    import mueval
    from mueval.runfolder import read_run_folder

    frame = make_users(5, n_classes=3, rows_per_user=60, n_features=4, seed=3)
    out = tmp_path / "run"
    mueval.evaluate(
        frame,
        strategies=["uxc", "ucm"],
        classifiers=["nb"],
        iterations=2,
        jobs=1,
        progress=False,
        out=out,
    )
    run_folder = read_run_folder(out)
    uxc = run_folder.splits[run_folder.splits["strategy"] == "uxc"]
    n_rows = run_folder.run["dataset"]["n_rows"]
    # The situation the old check refused: the three counts add up past the table.
    assert (uxc["n_train"] + uxc["n_cal"] + uxc["n_test"] > n_rows).any()
    assert (uxc["n_cal"] + uxc["n_test"] <= n_rows).all()
    for args in (
        ["table", str(out)],
        ["report", str(out), "--figures", "none"],
        ["compare", str(out)],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
