"""Benchmark: level and power of the per-user "below target" verdicts.

Simulates runs of the protocol (20 iterations, alpha = 0.05, the study's
threshold rule) for MM, UDM, UIM and UCM at the sizes of the four study
datasets, with the conformity scores of a fixed model: every row of a user has
one score, drawn once per simulated run and reused by every iteration, as a
real run reuses a user's windows. Each iteration splits the rows as the
protocol does (fractions below; the protocol's stratification by class is left
out: one class). A row is covered when its score is at most the threshold, the
``threshold_rank``-th smallest calibration score.

Scenarios
---------
- **null**: every score N(0, 1): exchangeable users, no user effect.
- **shift d** (d = 0.25, 1, 2.5): one user (the first) is unlike the calibration
  rows by d standard deviations. MM, UIM (calibration on pooled or other
  users' rows): that user's scores are N(d, 1), the others' N(0, 1); its rows
  also enter the calibration of MM and of the other users under UIM. UDM, UCM
  (calibration on the user's own rows): the user's rows are N(0, 1), and its
  test rows score d higher than its calibration rows in every iteration
  (drift between calibration and test; a random split of exchangeable rows
  cannot show a shift, so this is the only departure these strategies can see).

Tests compared, per user
------------------------
- ``binomial (old)``: the rule this benchmark replaces, pooled over
  iterations: ``binom.cdf(covered, n_test, 1 - alpha) < 0.025`` (the
  Clopper-Pearson upper bound below 1 - alpha), no correction across users.
- ``convolution/<corr>``: the exact Beta-Binomial p-value of the pooled count
  (iterations taken as independent), then Holm, Benjamini-Hochberg or no
  correction across the users of the run, at level 0.05.
- ``bonferroni/<corr>``: each iteration's exact p-value, combined as
  ``min(1, 20 * min)``, valid under any dependence between iterations.

``mueval.guarantees.user_level.default_combine`` picks convolution for UDM and UCM and
Bonferroni for MM and UIM; rows marked ``*`` are those defaults.

Printed per dataset, strategy and test: the per-user false-flag rate under the
null (flags over valid users), the share of null runs with any flag, and the
power (share of runs where the shifted user is flagged), each with its Monte
Carlo standard error (per-user rates: over runs, so the dependence between one
run's users is accounted for). Nominal: a per-user rate at most 0.05 without
correction, and a share of runs with any flag at most 0.05 under Holm.

Run::

    python benchmarks/user_level.py [--reps 2000] [--power-reps 200] [--seed 19]

``--reps`` null runs per dataset and strategy (2000: standard error about 0.5
percentage point at 5 %); ``--power-reps`` runs per shift.

Through the pipeline (``--pipeline``)
-------------------------------------
The level of a whole run, and of every error-severity warning, through
``mueval.evaluate`` itself: null runs on ``mueval.data.synthetic.make_users``
with ``drift=0`` and ``imbalance=0`` (every user's rows drawn from one
distribution: every user exchangeable, so every flag is false), under the
random and the blocked split, with MM, UDM, UIM, UCM and UAM, 20 iterations,
alpha = 0.05, and four classifiers (``nb``, ``knn`` and two fast user models,
logistic regression and linear discriminant analysis: the built-in RF and SVM
cost too much per replicate for many replicates, and the family counts
pairs, not models). Printed per split:

- the share of runs with any user flagged among the default run's 16 pairs
  (MM, UDM, UIM, UCM x 4 classifiers), under ``--user-family run`` and
  ``pair``, and the same under ``pair`` for one pair (per-pair level);
- per strategy, the share of (run, classifier) cases where the exact pooled
  test fires at 0.05 (one test per pair), against the Clopper-Pearson rule it
  replaces (upper bound below 0.95, one-sided 2.5 %);
- the share of runs with any ``pooled-below-target`` error under the family
  ``run`` (Holm over the run's 20 pooled tests), and with any error-severity
  warning at all as the run recorded them.

Run::

    python benchmarks/user_level.py --pipeline --reps 40 --cache /tmp/null-runs

Replicates are cached (``--cache``), so a second call adds to them; ``--users``
and ``--rows`` set their size, ``--iterations`` their iterations. Replicate
``r`` is the table of seed ``1000 + r`` and the run of ``seed_base = 100 +
1000 r``; ``--first-rep`` starts elsewhere than 0, and both splits are run
replicate by replicate before the counts are printed.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from mueval.guarantees.adjustment import adjust_pvalues
from mueval.guarantees.covered_law import threshold_rank
from mueval.guarantees.user_level import default_combine

ALPHA = 0.05
LEVEL = 0.05
ITERATIONS = 20
RULE = "study"
STRATEGIES = ("mm", "udm", "uim", "ucm")
DEFAULTS = {s: default_combine(s) for s in STRATEGIES}
SHIFTS = (0.25, 1.0, 2.5)


@dataclass(frozen=True)
class Dataset:
    name: str
    users: int
    rows: int
    source: str

    @property
    def per_user(self) -> int:
        return round(self.rows / self.users)


# Users and rows after the user filter: docs/datasets.md. Per-user counts are
# not documented there; every user gets rows / users (gestures: exactly 400 =
# 20 classes x 20 repetitions).
DATASETS = (
    Dataset("WISDM", 16, 2869, "docs/datasets.md: 16 users, 2,869 rows"),
    Dataset("HAR70+", 16, 12887, "docs/datasets.md: 16 users, 12,887 rows"),
    Dataset("OPPORTUNITY", 4, 4080, "docs/datasets.md: 4 users, 4,080 rows"),
    Dataset("gestures", 8, 3200, "docs/datasets.md: 8 users, 3,200 rows (400 each)"),
)


def first_part(n: int, train_size: float) -> int:
    """Rows of ``train_test_split``'s first part: ``floor(train_size * n)``."""
    return int(np.floor(train_size * n))


def sizes(strategy: str, data: Dataset) -> tuple[int, int]:
    """(calibration rows, test rows of one user) under docs/protocol.md's splits.

    MM's test rows per user vary (a split of all rows); the value returned is
    the calibration size and the mean test rows per user.
    """
    n_u = data.per_user
    if strategy == "mm":
        total = n_u * data.users
        rest = total - first_part(total, 0.6)
        cal = first_part(rest, 0.5)
        return cal, (rest - cal) // data.users
    if strategy == "udm":
        rest = n_u - first_part(n_u, 0.6)
        cal = first_part(rest, 0.5)
        return cal, rest - cal
    if strategy == "uim":
        others = n_u * (data.users - 1)
        return others - first_part(others, 0.6), first_part(n_u, 0.5)
    test = first_part(n_u, 0.5)  # ucm: test is the first part, calibration the rest
    return n_u - test, test


class NullLaw:
    """Beta-Binomial CDFs per (m, n, k), and their sums over iterations by FFT.

    The module convolves directly (exact to the last digit in the far tail);
    here hundreds of thousands of users are tested, and an FFT product of the
    iterations' characteristic functions is accurate to about 1e-13, far below
    the p-values that matter at level 0.05 / 16.
    """

    def __init__(self) -> None:
        self._cdf: dict[tuple[int, int, int], np.ndarray] = {}
        self._fft: dict[tuple[int, int, int, int], np.ndarray] = {}
        self._sum: dict[tuple[tuple[int, ...], int, int], np.ndarray] = {}

    def cdf(self, m: int, n: int, k: int) -> np.ndarray:
        key = (m, n, k)
        if key not in self._cdf:
            self._cdf[key] = stats.betabinom.cdf(np.arange(m + 1), m, k, n + 1 - k)
        return self._cdf[key]

    def _fft_of(self, m: int, n: int, k: int, length: int) -> np.ndarray:
        key = (m, n, k, length)
        if key not in self._fft:
            pmf = stats.betabinom.pmf(np.arange(m + 1), m, k, n + 1 - k)
            self._fft[key] = np.fft.rfft(pmf, length)
        return self._fft[key]

    def sum_cdf(self, ms: np.ndarray, n: int, k: int) -> np.ndarray:
        key = (tuple(sorted(ms.tolist())), n, k)
        if key not in self._sum:
            # A power of two above the largest possible sum: no wrap-around.
            length = 1 << int(np.ceil(np.log2(int(ms.sum()) + 2)))
            product = np.ones(length // 2 + 1, dtype=complex)
            for m in ms.tolist():
                product = product * self._fft_of(m, n, k, length)
            pmf = np.clip(np.fft.irfft(product, length), 0.0, None)
            self._sum[key] = np.cumsum(pmf)
        return self._sum[key]


_POSITION_CDF: dict[tuple[int, int, int], np.ndarray] = {}


def position_cdf(n_o: int, n_cal: int, k: int) -> np.ndarray:
    """CDF of the position, among ``n_o`` sorted rows, of the k-th row of a
    uniformly random ``n_cal``-subset: ``P(J <= j) = P(Hypergeom(n_o, n_cal, j) >= k)``."""
    key = (n_o, n_cal, k)
    if key not in _POSITION_CDF:
        _POSITION_CDF[key] = stats.hypergeom.sf(k - 1, n_o, n_cal, np.arange(1, n_o + 1))
    return _POSITION_CDF[key]


def simulate_run(
    rng: np.random.Generator, strategy: str, data: Dataset, shift: float
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """One run: covered and test counts, shape (users, iterations), and (n, k)."""
    users, n_u = data.users, data.per_user
    n_cal, m = sizes(strategy, data)
    k = threshold_rank(n_cal, ALPHA, RULE)
    pooled = strategy in ("mm", "uim")
    scores = rng.normal(size=(users, n_u))
    if pooled:
        scores[0] += shift
    covered = np.zeros((users, ITERATIONS), dtype=np.int64)
    tested = np.zeros((users, ITERATIONS), dtype=np.int64)
    if strategy == "mm":
        flat, owner = scores.ravel(), np.repeat(np.arange(users), n_u)
        total = flat.size
        n_train = first_part(total, 0.6)
        roles = np.r_[np.zeros(n_train), np.ones(n_cal), np.full(total - n_train - n_cal, 2)]
        for it in range(ITERATIONS):
            role = rng.permutation(roles)
            q = np.partition(flat[role == 1], k - 1)[k - 1]
            test = role == 2
            tested[:, it] = np.bincount(owner[test], minlength=users)
            covered[:, it] = np.bincount(owner[test & (flat <= q)], minlength=users)
        return covered, tested, n_cal, k
    if strategy == "uim":
        # Calibration: a uniformly random n_cal-subset of the other users'
        # rows. Its k-th smallest is the score at position J of the sorted
        # others, J the position of the k-th chosen row: P(J <= j) =
        # P(Hypergeom(N_o, n_cal, j) >= k), sampled by inverting that CDF.
        # Test: a random m-subset of the target's rows, of which the number at
        # or below the threshold is Hypergeometric given the threshold.
        n_o = n_u * (users - 1)
        cdf = position_cdf(n_o, n_cal, k)
        for target in range(users):
            others = np.sort(np.delete(scores, target, axis=0).ravel())
            pos = np.searchsorted(cdf, rng.uniform(size=ITERATIONS))
            q = others[np.minimum(pos, n_o - 1)]
            below = np.searchsorted(np.sort(scores[target]), q, side="right")
            covered[target] = rng.hypergeometric(below, n_u - below, m)
            tested[target] = m
        return covered, tested, n_cal, k
    # udm, ucm: each iteration splits each user's own rows at random.
    n_first = first_part(n_u, 0.6) if strategy == "udm" else 0
    for it in range(ITERATIONS):
        order = rng.permuted(np.tile(np.arange(n_u), (users, 1)), axis=1)
        rows = np.take_along_axis(scores, order, axis=1)
        if strategy == "udm":
            cal, test = rows[:, n_first : n_first + n_cal], rows[:, n_first + n_cal :]
        else:
            test, cal = rows[:, :m], rows[:, m : m + n_cal]
        test = test.copy()
        test[0] += shift
        q = np.partition(cal, k - 1, axis=1)[:, k - 1]
        covered[:, it] = (test <= q[:, None]).sum(axis=1)
        tested[:, it] = test.shape[1]
    return covered, tested, n_cal, k


def run_pvalues(
    covered: np.ndarray, tested: np.ndarray, n: int, k: int, law: NullLaw
) -> dict[str, np.ndarray]:
    """Per-user p-values of the three tests for one run."""
    users = covered.shape[0]
    conv, bonf = np.empty(users), np.empty(users)
    for u in range(users):
        cdf = law.sum_cdf(tested[u], n, k)
        conv[u] = min(1.0, cdf[covered[u].sum()])
        per_it = [law.cdf(int(m), n, k)[c] for m, c in zip(tested[u], covered[u], strict=True)]
        bonf[u] = min(1.0, ITERATIONS * min(per_it))
    old = stats.binom.cdf(covered.sum(axis=1), tested.sum(axis=1), 1 - ALPHA)
    return {"old": old, "convolution": conv, "bonferroni": bonf}


TESTS = (
    ("binomial (old)", "old", None),
    *(
        (f"{c}/{corr}", c, corr)
        for c in ("convolution", "bonferroni")
        for corr in ("holm", "bh", "none")
    ),
)


def flags(pvalues: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for label, combine, correction in TESTS:
        if correction is None:
            out[label] = pvalues[combine] < 0.025
        else:
            out[label] = adjust_pvalues(pvalues[combine], correction) <= LEVEL
    return out


def scenario(
    rng: np.random.Generator, strategy: str, data: Dataset, shift: float, reps: int
) -> dict[str, np.ndarray]:
    """Flags of every test, shape (reps, users)."""
    law = NullLaw()
    out: dict[str, list[np.ndarray]] = {label: [] for label, _, _ in TESTS}
    for _ in range(reps):
        covered, tested, n, k = simulate_run(rng, strategy, data, shift)
        for label, f in flags(run_pvalues(covered, tested, n, k, law)).items():
            out[label].append(f)
    return {label: np.array(v) for label, v in out.items()}


PIPELINE_STRATEGIES = ("mm", "udm", "uim", "ucm", "uam")
DEFAULT_RUN = ("mm", "udm", "uim", "ucm")
PIPELINE_CLASSIFIERS = (
    "nb",
    "knn",
    "sklearn.linear_model:LogisticRegression",
    "sklearn.discriminant_analysis:LinearDiscriminantAnalysis",
)


def pipeline_run(
    rep: int,
    split: str,
    *,
    users: int = 8,
    rows: int = 130,
    iterations: int = ITERATIONS,
    strategies: tuple[str, ...] = PIPELINE_STRATEGIES,
    classifiers: tuple[str, ...] = PIPELINE_CLASSIFIERS,
    cache: Path | None = None,
) -> dict:
    """One null run through ``mueval.evaluate`` (cached under ``cache``).

    Returns ``predictions``, ``splits`` (frames), ``config``, ``classes`` and
    ``warnings`` (as the run recorded them).
    """
    import json

    import pandas as pd

    import mueval
    from mueval.data.synthetic import make_users

    stem = None if cache is None else cache / f"{split}-{rep:04d}"
    if stem is not None and stem.with_suffix(".json").exists():
        info = json.loads(stem.with_suffix(".json").read_text())
        return {
            **info,
            "predictions": pd.read_parquet(stem.with_suffix(".pred.parquet")),
            "splits": pd.read_parquet(stem.with_suffix(".splits.parquet")),
        }
    data = make_users(
        users,
        n_classes=4,
        rows_per_user=rows,
        n_features=4,
        drift=0.0,
        imbalance=0.0,
        seed=1000 + rep,
    )
    run = mueval.evaluate(
        data,
        strategies=strategies,
        classifiers=classifiers,
        split=split,
        iterations=iterations,
        seed_base=100 + 1000 * rep,
        progress=False,
        jobs=1,
        diagnostics="none",
    )
    columns = ["strategy", "classifier", "iteration", "userid", "target_user", "y_true"]
    out = {
        "config": run.config,
        "classes": list(run.classes),
        "warnings": run.warnings,
        "predictions": run.predictions[[*columns, "covered", "set_size"]],
        "splits": run.splits,
    }
    if stem is not None:
        cache.mkdir(parents=True, exist_ok=True)
        out["predictions"].to_parquet(stem.with_suffix(".pred.parquet"))
        out["splits"].to_parquet(stem.with_suffix(".splits.parquet"))
        info = {k: out[k] for k in ("config", "classes", "warnings")}
        stem.with_suffix(".json").write_text(json.dumps(info, default=str))
    return out


def pipeline_flags(run: dict) -> dict[str, object]:
    """The false flags of one null run (every flag is false: exchangeable users)."""
    import pandas as pd

    from mueval.guarantees.run_verdicts import pooled_table, verdict_table

    preds, splits, classes = run["predictions"], run["splits"], run["classes"]
    default = preds[preds["strategy"].isin(DEFAULT_RUN)]
    out: dict[str, object] = {}
    for family in ("run", "pair"):
        config = {**run["config"], "user_family": family}
        table = verdict_table(default, splits, alpha=ALPHA, config=config, classes=classes)
        out[f"any_user_{family}"] = bool(table["below"].fillna(False).any())
        if family == "pair":
            first = table[
                (table["strategy"] == "mm") & (table["classifier"] == table["classifier"].iloc[0])
            ]
            out["any_user_one_pair"] = bool(first["below"].fillna(False).any())
        pooled = pooled_table(preds, splits, alpha=ALPHA, config=config, classes=classes)
        if family == "pair":
            out["pooled"] = pooled
        else:
            out["any_pooled_run"] = bool(pooled["below"].fillna(False).any())
    rows = preds.groupby(["strategy", "classifier"])["covered"].agg(["sum", "size"])
    # The Clopper-Pearson upper bound (97.5 %), 1 when every row is covered.
    full = (rows["sum"] == rows["size"]).to_numpy()
    upper = stats.beta.ppf(0.975, rows["sum"] + 1, np.maximum(rows["size"] - rows["sum"], 1))
    out["old_pooled"] = pd.Series(np.where(full, 1.0, upper) < 1 - ALPHA, index=rows.index)
    out["any_error"] = any(w["severity"] == "error" for w in run["warnings"])
    return out


def _share(hits: list[bool]) -> str:
    n = len(hits)
    rate = float(np.mean(hits)) if n else float("nan")
    se = np.sqrt(rate * (1 - rate) / n) if n else float("nan")
    return f"{sum(hits)}/{n} = {pct(rate, se)} %"


def pipeline_main(args: argparse.Namespace) -> None:
    """Null runs through mueval.evaluate: the level of a run's flags and errors."""
    start = time.perf_counter()
    cache = Path(args.cache) if args.cache else None
    print(
        f"null runs through mueval.evaluate: {args.users} users x {args.rows} rows "
        f"(make_users drift=0, imbalance=0), {args.iterations} iterations, alpha = {ALPHA}, "
        f"level {LEVEL}, Holm; strategies {', '.join(PIPELINE_STRATEGIES)}; classifiers "
        f"{', '.join(PIPELINE_CLASSIFIERS)}"
    )
    sizes = {"users": args.users, "rows": args.rows, "iterations": args.iterations}
    splits = ("random", "blocked")
    if not args.cached_only:
        # Both splits rep by rep, so that a run cut short holds as many of each.
        for rep in range(args.first_rep, args.first_rep + args.reps):
            for split in splits:
                pipeline_run(rep, split, **sizes, cache=cache)
    for split in splits:
        results = []
        reps: list[int] = list(range(args.first_rep, args.first_rep + args.reps))
        if args.cached_only and cache is not None:
            reps = sorted(int(p.stem.split("-")[1]) for p in cache.glob(f"{split}-*.json"))
        for rep in reps:
            run = pipeline_run(rep, split, **sizes, cache=cache)
            results.append(pipeline_flags(run))
        print(f"\n--split {split}: {len(results)} runs")
        if not results:
            continue
        print(
            f"  runs with any false user flag, 16 pairs, family run : "
            f"{_share([r['any_user_run'] for r in results])}"
        )
        print(
            f"  runs with any false user flag, 16 pairs, family pair: "
            f"{_share([r['any_user_pair'] for r in results])}"
        )
        print(
            f"  runs with a false user flag in one pair (MM), pair  : "
            f"{_share([r['any_user_one_pair'] for r in results])}"
        )
        print(
            f"  runs with a pooled-below-target error, family run   : "
            f"{_share([r['any_pooled_run'] for r in results])}"
        )
        print(
            f"  runs with any error-severity warning (as recorded)  : "
            f"{_share([r['any_error'] for r in results])}"
        )
        print("  per strategy, (run, classifier) cases flagged by the pooled test at 0.05 (one")
        print("  test per pair) and by the Clopper-Pearson rule it replaces (one-sided 2.5 %):")
        for strategy in PIPELINE_STRATEGIES:
            new, old = [], []
            for r in results:
                pooled = r["pooled"][r["pooled"]["strategy"] == strategy]
                new += [bool(b) for b in pooled["below"].fillna(False)]
                old += [bool(b) for b in r["old_pooled"].loc[strategy]]
            print(f"    {strategy.upper():<4} exact {_share(new):<26} interval {_share(old)}")
    print(f"\n{time.perf_counter() - start:.0f} s")


def pct(x: float, se: float) -> str:
    return f"{100 * x:5.1f} ± {100 * se:3.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="null runs per strategy")
    parser.add_argument("--power-reps", type=int, default=200, help="runs per shift")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--datasets", nargs="*", default=[d.name for d in DATASETS])
    parser.add_argument("--strategies", nargs="*", default=list(STRATEGIES))
    parser.add_argument("--pipeline", action="store_true", help="null runs via mueval.evaluate")
    parser.add_argument("--cache", default=None, help="--pipeline: folder of cached runs")
    parser.add_argument("--cached-only", action="store_true", help="--pipeline: cached runs only")
    parser.add_argument("--first-rep", type=int, default=0, help="--pipeline: first replicate")
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--rows", type=int, default=130)
    parser.add_argument("--iterations", type=int, default=ITERATIONS)
    args = parser.parse_args()
    if args.pipeline:
        pipeline_main(args)
        return
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()

    print(f"alpha = {ALPHA}, level = {LEVEL}, {ITERATIONS} iterations, threshold rule {RULE!r}")
    print("sizes per user (docs/protocol.md's split fractions; floor as train_test_split):")
    for data in DATASETS:
        if data.name not in args.datasets:
            continue
        parts = ", ".join(
            f"{s.upper()} n_cal={sizes(s, data)[0]} m={sizes(s, data)[1]}" for s in args.strategies
        )
        print(f"  {data.name}: {data.per_user} rows/user ({data.source}); {parts}")
    print("MM: m is the mean test rows per user (each iteration splits all rows at random).")
    print()
    header = (
        f"{'dataset':<12}{'strategy':<9}{'test':<24}{'per-user false flags %':>24}"
        f"{'runs with any flag %':>22}" + "".join(f"{f'power d={d:g} %':>15}" for d in SHIFTS)
    )
    print(header)
    print("-" * len(header))
    for data in DATASETS:
        if data.name not in args.datasets:
            continue
        for strategy in args.strategies:
            null = scenario(rng, strategy, data, 0.0, args.reps)
            power = {d: scenario(rng, strategy, data, d, args.power_reps) for d in SHIFTS}
            for label, combine, _ in TESTS:
                f = null[label]
                per_run = f.mean(axis=1)
                rate, rate_se = per_run.mean(), per_run.std(ddof=1) / np.sqrt(len(per_run))
                anyf = f.any(axis=1)
                any_rate = anyf.mean()
                any_se = np.sqrt(any_rate * (1 - any_rate) / len(anyf))
                cells = []
                for d in SHIFTS:
                    hit = power[d][label][:, 0]
                    cells.append(pct(hit.mean(), np.sqrt(hit.mean() * (1 - hit.mean()) / len(hit))))
                mark = "*" if combine == DEFAULTS[strategy] else " "
                print(
                    f"{data.name:<12}{strategy.upper():<9}{mark + label:<24}"
                    f"{pct(rate, rate_se):>24}{pct(any_rate, any_se):>22}"
                    + "".join(f"{c:>15}" for c in cells)
                )
            print()
    print(
        f"nominal: per-user <= {100 * LEVEL:.1f} % (none), any flag <= {100 * LEVEL:.1f} % (holm)"
    )
    print(
        f"reps: {args.reps} null, {args.power_reps} per shift; {time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
