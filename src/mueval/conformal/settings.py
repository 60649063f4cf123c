"""The conformal settings of a step: level, score, threshold rule, condition and the
small-calibration policy, in one record checked once.

:class:`ConformalSettings` is what :class:`~mueval.evaluation.config.EvalConfig`
and the label curve's :class:`~mueval.evaluation.labelcurve.CurveConfig` hold, and
what :func:`mueval.conformal.step.conformal_step` reads. It is checked when it is
made, one message per rule; whoever holds one may take it as valid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from mueval.conformal.condition import Condition, parse_condition
from mueval.conformal.scores import ConformityScore, check_score_options, get_score
from mueval.errors import UsageError
from mueval.metrics.array_checks import check_alpha
from mueval.names import SMALL_CAL_POLICIES

__all__ = ["SETTINGS_FIELDS", "ConformalSettings", "refuse_tuned_raps"]


@dataclass(frozen=True)
class ConformalSettings:
    """How a calibration set turns a model's probabilities into prediction sets.

    Attributes
    ----------
    alpha : float
        Miscoverage level, strictly between 0 and 1 (0.05 = 95 % confidence).
    score : str or callable
        A name of :data:`~mueval.conformal.scores.SCORE_REGISTRY`, or a
        function ``(proba, y) -> scores`` of the user's.
    mondrian : bool
        Class-conditional thresholds (the same as ``condition="class"``).
    threshold : {"study", "mapie"}
        The threshold rule (:mod:`mueval.conformal.sets`).
    randomized : bool
        aps and raps: break ties with a uniform draw.
    raps_lambda, raps_k_reg : float and int, optional
        RAPS's penalty and the rank from which it applies (both or neither).
    small_cal : {"error", "skip", "full-set"}
        A calibration set too small for ``alpha``: stop, record NaN, or answer
        every class (:func:`mueval.conformal.step.conformal_step`).
    condition : str, optional
        ``"class"``, ``"cohort:COLUMN"``, ``"class+cohort:COLUMN"`` or
        ``"cohorts:COL1,COL2"`` (:mod:`mueval.conformal.condition`).

    Raises
    ------
    UsageError
        Any value out of its range, or options that do not go together.
    """

    alpha: float = 0.05
    score: str | Callable[..., Any] = "lac"
    mondrian: bool = False
    threshold: str = "study"
    randomized: bool = False
    raps_lambda: float | None = None
    raps_k_reg: int | None = None
    small_cal: str = "error"
    condition: str | None = None

    def __post_init__(self) -> None:
        check_alpha(self.alpha, UsageError)
        if self.small_cal not in SMALL_CAL_POLICIES:
            message = (
                f"unknown small-cal policy {self.small_cal!r}; valid: "
                f"{', '.join(SMALL_CAL_POLICIES)}"
            )
            raise UsageError(message)
        conditioning = self.conditioning  # an unknown condition fails here
        # The score's own options first, then whether the rule honours them.
        check_score_options(self.conformity, self.threshold)
        forms = [
            form
            for form, used in (
                ("class-conditional", conditioning.per_class),
                ("per-cohort", conditioning.by_cohort),
                ("--small-cal full-set", self.small_cal == "full-set"),
            )
            if used
        ]
        if forms:
            refuse_tuned_raps(self.conformity, forms)

    @property
    def conformity(self) -> ConformityScore:
        """The conformity score with its options (:func:`~mueval.conformal.scores.get_score`)."""
        return get_score(
            self.score,
            randomized=self.randomized,
            raps_lambda=self.raps_lambda,
            raps_k_reg=self.raps_k_reg,
        )

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

    def with_given(self, **values: Any) -> ConformalSettings:
        """These settings with each of ``values`` that is not None in place (checked anew).

        A config that takes the settings one by one as well as whole
        (:class:`~mueval.evaluation.config.EvalConfig`, the label curve's
        ``CurveConfig``) folds them in with it; None is the setting's own.

        Examples
        --------
        >>> ConformalSettings().with_given(alpha=0.1, score=None).alpha
        0.1
        """
        given = {name: value for name, value in values.items() if value is not None}
        return replace(self, **given) if given else self

    def record(self) -> dict[str, Any]:
        """The settings as ``run.json``'s ``config`` records them, one key a field."""
        return {name: getattr(self, name) for name in SETTINGS_FIELDS}


#: The fields of :class:`ConformalSettings`, in order: the keywords the configs
#: that hold one also take one by one.
SETTINGS_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ConformalSettings))


def refuse_tuned_raps(score: ConformityScore, forms: list[str]) -> None:
    """Refuse MAPIE's own tuned RAPS where it has no form (``forms``, named).

    MAPIE 1.x tunes RAPS's penalty on one calibration set, which it holds apart:
    it has no class-conditional or per-cohort form, no full-set answer, and no
    form for the strategies that choose or pool calibration rows (uxc, ukm, the
    curve's cluster use).

    Raises
    ------
    UsageError
        ``score`` is that RAPS and ``forms`` is not empty.
    """
    if score.tuned_by_mapie and forms:
        message = (
            "--score raps without --raps-lambda and --raps-k-reg is MAPIE 1.x's own RAPS, "
            f"tuned on one calibration set: it has no {' or '.join(forms)} form here; "
            "give --raps-lambda and --raps-k-reg, or another --score"
        )
        raise UsageError(message)
