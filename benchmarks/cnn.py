"""``-c cnn --input windows`` on a real release: weighted F1, coverage and time per strategy.

The benchmark card (``../shared/seeds/har-weighted-f1-eval.txt``, Tang et al.
2020) asks for the weighted F1 averaged over 5 runs: each strategy is evaluated
here over ``--iterations`` (default 5) iterations, each with its own seed (its
own splits, initial weights and batch order), with split conformal sets at
``alpha`` 0.05. The data are the real MotionSense release of participants 1-4
(``../shared/data/releases/motionsense_sub1-4.tar.gz``: the members of the
official ``A_DeviceMotion_data.zip``), built by the built-in ``motionsense``
entry in a temporary data home: 1,594 windows of 150 samples x 6 channels.

For each strategy it prints the weighted F1 (mean and SD over the iterations,
in %), the coverage (mean and SD) and the time per iteration (wall time of the
strategy's run divided by the iterations; the windows are loaded before the
clock starts)::

    python benchmarks/cnn.py                              # 5 iterations, 10 epochs
    python benchmarks/cnn.py --iterations 1 --epochs 1    # a quick look

It needs the extra ``mueval[deep]`` (torch, skorch).
"""

from __future__ import annotations

import argparse
import re
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT.parent / "shared" / "data" / "releases" / "motionsense_sub1-4.tar.gz"
MEMBER = re.compile(r"A_DeviceMotion_data/[a-z]+_\d+/sub_(\d+)\.csv")
STRATEGIES = ("mm", "udm", "uim", "ucm")


def release_zip(release: Path, folder: Path, users: set[int] | None = None) -> Path:
    """``folder/A_DeviceMotion_data.zip`` from the release's members (of ``users``, or all)."""
    target = folder / "A_DeviceMotion_data.zip"
    with tarfile.open(release, "r:gz") as tar, zipfile.ZipFile(target, "w") as out:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            match = MEMBER.fullmatch(member.name)
            if member.isfile() and match and (users is None or int(match[1]) in users):
                handle = tar.extractfile(member)
                assert handle is not None  # a regular file always has one
                out.writestr(member.name, handle.read())
    return target


def run(
    release: Path,
    *,
    iterations: int,
    epochs: int,
    strategies: tuple[str, ...] = STRATEGIES,
    users: set[int] | None = None,
    jobs: int = 1,
    out: Path | None = None,
) -> list[dict[str, float | str]]:
    """One row per strategy: weighted F1 and coverage (mean, SD), seconds per iteration."""
    # Here, not at the top: `--help` answers without loading the libraries.
    import mudata
    import mueval

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        source = {
            "data_home": Path(tmp) / "home",
            "manual_dir": Path(tmp) / "release",
            "allow_unverified": True,  # the entry pins no hash; the release is the shared one
        }
        source["manual_dir"].mkdir()
        release_zip(release, source["manual_dir"], users)
        windows = mudata.load("motionsense", windows=True, **source)
        print(
            f"motionsense ({release.name}): {windows.data.shape[0]} windows of "
            f"{windows.data.shape[1]} samples x {windows.data.shape[2]} channels, "
            f"{windows.groups.nunique()} users; cnn max_epochs={epochs}, {iterations} "
            f"iteration(s), jobs={jobs}",
            flush=True,
        )
        for strategy in strategies:
            start = time.perf_counter()
            result = mueval.evaluate(
                "motionsense",
                strategies=strategy,
                classifiers="cnn",
                classifier_params={"max_epochs": epochs},
                iterations=iterations,
                input="windows",
                jobs=jobs,
                progress=False,
                out=None if out is None else out / strategy,
                overwrite=True,
                **source,
            )
            elapsed = time.perf_counter() - start
            summary = result.summary.set_index("metric")
            f1, coverage = summary.loc["weighted_F1"], summary.loc["coverage"]
            rows.append(
                {
                    "strategy": strategy,
                    "weighted_f1": 100 * float(f1["mean"]),
                    "weighted_f1_sd": 100 * float(f1["sd"]),
                    "coverage": float(coverage["mean"]),
                    "coverage_sd": float(coverage["sd"]),
                    "s_per_iteration": elapsed / iterations,
                }
            )
            print(
                f"{strategy:>4}  weighted F1 {rows[-1]['weighted_f1']:6.2f} % "
                f"(SD {rows[-1]['weighted_f1_sd']:.2f})  coverage {rows[-1]['coverage']:.4f} "
                f"(SD {rows[-1]['coverage_sd']:.4f})  {rows[-1]['s_per_iteration']:.1f} s/iteration",
                flush=True,
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=RELEASE)
    parser.add_argument("--iterations", type=int, default=5, help="runs averaged (the card: 5)")
    parser.add_argument("--epochs", type=int, default=10, help="the CNN's max_epochs")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    if not args.release.is_file():
        print(f"the MotionSense release is not at {args.release}", file=sys.stderr)
        return 1
    run(
        args.release,
        iterations=args.iterations,
        epochs=args.epochs,
        strategies=tuple(args.strategies.split(",")),
        jobs=args.jobs,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
