"""`mueval compare` on real runs of the default protocol: matching, filters, --all-pairs,
a table that fits a terminal, --out with everything, cautions and library warnings."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mueval.cli.main import main
from mueval.comparison.runs import compare_runs
from mueval.comparison.significance import (
    MIN_ITERATIONS,
    STUDY_TEST,
    compare_strategies,
    study_t_test,
)
from mueval.comparison.tables import table_notes
from mueval.errors import DataError
from mueval.runfolder import RunFolder, read_run_folder
from tests.user_tables import make_frame

# The default protocol: evaluate's default strategies, every classifier.
_DEFAULT_STRATEGIES = ["mm", "udm", "uim", "ucm"]


def _mueval(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    """Two real default-protocol runs (every strategy of the default, all classifiers,
    2 iterations) of one small table, with other seeds."""
    base = tmp_path_factory.mktemp("cmp")
    data = base / "table.csv"
    make_frame(n_users=4).to_csv(data, index=False)
    runs = []
    for name, seed in (("study", "100"), ("other", "300")):
        out = base / name
        result = _mueval(
            "evaluate", "--data", str(data), "--iterations", "2", "--seed-base", seed,
            "--out", str(out), "--no-progress",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        runs.append(out)
    return runs[0], runs[1]


def _codes(label: str) -> str:
    return label.rsplit("/", 1)[-1]


def test_two_default_runs_print_at_most_40_lines_of_matched_pairs(two_runs, tmp_path):
    a, b = two_runs
    out = tmp_path / "all.csv"
    result = _mueval("compare", str(a), str(b), "--out", str(out))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) <= 40, result.output
    table = pd.read_csv(out)
    # Each strategy against itself in the other run, per classifier, three tests.
    assert (table.strategy_a.map(_codes) == table.strategy_b.map(_codes)).all()
    assert set(table.strategy_a) == {f"study/{s}" for s in _DEFAULT_STRATEGIES}
    assert set(table.strategy_b) == {f"other/{s}" for s in _DEFAULT_STRATEGIES}
    assert len(table) == len(_DEFAULT_STRATEGIES) * 4 * 3
    # --out writes every column the terminal leaves out.
    assert {"statistic", "df", "note", "library_warning", "caution"} <= set(table.columns)
    # One printed line per pair: every (classifier, strategy) is on the screen.
    for row in table.drop_duplicates(["classifier", "strategy_a"]).itertuples():
        assert any(
            row.classifier in line and row.strategy_a in line and row.strategy_b in line
            for line in lines
        ), (row, result.output)
    # No mismatched pair (study/uim against other/mm) is printed.
    assert not any("study/uim" in line and "other/mm " in line for line in lines)


def test_all_pairs_adds_the_mismatched_pairs(two_runs, tmp_path):
    a, b = two_runs
    out = tmp_path / "all.csv"
    result = _mueval("compare", str(a), str(b), "--all-pairs", "-c", "nb", "--out", str(out))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    pairs = set(zip(table.strategy_a, table.strategy_b, strict=True))
    assert ("study/uim", "other/mm") in pairs or ("other/mm", "study/uim") in pairs
    n = 2 * len(_DEFAULT_STRATEGIES)
    assert len(pairs) == n * (n - 1) // 2
    assert set(table.classifier) == {"nb"}


def test_filters_take_comma_lists_and_repeats(two_runs, tmp_path):
    a, b = two_runs
    out = tmp_path / "f.csv"
    result = _mueval(
        "compare", str(a), str(b), "--strategy", "uim,ucm", "-c", "nb", "-c", "rf,knn",
        "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert set(table.strategy_a.map(_codes)) == {"uim", "ucm"}
    assert set(table.classifier) == {"nb", "rf", "knn"}
    # Aliases as for evaluate.
    assert f"wrote {out} (every test with its notes)\n" in result.output
    one = _mueval("compare", str(a), "-s", "ui,mixed", "-c", "svm", "--out", str(out))
    assert one.exit_code == 0, one.output
    assert f"wrote {out} (every test with its notes); replaced the existing {out}\n" in one.output
    table = pd.read_csv(out)
    assert set(table.strategy_a) | set(table.strategy_b) == {"mm", "uim"}


def test_a_filter_outside_the_runs_is_a_usage_error(two_runs):
    a, b = two_runs
    result = _mueval("compare", str(a), str(b), "--strategy", "uam")
    assert result.exit_code == 2, result.output
    assert "uam" in result.output and "not in the runs" in result.output
    result = _mueval("compare", str(a), "--classifier", "nope")
    assert result.exit_code == 2, result.output
    assert "nope" in result.output


def _only(run: RunFolder, strategy: str) -> RunFolder:
    keep = {
        "splits": run.splits[run.splits.strategy == strategy],
        "predictions": run.predictions[run.predictions.strategy == strategy],
    }
    return replace(run, **keep)


def test_runs_without_a_common_strategy_need_all_pairs(two_runs):
    a, b = (read_run_folder(p) for p in two_runs)
    mm, uim = _only(a, "mm"), _only(b, "uim")
    with pytest.raises(DataError, match="share no strategy.*all_pairs=True"):
        compare_runs([mm, uim])
    table = compare_runs([mm, uim], all_pairs=True).table
    assert set(zip(table.strategy_a, table.strategy_b, strict=True)) == {("mm", "uim")}


def test_few_iterations_carry_a_caution(two_runs):
    a, _ = two_runs
    result = _mueval("compare", str(a), "-c", "nb")
    assert result.exit_code == 0, result.output
    assert "caution (!):" in result.output and f"fewer than {MIN_ITERATIONS}" in result.output
    # The t-tests' cells are marked; the Wilcoxon over users is not about iterations.
    rows = [line for line in result.output.splitlines() if line.lstrip().startswith("nb")]
    assert rows and all("!" in line for line in rows if "n/a" not in line)


def test_library_warnings_leave_the_table_for_one_note():
    # Near-identical samples: scipy warns of catastrophic cancellation.
    a = [0.95] * 19 + [0.95 + 1e-15]
    b = [0.95] * 20
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing escapes to the caller either
        res = study_t_test(a, b)
    assert res.library_warning and "cancellation" in res.library_warning
    assert res.note == ""
    rows = []
    for it in range(20):
        for s, v in (("mm", a[it]), ("ucm", b[it])):
            rows.append({"strategy": s, "classifier": "nb", "iteration": it, "seed": it,
                         "coverage": v, "n_test": 10, "n_cal": 10, "user": np.nan})  # fmt: skip
    table = compare_strategies(pd.DataFrame(rows), None, 100)
    welch = table[table.test == STUDY_TEST]
    assert (welch.note == "").all() and (welch.library_warning != "").all()
    notes = table_notes(table)
    assert len([n for n in notes if "scipy warned" in n]) == 1
    assert "1 tests (Welch)" in " ".join(notes)
