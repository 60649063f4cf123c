"""The record types of an evaluation: its configuration, its splits and its results.

Kept apart from the code that fills them (:mod:`.splits`, :mod:`.runner`,
:mod:`.crossconformal`) and the code that reads them (aggregation, the run
folder, the diagnostics), so that neither side imports the other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from mueval.conformal.condition import Condition, parse_condition
from mueval.conformal.scores import ConformityScore, check_score_options, get_score
from mueval.data.table import natural_key
from mueval.errors import UsageError
from mueval.names import (
    CLASSIC_METRICS,
    CLASSIFIERS,
    DEFAULT_STRATEGIES,
    PVALUE_METRICS,
    SMALL_CAL_POLICIES,
    SPLIT_METHODS,
    SPLIT_SEEDS,
    THRESHOLD_RULES,
    UKM_ASSIGN_RULES,
    USER_CORRECTIONS,
    USER_FAMILIES,
    classifier_rank,
    strategy_rank,
)

if TYPE_CHECKING:
    # Annotations only: the estimators module loads scikit-learn, which readers
    # of a run folder (the report) do without.
    from mueval.evaluation.estimators import UserModel

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


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate and how (defaults = the reference protocol).

    ``user_folds``: None (the protocol) leaves one user out, so UIM and UCM fit
    one model per user; an integer K from 2 to the number of users fits one per
    grouped fold of users instead (:func:`~mueval.evaluation.splits.user_fold_splits`),
    K fits per classifier and iteration whatever the number of users.

    ``split_seeds``: ``"protocol"`` (the reference code) seeds every split of an
    iteration with its one seed; ``"independent"`` gives each role (the first
    split, the target user's split, the grouping of users) its own child of
    ``numpy.random.SeedSequence(seed)`` (:mod:`mueval.evaluation.split_seeds`).

    ``condition``: None (the protocol), ``"class"``, ``"cohort:COLUMN"`` or
    ``"class+cohort:COLUMN"`` (:mod:`mueval.data.cohorts`); ``mondrian=True`` is
    ``"class"``.

    ``user_level`` and ``user_correction``: a user is *below target* when the
    exact per-user test (:mod:`mueval.guarantees.user_level`) rejects at
    ``user_level`` after ``user_correction`` (``holm``, ``bh`` or ``none``)
    across ``user_family``: ``"run"`` (every user of every strategy and
    classifier of the run, one family) or ``"pair"`` (the users of each
    strategy and classifier apart). They change no set, only the verdicts a
    run folder records.

    ``min_own``, ``clusters``, ``own_rows`` and ``assign``: UKM only
    (:mod:`mueval.evaluation.clustered`). A target user with fewer than
    ``min_own`` own calibration rows (None: :func:`~mueval.evaluation.clustered.default_min_own`)
    is calibrated on the rows of its cluster of other users; ``clusters`` is
    the number of k-means clusters (None: Ding et al.'s heuristic); ``own_rows``
    keeps only the first so many of the target's calibration rows (None: all),
    as for a new user with few labelled windows; ``assign`` how a target
    below ``min_own`` finds its cluster (``rank``, the default, or ``centroid``).

    ``models``: the user's own models (:class:`~mueval.evaluation.estimators.UserModel`),
    each named in ``classifiers`` beside the built-in codes
    (:func:`~mueval.evaluation.estimators.user_models` builds both).
    """

    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    classifiers: tuple[str, ...] = CLASSIFIERS
    alpha: float = 0.05
    iterations: int = 20
    seed_base: int = 100
    score: str | Callable[..., Any] = "lac"
    mondrian: bool = False
    threshold: str = "study"
    randomized: bool = False
    raps_lambda: float | None = None
    raps_k_reg: int | None = None
    adapt_frac: float = 0.5
    small_cal: str = "error"
    split: str = "random"
    gap: int = 1
    split_seeds: str = "protocol"
    user_folds: int | None = None
    condition: str | None = None
    user_level: float = 0.05
    user_correction: str = "holm"
    user_family: str = "run"
    min_own: int | None = None
    clusters: int | None = None
    own_rows: int | None = None
    assign: str = "rank"
    models: tuple[UserModel, ...] = ()

    def __post_init__(self) -> None:
        self._check_classifiers()
        condition = parse_condition(self.condition, mondrian=self.mondrian)  # fails early
        if condition.by_cohort and "uxc" in self.strategies:
            message = (
                "uxc pools out-of-fold scores over the other users and has no per-cohort "
                "form: run it without --condition cohort (class works)"
            )
            raise UsageError(message)
        if not 0.0 < self.alpha < 1.0:
            message = f"alpha must be strictly between 0 and 1, got {self.alpha}"
            raise UsageError(message)
        if self.iterations < 1:
            message = f"iterations must be at least 1, got {self.iterations}"
            raise UsageError(message)
        if self.threshold not in THRESHOLD_RULES:
            message = (
                f"unknown threshold rule {self.threshold!r}; valid: {', '.join(THRESHOLD_RULES)}"
            )
            raise UsageError(message)
        self._check_score()
        if self.split not in SPLIT_METHODS:
            message = f"unknown split method {self.split!r}; valid: {', '.join(SPLIT_METHODS)}"
            raise UsageError(message)
        if self.gap < 0:
            message = f"gap must be 0 or more rows, got {self.gap}"
            raise UsageError(message)
        if self.split_seeds not in SPLIT_SEEDS:
            message = f"unknown split_seeds {self.split_seeds!r}; valid: {', '.join(SPLIT_SEEDS)}"
            raise UsageError(message, cli={"split_seeds": "--split-seeds"})
        if self.user_folds is not None and (
            isinstance(self.user_folds, bool)
            or not isinstance(self.user_folds, int)
            or self.user_folds < 2
        ):
            message = f"user_folds must be None or an integer of 2 or more, got {self.user_folds!r}"
            raise UsageError(message)
        if isinstance(self.user_level, bool) or not 0.0 < self.user_level < 1.0:
            message = f"user_level must be strictly between 0 and 1, got {self.user_level!r}"
            raise UsageError(message)
        if self.user_correction not in USER_CORRECTIONS:
            message = (
                f"unknown user correction {self.user_correction!r}; valid: "
                f"{', '.join(USER_CORRECTIONS)}"
            )
            raise UsageError(message)
        if self.user_family not in USER_FAMILIES:
            message = f"unknown user family {self.user_family!r}; valid: {', '.join(USER_FAMILIES)}"
            raise UsageError(message)
        self._check_ukm(condition)
        if self.small_cal not in SMALL_CAL_POLICIES:
            message = (
                f"unknown small-cal policy {self.small_cal!r}; valid: "
                f"{', '.join(SMALL_CAL_POLICIES)}"
            )
            raise UsageError(message)

    def _check_ukm(self, condition: Condition) -> None:
        """UKM's options are whole numbers in range, and its calibration has no
        conditioned or randomised form."""
        for name, low in (("min_own", 0), ("clusters", 1), ("own_rows", 0)):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < low
            ):
                message = f"{name} must be None or a whole number of {low} or more, got {value!r}"
                raise UsageError(message, cli={name: "--" + name.replace("_", "-")})
        if self.assign not in UKM_ASSIGN_RULES:
            message = f"unknown assign rule {self.assign!r}; valid: {', '.join(UKM_ASSIGN_RULES)}"
            raise UsageError(message)
        if "ukm" not in self.strategies:
            return
        if condition.per_class or condition.by_cohort:
            message = (
                "ukm chooses one calibration set per user (its own rows or its cluster's) and "
                "has no class- or cohort-conditional form: run it without --condition/--mondrian"
            )
            raise UsageError(message)
        if self.randomized:
            message = (
                "--randomized is not offered with ukm: its clusters embed deterministic scores"
            )
            raise UsageError(message)

    def _check_score(self) -> None:
        """The score, its options and the rule agree (:mod:`mueval.conformal.scores`)."""
        score = self.conformity
        check_score_options(score, self.threshold)
        if score.randomized and "uxc" in self.strategies:
            message = (
                "--randomized is not offered with uxc: its cross-conformal p-values pool "
                "deterministic out-of-fold scores"
            )
            raise UsageError(message)
        conditioning = parse_condition(self.condition, mondrian=self.mondrian)
        if score.tuned_by_mapie and (
            "uxc" in self.strategies
            or "ukm" in self.strategies
            or conditioning.per_class
            or conditioning.by_cohort
            or self.small_cal == "full-set"
        ):
            message = (
                "--score raps without --raps-lambda and --raps-k-reg is MAPIE 1.x's own RAPS, "
                "tuned on one calibration set: it has no class-conditional, per-cohort, uxc, ukm or "
                "--small-cal full-set form here; give --raps-lambda and --raps-k-reg"
            )
            raise UsageError(message)

    @property
    def conformity(self) -> ConformityScore:
        """The conformity score with its options (:func:`~mueval.conformal.scores.get_score`)."""
        return get_score(
            self.score,
            randomized=self.randomized,
            raps_lambda=self.raps_lambda,
            raps_k_reg=self.raps_k_reg,
        )

    def _check_classifiers(self) -> None:
        """Every classifier is a built-in code or a user model's name, and every
        user model is named once."""
        own = [m.name for m in self.models]
        if len(set(own)) != len(own):
            message = f"user models named more than once: {sorted(own)}"
            raise UsageError(message)
        unknown = [c for c in self.classifiers if c not in CLASSIFIERS and c not in own]
        if unknown:
            message = (
                f"unknown classifier {unknown[0]!r}; valid: {', '.join(CLASSIFIERS)} or "
                "a user model (mueval.evaluation.estimators.user_models)"
            )
            raise UsageError(message)
        unused = [name for name in own if name not in self.classifiers]
        if unused or len(set(self.classifiers)) != len(self.classifiers):
            message = f"classifiers {list(self.classifiers)} must name each of {own} once"
            raise UsageError(message)

    @property
    def user_models(self) -> dict[str, UserModel]:
        """The user's models by name."""
        return {m.name: m for m in self.models}

    @property
    def conditioning(self) -> Condition:
        """What the threshold is conditioned on (``mondrian`` folded in)."""
        return parse_condition(self.condition, mondrian=self.mondrian)

    @property
    def pvalues_describe_sets(self) -> bool:
        """Whether the p-values come from the scores the sets were made from.

        Under the study rule every score's sets and p-values come from the same
        deterministic scores; under the MAPIE rule only LAC's do (MAPIE's aps
        and raps draw random numbers, and its top_k breaks ties its own way).
        A ``cohorts:`` condition thresholds each row by a quantile regression,
        which no count of calibration scores describes.
        """
        if self.conditioning.regression:
            return False
        return self.threshold == "study" or self.score == "lac" or self.conformity.mapie is None

    def pvalue_note(self) -> str:
        """Why the p-value metrics are not reported (see :attr:`pvalues_describe_sets`)."""
        if self.conditioning.regression:
            return (
                f"p-value metrics ({', '.join(PVALUE_METRICS)}) are not reported under "
                f"--condition {self.conditioning.text}: each set's threshold is the "
                "conditional quantile regression's, which no conformal p-value describes"
            )
        return (
            f"p-value metrics ({', '.join(PVALUE_METRICS)}) are not reported for --score "
            f"{self.score} with --threshold mapie: MAPIE makes those sets from its own "
            "scores, which no p-value here describes; --threshold study gives sets and "
            "p-values from the same scores"
        )

    def user_folds_note(self) -> str | None:
        """How grouped folds differ from the protocol, or None without them."""
        if self.user_folds is None or not {"uim", "ucm"} & set(self.strategies):
            return None
        return (
            f"uim/ucm on {self.user_folds} grouped folds of users (GroupKFold, shuffled with "
            "each iteration's seed), not leave-one-user-out: one model per fold, trained "
            "on 60 % of the other folds' users' rows (uim calibrates on the other 40 %), "
            "so each target user's model also leaves out the other users of its fold"
        )

    def record(self) -> dict[str, Any]:
        """The configuration as ``run.json`` records it (lists, not tuples).

        The user models are named in ``classifiers``; run.json's ``models``
        describes every model (:func:`~mueval.evaluation.models.model_records`).
        """
        record = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "models"
        }
        if callable(self.score):
            # A score function of the user's: its name, and where it lives.
            # Here, not at the top: the hooks load scikit-learn, which readers
            # of a run folder (the report) do without.
            from mueval.evaluation.hooks import qualified_name

            module, qualname = qualified_name(self.score)
            record["score"] = self.conformity.name
            record["score_function"] = f"{module}.{qualname}"
        return {k: list(v) if isinstance(v, tuple) else v for k, v in record.items()}

    def seed(self, iteration: int) -> int:
        """Seed of 1-based ``iteration``: ``seed_base + iteration``."""
        return self.seed_base + iteration


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
