"""The reference protocol run on the study's own library versions.

A second, independent implementation of ``docs/protocol.md`` that runs in a
separate virtual environment with MAPIE 0.8.6 and scikit-learn 1.5.2, the
versions the reference study ran. It imports nothing from this project: the
differential tests (``tests/project/test_reference_mapie086.py``) hand it a feature
table and compare every test row, point prediction, prediction set, p-value and
per-user metric it writes with what ``mueval`` computes.

How it differs from ``mueval`` on purpose, so that the two do not share mistakes:

- sets come from ``MapieClassifier(estimator, cv="prefit", method="score")``
  fitted on the calibration rows, exactly as the study called it;
- UIM and UCM fit their own models (``mueval`` shares one fit);
- p-values are counted by broadcasting every test score against every
  calibration score (``mueval`` sorts and searches);
- the non-conformal metrics follow R caret's ``confusionMatrix`` on factors
  whose levels are the subset's ground-truth labels: a prediction of a label
  absent from the ground truth becomes ``NA`` and its row leaves the table, as
  R's ``table()`` drops ``NA``; per-class values are averaged with
  ``na.rm = TRUE``;
- the conformal metrics are written as loops over rows, as plain definitions;
- per-user strategies average per user (undefined values skipped), then over
  iterations with undefined values kept (R's ``colMeans`` without ``na.rm``).

Usage (inside the side environment)::

    python runner_mapie086.py TABLE.npz OUT.npz --iterations 2 \
        --strategies mm,udm,uim,ucm --classifiers nb,rf,svm,knn

``TABLE.npz`` holds ``X`` (float, rows x features), ``labels`` (str) and
``users`` (int), in the table's row order.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import numpy as np
import sklearn
from mapie.classification import MapieClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import LabelEncoder, MinMaxScaler
from sklearn.svm import SVC

ALPHA = 0.05
SEED_BASE = 100
METRICS = (
    "accuracy",
    "sensitivity",
    "specificity",
    "F1",
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
)


def make_model(code: str, seed: int):
    """The study's four classifiers, by this project's codes."""
    if code == "nb":
        return GaussianNB()
    if code == "rf":
        return RandomForestClassifier(n_estimators=50, random_state=seed)
    if code == "svm":
        return SVC(probability=True, random_state=seed)
    if code == "knn":
        return KNeighborsClassifier(3)
    raise SystemExit(f"unknown classifier {code!r}")


def split(rows: np.ndarray, y: np.ndarray, train_size: float, seed: int):
    """Stratified ``train_test_split`` of row positions."""
    first, second = train_test_split(
        rows, train_size=train_size, stratify=y[rows], random_state=seed
    )
    return np.asarray(first), np.asarray(second)


def conformal(model, X_cal, y_cal, X_test, seed: int):
    """Point predictions, MAPIE 0.8.6 sets, p-values, test probabilities, threshold,
    calibration scores."""
    mapie = MapieClassifier(estimator=model, cv="prefit", method="score", random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapie.fit(X_cal, y_cal)
        y_pred, y_set = mapie.predict(X_test, alpha=ALPHA)
    sets = np.asarray(y_set)[:, :, 0].astype(bool)
    proba_test = model.predict_proba(X_test)
    proba_cal = model.predict_proba(X_cal)
    cal_scores = 1.0 - proba_cal[np.arange(len(y_cal)), y_cal]
    test_scores = 1.0 - proba_test
    # (n_test, K, n_cal) comparison: a brute-force count of calibration scores >= s.
    counts = (cal_scores[None, None, :] >= test_scores[:, :, None]).sum(axis=2)
    pvalues = (counts + 1) / (len(cal_scores) + 1)
    threshold = float(np.ravel(mapie.quantiles_)[0])
    return np.asarray(y_pred, dtype=int), sets, pvalues, proba_test, threshold, cal_scores


def caret_metrics(truth: np.ndarray, pred: np.ndarray) -> dict:
    """Accuracy and macro sensitivity, specificity, F1 as caret computes them."""
    levels = list(dict.fromkeys(truth.tolist()))
    if len(levels) < 2:
        # caret stops here ("there must be at least 2 factors levels").
        return {m: float("nan") for m in ("accuracy", "sensitivity", "specificity", "F1")}
    # table(pred, truth) over rows whose prediction is one of the levels.
    table = np.zeros((len(levels), len(levels)))
    index = {label: i for i, label in enumerate(levels)}
    for p, t in zip(pred.tolist(), truth.tolist()):
        if p in index:
            table[index[p], index[t]] += 1
    total = table.sum()
    per_class = {"sensitivity": [], "specificity": [], "F1": []}
    for i in range(len(levels)):
        others = [j for j in range(len(levels)) if j != i]
        sens = table[i, i] / table[:, i].sum() if table[:, i].sum() > 0 else np.nan
        neg_total = table[:, others].sum()
        spec = table[np.ix_(others, others)].sum() / neg_total if neg_total > 0 else np.nan
        prec = table[i, i] / table[i, :].sum() if table[i, :].sum() > 0 else np.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = 2 * prec * sens / (prec + sens)
        per_class["sensitivity"].append(sens)
        per_class["specificity"].append(spec)
        per_class["F1"].append(f1)
    out = {"accuracy": np.trace(table) / total if total > 0 else np.nan}
    for name, values in per_class.items():
        values = [v for v in values if not np.isnan(v)]
        out[name] = float(np.mean(values)) if values else float("nan")
    return {k: float(v) for k, v in out.items()}


def conformal_metrics(truth: np.ndarray, sets: np.ndarray, pvalues: np.ndarray) -> dict:
    """The study's conformal metrics, one row at a time."""
    n = len(truth)
    covered = jaccard = size_sum = empty = fuzz = excess = 0.0
    nonempty = multi = om = of = ou = 0.0
    for r in range(n):
        members = set(np.flatnonzero(sets[r]).tolist())
        y = int(truth[r])
        false = members - {y}
        covered += y in members
        jaccard += len(members & {y}) / len(members | {y})
        size_sum += len(members)
        empty += not members
        excess += len(false)
        p = pvalues[r]
        fuzz += p.sum() - p.max()
        if members:
            nonempty += 1
            multi += len(members) > 1
            om += bool(false)
            if false:
                of += sum(p[c] for c in false)
                ou += max(p[c] for c in false)

    def per_nonempty(value: float) -> float:
        return value / nonempty if nonempty else float("nan")

    return {
        "coverage": covered / n,
        "jaccard": jaccard / n,
        "setsize": size_sum / n,
        "pctempty": empty / n,
        "MCriterion": per_nonempty(multi),
        "FCriterion": fuzz / n,
        "OM": per_nonempty(om),
        "OF": per_nonempty(of),
        "OU": per_nonempty(ou),
        "OE": excess / n,
    }


def groups_of(strategy: str, y, users, seed: int):
    """(user, train, calibration, test) row positions, as docs/protocol.md splits."""
    everyone = np.arange(len(y))
    if strategy == "mm":
        train, rest = split(everyone, y, 0.6, seed)
        cal, test = split(rest, y, 0.5, seed)
        yield -1, train, cal, test
        return
    for user in np.unique(users):
        own = everyone[users == user]
        others = everyone[users != user]
        if strategy == "udm":
            train, rest = split(own, y, 0.6, seed)
            cal, test = split(rest, y, 0.5, seed)
        elif strategy == "uim":
            train, cal = split(others, y, 0.6, seed)
            test, _discarded = split(own, y, 0.5, seed)
        elif strategy == "ucm":
            train, _discarded = split(others, y, 0.6, seed)
            test, cal = split(own, y, 0.5, seed)
        else:
            raise SystemExit(f"unknown strategy {strategy!r}")
        yield int(user), train, cal, test


def run(X, labels, users, iterations, strategies, classifiers):
    encoder = LabelEncoder()
    y = encoder.fit_transform(labels)
    rows_out: dict[str, list] = {
        k: [] for k in ("key", "row", "y_pred", "sets", "pvalues", "proba", "cal_key", "cal")
    }
    groups, metrics = [], []
    for iteration in range(1, iterations + 1):
        seed = SEED_BASE + iteration
        for strategy in strategies:
            for user, train, cal, test in groups_of(strategy, y, users, seed):
                scaler = MinMaxScaler().fit(X[train])
                X_train, X_cal, X_test = (scaler.transform(X[r]) for r in (train, cal, test))
                for code in classifiers:
                    model = make_model(code, seed).fit(X_train, y[train])
                    y_pred, sets, pvalues, proba, q, cal_scores = conformal(
                        model, X_cal, y[cal], X_test, seed
                    )
                    g = len(groups)
                    groups.append((strategy, code, iteration, user, len(train), len(cal), q))
                    values = caret_metrics(y[test], y_pred)
                    values.update(conformal_metrics(y[test], sets, pvalues))
                    metrics.append([values[m] for m in METRICS])
                    rows_out["key"].append(np.full(len(test), g))
                    rows_out["row"].append(test)
                    rows_out["y_pred"].append(y_pred)
                    rows_out["sets"].append(sets)
                    rows_out["pvalues"].append(pvalues)
                    rows_out["proba"].append(proba)
                    rows_out["cal_key"].append(np.full(len(cal), g))
                    rows_out["cal"].append(cal_scores)
        print(f"iteration {iteration} done", file=sys.stderr, flush=True)
    return encoder.classes_, groups, np.asarray(metrics, dtype=float), rows_out


def aggregate(groups, metrics):
    """Mean over users per iteration (NaN skipped), then mean and SD over iterations."""
    keys = sorted({(g[0], g[1]) for g in groups})
    table = {}
    for strategy, code in keys:
        per_iteration = []
        for iteration in sorted({g[2] for g in groups}):
            picked = [
                i
                for i, g in enumerate(groups)
                if g[0] == strategy and g[1] == code and g[2] == iteration
            ]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                per_iteration.append(np.nanmean(metrics[picked], axis=0))
        values = np.asarray(per_iteration)
        sd = values.std(axis=0, ddof=1) if len(values) > 1 else np.full(len(METRICS), np.nan)
        table[f"{strategy}/{code}"] = {
            "mean": values.mean(axis=0).tolist(),
            "sd": sd.tolist(),
        }
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table")
    parser.add_argument("out")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--strategies", default="mm,udm,uim,ucm")
    parser.add_argument("--classifiers", default="nb,rf,svm,knn")
    args = parser.parse_args()
    data = np.load(args.table, allow_pickle=False)
    classes, groups, metrics, rows = run(
        np.asarray(data["X"], dtype=float),
        np.asarray(data["labels"]).astype(str),
        np.asarray(data["users"]),
        args.iterations,
        args.strategies.split(","),
        args.classifiers.split(","),
    )
    info = {
        "classes": [str(c) for c in classes],
        "groups": [list(g) for g in groups],
        "metrics": list(METRICS),
        "summary": aggregate(groups, metrics),
        "versions": {
            "mapie": _version("mapie"),
            "scikit-learn": sklearn.__version__,
            "numpy": np.__version__,
            "scipy": _version("scipy"),
        },
    }
    np.savez_compressed(
        args.out,
        info=np.asarray(json.dumps(info)),
        metrics=metrics,
        key=np.concatenate(rows["key"]),
        row=np.concatenate(rows["row"]),
        y_pred=np.concatenate(rows["y_pred"]),
        sets=np.concatenate(rows["sets"]),
        pvalues=np.concatenate(rows["pvalues"]),
        proba=np.concatenate(rows["proba"]),
        cal_key=np.concatenate(rows["cal_key"]),
        cal=np.concatenate(rows["cal"]),
    )


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    main()
