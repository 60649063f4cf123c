"""Page one of the report: the grid, the warnings, the figure levels, the sections'
links, on a run where MM clearly misses one user."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scipy import stats

import mueval
from mueval.errors import UsageError
from tests.mueval.runfolder.test_guarantees import _frame


@pytest.fixture(scope="module")
def run() -> mueval.Run:
    # One family per strategy and classifier, where user 3 is flagged under MM
    # (see tests/mueval/runfolder/test_guarantees.py::test_the_run_family_corrects_over_every_user).
    return mueval.evaluate(
        _frame(),
        strategies="mm,ucm",
        classifiers="nb",
        iterations=2,
        alpha=0.1,
        progress=False,
        user_family="pair",
    )


def _hand_interval(run: mueval.Run, strategy: str, user: int) -> tuple[int, int, float, float]:
    """Covered rows, rows and the 95 % Clopper-Pearson interval, from the rows."""
    p = run.predictions
    mine = p[(p.strategy == strategy) & (p.userid == str(user))]  # ids are text
    assert len(mine) > 0
    k, n = int(mine.covered.sum()), len(mine)
    low = stats.beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return k, n, low, high


@pytest.fixture(scope="module")
def page(run, tmp_path_factory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("page")
    html = run.report(out / "r").read_text(encoding="utf-8")
    return html, out / "r"


def test_grid_shows_the_share_of_users_below_target(run, page) -> None:
    html, _ = page
    grid = re.search(r'<table class="grid">.*?</table>', html, re.S).group(0)
    p = run.predictions
    mm = p[p.strategy == "mm"]
    k, n = int(mm.covered.sum()), len(mm)
    pooled = f"{k / n:.3f}"
    # MM: user 3 (relabelled) is below target, users 1 and 2 are not: 1 of 3.
    assert f"<b>{pooled}</b>" in grid
    assert "1 of 3 users below (33 %)" in grid
    assert "0 of 3 users below (0 %)" in grid  # UCM calibrates on the user itself
    assert '<td class="bad"><a href="#pair-mm-nb">' in grid
    assert f"size {mm.set_size.mean():.2f}" in grid
    # The caption names the level, the correction and the family.
    assert (
        "users below target at level 0.05 after Holm over the users of each strategy and "
        "classifier" in grid
    )


def test_warning_names_the_user_with_its_interval(run, page) -> None:
    html, _ = page
    k, n, low, high = _hand_interval(run, "mm", 3)
    assert high < 0.9
    expected = (
        f"lowest coverage: user 3, {k / n:.3f} [{low:.3f}, {high:.3f}] (Clopper-Pearson "
        f"interval of the observed rate) over {n} test rows"
    )
    warnings = re.search(r'<table class="warnings">.*?</table>', html, re.S).group(0)
    assert expected in warnings
    assert "mm / nb: 1 of 3 users (33.3 %)" in warnings
    # The cell: the severity and the worst figure; the sentence on demand.
    cell = re.search(r'<td class="(\w+)" data-kind="users-below-target".*?</td>', warnings)
    assert "<summary><b>warning</b> 1 of 3</summary>" in cell.group(0)
    assert cell.group(0).count(expected) == 2  # the tooltip and the details


def test_sections_are_collapsible_and_linked_from_the_grid(page) -> None:
    html, _ = page
    for pair in ("mm-nb", "ucm-nb"):
        assert f'<details class="pair" id="pair-{pair}">' in html
        assert f'href="#pair-{pair}"' in html
    # The grid comes first, before the contents and every section.
    assert html.index('class="grid"') < html.index("<nav>") < html.index('<details class="pair"')


def test_figure_levels_draw_only_what_is_asked(run, page, tmp_path: Path) -> None:
    _, default = page
    # summary: the pooled overview and one per-user figure per strategy.
    names = sorted(p.name for p in (default / "figures").glob("*.svg"))
    assert names == ["overview_coverage.svg", "user_coverage_mm.svg", "user_coverage_ucm.svg"]
    html = run.report(tmp_path / "none", figures="none").read_text(encoding="utf-8")
    assert "<img " not in html and not list((tmp_path / "none" / "figures").iterdir())
    with pytest.raises(UsageError, match="figures must be one of none, summary, all"):
        run.report(tmp_path / "bad", figures="some")
