"""Benchmark ``mueval evaluate`` against the bare model work the protocol needs.

Full protocol on the real WISDM table: 20 iterations, MM, UDM, UIM and UCM, the four
classifiers. Two wall times, measured in one run:

- ``mueval``: :func:`mueval.cli.evaluate_table` (splits, fits, conformal sets with
  MAPIE, p-values, metrics, aggregation), without writing a run folder (and, with
  ``--out``, with the folder too);
- ``floor``: the same model fits and the same ``predict_proba``/``predict`` calls
  on the same rows (MinMaxScaler included, since the protocol needs it), and
  nothing else, with the same number of workers.

Their ratio is the overhead of everything that is not model work.

Usage::

    python benchmarks/evaluate.py --jobs 2 --manual-dir ../shared/data/wisdm
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from mueval.cli import evaluate_table
from mueval.data import load_registered
from mueval.models import fit_scaled, full_proba
from mueval.runner import EvalConfig, build_splits


def _floor_task(X, y, n_classes, split, classifier):
    scaler, model = fit_scaled(classifier, split.seed, X[split.train], y[split.train])
    rows = np.concatenate([split.test, *split.calibrations.values()])
    full_proba(model, scaler.transform(X[rows]), n_classes)
    model.predict(scaler.transform(X[split.test]))


def floor(table, config: EvalConfig, jobs: int) -> float:
    """Wall time of the bare fits and predictions of every task."""
    start = time.perf_counter()
    splits = build_splits(table.y, table.users, config, table.classes)
    tasks = [(s, c) for s in splits for c in config.classifiers]
    K = len(table.classes)
    if jobs == 1:
        for s, c in tasks:
            _floor_task(table.X, table.y, K, s, c)
    else:
        Parallel(n_jobs=jobs)(delayed(_floor_task)(table.X, table.y, K, s, c) for s, c in tasks)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument(
        "--manual-dir", default=str(Path(__file__).resolve().parents[2] / "shared/data/wisdm")
    )
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--repeats", type=int, default=1, help="alternating runs of each")
    parser.add_argument(
        "--with-output", action="store_true", help="also time writing the run folder"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        data_home = args.data_home or tmp
        table = load_registered("wisdm", data_home=data_home, manual_dir=args.manual_dir)
        config = EvalConfig(strategies=("mm", "udm", "uim", "ucm"), iterations=args.iterations)
        # Alternate the two measurements and keep each one's best, so that load
        # from other processes on a shared machine hurts neither side alone.
        mueval_runs, floor_runs = [], []
        for _ in range(args.repeats):
            floor_runs.append(floor(table, config, args.jobs))
            t0 = time.perf_counter()
            evaluate_table(table, config, jobs=args.jobs, progress=False)
            mueval_runs.append(time.perf_counter() - t0)
        mueval_s, floor_s = min(mueval_runs), min(floor_runs)
        out_s = None
        if args.with_output:
            t0 = time.perf_counter()
            evaluate_table(table, config, jobs=args.jobs, progress=False, out=Path(tmp) / "run")
            out_s = time.perf_counter() - t0
    report = {
        "dataset": "wisdm",
        "iterations": args.iterations,
        "strategies": list(config.strategies),
        "classifiers": list(config.classifiers),
        "jobs": args.jobs,
        "mueval_s": round(mueval_s, 2),
        "mueval_with_output_s": None if out_s is None else round(out_s, 2),
        "floor_s": round(floor_s, 2),
        "ratio": round(mueval_s / floor_s, 3),
        "all_mueval_s": [round(t, 2) for t in mueval_runs],
        "all_floor_s": [round(t, 2) for t in floor_runs],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
