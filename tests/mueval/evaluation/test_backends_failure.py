"""A task that fails on a worker: the run stops with that task's one error, as with
``--jobs 1``, and nothing else is printed.

The first failed task in task order is raised; before it is, no further task is
handed out and the tasks in flight finish. An abandoned joblib generator shut
the workers down while joblib still dispatched to them from their callbacks:
about a hundred lines of ``ShutdownExecutorError`` tracebacks and a joblib
warning followed the error on every such run with several workers.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mueval.data.synthetic import make_users

# 60 rows a user: UDM's calibration set (12 rows) is below the minimum at alpha
# 0.05 (20 rows), and the default --small-cal refuses it.
ERROR = "strategy udm, user 1, seed 101, classifier nb: calibration set of 12 rows"


def _evaluate(data: Path, out: Path, jobs: int) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mueval.cli.main", "evaluate", "--data", str(data)]
    command += ["-c", "nb,knn", "--iterations", "5", "--no-progress", "--jobs", str(jobs)]
    return subprocess.run(
        [*command, "--out", str(out)], capture_output=True, text=True, timeout=600, check=False
    )


def test_a_failed_task_on_a_worker_gives_the_one_error_of_jobs_1(tmp_path: Path) -> None:
    data = tmp_path / "users.csv"
    make_users(6, n_classes=3, rows_per_user=60, n_features=4, seed=3).to_csv(data, index=False)
    serial = _evaluate(data, tmp_path / "one", jobs=1)
    parallel = _evaluate(data, tmp_path / "two", jobs=2)
    for done in (serial, parallel):
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith(f"Error: {ERROR}"), done.stderr
    assert parallel.stderr == serial.stderr
    assert "Traceback" not in parallel.stderr and "joblib" not in parallel.stderr
    # No run folder, and no leftover of one, beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users.csv"]
