"""Benchmark: does the protocol's seeding tie a UCM user's split to its model?

UIM/UCM seed the split of the other users' rows (which picks the model's
training rows) and the stratified split of the target's own rows with the same
seed (``mueval.evaluation.leave_user_out.user_independent_splits`` under
``split_seeds="protocol"``). The per-user null
(:mod:`mueval.guarantees.stratified_null`) takes the target's split as uniform
within class *and independent of the model*.

Per user (default mode)
-----------------------
For each target user of a synthetic table (``benchmarks/user_power.py``'s,
user 1 shifted by 1 SD) and each of the 20 iterations, this fits the
iteration's model (min-max scaling and Gaussian Naive Bayes, as the built-in
``nb``) and counts the target's covered test rows. Printed per user, each as
the sum over iterations of the standardised difference from the same model's
mean count under ``--draws`` splits of the target's rows by independent seeds,
over sqrt(20) (about N(0, 1) when the split in question is independent of the
model and of the user's rows):

- ``protocol``: the iteration's own model and own target split (the run's);
- ``crossed``: each iteration's model with the target split of another
  iteration (iteration ``i + d`` modulo 20, every split used once), averaged
  over the 19 shifts ``d``: the protocol's splits, untied from the model they
  were seeded with;
- ``own split, independent model``: the iteration's target split with a model
  trained on the other users' rows split by an independent seed.

If the shared seed tied the split to the model, ``crossed`` and ``independent
model`` would be typical where ``protocol`` is not. Also printed: the variance
of the count summed over the 20 iterations when the user's rows are permuted
within class under the protocol's fixed splits (``--perms`` times), over its
variance under independent splits: the convolution of the iterations' nulls
needs it at most about 1. ``--rng`` seeds the reference splits and the
independent models (0 by default), ``--users`` picks the target users.

Runs (``--runs N``)
-------------------
``N`` null tables (``make_users``: 8 users of 160 rows, 6 classes, 8 features,
no drift, no imbalance: every user valid) evaluated by ``mueval.evaluate``
with UCM and ``nb`` (20 iterations, alpha 0.05, Holm at 0.05 over the run's 8
users) under ``split_seeds="protocol"`` and ``"independent"``, on the same
tables. Printed per setting: the share of runs flagging any user (at most
5 % under Holm), the share of users flagged, and the shares of raw p-values at
most 0.05 and 0.01.

Run::

    python benchmarks/split_seed_coupling.py [--tables 19,3] [--draws 60] [--perms 300]
    python benchmarks/split_seed_coupling.py --tables 19 --users 7 --perms 0 --rng 101
    python benchmarks/split_seed_coupling.py --runs 200 [--first-table 1000] [--out runs.csv]
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import MinMaxScaler

import mueval
from mueval.data.synthetic import make_users
from mueval.evaluation.leave_user_out import user_independent_splits
from mueval.evaluation.row_splits import split_rows
from mueval.guarantees.covered_law import threshold_rank

ITERATIONS = 20
SEEDS = range(101, 101 + ITERATIONS)


def _power_benchmark():
    path = Path(__file__).with_name("user_power.py")
    spec = importlib.util.spec_from_file_location("user_power", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scores(X, y, train):
    """Conformity scores (1 - probability of the true class) of every row under
    the ``nb`` model fitted on ``train``."""
    scaler = MinMaxScaler().fit(X[train])
    model = GaussianNB().fit(scaler.transform(X[train]), y[train])
    proba = model.predict_proba(scaler.transform(X))
    return 1 - proba[np.arange(len(y)), y]


def _covered(scores, test, cal, k):
    return int((scores[test] <= np.sort(scores[cal])[k - 1]).sum())


def _within_class(own, labels, rng):
    """A permutation of ``own`` within each class (row ``own[i]`` takes the data of the result's ``i``-th)."""
    out = own.copy()
    for c in np.unique(labels):
        pos = np.flatnonzero(labels == c)
        out[pos] = own[rng.permutation(pos)]
    return out


def per_user(args: argparse.Namespace) -> None:
    """The per-user table (default mode)."""
    bench = _power_benchmark()
    print(
        "| table seed | user | protocol | crossed | own split, independent model | "
        "variance ratio, fixed splits |"
    )
    print("|---|---|---|---|---|---|")
    for rep in (int(t) for t in args.tables.split(",")):
        frame = bench.shifted_table(1.0, users=8, rows=160, classes=6, features=8, seed=rep)
        X = frame[[c for c in frame.columns if c.startswith("f")]].to_numpy()
        y = frame["label"].str[1:].astype(int).to_numpy()
        users = frame["userid"].to_numpy()
        rng = np.random.default_rng(args.rng)
        for user in (int(u) for u in args.users.split(",")):
            own = np.flatnonzero(users == user)
            others = np.flatnonzero(users != user)
            models, halves = [], []
            for it, seed in enumerate(SEEDS):
                split = next(
                    s
                    for s in user_independent_splits(y, users, it + 1, seed, ["ucm"])
                    if s.user == user
                )
                models.append(_scores(X, y, split.train))
                halves.append((split.test, split.calibrations["ucm"]))
            k = threshold_rank(len(halves[0][1]), 0.05, "study")
            z = {"protocol": 0.0, "crossed": 0.0, "independent": 0.0}
            for it in range(ITERATIONS):
                draws = [
                    split_rows(own, y, 0.5, int(s), what="draw")
                    for s in rng.integers(0, 2**31, args.draws)
                ]
                counts = np.array([_covered(models[it], *d, k) for d in draws])
                mean, sd = counts.mean(), counts.std()
                z["protocol"] += (_covered(models[it], *halves[it], k) - mean) / sd
                # Model ``it`` with the split of iteration ``it + d`` (each shift d a
                # pairing of every model with another iteration's split, each split
                # used once), the z averaged over the 19 shifts.
                crossed = [
                    (_covered(models[it], *halves[(it + d) % ITERATIONS], k) - mean) / sd
                    for d in range(1, ITERATIONS)
                ]
                z["crossed"] += float(np.mean(crossed))
                train, _ = split_rows(others, y, 0.6, int(rng.integers(0, 2**31)), what="o")
                free = _scores(X, y, train)
                free_counts = np.array([_covered(free, *d, k) for d in draws])
                z["independent"] += (
                    _covered(free, *halves[it], k) - free_counts.mean()
                ) / free_counts.std()
            fixed, free_sums = [], []
            for _ in range(args.perms):
                remap = np.arange(len(y))
                remap[own] = _within_class(own, y[own], rng)
                fixed.append(
                    sum(_covered(models[i][remap], *halves[i], k) for i in range(ITERATIONS))
                )
                free_sums.append(
                    sum(
                        _covered(models[i], *split_rows(own, y, 0.5, int(s), what="d"), k)
                        for i, s in enumerate(rng.integers(0, 2**31, ITERATIONS))
                    )
                )
            ratio = np.var(fixed) / np.var(free_sums) if args.perms else float("nan")
            root = np.sqrt(ITERATIONS)
            print(
                f"| {rep} | {user} | {z['protocol'] / root:.2f} | {z['crossed'] / root:.2f} "
                f"| {z['independent'] / root:.2f} | {ratio:.2f} |",
                flush=True,
            )


def null_runs(args: argparse.Namespace) -> None:
    """``--runs``: the false-flag shares of UCM through ``mueval.evaluate``.

    Each table's verdicts are appended to ``--out`` as it finishes (a second
    call with the same ``--out`` skips the tables already there), and the
    shares are printed from every table in it.
    """
    out = Path(args.out) if args.out else None
    done = set()
    if out is not None and out.exists():
        done = set(pd.read_csv(out)["rep"].unique().tolist())
    frames = [] if out is None or not out.exists() else [pd.read_csv(out)]
    t0 = time.process_time()
    for rep in range(args.first_table, args.first_table + args.runs):
        if rep in done:
            continue
        frame = make_users(
            8, n_classes=6, rows_per_user=160, n_features=8, drift=0.0, imbalance=0.0, seed=rep
        )
        rows = []
        for setting in ("protocol", "independent"):
            run = mueval.evaluate(
                frame,
                strategies="ucm",
                classifiers="nb",
                iterations=ITERATIONS,
                jobs=1,
                progress=False,
                split_seeds=setting,
                diagnostics="none",
            )
            if run.config["split_seeds"] != setting:
                raise RuntimeError(f"run.json records {run.config['split_seeds']!r}")
            table = run.user_coverage[["user", "p_value", "below"]]
            rows.append(table.assign(rep=rep, setting=setting))
        part = pd.concat(rows, ignore_index=True)
        frames.append(part)
        if out is not None:
            part.to_csv(out, mode="a", header=not out.exists(), index=False)
    print(f"{time.process_time() - t0:.0f} CPU s for the tables not cached\n")
    summarise(pd.concat(frames, ignore_index=True))


def summarise(runs: pd.DataFrame) -> None:
    """The table of docs/per-user-guarantees.md, one row per setting."""
    print(
        "| split seeds | runs | runs with any flag | users flagged | raw p <= 0.05 | raw p <= 0.01 |"
    )
    print("|---|---|---|---|---|---|")
    for setting, part in runs.groupby("setting", sort=False):
        below = part["below"].astype(str).str.lower().eq("true")
        anyflag = below.groupby(part["rep"]).any()
        n = len(anyflag)
        share = anyflag.mean()
        se = np.sqrt(share * (1 - share) / n)
        print(
            f"| {setting} | {n} | {int(anyflag.sum())} = {share:.1%} (± {se:.1%}) | "
            f"{int(below.sum())} of {len(part)} = {below.mean():.2%} | "
            f"{(part['p_value'] <= 0.05).mean():.1%} | {(part['p_value'] <= 0.01).mean():.1%} |"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", default="19,3")
    parser.add_argument("--draws", type=int, default=60)
    parser.add_argument("--perms", type=int, default=300)
    parser.add_argument("--users", default="2,3,4,5,6,7,8", help="target users (not 1, shifted)")
    parser.add_argument("--rng", type=int, default=0, help="seed of the reference draws and models")
    parser.add_argument("--runs", type=int, default=0, help="null runs per setting")
    parser.add_argument("--first-table", type=int, default=1000, help="--runs: first table seed")
    parser.add_argument("--out", default=None, help="--runs: CSV of every user's verdict (resumed)")
    args = parser.parse_args(argv)
    if args.runs or args.out:
        # --runs 0 --out CSV: the table from the tables already in CSV.
        null_runs(args)
    else:
        per_user(args)


if __name__ == "__main__":
    main()
