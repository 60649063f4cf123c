"""Splits of mm, udm, uim, ucm and uam: sizes, disjointness, sharing, stratification."""

from __future__ import annotations

import numpy as np
import pytest

from mueval.errors import SplitError, UsageError
from mueval.evaluation.splits import make_splits
from mueval.names import parse_strategies


def _labels() -> tuple[np.ndarray, np.ndarray]:
    # 3 users; user u has 10 rows of class 0 and 10 of class 1 (20 rows each).
    users = np.repeat([7, 3, 5], 20)
    y = np.tile(np.repeat([0, 1], 10), 3)
    return y, users


def test_parse_strategies_aliases_all_and_order() -> None:
    assert parse_strategies(["ucm,mixed", "ui"]) == ["mm", "uim", "ucm"]
    assert parse_strategies(["all"]) == ["mm", "udm", "uim", "ucm", "uam", "uxc", "ukm"]
    assert parse_strategies(["UD", "ua", "ux"]) == ["udm", "uam", "uxc"]
    with pytest.raises(UsageError, match="valid: mm, udm, uim, ucm, uam, uxc, ukm"):
        parse_strategies(["mm,loso"])


def test_mixed_sizes_are_60_20_20_and_disjoint() -> None:
    y, users = _labels()  # 60 rows
    (split,) = make_splits(y, users, ["mm"], 1, 101)
    cal = split.calibrations["mm"]
    # 60 * 0.6 = 36 train; the 24 others halved: 12 calibration, 12 test.
    assert (len(split.train), len(cal), len(split.test)) == (36, 12, 12)
    assert sorted(np.concatenate([split.train, cal, split.test]).tolist()) == list(range(60))
    # Stratified: each part holds the two classes equally (18/18, 6/6, 6/6).
    assert np.bincount(y[split.train]).tolist() == [18, 18]
    assert np.bincount(y[cal]).tolist() == [6, 6]
    assert np.bincount(y[split.test]).tolist() == [6, 6]
    assert split.user is None


def test_user_dependent_stays_within_each_user_in_ascending_order() -> None:
    y, users = _labels()
    splits = make_splits(y, users, ["udm"], 2, 102)
    assert [s.user for s in splits] == [3, 5, 7]
    for s in splits:
        rows = np.concatenate([s.train, s.calibrations["udm"], s.test])
        assert set(users[rows]) == {s.user}
        # 20 rows: 12 train, 4 calibration, 4 test.
        assert (len(s.train), len(s.calibrations["udm"]), len(s.test)) == (12, 4, 4)


def test_uim_and_ucm_share_one_split_with_the_protocol_roles() -> None:
    y, users = _labels()
    splits = make_splits(y, users, ["uim", "ucm"], 1, 101)
    assert len(splits) == 3  # one per user, serving both strategies
    for s in splits:
        own = np.flatnonzero(users == s.user)
        others = np.flatnonzero(users != s.user)
        uim_cal, ucm_cal = s.calibrations["uim"], s.calibrations["ucm"]
        # Others (40 rows): 24 train + 16 UIM calibration; target (20): 10 test + 10 UCM cal.
        assert sorted(np.concatenate([s.train, uim_cal]).tolist()) == others.tolist()
        assert sorted(np.concatenate([s.test, ucm_cal]).tolist()) == own.tolist()
        assert (len(s.train), len(uim_cal), len(s.test), len(ucm_cal)) == (24, 16, 10, 10)


def test_uim_alone_and_ucm_alone_give_the_same_train_and_test() -> None:
    y, users = _labels()
    both = make_splits(y, users, ["uim", "ucm"], 1, 101)
    alone_i = make_splits(y, users, ["uim"], 1, 101)
    alone_c = make_splits(y, users, ["ucm"], 1, 101)
    for b, i, c in zip(both, alone_i, alone_c):
        assert np.array_equal(b.train, i.train) and np.array_equal(b.train, c.train)
        assert np.array_equal(b.test, i.test) and np.array_equal(b.test, c.test)
        assert list(i.calibrations) == ["uim"] and list(c.calibrations) == ["ucm"]


def test_uam_uses_each_target_row_once() -> None:
    y, users = _labels()
    for s in make_splits(y, users, ["uam"], 1, 101, adapt_frac=0.5):
        own = set(np.flatnonzero(users == s.user).tolist())
        adapt = set(s.train.tolist()) & own
        cal, test = set(s.calibrations["uam"].tolist()), set(s.test.tolist())
        # 20 own rows: 10 added to training, 5 calibration, 5 test.
        assert (len(adapt), len(cal), len(test)) == (10, 5, 5)
        assert adapt | cal | test == own and not (adapt & cal or adapt & test or cal & test)


def test_seed_decides_the_split() -> None:
    y, users = _labels()
    a = make_splits(y, users, ["mm"], 1, 101)[0]
    b = make_splits(y, users, ["mm"], 1, 101)[0]
    c = make_splits(y, users, ["mm"], 2, 102)[0]
    assert np.array_equal(a.test, b.test)
    assert not np.array_equal(a.test, c.test)


def test_udm_user_with_one_class_is_a_clear_error() -> None:
    y, users = _labels()
    y = y.copy()
    y[users == 5] = 1  # user 5 has only class 1
    with pytest.raises(SplitError, match=r"udm, user 5: the user has only one class"):
        make_splits(y, users, ["udm"], 1, 101)
    # uim/ucm only test on (and calibrate with) the target user: no error there.
    assert len(make_splits(y, users, ["uim", "ucm"], 1, 101)) == 3


def test_too_small_for_a_stratified_split_names_user_and_sizes() -> None:
    users = np.array([1, 1, 1, 2, 2, 2, 2, 2, 2, 2])
    y = np.array([0, 1, 1, 0, 0, 1, 1, 0, 1, 0])
    with pytest.raises(SplitError, match=r"udm, user 1: cannot split 3 rows .*0: 1, 1: 2"):
        make_splits(y, users, ["udm"], 1, 101)


def test_split_error_of_many_classes_names_the_fewest_and_stays_short() -> None:
    # 200 classes, 2 rows each per user, but user 1 has one row of each class
    # from 100 on: scikit-learn lists those 100 classes.
    users = np.repeat([1, 2], 400)
    y = np.tile(np.repeat(np.arange(200), 2), 2)
    keep = ~((users == 1) & (y >= 100) & (np.arange(800) % 2 == 0))
    with pytest.raises(SplitError) as caught:
        make_splits(y[keep], users[keep], ["udm"], 1, 101)
    message = str(caught.value)
    assert message.startswith("udm, user 1: cannot split 300 rows")
    assert "(class counts 100: 1, 101: 1, 102: 1," in message
    assert "and 188 more classes with 1 to 2 rows)" in message
    assert "Classes with too few members are: [100, 101," in message
    assert len(message) < 700


def _blocked_table(n_users: int = 3, per_class: int = 25):
    rng = np.random.default_rng(5)
    y = np.tile(np.repeat([0, 1, 2], per_class), n_users)
    users = np.repeat(np.arange(1, n_users + 1), 3 * per_class)
    # interleave classes in time so blocks must follow the row order per class
    order = rng.permutation(len(y))
    return y[order], users[order]


@pytest.mark.parametrize("gap", [0, 1, 3])
def test_blocked_udm_parts_follow_time_with_gaps(gap: int) -> None:
    y, users = _blocked_table()
    splits = make_splits(y, users, ["udm"], 1, 101, split="blocked", gap=gap)
    assert len(splits) == 3
    for s in splits:
        cal = s.calibrations["udm"]
        own = np.flatnonzero(users == s.user)
        for c in range(3):
            rows = np.sort(own[y[own] == c])  # this class's rows in time order
            tr, ca, te = (np.intersect1d(part, rows) for part in (s.train, cal, s.test))
            # 25 rows - 2 gaps: 60 % (floored) train, the rest halved (floored) cal, test the rest
            usable = 25 - 2 * gap
            assert len(tr) == int(np.floor(0.6 * usable))
            assert len(ca) == (usable - len(tr)) // 2
            assert len(tr) + len(ca) + len(te) == usable
            assert tr.max() < ca.min() and ca.max() < te.min()
            # exactly `gap` rows of the class lie between two parts
            position = {r: i for i, r in enumerate(rows)}
            assert position[ca.min()] - position[tr.max()] - 1 == gap
            assert position[te.min()] - position[ca.max()] - 1 == gap


def test_blocked_ucm_calibrates_on_the_earlier_half_and_shares_test_with_uim() -> None:
    y, users = _blocked_table()
    splits = make_splits(y, users, ["uim", "ucm"], 1, 101, split="blocked", gap=1)
    for s in splits:
        cal = s.calibrations["ucm"]
        assert np.isin(cal, np.flatnonzero(users == s.user)).all()
        assert not np.isin(s.calibrations["uim"], np.flatnonzero(users == s.user)).any()
        for c in range(3):
            ca, te = cal[y[cal] == c], s.test[y[s.test] == c]
            assert ca.max() < te.min()
            assert len(ca) == 12 and len(te) == 12  # 25 - 1 gap, halved


def test_blocked_split_too_few_rows_names_user_and_class() -> None:
    y, users = _blocked_table(per_class=4)
    with pytest.raises(
        SplitError, match=r"udm, user 1: class 'a' has 4 rows, too few for 3 blocks"
    ):
        make_splits(y, users, ["udm"], 1, 101, split="blocked", gap=1, classes=["a", "b", "c"])
    # without the gaps four rows make three blocks
    assert len(make_splits(y, users, ["udm"], 1, 101, split="blocked", gap=0)) == 3


def test_unknown_split_method_is_a_usage_error() -> None:
    y, users = _blocked_table()
    with pytest.raises(UsageError, match=r"unknown split method 'time'; valid: random, blocked"):
        make_splits(y, users, ["udm"], 1, 101, split="time")
