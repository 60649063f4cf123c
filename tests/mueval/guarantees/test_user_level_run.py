"""The exact per-user verdicts wired through a run: evaluate, the run folder, the
reader's checks, the warnings, class-conditional cells and the command line.

A small synthetic run where one user's features are noisy (its scores are
shifted against everyone else's): the models trained and calibrated on the other
users leave it below target, and the exact test flags it; the valid users are
not flagged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mueval
from mueval.cli.main import main
from mueval.guarantees.covered_law import null_pmf, threshold_rank
from mueval.guarantees.stratified_null import task_pmf
from mueval.guarantees.user_level import user_verdicts
from mueval.runfolder import RunFolderError

SHIFTED = 6


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values by their definition: for the i-th smallest, the
    largest of min(1, (u - j + 1) p_(j)) over j <= i."""
    u = len(p)
    ranked = sorted(range(u), key=lambda i: p[i])
    out = np.empty(u)
    for position, i in enumerate(ranked):
        out[i] = max(min(1.0, (u - j) * p[ranked[j]]) for j in range(position + 1))
    return out


def _frame(seed: int = 1, users: int = 6) -> pd.DataFrame:
    """Users of 120 rows, 3 classes; user ``SHIFTED`` has noisy features."""
    rng = np.random.default_rng(seed)
    parts = []
    for u in range(1, users + 1):
        y = np.tile(["a", "b", "c"], 40)
        x = rng.normal(size=(120, 2))
        x += (y == "b")[:, None] * 2.0 + (y == "c")[:, None] * np.array([0.0, 3.0])
        if u == SHIFTED:
            x += rng.normal(scale=2.5, size=x.shape)
        parts.append(pd.DataFrame({"userid": u, "label": y, "x1": x[:, 0], "x2": x[:, 1]}))
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = mueval.evaluate(
        _frame(),
        strategies="mm,uim,ucm",
        classifiers="nb",
        iterations=3,
        diagnostics="none",
        progress=False,
    )
    return run.save(tmp_path_factory.mktemp("verdicts") / "run")


def test_the_shifted_user_is_flagged_and_the_valid_users_are_not(saved: Path) -> None:
    users = mueval.Run.load(saved).user_coverage.set_index(["strategy", "user"])
    for strategy in ("mm", "uim"):
        assert users.loc[(strategy, str(SHIFTED)), "below"]
        assert users.loc[(strategy, str(SHIFTED)), "p_adjusted"] < 0.01
        others = users.loc[strategy].drop(index=str(SHIFTED))
        assert not others["below"].any()
    # UCM calibrates on the user's own rows: exchangeable by construction.
    assert not users.loc["ucm", "below"].any()


def test_the_verdicts_are_user_verdicts_of_the_runs_cells(saved: Path) -> None:
    """An independent path to the cells: test and covered rows per user and
    iteration from the predictions, n_cal from the splits (MM: one set per
    iteration shared by every user)."""
    run = mueval.Run.load(saved)
    preds, splits = run.predictions, run.splits
    cells = (
        preds.groupby(["strategy", "classifier", "userid", "iteration"])["covered"]
        .agg(n_test="size", n_covered="sum")
        .reset_index()
        .rename(columns={"userid": "user"})
    )
    n_cal = {
        (r.strategy, r.iteration, None if pd.isna(r.user) else r.user): r.n_cal
        for r in splits.itertuples()
    }
    cells["n_cal"] = [
        n_cal[(s, i, None if s == "mm" else u)]
        for s, i, u in zip(cells.strategy, cells.iteration, cells.user, strict=True)
    ]
    # UCM splits each user's rows stratified by class: the exact law of that
    # split from the task's recorded score order; MM and UIM: the Beta-Binomial.
    order = {
        (r.strategy, r.iteration, r.user): r.pooled_order
        for r in splits.itertuples()
        if r.strategy == "ucm"
    }
    cells["null_pmf"] = [
        task_pmf(order[(s, i, u)], threshold_rank(n, 0.05, "study")) if s == "ucm" else None
        for s, i, u, n in zip(cells.strategy, cells.iteration, cells.user, cells.n_cal, strict=True)
    ]
    expected = user_verdicts(cells, alpha=0.05, rule="study")
    got = run.user_coverage.merge(expected, on=["strategy", "classifier", "user"])
    assert len(got) == len(expected) == 18
    # The exact law is not the Beta-Binomial's: the p-values differ.
    beta = user_verdicts(cells.drop(columns="null_pmf"), alpha=0.05, rule="study")
    ucm = (expected["strategy"] == "ucm").to_numpy()
    assert not np.allclose(expected["p_value"][ucm], beta["p_value"][ucm], rtol=1e-6)
    np.testing.assert_allclose(got["p_value_x"], got["p_value_y"], rtol=1e-12)
    # The run's family (the default, "run") is all 18 users of the three
    # strategies at once: Holm over the 18 p-values, by its definition.
    assert run.config["user_family"] == "run"
    holm = _holm(got["p_value_y"].to_numpy())
    np.testing.assert_allclose(got["p_adjusted_x"], holm, rtol=1e-12)
    assert (got["below_x"].astype(bool).to_numpy() == (holm <= 0.05)).all()
    # The family "pair": Holm within each strategy (one classifier here).
    pair = user_verdicts(cells, alpha=0.05, rule="study", family="pair")
    for _, part in pair.groupby("strategy"):
        by_hand = _holm(part["p_value"].to_numpy())
        np.testing.assert_allclose(part["p_adjusted"], by_hand, rtol=1e-12)
    # MM and UIM reuse the user's rows in every iteration: Bonferroni; UCM: convolution.
    combine = expected.groupby("strategy")["combine"].first().to_dict()
    assert combine == {"mm": "bonferroni", "uim": "bonferroni", "ucm": "convolution"}


def test_the_warning_names_the_level_and_the_correction(saved: Path) -> None:
    warnings = [w for w in mueval.Run.load(saved).warnings if w["kind"] == "users-below-target"]
    assert {w["strategy"] for w in warnings} == {"mm", "uim"}
    for w in warnings:
        assert "1 of 6 users" in w["message"]
        assert "below target at level 0.05 after Holm over every user of the run" in w["message"]
        assert "significantly" not in w["message"]
        assert "Clopper-Pearson interval of the observed rate" in w["message"]


def test_run_json_and_the_csv_files_round_trip(saved: Path) -> None:
    info = json.loads((saved / "run.json").read_text())
    config = info["config"]
    assert config["user_level"] == 0.05
    assert config["user_correction"] == "holm"
    assert config["user_combine"] == {"mm": "bonferroni", "uim": "bonferroni", "ucm": "convolution"}
    stored = pd.read_csv(saved / "user_coverage.csv")
    for column in ("low", "high", "expected_covered", "p_value", "p_adjusted", "below"):
        assert column in stored.columns
    summary = pd.read_csv(saved / "coverage_summary.csv").set_index("strategy")
    flagged = stored.groupby("strategy")["below"].sum()
    for strategy in ("mm", "uim", "ucm"):
        assert summary.loc[strategy, "n_below"] == flagged[strategy]
        assert summary.loc[strategy, "share_below"] == pytest.approx(flagged[strategy] / 6)
    again = mueval.Run.load(saved)
    assert again.user_coverage["below"].dtype == "boolean"
    assert int(again.user_coverage["below"].sum()) == 2


def _copy(saved: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    target.mkdir()
    for item in saved.iterdir():
        (target / item.name).write_bytes(item.read_bytes())
    return target


def test_the_reader_refuses_a_flag_that_does_not_follow(saved: Path, tmp_path: Path) -> None:
    folder = _copy(saved, tmp_path)
    stored = pd.read_csv(folder / "user_coverage.csv")
    stored.loc[(stored.strategy == "uim") & (stored.user == SHIFTED), "below"] = False
    stored.to_csv(folder / "user_coverage.csv", index=False)
    with pytest.raises(RunFolderError, match=r"uim / nb user 6 has p_value .* below False"):
        mueval.Run.load(folder)


def test_the_reader_refuses_settings_it_cannot_apply(saved: Path, tmp_path: Path) -> None:
    folder = _copy(saved, tmp_path)
    info = json.loads((folder / "run.json").read_text())
    info["config"]["user_correction"] = "bonf"
    (folder / "run.json").write_text(json.dumps(info))
    with pytest.raises(RunFolderError, match="config.user_correction is 'bonf'"):
        mueval.Run.load(folder)
    # Another correction than the one the files were written with: the stored
    # adjusted p-values no longer follow.
    info["config"]["user_correction"] = "none"
    (folder / "run.json").write_text(json.dumps(info))
    with pytest.raises(RunFolderError, match="p_adjusted"):
        mueval.Run.load(folder)


def test_a_folder_from_before_the_verdicts_gets_them_recomputed(
    saved: Path, tmp_path: Path
) -> None:
    folder = _copy(saved, tmp_path)
    info = json.loads((folder / "run.json").read_text())
    for key in ("user_level", "user_correction", "user_combine", "user_family"):
        del info["config"][key]
    # Its warning said "significantly" and its below was the interval rule.
    for w in info["warnings"]:
        w["message"] = w["message"].replace("below target at level 0.05 after Holm", "sig")
    (folder / "run.json").write_text(json.dumps(info))
    stored = pd.read_csv(folder / "user_coverage.csv")
    stored = stored.drop(columns=["expected_covered", "p_value", "p_adjusted"])
    stored["below"] = stored["high"] < 0.95
    stored.to_csv(folder / "user_coverage.csv", index=False)
    again = mueval.Run.load(folder)
    fresh = mueval.Run.load(saved)
    pd.testing.assert_frame_equal(
        again.user_coverage[["strategy", "user", "p_value", "below"]],
        fresh.user_coverage[["strategy", "user", "p_value", "below"]],
    )
    assert any("after Holm" in w["message"] for w in again.warnings)


def test_a_folder_from_before_the_family_is_read_per_pair(tmp_path: Path) -> None:
    """A run.json without user_family was written when the correction ran within
    each strategy and classifier: its files are checked against that rule."""
    run = mueval.evaluate(
        _frame(),
        strategies="mm,uim",
        classifiers="nb",
        iterations=2,
        diagnostics="none",
        progress=False,
        user_family="pair",
    )
    assert run.config["user_family"] == "pair"
    folder = run.save(tmp_path / "pair")
    info = json.loads((folder / "run.json").read_text())
    del info["config"]["user_family"]
    (folder / "run.json").write_text(json.dumps(info))
    again = mueval.Run.load(folder)
    pd.testing.assert_series_equal(
        again.user_coverage["p_adjusted"], run.user_coverage["p_adjusted"]
    )
    # The same files claimed for the family "run" no longer follow: 12 users
    # in one family, not 6 in each.
    info["config"]["user_family"] = "run"
    (folder / "run.json").write_text(json.dumps(info))
    with pytest.raises(RunFolderError, match="p_adjusted"):
        mueval.Run.load(folder)
    info["config"]["user_family"] = "everyone"
    (folder / "run.json").write_text(json.dumps(info))
    with pytest.raises(RunFolderError, match="config.user_family is 'everyone'"):
        mueval.Run.load(folder)


def test_class_conditional_cells_are_exact(tmp_path: Path) -> None:
    run = mueval.evaluate(
        _frame(),
        strategies="ucm,uim",
        classifiers="nb",
        iterations=2,
        condition="class",
        diagnostics="none",
        progress=False,
    )
    splits = run.splits
    for r in splits.itertuples():
        assert sum(r.n_cal_class) == r.n_cal and min(r.n_cal_class) == r.n_cal_cell
    # By hand: per user and iteration, the classes' cells convolved (UCM: the
    # iterations too), each with its own size and the study rule's rank.
    preds = run.predictions
    user = preds[(preds.strategy == "ucm") & (preds.userid == "3")]
    m, n, k, covered = [], [], [], 0
    for iteration, part in user.groupby("iteration"):
        sizes = splits[
            (splits.strategy == "ucm") & (splits.iteration == iteration) & (splits.user == "3")
        ]["n_cal_class"].iloc[0]
        for c, label in enumerate(run.classes):
            rows = part[part.y_true == label]
            m.append(len(rows))
            n.append(int(sizes[c]))
            k.append(threshold_rank(int(sizes[c]), 0.05, "study"))
            covered += int(rows.covered.sum())
    p = float(null_pmf(m, n, k)[: covered + 1].sum())
    table = run.user_coverage.set_index(["strategy", "user"])
    assert table.loc[("ucm", "3"), "p_value"] == pytest.approx(p, rel=1e-12)
    assert table.loc[("uim", str(SHIFTED)), "below"]
    folder = run.save(tmp_path / "run")
    splits = pd.read_parquet(folder / "splits.parquet")
    splits.at[0, "n_cal_class"] = [1, 2, 3]
    splits.to_parquet(folder / "splits.parquet", index=False)
    with pytest.raises(RunFolderError, match="n_cal_class .* adds up to 6"):
        mueval.Run.load(folder)


def test_uxc_has_no_verdict_and_is_never_flagged() -> None:
    run = mueval.evaluate(
        _frame(users=4), strategies="uxc", classifiers="nb", iterations=1, progress=False
    )
    assert run.user_coverage["below"].isna().all()
    assert run.user_coverage["p_value"].isna().all()
    assert int(run.coverage_summary["n_below"].iloc[0]) == 0
    assert not [w for w in run.warnings if w["kind"] == "users-below-target"]


def test_the_command_line_sets_level_and_correction(tmp_path: Path) -> None:
    data = tmp_path / "users.csv"
    _frame().to_csv(data, index=False)
    out = tmp_path / "run"
    args = ["evaluate", "--data", str(data), "-s", "uim", "-c", "nb", "--iterations", "2"]
    args += ["--user-level", "0.01", "--user-correction", "bh", "--diagnostics", "none"]
    result = CliRunner().invoke(main, [*args, "--no-progress", "--out", str(out)])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "run.json").read_text())["config"]
    assert (config["user_level"], config["user_correction"]) == (0.01, "bh")
    assert config["user_family"] == "run"
    run = mueval.Run.load(out)
    [warning] = [w for w in run.warnings if w["kind"] == "users-below-target"]
    assert "below target at level 0.01 after Benjamini-Hochberg" in warning["message"]
    bad = CliRunner().invoke(main, [*args[:-4], "--user-correction", "bonf"])
    assert bad.exit_code == 2
    assert "bonf" in bad.output
    bad = CliRunner().invoke(main, [*args, "--user-family", "everyone"])
    assert bad.exit_code == 2
    assert "everyone" in bad.output
    report = CliRunner().invoke(main, ["compare", "--guarantees", str(out)])
    assert report.exit_code == 0, report.output
    assert "below target at level 0.01 after Benjamini-Hochberg" in report.output
