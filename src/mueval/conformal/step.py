"""The conformal step of one split: its test rows conformalized on one calibration
set under :class:`~mueval.conformal.settings.ConformalSettings`, with the
small-calibration policy applied.

The one way from settings to :func:`~mueval.conformal.sets.conformalize`'s
keywords (:func:`conformal_sets`), and the one place where ``small_cal`` decides
what a refused calibration set becomes (:func:`conformal_step`). The evaluation's
tasks and the label curve both go through here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mueval.conformal.sets import ConformalOutput, conformalize, full_sets
from mueval.conformal.settings import ConformalSettings
from mueval.data.cohorts import RowCohorts
from mueval.errors import EvaluationError, SmallCalibrationError

__all__ = ["CohortRows", "StepOutcome", "conformal_sets", "conformal_step"]

#: What a refused calibration set's error adds: how to get past it.
_SMALL_CAL_HINT = (
    " (use --small-cal skip to record NaN for it, or --small-cal full-set to answer every class)"
)


@dataclass(frozen=True)
class CohortRows:
    """The cohorts of a split's calibration and test rows (cohort-conditional calibration).

    Attributes
    ----------
    cohorts : RowCohorts
        The cohort of every row of the table.
    cal, test : ndarray of int
        Row positions of the calibration and test rows in the table.
    """

    cohorts: RowCohorts
    cal: np.ndarray
    test: np.ndarray


@dataclass(frozen=True)
class StepOutcome:
    """What the conformal step gave one split.

    Attributes
    ----------
    output : ConformalOutput or None
        The sets and p-values; None when ``small_cal="skip"`` skipped the split.
    note : str or None
        What was answered otherwise than asked (skipped, the full set, a small
        cohort), prefixed with where; None when nothing was.
    answered : bool
        Whether the small-calibration policy answered for a refused calibration
        set (``skip`` or ``full-set``).
    """

    output: ConformalOutput | None
    note: str | None = None
    answered: bool = False


def conformal_sets(
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    settings: ConformalSettings,
    *,
    seed: int | None,
    cohort_rows: CohortRows | None = None,
) -> ConformalOutput:
    """Sets and p-values of the test rows under ``settings``, no policy applied.

    Parameters
    ----------
    proba_cal : ndarray of shape (n_cal, K)
    y_cal : ndarray of int, shape (n_cal,)
    proba_test : ndarray of shape (n_test, K)
    settings : ConformalSettings
    seed : int or None
        MAPIE's ``random_state`` and a randomised score's draws.
    cohort_rows : CohortRows, optional
        Under a cohort condition: the cohorts are the bins of
        :func:`~mueval.conformal.sets.conformalize`, a ``cohorts:`` condition's
        design its ``design``.

    Raises
    ------
    EvaluationError
        The calibration set is refused (:class:`SmallCalibrationError` when it is
        too small for ``alpha``).
    """
    bins = names = design = None
    if cohort_rows is not None:
        codes = cohort_rows.cohorts.codes
        bins = (codes[cohort_rows.cal], codes[cohort_rows.test])
        names, design = cohort_rows.cohorts.names, cohort_rows.cohorts.design
    return conformalize(
        proba_cal,
        y_cal,
        proba_test,
        alpha=settings.alpha,
        score=settings.conformity,
        mondrian=settings.conditioning.per_class,
        threshold=settings.threshold,
        seed=seed,
        bins=bins,
        small_bins="full-set" if settings.small_cal == "full-set" else "error",
        bin_names=names,
        design=design,
    )


def conformal_step(
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    settings: ConformalSettings,
    *,
    seed: int | None,
    where: str,
    cohort_rows: CohortRows | None = None,
) -> StepOutcome:
    """Conformalize one split's test rows, answering a refused calibration set by
    ``settings.small_cal``.

    ``error`` stops with the refusal, named by ``where`` and with how to get past
    it; ``skip`` gives no sets (the caller records NaN); ``full-set`` answers a
    calibration set too small for ``alpha`` with every class (an infinite
    threshold, valid whatever the data) and stops on any other refusal (MAPIE's
    RAPS, which needs about ten times the rows, has no full-set form).

    Parameters
    ----------
    proba_cal, y_cal, proba_test, settings, seed, cohort_rows
        As for :func:`conformal_sets`.
    where : str
        The split, for messages and notes ("strategy ucm, user 3, seed 101, ...").

    Returns
    -------
    StepOutcome

    Raises
    ------
    EvaluationError
        A refused calibration set the policy does not answer.

    Examples
    --------
    Ten calibration rows are fewer than the 20 that alpha = 0.05 needs:

    >>> settings = ConformalSettings(small_cal="full-set")
    >>> cal = np.tile([[0.9, 0.1]], (10, 1))
    >>> out = conformal_step(cal, np.zeros(10, dtype=int), cal[:1], settings, seed=0, where="here")
    >>> out.output.sets.tolist(), out.answered
    ([[True, True]], True)
    """
    try:
        conf = conformal_sets(
            proba_cal, y_cal, proba_test, settings, seed=seed, cohort_rows=cohort_rows
        )
    except EvaluationError as exc:
        message = f"{where}: {exc}"
        small = isinstance(exc, SmallCalibrationError)
        policy = settings.small_cal
        if policy == "error" or (policy == "full-set" and not small):
            raise EvaluationError(message + _SMALL_CAL_HINT) from exc
        if policy == "skip":
            return StepOutcome(None, message, answered=True)
        full = full_sets(proba_cal, y_cal, proba_test, score=settings.conformity, seed=seed)
        return StepOutcome(full, f"{message}; answered with the full set (every class)", True)
    return StepOutcome(conf, f"{where}: {conf.note}" if conf.note else None)
