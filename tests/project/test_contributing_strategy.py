"""CONTRIBUTING.md's worked example of a strategy runs as written, and its splits obey its rule.

The example's code blocks are taken from the file itself: the block that starts
``# file: NAME.py`` is written to that module, the other Python blocks run in
order, then the shell block's commands run as a user would type them. The
rule of the example strategy (leave two users out: train without the target
and its buddy, calibrate on all of the buddy's rows, test on all of the
target's) is checked here from the splits and the run folders, independently
of the example's code.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mueval.evaluation.splits import make_splits
from mueval.strategies import registered_strategies, unregister_strategy
from tests.conftest import PROJECT_ROOT

CONTRIBUTING = PROJECT_ROOT / "CONTRIBUTING.md"
SECTION = "## Adding an evaluation strategy"


def _blocks(kind: str) -> list[str]:
    """The fenced ``kind`` blocks of the strategy section, in order."""
    text = CONTRIBUTING.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return re.findall(rf"```{kind}\n(.*?)```", text[start:end], flags=re.DOTALL)


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The example's module written to ``tmp_path`` (importable from there, the
    working folder), and its strategy unregistered afterwards."""
    modules = {}
    for block in _blocks("python"):
        first = block.splitlines()[0]
        if m := re.fullmatch(r"# file: (\w+)\.py", first):
            (tmp_path / f"{m.group(1)}.py").write_text(block, encoding="utf-8")
            modules[m.group(1)] = block
    assert list(modules) == ["l2o"], "the example defines its strategy in l2o.py"
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.modules.pop("l2o", None)
        if "l2o" in {s.code for s in registered_strategies()}:
            unregister_strategy("l2o")


def _check_rule(users: np.ndarray, splits: list) -> dict:
    """Each split tests on every row of its target, calibrates on every row of one
    other user (its buddy) and trains on every remaining row; the buddies form one
    cycle through all the users. Returns target -> buddy."""
    unique = sorted(set(users.tolist()))
    assert [s.user for s in splits] == unique
    buddy = {}
    for s in splits:
        cal = s.calibrations["l2o"]
        (b,) = set(users[cal].tolist())
        assert b != s.user
        assert sorted(s.test.tolist()) == np.flatnonzero(users == s.user).tolist()
        assert sorted(cal.tolist()) == np.flatnonzero(users == b).tolist()
        rest = np.flatnonzero((users != s.user) & (users != b))
        assert sorted(s.train.tolist()) == rest.tolist()
        buddy[s.user] = b
    # One cycle: following the buddies from any user visits every user once.
    seen, user = [], unique[0]
    while user not in seen:
        seen.append(user)
        user = buddy[user]
    assert sorted(seen) == unique
    return buddy


def test_the_example_splits_obey_leave_two_users_out(example: Path) -> None:
    import l2o  # the module as CONTRIBUTING.md writes it

    # Users of unequal sizes with text ids, so that the rows of each role tell
    # the users apart.
    users = np.array(["u1"] * 7 + ["u2"] * 9 + ["u3"] * 11 + ["u4"] * 13 + ["u5"] * 8)
    rng = np.random.default_rng(0)
    users = users[rng.permutation(len(users))]
    y = rng.integers(0, 2, size=len(users))
    pairings = set()
    for iteration in range(1, 9):
        splits = make_splits(y, users, [l2o.L2O.code], iteration, 100 + iteration)
        buddy = _check_rule(users, splits)
        again = make_splits(y, users, ["l2o"], iteration, 100 + iteration)
        assert _check_rule(users, again) == buddy  # the same seed, the same pairing
        pairings.add(tuple(sorted(buddy.items())))
    # The seed draws the pairing: eight seeds do not all give one (24 cycles exist).
    assert len(pairings) > 1


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[0] == "mueval"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(PROJECT_ROOT / "src")])}
    return subprocess.run(
        [sys.executable, "-m", "mueval.cli.main", *argv[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _check_folder(folder: Path, table: pd.DataFrame) -> None:
    """The run folder holds l2o beside ucm, its predictions test each target on
    every row of its own, and its sizes are those of the rule."""
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert info["config"]["strategies"] == ["ucm", "l2o"]
    # The folder says what the strategy of the user's was; the built-ins are mueval's.
    assert info["config"]["strategy_records"] == {
        "l2o": {
            "name": "L2O (leave two users out)",
            "help": "leave two users out (train on the others, calibrate on a buddy user, "
            "test on every row of the target).",
            "splitter": "l2o:split_leave_two_out",
            "combine": "bonferroni",
            "no_verdict": None,
            "aliases": [],
            "pooled": False,
        }
    }
    assert info["config"]["user_combine"] == {"ucm": "convolution", "l2o": "bonferroni"}
    predictions = pd.read_parquet(folder / "predictions.parquet")
    ours = predictions[predictions["strategy"] == "l2o"]
    users = table["userid"].to_numpy()
    for (iteration, target), rows in ours.groupby(["iteration", "target_user"]):
        expected = np.flatnonzero(users == int(target)).tolist()
        assert sorted(rows["row_id"].tolist()) == expected, (iteration, target)
    splits = pd.read_parquet(folder / "splits.parquet")
    mine = splits[splits["strategy"] == "l2o"]
    sizes = table.groupby("userid").size()
    assert len(mine) == 2 * len(sizes)  # two iterations, one split per user
    assert (mine["n_test"].to_numpy() == sizes.loc[mine["user"].astype(int)].to_numpy()).all()
    assert (mine["n_train"] + mine["n_test"] + mine["n_cal"] == len(table)).all()
    assert set(mine["n_cal"]) <= set(sizes)
    # What the section says the report shows: calibrating on another user's rows
    # leaves L2O's coverage below the target (not UCM's), and the per-user
    # verdicts and p-value checks name users.
    assert ours["covered"].mean() < 1 - info["config"]["alpha"]  # 0.87 in the text
    kinds = {(w["strategy"], w["kind"]) for w in info["warnings"]}
    assert ("ucm", "pooled-below-target") not in kinds
    assert {("l2o", "users-below-target"), ("l2o", "users-not-exchangeable")} <= kinds


def _run_python_blocks(folder: Path) -> pd.DataFrame:
    """Run the section's Python blocks (all but the module's) in order; the table
    they evaluated."""
    namespace: dict = {}
    for block in _blocks("python"):
        if not block.startswith("# file:"):
            exec(compile(block, str(CONTRIBUTING), "exec"), namespace)
    return pd.read_csv(folder / "users.csv")


def test_the_example_runs_as_written_from_python(example: Path) -> None:
    table = _run_python_blocks(example)
    _check_folder(example / "runs" / "l2o", table)


@pytest.mark.slow
def test_the_example_runs_as_written_from_the_command_line(example: Path) -> None:
    table = _run_python_blocks(example)
    commands = [line for b in _blocks("bash") for line in b.splitlines() if line.strip()]
    verbs = [c.split()[:2] for c in commands]
    assert verbs == [["mueval", "evaluate"], ["mueval", "report"], ["mueval", "compare"]]
    outputs = []
    for command in commands:
        done = _run(command, example)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
    # compare tested the pair, on the five users of the table.
    (pair,) = [line.split() for line in outputs[2].splitlines() if " l2o " in line]
    assert pair[:3] == ["nb", "ucm", "l2o"] and pair[-1] == "5"
    folder = example / "runs" / "l2o-cli"
    _check_folder(folder, table)
    # The report was built in a process that never imported l2o.py.
    page = (folder / "report" / "report.html").read_text(encoding="utf-8")
    assert "l2o" in page
    # The same splits and sets from Python (one process) and from the command
    # line (every CPU: loky workers, which never see the registry). The command
    # line streams its rows iteration first: compare them in one order.
    key = ["strategy", "iteration", "target_user", "row_id"]
    a, b = (
        pd.read_parquet(f / "predictions.parquet").sort_values(key, ignore_index=True)
        for f in (example / "runs" / "l2o", folder)
    )
    pd.testing.assert_frame_equal(a, b)
