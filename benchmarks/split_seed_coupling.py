"""Benchmark: does the protocol's seeding tie a UCM user's split to its model?

UIM/UCM seed the split of the other users' rows (which picks the model's
training rows) and the stratified split of the target's own rows with the same
seed (``mueval.evaluation.splits.user_independent_splits``). The per-user null
(:mod:`mueval.guarantees.stratified_null`) takes the target's split as uniform
within class *and independent of the model*. For each target user of a
synthetic table (``benchmarks/user_power.py``'s, user 1 shifted by 1 SD) and
each of the 20 iterations, this fits the iteration's model (min-max scaling and
Gaussian Naive Bayes, as the built-in ``nb``), counts the target's covered test
rows under the protocol's split, and compares it with the same model's counts
under ``--draws`` splits of the target's rows by independent seeds. Printed per
user: the sum over iterations of (protocol count - mean of the independent
counts), and the sum of the standardised differences over sqrt(20), about
N(0, 1) when the protocol's split is independent of the model.

Run::

    python benchmarks/split_seed_coupling.py [--tables 19,3] [--draws 60]
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import numpy as np
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import MinMaxScaler

from mueval.evaluation.splits import split_rows, user_independent_splits
from mueval.guarantees.covered_law import threshold_rank


def _power_benchmark():
    path = Path(__file__).with_name("user_power.py")
    spec = importlib.util.spec_from_file_location("user_power", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", default="19,3")
    parser.add_argument("--draws", type=int, default=60)
    args = parser.parse_args(argv)
    bench = _power_benchmark()
    print("| table seed | user | sum of differences | standardised sum / sqrt(20) |")
    print("|---|---|---|---|")
    for rep in (int(t) for t in args.tables.split(",")):
        frame = bench.shifted_table(1.0, users=8, rows=160, classes=6, features=8, seed=rep)
        X = frame[[c for c in frame.columns if c.startswith("f")]].to_numpy()
        y = frame["label"].str[1:].astype(int).to_numpy()
        users = frame["userid"].to_numpy()
        rng = np.random.default_rng(0)
        for user in range(2, 9):
            own = np.flatnonzero(users == user)
            diffs, zs = [], []
            for it, seed in enumerate(range(101, 121)):
                split = next(
                    s
                    for s in user_independent_splits(y, users, it + 1, seed, ["ucm"])
                    if s.user == user
                )
                scaler = MinMaxScaler().fit(X[split.train])
                model = GaussianNB().fit(scaler.transform(X[split.train]), y[split.train])
                proba = model.predict_proba(scaler.transform(X))
                scores = 1 - proba[np.arange(len(y)), y]
                k = threshold_rank(len(split.calibrations["ucm"]), 0.05, "study")

                def covered(test, cal, s=scores, k=k):
                    return int((s[test] <= np.sort(s[cal])[k - 1]).sum())

                mine = covered(split.test, split.calibrations["ucm"])
                others = np.array(
                    [
                        covered(*split_rows(own, y, 0.5, int(s), what="draw"))
                        for s in rng.integers(0, 2**31, args.draws)
                    ]
                )
                diffs.append(mine - others.mean())
                zs.append((mine - others.mean()) / others.std())
            print(
                f"| {rep} | {user} | {sum(diffs):.1f} | {sum(zs) / np.sqrt(20):.2f} |", flush=True
            )


if __name__ == "__main__":
    main()
