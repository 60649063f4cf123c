"""Benchmark: power of the per-user "below target" verdicts through the real pipeline.

Each run builds a synthetic table (:func:`mueval.data.synthetic.make_users`,
without drift between users and with the same class proportions, so the users
are exchangeable), shifts every feature of one user (user 1) by ``d`` standard deviations of that
feature over the table, and evaluates it with :func:`mueval.evaluate` (the
protocol: 20 iterations, alpha = 0.05, the study's threshold rule, the run's
verdicts at 0.05 after Holm, each strategy's default combination). Per shift
``d`` (0.25, 0.5, 1, 2 by default) and strategy it prints:

- ``coverage``: the shifted user's coverage, mean over runs;
- ``flagged``: the share of runs in which the shifted user is below target
  (the run's verdict);
- ``false flags``: the share of (run, unshifted user) pairs flagged, with
  ``any``: the share of runs that flag at least one unshifted user;
- under UDM, UCM and UAM, the same two flag rates with the Beta-Binomial null
  in place of the stratified split's exact null
  (:mod:`mueval.guarantees.stratified_null`; the verdicts recomputed from the
  run's predictions and splits without ``pooled_order``), and ``raw <= 0.05``:
  the share of unshifted users whose uncorrected p-value is at most 0.05
  under each null (the level each null uses; at most 0.05 when valid).

A user shifted as a whole is calibrated on its own shifted rows under UDM,
UCM and UAM (the model of UDM and UAM also trains on them), so its coverage
stays near 1 - alpha there and no verdict should flag it: a flag under those
strategies is a false flag. MM and UIM calibrate it on other users' rows.

Run::

    python benchmarks/user_power.py [--reps 10] [--users 8] [--rows 160]
        [--classes 6] [--drift 0] [--imbalance 0] [--classifier nb] [--iterations 20]
        [--shifts 0.25,0.5,1,2]

``--reps`` runs per shift (each a whole ``mueval.evaluate``, seeds 0..reps-1).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import pandas as pd

import mueval
from mueval.data.synthetic import make_users
from mueval.guarantees.run_verdicts import verdict_table

STRATEGIES = ("mm", "udm", "uim", "ucm", "uam")
STRATIFIED = ("udm", "ucm", "uam")
SHIFTED_USER = 1


def shifted_table(
    shift: float,
    *,
    users: int,
    rows: int,
    classes: int,
    features: int,
    seed: int,
    drift: float = 0.0,
    imbalance: float = 0.0,
) -> pd.DataFrame:
    """A synthetic table whose user 1 has every feature raised by ``shift`` SDs."""
    # By default no drift between users and the same class proportions: the
    # other users are exchangeable, so a flag among them is a false flag under
    # every strategy. (With drift or imbalance, a user unlike the pool is truly
    # covered less under MM and UIM.)
    frame = make_users(
        users,
        n_classes=classes,
        rows_per_user=rows,
        n_features=features,
        drift=drift,
        imbalance=imbalance,
        seed=seed,
    )
    columns = [c for c in frame.columns if c.startswith("f")]
    sd = frame[columns].std(ddof=0)
    mask = frame["userid"] == SHIFTED_USER
    frame.loc[mask, columns] = frame.loc[mask, columns] + shift * sd
    return frame


def one_run(frame: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """Per (strategy, user): coverage, the run's verdict, and the Beta-Binomial's."""
    run = mueval.evaluate(
        frame,
        strategies=",".join(args.strategies),
        classifiers=args.classifier,
        iterations=args.iterations,
        jobs=1,
        progress=False,
    )
    table = run.user_coverage[["strategy", "user", "coverage", "p_value", "below"]].copy()
    # The same verdicts with the Beta-Binomial null: the splits without the
    # pooled score orders the exact null is computed from.
    splits = run.splits.drop(columns=["pooled_order"], errors="ignore")
    beta = verdict_table(run.predictions, splits, alpha=0.05, config=run.config)
    beta = beta[["strategy", "user", "p_value", "below"]].rename(
        columns={"p_value": "p_beta", "below": "below_beta"}
    )
    table["user"] = table["user"].astype(str)
    beta = beta.assign(user=beta["user"].astype(str))
    return table.merge(beta, on=["strategy", "user"], how="left")


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (shift, strategy) from the per-user rows of every run."""
    out = []
    for (shift, strategy), part in runs.groupby(["shift", "strategy"], sort=True):
        target = part[part["user"] == str(SHIFTED_USER)]
        others = part[part["user"] != str(SHIFTED_USER)]
        flagged = others.groupby("rep")["below"].any()
        flagged_beta = others.groupby("rep")["below_beta"].any()
        out.append(
            {
                "shift": shift,
                "strategy": strategy,
                "coverage": target["coverage"].mean(),
                "flagged": target["below"].astype(float).mean(),
                "false": others["below"].astype(float).mean(),
                "any": flagged.astype(float).mean(),
                "raw": (others["p_value"] <= 0.05).mean(),
                "flagged_beta": target["below_beta"].astype(float).mean(),
                "false_beta": others["below_beta"].astype(float).mean(),
                "any_beta": flagged_beta.astype(float).mean(),
                "raw_beta": (others["p_beta"] <= 0.05).mean(),
            }
        )
    return pd.DataFrame(out)


def print_table(summary: pd.DataFrame) -> None:
    """The table of docs/per-user-guarantees.md."""
    print(
        "| shift (SD) | strategy | coverage of the shifted user | flagged | "
        "false flags (any in run) | raw p <= 0.05 | Beta-Binomial: flagged | "
        "false flags (any) | raw p <= 0.05 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in summary.itertuples(index=False):
        own = r.strategy in STRATIFIED
        beta = (
            f"{r.flagged_beta:.0%} | {r.false_beta:.1%} ({r.any_beta:.0%}) | {r.raw_beta:.1%}"
            if own
            else "same | same | same"
        )
        print(
            f"| {r.shift:g} | {r.strategy.upper()} | {r.coverage:.3f} | {r.flagged:.0%} | "
            f"{r.false:.1%} ({r.any:.0%}) | {r.raw:.1%} | {beta} |"
        )


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--rows", type=int, default=160)
    parser.add_argument("--classes", type=int, default=6)
    parser.add_argument("--features", type=int, default=8)
    parser.add_argument("--drift", type=float, default=0.0)
    parser.add_argument("--imbalance", type=float, default=0.0)
    parser.add_argument("--classifier", default="nb")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--shifts", default="0.25,0.5,1,2")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args(argv)
    args.strategies = tuple(s.strip() for s in args.strategies.split(","))
    args.shifts = tuple(float(s) for s in args.shifts.split(","))
    if args.reps < 1 or args.iterations < 1:
        parser.error("--reps and --iterations must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    args = parse(argv)
    clock = time.perf_counter()
    rows = []
    for shift in args.shifts:
        for rep in range(args.reps):
            frame = shifted_table(
                shift,
                users=args.users,
                rows=args.rows,
                classes=args.classes,
                features=args.features,
                seed=rep,
                drift=args.drift,
                imbalance=args.imbalance,
            )
            rows.append(one_run(frame, args).assign(shift=shift, rep=rep))
    summary = summarise(pd.concat(rows, ignore_index=True))
    print(
        f"{args.reps} runs per shift; {args.users} users x {args.rows} rows, "
        f"{args.classes} classes, {args.features} features, drift {args.drift:g}, imbalance {args.imbalance:g}; "
        f"{args.classifier}; "
        f"{args.iterations} iterations; {time.perf_counter() - clock:.0f} s"
    )
    print_table(summary)
    return summary


if __name__ == "__main__":
    main()
