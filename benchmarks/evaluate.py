"""Benchmark ``mueval evaluate`` against the bare model work the protocol needs.

By default the full protocol on the real WISDM table: 20 iterations, MM, UDM,
UIM and UCM, the four classifiers. Two wall times, measured in one invocation:

- ``mueval``: :func:`mueval.api.evaluate_table` writing its run folder (splits,
  fits, conformal sets, p-values, metrics, diagnostics, aggregation, per-user
  guarantees, the predictions streamed to Parquet, the other files);
- ``floor``: the same model fits and the same ``predict_proba``/``predict`` calls
  on the same rows (MinMaxScaler included, since the protocol needs it), with
  scikit-learn's OpenMP on one thread as in mueval's tasks, and nothing else,
  with the same number of workers.

Their ratio is the overhead of everything that is not model work. With
``--jobs 1`` the CPU seconds of this process are measured too: on a machine
shared with other work they change less than wall time does. Then the
task seconds of each stage per strategy and classifier, from the run's
``stage_timings`` (a fit and its predictions serving UIM and UCM are shared
between them), and the run's wall seconds per phase.

Usage::

    python benchmarks/evaluate.py --jobs 1 --manual-dir ../shared/data/wisdm
    python benchmarks/evaluate.py --jobs 1 --iterations 2 --manual-dir ../shared/data/wisdm
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from mueval.api import evaluate_table
from mueval.data.table import load_registered
from mueval.evaluation.models import fit_scaled, full_proba
from mueval.evaluation.records import EvalConfig
from mueval.evaluation.runner import build_splits

#: Columns of the stage table: run.json's stage names and their headings.
STAGES = (
    ("fit_s", "fit"),
    ("predict_s", "predict"),
    ("conformal_s", "conformal"),
    ("metrics_s", "metrics"),
    ("diagnostics_s", "diagnose"),
    ("write_s", "write"),
)


def _floor_task(X, y, n_classes, split, classifier):
    """One task's model work: the same rows as the runner's (every target's test
    and calibration rows, each array once), nothing else."""
    scaler, model = fit_scaled(classifier, split.seed, X[split.train], y[split.train])
    targets = split.served()
    seen, parts = set(), []
    for array in [t.test for t in targets] + [c for t in targets for c in t.calibrations.values()]:
        if id(array) not in seen:
            seen.add(id(array))
            parts.append(array)
    X_eval = scaler.transform(X[np.concatenate(parts)])
    full_proba(model, X_eval, n_classes)
    model.predict(X_eval[: sum(len(t.test) for t in targets)])


def _floor_chunk(X, y, n_classes, tasks):
    with threadpool_limits(limits=1, user_api="openmp"):
        for split, classifier in tasks:
            _floor_task(X, y, n_classes, split, classifier)


def floor(table, config: EvalConfig, jobs: int) -> tuple[float, float]:
    """Wall and CPU seconds (of this process) of the bare fits and predictions."""
    start, cpu = time.perf_counter(), time.process_time()
    splits = build_splits(table.y, table.users, config, table.classes)
    tasks = [(s, c) for s in splits for c in config.classifiers]
    K = len(table.classes)
    if jobs == 1:
        _floor_chunk(table.X, table.y, K, tasks)
    else:
        # A few chunks per worker: one thread limit per chunk, balanced load.
        n = 4 * jobs if jobs > 0 else 8
        Parallel(n_jobs=jobs)(
            delayed(_floor_chunk)(table.X, table.y, K, tasks[i::n]) for i in range(n)
        )
    return time.perf_counter() - start, time.process_time() - cpu


def stage_table(stages: dict[str, dict[str, float]]) -> str:
    """The per-stage seconds as a text table, one row per strategy/classifier."""
    head = f"{'strategy/classifier':<20}" + "".join(f"{h:>10}" for _, h in STAGES)
    lines = [head + f"{'total':>10}"]
    sums = dict.fromkeys((k for k, _ in STAGES), 0.0)
    for key, row in stages.items():
        values = [row.get(k, 0.0) for k, _ in STAGES]
        for (k, _), v in zip(STAGES, values, strict=True):
            sums[k] += v
        lines.append(
            f"{key:<20}" + "".join(f"{v:>10.3f}" for v in values) + f"{sum(values):>10.3f}"
        )
    total = sum(sums.values())
    lines.append(f"{'all':<20}" + "".join(f"{v:>10.3f}" for v in sums.values()) + f"{total:>10.3f}")
    lines.append(
        f"{'share %':<20}"
        + "".join(f"{100 * v / total:>10.2f}" for v in sums.values())
        + f"{100.0:>10.2f}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--strategies", default="mm,udm,uim,ucm")
    parser.add_argument("--classifiers", default="nb,rf,svm,knn")
    parser.add_argument(
        "--manual-dir", default=str(Path(__file__).resolve().parents[2] / "shared/data/wisdm")
    )
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--repeats", type=int, default=1, help="alternating runs of each")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        data_home = args.data_home or tmp
        table = load_registered("wisdm", data_home=data_home, manual_dir=args.manual_dir)
        config = EvalConfig(
            strategies=tuple(args.strategies.split(",")),
            classifiers=tuple(args.classifiers.split(",")),
            iterations=args.iterations,
        )
        # Alternate the two measurements and keep each one's best, so that load
        # from other processes on a shared machine hurts neither side alone.
        mueval_runs, floor_runs, mueval_cpu, floor_cpu, best = [], [], [], [], None
        for i in range(args.repeats):
            wall, cpu = floor(table, config, args.jobs)
            floor_runs.append(wall)
            floor_cpu.append(cpu)
            t0, c0 = time.perf_counter(), time.process_time()
            run = evaluate_table(
                table, config, jobs=args.jobs, progress=False, out=Path(tmp) / f"run{i}"
            )
            mueval_runs.append(time.perf_counter() - t0)
            mueval_cpu.append(time.process_time() - c0)
            if mueval_runs[-1] == min(mueval_runs):
                best = run
    mueval_s, floor_s = min(mueval_runs), min(floor_runs)
    cpu_ratio = min(mueval_cpu) / min(floor_cpu) if args.jobs == 1 else None
    phases = {k: round(v, 3) for k, v in best.info["timings"].items()}
    phases["after_evaluation_s"] = round(mueval_s - best.info["timings"]["total_s"], 3)
    report = {
        "dataset": "wisdm",
        "iterations": args.iterations,
        "strategies": list(config.strategies),
        "classifiers": list(config.classifiers),
        "jobs": args.jobs,
        "mueval_s": round(mueval_s, 2),
        "floor_s": round(floor_s, 2),
        "ratio": round(mueval_s / floor_s, 3),
        "all_mueval_s": [round(t, 2) for t in mueval_runs],
        "all_floor_s": [round(t, 2) for t in floor_runs],
        "mueval_cpu_s": [round(t, 2) for t in mueval_cpu],
        "floor_cpu_s": [round(t, 2) for t in floor_cpu],
        "cpu_ratio": None if cpu_ratio is None else round(cpu_ratio, 3),
        "phases_s": phases,
        "stage_timings": best.info["stage_timings"],
    }
    print(
        f"mueval {mueval_s:.2f} s, floor {floor_s:.2f} s, ratio {mueval_s / floor_s:.3f} "
        f"(wisdm, {args.iterations} iterations, {args.strategies}, {args.classifiers}, "
        f"--jobs {args.jobs})"
    )
    if cpu_ratio is not None:
        print(
            f"CPU seconds of this process: mueval {min(mueval_cpu):.2f}, floor "
            f"{min(floor_cpu):.2f}, ratio {cpu_ratio:.3f}"
        )
    print("wall seconds per phase:", json.dumps(phases))
    print("task seconds per stage (predict = predict_proba + predict):")
    print(stage_table(best.info["stage_timings"]))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
