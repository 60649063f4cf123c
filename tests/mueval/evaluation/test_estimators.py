"""Models of the user's own: import paths on the command line, estimators, Pipelines
and dicts from Python, the seed rule, the errors, run.json's records, and a saved
run read back and reported."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sklearn
from click.testing import CliRunner
from sklearn.ensemble import BaggingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import SVC

import mueval
from mueval.cli.main import main
from mueval.errors import UsageError
from mueval.evaluation.estimators import check_shippable, seeded_clone, user_models
from mueval.runfolder import RunFolderError


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for user in (1, 2, 3):
        for c, label in enumerate(("sit", "walk", "run")):
            x = rng.normal(c * 1.5, 1.0, (30, 3)) + rng.normal(0, 0.5, 3)
            part = pd.DataFrame(x, columns=["a", "b", "c"])
            part.insert(0, "label", label)
            part.insert(0, "userid", user)
            parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _evaluate(classifiers, **options) -> mueval.Run:
    options = {"strategies": "mm,ucm", "iterations": 1, "progress": False, "jobs": 1, **options}
    return mueval.evaluate(_frame(), classifiers=classifiers, **options)


def _rows(run: mueval.Run, classifier: str) -> pd.DataFrame:
    """The prediction rows of one classifier, without its name, in a fixed order."""
    keys = ["strategy", "iteration", "target_user", "row_id"]
    part = run.predictions[run.predictions["classifier"] == classifier]
    part = part.drop(columns="classifier").sort_values(keys).reset_index(drop=True)
    return part.assign(**{c: part[c].map(list) for c in ("pred_set", "p_values", "proba")})


class Unshippable:
    """A value no pickler can send to a worker (a lock, a socket, an open model server)."""

    def __deepcopy__(self, memo: dict) -> Unshippable:
        return self

    def __reduce__(self):
        raise TypeError("this object stays in its process")


def _first(X, lock):
    return X


def test_the_cli_takes_an_import_path_with_parameters(tmp_path: Path) -> None:
    out = tmp_path / "run"
    csv = tmp_path / "data.csv"
    _frame().to_csv(csv, index=False)
    args = ["evaluate", "--data", str(csv), "-s", "mm,uim", "-c", "nb"]
    args += ["-c", "sklearn.linear_model:LogisticRegression", "--classifier-param", "max_iter=200"]
    args += ["--classifier-param", 'solver="lbfgs"', "--classifier-param", "C=0.5"]
    args += ["--iterations", "1", "--jobs", "1", "--out", str(out), "--no-progress"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "LogisticRegression" in result.output
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["config"]["classifiers"] == ["nb", "LogisticRegression"]
    nb, own = record["models"]
    assert nb["name"] == "nb" and nb["scaling"] == "minmax" and nb["display_name"] == "Naive Bayes"
    assert own["name"] == "LogisticRegression"
    assert own["class"] == f"{LogisticRegression.__module__}.LogisticRegression"
    assert own["params"]["max_iter"] == 200 and own["params"]["C"] == 0.5
    assert own["params"]["solver"] == "lbfgs"
    assert own["params"]["random_state"] == "the iteration's seed"
    assert own["version"] == sklearn.__version__
    assert (own["scaling"], own["source"]) == ("none", "sklearn.linear_model:LogisticRegression")
    # The folder reads back; report, table and compare name the model.
    run = mueval.Run.load(out)
    assert set(run.summary["classifier"]) == {"nb", "LogisticRegression"}
    report = CliRunner().invoke(main, ["report", str(out), "-c", "LogisticRegression"])
    assert report.exit_code == 0, report.output
    assert "LogisticRegression" in (out / "report" / "report.html").read_text(encoding="utf-8")
    table = CliRunner().invoke(
        main, ["table", str(out), "-c", "LogisticRegression", "--format", "markdown"]
    )
    assert table.exit_code == 0, table.output
    assert "| metric | LogisticRegression |" in table.output
    compare = CliRunner().invoke(main, ["compare", str(out), "-c", "LogisticRegression"])
    assert compare.exit_code == 0, compare.output
    assert "LogisticRegression" in compare.output and "Naive Bayes" not in compare.output


@pytest.mark.parametrize(
    "classifier,expected",
    [
        ("lr", "unknown classifier 'lr'"),
        ("sklearn.linear_model:Nope", "module 'sklearn.linear_model' has no attribute 'Nope'"),
        ("no_such_module_here:Model", "cannot import module 'no_such_module_here'"),
        ("sklearn.svm:SVC", "classifier 'SVC' (sklearn.svm"),
        ("sklearn.linear_model:", "expected module:attribute"),
    ],
)
def test_a_bad_classifier_on_the_cli_exits_2_naming_it(
    classifier: str, expected: str, tmp_path: Path
) -> None:
    args = [
        "evaluate",
        "--dataset",
        "demo",
        "-s",
        "mm",
        "-c",
        classifier,
        "--out",
        str(tmp_path / "r"),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert expected in " ".join(result.output.split())
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "params,expected",
    [
        (["C=abc"], 'text needs quotes, e.g. C="abc"'),
        (["C"], "expected NAME=VALUE"),
        (["C=1", "C=2"], "C given twice"),
        (["nonsense=1"], "unexpected keyword argument 'nonsense'"),
    ],
)
def test_a_bad_classifier_param_exits_2_naming_it(params: list[str], expected: str) -> None:
    args = ["evaluate", "--dataset", "demo", "-c", "sklearn.linear_model:LogisticRegression"]
    for param in params:
        args += ["--classifier-param", param]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert expected in result.output


def test_a_classifier_param_without_an_import_path_is_refused() -> None:
    args = ["evaluate", "--dataset", "demo", "-c", "nb", "--classifier-param", "C=1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "apply to import-path models" in result.output


def test_python_takes_an_instance_a_pipeline_and_a_dict() -> None:
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
    run = _evaluate(["knn", LogisticRegression(max_iter=300), pipe])
    # Built-ins first, then the user's models by name (their class names).
    assert run.config["classifiers"] == ["knn", "LogisticRegression", "Pipeline"]
    assert list(dict.fromkeys(run.summary["classifier"])) == run.config["classifiers"]
    named = _evaluate({"logreg": LogisticRegression(max_iter=300), "scaled": pipe})
    assert set(named.summary["classifier"]) == {"logreg", "scaled"}
    # The same estimator under another name gives the same predictions.
    pd.testing.assert_frame_equal(_rows(named, "scaled"), _rows(run, "Pipeline"))
    assert "logreg" in named.table() and "scaled" in named.table()
    assert [m["name"] for m in named.info["models"]] == ["logreg", "scaled"]


def test_a_user_model_with_minmax_scaling_is_the_builtin_it_copies() -> None:
    # GaussianNB() and a 50-tree forest are what nb and rf are; with the protocol's
    # scaling and the seed rule, they give the same predictions as the built-ins.
    forest = RandomForestClassifier(n_estimators=50, random_state=12345)
    run = _evaluate(["nb", "rf"])
    own = _evaluate({"mynb": GaussianNB(), "myrf": forest}, scale="minmax")
    pd.testing.assert_frame_equal(_rows(own, "mynb"), _rows(run, "nb"))
    pd.testing.assert_frame_equal(_rows(own, "myrf"), _rows(run, "rf"))
    # Unscaled, the forest is the same (trees do not care about scale); the record says so.
    unscaled = _evaluate({"myrf": forest})
    assert [m["scaling"] for m in unscaled.info["models"]] == ["none"]
    assert [m["scaling"] for m in own.info["models"]] == ["minmax", "minmax"]


def test_seeded_clone_sets_every_random_state_nested_ones_too() -> None:
    model = BaggingClassifier(
        estimator=make_pipeline(StandardScaler(), RandomForestClassifier(random_state=7)),
        random_state=3,
    )
    fresh = seeded_clone(model, 101)
    seeded = {k: v for k, v in fresh.get_params(deep=True).items() if k.endswith("random_state")}
    assert len(seeded) == 2 and set(seeded.values()) == {101}
    assert "estimator__randomforestclassifier__random_state" in seeded
    assert fresh is not model and model.random_state == 3
    assert model.estimator.steps[1][1].random_state == 7


def test_a_forest_in_a_pipeline_repeats_and_does_not_depend_on_jobs() -> None:
    def model():
        return make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=10))

    one = _evaluate({"forest": model()}, jobs=1)
    two = _evaluate({"forest": model()}, jobs=2)
    pd.testing.assert_frame_equal(_rows(one, "forest"), _rows(two, "forest"))
    # Another seed base gives other forests: the seed reaches the nested forest.
    other = _evaluate({"forest": model()}, seed_base=200)
    assert (
        not _rows(other, "forest")["proba"]
        .map(list)
        .equals(_rows(one, "forest")["proba"].map(list))
    )


def test_a_model_without_predict_proba_is_refused_before_any_task() -> None:
    with pytest.raises(UsageError, match=r"classifier 'SVC' \(sklearn\.svm.*no predict_proba"):
        _evaluate([SVC()])
    with pytest.raises(UsageError, match="classifier 'margin'.*no predict_proba"):
        _evaluate({"margin": make_pipeline(StandardScaler(), SVC())})
    with pytest.raises(UsageError, match="no fit"):
        _evaluate([object()])
    with pytest.raises(UsageError, match=r"is a class; give an instance, e.g. GaussianNB\(\)"):
        _evaluate({"nb_class": GaussianNB})


def test_a_model_no_pickler_can_send_is_refused_with_workers_only() -> None:
    model = make_pipeline(FunctionTransformer(kw_args={"lock": Unshippable()}), GaussianNB())
    model.steps[0][1].func = _first
    with pytest.raises(TypeError):
        pickle.dumps(model)
    with pytest.raises(UsageError, match="classifier 'local'.*cannot be pickled.*jobs=2"):
        _evaluate({"local": model}, jobs=2)
    with pytest.raises(UsageError, match="cannot be pickled, which the dask backend needs"):
        _evaluate({"local": model}, backend="dask")
    # In this process nothing is pickled: the run goes.
    assert set(_evaluate({"local": model}, jobs=1).summary["classifier"]) == {"local"}


def test_a_lambda_in_a_pipeline_goes_to_workers_through_cloudpickle() -> None:
    model = make_pipeline(FunctionTransformer(lambda X: X * 2.0), GaussianNB())
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(model)
    names, models = user_models({"doubled": model})
    check_shippable(models, "jobs=2")  # no error: loky and dask use cloudpickle
    assert names == ("doubled",)


def test_names_are_given_or_the_class_name_deduplicated() -> None:
    names, _ = user_models([LogisticRegression(), LogisticRegression(C=2.0), "nb"])
    assert names == ("nb", "LogisticRegression", "LogisticRegression-2")
    names, models = user_models(["lr=sklearn.linear_model:LogisticRegression"], params={"C": 2.0})
    assert names == ("lr",) and models[0].estimator.C == 2.0
    for bad, expected in (
        ({"rf": LogisticRegression()}, "'rf' is taken"),
        ({"RF": LogisticRegression()}, "'RF' is taken"),
        ({"../x": LogisticRegression()}, "expected a name of 1 to 48 letters"),
        ({"a": LogisticRegression(), "A": GaussianNB()}, "'A' is taken"),
        ({"lr": "nb"}, "is no import path"),
    ):
        with pytest.raises(UsageError, match=expected):
            user_models(bad)


def test_parameters_not_json_are_recorded_as_their_repr() -> None:
    weights = np.array([0.4, 0.3, 0.3])
    run = _evaluate({"weighted": GaussianNB(priors=weights)}, strategies="mm")
    (record,) = run.info["models"]
    assert record["params"]["priors"] == repr(weights)
    json.dumps(run.info, allow_nan=False)


def test_a_saved_run_of_user_models_reads_back_and_reports(tmp_path: Path) -> None:
    run = _evaluate({"logreg": LogisticRegression(max_iter=300), "nb_own": GaussianNB()})
    path = run.save(tmp_path / "run")
    again = mueval.Run.load(path)
    pd.testing.assert_frame_equal(again.summary, run.summary, check_dtype=False)
    assert json.loads((path / "run.json").read_text())["models"] == run.info["models"]
    html = again.report(tmp_path / "report", n_boot=20)
    page = html.read_text(encoding="utf-8")
    assert "logreg" in page and "nb_own" in page
    table = mueval.compare([path], classifiers="logreg")
    assert set(table["classifier"]) == {"logreg"}
    with pytest.raises(UsageError, match="unknown classifier 'LogReg'"):
        mueval.compare([path], classifiers="LogReg")


def test_a_folder_with_a_classifier_name_unsafe_for_a_file_is_refused(tmp_path: Path) -> None:
    run = _evaluate({"logreg": LogisticRegression(max_iter=300)}, strategies="mm")
    path = run.save(tmp_path / "run")
    for name in ("predictions.parquet", "splits.parquet"):
        frame = pd.read_parquet(path / name)
        frame["classifier"] = frame["classifier"].replace("logreg", "log reg/x")
        frame.to_parquet(path / name, index=False)
    summary = pd.read_csv(path / "summary.csv")
    summary["classifier"] = summary["classifier"].replace("logreg", "log reg/x")
    summary.to_csv(path / "summary.csv", index=False)
    with pytest.raises(RunFolderError, match="nor a model's name"):
        mueval.Run.load(path)


_CONFIG = """
[logreg]
path = "sklearn.linear_model:LogisticRegression"
params = { C = 0.5, max_iter = 500 }
scale = "minmax"

[forest]
path = "sklearn.ensemble:RandomForestClassifier"
params = { n_estimators = 10 }
"""


def test_a_classifier_config_file_names_several_models(tmp_path: Path) -> None:
    config, csv, out = tmp_path / "models.toml", tmp_path / "data.csv", tmp_path / "run"
    config.write_text(_CONFIG, encoding="utf-8")
    _frame().to_csv(csv, index=False)
    args = ["evaluate", "--data", str(csv), "-s", "mm", "--classifier-config", str(config)]
    args += ["-c", "nb", "--iterations", "1", "--jobs", "1", "--out", str(out), "--no-progress"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    models = json.loads((out / "run.json").read_text(encoding="utf-8"))["models"]
    found = {m["name"]: (m["scaling"], m["params"]) for m in models}
    assert list(found) == ["nb", "forest", "logreg"]
    assert found["logreg"][0] == "minmax" and found["logreg"][1]["C"] == 0.5
    assert found["logreg"][1]["max_iter"] == 500
    assert found["forest"][0] == "none" and found["forest"][1]["n_estimators"] == 10
    # Without -c, the file's models alone.
    alone = CliRunner().invoke(main, [*args[:7], "--iterations", "1", "--jobs", "1"])
    assert alone.exit_code == 0, alone.output
    assert "Naive Bayes" not in alone.output and "logreg" in alone.output


@pytest.mark.parametrize(
    "text,expected",
    [
        ("x = 1\n", "'x' is a int; expected a table [x]"),
        ("[x]\npath = 3\n", 'expected path = "module:attribute", found 3'),
        ('[x]\npath = "sklearn.svm:SVC"\n', "classifier 'x' (sklearn.svm"),
        ('[x]\npath = "sklearn.svm:SVC"\nseed = 1\n', "unknown keys ['seed']"),
        ('[x]\npath = "sklearn.naive_bayes:GaussianNB"\nscale = "z"\n', "unknown scale 'z'"),
        ("[x\n", "not TOML"),
    ],
)
def test_a_bad_classifier_config_exits_2_naming_it(
    text: str, expected: str, tmp_path: Path
) -> None:
    config = tmp_path / "models.toml"
    config.write_text(text, encoding="utf-8")
    args = ["evaluate", "--dataset", "demo", "--classifier-config", str(config)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert expected in " ".join(result.output.split())
