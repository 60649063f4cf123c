"""`mueval table`: the study's Tables 6-9 layout from a saved run, as LaTeX, CSV and
Markdown, with the numbers `mueval evaluate` prints."""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mueval
from mueval.cli.main import main
from mueval.files import restore_formulas
from mueval.report.paper import (
    STUDY_ROWS,
    latex_escape,
    paper_csv,
    paper_latex,
    paper_markdown,
    paper_tables,
)
from tests.conftest import PROJECT_ROOT
from tests.user_tables import make_frame

REFERENCE = PROJECT_ROOT.parent / "shared/spec/reference/wisdm_mixed_table6.csv"
# The protocol's percent rows (PROTOCOL.md, "Aggregation"), weighted F1 beside F1.
PERCENT = {"accuracy", "sensitivity", "specificity", "F1", "weighted_F1", "coverage", "pctempty"}
STRATEGIES = ["mm", "udm", "uim", "ucm"]


def _mueval(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory) -> Path:
    """A real run folder: the default strategies, two classifiers, 3 iterations."""
    base = tmp_path_factory.mktemp("paper")
    data = base / "table.csv"
    make_frame(n_users=4).to_csv(data, index=False)
    out = base / "run"
    args = ["evaluate", "--data", str(data), "-c", "nb,knn", "--iterations", "3"]
    result = _mueval(*args, "--out", str(out), "--no-progress")
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def summary(saved_run: Path) -> pd.DataFrame:
    return pd.read_csv(saved_run / "summary.csv")


def _printed(metric: str, value: float) -> str:
    """The summary's number as the study prints it, computed here from the protocol."""
    if metric in ("hsic_size_coverage", "ert"):
        return f"{value:.1e}"
    return f"{value * (100 if metric in PERCENT else 1):.2f}"


def test_the_study_rows_are_the_reference_tables_rows() -> None:
    if not REFERENCE.is_file():
        pytest.skip(f"reference table not found at {REFERENCE}")
    with REFERENCE.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(r["metric"] for r in rows) == STUDY_ROWS
    assert list(rows[0])[1:] == ["Naive Bayes", "RF", "SVM", "KNN"]


@pytest.mark.parametrize("rows", ["study", "all"])
def test_csv_reads_back_as_the_summary_to_the_printed_digits(saved_run, summary, rows, tmp_path):
    out = tmp_path / "t.csv"
    result = _mueval("table", str(saved_run), "--format", "csv", "--rows", rows, "--out", str(out))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    table["unit"] = table["unit"].fillna("")  # an empty cell: a fraction or a count
    expected = summary if rows == "all" else summary[summary.metric.isin(STUDY_ROWS)]
    assert len(table) == len(expected) > 0
    merged = expected.merge(table, on=["strategy", "classifier", "metric"], suffixes=("", "_csv"))
    assert len(merged) == len(expected)
    for row in merged.itertuples():
        for value, written in ((row.mean, row.mean_csv), (row.sd, row.sd_csv)):
            if math.isnan(value):
                assert math.isnan(written), row
            else:
                assert _printed(row.metric, written / (100 if row.unit == "%" else 1)) == (
                    _printed(row.metric, value)
                ), row
        assert row.unit == ("%" if row.metric in PERCENT else "")
        assert row.n_csv == row.n
    assert set(table.strategy) == set(STRATEGIES)


def test_every_cell_is_the_terminal_tables_cell(saved_run):
    """The markdown cells, mean±sd, are the strings run.table() prints."""
    text = mueval.Run.load(saved_run).table()
    result = _mueval("table", str(saved_run), "--format", "markdown", "--rows", "all")
    assert result.exit_code == 0, result.output
    blocks = text.split("\n\n")
    cells = 0
    for block, md in zip(blocks, result.stdout.strip().split("\n\n**"), strict=True):
        terminal = {line.split()[0]: line.split()[-2:] for line in block.splitlines()[2:]}
        for line in md.splitlines()[4:]:
            parts = [p.strip() for p in line.strip("|").split("|")]
            metric = parts[0].split(" ")[0]
            assert parts[-2:] == terminal[metric], (metric, parts, terminal[metric])
            cells += len(parts) - 1
    assert cells == len(pd.read_csv(saved_run / "summary.csv"))


def _md_tables(text: str) -> list[list[str]]:
    return [
        [line for line in block.splitlines() if line.startswith("|")]
        for block in text.strip().split("\n\n")
        if block.startswith("|")
    ]


def test_markdown_has_one_table_per_strategy_and_the_right_columns(saved_run, summary):
    result = _mueval("table", str(saved_run), "--format", "markdown")
    assert result.exit_code == 0, result.output
    tables = _md_tables(result.stdout)
    assert len(tables) == len(STRATEGIES)
    for lines in tables:
        assert lines[0] == "| metric | Naive Bayes | KNN |"
        assert re.fullmatch(r"\| --- (\| ---: ){2}\|", lines[1])
        # Unescaped pipes: one more than the columns on every line.
        assert all(len(re.findall(r"(?<!\\)\|", line)) == 4 for line in lines)
        assert len(lines) == 2 + len(STUDY_ROWS)


def _unescaped(text: str, char: str) -> int:
    return len(re.findall(r"(?<!\\)" + re.escape(char), text))


def _check_latex(text: str, n_tables: int, n_columns: int) -> list[list[str]]:
    """Structural checks of the LaTeX tables; the body rows' cells."""
    assert text.count(r"\begin{table}") == text.count(r"\end{table}") == n_tables
    assert _unescaped(text, "{") == _unescaped(text, "}")
    bodies = re.findall(r"\\begin\{tabular\}\{(\w+)\}(.*?)\\end\{tabular\}", text, re.S)
    assert len(bodies) == n_tables
    rows = []
    for spec, body in bodies:
        assert spec == "l" + "r" * (n_columns - 1)
        lines = [line.strip() for line in body.strip().splitlines()]
        assert lines[0] == r"\toprule" and lines[2] == r"\midrule" and lines[-1] == r"\bottomrule"
        assert body.count(r"\toprule") == body.count(r"\bottomrule") == 1
        for line in lines[1:-1]:
            if line in (r"\midrule",):
                continue
            assert line.endswith(r"\\"), line
            cells = re.split(r"(?<!\\)&", line[:-2])
            assert len(cells) == n_columns, line
            assert all(_unescaped(c, "$") % 2 == 0 for c in cells), line
            rows.append([c.strip() for c in cells])
    return rows


def test_latex_is_booktabs_with_one_row_per_cell_of_the_summary(saved_run, summary):
    result = _mueval("table", str(saved_run), "--rows", "all")
    assert result.exit_code == 0, result.output
    rows = _check_latex(result.stdout, len(STRATEGIES), 3)
    body = [r for r in rows if r[0] != "Metric"]
    assert len(body) == summary.groupby(["strategy", "metric"]).ngroups
    cells = [c for r in body for c in r[1:]]
    assert len(cells) == len(summary)
    finite = summary["mean"].notna().sum()
    assert sum(1 for c in cells if re.fullmatch(r"\$.+ \\pm .+\$", c)) == finite
    # The percent sign and the underscores of the names are escaped.
    labels = {r[0] for r in body}
    assert r"coverage (\%)" in labels and r"OF\_textbook" in labels
    mm = summary.query("strategy == 'mm' and metric == 'coverage' and classifier == 'nb'")
    mean, sd = mm.iloc[0][["mean", "sd"]]
    assert f"${100 * mean:.2f} \\pm {100 * sd:.2f}$" in result.stdout
    assert r"\caption{MM (mixed): mean $\pm$ SD over 3 iterations}" in result.stdout


def _weird_summary() -> pd.DataFrame:
    """Names with LaTeX specials and a formula lead, a negative mean, a NaN SD."""
    rows = [
        ("a_b", "c&d", "coverage", 0.95, 0.01, 3),
        ("a_b", "c&d", "setsize", -0.5, float("nan"), 1),
        ("=x%", "c&d", "coverage", 0.9, 0.02, 3),
    ]
    return pd.DataFrame(rows, columns=["strategy", "classifier", "metric", "mean", "sd", "n"])


def test_special_characters_and_formulas():
    tables = paper_tables(_weird_summary())
    latex = paper_latex(tables)
    assert r"\caption{a\_b:" in latex and r"\caption{=x\%:" in latex
    # Labels are plain keys: letters, digits, - and :.
    assert r"\label{tab:mueval-a-b}" in latex and r"\label{tab:mueval--x-}" in latex
    assert r"& c\&d \\" in latex
    assert r"$-0.50 \pm \mbox{--}$" in latex
    _check_latex(latex, 2, 2)
    frame = pd.read_csv(io.StringIO(paper_csv(tables)))
    # Codes the study does not know come after its own, sorted.
    assert list(frame.strategy) == ["'=x%", "a_b", "a_b"]  # neutralised
    assert frame["mean"].tolist() == [90.0, 95.0, -0.5]  # numbers stay numbers
    assert restore_formulas(frame).strategy.tolist() == ["=x%", "a_b", "a_b"]
    assert latex_escape("50% & a_b {x} $y$ #1 ~ ^ \\") == (
        r"50\% \& a\_b \{x\} \$y\$ \#1 \textasciitilde{} \textasciicircum{} \textbackslash{}"
    )
    assert "c&d" in paper_markdown(tables)
    # One iteration: no SD (a dash in LaTeX, an empty CSV cell), and the caption's singular.
    single = paper_tables(_weird_summary().query("n == 1"))
    assert r"SD over 1 iteration}" in paper_latex(single)
    assert np.isnan(pd.read_csv(io.StringIO(paper_csv(single)))["sd"]).all()


def test_pdflatex_compiles_the_tables(saved_run, tmp_path):
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex is not installed (texlive-latex-base and texlive-latex-recommended)")
    result = _mueval("table", str(saved_run), "--rows", "all", "--out", str(tmp_path / "t.tex"))
    assert result.exit_code == 0, result.output
    # Names with every special character, an undefined SD: escaped, they compile too.
    frame = _weird_summary()
    frame["strategy"] = frame["strategy"].replace("a_b", "a_b&%$#{}~^\\")
    (tmp_path / "weird.tex").write_text(paper_latex(paper_tables(frame)), encoding="utf-8")
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
        "\\input{t.tex}\n\\input{weird.tex}\n\\end{document}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 0


def test_filters_and_errors(saved_run, tmp_path):
    result = _mueval("table", str(saved_run), "-s", "ui,mm", "-c", "knn", "--format", "csv")
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert set(frame.strategy) == {"mm", "uim"} and set(frame.classifier) == {"knn"}
    missing = _mueval("table", str(saved_run), "-c", "rf")
    assert missing.exit_code == 2 and "rf not in the run" in missing.output
    nowhere = _mueval("table", str(saved_run), "--out", str(tmp_path / "no" / "t.tex"))
    assert nowhere.exit_code == 1 and "is not a folder" in nowhere.output
    not_a_run = _mueval("table", str(tmp_path))
    assert not_a_run.exit_code == 1 and "missing" in not_a_run.output
