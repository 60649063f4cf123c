"""Differential tests: mueval against the study's own library versions.

A side virtual environment holds MAPIE 0.8.6 and scikit-learn 1.5.2 (built once
and cached by :mod:`tests.reference.sidevenv`); the reference runner there runs
the protocol with ``MapieClassifier(estimator, cv="prefit", method="score")``
as the study did. Every test row, point prediction, prediction set, p-value,
per-user metric and summary cell must agree with mueval's default
(``threshold="study"``). The MAPIE 1.x rule is run against the same reference
to show that the comparison does see a wrong threshold.

The default run compares one iteration; the ``slow`` test compares
``$MUEVAL_REFERENCE_ITERATIONS`` (default 20) iterations, and
``benchmarks/reference_diff.py`` prints the full counts.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from mueval.data.table import Table, load_registered
from tests.conftest import GESTURES_ZIP, WISDM_DIR
from tests.reference import differential, sidevenv

STRATEGIES = ("mm", "udm", "uim", "ucm")
CLASSIFIERS = ("nb", "rf", "svm", "knn")


@pytest.fixture(scope="session")
def reference_python() -> Path:
    """The side environment's interpreter (built on first use)."""
    try:
        return sidevenv.ensure()
    except sidevenv.SideVenvError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(f"reference environment unavailable: {exc}")


def _table(name: str, tmp_path_factory: pytest.TempPathFactory) -> Table:
    source = {"wisdm": WISDM_DIR, "gestures": GESTURES_ZIP.parent}[name]
    if not source.is_dir():
        pytest.skip(f"official {name} files not found in {source}")
    home = tmp_path_factory.mktemp(f"{name}_home")
    return load_registered(name, data_home=home, manual_dir=source)


def _compare(table, python, folder, iterations, strategies, threshold="study"):
    npz = differential.export_table(table, folder / "table.npz")
    ref = differential.run_reference(
        python,
        npz,
        folder / "reference.npz",
        iterations=iterations,
        strategies=strategies,
        classifiers=CLASSIFIERS,
    )
    results, splits, summary = differential.run_ours(
        table,
        iterations=iterations,
        strategies=strategies,
        classifiers=CLASSIFIERS,
        threshold=threshold,
        jobs=2,
    )
    return ref, differential.compare(table, ref, results, splits, summary), (results, splits)


def _assert_agree(diff: differential.Differences, strategies=STRATEGIES) -> None:
    failures = diff.failures()
    assert not failures, f"{len(failures)} differences, first ones:\n" + "\n".join(failures[:20])
    # Every strategy was compared, row by row.
    assert set(diff.compared_rows_by_strategy) == set(strategies)
    assert all(n > 0 for n in diff.compared_rows_by_strategy.values())


@pytest.mark.parametrize("name", ["wisdm", "gestures"])
def test_one_iteration_equals_mapie_086_reference(
    name: str, reference_python: Path, tmp_path: Path, tmp_path_factory
) -> None:
    table = _table(name, tmp_path_factory)
    ref, diff, _ = _compare(table, reference_python, tmp_path, 1, STRATEGIES)
    assert ref.versions["mapie"] == "0.8.6"
    assert ref.versions["scikit-learn"] == "1.5.2"
    _assert_agree(diff)
    assert sum(diff.set_rows_by_strategy.values()) == 0

    # The same reference, against MAPIE 1.x's rule: the comparison must see it.
    results, splits, summary = differential.run_ours(
        table,
        iterations=1,
        strategies=STRATEGIES,
        classifiers=CLASSIFIERS,
        threshold="mapie",
        jobs=2,
    )
    mapie = differential.compare(table, ref, results, splits, summary)
    assert mapie.set_rows_by_strategy["mm"] == 0  # the two rules agree on MM
    assert mapie.set_rows_by_strategy["udm"] > 0
    assert mapie.set_rows_by_strategy["ucm"] > 0
    assert any("thresholds ours" in line for line in mapie.sets)


def _table_with_a_missing_class() -> Table:
    """Five users, four classes; user 5 never does class 'd', so the models trained
    on the others predict a label absent from that user's ground truth."""
    rng = np.random.default_rng(11)
    rows_X, rows_y, rows_u = [], [], []
    centres = rng.normal(0, 1.0, size=(4, 6))
    for user in range(1, 6):
        shift = rng.normal(0, 0.6, size=6)
        classes = [0, 1, 2] if user == 5 else [0, 1, 2, 3]
        per_class = 20 if user == 5 else 15
        for c in classes:
            rows_X.append(centres[c] + shift + rng.normal(0, 0.9, size=(per_class, 6)))
            rows_y += [c] * per_class
            rows_u += [user] * per_class
    X = np.vstack(rows_X)
    return Table(
        X=X,
        y=np.asarray(rows_y),
        users=np.asarray(rows_u),
        classes=["a", "b", "c", "d"],
        features=[f"f{i}" for i in range(6)],
        info={"name": "synthetic"},
    )


def test_absent_class_handling_equals_the_reference(reference_python: Path, tmp_path: Path):
    # caret drops a row predicted as a label absent from the user's ground truth;
    # the reference runner implements that on its own, and both must agree.
    table = _table_with_a_missing_class()
    strategies = ("mm", "uim", "ucm")  # udm would train user 5 without class 'd'
    _, diff, (results, _) = _compare(table, reference_python, tmp_path, 2, strategies)
    _assert_agree(diff, strategies)
    absent = [
        r for r in results if r.user == 5 and r.strategy in ("uim", "ucm") and (r.y_pred == 3).any()
    ]
    assert absent, "no prediction of the absent class: the case was not exercised"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wisdm", "gestures"])
def test_many_iterations_equal_mapie_086_reference(
    name: str, reference_python: Path, tmp_path: Path, tmp_path_factory
) -> None:
    iterations = int(os.environ.get("MUEVAL_REFERENCE_ITERATIONS", "20"))
    table = _table(name, tmp_path_factory)
    _, diff, _ = _compare(table, reference_python, tmp_path, iterations, STRATEGIES)
    _assert_agree(diff)
    assert sum(diff.set_rows_by_strategy.values()) == 0
