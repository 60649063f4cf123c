"""A run folder written in exactly the format of ``mueval evaluate`` (format_version 1),
from a real computation: GaussianNB on scikit-learn's digits with synthetic users
(each user's features carry their own noise level, so users differ), split as the
protocol's MM, UIM and UCM, LAC sets and p-values computed by hand with numpy.

The report, compare and run-folder tests read it as a run of their own.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from sklearn.datasets import load_digits
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import MinMaxScaler

ALPHA = 0.05
METRICS = [
    "accuracy",
    "sensitivity",
    "specificity",
    "F1",
    "weighted_F1",
    "coverage",
    "jaccard",
    "setsize",
    "pctempty",
    "MCriterion",
    "FCriterion",
    "OM",
    "OF",
    "OU",
    "OE",
    "OF_textbook",
    "OU_textbook",
]


def _metrics(y: np.ndarray, yp: np.ndarray, sets: np.ndarray, pv: np.ndarray) -> dict:
    """The protocol's metrics of one evaluated subset."""
    out = {"accuracy": float(np.mean(y == yp))}
    sens, spec, f1 = [], [], []
    for c in np.unique(y):
        tp = np.sum((yp == c) & (y == c))
        fn = np.sum((yp != c) & (y == c))
        fp = np.sum((yp == c) & (y != c))
        tn = np.sum((yp != c) & (y != c))
        if tp + fn:
            sens.append(tp / (tp + fn))
        if tn + fp:
            spec.append(tn / (tn + fp))
        if 2 * tp + fp + fn:
            f1.append(2 * tp / (2 * tp + fp + fn))
    out.update(
        sensitivity=float(np.mean(sens)),
        specificity=float(np.mean(spec)),
        F1=float(np.mean(f1)),
        weighted_F1=float(f1_score(y, yp, average="weighted")),
    )
    n = len(y)
    size = sets.sum(axis=1)
    cov = sets[np.arange(n), y]
    false = sets.copy()
    false[np.arange(n), y] = False
    pfalse = pv.copy()
    pfalse[np.arange(n), y] = 0.0
    nonempty = size > 0
    out.update(
        coverage=float(cov.mean()),
        jaccard=float(np.mean(np.where(cov, 1.0 / np.maximum(size, 1), 0.0))),
        setsize=float(size.mean()),
        pctempty=float(np.mean(size == 0)),
        MCriterion=float(np.mean(size[nonempty] > 1)),
        FCriterion=float(np.mean(pv.sum(axis=1) - pv.max(axis=1))),
        OM=float(np.mean(false[nonempty].any(axis=1))),
        OF=float(np.mean((pv * false)[nonempty].sum(axis=1))),
        OU=float(np.mean((pv * false)[nonempty].max(axis=1))),
        OE=float(np.mean(false.sum(axis=1))),
        OF_textbook=float(np.mean(pfalse.sum(axis=1))),
        OU_textbook=float(np.mean(pfalse.max(axis=1))),
    )
    return out


def _conformal(model, x_cal, y_cal, x_test):
    """LAC sets and (unsmoothed) p-values, by hand."""
    cal_scores = 1.0 - model.predict_proba(x_cal)[np.arange(len(y_cal)), y_cal]
    n = len(cal_scores)
    q = np.sort(cal_scores)[min(math.ceil((n + 1) * (1 - ALPHA)), n) - 1]
    proba = model.predict_proba(x_test)
    test_scores = 1.0 - proba
    sets = test_scores <= q
    pv = ((cal_scores[None, None, :] >= test_scores[:, :, None]).sum(axis=2) + 1) / (n + 1)
    return sets, pv, proba


def make_run_folder(root: Path, *, iterations: int = 3, n_users: int = 6) -> Path:
    """Write a format_version 1 run folder for MM, UIM and UCM with GaussianNB."""
    # Six digits keep the figures light enough for a fast test.
    digits = load_digits(n_class=6)
    rng = np.random.default_rng(7)
    users = np.arange(digits.target.size) % n_users + 1
    # Each user's own sensor noise: users differ, as real users do.
    x_all = digits.data + rng.normal(0.0, 1.0, digits.data.shape) * (users[:, None] * 1.2)
    classes = [f"digit {d}" for d in range(6)]  # sorted alphabetically = index order
    y_all = digits.target
    pred_rows, split_rows = [], []

    def run_one(strategy, it, seed, user, tr, ca, te):
        scaler = MinMaxScaler().fit(x_all[tr])
        model = GaussianNB().fit(scaler.transform(x_all[tr]), y_all[tr])
        sets, pv, proba = _conformal(
            model, scaler.transform(x_all[ca]), y_all[ca], scaler.transform(x_all[te])
        )
        yp = model.predict(scaler.transform(x_all[te]))
        y = y_all[te]
        split_rows.append(
            {
                "strategy": strategy,
                "classifier": "nb",
                "iteration": it,
                "seed": seed,
                "user": user,
                "n_test": len(te),
                "n_cal": len(ca),
                **_metrics(y, yp, sets, pv),
            }
        )
        for r, row in enumerate(te):
            pred_rows.append(
                {
                    "strategy": strategy,
                    "classifier": "nb",
                    "iteration": it,
                    "seed": seed,
                    "target_user": user,
                    "userid": int(users[row]),
                    "row_id": int(row),
                    "y_true": classes[y[r]],
                    "y_pred": classes[yp[r]],
                    "pred_set": [classes[k] for k in np.flatnonzero(sets[r])],
                    "set_size": int(sets[r].sum()),
                    "covered": bool(sets[r, y[r]]),
                    "p_values": pv[r].tolist(),
                    "proba": proba[r].tolist(),
                }
            )

    idx = np.arange(y_all.size)
    for it in range(1, iterations + 1):
        seed = 100 + it
        tr, rest = train_test_split(idx, train_size=0.6, stratify=y_all, random_state=seed)
        ca, te = train_test_split(rest, train_size=0.5, stratify=y_all[rest], random_state=seed)
        run_one("mm", it, seed, None, tr, ca, te)
        for u in range(1, n_users + 1):
            others, mine = idx[users != u], idx[users == u]
            tr, ca_o = train_test_split(
                others, train_size=0.6, stratify=y_all[others], random_state=seed
            )
            te, ca_u = train_test_split(
                mine, train_size=0.5, stratify=y_all[mine], random_state=seed
            )
            run_one("uim", it, seed, u, tr, ca_o, te)
            run_one("ucm", it, seed, u, tr, ca_u, te)

    splits = pd.DataFrame(split_rows)
    splits["user"] = splits["user"].astype("Int64")
    root.mkdir(parents=True, exist_ok=True)
    splits.to_parquet(root / "splits.parquet", index=False)
    schema = pa.schema(
        [
            ("strategy", pa.string()),
            ("classifier", pa.string()),
            ("iteration", pa.int64()),
            ("seed", pa.int64()),
            ("target_user", pa.int64()),
            ("userid", pa.int64()),
            ("row_id", pa.int64()),
            ("y_true", pa.string()),
            ("y_pred", pa.string()),
            ("pred_set", pa.list_(pa.string())),
            ("set_size", pa.int64()),
            ("covered", pa.bool_()),
            ("p_values", pa.list_(pa.float64())),
            ("proba", pa.list_(pa.float64())),
        ]
    )
    table = pa.Table.from_pydict(
        {c: [r[c] for r in pred_rows] for c in schema.names}, schema=schema
    )
    pq.write_table(table, root / "predictions.parquet")

    per_it = splits.groupby(["strategy", "classifier", "iteration"])[METRICS].mean()
    summary = []
    for (s, c), g in per_it.groupby(level=[0, 1]):
        for m in METRICS:
            summary.append(
                {
                    "strategy": s,
                    "classifier": c,
                    "metric": m,
                    "mean": g[m].mean(),
                    "sd": g[m].std(ddof=1),
                    "n": len(g),
                }
            )
    pd.DataFrame(summary).to_csv(root / "summary.csv", index=False)
    run = {
        "format_version": 1,
        "dataset": {
            "name": "digits <script>alert(1)</script> & users",
            "source": "file",
            "provenance_sha256": "0" * 64,
            "n_rows": int(y_all.size),
            "n_users": n_users,
            "licence": None,
        },
        "classes": classes,
        "config": {
            "strategies": ["mm", "uim", "ucm"],
            "classifiers": ["nb"],
            "alpha": ALPHA,
            "iterations": iterations,
            "seed_base": 100,
            "score": "lac",
            "mondrian": False,
            "adapt_frac": 0.5,
            "jobs": 1,
            "backend": "loky",
        },
        "versions": {
            "python": "3",
            "mueval": "0.1.0",
            "mudata": "0.1.0",
            "numpy": np.__version__,
            "pandas": pd.__version__,
            "scikit-learn": "x",
            "mapie": "x",
        },
        "timings": {"total_s": 1.0},
        "created": "2025-01-01T00:00:00+00:00",
    }
    (root / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return root
