"""A run folder's prediction rows decoded as arrays, once for the run and per pair.

This module owns the arrays a reader draws from: every row's prediction set as
indicators, its true and predicted class indices and its probabilities
(:class:`RunArrays`, from :meth:`RunFolder.set_matrix
<mueval.runfolder.records.RunFolder.set_matrix>` and :meth:`RunFolder.class_indices
<mueval.runfolder.records.RunFolder.class_indices>`, the one decoding of those
columns), and one (strategy, classifier)'s rows cut from them
(:class:`PairRows`), which pickle in one copy each for a worker process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mueval.runfolder.records import RunFolder, RunFolderError

__all__ = ["PairRows", "RunArrays", "pair_rows", "run_arrays"]


@dataclass
class RunArrays:
    """Every prediction row's set, labels and probabilities as arrays, made once
    for all readers (row by row, per section, it took seconds at 20 iterations).

    Attributes
    ----------
    sets : ndarray of bool, shape (n, K)
    y, yp : ndarray of int, shape (n,)
        True and predicted class indices, in run.json's order of the classes.
    proba : ndarray of float, shape (n, K)
    """

    sets: np.ndarray
    y: np.ndarray
    yp: np.ndarray
    proba: np.ndarray


def run_arrays(run: RunFolder) -> RunArrays:
    """Decode ``run.predictions`` into arrays.

    Raises
    ------
    RunFolderError
        A probability vector whose length is not the number of classes (naming
        its strategy and classifier), or a class name not among run.json's.
    """
    p = run.predictions
    k = len(run.classes)
    vectors = p["proba"].to_numpy()
    lengths = np.fromiter((len(v) for v in vectors), dtype=np.int64, count=len(vectors))
    wrong = np.flatnonzero(lengths != k)
    if wrong.size:
        first = p.iloc[wrong[0]]
        bad = lengths[p["strategy"].eq(first["strategy"]) & p["classifier"].eq(first["classifier"])]
        msg = (
            f"{run.path / 'predictions.parquet'}: proba of {first['strategy']}/"
            f"{first['classifier']}: expected vectors of length {k} (the classes of "
            f"run.json), found lengths {sorted(set(bad.tolist()) - {k})}"
        )
        raise RunFolderError(msg)
    proba = np.stack(list(vectors)).astype(float) if len(vectors) else np.zeros((0, k))
    return RunArrays(
        run.set_matrix(p["pred_set"]),
        run.class_indices(p["y_true"]),
        run.class_indices(p["y_pred"]),
        proba,
    )


@dataclass
class PairRows:
    """One (strategy, classifier)'s test rows as arrays: what a worker process
    drawing its section receives (arrays pickle in one copy each; the rows'
    Python lists, one object a row, do not).

    Attributes
    ----------
    classes : list of str
        The run's classes, in run.json's order (the columns below).
    sets : ndarray of bool, shape (n, K)
    y, yp : ndarray of int, shape (n,)
        True and predicted class indices.
    proba : ndarray of float, shape (n, K)
    users : ndarray, shape (n,)
        Each row's own user.
    n_iterations : int
    """

    classes: list[str]
    sets: np.ndarray
    y: np.ndarray
    yp: np.ndarray
    proba: np.ndarray
    users: np.ndarray
    n_iterations: int


def pair_rows(run: RunFolder, rows: np.ndarray, arrays: RunArrays | None = None) -> PairRows:
    """The rows at positions ``rows`` of ``run.predictions`` (one (strategy,
    classifier)'s) as arrays; from ``arrays`` when given (made once for the run)."""
    arrays = arrays if arrays is not None else run_arrays(run)
    sub = run.predictions.iloc[rows]
    return PairRows(
        list(run.classes),
        arrays.sets[rows],
        arrays.y[rows],
        arrays.yp[rows],
        arrays.proba[rows],
        sub["userid"].to_numpy(dtype=object),
        int(sub["iteration"].nunique()),
    )
