"""The exact test of coverage per class and per cohort (``conditional_coverage.csv``):
hand-computed cases, its level under exchangeability by simulation, and the
reader's checks of the stored columns."""

from __future__ import annotations

import shutil
from fractions import Fraction
from math import comb, factorial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mueval
from mueval.conformal.thresholds import lac_threshold
from mueval.data.synthetic import make_users
from mueval.guarantees.compute import conditional_tables
from mueval.runfolder import RunFolderError, read_run_folder

ALPHA = 0.05


def _beta(a: int, b: int) -> Fraction:
    """The Beta function at whole numbers: (a-1)! (b-1)! / (a+b-1)!."""
    return Fraction(factorial(a - 1) * factorial(b - 1), factorial(a + b - 1))


def _betabinom_pmf(m: int, a: int, b: int) -> list[Fraction]:
    """BetaBinomial(m, a, b) by its definition, in exact fractions."""
    return [comb(m, x) * _beta(x + a, m - x + b) / _beta(a, b) for x in range(m + 1)]


def _holm2(p: list[float]) -> list[float]:
    """Holm over two p-values, by its definition."""
    lo, hi = sorted(range(2), key=lambda i: p[i])
    out = [0.0, 0.0]
    out[lo] = min(1.0, 2 * p[lo])
    out[hi] = max(out[lo], min(1.0, p[hi]))
    return out


def _mm_rows(counts: dict[tuple[int, str], list[bool]], n_cal: dict[int, list[int]]):
    """MM prediction rows (two users alternate) and splits of a class-conditional run."""
    parts = []
    for (iteration, label), covered in counts.items():
        parts.append(
            pd.DataFrame(
                {
                    "strategy": "mm",
                    "classifier": "nb",
                    "iteration": iteration,
                    "userid": [1 + i % 2 for i in range(len(covered))],
                    "y_true": label,
                    "covered": covered,
                }
            )
        )
    splits = pd.DataFrame(
        {
            "strategy": "mm",
            "classifier": "nb",
            "iteration": list(n_cal),
            "user": "",
            "n_cal": [sum(v) for v in n_cal.values()],
            "n_cal_class": list(n_cal.values()),
        }
    )
    return pd.concat(parts, ignore_index=True), splits


def test_a_mondrian_class_row_is_its_beta_binomial_by_hand() -> None:
    # Two iterations; class a has 19 then 25 calibration rows, class b 30 then 40.
    # The study rule's rank, k = ceil(x (n - 1) / n) + 1 with x = (n + 1) 0.95:
    # n = 19: x = 19, k = 19; n = 25: x = 24.7, k = ceil(23.712) + 1 = 25;
    # n = 30: x = 29.45, k = ceil(28.468) + 1 = 30; n = 40: x = 38.95,
    # k = ceil(37.976) + 1 = 39. Each class's count is BetaBinomial(m, k, n + 1 - k)
    # (MM: every user's rows of a class share the class's threshold).
    counts = {
        (0, "a"): [True] * 4 + [False] * 2,
        (1, "a"): [True] * 7 + [False] * 1,
        (0, "b"): [True] * 9 + [False] * 1,
        (1, "b"): [True] * 5,
    }
    preds, splits = _mm_rows(counts, {0: [19, 30], 1: [25, 40]})
    config = {"condition": "class", "user_level": 0.05, "user_correction": "holm"}
    table = conditional_tables(
        preds, splits, alpha=ALPHA, classes=["a", "b"], cohorts=None, config=config
    ).set_index("value")

    def tail(m: int, n: int, k: int, covered: int) -> float:
        return float(sum(_betabinom_pmf(m, k, n + 1 - k)[: covered + 1]))

    # MM's iterations re-test the same users: Bonferroni over the two.
    p_a = min(1.0, 2 * min(tail(6, 19, 19, 4), tail(8, 25, 25, 7)))
    p_b = min(1.0, 2 * min(tail(10, 30, 30, 9), tail(5, 40, 39, 5)))
    assert table.loc["a", "p_value"] == pytest.approx(p_a, rel=1e-9)
    assert table.loc["b", "p_value"] == pytest.approx(p_b, rel=1e-9)
    assert table["p_adjusted"].tolist() == pytest.approx(_holm2([p_a, p_b]), rel=1e-9)
    assert table["below"].tolist() == [q <= 0.05 for q in _holm2([p_a, p_b])]
    # The interval stays, as a description: 11 of 14 for class a.
    assert table.loc["a", "n_covered"] == 11 and table.loc["a", "n"] == 14
    assert table.loc["a", "low"] < 11 / 14 < table.loc["a", "high"]


def test_a_flagrant_mondrian_class_is_below_target() -> None:
    # 2 of 30 covered against a rank-30 threshold of 30 rows (coverage Beta(30, 1)).
    counts = {(0, "a"): [True] * 2 + [False] * 28, (0, "b"): [True] * 30}
    preds, splits = _mm_rows(counts, {0: [30, 30]})
    table = conditional_tables(
        preds, splits, alpha=ALPHA, classes=["a", "b"], cohorts=None, config={"condition": "class"}
    ).set_index("value")
    p = float(sum(_betabinom_pmf(30, 30, 1)[:3]))
    assert table.loc["a", "p_value"] == pytest.approx(p, rel=1e-9)
    assert bool(table.loc["a", "below"]) and not bool(table.loc["b", "below"])


def test_a_cohort_row_under_udm_is_the_convolution_of_its_users_by_hand() -> None:
    # UDM, one iteration: user 1 has 20 calibration rows (rank 20), user 2 has
    # 39 (x = 38, k = ceil(37.03) + 1 = 39); their counts are independent, so the
    # cohort's count has the convolution of BetaBinomial(5, 20, 1) and
    # BetaBinomial(4, 39, 1).
    preds = pd.DataFrame(
        {
            "strategy": "udm",
            "classifier": "nb",
            "iteration": 0,
            "userid": [1] * 5 + [2] * 4 + [3] * 3,
            "target_user": [1] * 5 + [2] * 4 + [3] * 3,
            "y_true": "a",
            "covered": [True, True, True, False, False, True, True, True, False] + [True] * 3,
        }
    )
    splits = pd.DataFrame(
        {
            "strategy": "udm",
            "classifier": "nb",
            "iteration": 0,
            "user": ["1", "2", "3"],
            "n_cal": [20, 39, 25],
        }
    )
    cohorts = pd.Series({"1": "x", "2": "x", "3": "y"})
    config = {"condition": "cohort", "user_family": "pair"}
    table = conditional_tables(
        preds, splits, alpha=ALPHA, classes=["a"], cohorts=cohorts, config=config
    )
    one, two = _betabinom_pmf(5, 20, 1), _betabinom_pmf(4, 39, 1)
    covered = 6
    p = float(sum(one[i] * two[j] for i in range(6) for j in range(5) if i + j <= covered))
    rows = table.set_index(["by", "value"])
    assert rows.loc[("cohort", "x"), "p_value"] == pytest.approx(p, rel=1e-9)
    assert rows.loc[("cohort", "y"), "p_value"] == 1.0
    # A class under cohort calibration has no per-class guarantee: no test.
    assert np.isnan(rows.loc[("class", "a"), "p_value"])
    assert pd.isna(rows.loc[("class", "a"), "below"])


def _simulated(rng: np.random.Generator, shift: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An MM class-conditional run of 3 iterations, 3 classes, 4 users: every
    score uniform (exchangeable), class c0's test scores raised by ``shift``."""
    parts, sizes = [], {}
    for iteration in range(3):
        n_cal = [int(v) for v in rng.integers(19, 40, size=3)]
        sizes[iteration] = n_cal
        for c, n in enumerate(n_cal):
            q = lac_threshold(rng.uniform(size=n), ALPHA, rule="study")
            m = 24
            test = rng.uniform(size=m) + (shift if c == 0 else 0.0)
            parts.append(
                pd.DataFrame(
                    {
                        "strategy": "mm",
                        "classifier": "nb",
                        "iteration": iteration,
                        "userid": np.arange(m) % 4,
                        "y_true": f"c{c}",
                        "covered": test <= q,
                    }
                )
            )
    splits = pd.DataFrame(
        {
            "strategy": "mm",
            "classifier": "nb",
            "iteration": list(sizes),
            "user": "",
            "n_cal": [sum(v) for v in sizes.values()],
            "n_cal_class": list(sizes.values()),
        }
    )
    return pd.concat(parts, ignore_index=True), splits


@pytest.mark.slow
def test_false_class_flags_stay_at_the_level_under_exchangeability() -> None:
    # Exchangeable calibration and test scores per class: any flag is false.
    # Holm at 0.05 over the three classes: runs with a flag at most 5 %, with
    # the simulation's error (3 SD of 400 runs: 3.3 points).
    rng = np.random.default_rng(30)
    classes = ["c0", "c1", "c2"]
    runs = 400
    flagged = 0
    for _ in range(runs):
        preds, splits = _simulated(rng, 0.0)
        table = conditional_tables(
            preds, splits, alpha=ALPHA, classes=classes, cohorts=None, config={"condition": "class"}
        )
        flagged += bool(table["below"].fillna(False).any())
    assert flagged / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    # And it has power: a class whose test scores sit 0.3 higher is flagged.
    hits = 0
    for _ in range(40):
        preds, splits = _simulated(rng, 0.3)
        table = conditional_tables(
            preds, splits, alpha=ALPHA, classes=classes, cohorts=None, config={"condition": "class"}
        ).set_index("value")
        hits += bool(table.loc["c0", "below"])
    assert hits >= 30


def _frame() -> pd.DataFrame:
    return make_users(6, rows_per_user=120, seed=3)


@pytest.fixture(scope="module")
def mondrian_folder(tmp_path_factory) -> Path:
    run = mueval.evaluate(
        _frame(),
        strategies="mm,ucm",
        classifiers="nb",
        iterations=2,
        condition="class",
        progress=False,
        diagnostics="none",
    )
    return run.save(tmp_path_factory.mktemp("runs") / "run")


def _copy(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(folder, target)
    return target


def test_the_folder_holds_the_tests_and_reads_them_back(mondrian_folder: Path) -> None:
    written = pd.read_csv(mondrian_folder / "conditional_coverage.csv")
    assert {"p_value", "p_adjusted", "below"} <= set(written.columns)
    assert written["p_value"].notna().all()  # every class row of a Mondrian run is tested
    folder = read_run_folder(mondrian_folder)
    assert folder.conditional_coverage["below"].dtype == "boolean"
    assert np.allclose(folder.conditional_coverage["p_value"], written["p_value"])


@pytest.mark.parametrize("column", ["p_value", "p_adjusted", "below"])
def test_a_tampered_test_is_refused(mondrian_folder: Path, tmp_path: Path, column: str) -> None:
    target = _copy(mondrian_folder, tmp_path)
    table = pd.read_csv(target / "conditional_coverage.csv")
    if column == "below":
        table.loc[0, "below"] = not bool(table.loc[0, "below"])
    else:
        table.loc[0, column] = table.loc[0, column] / 2
    table.to_csv(target / "conditional_coverage.csv", index=False)
    with pytest.raises(RunFolderError, match="conditional_coverage.csv: .* has p_value"):
        read_run_folder(target)


def test_a_folder_without_the_tests_gets_them_computed(
    mondrian_folder: Path, tmp_path: Path
) -> None:
    target = _copy(mondrian_folder, tmp_path)
    table = pd.read_csv(target / "conditional_coverage.csv")
    expected = table[["p_value", "p_adjusted", "below"]].copy()
    # As written before the test: ``below`` was the interval rule.
    old = table.drop(columns=["p_value", "p_adjusted"])
    old["below"] = old["high"] < 1 - ALPHA
    old.to_csv(target / "conditional_coverage.csv", index=False)
    folder = read_run_folder(target)
    got = folder.conditional_coverage
    assert np.allclose(got["p_value"], expected["p_value"])
    assert got["below"].tolist() == expected["below"].tolist()


def test_the_report_marks_the_test_not_the_interval() -> None:
    from mueval.report.conditional import conditional_coverage_section

    # Class a: the test flags it; b: its interval lies below 0.95 but the test
    # does not flag it; c: no test (unconditional calibration).
    table = pd.DataFrame(
        {
            "strategy": "mm",
            "classifier": "nb",
            "by": "class",
            "value": ["a", "b", "c"],
            "n_users": 2,
            "n": 50,
            "n_covered": [30, 40, 41],
            "coverage": [0.6, 0.8, 0.82],
            "low": [0.45, 0.66, 0.69],
            "high": [0.74, 0.9, 0.91],
            "below": pd.array([True, False, pd.NA], dtype="boolean"),
            "p_value": [0.0001, 0.2, np.nan],
            "p_adjusted": [0.0002, 0.2, np.nan],
        }
    )
    section = conditional_coverage_section(
        table, {"condition": "class"}, ["mm"], ["nb"], target=0.95, name=lambda s, c: (s, c)
    )
    body = "".join(section.body)
    assert body.count("below target (adjusted p") == 1
    assert "0.600 [0.450, 0.740] below target (adjusted p 0.0002)" in body
    assert "0.800 [0.660, 0.900] below" not in body


def _simulated_cohorts(rng: np.random.Generator, strategy: str):
    """A per-user run (each user calibrated on its own rows) of 3 iterations and
    6 users in 2 cohorts, every score uniform (exchangeable)."""
    parts, splits = [], []
    for iteration in range(3):
        for user in range(6):
            n = int(rng.integers(20, 40))
            q = lac_threshold(rng.uniform(size=n), ALPHA, rule="study")
            m = int(rng.integers(5, 15))
            covered = rng.uniform(size=m) <= q
            parts.append(
                pd.DataFrame(
                    {
                        "strategy": strategy,
                        "classifier": "nb",
                        "iteration": iteration,
                        "userid": user,
                        "target_user": user,
                        "y_true": "a",
                        "covered": covered,
                    }
                )
            )
            splits.append((strategy, "nb", iteration, str(user), n))
    columns = ["strategy", "classifier", "iteration", "user", "n_cal"]
    return pd.concat(parts, ignore_index=True), pd.DataFrame(splits, columns=columns)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["udm", "ucm"])
def test_false_cohort_flags_stay_at_the_level_under_exchangeability(strategy: str) -> None:
    # UDM: independent users (exact convolution); UCM: the comonotone bound.
    # Iterations by convolution (a random split). Holm at 0.05 over 2 cohorts.
    rng = np.random.default_rng(31)
    cohorts = pd.Series({str(u): "x" if u < 3 else "y" for u in range(6)})
    runs = 300
    flagged = 0
    for _ in range(runs):
        preds, splits = _simulated_cohorts(rng, strategy)
        table = conditional_tables(
            preds,
            splits,
            alpha=ALPHA,
            classes=["a"],
            cohorts=cohorts,
            config={"condition": "cohort"},
        )
        flagged += bool(table["below"].fillna(False).any())
    assert flagged / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
