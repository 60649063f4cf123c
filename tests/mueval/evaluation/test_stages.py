"""``mueval evaluate`` on a terminal: the stages after the tasks are named on stderr.

The command runs in a child process whose stderr is a pseudo-terminal (Python's
``pty``), as a person's shell gives it; a second child's stderr is a pipe, as
in a CI log, where none of it may appear.
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from mueval.evaluation.stages import StageProgress
from tests.user_tables import make_frame

#: Every stage after the tasks, as the bar names them, with an out folder.
STAGES = ("diagnostics", "summary", "predictions", "guarantees", "saving")


def _command(tmp_path: Path, out: str) -> list[str]:
    data = tmp_path / "mine.csv"
    if not data.exists():
        make_frame(n_users=3).to_csv(data, index=False)
    return [
        sys.executable,
        "-m",
        "mueval.cli.main",
        "evaluate",
        "--data",
        str(data),
        "-s",
        "mm,ucm",
        "-c",
        "nb",
        "--iterations",
        "1",
        "--jobs",
        "1",
        "--out",
        str(tmp_path / out),
    ]


def _stderr_on_a_terminal(command: list[str], stdout: Path) -> str:
    """Run ``command`` with stderr on a new pseudo-terminal; what it wrote there."""
    leader, follower = pty.openpty()
    # 24 rows of 100 columns, as a terminal window has (a new pty has none,
    # and tqdm then draws bars of no width).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with stdout.open("wb") as sink:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=follower)
    os.close(follower)
    seen = bytearray()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            piece = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not piece:
            break
        seen += piece
    os.close(leader)
    assert child.wait(timeout=60) == 0, seen.decode(errors="replace")
    return seen.decode(errors="replace")


def test_the_stages_after_the_tasks_are_named_on_a_terminal(tmp_path: Path) -> None:
    shown = _stderr_on_a_terminal(_command(tmp_path, "run"), tmp_path / "stdout.txt")
    for stage in STAGES:
        assert f"mueval: {stage}" in shown, (stage, shown)
    # Within the guarantees, the block or step at work follows the stage's name.
    assert "verdicts" in shown or "ucm/nb" in shown, shown
    assert "5/5" in shown and "checks done" in shown, shown
    # The tasks' bar comes first, the stages' after it.
    assert shown.index("task") < shown.index("mueval: diagnostics"), shown
    assert (tmp_path / "run" / "run.json").is_file()
    # stdout (the tables) holds none of it.
    assert "mueval: guarantees" not in (tmp_path / "stdout.txt").read_text()


def test_nothing_of_it_when_stderr_is_no_terminal(tmp_path: Path) -> None:
    done = subprocess.run(
        _command(tmp_path, "run"), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    for stage in STAGES:
        assert f"mueval: {stage}" not in done.stderr, (stage, done.stderr)
    assert "stage" not in done.stderr and "\r" not in done.stderr, done.stderr
    # The tasks' plain progress lines are still there, as before.
    assert "mueval: 4/4 tasks" in done.stderr, done.stderr


@pytest.mark.parametrize("enabled", [False, None])
def test_a_quiet_bar_writes_nothing(capsys, enabled) -> None:
    progress = StageProgress(["summary"], enabled=enabled)  # capsys: stderr is no terminal
    with progress.stage("summary"):
        progress.detail("mm/nb")
    progress.close()
    assert capsys.readouterr().err == ""


def test_an_asked_for_bar_names_each_stage_off_a_terminal(capsys) -> None:
    progress = StageProgress(["summary", "guarantees"], enabled=True)
    with progress.stage("summary"):
        pass
    with progress.stage("guarantees"):
        progress.detail("ucm/knn")
    progress.close()
    err = capsys.readouterr().err
    assert "mueval: summary" in err and "mueval: guarantees" in err and "ucm/knn" in err
    assert "2/2" in err


def test_a_failed_stage_keeps_its_name(capsys) -> None:
    progress = StageProgress(["summary", "guarantees"], enabled=True)
    with pytest.raises(RuntimeError), progress.stage("guarantees"):
        raise RuntimeError("boom")
    progress.close(done=False)
    err = capsys.readouterr().err
    assert "mueval: guarantees" in err and "checks done" not in err and "0/2" in err
