"""The pipeline simulation of ``benchmarks/user_level.py`` runs, at tiny size.

The level it measures is the benchmark's to report (docs/per-user-guarantees.md,
with its command); here a tiny null run goes through ``mueval.evaluate`` and
the flag counting, which is checked against the run's own tables.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd

from tests.conftest import PROJECT_ROOT

ROOT = PROJECT_ROOT


def _benchmark():
    spec = importlib.util.spec_from_file_location(
        "user_level_bench", ROOT / "benchmarks" / "user_level.py"
    )
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up in sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_pipeline_simulation_runs_at_tiny_size(tmp_path: Path) -> None:
    bench = _benchmark()
    run = bench.pipeline_run(
        0,
        "blocked",
        users=4,
        rows=110,
        iterations=2,
        strategies=("mm", "udm"),
        classifiers=("nb",),
        cache=tmp_path,
    )
    assert (tmp_path / "blocked-0000.json").exists()
    again = bench.pipeline_run(0, "blocked", cache=tmp_path)  # read back from the cache
    pd.testing.assert_frame_equal(again["predictions"], run["predictions"])
    flags = bench.pipeline_flags(run)
    pooled = flags["pooled"]
    assert sorted(pooled["strategy"]) == ["mm", "udm"]
    # Blocked: every strategy combines its iterations by Bonferroni.
    assert set(pooled["combine"]) == {"bonferroni"}
    assert pooled["p_value"].between(0, 1).all()
    rows = run["predictions"].groupby("strategy")["covered"].agg(["sum", "size"])
    assert pooled.set_index("strategy")["pooled_n"].to_dict() == rows["size"].to_dict()
    for key in ("any_user_run", "any_user_pair", "any_pooled_run", "any_error"):
        assert isinstance(flags[key], bool)
    # One family over the run flags no more than the family per pair.
    assert flags["any_user_run"] <= flags["any_user_pair"]
