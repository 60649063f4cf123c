"""One definition per term in the report: "below target" is the exact per-user test
everywhere, degenerate cells are shaded, few iterations carry a caution, library
warnings stay out of tables, and the warnings read as a table."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from click.testing import CliRunner

import mueval
from mueval.cli.report import report_command
from mueval.report.page_one import grid_html, warnings_html
from tests.mueval.runfolder.test_guarantees import _frame


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[str, str]:
    """The page and `mueval report`'s stderr, for a run where MM misses user 3.

    Holm within each (strategy, classifier) (``user_family="pair"``), where user 3's
    p = 0.010 is flagged (0.030 after Holm over 3 users); over the run's 6 users it
    is not (0.061), and the page would hold no verdict to name."""
    root = tmp_path_factory.mktemp("terms")
    run = mueval.evaluate(
        _frame(),
        strategies="mm,ucm",
        classifiers="nb",
        iterations=2,
        alpha=0.1,
        user_family="pair",
        progress=False,
    )
    run.save(root / "run")
    result = CliRunner().invoke(report_command, [str(root / "run"), "--out", str(root / "r")])
    assert result.exit_code == 0, result.output
    return (root / "r" / "report.html").read_text(encoding="utf-8"), result.stderr


def _tables(page: str) -> list[str]:
    return re.findall(r"<table.*?</table>", page, re.S)


def test_below_target_has_one_meaning_on_the_page_and_in_the_terminal(report) -> None:
    page, stderr = report
    assert "Terms: &#x27;below target&#x27; on this page means one thing" in page
    # The grid counts the per-user test's verdicts; the per-user table its point estimates
    # under another name.
    assert "1 of 3 users below (33 %)" in page
    assert "users with mean &lt; target" in page
    # No sentence speaks of users "falling below" by a point estimate.
    for text in (page, stderr):
        assert "fall below" not in text and "users below it" not in text
    notes = [line for line in stderr.splitlines() if line.startswith("note:")]
    assert all("below target" not in n or "per-user test" in n for n in notes), notes
    assert any("mean < target" in n for n in notes) or not notes


def test_few_iterations_carry_a_caution_and_library_text_stays_out_of_tables(report) -> None:
    page, _ = report
    assert re.search(r'<p class="warn">caution \(!\): \d+ t-tests rest on 2 iterations', page)
    assert "(caution: 2 iterations)" in page
    for table in _tables(page):
        assert "cancellation" not in table and "Precision loss" not in table


def _summary(**row) -> pd.DataFrame:
    base = {
        "strategy": "ucm",
        "classifier": "nb",
        "pooled_coverage": 1.0,
        "pooled_low": 0.99,
        "pooled_high": 1.0,
        "n_below": 0,
        "n_users": 3,
        "share_below": 0.0,
    }
    return pd.DataFrame([{**base, **row}])


def _grid(summary: pd.DataFrame, warnings: list[dict]) -> str:
    sizes = pd.DataFrame({"strategy": ["ucm"], "classifier": ["nb"], "mean_size": [20.0]})
    return grid_html(
        summary, sizes, ["ucm"], ["nb"], target=0.95, name=lambda s, c: (s, c), warnings=warnings
    )


def _warning(kind: str, message: str, severity: str = "warning", s: str = "ucm") -> dict:
    return {
        "strategy": s,
        "classifier": "nb",
        "kind": kind,
        "message": message,
        "severity": severity,
    }


def test_a_degenerate_cell_is_shaded_like_a_failing_one() -> None:
    full = "ucm / nb: degenerate sets: mean size 20.00 of 20 classes (100.0 %, ...)"
    plain = _grid(_summary(), [])
    assert 'class="bad"' not in plain
    shaded = _grid(_summary(), [_warning("degenerate-sets", full)])
    assert '<td class="bad">' in shaded and "<i>degenerate sets</i>" in shaded
    empty = _grid(_summary(), [_warning("excess-empty-sets", "ucm / nb: 40 of 300 sets")])
    assert '<td class="bad">' in empty and "<i>excess empty sets</i>" in empty
    # The same shading as a user below target.
    failing = _grid(_summary(n_below=1, share_below=1 / 3), [])
    assert '<td class="bad">' in failing


def test_warnings_read_as_a_table_one_row_per_pair_one_column_per_check() -> None:
    warnings = [
        _warning("degenerate-sets", "ucm / nb: degenerate sets: mean size 19.50 of 20 classes"),
        _warning("users-below-target", "ucm / nb: 5 of 8 users (62.5 %) are below", "error"),
        _warning("users-below-target", "uim / nb: 2 of 8 users (25.0 %) are below", s="uim"),
        _warning("pooled-below-target", "uim / nb: pooled coverage 0.912 [0.9, 0.92]", "error", "uim"),
    ]  # fmt: skip
    html = warnings_html(warnings)
    rows = re.findall(r"<tr><th>(\w+)</th><th>nb</th>(.*?)</tr>", html)
    assert [r[0] for r in rows] == ["uim", "ucm"]  # the pooled error first
    head = re.findall(r"<th>([a-z-]+)</th>", html.split("<tbody>")[0])
    assert head[2:] == ["pooled-below-target", "users-below-target", "degenerate-sets"]
    cells = dict(rows)
    assert "<summary><b>error</b> coverage 0.912</summary>" in cells["uim"]
    assert "<summary><b>warning</b> 2 of 8</summary>" in cells["uim"]
    assert "<summary><b>error</b> 5 of 8</summary>" in cells["ucm"]
    assert "<summary><b>warning</b> size 19.50 of 20</summary>" in cells["ucm"]
    # Every sentence is on demand, whole.
    for w in warnings:
        assert f"{w['message']}</details>" in html
    assert "4 warnings (2 error, 2 warning)" in html
