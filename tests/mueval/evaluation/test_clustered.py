"""UKM, user-clustered calibration: the clusters, the calibration rule, and its
agreement with UCM and UIM where the rule says it must agree."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.cluster import KMeans

import mueval
from mueval.conformal.thresholds import lac_threshold
from mueval.data.table import table_from_frame
from mueval.errors import UsageError
from mueval.evaluation.clustered import (
    choose_calibration,
    cluster_users,
    default_min_own,
    heuristic_clusters,
)
from mueval.evaluation.labelcurve import CurveConfig, curve_run
from mueval.evaluation.models import fit_scaled, full_proba
from mueval.evaluation.records import EvalConfig
from mueval.evaluation.runner import iteration_splits, run

ALPHA = 0.05


def _groups_table(
    seed: int = 0, rows: int = 60
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """9 users in 3 behaviour groups: the same class centres, and per group a
    noise scale (0.5, 1.5, 3), so that a model scores each group's rows alike."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 2, size=(3, 4))
    X, y, users = [], [], []
    for user in range(1, 10):
        noise = (0.5, 1.5, 3.0)[(user - 1) // 3]
        labels = np.resize(np.arange(3), rows)  # 20 rows a class by default
        X.append(centres[labels] + rng.normal(0, noise, size=(rows, 4)))
        y.append(labels)
        users.append(np.full(rows, user))
    return np.concatenate(X), np.concatenate(y), np.concatenate(users), ["a", "b", "c"]


def _config(**kwargs) -> EvalConfig:
    base = {"strategies": ("uim", "ucm", "ukm"), "classifiers": ("nb",), "iterations": 2}
    return EvalConfig(**{**base, **kwargs})


def _by_key(results) -> dict[tuple, object]:
    return {(r.strategy, r.iteration, r.user): r for r in results}


def test_clusters_are_seeded_deterministic_and_find_the_groups() -> None:
    rng = np.random.default_rng(1)
    # Three groups of three users; a group's scores come from one distribution.
    users = np.repeat(np.arange(9), 50)
    scale = np.repeat([0.05, 0.3, 0.8], 150)
    scores = np.clip(rng.exponential(scale), 0, 1)
    first = cluster_users(scores, users, ALPHA, 3, seed=7)
    again = cluster_users(scores, users, ALPHA, 3, seed=7)
    assert first[0] == again[0] and (first[1] == again[1]).all()
    assert np.array_equal(first[2], again[2])
    # The partition is the groups' (labels up to renaming).
    labels = first[1]
    assert [len(set(labels[g * 3 : g * 3 + 3])) for g in range(3)] == [1, 1, 1]
    assert len(set(labels)) == 3


def test_heuristic_and_default_min_own_by_hand() -> None:
    # Ding et al.: floor(floor(N K / (75 + K)) / 2), N rows per user, K users.
    assert heuristic_clusters(200, 25) == (200 * 25 // 100) // 2
    assert heuristic_clusters(5, 3) == 1
    # ceil((n+1)(1-alpha)) <= n first holds at n = 19; mueval thresholds from 20.
    n = next(n for n in range(1, 100) if np.ceil((n + 1) * (1 - ALPHA)) <= n)
    assert n == 19
    assert default_min_own(ALPHA) == 20


@pytest.mark.parametrize(
    "options", [{}, {"user_folds": 3}, {"split": "blocked"}], ids=["loo", "folds", "blocked"]
)
def test_users_at_min_own_get_ucm_thresholds_and_sets_exactly(options) -> None:
    X, y, users, classes = _groups_table()
    out = run(X, y, users, classes, _config(**options), jobs=1, progress=False)
    got = _by_key(out.results)
    ukm = [r for r in out.results if r.strategy == "ukm"]
    assert len(ukm) == 18
    for r in ukm:
        ucm = got[("ucm", r.iteration, r.user)]
        assert r.n_cal == ucm.n_cal >= default_min_own(ALPHA)
        assert r.threshold == ucm.threshold
        assert np.array_equal(r.sets, ucm.sets)


def test_no_own_row_is_uim_exactly() -> None:
    X, y, users, classes = _groups_table()
    out = run(X, y, users, classes, _config(own_rows=0), jobs=1, progress=False)
    got = _by_key(out.results)
    for r in (r for r in out.results if r.strategy == "ukm"):
        uim = got[("uim", r.iteration, r.user)]
        assert r.n_cal == uim.n_cal and r.threshold == uim.threshold
        assert np.array_equal(r.sets, uim.sets)


def test_few_own_rows_calibrate_on_the_nearest_cluster_checked_by_hand() -> None:
    X, y, users, classes = _groups_table()
    config = _config(own_rows=6, clusters=3, assign="centroid")
    out = _by_key(run(X, y, users, classes, config, jobs=1, progress=False).results)
    levels = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    checked = 0
    for iteration in (1, 2):
        for split in iteration_splits(y, users, config, classes, iteration):
            # A second implementation of the rule, from the split's rows.
            scaler, model = fit_scaled("nb", split.seed, X[split.train], y[split.train])
            pool = split.calibrations["uim"]
            own = split.calibrations["ucm"][:6]

            def lac(rows, scaler=scaler, model=model):
                proba = full_proba(model, scaler.transform(X[rows]), 3)
                return 1.0 - proba[np.arange(len(rows)), y[rows]]

            pool_scores, own_scores = lac(pool), lac(own)
            others = sorted(set(users[pool].tolist()))
            points = np.array([np.quantile(pool_scores[users[pool] == u], levels) for u in others])
            km = KMeans(n_clusters=3, n_init=10, random_state=split.seed).fit(points)
            target = np.quantile(own_scores, levels)
            nearest = np.argmin(((km.cluster_centers_ - target) ** 2).sum(axis=1))
            members = [u for u, lab in zip(others, km.labels_, strict=True) if lab == nearest]
            chosen = pool_scores[np.isin(users[pool], members)]
            result = out[("ukm", iteration, split.user)]
            # A cluster, not every other user: the rule had something to choose.
            assert 0 < len(chosen) < len(pool)
            assert result.n_cal == len(chosen)
            assert result.threshold == pytest.approx(lac_threshold(chosen, ALPHA), abs=1e-12)
            checked += 1
    assert checked == 18


def test_jobs_one_and_two_give_the_same_run() -> None:
    X, y, users, classes = _groups_table()
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(4)])
    frame.insert(0, "label", np.array(classes)[y])
    frame.insert(0, "userid", users)
    common = {
        "strategies": "ucm,ukm",
        "classifiers": "nb",
        "iterations": 2,
        "own_rows": 5,
        "progress": False,
    }
    one = mueval.evaluate(frame, jobs=1, **common)
    two = mueval.evaluate(frame, jobs=2, **common)
    pd.testing.assert_frame_equal(one.summary, two.summary)
    pd.testing.assert_frame_equal(one.user_coverage, two.user_coverage)
    assert (one.user_coverage.query("strategy == 'ukm'")["p_value"].isna()).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_own": -1}, "min_own must be"),
        ({"clusters": 0}, "clusters must be"),
        ({"own_rows": 2.5}, "own_rows must be"),
        ({"condition": "class"}, "ukm chooses one calibration set"),
        ({"score": "aps", "randomized": True}, "not offered with ukm"),
        ({"assign": "closest"}, "unknown assign rule"),
    ],
)
def test_bad_options_are_refused_by_name(kwargs, match) -> None:
    with pytest.raises(UsageError, match=match):
        _config(**kwargs)


def test_rank_assignment_is_the_mann_whitney_statistic_closest_to_a_half() -> None:
    rng = np.random.default_rng(3)
    users = np.repeat(np.arange(6), 40)
    scale = np.repeat([0.05, 0.05, 0.3, 0.3, 0.8, 0.8], 40)
    pool = np.clip(rng.exponential(scale), 0, 1).round(2)  # rounded: ties count half
    names, labels, _ = cluster_users(pool, users, ALPHA, 3, seed=11)
    for own in (np.clip(rng.exponential(s, size=5), 0, 1).round(2) for s in (0.05, 0.3, 0.8)):
        choice = choose_calibration(
            own, pool, users, alpha=ALPHA, min_own=None, n_clusters=3, seed=11, assign="rank"
        )
        # scipy's U of the own scores against each cluster's pooled scores, over n * m.
        gaps = []
        for c in range(3):
            ref = pool[np.isin(users, [u for u, lab in zip(names, labels) if lab == c])]
            u_stat = stats.mannwhitneyu(own, ref).statistic
            gaps.append(abs(u_stat / (len(own) * len(ref)) - 0.5))
        best = int(np.argmin(gaps))
        expected = sorted(u for u, lab in zip(names, labels) if lab == best)
        assert choice.how == "cluster" and sorted(choice.cluster) == expected
        assert np.array_equal(choice.rows - len(own), np.flatnonzero(np.isin(users, expected)))


def test_the_label_curve_s_cluster_use_follows_the_ukm_rule() -> None:
    X, y, users, classes = _groups_table(rows=150)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(4)])
    frame.insert(0, "label", np.array(classes)[y])
    frame.insert(0, "userid", users)
    # 8 other users of 60 calibration rows (40 % of 150): Ding et al.'s
    # heuristic gives 2 clusters, so a cluster is not every other user.
    assert heuristic_clusters(60, 8) == 2
    config = CurveConfig(
        classifier="nb", ks=(0, 5, 20), uses=("calibration", "cluster"), iterations=1
    )
    rows = curve_run(table_from_frame(frame), config).per_user.set_index(["user", "k", "use"])
    for user in range(1, 10):
        # No window and 20 windows: the rule says the calibration use's rows.
        for k in (0, 20):
            mine, theirs = rows.loc[(user, k, "cluster")], rows.loc[(user, k, "calibration")]
            assert mine.n_cal == theirs.n_cal and mine.coverage == theirs.coverage
            assert mine.setsize == theirs.setsize
        # 5 windows: one of the clusters of the other users' calibration rows.
        five = rows.loc[(user, 5, "cluster")]
        assert five.cal_source == "cluster" and 0 < five.n_cal < 8 * 60
        assert five.setsize < 3  # informative, where 5 own rows give the full set
        assert rows.loc[(user, 5, "calibration")].setsize == 3
