"""What an evaluation runs: :class:`EvalConfig`, checked once when it is made.

The conformal settings (level, score, threshold rule, condition, small-calibration
policy) are one :class:`~mueval.conformal.settings.ConformalSettings`, checked
there; the rules here are the evaluation's own (strategies, classifiers,
iterations, splits, the per-user verdicts, UKM) and those that tie a strategy to
the settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from mueval.conformal.settings import ConformalSettings, refuse_tuned_raps
from mueval.errors import UsageError
from mueval.evaluation.split_seeds import check_split_seeds
from mueval.names import (
    CLASSIFIERS,
    DEFAULT_STRATEGIES,
    PVALUE_METRICS,
    SPLIT_METHODS,
    UKM_ASSIGN_RULES,
    USER_CORRECTIONS,
    USER_FAMILIES,
)

if TYPE_CHECKING:
    # Annotations only: the estimators module loads scikit-learn, which readers
    # of a run folder (the report) do without.
    from mueval.evaluation.estimators import UserModel

__all__ = ["MAX_SEED", "EvalConfig", "check_seeds", "check_whole"]

#: run.json's ``config`` keys, in the order they were always written.
_RECORD_ORDER: tuple[str, ...] = (
    "strategies",
    "classifiers",
    "alpha",
    "iterations",
    "seed_base",
    "score",
    "mondrian",
    "threshold",
    "randomized",
    "raps_lambda",
    "raps_k_reg",
    "adapt_frac",
    "small_cal",
    "split",
    "gap",
    "user_folds",
    "split_seeds",
    "condition",
    "user_level",
    "user_correction",
    "user_family",
    "min_own",
    "clusters",
    "own_rows",
    "assign",
)


#: The largest seed scikit-learn and numpy take as a ``random_state``.
MAX_SEED = 2**32 - 1


def check_whole(name: str, value: object, low: int) -> None:
    """Refuse a setting that is not a whole number of ``low`` or more (a bool included).

    Raises
    ------
    UsageError
        Names the setting and its value, in the command line's words there.

    Examples
    --------
    >>> check_whole("iterations", 3, 1)
    >>> check_whole("iterations", 2.5, 1)
    Traceback (most recent call last):
    ...
    mueval.errors.UsageError: iterations must be a whole number of 1 or more, got 2.5
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        message = f"{name} must be a whole number of {low} or more, got {value!r}"
        raise UsageError(message, cli={name: "--" + name.replace("_", "-")})


def check_seeds(seed_base: object, iterations: int) -> None:
    """Refuse a ``seed_base`` whose iterations' seeds (``seed_base + i``, i = 1 ...
    ``iterations``) are not all seeds scikit-learn takes (0 to :data:`MAX_SEED`)."""
    check_whole("seed_base", seed_base, 0)
    assert isinstance(seed_base, int | np.integer)
    if seed_base + iterations > MAX_SEED:
        message = (
            f"seed_base must leave room for {iterations} iteration seeds up to {MAX_SEED:,} "
            f"(scikit-learn's largest random_state), got {seed_base!r}"
        )
        raise UsageError(message, cli={"seed_base": "--seed-base"})


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate and how (defaults = the reference protocol).

    ``conformal``: the conformal settings (:class:`~mueval.conformal.settings.ConformalSettings`).
    Its fields may also be given one by one, as keywords of their own
    (``EvalConfig(alpha=0.1, threshold="mapie")``): each one given replaces that
    field of ``conformal``. They are no attributes: read ``config.conformal.alpha``.

    ``user_folds``: None (the protocol) leaves one user out, so UIM and UCM fit
    one model per user; an integer K from 2 to the number of users fits one per
    grouped fold of users instead (:func:`~mueval.evaluation.leave_user_out.user_fold_splits`),
    K fits per classifier and iteration whatever the number of users.

    ``split_seeds``: ``"protocol"`` (the reference code) seeds every split of an
    iteration with its one seed; ``"independent"`` gives each role (the first
    split, the target user's split, the grouping of users) its own child of
    ``numpy.random.SeedSequence(seed)`` (:mod:`mueval.evaluation.split_seeds`).

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
    iterations: int = 20
    seed_base: int = 100
    adapt_frac: float = 0.5
    split: str = "random"
    gap: int = 1
    user_folds: int | None = None
    split_seeds: str = "protocol"
    user_level: float = 0.05
    user_correction: str = "holm"
    user_family: str = "run"
    min_own: int | None = None
    clusters: int | None = None
    own_rows: int | None = None
    assign: str = "rank"
    models: tuple[UserModel, ...] = ()
    conformal: ConformalSettings = field(default_factory=ConformalSettings)
    # The settings one by one (None: conformal's own); read them from conformal.
    alpha: InitVar[float | None] = None
    score: InitVar[str | Callable[..., Any] | None] = None
    mondrian: InitVar[bool | None] = None
    threshold: InitVar[str | None] = None
    randomized: InitVar[bool | None] = None
    raps_lambda: InitVar[float | None] = None
    raps_k_reg: InitVar[int | None] = None
    small_cal: InitVar[str | None] = None
    condition: InitVar[str | None] = None

    def __post_init__(
        self,
        alpha: float | None,
        score: str | Callable[..., Any] | None,
        mondrian: bool | None,
        threshold: str | None,
        randomized: bool | None,
        raps_lambda: float | None,
        raps_k_reg: int | None,
        small_cal: str | None,
        condition: str | None,
    ) -> None:
        # ConformalSettings checks its fields as it is made.
        conformal = self.conformal.with_given(
            alpha=alpha,
            score=score,
            mondrian=mondrian,
            threshold=threshold,
            randomized=randomized,
            raps_lambda=raps_lambda,
            raps_k_reg=raps_k_reg,
            small_cal=small_cal,
            condition=condition,
        )
        object.__setattr__(self, "conformal", conformal)
        self._check_classifiers()
        self._check_runs()
        self._check_strategies()
        self._check_ukm()

    def _check_runs(self) -> None:
        """Iterations, splits and the per-user verdicts are in range."""
        check_whole("iterations", self.iterations, 1)
        check_seeds(self.seed_base, self.iterations)
        check_whole("gap", self.gap, 0)
        if self.split not in SPLIT_METHODS:
            message = f"unknown split method {self.split!r}; valid: {', '.join(SPLIT_METHODS)}"
            raise UsageError(message)
        check_split_seeds(self.split_seeds)
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

    def _check_strategies(self) -> None:
        """The settings have a form for every strategy of the run."""
        settings = self.conformal
        if settings.conditioning.by_cohort and "uxc" in self.strategies:
            message = (
                "uxc pools out-of-fold scores over the other users and has no per-cohort "
                "form: run it without --condition cohort (class works)"
            )
            raise UsageError(message)
        if settings.randomized and "uxc" in self.strategies:
            message = (
                "--randomized is not offered with uxc: its cross-conformal p-values pool "
                "deterministic out-of-fold scores"
            )
            raise UsageError(message)
        refuse_tuned_raps(settings.conformity, [s for s in ("uxc", "ukm") if s in self.strategies])

    def _check_ukm(self) -> None:
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
        condition = self.conformal.conditioning
        if condition.per_class or condition.by_cohort:
            message = (
                "ukm chooses one calibration set per user (its own rows or its cluster's) and "
                "has no class- or cohort-conditional form: run it without --condition/--mondrian"
            )
            raise UsageError(message)
        if self.conformal.randomized:
            message = (
                "--randomized is not offered with ukm: its clusters embed deterministic scores"
            )
            raise UsageError(message)

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

    def pvalue_note(self) -> str:
        """Why the p-value metrics are not reported (see
        :attr:`ConformalSettings.pvalues_describe_sets
        <mueval.conformal.settings.ConformalSettings.pvalues_describe_sets>`)."""
        settings = self.conformal
        if settings.conditioning.regression:
            return (
                f"p-value metrics ({', '.join(PVALUE_METRICS)}) are not reported under "
                f"--condition {settings.conditioning.text}: each set's threshold is the "
                "conditional quantile regression's, which no conformal p-value describes"
            )
        return (
            f"p-value metrics ({', '.join(PVALUE_METRICS)}) are not reported for --score "
            f"{settings.score} with --threshold mapie: MAPIE makes those sets from its own "
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
        """The configuration as ``run.json`` records it (lists, not tuples), the
        settings' fields among the others as they always were.

        The user models are named in ``classifiers``; run.json's ``models``
        describes every model (:func:`~mueval.evaluation.models.model_records`).
        """
        flat = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        flat.update(self.conformal.record())
        record = {name: flat[name] for name in _RECORD_ORDER}
        score = self.conformal.score
        if callable(score):
            # A score function of the user's: its name, and where it lives.
            # Here, not at the top: the hooks load scikit-learn, which readers
            # of a run folder (the report) do without.
            from mueval.evaluation.hooks import qualified_name

            module, qualname = qualified_name(score)
            record["score"] = self.conformal.conformity.name
            record["score_function"] = f"{module}.{qualname}"
        return {k: list(v) if isinstance(v, tuple) else v for k, v in record.items()}

    def seed(self, iteration: int) -> int:
        """Seed of 1-based ``iteration``: ``seed_base + iteration``."""
        return self.seed_base + iteration
