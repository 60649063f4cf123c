"""The Python API: evaluate -> Run, save and load, report, compare; the README's
Python section run as written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mueval
from mueval.cli.main import main
from mueval.errors import OutputError, UsageError
from mueval.runfolder import RunFolderError
from tests.conftest import GESTURES_ZIP, PROJECT_ROOT


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


@pytest.fixture(scope="module")
def run() -> mueval.Run:
    return mueval.evaluate(
        _frame(), strategies="mm,ucm", classifiers=["nb", "knn"], iterations=2, progress=False
    )


def test_evaluate_returns_a_run_with_every_part(run) -> None:
    assert set(run.summary.strategy) == {"mm", "ucm"}
    assert set(run.summary.classifier) == {"nb", "knn"}
    assert run.config["threshold"] == "study" and run.config["iterations"] == 2
    assert run.classes == ["run", "sit", "walk"]
    assert run.provenance["n_users"] == 3
    assert len(run.predictions) == run.splits.n_test.sum()
    assert run.diagnostics is not None and run.path is None
    assert "MM (mixed)" in run.table()


def test_save_then_load_gives_the_same_run(run, tmp_path: Path) -> None:
    path = run.save(tmp_path / "run")
    assert path == tmp_path / "run" and run.path == path
    again = mueval.Run.load(path)
    pd.testing.assert_frame_equal(again.summary, run.summary, check_dtype=False)
    pd.testing.assert_frame_equal(again.splits, run.splits)
    assert (
        again.predictions["pred_set"].map(list).tolist()
        == run.predictions["pred_set"].map(list).tolist()
    )
    assert again.config == run.config and again.classes == run.classes


def test_the_cli_writes_what_the_api_saves(run, tmp_path: Path) -> None:
    csv = tmp_path / "data.csv"
    _frame().to_csv(csv, index=False)
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--data",
            str(csv),
            "-s",
            "mm,ucm",
            "-c",
            "nb,knn",
            "--iterations",
            "2",
            "--out",
            str(tmp_path / "cli"),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    cli = mueval.Run.load(tmp_path / "cli")
    pd.testing.assert_frame_equal(cli.splits, run.splits)
    pd.testing.assert_frame_equal(cli.summary, run.summary, check_dtype=False)


def test_a_path_string_or_path_is_a_file_and_a_bad_type_is_refused(tmp_path: Path) -> None:
    csv = tmp_path / "data.csv"
    _frame().to_csv(csv, index=False)
    for data in (csv, str(csv)):
        out = mueval.evaluate(
            data,
            strategies="mm",
            classifiers="nb",
            iterations=1,
            diagnostics="none",
            progress=False,
        )
        assert out.provenance["source"] == "file"
    with pytest.raises(UsageError, match="got int"):
        mueval.evaluate(3, strategies="mm", classifiers="nb", iterations=1)


def test_report_from_memory_and_from_a_folder(run, tmp_path: Path) -> None:
    html = run.report(tmp_path / "mem", strategies=["mm"], classifiers=["nb"], n_boot=20)
    assert html.is_file() and "<html" in html.read_text()[:500].lower()
    saved = mueval.Run.load(run.save(tmp_path / "run"))
    assert saved.report(
        tmp_path / "disk", strategies=["ucm"], classifiers=["knn"], n_boot=20
    ).is_file()


def test_report_from_python_follows_the_report_folder_rules(run, tmp_path: Path) -> None:
    """As `mueval report`: a folder of the user's is refused, an earlier report is
    replaced only with overwrite=True."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.html").write_text("the user's own page")
    with pytest.raises(OutputError, match="mueval report did not write it"):
        run.report(mine, figures="none")
    assert (mine / "report.html").read_text() == "the user's own page"
    assert sorted(p.name for p in mine.iterdir()) == ["report.html"]
    out = tmp_path / "report"
    run.report(out, strategies=["mm"], classifiers=["nb"], n_boot=20)
    with pytest.raises(OutputError, match="already holds a report"):
        run.report(out, figures="none")
    assert run.report(out, figures="none", overwrite=True).is_file()
    assert list((out / "figures").iterdir()) == []


def test_compare_runs_in_memory_and_on_disk(run, tmp_path: Path) -> None:
    table = mueval.compare([run])
    assert {"strategy_a", "strategy_b", "test", "p_value"} <= set(table.columns)
    assert set(table.classifier) == {"nb", "knn"}
    other = mueval.evaluate(
        _frame(), strategies="uim", classifiers=["nb", "knn"], iterations=2, progress=False
    )
    both = mueval.compare([run, other.save(tmp_path / "uim")], all_pairs=True)
    assert {"mm", "ucm", "uim"} <= set(both.strategy_a) | set(both.strategy_b)


def test_a_tampered_folder_is_refused_on_load(run, tmp_path: Path) -> None:
    path = run.save(tmp_path / "run")
    summary = pd.read_csv(path / "summary.csv")
    summary.loc[0, "mean"] += 0.5
    summary.to_csv(path / "summary.csv", index=False)
    with pytest.raises(RunFolderError, match="summary.csv"):
        mueval.Run.load(path)


def _readme_python_block() -> str:
    text = (PROJECT_ROOT / "docs" / "mueval.md").read_text()
    section = text.split("## From Python", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def test_the_readme_python_section_runs_as_written(tmp_path: Path, monkeypatch) -> None:
    if not GESTURES_ZIP.is_file():
        pytest.skip(f"official gestures archive not found at {GESTURES_ZIP}")
    import mudata

    # The user has fetched gestures once (here from the official archive, offline).
    mudata.fetch("gestures", manual_dir=GESTURES_ZIP.parent)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(_readme_python_block(), "docs/mueval.md", "exec"), namespace)
    assert (tmp_path / "runs/gestures/report/report.html").is_file()
    again = namespace["again"]
    assert set(again.summary.strategy) == {"mm", "ucm"}
    assert again.provenance["name"] == "gestures"


def test_text_user_ids_stay_names_through_run_folder_report_and_compare(tmp_path: Path) -> None:
    frame = _frame()
    frame["userid"] = frame["userid"].map({1: "S10", 2: "S2", 3: "subject1"})
    run = mueval.evaluate(
        frame, strategies="udm,ucm", classifiers="nb", iterations=2, alpha=0.1, progress=False
    )
    udm = run.splits[run.splits.strategy == "udm"]
    # natural order: S2 before S10
    assert udm.user.tolist()[:3] == ["S2", "S10", "subject1"]
    assert set(run.predictions.userid) == {"S10", "S2", "subject1"}
    loaded = mueval.Run.load(run.save(tmp_path / "run"))
    assert set(loaded.splits.user.dropna()) == {"S10", "S2", "subject1"}
    assert loaded.report(tmp_path / "report", n_boot=20).is_file()
    table = mueval.compare([loaded])
    assert not table.empty


def test_numeric_ids_given_as_text_stay_text_in_natural_order() -> None:
    frame = _frame()
    frame["userid"] = frame["userid"].map({1: "10", 2: "2", 3: "33"})
    run = mueval.evaluate(
        frame,
        strategies="udm",
        classifiers="nb",
        iterations=1,
        alpha=0.1,
        diagnostics="none",
        progress=False,
    )
    assert run.splits.user.tolist() == ["2", "10", "33"]


def test_docstrings_cite_the_projects_own_docs() -> None:
    # Files outside the repository are not there for a reader of the code.
    for path in (PROJECT_ROOT / "src").rglob("*.py"):
        text = path.read_text()
        for outside in ("shared/spec", "PROTOCOL.md", "DATASETS.md"):
            assert outside not in text, f"{path} cites {outside}"
    for cited in ("docs/protocol.md", "docs/datasets.md"):
        assert (PROJECT_ROOT / cited).is_file()


def test_user_folds_through_the_api_are_recorded(tmp_path: Path) -> None:
    run = mueval.evaluate(
        _frame(),
        strategies="uim",
        classifiers="nb",
        iterations=1,
        user_folds=3,
        diagnostics="none",
        progress=False,
    )
    assert run.config["user_folds"] == 3
    assert sorted(run.splits.user.tolist()) == ["1", "2", "3"]
    assert mueval.Run.load(run.save(tmp_path / "run")).config["user_folds"] == 3
