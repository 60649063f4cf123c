"""A run whose every task is skipped (``--small-cal skip`` with too small calibration
sets) ends with a named error and writes nothing: it wrote a run folder of no
prediction row, which ``table``, ``report`` and ``compare`` then refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import mueval
from mueval.cli.main import main
from mueval.data.synthetic import make_users
from mueval.errors import EvaluationError


@pytest.fixture
def small(tmp_path: Path) -> Path:
    # 60 rows a user: UDM's calibration sets hold 12 rows, below 20 at alpha 0.05.
    path = tmp_path / "users.csv"
    make_users(6, n_classes=3, rows_per_user=60, n_features=4, seed=3).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("out", [False, True], ids=["in-memory", "streamed"])
def test_a_run_of_skipped_tasks_only_is_an_error(small: Path, tmp_path: Path, out: bool) -> None:
    folder = tmp_path / "run"
    with pytest.raises(
        EvaluationError, match=r"every task was skipped, .*\(12 tasks; the first: strategy udm"
    ):
        mueval.evaluate(
            str(small),
            strategies=["udm"],
            classifiers=["nb"],
            iterations=2,
            small_cal="skip",
            jobs=1,
            progress=False,
            out=folder if out else None,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users.csv"]


def test_a_run_with_some_tasks_left_is_written_and_read(small: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    args = ["evaluate", "--data", str(small), "-s", "udm,mm", "-c", "nb", "--iterations", "2"]
    done = CliRunner().invoke(main, [*args, "--small-cal", "skip", "-j", "1", "--out", str(folder)])
    assert done.exit_code == 0, done.output
    assert CliRunner().invoke(main, ["table", str(folder)]).exit_code == 0
