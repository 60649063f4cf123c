"""mueval on windows of samples: ``input="windows"`` / ``--input windows`` (issue 29, item 5).

The data are participants 1-3 of the real MotionSense release
(:mod:`tests.motionsense_release`); the model is a scikit-learn Pipeline that
takes ``(n, T, C)`` windows itself (channel means, then a logistic regression).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

import mueval
from mueval.cli.main import main
from mueval.data.table import load_data
from mueval.errors import UsageError
from tests.motionsense_release import release_zip


def channel_means(X: np.ndarray) -> np.ndarray:
    """(n, T, C) -> (n, C): a window model's first step (module level: it pickles)."""
    if X.ndim != 3:
        raise ValueError(f"expected windows (n, T, C), got shape {X.shape}")
    return X.mean(axis=1)


def window_model():
    return make_pipeline(
        FunctionTransformer(channel_means), StandardScaler(), LogisticRegression(max_iter=500)
    )


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("motionsense")
    release_zip(root / "release")
    return {
        "data_home": root / "home",
        "manual_dir": root / "release",
        "allow_unverified": True,
    }


def test_the_windows_table_has_the_feature_table_rows(source) -> None:
    features = load_data("motionsense", **source)
    windows = load_data("motionsense", input="windows", **source)
    assert windows.X.shape == (len(features.y), 150, 6) and windows.X.dtype == np.float32
    np.testing.assert_array_equal(windows.y, features.y)
    np.testing.assert_array_equal(windows.users, features.users)
    assert windows.classes == features.classes
    # The same rows: a run on windows compares with a run on features.
    assert windows.info["provenance_sha256"] == features.info["provenance_sha256"]
    assert windows.info["input"] == "windows" and windows.info["window_shape"] == [150, 6]


def test_a_window_model_runs_under_the_protocol_and_report_reads_it(source, tmp_path) -> None:
    out = tmp_path / "run"
    run = mueval.evaluate(
        "motionsense",
        strategies="mm,uim",
        classifiers={"means": window_model()},
        iterations=1,
        jobs=1,
        input="windows",
        out=out,
        progress=False,
        **source,
    )
    coverage = run.summary.query("metric == 'coverage'").set_index("strategy")["mean"]
    assert set(coverage.index) == {"mm", "uim"} and coverage.between(0, 1).all()
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["dataset"]["input"] == "windows"
    assert record["dataset"]["window_shape"] == [150, 6]
    # The model saw windows: its first step refuses anything else.
    with pytest.raises(ValueError, match="expected windows"):
        channel_means(np.zeros((2, 6)))
    result = CliRunner().invoke(main, ["report", str(out), "-c", "means"])
    assert result.exit_code == 0, result.output
    assert (out / "report" / "report.html").is_file()
    compare = CliRunner().invoke(main, ["compare", str(out), "-c", "means"])
    assert compare.exit_code == 0, compare.output
    assert "means" in compare.output
    # Each test row got a prediction set, as a run on features.
    assert len(pd.read_parquet(out / "predictions.parquet")) > 0


def nearest_centroid_of_means(X_train, y_train, X_eval, seed):
    """A ``fit_predict`` hook of plain numpy over windows: softmax of minus the distances."""
    assert X_train.ndim == 3 and X_eval.ndim == 3  # windows, not feature rows
    train, evaluate = X_train.mean(axis=1), X_eval.mean(axis=1)
    classes = np.unique(y_train)
    centroids = np.stack([train[y_train == c].mean(axis=0) for c in classes])
    logits = -((evaluate[:, None, :] - centroids[None]) ** 2).sum(axis=2)
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def test_a_fit_predict_hook_takes_windows_too(source) -> None:
    run = mueval.evaluate(
        "motionsense",
        strategies="mm",
        models={"centroid": nearest_centroid_of_means},
        iterations=1,
        jobs=1,
        input="windows",
        progress=False,
        **source,
    )
    coverage = run.summary.query("metric == 'coverage'")["mean"]
    assert len(coverage) == 1 and 0 < float(coverage.iloc[0]) <= 1


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"classifiers": "nb"}, "built-in classifiers nb take the feature rows"),
        ({"classifiers": ["rf", "knn"]}, "built-in classifiers rf, knn"),
        ({"classifiers": {"m": window_model()}, "scale": "minmax"}, "min-max scaling"),
        ({"classifiers": {"m": window_model()}, "input": "rows"}, "unknown input 'rows'"),
    ],
)
def test_what_cannot_take_windows_is_refused_before_any_work(options, expected, tmp_path) -> None:
    arguments = {"input": "windows", **options}
    with pytest.raises(UsageError, match=expected):
        # An empty data home: the refusal comes before anything is loaded.
        mueval.evaluate("motionsense", data_home=tmp_path, iterations=1, **arguments)
    assert not any(tmp_path.iterdir())


def test_windows_need_a_registered_dataset() -> None:
    frame = pd.DataFrame({"userid": [1, 2], "label": ["a", "b"], "x": [0.0, 1.0]})
    with pytest.raises(UsageError, match="needs a registered mudata dataset"):
        mueval.evaluate(frame, classifiers={"m": window_model()}, input="windows")


def test_the_cli_refuses_builtins_on_windows_with_exit_2(tmp_path) -> None:
    args = ["evaluate", "--dataset", "motionsense", "--input", "windows", "-c", "svm"]
    result = CliRunner().invoke(main, [*args, "--data-home", str(tmp_path)])
    assert result.exit_code == 2
    assert "svm take the feature rows" in result.output


def test_a_dataset_without_windows_is_a_usage_error_naming_its_recipe(tmp_path) -> None:
    with pytest.raises(UsageError, match="recipe is 'precomputed'"):
        mueval.evaluate(
            "demo", classifiers={"m": window_model()}, input="windows", data_home=tmp_path
        )
