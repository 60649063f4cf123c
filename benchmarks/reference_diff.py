"""The full differential comparison with the MAPIE 0.8.6 reference, and what the
MAPIE 1.x threshold rule changes.

For each dataset (WISDM and Smartwatch Gestures, from the official files in
``../shared/data``), runs the reference protocol in the side environment of
``tests/reference`` and mueval under both threshold rules, all four strategies
and classifiers, then prints:

- the rows whose prediction sets differ from the reference, per strategy, for
  ``--threshold study`` (the default; the goal is 0) and ``--threshold mapie``;
- every other disagreement with the reference under the default;
- coverage and mean set size per strategy and classifier under both rules.

Usage::

    python benchmarks/reference_diff.py [--iterations 20] [--datasets wisdm,gestures] [--jobs 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.reference import differential, sidevenv  # noqa: E402

from mueval.data.table import load_registered  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
SOURCES = {"wisdm": SHARED / "wisdm", "gestures": SHARED / "gestures"}
STRATEGIES = ("mm", "udm", "uim", "ucm")
CLASSIFIERS = ("nb", "rf", "svm", "knn")


def _rule_table(summaries: dict) -> list[str]:
    lines = [
        f"{'strategy':8} {'clf':4} {'coverage study':>15} {'coverage mapie':>15} "
        f"{'setsize study':>14} {'setsize mapie':>14}"
    ]
    for strategy in STRATEGIES:
        for clf in CLASSIFIERS:
            cells = []
            for metric in ("coverage", "setsize"):
                for rule in ("study", "mapie"):
                    s = summaries[rule]
                    row = s[(s.strategy == strategy) & (s.classifier == clf) & (s.metric == metric)]
                    cells.append(float(row["mean"].iloc[0]))
            lines.append(
                f"{strategy:8} {clf:4} {cells[0]:15.4f} {cells[1]:15.4f} "
                f"{cells[2]:14.3f} {cells[3]:14.3f}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--datasets", default="wisdm,gestures")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    python = sidevenv.ensure()
    for name in args.datasets.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            table = load_registered(name, data_home=folder / "home", manual_dir=SOURCES[name])
            npz = differential.export_table(table, folder / "table.npz")
            t0 = time.perf_counter()
            ref = differential.run_reference(
                python,
                npz,
                folder / "ref.npz",
                iterations=args.iterations,
                strategies=STRATEGIES,
                classifiers=CLASSIFIERS,
                timeout=24 * 3600,
            )
            t_ref = time.perf_counter() - t0
            summaries, diffs, times = {}, {}, {}
            for rule in ("study", "mapie"):
                t0 = time.perf_counter()
                results, splits, summary = differential.run_ours(
                    table,
                    iterations=args.iterations,
                    strategies=STRATEGIES,
                    classifiers=CLASSIFIERS,
                    threshold=rule,
                    jobs=args.jobs,
                )
                times[rule] = time.perf_counter() - t0
                summaries[rule] = summary
                diffs[rule] = differential.compare(table, ref, results, splits, summary)
        print(f"\n== {name}: {args.iterations} iterations, reference {ref.versions} ==")
        print(
            f"time: reference {t_ref:.0f} s, mueval study {times['study']:.0f} s, "
            f"mueval mapie {times['mapie']:.0f} s"
        )
        for rule in ("study", "mapie"):
            d = diffs[rule]
            counts = ", ".join(
                f"{s} {d.set_rows_by_strategy.get(s, 0)}/{d.compared_rows_by_strategy.get(s, 0)}"
                for s in STRATEGIES
            )
            print(f"rows whose sets differ from the reference, --threshold {rule}: {counts}")
        default = diffs["study"]
        print(
            "other differences under the default: "
            f"rows {len(default.rows)}, predictions {len(default.predictions)}, "
            f"probabilities {len(default.probabilities)}, p-values {len(default.pvalues)}, "
            f"per-user metrics {len(default.metrics)}, summary cells {len(default.summary)}, "
            f"sets or p-values at a last-bit tie {len(default.ties)}, "
            f"metric cells those ties excuse {len(default.excused_metrics)}"
        )
        for line in default.failures()[:10]:
            print("  " + line)
        print("\n".join(_rule_table(summaries)))


if __name__ == "__main__":
    main()
