"""run.json's counts against the splits and predictions: an edited number is refused.

Edited, the report stated the file's numbers: 3 iterations of a 2-iteration run,
60 users of a run of 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mueval
from mueval.runfolder import RunFolderError, read_run_folder
from tests.user_tables import make_frame


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    run = mueval.evaluate(
        make_frame(n_users=4),
        strategies="mm,ucm",
        classifiers="nb",
        iterations=2,
        jobs=1,
        progress=False,
    )
    return run.save(tmp_path_factory.mktemp("run") / "run")


def _edited(saved: Path, tmp_path: Path, section: str, key: str, value: object) -> Path:
    folder = tmp_path / "edited"
    folder.mkdir()
    for path in saved.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    info = json.loads((folder / "run.json").read_text())
    info[section][key] = value
    (folder / "run.json").write_text(json.dumps(info))
    return folder


def test_the_saved_run_is_read(saved: Path) -> None:
    assert read_run_folder(saved).run["config"]["iterations"] == 2


def test_iterations_that_are_not_the_splits_are_refused(saved: Path, tmp_path: Path) -> None:
    folder = _edited(saved, tmp_path, "config", "iterations", 3)
    with pytest.raises(RunFolderError, match="config.iterations is 3, but splits.parquet holds 2"):
        read_run_folder(folder)


@pytest.mark.parametrize(
    ("n_users", "says"),
    [
        (60, "dataset.n_users is 60, but ucm took 4 target user"),
        (3, "dataset.n_users is 3, but predictions.parquet has 4 users"),
    ],
)
def test_users_that_are_not_the_run_s_are_refused(
    saved: Path, tmp_path: Path, n_users: int, says: str
) -> None:
    folder = _edited(saved, tmp_path, "dataset", "n_users", n_users)
    with pytest.raises(RunFolderError, match=says):
        read_run_folder(folder)
