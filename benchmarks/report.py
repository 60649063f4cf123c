"""Benchmark ``mueval report``: build time and page size at each ``--figures`` level.

Builds (or reuses) a WISDM run folder with every strategy and classifier
(5 x 4), then builds the report from the folder at each level, each build a
fresh ``mueval report RUN_DIR --figures LEVEL --jobs N`` process (importing
mueval and reading the folder included, nothing warmed by an earlier build),
and prints the wall time, the CPU time of the build and its worker processes
(user + system; on a shared machine the wall time follows the load, the CPU
time much less), the size of ``report.html``, and the number and total size of
the figure files, with the load average before each build.

Usage::

    python benchmarks/report.py --manual-dir ../shared/data/wisdm --run-dir /tmp/wisdm-run

``--iterations`` (default 20, the study's) sets the run's iterations when the
run folder has to be built; an existing run folder is reused as it is.
``--jobs`` (default 2) is used for the evaluation; every level is built once
for each value of ``--report-jobs`` (default ``1,2``), the worker processes
that draw the (strategy, classifier) sections of ``--figures all`` while the
main process builds the rest of the page (the other levels draw in the main
process, so their time should not change with it). ``--figure-format`` (svg,
the default, pdf or png) and ``--dpi`` are passed to ``mueval report``. ``--strategy`` and
``--classifier`` (comma lists) narrow the report, as ``mueval report`` does.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mueval
from mueval.runfolder import read_run_folder


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _ensure_run(run_dir: Path, manual_dir: Path, iterations: int, jobs: int) -> None:
    if (run_dir / "run.json").is_file():
        print(f"reusing run folder {run_dir}")
        return
    start = time.perf_counter()
    run = mueval.evaluate(
        "wisdm",
        manual_dir=manual_dir,
        strategies=("mm", "udm", "uim", "ucm", "uam"),
        classifiers=("nb", "rf", "svm", "knn"),
        iterations=iterations,
        jobs=jobs,
        progress=False,
    )
    run.save(run_dir)
    print(f"evaluated WISDM, {iterations} iterations, in {time.perf_counter() - start:.1f} s")


def _children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process and of the
    children those waited for (the report's worker processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _build(run_dir: Path, out: Path, level: str, jobs: int, args: argparse.Namespace) -> float:
    """One ``mueval report`` process; its wall time in seconds."""
    command = [sys.executable, "-c", "from mueval.cli.main import main; main()", "report"]
    command += [str(run_dir), "--out", str(out), "--figures", level, "--jobs", str(jobs)]
    command += ["--figure-format", args.figure_format, "--dpi", str(args.dpi)]
    command += ["--strategy", args.strategy] if args.strategy else []
    command += ["--classifier", args.classifier] if args.classifier else []
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"mueval report exited {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manual-dir", type=Path, required=True)
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--levels", default="none,summary,all")
    parser.add_argument("--report-jobs", default="1,2")
    parser.add_argument("--strategy", default="")
    parser.add_argument("--classifier", default="")
    parser.add_argument("--figure-format", default="svg", choices=("svg", "pdf", "png"))
    parser.add_argument("--dpi", type=int, default=300)
    args = parser.parse_args()
    _ensure_run(args.run_dir, args.manual_dir, args.iterations, args.jobs)
    info = read_run_folder(args.run_dir)
    print(
        f"run: {info.predictions.strategy.nunique()} strategies x "
        f"{info.predictions.classifier.nunique()} classifiers, "
        f"{info.run['config']['iterations']} iterations, {len(info.predictions)} prediction rows"
    )
    print(f"cores: {os.cpu_count()}; figures: {args.figure_format} (PNG at {args.dpi} dpi)")
    header = f"{'figures':>8} {'jobs':>4} {'load':>5} {'build s':>8} {'CPU s':>6} {'page MB':>8} "
    print(header + f"{'files':>5} {'figures MB':>10}")
    for level in args.levels.split(","):
        for jobs in [int(j) for j in args.report_jobs.split(",")]:
            out = Path(tempfile.mkdtemp(prefix=f"report-{level}-")) / "report"
            load = os.getloadavg()[0]
            cpu = _children_cpu()
            seconds = _build(args.run_dir, out, level, jobs, args)
            cpu = _children_cpu() - cpu
            files = list((out / "figures").iterdir()) if (out / "figures").is_dir() else []
            print(
                f"{level:>8} {jobs:4d} {load:5.1f} {seconds:8.1f} {cpu:6.1f} "
                f"{_size(out / 'report.html') / 2**20:8.2f} {len(files):5d} "
                f"{_size(out / 'figures') / 2**20 if files else 0.0:10.2f}",
                flush=True,
            )
            shutil.rmtree(out.parent)


if __name__ == "__main__":
    main()
