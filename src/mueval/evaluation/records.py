"""The record types of an evaluation: its splits and its results.

Kept apart from the code that fills them (:mod:`.splits`, :mod:`.runner`,
:mod:`.crossconformal`) and the code that reads them (aggregation, the run
folder, the diagnostics), so that neither side imports the other. What a run
is configured with is :mod:`.config`'s :class:`~mueval.evaluation.config.EvalConfig`,
which this module hands on under its old address.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mueval.data.order import natural_key
from mueval.evaluation.config import EvalConfig
from mueval.names import CLASSIC_METRICS, classifier_rank, strategy_rank

__all__ = [
    "Borrow",
    "CrossSplit",
    "EvalConfig",
    "EvalResult",
    "RunOutput",
    "Split",
    "SplitRequest",
    "Target",
]


@dataclass(frozen=True)
class Target:
    """A target user's rows in a split that serves several users (grouped folds).

    Attributes
    ----------
    user : int or str
        The target user (its own id).
    test : ndarray of shape (n_test,)
        Row positions of the user's test set.
    calibrations : dict of str to ndarray
        Strategy code -> row positions of its calibration set for this user.
    borrow : dict of str to Borrow
        As :attr:`Split.borrow`, for this user.
    """

    user: int | str
    test: np.ndarray
    calibrations: dict[str, np.ndarray]
    borrow: dict[str, Borrow] = field(default_factory=dict)


@dataclass(frozen=True)
class Borrow:
    """The other users' calibration rows a strategy may borrow from (UKM).

    A strategy with a :class:`Borrow` pool picks its calibration rows once the
    model is fitted, from their scores (:mod:`mueval.evaluation.clustered`):
    ``calibrations[code]`` then holds the target's own calibration rows, and
    the pool the rows it may use instead.

    Attributes
    ----------
    rows : ndarray of shape (n_pool,)
        Row positions of the other users' calibration rows (UIM's calibration set).
    users : ndarray of shape (n_pool,)
        The user of each of those rows.
    """

    rows: np.ndarray
    users: np.ndarray


@dataclass(frozen=True)
class Split:
    """One model fit's worth of rows.

    Attributes
    ----------
    iteration : int
        1-based iteration number.
    seed : int
        Seed of the iteration (splits and models).
    user : int, str or None
        Target user (its own id); None for the mixed model.
    train : ndarray of shape (n_train,)
        Row positions of the training set.
    test : ndarray of shape (n_test,)
        Row positions of the test set.
    calibrations : dict of str to ndarray
        Strategy code -> row positions of its calibration set.
    targets : tuple of Target
        Grouped folds only: one per held-out user of the fold, served by this
        one fit; ``user`` is then None and ``test`` and ``calibrations`` empty.
    borrow : dict of str to Borrow
        Strategy code -> the other users' rows it may calibrate on instead of
        ``calibrations[code]`` (UKM only; empty for every other strategy).
    """

    iteration: int
    seed: int
    user: int | str | None
    train: np.ndarray
    test: np.ndarray
    calibrations: dict[str, np.ndarray] = field(default_factory=dict)
    targets: tuple[Target, ...] = ()
    borrow: dict[str, Borrow] = field(default_factory=dict)

    def served(self) -> tuple[Target | Split, ...]:
        """What one fit predicts for: the fold's targets, or the split itself.

        Each item has ``user``, ``test`` and ``calibrations``.
        """
        return self.targets or (self,)

    @property
    def strategies(self) -> list[str]:
        """Strategy codes the split serves."""
        first = self.served()[0]
        return list(first.calibrations)


@dataclass(frozen=True)
class CrossSplit(Split):
    """A UXC split: the target model's rows plus the calibration folds.

    ``train`` holds every non-target row, ``calibrations["uxc"]`` the same rows
    in fold order, and ``folds`` the rows of each fold; the model of fold ``k``
    is trained on ``train`` without ``folds[k]``.
    """

    folds: tuple[np.ndarray, ...] = ()


@dataclass(frozen=True)
class SplitRequest:
    """What a strategy's splitter is asked for: one iteration's splits
    (:class:`mueval.strategies.Strategy`, ``splitter``).

    Attributes
    ----------
    y : ndarray of int, shape (n_rows,)
        Class index of every row of the table.
    users : ndarray of shape (n_rows,)
        User id of every row.
    iteration : int
        1-based iteration number.
    seed : int
        Seed of the iteration: every random choice of the splitter draws from it,
        so that runs repeat.
    strategies : tuple of str
        The codes, among those whose records name this splitter, that the run
        evaluates: each split holds a calibration set under each of them.
    classes : sequence of str or None
        Class names, for error messages.
    split : {"random", "blocked"}
        ``--split``: how a user's own rows are split.
    gap : int
        ``--gap``: rows left out between blocks under ``split="blocked"``.
    adapt_frac : float
        ``--adapt-frac``: share of the target user's rows added to training (UAM).
    user_folds : int or None
        ``--user-folds``: grouped folds of users, or None (one user at a time).
    split_seeds : {"protocol", "independent"}
        ``--split-seeds``: the iteration's seed for every split, or one seed per
        role (:mod:`mueval.evaluation.split_seeds`).
    """

    y: np.ndarray
    users: np.ndarray
    iteration: int
    seed: int
    strategies: tuple[str, ...]
    classes: Sequence[str] | None = None
    split: str = "random"
    gap: int = 1
    adapt_frac: float = 0.5
    user_folds: int | None = None
    split_seeds: str = "protocol"


@dataclass
class EvalResult:
    """Everything one (strategy, classifier, iteration, user) produced.

    Attributes
    ----------
    strategy, classifier : str
    iteration, seed : int
    user : int, str or None
    n_train, n_test, n_cal : int
        Sizes of the training, test and calibration sets (the corrected
        resampled t-test of the report needs n_test / n_train).
    metrics : dict of str to float
        Every name of :data:`METRICS` (NaN when undefined or skipped).
    rows : ndarray of int, shape (n_test,)
        Row positions of the test rows.
    y_pred : ndarray of int, shape (n_test,), or None once written
    sets : ndarray of bool, shape (n_test, K), or None when skipped
    pvalues : ndarray of float, shape (n_test, K), or None when skipped or once written
    proba : ndarray of float, shape (n_test, K), or None once written
        (:meth:`drop_row_arrays`)
    note : str or None
        Why the conformal metrics are NaN (``--small-cal skip``).
    n_cal_cell : int or None
        Under class-conditional calibration, the fewest calibration rows of one
        threshold's cell (a class, or a cohort and class, among the test rows'
        cohorts); None otherwise. A cell below the minimum size keeps its class
        in every set.
    n_cal_class : tuple of int or None
        Under class-conditional calibration, the calibration rows of each class
        (in class order) in the cell that thresholded the test rows (within
        their cohort under ``class+cohort``); None otherwise, and when the test
        rows span several cohorts (MM). The exact per-user test needs each
        cell's size (:mod:`mueval.guarantees.user_level`).
    pooled_order : tuple of int or None
        Under a class-stratified split of the target's own rows (UDM, UCM, UAM
        with ``--split random`` and one unconditional threshold), the signed
        class codes of the pooled calibration and test rows in score order
        (:func:`mueval.evaluation.pooled_order.pooled_order`), from which the
        exact per-user null is computed (:mod:`mueval.guarantees.stratified_null`);
        None otherwise.
    threshold : float
        The conformal threshold (NaN when skipped, per class or MAPIE's own).
    timings : dict of str to float
        Seconds spent in ``fit_s``, ``predict_s`` (``predict_proba`` and
        ``predict``), ``conformal_s`` and ``metrics_s``; a fit serving several
        strategies is shared equally between them.
    """

    strategy: str
    classifier: str
    iteration: int
    seed: int
    user: int | str | None
    n_train: int
    n_test: int
    n_cal: int
    metrics: dict[str, float]
    rows: np.ndarray
    y_pred: np.ndarray | None
    sets: np.ndarray | None
    pvalues: np.ndarray | None
    proba: np.ndarray | None
    note: str | None = None
    n_cal_cell: int | None = None
    n_cal_class: tuple[int, ...] | None = None
    pooled_order: tuple[int, ...] | None = None
    threshold: float = float("nan")
    timings: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of_rows(
        cls,
        split: Split,
        *,
        strategy: str,
        classifier: str,
        user: int | str | None,
        rows: np.ndarray,
        n_cal: int,
        classic: dict[str, float],
        y_pred: np.ndarray,
        proba: np.ndarray,
        timings: dict[str, float],
        sets: np.ndarray | None = None,
        pvalues: np.ndarray | None = None,
        note: str | None = None,
    ) -> EvalResult:
        """The result of one target's test ``rows`` in ``split``, before or after
        conformalization.

        ``iteration``, ``seed`` and ``n_train`` come from ``split``, ``n_test``
        from ``rows``; ``metrics`` starts as the classic metrics of
        :data:`~mueval.names.CLASSIC_METRICS` taken from ``classic`` (NaN for a
        missing one), the conformal ones being added by the caller.
        """
        return cls(
            strategy=strategy,
            classifier=classifier,
            iteration=split.iteration,
            seed=split.seed,
            user=user,
            n_train=len(split.train),
            n_test=len(rows),
            n_cal=n_cal,
            metrics={m: float(classic.get(m, np.nan)) for m in CLASSIC_METRICS},
            rows=rows,
            y_pred=y_pred,
            sets=sets,
            pvalues=pvalues,
            proba=proba,
            note=note,
            timings=timings,
        )

    def drop_row_arrays(self, *, pooled: bool = False) -> None:
        """Let go of the per-row arrays only the prediction rows need.

        Once a result's prediction rows are written (``--out`` streams them),
        its probabilities, p-values and point predictions (``16 K + 8`` bytes a
        row) are not read again. ``rows`` and ``sets`` stay for the diagnostics,
        which pool the sets of one (strategy, classifier, iteration), unless
        ``pooled``: the diagnostics have taken what they need
        (:class:`~mueval.guarantees.run_diagnostics.PoolDiagnostics`), and
        ``rows`` becomes an empty array and ``sets`` None (the result then
        says nothing more about which rows it had or whether it was skipped).
        """
        self.proba = self.pvalues = self.y_pred = None
        if pooled:
            self.rows = np.zeros(0, dtype=np.int64)
            self.sets = None

    @property
    def key(self) -> tuple:
        """(strategy order (:func:`~mueval.names.strategy_rank`), classifier order (:func:`~mueval.names.classifier_rank`),
        iteration, user in natural order)."""
        return (
            # A run's strategies are registered (make_splits refuses others).
            strategy_rank(self.strategy)[0],
            classifier_rank(self.classifier),
            self.iteration,
            () if self.user is None else natural_key(self.user),
        )


@dataclass
class RunOutput:
    """Sorted results plus what happened along the way."""

    results: list[EvalResult]
    notes: list[str] = field(default_factory=list)
    #: Wall seconds per phase of the run.
    timings: dict[str, float] = field(default_factory=dict)
    #: Task seconds per stage for each strategy/classifier (:func:`stage_timings`).
    stages: dict[str, dict[str, float]] = field(default_factory=dict)
