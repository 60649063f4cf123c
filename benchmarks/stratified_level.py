"""Benchmark: the level of the exact stratified null against the Beta-Binomial.

Valid users: each user has 80 rows, 16 of each of 5 classes, with fixed scores
N(1.5 c, 0.5) for class c (a model better on some classes: the classes' scores
overlap little). Each of 20 iterations splits the rows as UCM does (half of
each class to test, scikit-learn's stratified ``train_test_split`` through
``mueval.evaluation.row_splits.split_rows``), thresholds at the study rule's rank
and counts the covered test rows. Per user, the p-value of the pooled count
under the exact null of the stratified split
(:mod:`mueval.guarantees.stratified_null`, iterations convolved) and under the
Beta-Binomial (:func:`mueval.guarantees.covered_law.lower_pvalue`). Printed:
the share of users with p at most a, for a = 0.01, 0.05, 0.1, 0.2 (valid: at
most a, up to the Monte Carlo error, about sqrt(a (1 - a) / users)).

Run::

    python benchmarks/stratified_level.py [--users 1200] [--seed 6]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mueval.evaluation.row_splits import split_rows
from mueval.guarantees.covered_law import lower_pvalue, threshold_rank
from mueval.guarantees.stratified_null import pooled_classes, stratified_pmf, stratified_pvalue


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=1200)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args(argv)
    clock = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    y = np.repeat(np.arange(5), 16)
    idx = np.arange(len(y))
    exact, beta = [], []
    for _ in range(args.users):
        scores = rng.normal(loc=1.5 * y, scale=0.5)
        laws, covered, m, n, k = [], 0, [], [], []
        for seed in rng.integers(0, 2**31, args.iterations):
            test, cal = split_rows(idx, y, 0.5, int(seed), what="simulated user")
            rank = threshold_rank(len(cal), 0.05, "study")
            covered += int((scores[test] <= np.sort(scores[cal])[rank - 1]).sum())
            order = pooled_classes(scores[cal], y[cal], scores[test], y[test])
            laws.append(stratified_pmf(order, np.bincount(y[cal], minlength=5), rank))
            m, n, k = [*m, len(test)], [*n, len(cal)], [*k, rank]
        exact.append(stratified_pvalue(covered, laws))
        beta.append(lower_pvalue(covered, m, n, k))
    p_exact, p_beta = np.array(exact), np.array(beta)
    print(
        f"{args.users} valid users, {args.iterations} iterations; "
        f"{time.perf_counter() - clock:.0f} s"
    )
    print("| a | exact stratified null: share p <= a | Beta-Binomial: share p <= a |")
    print("|---|---|---|")
    for a in (0.01, 0.05, 0.1, 0.2):
        se = np.sqrt(a * (1 - a) / args.users)
        print(f"| {a:g} | {(p_exact <= a).mean():.2%} (± {se:.2%}) | {(p_beta <= a).mean():.2%} |")


if __name__ == "__main__":
    main()
