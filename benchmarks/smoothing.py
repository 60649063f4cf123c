"""Benchmark: the moving average of a long span, direct sums against the exact path.

Smooths ``--samples`` samples (6-decimal values, as the releases write them)
with a moving average of ``--span`` samples, twice: with
:func:`mudata.building.windowing.running_means` as it runs (spans above
``DIRECT_MAX_SPAN`` take the exact path, linear in the length), and with the
direct sums forced for every span (the only method before; ``2 * span``
passes over the samples). Prints both times, the load average, and how many
means differ and by how much.

Run::

    python benchmarks/smoothing.py [--samples 200000] [--span 100000] [--skip-direct]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from mudata.building import windowing


def timed(values: np.ndarray, span: int) -> tuple[np.ndarray, float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    means = windowing.running_means(values, span)
    return means, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--span", type=int, default=100_000)
    parser.add_argument("--skip-direct", action="store_true", help="time the running path only")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    values = np.round(rng.normal(0, 1, args.samples), 6)
    print(
        f"{args.samples:,} samples, span {args.span:,}, "
        f"load average {os.getloadavg()[0]:.2f} (2 cores shared)"
    )
    means, wall, cpu = timed(values, args.span)
    path = "exact" if args.span > windowing.DIRECT_MAX_SPAN else "direct"
    print(f"running_means ({path} path): {wall:8.2f} s wall {cpu:8.2f} s CPU")
    if args.skip_direct:
        return
    # The direct sums for every span: the method before the exact path existed.
    limit = windowing.DIRECT_MAX_SPAN
    windowing.DIRECT_MAX_SPAN = max(limit, args.span)
    try:
        direct, wall, cpu = timed(values, args.span)
    finally:
        windowing.DIRECT_MAX_SPAN = limit
    print(f"direct sums (before):       {wall:8.2f} s wall {cpu:8.2f} s CPU")
    differ = means != direct
    ulps = np.abs(means - direct)[differ] / np.spacing(np.abs(means[differ]))
    print(
        f"means differing: {int(differ.sum()):,} of {means.size:,}"
        f" (largest gap {ulps.max() if ulps.size else 0:.0f} ulp)"
    )


if __name__ == "__main__":
    main()
