"""A run's warnings where the user looks: ``evaluate``'s closing summary, one
severity vocabulary in run.json, the terminal and the HTML report, ``--strict``.

The tiny table (3 users, 5 rows per class) gives ucm calibration sets of 8
rows, below the 20 alpha = 0.05 needs: with ``--small-cal full-set`` the run
finishes with a ``calibration-too-small`` error and ``degenerate-sets`` warning.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import mueval
from mueval.cli.main import STRICT_EXIT, main
from mueval.cli.warning_text import warnings_summary
from mueval.guarantees.run_warnings import SEVERITIES, by_severity
from mueval.runfolder import RunFolderError, read_run_folder
from tests.user_tables import make_frame


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("warn") / "small.csv"
    make_frame(n_users=3, per_class=5).to_csv(path, index=False)
    return path


def _evaluate(csv: Path, *args: str):
    base = ["evaluate", "--data", str(csv), "-c", "nb", "--iterations", "2"]
    return CliRunner().invoke(main, [*base, *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def warned_run(small_csv: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("run") / "run"
    result = _evaluate(small_csv, "-s", "ucm", "--small-cal", "full-set", "--out", str(out))
    return result, out


def test_evaluate_ends_with_the_summary_on_stderr(warned_run) -> None:
    result, out = warned_run
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    start = lines.index("warnings: 1 error, 1 warning")
    assert lines[start + 1].startswith("  error (calibration-too-small): ucm / nb: ")
    assert lines[start + 2].startswith("  warning (degenerate-sets): ucm / nb: ")
    assert (
        lines[start + 3]
        == f"all of them: mueval report {out} (report.html), or run.json's warnings"
    )
    assert start + 4 == len(lines)  # the summary closes the output
    assert "warnings:" not in result.stdout


def test_severities_agree_between_run_json_terminal_and_html(warned_run) -> None:
    _, out = warned_run
    stored = json.loads((out / "run.json").read_text())["warnings"]
    assert {w["severity"] for w in stored} <= set(SEVERITIES)
    expected = [(w["severity"], w["kind"]) for w in by_severity(stored)]
    assert expected == [("error", "calibration-too-small"), ("warning", "degenerate-sets")]

    report = CliRunner().invoke(main, ["report", str(out), "--figures", "none"])
    assert report.exit_code == 0, report.output
    printed = re.findall(r"^(error|warning) \(([a-z-]+)\): ", report.stderr, flags=re.M)
    assert printed == expected

    page = (out / "report" / "report.html").read_text(encoding="utf-8")
    # The warnings table: one cell per warning, its class and word the severity.
    shown = re.findall(
        r'<td class="(\w+)" data-kind="([a-z-]+)" title="[^"]*"><details><summary><b>(\w+)</b>',
        page,
    )
    assert sorted((cls, kind) for cls, kind, _ in shown) == sorted(expected)
    assert all(cls == word for cls, _, word in shown)
    # The row of the most severe warning comes first.
    assert (shown[0][0], shown[0][1]) == expected[0]
    # The library's Run carries the same list.
    assert mueval.Run.load(out).warnings == stored


def test_strict_exits_non_zero_only_with_an_error(small_csv: Path, tmp_path: Path) -> None:
    strict = _evaluate(small_csv, "-s", "ucm", "--small-cal", "full-set", "--strict")
    assert strict.exit_code == STRICT_EXIT == 3, strict.output
    assert "warnings: 1 error, 1 warning" in strict.stderr
    assert "add --out DIR" in strict.stderr
    big = tmp_path / "big.csv"
    make_frame(n_users=3).to_csv(big, index=False)
    clean = _evaluate(big, "-s", "mm", "--strict")
    assert clean.exit_code == 0, clean.output
    assert "warnings: none" in clean.stderr


def test_library_run_has_the_warnings(small_csv: Path) -> None:
    run = mueval.evaluate(
        small_csv, strategies="ucm", classifiers="nb", iterations=2, small_cal="full-set"
    )
    assert [(w["severity"], w["kind"]) for w in by_severity(run.warnings)] == [
        ("error", "calibration-too-small"),
        ("warning", "degenerate-sets"),
    ]


def _w(severity: str, kind: str, n: int) -> dict[str, str]:
    return {
        "strategy": "mm",
        "classifier": "rf",
        "kind": kind,
        "message": f"m{n}",
        "severity": severity,
    }


def test_summary_counts_orders_and_points_to_the_rest() -> None:
    found = [
        _w("warning", "degenerate-sets", 1),
        _w("warning", "users-below-target", 2),
        _w("error", "users-below-target", 3),
        _w("warning", "excess-empty-sets", 4),
        _w("error", "pooled-below-target", 5),
    ]
    lines = warnings_summary(found, where="run.json")
    assert lines == [
        "warnings: 2 errors, 3 warnings",
        "  error (pooled-below-target): m5",
        "  error (users-below-target): m3",
        "  warning (users-below-target): m2",
        "the other 2: run.json",
    ]


def test_a_run_json_severity_outside_the_vocabulary_is_refused(warned_run, tmp_path: Path) -> None:
    _, out = warned_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("report"))
    run = json.loads((copy / "run.json").read_text())
    run["warnings"][0]["severity"] = "fatal"
    (copy / "run.json").write_text(json.dumps(run))
    with pytest.raises(RunFolderError, match="severity one of error, warning"):
        read_run_folder(copy)
