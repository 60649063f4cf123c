"""``--split-seeds``: the protocol's one seed per iteration, or one seed per role
drawn from numpy's SeedSequence (:mod:`mueval.evaluation.split_seeds`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.model_selection import train_test_split

import mueval
from mueval.cli.main import main
from mueval.data.synthetic import make_users
from mueval.errors import UsageError
from mueval.evaluation.cross_user import cross_user_splits
from mueval.evaluation.labelcurve.config import CurveConfig
from mueval.evaluation.records import EvalConfig
from mueval.evaluation.split_seeds import check_split_seeds, role_seeds
from mueval.evaluation.splits import make_splits


def _table():
    frame = make_users(4, n_classes=3, rows_per_user=60, n_features=3, seed=2)
    y = frame["label"].str[1:].astype(int).to_numpy()
    return frame, y, frame["userid"].to_numpy()


def test_independent_seeds_are_the_seed_sequence_children() -> None:
    # The documented rule, written out with spawn_key rather than spawn().
    for seed in (0, 101, 2**31 + 5):
        expected = tuple(
            int(np.random.SeedSequence(seed, spawn_key=(r,)).generate_state(1, np.uint32)[0])
            for r in range(3)
        )
        assert role_seeds(seed, "independent") == expected
        assert role_seeds(seed) == (seed, seed, seed)
    with pytest.raises(UsageError, match="'protocol', 'independent'|protocol, independent"):
        role_seeds(1, "shared")


def test_protocol_is_the_default_and_the_reference_calls() -> None:
    _, y, users = _table()
    strategies = ["mm", "udm", "uim", "ucm", "uam"]
    default = make_splits(y, users, strategies, 1, 101)
    protocol = make_splits(y, users, strategies, 1, 101, split_seeds="protocol")
    for a, b in zip(default, protocol, strict=True):
        assert np.array_equal(a.train, b.train) and np.array_equal(a.test, b.test)
    # UCM's target split is train_test_split of the user's rows with the seed itself.
    ucm = [s for s in protocol if "ucm" in s.calibrations]
    own = np.flatnonzero(users == ucm[0].user)
    test, cal = train_test_split(own, train_size=0.5, stratify=y[own], random_state=101)
    assert np.array_equal(ucm[0].test, test)
    assert np.array_equal(ucm[0].calibrations["ucm"], cal)


def test_independent_seeds_each_role_on_its_own() -> None:
    _, y, users = _table()
    first, second, _ = role_seeds(101, "independent")
    [split, *_] = make_splits(y, users, ["ucm"], 1, 101, split_seeds="independent")
    others = np.flatnonzero(users != split.user)
    own = np.flatnonzero(users == split.user)
    train, _ = train_test_split(others, train_size=0.6, stratify=y[others], random_state=first)
    test, cal = train_test_split(own, train_size=0.5, stratify=y[own], random_state=second)
    assert np.array_equal(split.train, train)
    assert np.array_equal(split.test, test)
    assert np.array_equal(split.calibrations["ucm"], cal)
    assert split.seed == 101  # the iteration's seed (the model's random_state) is kept
    [protocol, *_] = make_splits(y, users, ["ucm"], 1, 101)
    assert not np.array_equal(protocol.test, split.test)
    # UXC tests each user on UCM's test rows under either rule.
    [cross, *_] = cross_user_splits(y, users, 1, 101, split_seeds="independent")
    assert np.array_equal(cross.test, split.test)
    # MM's two successive splits: train/rest from the first role, cal/test from the second.
    [mm] = make_splits(y, users, ["mm"], 1, 101, split_seeds="independent")
    idx = np.arange(len(y))
    train, rest = train_test_split(idx, train_size=0.6, stratify=y, random_state=first)
    cal, test = train_test_split(rest, train_size=0.5, stratify=y[rest], random_state=second)
    assert np.array_equal(mm.train, train) and np.array_equal(mm.test, test)
    assert np.array_equal(mm.calibrations["mm"], cal)


def test_the_setting_is_checked_and_recorded(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="split_seeds"):
        EvalConfig(split_seeds="shared")
    frame, _, _ = _table()
    run = mueval.evaluate(
        frame, strategies="ucm", classifiers="nb", iterations=2, progress=False, jobs=1
    )
    assert run.config["split_seeds"] == "protocol"
    data = tmp_path / "users.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "run"
    args = ["evaluate", "--data", str(data), "-s", "ucm", "-c", "nb", "--iterations", "2"]
    args += ["--diagnostics", "none", "--no-progress", "--split-seeds", "independent"]
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "run.json").read_text())["config"]
    assert config["split_seeds"] == "independent"
    independent = mueval.Run.load(out)
    assert not independent.predictions["row_id"].equals(run.predictions["row_id"])
    bad = CliRunner().invoke(main, [*args[:-1], "shared"])
    assert bad.exit_code == 2 and "shared" in bad.output


@pytest.mark.parametrize("value", ["shared", "", "Protocol", None, 1])
def test_one_rule_and_message_for_every_holder_of_the_setting(value: object) -> None:
    with pytest.raises(UsageError) as expected:
        check_split_seeds(value)
    message = str(expected.value)
    assert message == f"unknown split_seeds {value!r}; valid: protocol, independent"
    for make in (
        lambda: EvalConfig(split_seeds=value),  # type: ignore[arg-type]
        lambda: CurveConfig(split_seeds=value),  # type: ignore[arg-type]
        lambda: role_seeds(101, value),  # type: ignore[arg-type]
    ):
        with pytest.raises(UsageError) as caught:
            make()
        assert str(caught.value) == message
