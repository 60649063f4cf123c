"""Comparing per-user guarantees between strategies and runs: the summaries side by
side, recomputed here from the prediction rows and splits (the verdicts with
scipy's Beta-Binomial and Holm by hand), and McNemar's exact test by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

import mueval
from mueval.cli.main import main
from mueval.comparison.guarantees import users_below_test
from mueval.data.synthetic import make_users
from mueval.errors import DataError
from mueval.guarantees.covered_law import threshold_rank


def _two_sided_binomial(k: int, n: int) -> float:
    """Exact two-sided p of Binomial(n, 1/2) at k, by summing the probabilities."""
    probs = [math.comb(n, i) / 2**n for i in range(n + 1)]
    return min(1.0, sum(p for p in probs if p <= probs[k] * (1 + 1e-12)))


@pytest.mark.parametrize(
    ("a", "b", "only_a", "p"),
    [
        # Users 1 and 2 below under A only: 2 discordant, all one way, p = 2 * (1/2)^2.
        ({1: True, 2: True, 3: False}, {1: False, 2: False, 3: False}, 2, 0.5),
        # 3 one way, 1 the other: p = 2 * P(X <= 1 | n=4) = 2 * 5/16.
        ({1: 1, 2: 1, 3: 1, 4: 0, 5: 1}, {1: 0, 2: 0, 3: 0, 4: 1, 5: 1}, 3, 0.625),
        # 6 one way, none the other: p = 2 / 64.
        (dict.fromkeys(range(6), True), dict.fromkeys(range(6), False), 6, 1 / 32),
    ],
)
def test_mcnemar_exact_by_hand(a, b, only_a, p) -> None:
    result = users_below_test(a, b)
    assert result.statistic == only_a
    assert result.p_value == pytest.approx(p)
    assert result.n == len(a)


def test_mcnemar_uses_only_users_of_both_and_is_undefined_without_discordance() -> None:
    result = users_below_test({1: True, 2: False, 9: True}, {1: True, 2: False, 8: False})
    assert result.n == 2
    assert np.isnan(result.p_value)
    assert "one strategy only" in result.note


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    # Strong drift: UIM (calibrated on other users) leaves some users below
    # target, UCM (calibrated on the user) should not.
    table = make_users(8, rows_per_user=90, drift=3.0, seed=4)
    root = tmp_path_factory.mktemp("guarantees")
    paths = []
    for split in ("random", "blocked"):
        run = mueval.evaluate(
            table,
            strategies="uim,ucm",
            classifiers="nb",
            iterations=2,
            split=split,
            alpha=0.1,
            diagnostics="none",
            progress=False,
        )
        paths.append(run.save(root / split))
    return paths[0], paths[1]


def _stratified_law(signed: np.ndarray, m: int, k: int) -> np.ndarray:
    """The covered count's law under a class-stratified split, by a second route:
    its CDF, P(X <= x) = P(at least k calibration rows among the first x + k
    rows in score order), from scipy's hypergeometric laws per class."""
    signed = np.asarray(signed)
    classes = np.where(signed >= 0, signed, -signed - 1)
    cdf = []
    for x in range(m + 1):
        head = classes[: x + k]
        total = np.ones(1)
        for c in np.unique(classes):
            n_c = int(((signed >= 0) & (classes == c)).sum())
            draws = int((head == c).sum())
            law = stats.hypergeom.pmf(np.arange(n_c + 1), int((classes == c).sum()), n_c, draws)
            total = np.convolve(total, law)
        cdf.append(total[k:].sum())
    return np.diff(np.concatenate([[0.0], cdf]))


def _independent_summary(folder: Path, alpha: float) -> pd.DataFrame:
    """Per-user verdicts from the raw rows and splits: each iteration's Beta-Binomial
    (scipy's), or for UCM under a random split the law of its class-stratified
    split (:func:`_stratified_law`), its threshold rank from the study rule,
    iterations combined as the split allows (convolution for UCM under a random
    split, Bonferroni otherwise), Holm across every user of the run (the default
    family), flagged at 0.05."""
    preds = pd.read_parquet(folder / "predictions.parquet")
    splits = pd.read_parquet(folder / "splits.parquet")
    blocked = "blocked" in folder.name
    n_cal = {(r.strategy, r.iteration, str(r.user)): int(r.n_cal) for r in splits.itertuples()}
    orders = {}
    if not blocked:
        orders = {
            (r.strategy, r.iteration, str(r.user)): r.pooled_order
            for r in splits.itertuples()
            if r.strategy == "ucm"
        }
    keys = ["strategy", "classifier", "userid"]
    counts = preds.groupby(keys)["covered"].agg(["sum", "size"]).reset_index()
    pvalues = []
    for r in counts.itertuples():
        mine = preds[(preds.strategy == r.strategy) & (preds.userid == r.userid)]
        laws, seen = [], []
        for it, part in mine.groupby("iteration"):
            n = n_cal[(r.strategy, it, str(r.userid))]
            k = threshold_rank(n, alpha, "study")
            m = len(part)
            key = (r.strategy, it, str(r.userid))
            if key in orders:
                laws.append(_stratified_law(orders[key], m, k))
            else:
                laws.append(stats.betabinom.pmf(np.arange(m + 1), m, k, n + 1 - k))
            seen.append(int(part["covered"].sum()))
        if r.strategy == "ucm" and not blocked:
            total = laws[0]
            for law in laws[1:]:
                total = np.convolve(total, law)
            pvalues.append(total[: sum(seen) + 1].sum())
        else:
            each = [law[: c + 1].sum() for law, c in zip(laws, seen, strict=True)]
            pvalues.append(min(1.0, len(each) * min(each)))
    counts["p"] = pvalues
    # The runs' family is the default, "run": Holm across every user of both
    # strategies at once.
    order = np.argsort(counts["p"].to_numpy())
    p = counts["p"].to_numpy()[order]
    holm = np.maximum.accumulate(np.minimum(1, (len(p) - np.arange(len(p))) * p))
    flags = np.empty(len(p), dtype=bool)
    flags[order] = holm <= 0.05
    counts["below"] = flags
    counts["coverage"] = counts["sum"] / counts["size"]
    return counts


def test_summary_matches_an_independent_computation(two_runs) -> None:
    random_run, blocked_run = two_runs
    result = mueval.compare_guarantees([random_run, blocked_run])
    assert result.alpha == 0.1
    summary = result.summary.set_index(["strategy", "classifier"])
    # Both runs hold uim and ucm: each is prefixed with its run's label.
    assert set(summary.index.get_level_values(0)) == {
        "random/uim",
        "random/ucm",
        "blocked/uim",
        "blocked/ucm",
    }
    for label, folder in (("random", random_run), ("blocked", blocked_run)):
        mine = _independent_summary(folder, 0.1)
        stored = pd.read_csv(folder / "user_coverage.csv", dtype={"user": str})
        both = mine.assign(user=mine["userid"].astype(str)).merge(stored, on=["strategy", "user"])
        assert len(both) == len(mine)
        np.testing.assert_allclose(both["p"], both["p_value"], rtol=1e-6)
        for strategy, part in mine.groupby("strategy"):
            row = summary.loc[(f"{label}/{strategy}", "nb")]
            assert row["n_users"] == len(part)
            assert row["n_below"] == int(part["below"].sum())
            assert row["worst_coverage"] == pytest.approx(part["coverage"].min())
            pooled = part["sum"].sum() / part["size"].sum()
            assert row["pooled_coverage"] == pytest.approx(pooled)


def test_pair_tests_match_counts_from_the_rows(two_runs) -> None:
    random_run, blocked_run = two_runs
    result = mueval.compare_guarantees([random_run, blocked_run])
    mine = pd.concat(
        [
            _independent_summary(folder, 0.1).assign(
                strategy=lambda f, lb=label: lb + "/" + f.strategy
            )
            for label, folder in (("random", random_run), ("blocked", blocked_run))
        ]
    )
    below = {
        s: dict(zip(p["userid"], p["below"], strict=True)) for s, p in mine.groupby("strategy")
    }
    assert len(result.tests) == 6  # 4 strategies, one classifier: 4 choose 2
    for row in result.tests.itertuples():
        a, b = below[row.strategy_a], below[row.strategy_b]
        only_a = sum(a[u] and not b[u] for u in a)
        only_b = sum(b[u] and not a[u] for u in a)
        assert (row.only_a, row.only_b, row.n) == (only_a, only_b, len(a))
        if only_a + only_b:
            assert row.p_value == pytest.approx(_two_sided_binomial(only_a, only_a + only_b))
        else:
            assert np.isnan(row.p_value)


def test_runs_of_different_alpha_are_refused(tmp_path: Path, two_runs) -> None:
    table = make_users(4, rows_per_user=90, seed=1)
    other = mueval.evaluate(
        table, strategies="ucm", classifiers="nb", iterations=1, alpha=0.2, diagnostics="none"
    )
    with pytest.raises(DataError, match="different alpha"):
        mueval.compare_guarantees([two_runs[0], other])


def test_cli_prints_both_tables_and_writes_them(tmp_path: Path, two_runs) -> None:
    out = tmp_path / "guarantees.csv"
    result = CliRunner().invoke(
        main, ["compare", "--guarantees", str(two_runs[0]), str(two_runs[1]), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert f"wrote {out} and {tmp_path / 'guarantees.tests.csv'}\n" in result.output
    assert "replaced" not in result.output
    assert "target coverage: 0.9" in result.output
    assert "only_a" in result.output
    assert "random/ucm" in result.output and "blocked/uim" in result.output
    written = pd.read_csv(out)
    assert len(written) == 4
    # Several runs: each strategy against itself in the other run.
    tests = pd.read_csv(tmp_path / "guarantees.tests.csv")
    assert len(tests) == 2
    assert (
        tests.strategy_a.str.split("/").str[-1] == tests.strategy_b.str.split("/").str[-1]
    ).all()
    # --all-pairs: every pair of the four (two strategies in two runs).
    args = ["compare", "--guarantees", "--all-pairs", *map(str, two_runs), "--out", str(out)]
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0
    assert len(pd.read_csv(tmp_path / "guarantees.tests.csv")) == 6
    # Both files were there: the output names them as replaced.
    tests_out = tmp_path / "guarantees.tests.csv"
    assert f"; replaced the existing {out} and {tests_out}\n" in again.output
    # A tests file left by another run is named even when OUT is new.
    out.unlink()
    again = CliRunner().invoke(main, args)
    assert f"wrote {out} and {tests_out}; replaced the existing {tests_out}\n" in again.output
    # The filters narrow both tables.
    args = ["compare", "--guarantees", "-s", "ucm", *map(str, two_runs), "--out", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert set(pd.read_csv(out).strategy) == {"random/ucm", "blocked/ucm"}


def test_report_shows_runs_side_by_side(tmp_path: Path, two_runs) -> None:
    random_run, blocked_run = two_runs
    out = tmp_path / "report"
    args = ["report", str(random_run), "--with", str(blocked_run), "--figures", "none"]
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Runs side by side" in page
    summary = mueval.compare_guarantees([random_run, blocked_run]).summary
    for row in summary.itertuples():
        # Each strategy's pooled coverage and interval as compare_guarantees gives them.
        cell = f"{row.pooled_coverage:.3f} [{row.pooled_low:.3f}, {row.pooled_high:.3f}]"
        assert cell in page
        assert f"{row.n_below} of {row.n_users}" in page


def test_report_without_others_has_no_side_by_side(tmp_path: Path, two_runs) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(
        main, ["report", str(two_runs[0]), "--figures", "none", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "Runs side by side" not in (out / "report.html").read_text(encoding="utf-8")
