"""mueval under hostile input: what it must refuse, and what it must never touch.

Every attack is built for real: run folders come from real ``mueval evaluate``
runs on a small table and are then tampered with, links and FIFOs are real file
system objects, and anything that could hang (a FIFO read or written) runs in a
subprocess under a timeout. Each test asserts the clean outcome: an exit code of
1 or 2 with a message naming the file, field or value; no file written outside
the output folder; no user file removed; no hang.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from mueval.cli.main import main
from mueval.errors import OutputError
from mueval.files import check_inside, neutralise_formulas, write_atomic
from mueval.names import CONFORMAL_METRICS
from mueval.runfolder import (
    RUN_FORMAT,
    RunFolder,
    RunFolderError,
    check_target,
    read_run_folder,
    recover_leftovers,
    write_run,
)
from tests.user_tables import make_frame

# Generous: a subprocess imports scikit-learn and matplotlib on a shared machine.
TIMEOUT = 120

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
needs_links = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX symbolic links")


def _mueval(*args: str):
    return CliRunner().invoke(main, list(args))


def _mueval_subprocess(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The real command line in its own process, killed if it hangs."""
    return subprocess.run(
        [sys.executable, "-m", "mueval.cli.main", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=cwd,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def _files(root: Path) -> set[str]:
    """Every path under ``root`` (links not followed), relative, with its kind."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            out.add(f"{path.relative_to(root)}:{stat.S_IFMT(os.lstat(path).st_mode)}")
    return out


def _csv(folder: Path, frame: pd.DataFrame | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "table.csv"
    (make_frame(n_users=3) if frame is None else frame).to_csv(path, index=False)
    return path


def _evaluate(data: Path, out: Path, *extra: str):
    return _mueval(
        "evaluate",
        "--data",
        str(data),
        "-s",
        "mm,uim",
        "-c",
        "nb",
        "--iterations",
        "2",
        "--out",
        str(out),
        "--no-progress",
        *extra,
    )


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """A run folder written by a real `mueval evaluate` (MM and UIM, NB, 2 iterations)."""
    base = tmp_path_factory.mktemp("real")
    result = _evaluate(_csv(base / "data"), base / "run")
    assert result.exit_code == 0, result.output
    return base / "run"


def _copy(real_run: Path, dest: Path) -> Path:
    shutil.copytree(real_run, dest)
    return dest


def _thesis(folder: Path) -> dict[str, bytes]:
    """A user's folder that no command may remove or change."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"draft.tex": b"\\chapter{Results}\n", "notes.txt": b"meeting on Monday\n"}
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return files


def _unchanged(folder: Path, files: dict[str, bytes]) -> bool:
    return all((folder / n).read_bytes() == c for n, c in files.items())


# --- 4. Nothing the user owns is touched ------------------------------------------------


def test_run_json_marks_the_folder_and_lists_its_files(real_run: Path) -> None:
    info = json.loads((real_run / "run.json").read_text(encoding="utf-8"))
    assert info["format"] == RUN_FORMAT and info["format_version"] == 1
    assert sorted(info["files"]) == sorted(p.name for p in real_run.iterdir())


def test_overwrite_refuses_a_folder_that_is_not_a_run_folder(tmp_path: Path) -> None:
    thesis = tmp_path / "thesis"
    files = _thesis(thesis)
    result = _evaluate(_csv(tmp_path / "data"), thesis, "--overwrite")
    assert result.exit_code == 1, result.output
    assert "--overwrite replaces only a mueval run folder" in result.output
    assert "holds no readable run.json" in result.output and str(thesis) in result.output
    assert _unchanged(thesis, files) and sorted(os.listdir(thesis)) == sorted(files)
    assert "accuracy" not in result.output  # refused before any work


def test_overwrite_refuses_a_run_folder_holding_a_user_file(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")
    (run / "chapter4.tex").write_text("my results")
    result = _evaluate(_csv(tmp_path / "data"), run, "--overwrite")
    assert result.exit_code == 1, result.output
    assert "holds entries mueval did not write: chapter4.tex" in result.output
    assert (run / "chapter4.tex").read_text() == "my results"


@needs_links
def test_overwrite_refuses_a_symlinked_out_and_leaves_its_target(tmp_path: Path, real_run) -> None:
    # Even a link to a genuine run folder: replacing through a link would
    # replace whatever the link names, which the user may not expect.
    target = _copy(real_run, tmp_path / "elsewhere" / "run")
    before = _files(target)
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    result = _evaluate(_csv(tmp_path / "data"), link, "--overwrite")
    assert result.exit_code == 1, result.output
    assert "is a symbolic link" in result.output
    assert link.is_symlink() and _files(target) == before


@pytest.mark.parametrize("out", [".", "..", "./"])
def test_out_cannot_be_the_current_folder_or_a_parent(
    tmp_path: Path, monkeypatch, out: str
) -> None:
    work = tmp_path / "work"
    files = _thesis(work)
    data = _csv(tmp_path / "data")
    monkeypatch.chdir(work)
    before = _files(tmp_path)
    result = _evaluate(data, Path(out), "--overwrite")
    assert result.exit_code == 1, result.output
    assert "it is the current folder or one of its parents" in result.output
    assert _unchanged(work, files) and _files(tmp_path) == before


def test_overwrite_replaces_a_real_run_folder_and_leaves_nothing_beside(
    tmp_path: Path, real_run
) -> None:
    run = _copy(real_run, tmp_path / "run")
    (run / "report").mkdir()  # `mueval report`'s default output belongs to the run
    (run / "report" / "report.html").write_text("<html></html>")
    created = json.loads((run / "run.json").read_text())["created"]
    result = _evaluate(_csv(tmp_path / "data"), run, "--overwrite", "--iterations", "1")
    assert result.exit_code == 0, result.output
    info = json.loads((run / "run.json").read_text())
    assert info["config"]["iterations"] == 1 and "created" in info and created
    assert sorted(os.listdir(tmp_path)) == ["data", "run"]  # no temp or backup left


def test_replacing_a_run_folder_never_leaves_it_missing(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")
    info = json.loads((real_run / "run.json").read_text())
    for key in ("format", "format_version", "files"):
        info.pop(key)
    parts = {
        "summary": pd.read_csv(real_run / "summary.csv"),
        "splits": pd.read_parquet(real_run / "splits.parquet"),
        "predictions": pq.read_table(real_run / "predictions.parquet"),
    }
    seen = {"polls": 0, "missing": 0}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen["polls"] += 1
            if not (run / "run.json").exists():
                seen["missing"] += 1

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for _ in range(15):
            write_run(run, run_info=info, overwrite=True, **parts)
    finally:
        done.set()
        watcher.join()
    assert seen["polls"] > 100
    assert seen["missing"] == 0
    assert sorted(os.listdir(tmp_path)) == ["run"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_run_killed_between_the_renames_is_restored_next_time(
    tmp_path: Path, real_run, caplog
) -> None:
    pid = _dead_pid()
    # The state a kill leaves where no atomic exchange exists: old run aside, the
    # new one still partial, the target missing.
    _copy(real_run, tmp_path / f".run.old-{pid}")
    partial = tmp_path / f".run.partial-{pid}-abc"
    partial.mkdir()
    (partial / "summary.csv").write_text("strategy\n")
    # Look-alikes that are not ours: a live process's, and one holding a user file.
    live = _copy(real_run, tmp_path / f".run.old-{os.getppid()}")
    foreign = tmp_path / f".run.partial-{pid}-xyz"
    _thesis(foreign)
    with caplog.at_level(logging.WARNING, logger="mueval"):
        target = check_target(tmp_path / "run", overwrite=True)
    notes = [r.getMessage() for r in caplog.records]
    assert any("restored" in n and f".run.old-{pid}" in n for n in notes), notes
    assert any("removed" in n and partial.name in n for n in notes), notes
    assert read_run_folder(target).alpha == 0.05
    assert not partial.exists() and live.is_dir() and (foreign / "draft.tex").exists()


def test_leftover_backup_beside_a_complete_run_is_swept(tmp_path: Path, real_run) -> None:
    pid = _dead_pid()
    _copy(real_run, tmp_path / "run")
    _copy(real_run, tmp_path / f".run.old-{pid}")
    notes = recover_leftovers(tmp_path / "run")
    assert notes == [f"removed {tmp_path / f'.run.old-{pid}'}, left by an interrupted run"]
    assert sorted(os.listdir(tmp_path)) == ["run"]


def _tamper(run: Path, name: str, change) -> None:
    """Rewrite one file of a run folder through ``change(frame) -> frame``."""
    path = run / name
    if name.endswith(".csv"):
        change(pd.read_csv(path)).to_csv(path, index=False)
    else:
        table = pq.read_table(path)
        pq.write_table(
            type(table).from_pandas(change(table.to_pandas()), preserve_index=False), path
        )


def test_dotdot_strategy_names_write_nothing_outside_the_report(tmp_path: Path, real_run) -> None:
    # A consistent forgery: the same hostile code in all three files.
    run = _copy(real_run, tmp_path / "a" / "b" / "run")
    evil = "../../../escaped"
    for name in ("predictions.parquet", "splits.parquet", "summary.csv"):
        _tamper(run, name, lambda f: f.assign(strategy=f["strategy"].replace("uim", evil)))
    before = _files(tmp_path)
    result = _mueval("report", str(run), "--out", str(run / "report"), "--n-boot", "10")
    assert result.exit_code == 1, result.output
    assert "strategy '../../../escaped' is not a strategy code of mueval" in result.output
    assert "predictions.parquet" in result.output
    assert _files(tmp_path) == before


def test_build_report_itself_never_names_a_file_from_run_folder_text(
    tmp_path: Path, real_run
) -> None:
    # Past the reader (a RunFolder made by hand): the report's own file naming
    # still takes only mueval's codes.
    from mueval.report.build import build_report

    good = read_run_folder(real_run)
    preds = good.predictions.copy()
    preds["classifier"] = preds["classifier"].replace("nb", "../../x")
    forged = RunFolder(good.path, good.run, good.classes, good.summary, good.splits, preds)
    before = _files(tmp_path)
    with pytest.raises(RunFolderError, match=r"classifier '\.\./\.\./x' is not a classifier code"):
        build_report(forged, tmp_path / "out" / "report", n_boot=10)
    assert {f.split(":")[0] for f in _files(tmp_path) - before} <= {
        "out",
        "out/report",
        "out/report/figures",
    }


@needs_links
def test_report_into_a_planted_link_is_refused(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")
    home = tmp_path / "home"
    files = _thesis(home)
    (run / "report").symlink_to(home, target_is_directory=True)
    result = _mueval("report", str(run), "--n-boot", "10")
    assert result.exit_code == 1, result.output
    assert "is a symbolic link" in result.output and str(run / "report") in result.output
    assert sorted(os.listdir(home)) == sorted(files) and _unchanged(home, files)


@needs_links
def test_write_atomic_and_check_inside_refuse_escapes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "secret").write_text("keep")
    for name in ("../secret", "a/b", "..", ""):
        with pytest.raises(OutputError, match="expected a plain file name"):
            write_atomic(out, name, lambda p: p.write_text("x"))
    (out / "link.csv").symlink_to(tmp_path / "secret")
    with pytest.raises(OutputError, match="outside the output folder"):
        write_atomic(out, "link.csv", lambda p: p.write_text("x"))
    with pytest.raises(OutputError, match="outside the output folder"):
        check_inside(out, out / ".." / "secret")
    (out / "dangling.csv").symlink_to(out / "nowhere")
    with pytest.raises(OutputError, match="a symbolic link, not a file mueval wrote"):
        write_atomic(out, "dangling.csv", lambda p: p.write_text("x"))
    assert (tmp_path / "secret").read_text() == "keep" and not (out / "nowhere").exists()
    assert write_atomic(out, "ok.csv", lambda p: p.write_text("x")).read_text() == "x"
    assert sorted(os.listdir(out)) == ["dangling.csv", "link.csv", "ok.csv"]


def test_report_out_refuses_a_folder_it_did_not_write(tmp_path: Path, real_run) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.html").write_text("the user's own page")
    (out / "notes.txt").write_text("keep")
    for extra in ((), ("--overwrite",)):
        result = _mueval("report", str(real_run), "--out", str(out), "--figures", "none", *extra)
        assert result.exit_code == 1, result.output
        assert str(out) in result.output and "mueval report did not write it" in result.output
        assert "nothing was changed" in result.output
    assert (out / "report.html").read_text() == "the user's own page"
    assert sorted(os.listdir(out)) == ["notes.txt", "report.html"]


def test_report_overwrite_replaces_only_its_own_earlier_report(tmp_path: Path, real_run) -> None:
    out = tmp_path / "rep"
    args = ("report", str(real_run), "--out", str(out), "--n-boot", "10")
    assert _mueval(*args).exit_code == 0
    assert (out / ".mueval-report.json").is_file() and (out / "report.html").is_file()
    (out / "report.html").write_text("old")
    again = _mueval(*args)
    assert again.exit_code == 1 and "already holds a report (use --overwrite" in again.output
    assert (out / "report.html").read_text() == "old"
    # The figures of the earlier report that this one does not draw are removed with it.
    drawn = sorted(os.listdir(out / "figures"))
    assert drawn and all(name.endswith(".svg") for name in drawn)
    result = _mueval(*args, "--figures", "none", "--overwrite")
    assert result.exit_code == 0, result.output
    assert (out / "report.html").read_text() != "old"
    assert os.listdir(out / "figures") == []
    assert (out / ".mueval-report-figures").read_text() == ""
    # Once the user adds a file of theirs, it is no longer a report mueval may replace.
    (out / "mine.csv").write_text("a,b\n")
    refused = _mueval(*args, "--overwrite")
    assert refused.exit_code == 1 and "mine.csv (a regular file)" in refused.output


def test_a_users_file_with_a_figures_suffix_among_the_figures_is_never_removed(
    tmp_path: Path, real_run
) -> None:
    """A file the report did not claim is the user's, whatever its suffix: refused, kept."""
    run = _copy(real_run, tmp_path / "run")
    args = ("report", str(run), "--n-boot", "10")
    assert _mueval(*args).exit_code == 0
    figures = run / "report" / "figures"
    claimed = (run / "report" / ".mueval-report-figures").read_text().split()
    assert sorted(claimed) == sorted(os.listdir(figures))
    (figures / "poster.pdf").write_bytes(b"%PDF the user's poster")
    before = _files(run)
    refused = _mueval(*args, "--figures", "none", "--overwrite")
    assert refused.exit_code == 1 and "figures/poster.pdf (a regular file)" in refused.output
    assert "nothing was changed" in refused.output
    # Nor may evaluate --overwrite replace the run folder that holds it.
    from mueval.runfolder import run_folder_problem

    assert run_folder_problem(run) == (
        "it holds entries mueval did not write: report/figures/poster.pdf (a regular file)"
    )
    assert _files(run) == before
    assert (figures / "poster.pdf").read_bytes() == b"%PDF the user's poster"


def test_an_interrupted_report_leaves_only_claimed_figures(tmp_path: Path, real_run) -> None:
    """Each figure is claimed before it is written: a report stopped midway is still one
    that --overwrite replaces, and the figures it left are removed with it."""
    from mueval.report.folder import claim_figure, prepare_report_folder

    out = prepare_report_folder(tmp_path / "rep")
    claim_figure(out, "half_written.svg")  # claimed; the process dies before the file is done
    (out / "figures").mkdir()
    (out / "figures" / "half_written.svg").write_text("<svg")
    result = _mueval("report", str(real_run), "--out", str(out), "--n-boot", "10", "--overwrite")
    assert result.exit_code == 0, result.output
    assert "half_written.svg" not in os.listdir(out / "figures")
    claimed = (out / ".mueval-report-figures").read_text().split()
    assert sorted(claimed) == sorted(os.listdir(out / "figures"))
    with pytest.raises(OutputError, match="not a plain file name"):
        claim_figure(out, "../escape.svg")


@needs_links
def test_the_figure_list_is_never_written_through_a_link(tmp_path: Path, real_run) -> None:
    out = tmp_path / "rep"
    assert _mueval("report", str(real_run), "--out", str(out), "--figures", "none").exit_code == 0
    from mueval.report.folder import claim_figure

    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    (out / ".mueval-report-figures").unlink()
    (out / ".mueval-report-figures").symlink_to(target)
    with pytest.raises(OutputError, match="mueval-report-figures"):
        claim_figure(out, "x.svg")
    assert target.read_text() == "keep\n"
    # The report folder is then no longer one mueval wrote: a link among its entries.
    refused = _mueval("report", str(real_run), "--out", str(out), "--overwrite")
    assert refused.exit_code == 1 and ".mueval-report-figures (a symbolic link)" in refused.output
    assert target.read_text() == "keep\n"


def test_a_report_written_before_figures_were_claimed_is_still_replaced(
    tmp_path: Path, real_run
) -> None:
    """Version 1 of the marker had no list: its figures are told by their suffix, as then."""
    out = tmp_path / "rep"
    (out / "figures").mkdir(parents=True)
    (out / "report.html").write_text("old")
    (out / ".mueval-report.json").write_text('{"format": "mueval-report", "format_version": 1}\n')
    (out / "figures" / "old_figure.png").write_bytes(b"png")
    result = _mueval("report", str(real_run), "--out", str(out), "--figures", "none", "--overwrite")
    assert result.exit_code == 0, result.output
    assert os.listdir(out / "figures") == []
    assert json.loads((out / ".mueval-report.json").read_text())["format_version"] == 2


def test_report_out_as_a_link_to_an_earlier_report_is_refused(tmp_path: Path, real_run) -> None:
    out = tmp_path / "rep"
    assert _mueval("report", str(real_run), "--out", str(out), "--figures", "none").exit_code == 0
    link = tmp_path / "link"
    link.symlink_to(out, target_is_directory=True)
    result = _mueval("report", str(real_run), "--out", str(link), "--overwrite")
    assert result.exit_code == 1 and "it is a symbolic link" in result.output
    assert str(link) in result.output


def test_user_ids_01_and_1_stay_two_users_in_a_csv(tmp_path: Path) -> None:
    # Here, not at the top: the loader is the unit under attack, beside the command.
    from mueval.data.table import load_file

    frame = make_frame(n_users=3)
    frame["userid"] = frame["userid"].map({10: "01", 11: "1", 12: "001"})
    path = _csv(tmp_path / "data", frame)
    table = load_file(path)
    assert sorted(set(table.users)) == ["001", "01", "1"]
    # The same table as Parquet agrees.
    frame.to_parquet(tmp_path / "data" / "table.parquet", index=False)
    assert sorted(set(load_file(tmp_path / "data" / "table.parquet").users)) == ["001", "01", "1"]
    result = _evaluate(path, tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "run.json").read_text())["dataset"]["n_users"] == 3


def test_user_ids_that_would_merge_in_a_csv_are_an_error_naming_both(tmp_path: Path) -> None:
    frame = make_frame(n_users=3)
    frame["userid"] = frame["userid"].map({10: " 1", 11: "1", 12: "2"})
    result = _evaluate(_csv(tmp_path / "data", frame), tmp_path / "run")
    assert result.exit_code == 1, result.output
    assert "user ids ' 1' and '1'" in result.output and "would merge" in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["summary.csv", "predictions.parquet", "run.json"])
def test_a_link_planted_in_a_run_folder_is_refused_and_not_followed(
    tmp_path: Path, real_run, name: str
) -> None:
    run = _copy(real_run, tmp_path / "run")
    other = _copy(real_run, tmp_path / "other")  # another run's file: a valid target
    secret = tmp_path / "secret.csv"
    secret.write_text("strategy,classifier\nTOP-SECRET-VALUE,x\n")
    target = secret if name == "summary.csv" else other / name
    (run / name).unlink()
    (run / name).symlink_to(target)
    for command in ("report", "compare"):
        result = _mueval(command, str(run), "--figures", "none")
        if command == "compare":
            result = _mueval(command, str(run))
        assert result.exit_code == 1, result.output
        assert str(run / name) in result.output and "a symbolic link" in result.output
        assert "TOP-SECRET-VALUE" not in result.output
    assert not (run / "report").exists()


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_data_linked_to_proc_environ_is_never_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MUEVAL_TEST_SECRET", "S" * 400 + "END-OF-SECRET")
    link = tmp_path / "link.csv"
    link.symlink_to("/proc/self/environ")
    proc = _mueval_subprocess("evaluate", "--data", str(link), "--out", str(tmp_path / "run"))
    assert proc.returncode != 0, proc.stderr
    assert "END-OF-SECRET" not in proc.stderr + proc.stdout
    # At most a short excerpt of the header (the environment) is quoted.
    assert len(proc.stderr) < 800, proc.stderr
    assert "link.csv" in proc.stderr and "more characters" in proc.stderr


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_cohorts_linked_to_proc_environ_is_never_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Here, not at the top: the cohorts reader is the unit under attack.
    from mueval.data.cohorts import read_cohorts_file
    from mueval.errors import DataError

    monkeypatch.setenv("MUEVAL_TEST_SECRET", "S" * 400 + "END-OF-SECRET")
    link = tmp_path / "cohorts.csv"
    link.symlink_to("/proc/self/environ")
    with pytest.raises(DataError) as caught:
        read_cohorts_file(link)
    message = str(caught.value)
    assert str(link) in message and "END-OF-SECRET" not in message and len(message) < 600


# --- 5. Non-regular files: refused, never a hang -----------------------------------------


@needs_fifo
def test_fifo_as_data_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "table.csv"
    os.mkfifo(fifo)
    proc = _mueval_subprocess("evaluate", "--data", str(fifo), "-s", "mm", "-c", "nb")
    assert proc.returncode == 1, proc.stderr
    assert f"{fifo}: expected --data as a regular file, found a FIFO (named pipe)" in proc.stderr


@needs_fifo
def test_device_and_socket_as_data_are_refused(tmp_path: Path) -> None:
    zero = tmp_path / "zero.csv"
    zero.symlink_to("/dev/zero")  # read to the end, it never ends
    result = _mueval("evaluate", "--data", str(zero), "-s", "mm", "-c", "nb")
    assert result.exit_code == 1, result.output
    assert "expected --data as a regular file, found a character device" in result.output
    sock_path = tmp_path / "s.csv"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        result = _mueval("evaluate", "--data", str(sock_path), "-s", "mm", "-c", "nb")
    assert result.exit_code == 1, result.output
    assert "found a socket" in result.output


@needs_fifo
@pytest.mark.parametrize("name", ["predictions.parquet", "run.json", "summary.csv"])
def test_fifo_in_a_run_folder_is_refused_by_report_and_compare(
    tmp_path: Path, real_run, name: str
) -> None:
    run = _copy(real_run, tmp_path / "run")
    (run / name).unlink()
    os.mkfifo(run / name)
    for command in ("report", "compare"):
        proc = _mueval_subprocess(command, str(run))
        assert proc.returncode == 1, proc.stderr
        assert (
            f"{run / name}: expected a regular file written by `mueval evaluate`, found a FIFO"
            in proc.stderr
        )


@needs_fifo
def test_fifo_planted_among_the_report_figures_is_refused(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")
    (run / "report" / "figures").mkdir(parents=True)
    os.mkfifo(run / "report" / "figures" / "coverage_box_nb.svg")
    proc = _mueval_subprocess("report", str(run), "--n-boot", "10", "--figures", "all")
    assert proc.returncode == 1, proc.stderr
    # Refused before any figure is drawn: the folder holds what mueval report did not write.
    assert "figures/coverage_box_nb.svg (a FIFO (named pipe))" in proc.stderr


@needs_fifo
def test_compare_out_as_fifo_or_link_is_refused(tmp_path: Path, real_run) -> None:
    fifo = tmp_path / "table.csv"
    os.mkfifo(fifo)
    proc = _mueval_subprocess("compare", str(real_run), "--out", str(fifo))
    assert proc.returncode == 1, proc.stderr
    assert "cannot write the comparison table" in proc.stderr and "FIFO" in proc.stderr
    secret = tmp_path / "secret.txt"
    secret.write_text("keep")
    link = tmp_path / "link.csv"
    link.symlink_to(secret)
    result = _mueval("compare", str(real_run), "--out", str(link))
    assert result.exit_code == 1, result.output
    assert secret.read_text() == "keep" and link.is_symlink()


# --- 7. Clean errors on reachable bad input ----------------------------------------------


def test_mathtext_labels_are_drawn_as_plain_text(tmp_path: Path) -> None:
    frame = make_frame(n_users=3)
    # Parsed as mathtext, "$\\frac{1$" is a syntax error raised while drawing.
    frame["label"] = frame["label"].map({"run": "$x$", "sit": "$\\frac{1$", "walk": "a $ b"})
    run = tmp_path / "run"
    result = _evaluate(_csv(tmp_path / "data", frame), run)
    assert result.exit_code == 0, result.output
    result = _mueval("report", str(run), "--n-boot", "10", "--strategy", "uim", "--figures", "all")
    assert result.exit_code == 0, result.output
    svg = (run / "report" / "figures" / "uim_nb_confusion.svg").read_text(encoding="utf-8")
    assert "$\\frac{1$" in svg and "a $ b" in svg


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("alpha", 2.0, "config.alpha is 2.0; expected a number in (0, 1)"),
        ("alpha", 0, "config.alpha is 0; expected a number in (0, 1)"),
        ("alpha", "0.05", "config.alpha is the text '0.05'; expected a number in (0, 1)"),
        ("alpha", True, "config.alpha is True; expected a number in (0, 1)"),
        ("n_rows", "many", "dataset.n_rows is the text 'many'; expected a whole number"),
        ("classes", ["a", "a"], "'classes' names ['a'] more than once"),
        ("timings", {"total_s": "fast"}, "expected 'timings' as an object of numbers"),
        ("config", [], "expected 'config' as a JSON object, found list"),
    ],
)
def test_run_json_with_wrong_types_or_ranges_is_named(
    tmp_path: Path, real_run, field, value, message
) -> None:
    run = _copy(real_run, tmp_path / "run")
    info = json.loads((run / "run.json").read_text())
    if field == "alpha":
        info["config"]["alpha"] = value
    elif field == "n_rows":
        info["dataset"]["n_rows"] = value
    else:
        info[field] = value
    (run / "run.json").write_text(json.dumps(info))
    for command in ("report", "compare"):
        result = _mueval(command, str(run))
        assert result.exit_code == 1, result.output
        assert f"{run / 'run.json'}: {message}" in result.output


@pytest.mark.parametrize(
    ("name", "content", "found"),
    [
        ("run.json", b"\xff\xfe{}", "expected JSON, found a parse error"),
        (
            "summary.csv",
            "stratégie,x\nmm,1\n".encode("latin-1"),
            "expected a CSV file written by `mueval evaluate`",
        ),
        ("splits.parquet", b"PAR1" + b"\0" * 64, "expected a Parquet file"),
    ],
)
def test_corrupt_run_folder_files_are_named(tmp_path: Path, real_run, name, content, found) -> None:
    run = _copy(real_run, tmp_path / "run")
    (run / name).write_bytes(content)
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert f"{run / name}: {found}" in result.output
    assert "internal error" not in result.output


def test_latin1_data_is_a_clean_error_naming_the_encoding(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes("userid,label,f0\n1,caf\xe9,0.5\n".encode("latin-1"))
    result = _mueval("evaluate", "--data", str(path), "-s", "mm", "-c", "nb")
    assert result.exit_code == 1, result.output
    assert f"cannot read {path} as CSV (utf-8)" in result.output


def test_an_unexpected_exception_is_one_line_and_a_traceback_only_with_v() -> None:
    import click

    @click.command("explode")
    def explode() -> None:
        raise KeyError("a bug")

    main.add_command(explode)
    try:
        quiet = _mueval("explode")
        loud = _mueval("-v", "explode")
    finally:
        main.commands.pop("explode")
    assert quiet.exit_code == 1
    line = (
        "Error: internal error, please report it: KeyError: 'a bug' (run with -v for the traceback)"
    )
    assert quiet.output.strip().splitlines() == [line]
    assert loud.exit_code == 1 and "Traceback (most recent call last)" in loud.output
    assert "KeyError: 'a bug'" in loud.output


# --- 9. Consistent runs: tampering is named ----------------------------------------------


def _flip_first(column: str):
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.copy()
        frame.loc[3, column] = (
            not frame.loc[3, column] if column == "covered" else (frame.loc[3, column] + 1)
        )
        return frame

    return change


def test_flipped_covered_is_named_with_its_row(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")
    preds = pd.read_parquet(run / "predictions.parquet")
    row = preds.iloc[3]
    _tamper(run, "predictions.parquet", _flip_first("covered"))
    was_in = row["y_true"] in list(row["pred_set"])
    for command in ("report", "compare"):
        result = _mueval(command, str(run))
        assert result.exit_code == 1, result.output
        assert (
            f"row 3 (mm/nb, iteration 1): covered is {not was_in}, but y_true "
            f"{row['y_true']!r} {'is' if was_in else 'is not'} in pred_set"
        ) in result.output


def test_set_size_that_is_not_the_length_of_the_set_is_named(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")
    _tamper(run, "predictions.parquet", _flip_first("set_size"))
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert "row 3 (mm/nb, iteration 1): set_size is" in result.output
    assert "but pred_set holds" in result.output


def test_a_prediction_set_naming_an_unknown_class_is_named(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")

    def change(frame):
        frame = frame.copy()
        frame.at[0, "pred_set"] = ["=cmd|' /C calc'!A0"]
        frame.at[0, "set_size"] = 1
        return frame

    _tamper(run, "predictions.parquet", change)
    result = _mueval("compare", str(run))
    assert result.exit_code == 1, result.output
    assert (
        "row 0 (mm/nb, iteration 1): pred_set holds \"=cmd|' /C calc'!A0\", not a class"
        in result.output
    )


def test_split_coverage_that_the_predictions_contradict_is_named(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")

    def change(frame):
        frame = frame.copy()
        frame.loc[(frame.strategy == "uim") & (frame.user.astype(str) == "11"), "coverage"] = 1.0
        return frame

    _tamper(run, "splits.parquet", change)
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert (
        f"{run / 'splits.parquet'}: coverage of uim/nb iteration 1 user 11 is 1, but its"
        in result.output
    )


def test_summary_that_cannot_be_recomputed_is_named(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")
    summary = pd.read_csv(run / "summary.csv")
    mask = (summary.strategy == "uim") & (summary.metric == "setsize")
    true_mean = float(summary.loc[mask, "mean"].iloc[0])
    summary.loc[mask, "mean"] = true_mean * 0.5  # a flattering set size
    summary.to_csv(run / "summary.csv", index=False)
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert (
        f"{run / 'summary.csv'}: setsize of uim/nb has mean {true_mean * 0.5:.6g}, but "
        f"splits.parquet gives {true_mean:.6g}"
    ) in result.output


def test_summary_text_where_numbers_belong_is_named(tmp_path: Path, real_run) -> None:
    run = _copy(real_run, tmp_path / "run")
    summary = pd.read_csv(run / "summary.csv")
    summary["sd"] = summary["sd"].astype(object)
    summary.loc[5, "sd"] = "tiny"
    summary.to_csv(run / "summary.csv", index=False)
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert f"{run / 'summary.csv'}: column sd holds 'tiny'; expected numbers" in result.output


def test_an_untampered_real_run_passes_every_check(real_run: Path) -> None:
    run = read_run_folder(real_run)
    assert set(run.predictions["strategy"]) == {"mm", "uim"}


def test_compare_keeps_apart_two_runs_with_the_same_folder_name(tmp_path: Path, real_run) -> None:
    a = _copy(real_run, tmp_path / "a" / "run")
    b = tmp_path / "b" / "run"
    # The same data (compare wants one dataset), other seeds: other values.
    result = _evaluate(_csv(tmp_path / "data"), b, "--seed-base", "500")
    assert result.exit_code == 0, result.output
    out = tmp_path / "cmp.csv"
    result = _mueval("compare", str(a), str(b), "--out", str(out))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    labels = set(table.strategy_a) | set(table.strategy_b)
    assert labels == {"a/run/mm", "a/run/uim", "b/run/mm", "b/run/uim"}
    # Each run keeps its own values: merged, the two MM rows would be one.
    welch = table[table.test.str.startswith("Welch")].set_index(["strategy_a", "strategy_b"])
    assert (
        welch.loc[("a/run/mm", "b/run/mm"), "mean_a"]
        != welch.loc[("a/run/mm", "b/run/mm"), "mean_b"]
    )
    twice = _mueval("compare", str(a), str(tmp_path / "a" / ".." / "a" / "run"))
    assert twice.exit_code == 2 and "is given twice" in twice.output


def test_compare_csv_neutralises_formula_labels_but_not_numbers(tmp_path: Path, real_run) -> None:
    evil = '=HYPERLINK("evil.example","open me")'
    a = _copy(real_run, tmp_path / evil)
    b = _copy(real_run, tmp_path / "@SUM(1+1)")
    out = tmp_path / "cmp.csv"
    # --all-pairs: mm against uim, whose statistics are not 0 (copies of one run
    # matched strategy by strategy would be).
    result = _mueval("compare", str(a), str(b), "--all-pairs", "--out", str(out))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert f"'{evil}/mm" in set(table.strategy_a) | set(table.strategy_b)
    assert "'@SUM(1+1)/mm" in set(table.strategy_a) | set(table.strategy_b)
    cells = [c for col in table.select_dtypes(exclude="number") for c in table[col].dropna()]
    assert not [c for c in cells if str(c)[:1] in "=+-@\t\r"]
    assert pd.api.types.is_float_dtype(table["statistic"])
    assert (table["statistic"].dropna() < 0).any() or (table["statistic"].dropna() > 0).any()


def test_neutralise_formulas_touches_text_cells_only() -> None:
    frame = pd.DataFrame(
        {
            "text": ["=1+1", "+x", "-y", "@z", "\tt", "\rr", "ok", None],
            "number": [-1.5, 2.0, -3.0, 0.0, 1.0, -0.0, np.nan, 4.0],
            "count": [-1, 2, 3, 4, 5, 6, 7, 8],
        }
    )
    out = neutralise_formulas(frame)
    assert out["text"].tolist()[:7] == ["'=1+1", "'+x", "'-y", "'@z", "'\tt", "'\rr", "ok"]
    assert out["text"].isna().iloc[7]
    pd.testing.assert_frame_equal(out[["number", "count"]], frame[["number", "count"]])
    clean = pd.DataFrame({"a": ["x"], "b": [-1]})
    assert neutralise_formulas(clean) is clean


def test_summary_diagnostics_are_recomputed_from_diagnostics_parquet(
    tmp_path: Path, real_run
) -> None:
    run = _copy(real_run, tmp_path / "run")

    def change(frame):
        frame = frame.copy()
        frame.loc[frame.index[0], "covgap_user"] = frame["covgap_user"].iloc[0] + 0.25
        return frame

    _tamper(run, "diagnostics.parquet", change)
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert f"{run / 'summary.csv'}: covgap_user of mm/nb has mean" in result.output
    (run / "diagnostics.parquet").unlink()
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert "has covgap_user rows, but the run folder has no diagnostics.parquet" in result.output


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        (
            "p_values",
            [0.5],
            (
                r"row 0 \(mm/nb, iteration 1\): p_values holds 1 values; "
                r"expected one per class of run.json \(3\)"
            ),
        ),
        ("pred_set", ["sit", "sit"], r"row 0 \(mm/nb, iteration 1\): pred_set names 'sit' twice"),
        (
            "userid",
            "eleven",
            r"row \d+ \(\w+/nb, iteration 1\): userid 'eleven' is not the target "
            "user",
        ),
        (
            "y_true",
            "jump",
            (
                r"row 0 \(mm/nb, iteration 1\): y_true 'jump' is not a class of "
                "run.json"
            ),
        ),
    ],
)
def test_malformed_prediction_columns_are_named(
    tmp_path: Path, real_run, column, value, message
) -> None:
    run = _copy(real_run, tmp_path / "run")

    def change(frame):
        frame = frame.copy()
        row = 0
        if column == "userid":
            # text ids are valid; a row of a per-user strategy must be its target's
            frame[column] = frame[column].astype(str)
            row = int(np.flatnonzero(frame["target_user"].notna().to_numpy())[0])
        frame.at[row, column] = value
        return frame

    _tamper(run, "predictions.parquet", change)
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert re.search(re.escape(f"{run / 'predictions.parquet'}: ") + message, result.output)


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        (b'"numpy_type": "string"', b'"numpy_type": "strlng"', "TypeError"),
        (b'"index_columns": []', b'"index_columns": [1', "JSONDecodeError"),
        (b'"index_columns": []', b'"index_columns": ["gone"]', "KeyError"),
    ],
)
def test_damaged_pandas_metadata_in_a_parquet_file_is_named(
    tmp_path: Path, real_run, old, new, kind
) -> None:
    # Found by fuzzing: the Parquet stays valid, but the JSON that tells pandas the
    # dtypes is damaged, and the conversion fails deep inside pyarrow or pandas.
    run = _copy(real_run, tmp_path / "run")
    table = pq.read_table(run / "splits.parquet")
    meta = table.schema.metadata[b"pandas"]
    assert old in meta  # the first occurrence is damaged
    pq.write_table(
        table.replace_schema_metadata({b"pandas": meta.replace(old, new, 1)}),
        run / "splits.parquet",
    )
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert (
        f"{run / 'splits.parquet'}: expected a Parquet file written by `mueval evaluate`, "
        f"found pandas metadata that cannot be used: {kind}"
    ) in result.output


@pytest.mark.parametrize("name", ["predictions.parquet", "splits.parquet"])
def test_a_parquet_column_name_that_is_not_utf8_is_named(
    tmp_path: Path, real_run, name: str
) -> None:
    # Found by fuzzing: pyarrow reads the file and decodes the column names only
    # when they are asked for, so the UnicodeDecodeError came from the caller.
    run = _copy(real_run, tmp_path / "run")
    table = pq.read_table(run / name)
    first = table.column_names[0].encode()
    buffer = io.BytesIO()
    pq.write_table(table, buffer, store_schema=False)
    damaged = buffer.getvalue().replace(first, b"\xff" * len(first))
    assert damaged != buffer.getvalue()
    (run / name).write_bytes(damaged)
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert f"{run / name}: expected a Parquet file written by `mueval evaluate`, found: " in (
        result.output
    )
    assert "Traceback" not in result.output


def test_a_cut_short_summary_leaving_no_count_is_named(tmp_path: Path, real_run) -> None:
    # Found by fuzzing: the last line cut inside its `sd` field leaves `n` empty.
    run = _copy(real_run, tmp_path / "run")
    text = (run / "summary.csv").read_text()
    (run / "summary.csv").write_text(text[: text.rstrip("\n").rfind(",")] + "\n")
    result = _mueval("report", str(run))
    assert result.exit_code == 1, result.output
    assert f"{run / 'summary.csv'}: row " in result.output
    assert ": n is nan; expected a whole number >= 0" in result.output


def test_a_skipped_split_is_consistent_under_the_writers_aggregation(
    tmp_path: Path, real_run
) -> None:
    # `--small-cal skip` leaves a split without sets: NaN conformal metrics, no
    # prediction rows. The summary is aggregated by the writer's own function.
    from mueval.evaluation.aggregate import summary_frame
    from mueval.guarantees.compute import compute_guarantees

    run = _copy(real_run, tmp_path / "run")
    splits = pd.read_parquet(run / "splits.parquet")
    skipped = (splits.strategy == "mm") & (splits.iteration == 2)
    # The study's ten conformal metrics (a skipped task leaves them NaN).
    conformal = [m for m in CONFORMAL_METRICS if not m.endswith("_textbook")]
    splits.loc[skipped, conformal] = np.nan
    splits.to_parquet(run / "splits.parquet", index=False)
    _tamper(
        run,
        "predictions.parquet",
        lambda f: f[~((f.strategy == "mm") & (f.iteration == 2))].reset_index(drop=True),
    )
    summary = summary_frame(splits, pd.read_parquet(run / "diagnostics.parquet"))
    summary.to_csv(run / "summary.csv", index=False)
    # The per-user guarantees, likewise, by the writer's own function.
    info = json.loads((run / "run.json").read_text())
    found = compute_guarantees(
        pd.read_parquet(run / "predictions.parquet"),
        splits,
        alpha=info["config"]["alpha"],
        n_classes=len(info["classes"]),
        classes=info["classes"],
        config=info["config"],  # the run's own rules: its family of users among them
    )
    found.user_coverage.to_csv(run / "user_coverage.csv", index=False)
    found.coverage_summary.to_csv(run / "coverage_summary.csv", index=False)
    found.conditional_coverage.to_csv(run / "conditional_coverage.csv", index=False)
    found.user_validity.to_csv(run / "user_validity.csv", index=False)
    cov = summary.query("strategy == 'mm' and metric == 'coverage'").iloc[0]
    assert np.isnan(cov["mean"]) and cov["n"] == 1  # the study's rule
    assert read_run_folder(run).summary.equals(pd.read_csv(run / "summary.csv"))
    # A folder written by a mueval that skipped undefined iterations still reads.
    mm_it1 = splits[(splits.strategy == "mm") & (splits.iteration == 1)].iloc[0]
    older = summary.copy()
    mask = (older.strategy == "mm") & older.metric.isin(conformal)
    older.loc[mask, "mean"] = older.loc[mask, "metric"].map(mm_it1)
    older.to_csv(run / "summary.csv", index=False)
    read_run_folder(run)
    # Anything else is not.
    older.loc[mask & (older.metric == "coverage"), "mean"] = 0.5
    older.to_csv(run / "summary.csv", index=False)
    with pytest.raises(RunFolderError, match=r"coverage of mm/nb has mean 0\.5, but "):
        read_run_folder(run)


@needs_links
def test_what_counts_as_a_run_folder_for_overwrite(tmp_path: Path, real_run) -> None:
    from mueval.runfolder import run_folder_problem
    from tests.run_folders import make_run_folder

    assert run_folder_problem(real_run) is None
    # Written before run.json carried its marker: still a run folder.
    legacy = make_run_folder(tmp_path / "legacy", iterations=1, n_users=2)
    assert run_folder_problem(legacy) is None
    # A run.json alone does not make one.
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "run.json").write_text('{"format_version": 1}')
    assert "its run.json has format 'None'" in run_folder_problem(bare)
    # A run file's name on a folder (which the swap would remove whole), a user's
    # file among the report's figures, a link in place of a run file.
    cases = {
        "summary.csv": lambda run: (run / "summary.csv").unlink() or _thesis(run / "summary.csv"),
        "report/figures/poster.docx (a regular file)": lambda run: (
            (run / "report" / "figures").mkdir(parents=True),
            (run / "report" / "figures" / "poster.docx").write_text("mine"),
        ),
        # A figure's name on a folder: removed whole by the swap, so foreign too.
        "report/figures/old.pdf (a folder)": lambda run: (
            (run / "report" / "figures" / "old.pdf").mkdir(parents=True),
        ),
        "splits.parquet": lambda run: (
            (run / "splits.parquet").unlink(),
            (run / "splits.parquet").symlink_to(tmp_path / "x"),
        ),
    }
    for i, (entry, plant) in enumerate(cases.items()):
        run = _copy(real_run, tmp_path / f"run{i}")
        plant(run)
        assert run_folder_problem(run) == f"it holds entries mueval did not write: {entry}"


@pytest.mark.parametrize("fmt", ["pdf", "png"])
def test_a_run_folder_with_its_report_in_any_figure_format_may_be_replaced(tmp_path, fmt):
    """`mueval report --figure-format pdf|png` writes into the run folder's report/;
    the folder stays one that `evaluate --overwrite` may replace."""
    from mueval.runfolder import run_folder_problem
    from tests.run_folders import make_run_folder

    run = make_run_folder(tmp_path / "run", iterations=1, n_users=3)
    report = CliRunner().invoke(
        main, ["report", str(run), "--figure-format", fmt, "--n-boot", "20"]
    )
    assert report.exit_code == 0, report.output
    figures = sorted((run / "report" / "figures").iterdir())
    assert figures and all(f.suffix == f".{fmt}" for f in figures)
    assert run_folder_problem(run) is None


# --- Bounds: Parquet footers and --jobs --------------------------------------------------


def _parquet_bomb(path: Path, rows: int = 200_000, columns: int = 50) -> Path:
    """A Parquet file of a few dozen KB declaring ``rows`` x ``columns`` int64 zeros."""
    # Here, not at the top: only the bombs are written with pyarrow directly.
    import pyarrow as pa

    zeros = pa.array(np.zeros(rows, dtype=np.int64))
    pq.write_table(pa.table({f"c{i}": zeros for i in range(columns)}), path)
    return path


def test_data_parquet_declaring_too_many_rows_is_refused_unread(tmp_path: Path) -> None:
    bomb = _parquet_bomb(tmp_path / "bomb.parquet")
    result = _evaluate(bomb, tmp_path / "run")
    assert result.exit_code == 1, result.output
    assert f"{bomb}: declares 200,000 rows x 50 columns" in result.output
    assert "$MUDATA_MAX_EXPANSION" in result.output and "--max-expansion" not in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["predictions.parquet", "splits.parquet"])
def test_run_folder_parquet_declaring_too_many_rows_is_refused_by_report_and_compare(
    tmp_path: Path, real_run, name: str
) -> None:
    run = _copy(real_run, tmp_path / "run")
    (run / name).unlink()
    _parquet_bomb(run / name)
    for args in (("report", str(run), "--out", str(tmp_path / "report")), ("compare", str(run))):
        result = _mueval(*args)
        assert result.exit_code == 1, result.output
        assert f"{run / name}: declares 200,000 rows x 50 columns" in result.output
    assert not (tmp_path / "report").exists()


def test_jobs_above_the_cpu_count_is_lowered_with_a_warning(tmp_path: Path) -> None:
    # Here, not at the top: the CPU count is read from the unit under test.
    from mueval.cli.options import usable_cpus

    cpus = usable_cpus()
    result = _evaluate(_csv(tmp_path / "data"), tmp_path / "run", "--jobs", str(cpus + 62))
    assert result.exit_code == 0, result.output
    assert (
        f"warning: --jobs {cpus + 62} is more than the {cpus} CPU(s) here; using {cpus}"
        in result.output
    )


# ------------------------------- every message printed escaped, whatever raised it


#: Clear screen, colour, CR, NUL, a C1 CSI, DEL and a right-to-left override.
HOSTILE = "name\x1b[2J\x1b[31m\r\x00\x9b\x7f\u202eevil\u2066"


def _subclasses(base: type) -> list[type]:
    found, todo = [], [base]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: (c.__module__, c.__qualname__))


def _error_types() -> list[type]:
    # Here, not at the top: only this test needs mudata's and mueval's whole error families.
    import importlib
    import pkgutil

    import mudata
    import mudata.errors
    import mueval
    import mueval.errors

    # Every module of both packages, so that every subclass is defined (and the
    # list is the same in every pytest-xdist worker).
    for package in (mudata, mueval):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)
    return [
        *_subclasses(mudata.errors.MudataError),
        *_subclasses(mueval.errors.MuevalError),
        OSError,  # a file system failure, reported as a runtime error
        RuntimeError,  # a bug, reported as an internal error
    ]


def _group_raising(error: BaseException, package: str) -> click.Group:
    # Here, not at the top: the two command-line groups under test.
    from mudata.cli import MudataGroup
    from mueval.cli.base import Group

    @click.group(cls=MudataGroup if package == "mudata" else Group)
    def group() -> None:
        pass

    @group.command()
    def boom() -> None:
        raise error

    return group


@pytest.mark.parametrize("package", ["mudata", "mueval"])
@pytest.mark.parametrize("error_type", _error_types(), ids=lambda c: c.__qualname__)
def test_every_error_type_prints_a_hostile_value_escaped(error_type: type, package: str) -> None:
    error = error_type(f"column {HOSTILE} of file {HOSTILE}: bad\nsecond line")
    result = CliRunner().invoke(_group_raising(error, package), ["boom"])
    assert result.exit_code in (1, 2), result.output
    shown = result.output
    assert [c for c in shown if not c.isprintable() and c not in "\n\t"] == []
    # (an internal error folds its whitespace, CR included, into spaces)
    assert "name\\x1b[2J\\x1b[31m" in shown and "\\x00\\x9b\\x7f\\u202eevil\\u2066" in shown
    assert "second line" in shown


def test_log_lines_are_escaped_by_the_command_line_formatter() -> None:
    code = (
        "import logging\n"
        "from mudata.cli_options import configure_logging\n"
        "configure_logging(0)\n"
        f"logging.getLogger('mueval').warning('label %s', {HOSTILE!r})\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=TIMEOUT, check=True
    )
    err = result.stderr.decode("utf-8")
    assert err.startswith("WARNING mueval: label name\\x1b[2J"), err
    assert [c for c in err if not c.isprintable() and c not in "\n\t"] == []


# ------------------------------------ run-folder files keep labels and ids exactly


#: Text a spreadsheet would run, a line break, a NUL, a right-to-left override, the
#: writer's own prefix, and 10,000 characters.
_HOSTILE_TEXTS = [
    "-1",
    "+1",
    "+",
    "-",
    "=A1",
    "@SUM(A1)",
    "'-1",
    "a\rb",
    "a\r\nb",
    "x\x00y",
    "\u202eevil",
    "\tq",
    "L" * 10_000,
    "walk",
]


def _hostile_frame(labels: list[str], ids: list[str]) -> pd.DataFrame:
    frame = make_frame(n_users=3, per_class=20)
    frame["label"] = frame["label"].map(dict(zip(["run", "sit", "walk"], labels)))
    frame["userid"] = frame["userid"].map(dict(zip([10, 11, 12], ids)))
    return frame


def _as_text(values: object) -> list[str]:
    return sorted(str(v) for v in pd.unique(pd.Series(values)))


@settings(max_examples=6, deadline=None)
@given(
    labels=st.lists(st.sampled_from(_HOSTILE_TEXTS), min_size=3, max_size=3, unique=True),
    ids=st.lists(st.sampled_from(_HOSTILE_TEXTS), min_size=3, max_size=3, unique=True),
)
def test_run_folders_read_back_hostile_labels_and_ids_exactly(
    tmp_path_factory: pytest.TempPathFactory, labels: list[str], ids: list[str]
) -> None:
    # Here, not at the top: the Python API, for a run without the command line's parsing.
    import mueval

    out = tmp_path_factory.mktemp("hostile") / "run"
    run = mueval.evaluate(
        _hostile_frame(labels, ids),
        strategies="mm",
        classifiers="nb",
        iterations=1,
        out=out,
        progress=False,
    )
    read = mueval.Run.load(out)  # what report and compare read
    assert read.folder().classes == run.folder().classes
    assert sorted(read.folder().classes) == sorted(labels)
    assert _as_text(read.predictions["userid"]) == _as_text(run.predictions["userid"])
    for name in ("user_coverage", "user_validity"):
        assert _as_text(getattr(read, name)["user"]) == _as_text(getattr(run, name)["user"])
    by_class = read.conditional_coverage
    assert set(labels) <= set(by_class.loc[by_class["by"] == "class", "value"])
    pd.testing.assert_frame_equal(
        read.size_coverage.reset_index(drop=True),
        run.size_coverage.reset_index(drop=True),
        check_dtype=False,
    )


def test_formula_text_is_neutralised_in_the_file_and_restored_on_read(tmp_path: Path) -> None:
    run = _hostile_frame(["=HYPERLINK(1)", "-1", "'q"], ["+7", "u\r1", "8"])
    # Here, not at the top: the Python API, for a run without the command line's parsing.
    import mueval

    mueval.evaluate(run, strategies="mm,uim", classifiers="nb", iterations=2, out=tmp_path / "r")
    raw = (tmp_path / "r" / "conditional_coverage.csv").read_text(encoding="utf-8")
    assert ",'=HYPERLINK(1)," in raw and ",'-1," in raw and ",''q," in raw  # spreadsheet-safe
    result = _mueval("compare", str(tmp_path / "r"))
    assert "the predictions lack it" not in result.output
    assert result.exit_code == 0, result.output
    read = mueval.Run.load(tmp_path / "r").folder()
    assert sorted(read.classes) == sorted(["=HYPERLINK(1)", "-1", "'q"])


def test_run_json_with_its_classes_reordered_is_refused(real_run: Path, tmp_path: Path) -> None:
    folder = _copy(real_run, tmp_path / "run")
    info = json.loads((folder / "run.json").read_text())
    info["classes"] = info["classes"][::-1]
    (folder / "run.json").write_text(json.dumps(info))
    with pytest.raises(RunFolderError, match="class order of run.json is not the one") as caught:
        read_run_folder(folder)
    assert "pred_set lists" in str(caught.value)
    assert read_run_folder(real_run).classes != info["classes"]  # the original still reads


def test_text_fields_of_run_json_are_capped_when_read(real_run: Path, tmp_path: Path) -> None:
    folder = _copy(real_run, tmp_path / "run")
    info = json.loads((folder / "run.json").read_text())
    info["dataset"]["name"] = "N" * 1_000_000
    info["versions"]["python"] = "\x1b[2J" * 100_000
    (folder / "run.json").write_text(json.dumps(info))
    run = read_run_folder(folder).run
    assert run["dataset"]["name"].startswith("N" * 2_000 + "... (998,000 more characters)")
    assert len(run["versions"]["python"]) < 10_000 and "\x1b" not in run["versions"]["python"]
    assert run["classes"] == info["classes"]  # kept whole: they must match the predictions


def test_a_huge_message_is_capped_at_the_command_line() -> None:
    # Here, not at the top: the error a --data file with a huge header would raise.
    from mueval.errors import DataError

    error = DataError("columns are: " + ", ".join(f"c{i}" for i in range(700_000)))
    result = CliRunner().invoke(_group_raising(error, "mueval"), ["boom"])
    assert result.exit_code == 1
    assert len(result.output) < 10_200 and "more characters)" in result.output


def test_uint64_user_ids_past_int64_stay_those_users(tmp_path: Path) -> None:
    # Here, not at the top: the Python API, to read the run back.
    import mueval

    frame = make_frame(n_users=3, per_class=20)
    frame["userid"] = frame["userid"].astype("uint64") + np.uint64(2**63)
    frame.to_parquet(tmp_path / "u64.parquet")
    result = _evaluate(tmp_path / "u64.parquet", tmp_path / "run")
    assert result.exit_code == 0, result.output
    users = {str(u) for u in mueval.Run.load(tmp_path / "run").predictions["userid"]}
    assert users == {str(u) for u in frame["userid"].unique()}


def test_a_run_marker_that_is_a_link_a_fifo_or_too_big_marks_no_run_folder(
    tmp_path: Path, real_run
) -> None:
    from mueval.runfolder import run_folder_problem

    # A copy of a real run folder is one; each bad run.json then unmakes it.
    cases = {
        "link": lambda marker: marker.symlink_to(real_run / "run.json"),
        "fifo": lambda marker: os.mkfifo(marker),
        "too big": lambda marker: marker.write_text(" " * (16 * 2**20) + "{}"),
    }
    for name, make in cases.items():
        copy = tmp_path / name.replace(" ", "_")
        shutil.copytree(real_run, copy)
        assert run_folder_problem(copy) is None
        (copy / "run.json").unlink()
        make(copy / "run.json")
        assert run_folder_problem(copy) == "it holds no readable run.json", name
