"""``-c cnn`` of the extra ``mueval[deep]`` (issue 29, item 6).

The network is trained for real (torch on the CPU); the end-to-end tests run it
on windows of the real MotionSense release (participants 1-3, one trial of
each activity: :mod:`tests.motionsense_release`).
"""

from __future__ import annotations

import importlib.util
import pickle
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.base import clone

import mueval
from mueval.cli.main import main
from mueval.errors import UsageError
from mueval.evaluation import estimators
from mueval.evaluation.cnn import CNNClassifier
from mueval.evaluation.estimators import seeded_clone, user_models
from tests.conftest import PROJECT_ROOT
from tests.motionsense_release import RELEASE, release_zip


def _windows(seed: int = 0, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Three classes of 3-channel windows told apart by a sine's frequency."""
    rng = np.random.default_rng(seed)
    y = np.repeat(["a", "b", "c"], n // 3)
    t = np.arange(32)
    freq = {"a": 1.0, "b": 3.0, "c": 6.0}
    X = np.stack(
        [np.sin(2 * np.pi * freq[c] * t / 32)[:, None] * [1.0, 0.5, -1.0] for c in y]
    ) + rng.normal(0, 0.2, (n, 32, 3))
    return X.astype(np.float32), y


def test_the_network_learns_gives_softmax_rows_and_repeats_with_its_seed() -> None:
    X, y = _windows()
    model = CNNClassifier(max_epochs=6, lr=1e-2, random_state=3).fit(X, y)
    proba = model.predict_proba(X)
    assert proba.shape == (len(y), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    assert list(model.classes_) == ["a", "b", "c"]
    assert (model.predict(X) == y).mean() > 0.9  # separable classes are learnt
    again = CNNClassifier(max_epochs=6, lr=1e-2, random_state=3).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(again, proba)
    other = CNNClassifier(max_epochs=6, lr=1e-2, random_state=4).fit(X, y).predict_proba(X)
    assert not np.array_equal(other, proba)


def test_it_clones_pickles_and_takes_the_iteration_seed() -> None:
    model = CNNClassifier(max_epochs=2)
    assert seeded_clone(model, 107).random_state == 107
    assert clone(model).get_params() == model.get_params()
    X, y = _windows()
    fitted = model.fit(X, y)
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict_proba(X), fitted.predict_proba(X))


def test_feature_rows_are_refused_with_the_option_to_use() -> None:
    X, y = _windows()
    with pytest.raises(ValueError, match=r"shape \(n, T, C\).*--input windows"):
        CNNClassifier().fit(X.reshape(len(y), -1), y)
    names, models = user_models("cnn")
    assert names == ("cnn",) and isinstance(models[0].estimator, CNNClassifier)
    with pytest.raises(UsageError, match="cnn takes windows of samples"):
        mueval.evaluate("demo", classifiers="cnn", iterations=1)


def test_a_missing_extra_names_it_and_how_to_install_it(monkeypatch) -> None:
    monkeypatch.setitem(
        estimators.OPTIONAL_MODELS,
        "cnn",
        ("mueval.evaluation.cnn:CNNClassifier", "deep", ("torch", "no_such_package_29")),
    )
    with pytest.raises(UsageError, match=r"\[deep\].*no_such_package_29.*mudata-mueval\[deep\]"):
        user_models("cnn")


def test_the_deep_extra_pins_torch_and_ci_installs_it() -> None:
    text = (PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'deep = ["torch==2.13.0", "skorch>=1.4,<2"]' in text
    ci = (PROJECT_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert '".[test,deep]"' in ci
    lock = (PROJECT_ROOT / "requirements" / "ci.txt").read_text(encoding="utf-8").split()
    assert "torch==2.13.0" in lock and any(p.startswith("skorch==1.4") for p in lock)
    assert importlib.util.find_spec("torch") and importlib.util.find_spec("skorch")


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("motionsense")
    release_zip(root / "release")
    return {"data_home": root / "home", "manual_dir": root / "release", "allow_unverified": True}


def card_weighted_f1(predictions: np.ndarray, gold: np.ndarray, num_classes: int) -> float:
    """The scoring recipe of the benchmark card, as written there."""
    class_counts = np.bincount(gold, minlength=num_classes)
    total = class_counts.sum()
    f1_scores = []
    for c in range(num_classes):
        tp = np.sum((predictions == c) & (gold == c))
        fp = np.sum((predictions == c) & (gold != c))
        fn = np.sum((predictions != c) & (gold == c))
        prec = tp / (tp + fp) if (tp + fp) > 0 else 0
        rec = tp / (tp + fn) if (tp + fn) > 0 else 0
        f1_c = 2 * prec * rec / (prec + rec) if (prec + rec) > 0 else 0
        f1_scores.append((class_counts[c] / total) * f1_c)
    return sum(f1_scores) * 100


@pytest.mark.slow
def test_cnn_on_windows_gives_a_run_folder_that_report_and_compare_read(source, tmp_path) -> None:
    out = tmp_path / "run"
    args = [
        "evaluate", "--dataset", "motionsense", "--input", "windows", "-c", "cnn",
        "--classifier-param", "max_epochs=2", "-s", "mm,uim", "--iterations", "1",
        "--jobs", "1", "--out", str(out), "--data-home", str(source["data_home"]),
        "--manual-dir", str(source["manual_dir"]), "--allow-unverified",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "windows of 150 samples x 6 channels" in result.stdout
    report = CliRunner().invoke(main, ["report", str(out), "-c", "cnn"])
    assert report.exit_code == 0, report.output
    compare = CliRunner().invoke(main, ["compare", str(out), "-c", "cnn"])
    assert compare.exit_code == 0, compare.output
    assert "cnn" in compare.output
    # The run's weighted F1 is the card's, recomputed from the predictions.
    predictions = pd.read_parquet(out / "predictions.parquet").query("strategy == 'mm'")
    splits = pd.read_parquet(out / "splits.parquet").query("strategy == 'mm'")
    classes = sorted(set(predictions["y_true"]))
    code = {c: i for i, c in enumerate(classes)}
    expected = card_weighted_f1(
        predictions["y_pred"].map(code).to_numpy(),
        predictions["y_true"].map(code).to_numpy(),
        len(classes),
    )
    assert splits["weighted_F1"].iloc[0] * 100 == pytest.approx(expected, rel=1e-9)


@pytest.mark.slow
def test_cnn_predictions_do_not_depend_on_jobs(source) -> None:
    runs = [
        mueval.evaluate(
            "motionsense", strategies="uim", classifiers="cnn",
            classifier_params={"max_epochs": 1}, iterations=1, input="windows",
            jobs=jobs, progress=False, **source,
        ).predictions
        for jobs in (1, 2)
    ]  # fmt: skip
    key = ["strategy", "target_user", "row_id"]
    one, two = (r.sort_values(key).reset_index(drop=True) for r in runs)
    pd.testing.assert_frame_equal(one, two)


@pytest.mark.slow
def test_the_benchmark_runs_reduced_under_all_four_strategies(tmp_path) -> None:
    if not RELEASE.is_file():
        pytest.skip(f"the MotionSense release is not at {RELEASE}")
    path = PROJECT_ROOT / "benchmarks" / "cnn.py"
    spec = importlib.util.spec_from_file_location("bench_cnn", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_cnn"] = bench
    spec.loader.exec_module(bench)
    rows = bench.run(RELEASE, iterations=1, epochs=1, users={1, 2}, out=tmp_path)
    assert [r["strategy"] for r in rows] == ["mm", "udm", "uim", "ucm"]
    for row in rows:
        assert (tmp_path / str(row["strategy"]) / "run.json").is_file()
        assert 0 <= row["coverage"] <= 1 and 0 <= row["weighted_f1"] <= 100
        assert row["s_per_iteration"] > 0
    # MM has one split per iteration: the printed figure is that split's weighted F1.
    splits = pd.read_parquet(tmp_path / "mm" / "splits.parquet")
    assert rows[0]["weighted_f1"] == pytest.approx(100 * splits["weighted_F1"].iloc[0], rel=1e-9)
    assert rows[0]["coverage"] == pytest.approx(splits["coverage"].iloc[0], rel=1e-9)
