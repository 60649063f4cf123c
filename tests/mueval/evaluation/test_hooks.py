"""Models of any framework: ``models={"name": fit_predict}`` through :func:`mueval.evaluate`,
its run folder read by ``report`` and ``compare``, Naive Bayes through the hook against
the built-in ``nb``, the identity under ``jobs``, and the contract's errors."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.naive_bayes import GaussianNB

import mueval
from mueval.cli.main import main
from mueval.errors import EvaluationError, UsageError
from mueval.evaluation.hooks import SUM_TOLERANCE, check_probabilities


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for user in (1, 2, 3, 4):
        for c, label in enumerate(("sit", "walk", "run")):
            x = rng.normal(c * 1.5, 1.0, (50, 3)) + rng.normal(0, 0.5, 3)
            part = pd.DataFrame(x * 10.0 + 5.0, columns=["a", "b", "c"])
            part.insert(0, "label", label)
            part.insert(0, "userid", user)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)


def centroid_softmax(X_train, y_train, X_eval, seed):
    """Nearest centroid, softmax over minus the squared distances (pure numpy)."""
    classes = np.unique(y_train)
    centroids = np.stack([X_train[y_train == c].mean(axis=0) for c in classes])
    logits = -((X_eval[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2) / X_train.shape[1]
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=1, keepdims=True)


def naive_bayes(X_train, y_train, X_eval, seed):
    return GaussianNB().fit(X_train, y_train).predict_proba(X_eval)


def _rows(run: mueval.Run, classifier: str) -> pd.DataFrame:
    keys = ["strategy", "iteration", "target_user", "row_id"]
    part = run.predictions[run.predictions["classifier"] == classifier]
    part = part.drop(columns="classifier").sort_values(keys).reset_index(drop=True)
    return part.assign(**{c: part[c].map(list) for c in ("pred_set", "p_values", "proba")})


def _evaluate(**options) -> mueval.Run:
    options = {"strategies": "mm,ucm", "iterations": 1, "progress": False, "jobs": 1, **options}
    return mueval.evaluate(_frame(), **options)


def test_a_fit_predict_runs_and_its_folder_is_reported_and_compared(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run = _evaluate(strategies="mm,udm,uim,ucm", models={"centroid": centroid_softmax}, out=out)
    assert set(run.summary["classifier"]) == {"centroid"}
    rows = _rows(run, "centroid")
    assert len(rows) and rows["proba"].map(len).eq(3).all()
    coverage = run.summary.query("metric == 'coverage'").set_index("strategy")["mean"]
    assert set(coverage.index) == {"mm", "udm", "uim", "ucm"}
    assert (coverage > 0.5).all()  # a working model, not noise
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    (entry,) = record["models"]
    assert entry["name"] == "centroid" and entry["kind"] == "fit_predict"
    assert entry["module"] == __name__ and entry["qualname"] == "centroid_softmax"
    assert entry["callable"] == f"{__name__}.centroid_softmax"
    assert entry["scaling"] == "none"
    # The per-user guarantees exist as for a built-in.
    assert set(run.user_coverage["classifier"]) == {"centroid"}
    assert set(run.coverage_summary["strategy"]) == {"mm", "udm", "uim", "ucm"}
    report = CliRunner().invoke(main, ["report", str(out), "-c", "centroid"])
    assert report.exit_code == 0, report.output
    assert "centroid" in (out / "report" / "report.html").read_text(encoding="utf-8")
    compare = CliRunner().invoke(main, ["compare", str(out), "-c", "centroid"])
    assert compare.exit_code == 0, compare.output
    assert "centroid" in compare.output


def scaled_only(X_train, y_train, X_eval, seed):
    """Refuses features outside [0, 1] on the training rows (min-max scaled ones)."""
    if X_train.min() < 0.0 or X_train.max() > 1.0:
        raise ValueError(f"raw features: range {X_train.min():.1f} .. {X_train.max():.1f}")
    return centroid_softmax(X_train, y_train, X_eval, seed)


def test_a_hook_gets_raw_features_unless_scale_minmax() -> None:
    with pytest.raises(
        EvaluationError,
        match="model 'f': fit_predict .*scaled_only raised ValueError: raw features",
    ):
        _evaluate(strategies="mm", models={"f": scaled_only})
    run = _evaluate(strategies="mm", models={"f": scaled_only}, scale="minmax")
    assert set(run.summary["classifier"]) == {"f"}


def test_naive_bayes_through_the_hook_is_the_built_in_nb() -> None:
    """With scale="minmax" a hook sees what the built-ins see: GaussianNB through
    it gives the built-in nb's probabilities, sets, p-values and predictions."""
    strategies = "mm,udm,uim,ucm"
    built_in = _evaluate(strategies=strategies, classifiers="nb", iterations=2)
    hooked = _evaluate(
        strategies=strategies, models={"gnb": naive_bayes}, scale="minmax", iterations=2
    )
    pd.testing.assert_frame_equal(_rows(built_in, "nb"), _rows(hooked, "gnb"))
    # Raw features (the default) give other probabilities: the scaling is applied.
    raw = _evaluate(strategies="mm", models={"gnb": naive_bayes})
    first = np.stack(_rows(raw, "gnb")["proba"])
    scaled = np.stack(_rows(built_in, "nb").query("strategy == 'mm' and iteration == 1")["proba"])
    assert first.shape == scaled.shape and not np.array_equal(first, scaled)


def test_a_fit_predict_gives_the_same_predictions_under_jobs_1_and_2() -> None:
    def noisy(X_train, y_train, X_eval, seed):
        # A seeded random model: the seed must be the iteration's under any jobs.
        rng = np.random.default_rng(seed)
        proba = centroid_softmax(X_train, y_train, X_eval, seed) + rng.uniform(
            0, 0.05, (len(X_eval), len(np.unique(y_train)))
        )
        return proba / proba.sum(axis=1, keepdims=True)

    one = _evaluate(models={"noisy": noisy}, iterations=2, jobs=1)
    two = _evaluate(models={"noisy": noisy}, iterations=2, jobs=2)
    pd.testing.assert_frame_equal(_rows(one, "noisy"), _rows(two, "noisy"))
    other = _evaluate(models={"noisy": noisy}, iterations=2, seed_base=300)
    assert not np.array_equal(
        np.stack(_rows(other, "noisy")["proba"]), np.stack(_rows(one, "noisy")["proba"])
    )


def test_hooks_and_built_ins_run_side_by_side() -> None:
    run = _evaluate(classifiers="nb", models={"centroid": centroid_softmax})
    assert set(run.summary["classifier"]) == {"nb", "centroid"}


def _returning(value):
    def model(X_train, y_train, X_eval, seed):
        return value(len(X_eval), len(np.unique(y_train)))

    return model


@pytest.mark.parametrize(
    "value,match",
    [
        (lambda n, k: np.full((n, k + 1), 1.0 / (k + 1)), r"shape \(\d+, 4\); expected \(\d+, 3\)"),
        (lambda n, k: np.full((n,), 1.0), r"shape \(\d+,\); expected"),
        (lambda n, k: np.full((n, k), np.nan), "not finite"),
        (lambda n, k: np.tile([1.5, -0.25, -0.25], (n, 1)), "negative probabilities"),
        (lambda n, k: np.full((n, k), 0.5), "do not sum to 1 within 1e-06"),
        (lambda n, k: np.tile([1.0 + 5e-7, 0.0, 0.0], (n, 1)), "probabilities above 1"),
        (lambda n, k: [["a"] * k] * n, "not an array of floats"),
    ],
)
def test_a_broken_return_value_is_an_error_naming_the_model(value, match) -> None:
    with pytest.raises(EvaluationError, match=f"model 'bad': fit_predict returned.*{match}"):
        _evaluate(strategies="mm", models={"bad": _returning(value)})


def test_the_sum_tolerance_is_as_stated() -> None:
    inside = np.array([[0.5, 0.5 + 0.9 * SUM_TOLERANCE]])
    assert check_probabilities(inside, name="m", n_rows=1, n_classes=2).dtype == np.float64
    # A deep model's float32 softmax passes.
    logits = np.random.default_rng(0).normal(0, 5, (1000, 6)).astype(np.float32)
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax = weights / weights.sum(axis=1, keepdims=True)
    assert softmax.dtype == np.float32
    check_probabilities(softmax, name="m", n_rows=1000, n_classes=6)
    outside = np.array([[0.5, 0.5 + 1.1 * SUM_TOLERANCE]])
    with pytest.raises(EvaluationError, match="do not sum to 1"):
        check_probabilities(outside, name="m", n_rows=1, n_classes=2)


def test_an_exception_in_the_function_is_named() -> None:
    def failing(X_train, y_train, X_eval, seed):
        raise RuntimeError("out of GPU memory")

    with pytest.raises(
        EvaluationError,
        match=r"model 'gpu': fit_predict .*failing raised RuntimeError: out of GPU memory",
    ):
        _evaluate(strategies="mm", models={"gpu": failing})


def test_bad_models_are_refused_before_any_task() -> None:
    with pytest.raises(UsageError, match="model 'x': expected a function"):
        _evaluate(models={"x": 3})
    with pytest.raises(UsageError, match="model name 'NB' is taken"):
        _evaluate(models={"NB": centroid_softmax})
    with pytest.raises(UsageError, match="model name 'a b'"):
        _evaluate(models={"a b": centroid_softmax})
    with pytest.raises(UsageError, match="models must be a dict"):
        _evaluate(models=[centroid_softmax])


def test_a_function_no_pickler_can_send_is_refused_with_workers_only() -> None:
    lock = threading.Lock()

    def locked(X_train, y_train, X_eval, seed):
        with lock:
            return centroid_softmax(X_train, y_train, X_eval, seed)

    with pytest.raises(
        UsageError, match=r"classifier 'locked' \(fit_predict:.*locked\) cannot be pickled.*jobs=2"
    ):
        _evaluate(models={"locked": locked}, jobs=2)
    assert set(_evaluate(models={"locked": locked}).summary["classifier"]) == {"locked"}


def test_each_fitted_model_calls_the_function_once() -> None:
    """One call per model the protocol fits, the point predictions included: mm
    fits one; uxc per target user one, plus one per calibration fold (the three
    other users)."""
    calls = []

    def counted(X_train, y_train, X_eval, seed):
        calls.append(len(X_eval))
        return centroid_softmax(X_train, y_train, X_eval, seed)

    run = _evaluate(strategies="mm,uxc", models={"counted": counted})
    assert set(run.summary["strategy"]) == {"mm", "uxc"}
    assert len(calls) == 1 + 4 * (1 + 3)


@pytest.mark.slow  # a local Dask cluster starts: about 12 s
def test_a_fit_predict_gives_the_same_predictions_on_dask() -> None:
    pytest.importorskip("distributed")
    one = _evaluate(models={"centroid": centroid_softmax}, jobs=1)
    dask = _evaluate(models={"centroid": centroid_softmax}, backend="dask", workers=2)
    pd.testing.assert_frame_equal(_rows(one, "centroid"), _rows(dask, "centroid"))
