"""Conditional-coverage diagnostics of a run, per (strategy, classifier, iteration).

The study's metrics are averaged over users; these diagnostics ask where the
marginal guarantee fails, so they look at all test rows of one (strategy,
classifier, iteration) at once: the test rows of every target user pooled (for
MM, the test rows themselves). On that pool:

- ``covgap_user``, ``wcovgap_user``: coverage gap and weighted coverage gap with
  the row's own user as the group;
- ``covgap_class``, ``wcovgap_class``: the same with the true class as the group;
- ``hsic_size_coverage``: HSIC between set size and the coverage indicator;
- size-stratified coverage: coverage and count per set size;
- with the ``full`` level, ``wsc`` (worst-slab coverage, 200 directions, slabs of
  at least 10 % of the rows) and ``ert`` (excess risk of the target coverage,
  Brier loss, logistic regression, 5 folds), both seeded with the iteration's seed.

WSC and ERT need features on comparable scales. The models scale with a
MinMaxScaler fitted on each split's training rows; here one MinMaxScaler is
fitted on the whole table instead, so that every (strategy, classifier,
iteration) is diagnosed in the same feature space and a slab direction means the
same thing everywhere. It sees no labels and no coverage, so it cannot leak the
quantity being diagnosed.

Results whose conformal step was skipped (``--small-cal skip``) have no sets and
are left out of the pool; a pool with no rows gives NaN.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.preprocessing import MinMaxScaler

from mueval.errors import UsageError
from mueval.evaluation.records import EvalResult
from mueval.metrics import diagnostics as dx
from mueval.names import (
    BASIC_DIAGNOSTICS,
    DIAGNOSTIC_LEVELS,
    FULL_DIAGNOSTICS,
    TASK_KEY_DTYPES,
    classifier_rank,
    strategy_rank,
)

__all__ = [
    "ERT_FOLDS",
    "WSC_DELTA",
    "WSC_DIRECTIONS",
    "Diagnostics",
    "PoolDiagnostics",
    "diagnose",
    "diagnose_pool",
    "diagnostic_names",
    "scale_features",
]

WSC_DIRECTIONS = 200
WSC_DELTA = 0.1
ERT_FOLDS = 5

_KEYS = ["strategy", "classifier", "iteration", "seed", "n_rows"]
_SSC_COLUMNS = ["strategy", "classifier", "iteration", "set_size", "coverage", "count"]


def diagnostic_names(level: str) -> tuple[str, ...]:
    """Diagnostics a level computes, in table order.

    Parameters
    ----------
    level : {"none", "basic", "full"}

    Returns
    -------
    tuple of str
        Empty for ``"none"``.
    """
    if level not in DIAGNOSTIC_LEVELS:
        message = f"unknown diagnostics level {level!r}; valid: {', '.join(DIAGNOSTIC_LEVELS)}"
        raise UsageError(message)
    return {"none": (), "basic": BASIC_DIAGNOSTICS, "full": FULL_DIAGNOSTICS}[level]


def scale_features(X: np.ndarray) -> np.ndarray:
    """The whole table's features MinMax-scaled to [0, 1] (constant columns give 0).

    Parameters
    ----------
    X : ndarray of float, shape (n_rows, n_features)

    Returns
    -------
    ndarray of float, shape (n_rows, n_features)
    """
    return MinMaxScaler().fit_transform(np.asarray(X, dtype=float))


def diagnose_pool(
    covered: np.ndarray,
    set_size: np.ndarray,
    users: np.ndarray,
    y_true: np.ndarray,
    X_scaled: np.ndarray | None,
    *,
    alpha: float,
    seed: int,
    level: str,
) -> tuple[dict[str, float], dict[int, tuple[float, int]]]:
    """Every diagnostic of one pool of test rows.

    Parameters
    ----------
    covered : ndarray of bool, shape (n,)
    set_size : ndarray of int, shape (n,)
    users : ndarray, shape (n,)
        The row's own user.
    y_true : ndarray of int, shape (n,)
        The row's true class.
    X_scaled : ndarray of float, shape (n, d), or None
        Scaled features of the rows (needed by the ``full`` level only).
    alpha : float
        Miscoverage level of the run.
    seed : int
        The iteration's seed (directions of WSC, folds of ERT).
    level : {"basic", "full"}

    Returns
    -------
    values : dict of str to float
        One entry per name of :func:`diagnostic_names` (NaN for an empty pool).
    ssc : dict of int to (float, int)
        ``{set_size: (coverage, count)}``; empty for an empty pool.
    """
    names = diagnostic_names(level)
    n = covered.size
    if n == 0:
        return dict.fromkeys(names, math.nan), {}
    values = {
        "covgap_user": dx.coverage_gap(covered, users, alpha),
        "wcovgap_user": dx.weighted_coverage_gap(covered, users, alpha),
        "covgap_class": dx.coverage_gap(covered, y_true, alpha),
        "wcovgap_class": dx.weighted_coverage_gap(covered, y_true, alpha),
        "hsic_size_coverage": dx.hsic(set_size, covered, random_state=seed),
    }
    if level == "full":
        if X_scaled is None:
            message = "the full diagnostics level needs the scaled features of the pooled rows"
            raise UsageError(message)
        values["wsc"] = dx.worst_slab_coverage(
            X_scaled, covered, delta=WSC_DELTA, n_directions=WSC_DIRECTIONS, random_state=seed
        )
        # ERT's cross-validation needs at least one row per fold.
        values["ert"] = (
            dx.excess_risk_target_coverage(
                X_scaled, covered, alpha, n_splits=ERT_FOLDS, random_state=seed, loss="brier"
            )
            if n >= ERT_FOLDS
            else math.nan
        )
    return {name: float(values[name]) for name in names}, dx.size_stratified_coverage(
        covered, set_size
    )


@dataclass
class Diagnostics:
    """What :func:`diagnose` computed.

    Attributes
    ----------
    level : str
    names : tuple of str
        Diagnostic columns of ``frame``, in table order.
    frame : DataFrame
        One row per (strategy, classifier, iteration): ``strategy, classifier,
        iteration, seed, n_rows`` (pooled test rows) and one float column per name.
    size_coverage : DataFrame
        ``strategy, classifier, iteration, set_size, coverage, count``.
    seconds : dict of str to float
        Seconds spent on the pools of each ``strategy/classifier``.
    """

    level: str
    names: tuple[str, ...]
    frame: pd.DataFrame
    size_coverage: pd.DataFrame
    seconds: dict[str, float] = field(default_factory=dict)


def _timed_pool(*args, **kwargs) -> tuple[dict[str, float], dict, float]:
    """:func:`diagnose_pool` and the seconds it took (in whichever process ran it)."""
    clock = time.perf_counter()
    values, ssc = diagnose_pool(*args, **kwargs)
    return values, ssc, time.perf_counter() - clock


def _pools(
    results: Sequence[EvalResult], y: np.ndarray
) -> list[tuple[tuple[str, str, int, int], np.ndarray, np.ndarray, np.ndarray]]:
    """(key, rows, covered, set_size) per (strategy, classifier, iteration), in result order."""
    ordered = sorted(results, key=lambda r: r.key)
    pools = []
    for (strategy, classifier, iteration), group in groupby(
        ordered, key=lambda r: (r.strategy, r.classifier, r.iteration)
    ):
        members = list(group)
        kept = [(r.rows, r.sets) for r in members if r.sets is not None]
        if kept:
            rows = np.concatenate([r for r, _ in kept]).astype(np.int64)
            sets = np.vstack([s for _, s in kept])
            covered = sets[np.arange(rows.size), y[rows]]
            set_size = sets.sum(axis=1).astype(np.int64)
        else:
            rows = np.zeros(0, dtype=np.int64)
            covered = np.zeros(0, dtype=bool)
            set_size = np.zeros(0, dtype=np.int64)
        pools.append(((strategy, classifier, iteration, members[0].seed), rows, covered, set_size))
    return pools


def _pool_calls(
    pools: Sequence[tuple[tuple[str, str, int, int], np.ndarray, np.ndarray, np.ndarray]],
    users: np.ndarray,
    y: np.ndarray,
    X_scaled: np.ndarray | None,
    *,
    alpha: float,
    level: str,
    jobs: int,
) -> list[tuple[dict[str, float], dict, float]]:
    """:func:`diagnose_pool` of each pool, in parallel for the ``full`` level."""
    # Each worker gets only its pool's rows (the whole table is not shipped).
    calls = [
        (
            (covered, set_size, users[rows], y[rows], None if X_scaled is None else X_scaled[rows]),
            key[3],
        )
        for key, rows, covered, set_size in pools
    ]
    if level == "full" and jobs != 1 and len(calls) > 1:
        return Parallel(n_jobs=jobs, backend="loky")(
            delayed(_timed_pool)(*a, alpha=alpha, seed=seed, level=level) for a, seed in calls
        )
    return [_timed_pool(*a, alpha=alpha, seed=seed, level=level) for a, seed in calls]


def _assemble(level: str, names: tuple[str, ...], done: Sequence[tuple]) -> Diagnostics:
    """The :class:`Diagnostics` of ``(key, n_rows, values, ssc, seconds)`` per pool, in order."""
    records, ssc_rows = [], []
    seconds: dict[str, float] = {}
    for key, n_rows, values, ssc, took in done:
        strategy, classifier, iteration, seed = key
        slot = f"{strategy}/{classifier}"
        seconds[slot] = seconds.get(slot, 0.0) + took
        records.append((strategy, classifier, iteration, seed, n_rows, *values.values()))
        ssc_rows += [
            (strategy, classifier, iteration, size, cov, count)
            for size, (cov, count) in ssc.items()
        ]
    frame = pd.DataFrame.from_records(records, columns=[*_KEYS, *names])
    frame = frame.astype(
        {
            **TASK_KEY_DTYPES,
            "n_rows": "int64",
            **dict.fromkeys(names, "float64"),
        }
    )
    size_coverage = pd.DataFrame.from_records(ssc_rows, columns=_SSC_COLUMNS).astype(
        {
            "strategy": str,
            "classifier": str,
            "iteration": "int64",
            "set_size": "int64",
            "coverage": "float64",
            "count": "int64",
        }
    )
    return Diagnostics(level, names, frame, size_coverage, seconds)


def diagnose(
    results: Sequence[EvalResult],
    X: np.ndarray,
    y: np.ndarray,
    users: np.ndarray,
    *,
    alpha: float,
    level: str = "basic",
    jobs: int = 1,
) -> Diagnostics:
    """Diagnostics of every (strategy, classifier, iteration) of a run.

    Parameters
    ----------
    results : sequence of EvalResult
        All results of the run (any order).
    X : ndarray of float, shape (n_rows, n_features)
        Unscaled features of the whole table.
    y : ndarray of int, shape (n_rows,)
        True class index of every row.
    users : ndarray, shape (n_rows,)
        User of every row.
    alpha : float
        Miscoverage level of the run.
    level : {"none", "basic", "full"}
    jobs : int
        Worker processes (joblib loky) for the ``full`` level; every pool is
        computed from its own seed, so the values do not depend on ``jobs``.

    Returns
    -------
    Diagnostics
        Empty frames for ``"none"``.

    See Also
    --------
    PoolDiagnostics : the same tables from results handed over as they arrive.
    """
    names = diagnostic_names(level)
    y = np.asarray(y, dtype=np.int64)
    users = np.asarray(users)
    pools = _pools(results, y) if names else []
    X_scaled = scale_features(X) if level == "full" else None
    outs = _pool_calls(pools, users, y, X_scaled, alpha=alpha, level=level, jobs=jobs)
    done = [
        (key, rows.size, values, ssc, took)
        for (key, rows, _, _), (values, ssc, took) in zip(pools, outs, strict=True)
    ]
    return _assemble(level, names, done)


class PoolDiagnostics:
    """:func:`diagnose` computed pool by pool while the tasks' results arrive.

    Each (strategy, classifier, iteration) pool needs all its test rows at
    once (HSIC and the coverage gaps are not sums over rows), but only its
    own: a pool is diagnosed as soon as the results of a later iteration
    arrive (the runner hands them over in task order, iteration after
    iteration), and its arrays are let go. The main process then holds the
    row positions, covered flags and set sizes (17 bytes a row) of one
    iteration's pools, not of the whole run, and nothing of a result's sets.
    The tables are those :func:`diagnose` computes from all the results.

    Parameters
    ----------
    X, y, users, alpha, level, jobs
        As for :func:`diagnose`.

    Examples
    --------
    >>> from mueval.data.synthetic import make_users
    >>> from mueval.data.table import table_from_frame
    >>> from mueval.evaluation.records import EvalConfig
    >>> from mueval.evaluation.runner import run
    >>> table = table_from_frame(make_users(4, n_classes=2, rows_per_user=60, seed=0))
    >>> config = EvalConfig(strategies=("ucm",), classifiers=("nb",), iterations=2)
    >>> pooled = PoolDiagnostics(table.X, table.y, table.users, alpha=0.05)
    >>> out = run(table.X, table.y, table.users, table.classes, config, progress=False,
    ...           on_task=pooled.add)
    >>> streamed = pooled.finish()
    >>> whole = diagnose(out.results, table.X, table.y, table.users, alpha=0.05)
    >>> streamed.frame.equals(whole.frame)
    True
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        users: np.ndarray,
        *,
        alpha: float,
        level: str = "basic",
        jobs: int = 1,
    ) -> None:
        self.names = diagnostic_names(level)
        self.level = level
        self._y = np.asarray(y, dtype=np.int64)
        self._users = np.asarray(users)
        self._X_scaled = scale_features(X) if level == "full" else None
        self._alpha = alpha
        self._jobs = jobs
        # Pool -> (seed, [(result key, rows, covered, set_size), ...]).
        self._open: dict[tuple[str, str, int], tuple[int, list]] = {}
        self._done: list[tuple[tuple, tuple, int, dict, dict, float]] = []
        self._closed: set[tuple[str, str, int]] = set()
        #: Seconds spent in :meth:`add` and :meth:`finish`.
        self.seconds = 0.0

    def add(self, results: Sequence[EvalResult]) -> None:
        """Take one task's results (before or after their rows are written).

        Raises
        ------
        ValueError
            A result of a pool already diagnosed (results out of iteration order).
        """
        if not self.names:
            return
        clock = time.perf_counter()
        for r in results:
            pool = (r.strategy, r.classifier, r.iteration)
            if pool in self._closed:
                message = (
                    f"a result of {r.strategy} / {r.classifier} iteration {r.iteration} arrived "
                    "after that pool was diagnosed: results must come iteration after iteration"
                )
                raise ValueError(message)
            earlier = [p for p in self._open if p[2] < r.iteration]
            if earlier:
                self._diagnose(earlier)
            _, parts = self._open.setdefault(pool, (r.seed, []))
            if r.sets is not None:
                rows = np.asarray(r.rows, dtype=np.int64)
                covered = r.sets[np.arange(rows.size), self._y[rows]]
                parts.append((r.key, rows, covered, r.sets.sum(axis=1).astype(np.int64)))
        self.seconds += time.perf_counter() - clock

    def _diagnose(self, which: Sequence[tuple[str, str, int]]) -> None:
        pools = []
        for pool in which:
            seed, parts = self._open.pop(pool)
            self._closed.add(pool)
            # In result order, as diagnose() pools the sorted results.
            parts.sort(key=lambda part: part[0])
            if parts:
                rows = np.concatenate([p[1] for p in parts])
                covered = np.concatenate([p[2] for p in parts])
                set_size = np.concatenate([p[3] for p in parts])
            else:
                rows = np.zeros(0, dtype=np.int64)
                covered = np.zeros(0, dtype=bool)
                set_size = np.zeros(0, dtype=np.int64)
            pools.append(((*pool, seed), rows, covered, set_size))
        outs = _pool_calls(
            pools,
            self._users,
            self._y,
            self._X_scaled,
            alpha=self._alpha,
            level=self.level,
            jobs=self._jobs,
        )
        for (key, rows, _, _), (values, ssc, took) in zip(pools, outs, strict=True):
            order = (strategy_rank(key[0]), classifier_rank(key[1]), key[2])
            self._done.append((order, key, rows.size, values, ssc, took))

    def finish(self) -> Diagnostics:
        """Diagnose the pools still open and return every pool's tables, in
        :func:`diagnose`'s order."""
        clock = time.perf_counter()
        if self._open:
            self._diagnose(list(self._open))
        done = [entry[1:] for entry in sorted(self._done, key=lambda entry: entry[0])]
        self.seconds += time.perf_counter() - clock
        return _assemble(self.level, self.names, done)
