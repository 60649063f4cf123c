"""Class-conditional calibration cells: the smallest per task, recorded in the
splits and warned about when below the minimum size."""

from __future__ import annotations

import numpy as np
import pandas as pd

import mueval
from mueval.data.synthetic import make_users
from mueval.data.table import table_from_frame
from mueval.evaluation.records import EvalConfig
from mueval.evaluation.runner import build_splits, run
from mueval.guarantees.run_warnings import calibration_warnings


def test_cell_warning_by_hand() -> None:
    # alpha 0.1: the minimum is 10 rows. UCM: cells of 12 and 7 -> one of two small,
    # smallest 7. UDM: cells of 10 -> no warning. MM: unconditional (NA) -> ignored.
    cal = pd.DataFrame(
        {
            "strategy": ["UCM", "UCM", "UDM", "MM"],
            "classifier": "RF",
            "user": [1, 2, 1, pd.NA],
            "n_cal": [60, 60, 40, 200],
            "n_cal_cell": pd.array([12, 7, 10, pd.NA], dtype="Int64"),
        }
    )
    found = calibration_warnings(cal, alpha=0.1)
    assert [(w.strategy, w.kind, w.severity) for w in found] == [
        ("UCM", "calibration-too-small", "warning")
    ]
    assert "1 of 2 class-conditional calibrations" in found[0].message
    assert "fewer than 10 calibration rows" in found[0].message
    assert "(smallest: 7)" in found[0].message


def test_smallest_cell_is_the_rarest_class_of_each_calibration_set() -> None:
    table = table_from_frame(make_users(5, n_classes=3, rows_per_user=50, seed=3))
    config = EvalConfig(strategies=("udm", "ucm"), classifiers=("nb",), iterations=2, mondrian=True)
    out = run(table.X, table.y, table.users, table.classes, config, progress=False)
    # Independently: the same splits, and the rarest class of each calibration set.
    expected = {}
    for split in build_splits(table.y, table.users, config, table.classes):
        for target in split.served():
            for strategy, cal in target.calibrations.items():
                counts = np.bincount(table.y[cal], minlength=len(table.classes))
                expected[(strategy, split.iteration, target.user)] = int(counts.min())
    got = {(r.strategy, r.iteration, r.user): r.n_cal_cell for r in out.results}
    assert got == expected


def test_unconditional_runs_record_no_cell_and_small_cells_warn() -> None:
    frame = make_users(4, n_classes=4, rows_per_user=60, seed=1)
    plain = mueval.evaluate(
        frame, strategies="ucm", classifiers="nb", iterations=1, diagnostics="none"
    )
    # Without class-conditional calibration the cell columns do not apply: absent.
    assert "n_cal_cell" not in plain.splits.columns
    assert "n_cal_class" not in plain.splits.columns
    # UCM calibrates on half of 60 rows over 4 classes: every cell is below 20.
    mondrian = mueval.evaluate(
        frame,
        strategies="ucm",
        classifiers="nb",
        iterations=1,
        diagnostics="none",
        mondrian=True,
    )
    assert (mondrian.splits["n_cal_cell"] < 20).all()
    kinds = [(w["kind"], w["severity"]) for w in mondrian.warnings]
    assert ("calibration-too-small", "warning") in kinds
