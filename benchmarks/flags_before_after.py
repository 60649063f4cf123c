"""Users flagged "below target" in run folders: the old interval rule against the exact test.

Reads each run folder (a folder written before the exact per-user test gets its
verdicts recomputed at the level and correction given here) and prints, per
strategy and classifier, the users, those the old rule flagged (the 95 %
Clopper-Pearson interval of the observed rate entirely below 1 - alpha: a
one-sided binomial test at 2.5 %, rows treated as independent, no correction)
and those the exact per-user test flags (``mueval.guarantees.user_level``), with
a total line per run.

    python benchmarks/flags_before_after.py runs/wisdm runs/gestures
    python benchmarks/flags_before_after.py runs/wisdm --user-level 0.05 --user-correction bh

Without ``--user-level``/``--user-correction`` the run's own settings are used
(those of ``run.json``, or 0.05 and Holm for older folders).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from mueval.guarantees.adjustment import verdict_label
from mueval.guarantees.run_verdicts import user_coverage_table
from mueval.guarantees.verdict_settings import verdict_settings
from mueval.names import USER_CORRECTIONS
from mueval.runfolder import read_run_folder


def flags(folder: Path, level: float | None, correction: str | None) -> tuple[pd.DataFrame, str]:
    """Per (strategy, classifier): users, flagged before (interval) and after (exact test)."""
    run = read_run_folder(folder)
    config = dict(run.config)
    if level is not None:
        config["user_level"] = level
    if correction is not None:
        config["user_correction"] = correction
    table = run.user_coverage
    if level is not None or correction is not None:
        table = user_coverage_table(
            run.predictions, run.splits, alpha=run.alpha, config=config, classes=run.classes
        )
    table = table.assign(
        before=table["high"] < 1 - run.alpha,
        after=table["below"].astype("boolean").fillna(False).astype(bool),
        judged=table["below"].notna(),
    )
    counts = (
        table.groupby(["strategy", "classifier"], sort=False)
        .agg(
            users=("user", "size"),
            judged=("judged", "sum"),
            before=("before", "sum"),
            after=("after", "sum"),
        )
        .reset_index()
    )
    settings = verdict_settings(config)
    return counts, verdict_label(settings["level"], settings["correction"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders")
    parser.add_argument("--user-level", type=float, default=None)
    parser.add_argument("--user-correction", choices=USER_CORRECTIONS, default=None)
    args = parser.parse_args()
    for folder in args.runs:
        counts, label = flags(folder, args.user_level, args.user_correction)
        print(f"{folder}: before = interval below 1 - alpha; after = {label}")
        print(counts.to_string(index=False))
        total = counts[["users", "judged", "before", "after"]].sum()
        print(
            f"total: {total['users']} users ({total['judged']} with a verdict), "
            f"{total['before']} flagged before, {total['after']} after\n"
        )


if __name__ == "__main__":
    main()
