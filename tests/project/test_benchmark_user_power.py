"""benchmarks/user_power.py runs through mueval.evaluate at a tiny size, and its
table holds what it says: the shifted user's coverage and flags per strategy."""

from __future__ import annotations

import importlib.util

import numpy as np

from tests.conftest import PROJECT_ROOT


def _benchmark():
    path = PROJECT_ROOT / "benchmarks" / "user_power.py"
    spec = importlib.util.spec_from_file_location("user_power", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_power_benchmark_runs_at_a_tiny_size(capsys):
    bench = _benchmark()
    argv = ["--reps", "1", "--users", "4", "--rows", "100", "--classes", "3"]
    summary = bench.main([*argv, "--iterations", "2", "--shifts", "0,3"])
    out = capsys.readouterr().out
    assert "| shift (SD) | strategy |" in out
    assert set(summary["strategy"]) == {"mm", "udm", "uim", "ucm", "uam"}
    assert len(summary) == 10
    assert summary[["coverage", "flagged", "false", "raw"]].notna().all().all()
    # A 3 SD shift of every feature leaves the user far from the others' rows:
    # calibrated on them (MM, UIM) it loses coverage; on its own rows it does not.
    by = summary.set_index(["shift", "strategy"])["coverage"]
    assert by[(3.0, "uim")] < by[(0.0, "uim")] - 0.2
    assert by[(3.0, "ucm")] > 0.8


def test_the_shift_moves_only_the_shifted_user():
    bench = _benchmark()
    base = bench.shifted_table(0.0, users=3, rows=40, classes=2, features=3, seed=4)
    moved = bench.shifted_table(2.0, users=3, rows=40, classes=2, features=3, seed=4)
    columns = ["f0", "f1", "f2"]
    diff = (moved[columns] - base[columns]).to_numpy()
    mine = (base["userid"] == bench.SHIFTED_USER).to_numpy()
    np.testing.assert_allclose(diff[~mine], 0.0)
    np.testing.assert_allclose(
        diff[mine], np.tile(2.0 * base[columns].std(ddof=0), (mine.sum(), 1))
    )
