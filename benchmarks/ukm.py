"""Benchmark: UKM (user-clustered calibration) against UCM and UIM, by the
number of labelled calibration rows a new user has.

A synthetic table of users in behaviour groups: every class has one centre in
feature space for every user (as in :func:`mueval.data.synthetic.make_users`),
and each group of users has its own noise scale around those centres, so that
a model trained on the other users is sure of one group's rows and unsure of
another's. A model's scores then differ by group, and UIM's one threshold over
every other user covers the noisy groups too little and the clean ones too
much.

Every run goes through :func:`mueval.evaluate` (Naive Bayes, alpha = 0.05, the
study's threshold rule). For each number ``k`` of the target's own calibration
rows (``--own-rows k``):

- ``ukm``: the target's first ``k`` calibration rows; below ``--min-own`` (20)
  it calibrates on the other users of its cluster (``k = 0``: every other user,
  as UIM), found by ``--assign centroid`` and, for ``0 < k < 20``, by
  ``--assign rank`` (the default);
- ``ucm@k``: the same ``k`` own rows and nothing else (ukm with ``--min-own
  0``); below 20 rows no threshold exists and the only valid answer is the
  full set (coverage 1, set size 4: printed by construction, not run);
- ``ucm``: every own calibration row (half the user's rows), the reference;
- ``uim``: the other users' rows.

Printed per strategy and ``k``: the coverage of each user over every
iteration's test rows, as the worst user and the mean over users, the share of
users below 0.90, and the mean set size. Run::

    python benchmarks/ukm.py [--users-per-group 6] [--rows 120] [--iterations 10] [--seed 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import mueval

#: Noise scale of each behaviour group (rows around the shared class centres).
GROUP_NOISE = (0.6, 1.2, 2.0, 3.0)
OWN_ROWS = (0, 5, 10, 20, 40)
#: The fewest calibration rows a threshold is taken from at alpha = 0.05.
MIN_ROWS = 20


def grouped_users(users_per_group: int, rows: int, seed: int) -> pd.DataFrame:
    """Users in :data:`GROUP_NOISE` groups: 4 classes, 8 features, ``rows`` rows a user."""
    rng = np.random.default_rng(seed)
    n_classes, n_features = 4, 8
    centres = rng.normal(0, 2, size=(n_classes, n_features))
    parts = []
    user = 0
    for noise in GROUP_NOISE:
        for _ in range(users_per_group):
            user += 1
            labels = np.resize(np.arange(n_classes), rows)
            X = centres[labels] + rng.normal(0, noise, size=(rows, n_features))
            part = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
            part.insert(0, "label", [f"c{c}" for c in labels])
            part.insert(0, "userid", user)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _rows(run: mueval.Run, strategy: str, label: str, k: object) -> dict[str, object]:
    users = run.user_coverage.query("strategy == @strategy")
    sizes = run.summary.query("strategy == @strategy and metric == 'setsize'")
    splits = run.splits.query("strategy == @strategy")
    return {
        "strategy": label,
        "own rows": k,
        "worst user": users["coverage"].min(),
        "mean user": users["coverage"].mean(),
        "share of users < 0.90": (users["coverage"] < 0.90).mean(),
        "set size": float(sizes["mean"].iloc[0]),
        "calibration rows": splits["n_cal"].mean(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users-per-group", type=int, default=6)
    parser.add_argument("--rows", type=int, default=120)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    frame = grouped_users(args.users_per_group, args.rows, args.seed)
    common = {"classifiers": "nb", "iterations": args.iterations, "jobs": 1, "progress": False}
    started = time.perf_counter()
    by_strategy: dict[str, list[dict[str, object]]] = {
        "uim": [],
        "ucm": [],
        "ucm@k": [],
        "ukm": [],
        "ukm rank": [],
    }
    for k in OWN_ROWS:
        run = mueval.evaluate(
            frame, strategies="uim,ucm,ukm", own_rows=k, assign="centroid", **common
        )
        if k == OWN_ROWS[0]:
            by_strategy["uim"].append(_rows(run, "uim", "uim", "-"))
            by_strategy["ucm"].append(_rows(run, "ucm", "ucm (all own)", "all"))
        by_strategy["ukm"].append(_rows(run, "ukm", "ukm (centroid)", k))
        if 0 < k < MIN_ROWS:
            ranked = mueval.evaluate(frame, strategies="ukm", own_rows=k, assign="rank", **common)
            by_strategy["ukm rank"].append(_rows(ranked, "ukm", "ukm (rank)", k))
        if k >= MIN_ROWS:
            alone = mueval.evaluate(frame, strategies="ukm", own_rows=k, min_own=0, **common)
            by_strategy["ucm@k"].append(_rows(alone, "ukm", "ucm@k", k))
        else:
            # No threshold exists: the full set, by construction (not run).
            by_strategy["ucm@k"].append(
                {
                    "strategy": "ucm@k (full set)",
                    "own rows": k,
                    "worst user": 1.0,
                    "mean user": 1.0,
                    "share of users < 0.90": 0.0,
                    "set size": 4.0,
                    "calibration rows": k,
                }
            )
    out = pd.DataFrame([row for rows in by_strategy.values() for row in rows])
    n_users = args.users_per_group * len(GROUP_NOISE)
    print(
        f"{n_users} users in {len(GROUP_NOISE)} groups (noise {GROUP_NOISE}), {args.rows} rows "
        f"a user, {args.iterations} iterations, nb, alpha 0.05"
    )
    print(out.to_markdown(index=False, floatfmt=".3f"))
    print(f"seconds: {time.perf_counter() - started:.1f}")


if __name__ == "__main__":
    main()
