"""The two front doors, end to end: `mudata fetch wisdm` and
`mueval evaluate --dataset har70 --strategy ucm` (HAR70+ served on 127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from mudata.cli import main as mudata_main
from mueval.cli.main import main as mueval_main
from tests.official_formats import make_har70_zip


def test_mueval_evaluate_har70_ucm(tmp_path: Path, http_server) -> None:
    make_har70_zip(
        http_server.root / "har70.zip",
        (501, 502, 503),
        np.random.default_rng(11),
        n_samples=15000,
        mean_run=200,
    )
    home = tmp_path / "home"
    base = [
        "evaluate",
        "--dataset",
        "har70",
        "--strategy",
        "ucm",
        "--data-home",
        str(home),
        "--mirror",
        http_server.url,
    ]

    refused = CliRunner().invoke(mueval_main, [*base, "-c", "nb", "--iterations", "2"])
    assert refused.exit_code == 2
    assert "--allow-unverified" in refused.output and http_server.count() == 0

    out = tmp_path / "run"
    result = CliRunner().invoke(
        mueval_main,
        [*base, "--allow-unverified", "-c", "nb,knn", "--iterations", "2", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "UCM (user-calibrated)" in result.output and "coverage (%)" in result.output
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["strategy"]) == {"ucm"} and set(summary["classifier"]) == {"nb", "knn"}
    splits = pd.read_parquet(out / "splits.parquet")
    assert splits["user"].notna().all() and splits["n_cal"].min() >= 20
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["dataset"]["name"] == "har70"
    assert run["classes"] == sorted(["walking", "shuffling", "standing", "sitting", "lying"])


def test_mudata_fetch_wisdm(wisdm_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        mudata_main,
        ["fetch", "wisdm", "--manual-dir", str(wisdm_dir), "--data-home", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    assert "2869 rows, 16 users, 6 classes, 39 features" in result.stderr
    assert pd.read_parquet(result.stdout.strip()).shape == (2869, 41)
