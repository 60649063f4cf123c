"""Benchmark: start-up time of the command lines.

Each command is run in a fresh interpreter several times; the median wall time
of the subprocess is printed, beside ``python -c pass``, the floor no command
can beat. The commands run through ``python -m`` with this interpreter, so the
figures do not depend on which ``mueval`` is first on PATH.

Run::

    python benchmarks/startup.py [--repeat 7]

Target (issue 12): under 0.5 s each for ``mueval --help``, ``mudata --help``
and ``mudata list``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "mueval --help": ["-m", "mueval.cli.main", "--help"],
    "mudata --help": ["-m", "mudata.cli", "--help"],
    "mudata list": ["-m", "mudata.cli", "list"],
    "mueval evaluate --help": ["-m", "mueval.cli.main", "evaluate", "--help"],
}


def wall_time(args: list[str]) -> float:
    """Seconds from start to exit of ``python args`` (output discarded)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per command")
    options = parser.parse_args()
    for name, args in COMMANDS.items():
        wall_time(args)  # warm the file cache (and the .pyc files) first
        times = [wall_time(args) for _ in range(options.repeat)]
        print(
            f"{name:<24} median {statistics.median(times):.3f} s  "
            f"(min {min(times):.3f}, max {max(times):.3f}, {options.repeat} runs)",
            flush=True,
        )


if __name__ == "__main__":
    main()
