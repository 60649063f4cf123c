"""The user's own model on the official WISDM release, as the README and the docs write it.

``mueval evaluate --dataset wisdm -c sklearn.linear_model:LogisticRegression
--classifier-param max_iter=1000`` runs as written (only where the data lives and
where the run goes are added), and the same model in a Pipeline from Python gives
a run folder that ``report`` and ``compare`` read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import mueval
from mueval.cli.main import main

pytestmark = pytest.mark.slow


def test_the_documented_command_runs_as_written_on_wisdm(wisdm_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "lr"
    command = "evaluate --dataset wisdm -c sklearn.linear_model:LogisticRegression"
    command += " --classifier-param max_iter=1000"
    args = [*command.split(), "--manual-dir", str(wisdm_dir), "--data-home", str(tmp_path)]
    result = CliRunner().invoke(main, [*args, "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    # The defaults of the protocol: four strategies, 20 iterations, the one model.
    assert record["config"]["strategies"] == ["mm", "udm", "uim", "ucm"]
    assert record["config"]["iterations"] == 20
    (model,) = record["models"]
    assert model["name"] == "LogisticRegression" and model["params"]["max_iter"] == 1000
    run = mueval.Run.load(out)
    assert set(run.summary["classifier"]) == {"LogisticRegression"}
    # A logistic model learns WISDM's six classes well above chance (1/6).
    summary = run.summary.set_index(["strategy", "metric"])
    assert float(summary.loc[("mm", "accuracy"), "mean"]) > 0.5
    report = CliRunner().invoke(main, ["report", str(out)])
    assert report.exit_code == 0, report.output
    # compare takes two run folders: the run and a copy of it under another name.
    twin = tmp_path / "lr-copy"
    shutil.copytree(out, twin, ignore=shutil.ignore_patterns("report"))
    compare = CliRunner().invoke(
        main, ["compare", str(out), str(twin), "--out", str(tmp_path / "c")]
    )
    assert compare.exit_code == 0, compare.output


def test_a_pipeline_from_python_on_wisdm_is_the_model_it_names(
    wisdm_dir: Path, tmp_path: Path
) -> None:
    pipeline = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    out = tmp_path / "pipe"
    run = mueval.evaluate(
        "wisdm",
        strategies=["mm"],
        classifiers={"scaled-lr": pipeline},
        iterations=2,
        data_home=tmp_path,
        manual_dir=wisdm_dir,
        out=out,
        progress=False,
    )
    folder = run.folder()
    assert run.config["classifiers"] == ["scaled-lr"]
    (model,) = json.loads((out / "run.json").read_text(encoding="utf-8"))["models"]
    assert model["class"] == "sklearn.pipeline.Pipeline"
    assert model["scaling"] == "none"  # the Pipeline scales, the protocol's min-max does not
    proba = np.stack(folder.predictions["proba"].to_numpy())
    assert proba.shape[1] == 6
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    assert sorted(folder.predictions["iteration"].unique()) == [1, 2]
    report = CliRunner().invoke(main, ["report", str(out)])
    assert report.exit_code == 0, report.output
