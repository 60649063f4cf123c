"""Benchmark: coverage over overlapping cohorts, conditional quantile against Mondrian.

Two parts.

**Simulation** (default). Rows of users in three overlapping cohort columns,
sex (F, M) x age band (young, mid, old) x device (phone, watch): 12 cells, of
unequal sizes (old users on a watch are 4 % of the rows). A model's class
probabilities over 6 classes are simulated: each class gets a N(0, 1) logit
and the true class 3 - d more, where the difficulty d adds 0.4 for M, 0.6
for mid and 1.2 for old, 0.9 for watch, and 1.0 more for old on a watch (an
interaction: no sum of margins describes that cell). Each repetition draws
``--n-cal`` calibration and ``--n-test`` test rows and conformalizes them with
:func:`mueval.conformal.sets.conformalize` (LAC, alpha = 0.1, MAPIE 1.x's rank
for every method, so that they differ only in what they condition on):

- ``split``: one threshold (the protocol's calibration);
- ``mondrian:COL``: one threshold per cohort of one column (``--condition
  cohort:COL``);
- ``mondrian:cell``: one per cell of the three columns;
- ``cohorts:sex,age,device``: the conditional quantile regression of Gibbs,
  Cherian and Candès on the margins (``--condition cohorts:sex,age,device``);
- ``cohorts:...,age*device``: with the age x device cells added.

Printed: coverage of every cohort (the 7 margins), the worst of the 6 age x
device cells and of the 12 cells, the mean set size, each the mean over repetitions with its Monte Carlo
standard error (over repetitions: a repetition's rows share its calibration).
The conditional quantile's guarantee is coverage >= 1 - alpha in every cohort
the span holds: every margin for ``cohorts:sex,age,device``, and the age x
device cells too with the ``age*device`` term; Mondrian by one column covers
that column's cohorts only.

**A real dataset** (``--dataset wisdm --manual-dir DIR``, or ``gestures``).
The built-in datasets carry no user attributes, so two are derived from each
user's own rows and given as a cohorts table (as ``--cohorts FILE.csv`` does
from the command line): ``pace``, whether the user's median resultant
acceleration (WISDM's ``RESULTANT``; for other tables the mean of every
feature) over all their rows is above the median user's, and ``volume``,
whether the user has more rows than the median user (where every user has as
many, as in gestures: whether the median spread of a row's features is above
the median user's). Both are user-level and
fixed before any split; they stand in for the demographics a real study
would have. The run goes through :func:`mueval.evaluate` (Naive Bayes,
``--iterations``), and prints for MM under no condition, Mondrian by each
column and the conditional quantile, and for UIM and UCM unconditioned, the
coverage, the worst cohort's and the worst user's coverage, and the mean set
size.

Run::

    python benchmarks/cohort_conditional.py [--reps 200] [--n-cal 2400] [--n-test 2400]
    python benchmarks/cohort_conditional.py --dataset wisdm --manual-dir ../shared/data/wisdm
    python benchmarks/cohort_conditional.py --dataset wisdm --manual-dir ../shared/data/wisdm \\
        --write-cohorts wisdm_cohorts.csv   # for mueval evaluate --cohorts
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time

import numpy as np
import pandas as pd

from mueval.conformal.sets import conformalize
from mueval.data.cohorts import cohort_design

ALPHA = 0.1
COLUMNS = ("sex", "age", "device")
LEVELS = (("F", "M"), ("young", "mid", "old"), ("phone", "watch"))
CELLS = [(s, a, d) for s in LEVELS[0] for a in LEVELS[1] for d in LEVELS[2]]


def _cell_weights() -> np.ndarray:
    """Share of rows of each cell: old users on a watch are 4 % of the rows."""
    weights = np.array(
        [
            {"young": 1.0, "mid": 0.8, "old": 0.6}[a] * {"phone": 1.0, "watch": 0.45}[d]
            for _, a, d in CELLS
        ]
    )
    old_watch = np.array([a == "old" and d == "watch" for _, a, d in CELLS])
    weights[old_watch] *= 0.04 / (weights[old_watch].sum() / weights.sum())
    return weights / weights.sum()


def _difficulty(cell: tuple[str, str, str]) -> float:
    s, a, d = cell
    base = 0.4 * (s == "M") + {"young": 0.0, "mid": 0.6, "old": 1.2}[a] + 0.9 * (d == "watch")
    return base + 1.0 * (a == "old" and d == "watch")


def _draw(rng: np.random.Generator, n: int, k: int = 6) -> tuple[np.ndarray, ...]:
    """Cell codes, labels and model probabilities of ``n`` rows."""
    codes = rng.choice(len(CELLS), size=n, p=_cell_weights())
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    hard = np.array([_difficulty(c) for c in CELLS])[codes]
    logits[np.arange(n), y] += 3.0 - hard
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    return codes, y, proba / proba.sum(axis=1, keepdims=True)


def _methods() -> dict[str, dict]:
    """Each method's bins (a function of the cell code) and design."""
    cells = np.arange(len(CELLS))
    methods: dict[str, dict] = {"split": {}}
    for j, column in enumerate(COLUMNS):
        level = {v: i for i, v in enumerate(LEVELS[j])}
        methods[f"mondrian:{column}"] = {"bins": np.array([level[c[j]] for c in CELLS])}
    methods["mondrian:cell"] = {"bins": cells}
    margins = cohort_design(CELLS, [[0], [1], [2]]).matrix
    methods["cohorts:sex,age,device"] = {"bins": cells, "design": margins}
    with_cells = cohort_design(CELLS, [[0], [1], [2], [1, 2]]).matrix
    methods["cohorts:sex,age,device,age*device"] = {"bins": cells, "design": with_cells}
    return methods


def _groups() -> dict[str, np.ndarray]:
    """Cell membership of every margin cohort and every cell."""
    out = {}
    for j, column in enumerate(COLUMNS):
        for value in LEVELS[j]:
            out[f"{column}={value}"] = np.array([c[j] == value for c in CELLS])
    for a in LEVELS[1]:
        for d in LEVELS[2]:
            out[f"{a}*{d}"] = np.array([c[1] == a and c[2] == d for c in CELLS])
    for i, cell in enumerate(CELLS):
        member = np.zeros(len(CELLS), dtype=bool)
        member[i] = True
        out["*".join(cell)] = member
    return out


def simulate(reps: int, n_cal: int, n_test: int, seed: int) -> pd.DataFrame:
    """One row per (repetition, method): coverage of every group, set size, seconds."""
    rng = np.random.default_rng(seed)
    methods, groups = _methods(), _groups()
    rows = []
    for rep in range(reps):
        cal_codes, y_cal, proba_cal = _draw(rng, n_cal)
        test_codes, y_test, proba_test = _draw(rng, n_test)
        for name, spec in methods.items():
            clock = time.perf_counter()
            bins = None
            if "bins" in spec:
                bins = (spec["bins"][cal_codes], spec["bins"][test_codes])
            out = conformalize(
                proba_cal,
                y_cal,
                proba_test,
                alpha=ALPHA,
                threshold="mapie",
                bins=bins,
                design=spec.get("design"),
                small_bins="full-set",
            )
            covered = out.sets[np.arange(n_test), y_test]
            row = {"rep": rep, "method": name, "size": out.sets.sum(axis=1).mean()}
            row["seconds"] = time.perf_counter() - clock
            row["all"] = covered.mean()
            for group, member in groups.items():
                rows_in = member[test_codes]
                row[group] = covered[rows_in].mean() if rows_in.any() else np.nan
            rows.append(row)
    return pd.DataFrame(rows)


def _mean_se(values: pd.Series) -> str:
    values = values.dropna()
    se = values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return f"{values.mean():.3f}±{se:.3f}"


def print_simulation(table: pd.DataFrame, reps: int, n_cal: int, n_test: int) -> None:
    margins = [f"{c}={v}" for j, c in enumerate(COLUMNS) for v in LEVELS[j]]
    cells = ["*".join(c) for c in CELLS]
    age_device = [f"{a}*{d}" for a in LEVELS[1] for d in LEVELS[2]]
    print(
        f"simulation: {reps} repetitions, {n_cal} calibration and {n_test} test rows each, "
        f"alpha = {ALPHA} (target coverage {1 - ALPHA:.2f}); mean ± Monte Carlo SE over "
        "repetitions\n"
    )
    header = ["method", "all", *margins, "worst age*device", "worst cell", "size", "s/rep"]
    lines = []
    for method, part in table.groupby("method", sort=False):
        worst = part[cells].mean().idxmin()
        worst_ad = part[age_device].mean().idxmin()
        lines.append(
            [
                method,
                _mean_se(part["all"]),
                *(_mean_se(part[m]) for m in margins),
                f"{_mean_se(part[worst_ad])} ({worst_ad})",
                f"{_mean_se(part[worst])} ({worst})",
                f"{part['size'].mean():.2f}",
                f"{part['seconds'].mean():.3f}",
            ]
        )
    widths = [max(len(str(r[i])) for r in [header, *lines]) for i in range(len(header))]
    for r in [header, *lines]:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)))
    print("\ncoverage per cell (mean over repetitions):")
    cell_table = table.groupby("method", sort=False)[cells].mean().T.round(3)
    print(cell_table.to_string())


def _derived_cohorts(frame: pd.DataFrame) -> pd.DataFrame:
    """Two user-level attributes from each user's own rows (see the module notes)."""
    features = [c for c in frame.columns if c not in ("userid", "label")]
    level = frame["RESULTANT"] if "RESULTANT" in frame else frame[features].mean(axis=1)
    rows = frame.groupby("userid").size()
    if rows.nunique() == 1:
        # Every user has as many rows (gestures): the spread of the features instead.
        rows = frame[features].std(axis=1).groupby(frame["userid"]).median()
    pace = level.groupby(frame["userid"]).median()
    return pd.DataFrame(
        {
            "userid": pace.index,
            "pace": np.where(pace > pace.median(), "fast", "slow"),
            "volume": np.where(rows.loc[pace.index] > rows.median(), "more", "less"),
        }
    )


def _load(dataset: str, manual_dir: str) -> pd.DataFrame:
    import mudata

    with tempfile.TemporaryDirectory() as home:
        frame = mudata.load(dataset, manual_dir=manual_dir, data_home=home, progress=False).frame
    return frame.assign(userid=frame["userid"].astype(str))


def write_cohorts(dataset: str, manual_dir: str, path: str) -> None:
    """The derived cohorts as a ``--cohorts`` CSV, for ``mueval evaluate``."""
    _derived_cohorts(_load(dataset, manual_dir)).to_csv(path, index=False)
    print(f"wrote {path}")


def real(dataset: str, manual_dir: str, iterations: int) -> None:
    import mueval

    frame = _load(dataset, manual_dir)
    cohorts = _derived_cohorts(frame)
    cell = cohorts.set_index("userid")
    print(
        f"{dataset}: {len(frame)} rows, {frame['userid'].nunique()} users; derived cohorts "
        f"(users per cell): {cell.value_counts().to_dict()}; alpha = 0.05, Naive Bayes, "
        f"{iterations} iterations\n"
    )
    runs = [
        ("mm", None),
        ("mm", "cohort:pace"),
        ("mm", "cohort:volume"),
        ("mm", "cohorts:pace,volume"),
        ("uim", None),
        ("uim", "cohorts:pace,volume"),
        ("ucm", None),
    ]
    header = ["strategy", "condition", "coverage", "worst cohort", "worst cell", "worst user"]
    header += ["size", "seconds"]
    lines = []
    for strategy, condition in runs:
        clock = time.perf_counter()
        run = mueval.evaluate(
            frame,
            strategies=strategy,
            classifiers="nb",
            iterations=iterations,
            condition=condition,
            cohorts=cohorts if condition else None,
            small_cal="full-set",
            progress=False,
            diagnostics="none",
            jobs=1,
        )
        seconds = time.perf_counter() - clock
        rows = run.predictions.assign(userid=lambda p: p["userid"].astype(str))
        rows = rows.join(cell, on="userid")
        cohort_cov = {
            f"{c}={v}": part["covered"].mean()
            for c in ("pace", "volume")
            for v, part in rows.groupby(c)
        }
        cell_cov = rows.groupby(["pace", "volume"])["covered"].mean()
        worst = min(cohort_cov, key=cohort_cov.get)
        worst_cell = cell_cov.idxmin()
        users = rows.groupby("userid")["covered"].mean()
        lines.append(
            [
                strategy,
                condition or "none",
                f"{rows['covered'].mean():.3f}",
                f"{cohort_cov[worst]:.3f} ({worst})",
                f"{cell_cov.min():.3f} ({'/'.join(worst_cell)})",
                f"{users.min():.3f} (user {users.idxmin()})",
                f"{rows['set_size'].mean():.2f}",
                f"{seconds:.1f}",
            ]
        )
    widths = [max(len(str(r[i])) for r in [header, *lines]) for i in range(len(header))]
    for r in [header, *lines]:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--n-cal", type=int, default=2400)
    parser.add_argument("--n-test", type=int, default=2400)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--dataset", help="a built-in dataset instead of the simulation")
    parser.add_argument("--manual-dir", help="the dataset's release files")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument(
        "--write-cohorts", help="only write the dataset's derived cohorts to this CSV"
    )
    args = parser.parse_args()
    if args.dataset and args.write_cohorts:
        write_cohorts(args.dataset, args.manual_dir, args.write_cohorts)
        return
    if args.dataset:
        real(args.dataset, args.manual_dir, args.iterations)
        return
    table = simulate(args.reps, args.n_cal, args.n_test, args.seed)
    print_simulation(table, args.reps, args.n_cal, args.n_test)


if __name__ == "__main__":
    main()
