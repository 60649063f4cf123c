"""`mueval compare`: Holm's correction within each test (raw and adjusted p-values,
the family size said), and every strategy, classifier or pair left out named."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mueval.cli.main import main
from mueval.comparison.runs import compare_runs
from mueval.comparison.tables import adjust_statement, adjust_table
from mueval.errors import UsageError
from mueval.runfolder import read_run_folder
from tests.user_tables import make_frame


def _mueval(*args: str):
    return CliRunner().invoke(main, list(args))


def _holm_rejects(p: np.ndarray, level: float) -> np.ndarray:
    """Holm's procedure as defined: step down the sorted p-values, the i-th
    (0-based) tested at level / (m - i), stopping at the first that fails."""
    finite = np.flatnonzero(np.isfinite(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    m = len(order)
    rejected = np.zeros(p.shape, dtype=bool)
    for i, k in enumerate(order):
        if p[k] > level / (m - i):
            break
        rejected[k] = True
    return rejected


def test_holm_by_hand():
    # Sorted: 0.005, 0.01, 0.03, 0.04 with m = 4: 4*0.005 = 0.02, 3*0.01 = 0.03,
    # 2*0.03 = 0.06, max(1*0.04, 0.06) = 0.06 (monotone); the NaN is no member.
    table = pd.DataFrame(
        {
            "test": ["w"] * 5 + ["c"] * 2,
            "p_value": [0.01, 0.04, 0.03, 0.005, np.nan, 0.6, 0.7],
        }
    )
    out = adjust_table(table, "holm")
    np.testing.assert_allclose(out.p_adjusted[:4], [0.03, 0.06, 0.06, 0.02])
    assert np.isnan(out.p_adjusted[4])
    # The other test is a family of its own: 2 * 0.6 capped at 1, then monotone.
    np.testing.assert_allclose(out.p_adjusted[5:], [1.0, 1.0])
    assert out.family_size.tolist() == [4] * 5 + [2] * 2
    assert out.stars_adjusted.tolist()[:4] == ["*", "ns", "ns", "*"]
    assert out.p_value.equals(table.p_value)  # the raw p-values stay
    none = adjust_table(table, "none")
    assert none.p_adjusted.equals(table.p_value.astype(float))
    with pytest.raises(UsageError, match="adjust must be one of holm, none"):
        adjust_table(table, "bonferroni")


def test_holm_against_its_definition():
    rng = np.random.default_rng(7)
    for m in (1, 2, 3, 5, 12):
        for _ in range(40):
            p = rng.uniform(0, 0.2, m) ** rng.uniform(0.5, 3)
            p[rng.random(m) < 0.15] = np.nan
            adjusted = adjust_table(pd.DataFrame({"test": "w", "p_value": p})).p_adjusted
            adjusted = adjusted.to_numpy()
            ok = np.isfinite(p)
            assert (np.isnan(adjusted) == ~ok).all()
            # At least the raw value, at most 1; monotone in the raw order.
            assert (adjusted[ok] >= p[ok] - 1e-15).all() and (adjusted[ok] <= 1).all()
            order = np.argsort(p[ok], kind="stable")
            assert (np.diff(adjusted[ok][order]) >= -1e-15).all()
            for level in (0.001, 0.01, 0.02, 0.05, 0.1):
                got = np.isfinite(adjusted) & (adjusted <= level)
                np.testing.assert_array_equal(got, _holm_rejects(p, level))


def _evaluate(base: Path, name: str, *args: str) -> Path:
    data = base / "table.csv"
    if not data.exists():
        make_frame(n_users=4).to_csv(data, index=False)
    out = base / name
    result = _mueval("evaluate", "--data", str(data), "--iterations", "3", *args, "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """Run a: mm and udm with nb and rf; run b: mm and ucm with nb only."""
    base = tmp_path_factory.mktemp("adjust")
    a = _evaluate(base, "a", "-s", "mm,udm", "-c", "nb,rf")
    b = _evaluate(base, "b", "-s", "mm,ucm", "-c", "nb", "--seed-base", "300")
    return a, b


def test_unmatched_strategies_and_classifiers_are_named(runs, tmp_path):
    a, b = runs
    out = tmp_path / "t.csv"
    result = _mueval("compare", str(a), str(b), "--out", str(out))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "not compared: classifier rf only in a" in lines
    assert any(line.startswith("not compared: strategy udm only in a") for line in lines)
    assert any(line.startswith("not compared: strategy ucm only in b") for line in lines)
    table = pd.read_csv(out)
    assert set(zip(table.strategy_a, table.strategy_b, strict=True)) == {("a/mm", "b/mm")}
    assert set(table.classifier) == {"nb"}
    # --all-pairs compares every strategy; the classifier of one run stays unmatched.
    every = _mueval("compare", str(a), str(b), "--all-pairs")
    assert every.exit_code == 0, every.output
    assert "not compared: classifier rf only in a" in every.output
    assert "not compared: strategy" not in every.output


def test_a_pair_without_a_shared_classifier_is_named(runs):
    run = read_run_folder(runs[0], guarantees=False)
    # udm without rf, as if evaluated so: mm against udm has nb only.
    keep = ~((run.splits.strategy == "udm") & (run.splits.classifier == "rf"))
    keep_p = ~((run.predictions.strategy == "udm") & (run.predictions.classifier == "rf"))
    partial = replace(run, splits=run.splits[keep], predictions=run.predictions[keep_p])
    result = compare_runs([partial])
    assert set(result.table.classifier) == {"nb"}
    assert result.unmatched == [
        "not compared: mm against udm with classifier rf (evaluated under mm, not under udm)"
    ]
    # Nothing left out: nothing said.
    assert compare_runs([run]).unmatched == []


def test_raw_and_adjusted_p_values_with_the_family_size(runs, tmp_path):
    a, _ = runs
    out = tmp_path / "t.csv"
    result = _mueval("compare", str(a), "--out", str(out))
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert {"p_value", "stars", "p_adjusted", "stars_adjusted", "adjust", "family_size"} <= set(
        table.columns
    )
    assert set(table.adjust) == {"holm"}
    for _, family in table.groupby("test"):
        p = family.p_value.to_numpy(dtype=float)
        assert (family.family_size == np.isfinite(p).sum()).all()
        for level in (0.01, 0.05, 0.2):
            got = family.p_adjusted.to_numpy() <= level
            np.testing.assert_array_equal(got, _holm_rejects(p, level))
    # One pair (mm, udm) x 2 classifiers per test: each family holds 2 (when defined).
    assert "family sizes (defined p-values of 1 pairs x 2 classifiers)" in result.output
    assert "raw/Holm-adjusted" in result.output
    row = table[table.test.str.startswith("Welch")].iloc[0]
    cell = f"{row.p_value:.3g}/{row.p_adjusted:.3g} {row.stars_adjusted}"
    assert cell in result.output
    raw = _mueval("compare", str(a), "--adjust", "none", "--out", str(out))
    assert raw.exit_code == 0, raw.output
    assert "not adjusted for multiple comparisons (--adjust none)" in raw.output
    unadjusted = pd.read_csv(out)
    assert unadjusted.p_adjusted.equals(unadjusted.p_value)
    assert f"{row.p_value:.3g}/" not in raw.output
    bad = _mueval("compare", str(a), "--adjust", "bh")
    assert bad.exit_code == 2 and "--adjust" in bad.output


def test_statement_names_every_test_family():
    rows = [
        {"test": t, "p_value": p, "classifier": c, "strategy_a": "mm", "strategy_b": s}
        for (t, p), c, s in itertools.product(
            [("Welch x", 0.01), ("Wilcoxon y", np.nan)], ["nb", "rf"], ["udm", "ucm"]
        )
    ]
    text = adjust_statement(adjust_table(pd.DataFrame(rows)))
    assert "2 pairs x 2 classifiers" in text and "Welch x 4" in text and "Wilcoxon y 0" in text


def test_guarantees_name_what_is_not_compared(runs):
    a, b = runs
    result = _mueval("compare", "--guarantees", str(a), str(b))
    assert result.exit_code == 0, result.output
    assert "not compared: classifier rf only in a" in result.output.splitlines()
    assert "not compared: strategy ucm only in b" in result.output
