"""``mueval evaluate --scheduler`` on a real Dask cluster of separate processes.

The README's recipe for several machines, run on 127.0.0.1: ``dask scheduler``
and two ``dask worker`` processes started as subprocesses (each in a process
group of its own, so a worker's nanny and the worker die together), then the
``mueval`` command line pointed at the scheduler. The run must equal ``--jobs
1`` row for row in ``predictions.parquet``. A worker killed in the middle of a
run: Dask moves its tasks (and the broadcast table, which every worker holds) to
the surviving worker and the run gives the same file; when the scheduler allows
no worker failure, the run stops with an error naming the lost worker and
leaves no run folder.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import mueval
from mueval.data.synthetic import make_users

distributed = pytest.importorskip("distributed")

BIN = Path(sys.executable).parent
#: Seconds a cluster may take to start (the machine may be busy).
START_TIMEOUT = 90
#: Seconds a whole ``mueval evaluate`` may take here.
RUN_TIMEOUT = 300
#: No dashboard: nothing listens beyond the ports the test chose.
QUIET = ("--no-dashboard",)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment, with the package under test first on the path of every
    process (the scheduler unpickles nothing of ours, the workers do)."""
    src = str(Path(mueval.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    """A process in a new session (its own process group), output to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """End ``proc``'s process group (a worker's nanny and its worker), then reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


@dataclass
class Cluster:
    """A scheduler and its workers, each a subprocess of this test."""

    address: str
    scheduler: subprocess.Popen
    workers: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def log_text(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')}" for p in self.logs)


def _start_cluster(tmp: Path, scheduler_env: dict[str, str] | None = None) -> Cluster:
    """The README's commands on 127.0.0.1: a scheduler, two workers of one thread."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = _env()
    log = tmp / "scheduler.log"
    scheduler = _start(
        [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port), *QUIET],
        log,
        _env(scheduler_env),
    )
    cluster = Cluster(address, scheduler, logs=[log])
    try:
        for i in range(2):
            log = tmp / f"worker{i}.log"
            cluster.logs.append(log)
            space = tmp / f"worker{i}"
            space.mkdir()
            cluster.workers.append(
                _start(
                    [
                        *(str(BIN / "dask"), "worker", address, "--nworkers", "1"),
                        *("--nthreads", "1", "--host", "127.0.0.1", *QUIET),
                        *("--local-directory", str(space), "--death-timeout", "60"),
                    ],
                    log,
                    env,
                )
            )
        with distributed.Client(address, timeout=START_TIMEOUT, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=START_TIMEOUT)
    except BaseException:
        _stop_cluster(cluster)
        raise
    return cluster


def _stop_cluster(cluster: Cluster) -> None:
    for proc in [*cluster.workers, cluster.scheduler]:
        _stop(proc)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A running cluster, stopped after the test whatever its outcome."""
    folder = tmp_path / "cluster"
    folder.mkdir()
    running = _start_cluster(folder)
    try:
        yield running
    finally:
        _stop_cluster(running)


@pytest.fixture
def fragile_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A cluster whose scheduler gives a task up at the first worker it loses."""
    folder = tmp_path / "cluster"
    folder.mkdir()
    running = _start_cluster(folder, {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"})
    try:
        yield running
    finally:
        _stop_cluster(running)


def _data(tmp: Path, n_users: int) -> Path:
    path = tmp / "users.csv"
    make_users(n_users, n_classes=3, rows_per_user=120, n_features=4, seed=5).to_csv(
        path, index=False
    )
    return path


def _evaluate(
    data: Path, out: Path, *extra: str, classifier: str = "nb", strategies: str = "udm,uim,ucm"
) -> list[str]:
    return [
        str(BIN / "mueval"),
        "evaluate",
        "--data",
        str(data),
        "-s",
        strategies,
        "-c",
        classifier,
        "--iterations",
        "1",
        "--out",
        str(out),
        *extra,
    ]


def test_run_on_a_scheduler_and_two_workers_equals_jobs_1(tmp_path, cluster) -> None:
    data = _data(tmp_path, 6)
    one = subprocess.run(
        _evaluate(data, tmp_path / "one", "--jobs", "1"),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert one.returncode == 0, one.stderr
    remote = subprocess.run(
        _evaluate(data, tmp_path / "remote", "--backend", "dask", "--scheduler", cluster.address),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert remote.returncode == 0, remote.stderr + cluster.log_text()
    expected = pq.read_table(tmp_path / "one" / "predictions.parquet")
    got = pq.read_table(tmp_path / "remote" / "predictions.parquet")
    assert got.num_rows == expected.num_rows > 0
    assert got.equals(expected)
    # Both workers ran tasks: the cluster was used, not a fallback in this process.
    with distributed.Client(cluster.address, timeout=30, set_as_default=False) as client:
        assert len(client.scheduler_info()["workers"]) == 2


def _run_and_kill_a_worker(tmp_path: Path, cluster: Cluster) -> tuple[subprocess.Popen, str]:
    """Start a run of enough random-forest tasks on ``cluster``, kill one worker
    (nanny and all) once a tenth of them are done, and wait for the run."""
    data = _data(tmp_path, 16)
    err = tmp_path / "run.err"
    with err.open("w") as stream:
        run = subprocess.Popen(
            _evaluate(
                data,
                tmp_path / "remote",
                "--backend",
                "dask",
                "--scheduler",
                cluster.address,
                classifier="rf",
                strategies="uim,ucm",
            ),
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=stream,
            text=True,
        )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        # Away from a terminal, the progress is a line every tenth of the tasks.
        while "tasks (" not in err.read_text() and run.poll() is None:
            assert time.monotonic() < deadline, "no progress line"
            time.sleep(0.05)
        assert run.poll() is None, "the run ended before a worker could be killed"
        assert "(100 %)" not in err.read_text()
        _stop(cluster.workers[0], signal.SIGKILL)
        run.wait(timeout=RUN_TIMEOUT)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    return run, err.read_text()


# Slow (tens of seconds): .ci/run runs it with -m slow; the default run stays under 5 min.
@pytest.mark.slow
def test_a_worker_killed_mid_run_gives_the_same_predictions(tmp_path, cluster) -> None:
    one = subprocess.run(
        _evaluate(
            _data(tmp_path, 16),
            tmp_path / "one",
            "--jobs",
            "1",
            classifier="rf",
            strategies="uim,ucm",
        ),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert one.returncode == 0, one.stderr
    run, stderr = _run_and_kill_a_worker(tmp_path, cluster)
    assert run.returncode == 0, stderr + cluster.log_text()
    # Tasks finished after the kill: the surviving worker took over the lost one's.
    assert "(100 %)" in stderr
    expected = pq.read_table(tmp_path / "one" / "predictions.parquet")
    assert pq.read_table(tmp_path / "remote" / "predictions.parquet").equals(expected)
    with distributed.Client(cluster.address, timeout=30, set_as_default=False) as client:
        assert len(client.scheduler_info()["workers"]) == 1


def test_a_worker_lost_beyond_the_allowed_failures_stops_the_run_cleanly(
    tmp_path, fragile_cluster
) -> None:
    run, stderr = _run_and_kill_a_worker(tmp_path, fragile_cluster)
    assert run.returncode != 0
    assert "Traceback" not in stderr
    assert "dask worker" in stderr and "died" in stderr, stderr
    # No run folder under the final name, and no leftover beside it.
    assert not (tmp_path / "remote").exists()
    assert [p.name for p in tmp_path.iterdir() if "remote" in p.name] == []
