"""Benchmark ``mueval report``: build time and page size at each ``--figures`` level.

Builds (or reuses) a WISDM run folder with every strategy and classifier
(5 x 4), then builds the report from the folder at each level, as
``mueval report RUN_DIR --figures LEVEL`` does (reading the folder included),
and prints the wall time, the size of ``report.html``, and the number and
total size of the figure files, with the load average before each build (the
machine may be shared).

Usage::

    python benchmarks/report.py --manual-dir ../shared/data/wisdm --run-dir /tmp/wisdm-run

``--iterations`` (default 20, the study's) sets the run's iterations when the
run folder has to be built; an existing run folder is reused as it is.
``--jobs`` (default 2) is used for the evaluation; every level is built once
for each value of ``--report-jobs`` (default ``1,2``), the worker processes
that draw the sections of ``--figures all`` (the other levels draw in the main
process, so their time should not change with it). ``--svg`` also writes the
SVG copies, as ``mueval report --svg`` does. ``--strategy`` and
``--classifier`` (comma lists) narrow the report, as ``mueval report`` does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import mueval
from mueval.report.build import build_report
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
    parser.add_argument("--svg", action="store_true")
    args = parser.parse_args()
    narrow = {
        "strategies": [s for s in args.strategy.split(",") if s] or None,
        "classifiers": [c for c in args.classifier.split(",") if c] or None,
    }
    _ensure_run(args.run_dir, args.manual_dir, args.iterations, args.jobs)
    info = read_run_folder(args.run_dir)
    print(
        f"run: {info.predictions.strategy.nunique()} strategies x "
        f"{info.predictions.classifier.nunique()} classifiers, "
        f"{info.run['config']['iterations']} iterations, {len(info.predictions)} prediction rows"
    )
    print(f"cores: {os.cpu_count()}; SVG copies: {'yes' if args.svg else 'no'}")
    header = f"{'figures':>8} {'jobs':>4} {'load':>5} {'build s':>8} {'page MB':>8} "
    print(header + f"{'PNGs':>5} {'SVGs':>5} {'figures MB':>10}")
    for level in args.levels.split(","):
        for jobs in [int(j) for j in args.report_jobs.split(",")]:
            out = Path(tempfile.mkdtemp(prefix=f"report-{level}-"))
            load = os.getloadavg()[0]
            start = time.perf_counter()
            result = build_report(
                read_run_folder(args.run_dir), out, figures=level, jobs=jobs, svg=args.svg, **narrow
            )
            seconds = time.perf_counter() - start
            n_png = sum(1 for p in result.figures if p.suffix == ".png")
            n_svg = sum(1 for p in result.figures if p.suffix == ".svg")
            print(
                f"{level:>8} {jobs:4d} {load:5.1f} {seconds:8.1f} "
                f"{_size(result.html) / 2**20:8.2f} {n_png:5d} {n_svg:5d} "
                f"{_size(out / 'figures') / 2**20:10.2f}",
                flush=True,
            )
            shutil.rmtree(out)


if __name__ == "__main__":
    main()
