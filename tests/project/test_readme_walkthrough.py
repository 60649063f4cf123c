"""The registration walkthrough of docs/registering.md, run as written (issue 10, point 8's test).

The shell blocks of the "Registering your own dataset" page (docs/registering.md) are
extracted and run with bash, unchanged, in a folder holding the files the
walkthrough describes (HMP's layout, written here). ``$EDITOR`` is a script
that fills in the metadata the draft leaves to the user, as the page asks.
The TOML excerpt the page shows must be found, line for line, in the draft
``mudata init`` writes. The block of "When init needs help" runs on files in
the shapes it names (``tests/release_shapes.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests import release_shapes
from tests.annotated_releases import write_release
from tests.conftest import PROJECT_ROOT
from tests.stream_shapes import Stream, write_multiplexed

SECTION = "# Registering your own dataset"


def section_blocks(kind: str) -> list[str]:
    text = (PROJECT_ROOT / "docs" / "registering.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    return re.findall(rf"```{kind}\n(.*?)```", text[start:], flags=re.DOTALL)


def write_recordings(root: Path) -> None:
    """Three activities, five volunteers, two recordings each; integers 0-63 as HMP's."""
    rng = np.random.default_rng(10)
    for level, activity in enumerate(("Climb_stairs", "Walk", "Drink_glass")):
        (root / activity).mkdir(parents=True)
        for user in ("f1", "f2", "m1", "m2", "m3"):
            for minute in (24, 25):
                n = 1700
                drift = np.cumsum(rng.normal(0, 0.3, size=(n, 3)), axis=0)
                values = np.clip(
                    np.round(20 + 8 * level + drift + rng.normal(0, 3, size=(n, 3))), 0, 63
                )
                name = f"Accelerometer-2011-03-{minute}-10-24-39-{activity.lower()}-{user}.txt"
                np.savetxt(root / activity / name, values.astype(int), fmt="%d")


# The user's edit: each placeholder of the draft replaced, comments kept.
EDITOR_SCRIPT = """
import pathlib, re, sys
path = pathlib.Path(sys.argv[1])
text = path.read_text(encoding="utf-8")
text = re.sub(r'^homepage = .*$', 'homepage = "https://example.org/hmp"', text, flags=re.M)
text = re.sub(r'^citation = .*$', 'citation = "Bruno et al. (2014)."', text, flags=re.M)
text = re.sub(r'^licence = .*$', 'licence = "CC-BY-4.0"', text, flags=re.M)
path.write_text(text, encoding="utf-8")
"""


def run_block(block: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    (cwd / "edit.py").write_text(EDITOR_SCRIPT, encoding="utf-8")
    env = {
        **os.environ,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
        "EDITOR": f"{sys.executable} {cwd / 'edit.py'}",
        "MUDATA_HOME": str(home),
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_readme_registration_walkthrough_runs_as_written(tmp_path):
    blocks = section_blocks("bash")
    assert len(blocks) == 2 and "mudata init" in blocks[0] and "mueval evaluate" in blocks[0]
    write_recordings(tmp_path / "recordings")
    done = run_block(blocks[0], tmp_path, tmp_path / "home")
    assert done.returncode == 0, done.stdout + done.stderr
    # init's report: the path pattern's evidence, the classes, the filter preview
    assert "user: the id at the end of each file name (e.g. 'f1'; 5 users)" in done.stderr
    assert "user filter (at least 5 windows of every class): 5 kept, 0 dropped" in done.stderr
    # the TOML the page shows is what init wrote
    draft = (tmp_path / "my-hmp.toml").read_text(encoding="utf-8").splitlines()
    (excerpt,) = section_blocks("toml")[:1]
    for line in excerpt.splitlines():
        if line.strip():
            assert line in draft, line
    # fetch built the table; mueval evaluated it
    table = pd.read_parquet(tmp_path / "home" / "my-hmp" / "my-hmp.parquet")
    assert sorted(table["userid"].unique()) == ["f1", "f2", "m1", "m2", "m3"]
    assert set(table["label"]) == {"Climb_stairs", "Walk", "Drink_glass"}
    assert "MM (mixed): mean±SD over 2 iterations" in done.stdout
    assert "UDM (user-dependent): mean±SD over 2 iterations" in done.stdout
    assert "coverage (%)" in done.stdout


# Slow (tens of seconds): .ci/run runs it with -m slow; the default run stays under 5 min.
@pytest.mark.slow
def test_readme_when_init_needs_help_runs_as_written(tmp_path):
    block = section_blocks("bash")[1]
    for option in ("--exclude", "--label", "--user", "--path-pattern", "--window", "--channels"):
        assert option in block, option
    rng = np.random.default_rng(16)
    release_shapes.phone_watch_executions(tmp_path / "release", rng)
    release_shapes.weight_lifting_gz(tmp_path / "pml-training.csv.gz", rng, per_cell=40)
    release_shapes.inertial_mat_files(tmp_path / "Inertial", rng)
    release_shapes.numbered_participants(tmp_path / "accel", rng)
    write_release(tmp_path / "HAPT")  # UCI HAPT's shape: labels in RawData/labels.txt
    # Several streams in one file per user: an accelerometer at 100 Hz and a
    # gyroscope at 50 Hz of one device, keyed by Sensor ID and Sensor Type.
    (tmp_path / "sensors").mkdir()
    streams = [Stream({"Sensor ID": 1, "Sensor Type": 0}, 100.0),
               Stream({"Sensor ID": 1, "Sensor Type": 1}, 50.0, 3.0)]  # fmt: skip
    for user in ("p01", "p02", "p03", "p04"):
        write_multiplexed(
            tmp_path / "sensors" / f"subject_{user}.csv", users=[user], user_col=None,
            streams=streams, classes=[1, 2, 3], seconds=30, rng=rng,
            header=["timestamp", "Sensor ID", "Sensor Type", "x", "y", "z", "label"],
        )  # fmt: skip
    done = run_block(block, tmp_path, tmp_path / "home")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  .zenodo.json: --exclude *.json" in done.stderr
    assert "  DATA/executions_info.csv: its columns" in done.stderr
    weight = (tmp_path / "weight-lifting.toml").read_text(encoding="utf-8")
    assert 'user_col = "user_name"' in weight and 'label_col = "classe"' in weight
    assert "kurtosis_roll_belt" not in weight.split("feature_cols", 1)[1].split("\n", 1)[0]
    trials = (tmp_path / "trials.toml").read_text(encoding="utf-8")
    assert "window = 75" in trials and "# from --path-pattern" in trials
    participants = (tmp_path / "participants.toml").read_text(encoding="utf-8")
    assert 'channels = ["c2", "c3", "c4"]' in participants
    assert 'label_col = "c5"' in participants
    hapt = (tmp_path / "hapt.toml").read_text(encoding="utf-8")
    assert 'reader = "annotated-signals"' in hapt and 'file = "RawData/labels.txt"' in hapt
