"""Split conformal prediction sets and p-values for one fitted model.

Two threshold rules are offered (``threshold=``):

- ``"study"`` (default, the reference protocol): MAPIE 0.8.6's rule, which the
  reference study ran. The threshold is
  ``numpy.quantile(scores, (n+1)(1-alpha)/n, method="higher")`` and a class
  enters the set when its score is within machine epsilon of it (for LAC,
  ``p_k - (1 - q) >= -eps``, MAPIE 0.8.6's expression). MAPIE 1.x does not
  offer this rule, so it is computed here (:mod:`mueval.conformal.thresholds`).
- ``"mapie"``: MAPIE 1.x ``SplitConformalClassifier(prefit=True)``, the
  textbook finite-sample rule (the ``ceil((n+1)(1-alpha))``-th smallest score,
  1e-8 tolerance). For some calibration sizes its threshold is one rank lower
  than the study's, so its sets hold one class fewer.

Both rules refuse calibration sets smaller than ``max(1/alpha, 1/(1-alpha))``,
as both MAPIE versions do.

The model is not called again here: the caller computes ``predict_proba`` once
for every calibration and test row of a split, and MAPIE sees a lookup estimator
over that table (``X`` = row numbers), so one fit and one ``predict_proba`` call
serve every calibration set of the split.

p-values are ``(#{calibration scores >= s(x, c)} + 1) / (n + 1)`` for each class
``c``, with ``s`` the conformity score (:mod:`mueval.conformal.scores`) evaluated
as if ``c`` were the label; deterministic unless ``randomized`` (aps, raps),
which draws ``u`` with ``numpy.random.RandomState(seed)``: first one per
calibration row (MAPIE 1.x's draw of its calibration scores), then one per
test row, shared by its candidate classes.

Under the study rule every score's sets and p-values come from the same scores.
Under the MAPIE rule, ``lac``, ``aps``, ``top_k`` and ``raps`` without
``lambda`` and ``k_reg`` get MAPIE's own sets (whose APS and RAPS calibration
scores MAPIE always randomises, and which include the last label); RAPS's
p-values then use the ``lambda`` and ``k_reg`` MAPIE tuned. A RAPS with given
``lambda`` and ``k_reg`` and a score function of the user's are computed here
under either rule (MAPIE 1.x's rank and 1e-8 tolerance under ``"mapie"``).

Mondrian calibration is one mechanism with two parameters of
:func:`conformalize`, as crepes' ``bins``: ``bins`` gives every calibration and
test row a cell code (a cohort of users: an age band, a device), and the test
rows of cell ``g`` are conformalized on the calibration rows of cell ``g``
only; ``mondrian=True`` gives each class its own threshold within each cell
(class-conditional calibration, which MAPIE 1.6 does not offer for
classification, is done here by hand for every score and either rule: class
``c`` gets its own threshold from the calibration rows of class ``c``, infinite,
i.e. ``c`` always in the set, when the rule's rank exceeds their number, and its
p-values count only those rows). :mod:`mueval.conformal.condition` names the
four combinations. With ``design`` the bins are cohort patterns whose
thresholds come from one quantile regression over every calibration row
(:mod:`mueval.conformal.conditional_quantile`), the fifth condition.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from mapie.classification import SplitConformalClassifier
from sklearn.base import BaseEstimator, ClassifierMixin

from mueval.conformal.conditional_quantile import pattern_thresholds
from mueval.conformal.pvalues import conformal_pvalues
from mueval.conformal.scores import (
    ConformityScore,
    check_score_options,
    class_scores,
    get_score,
    raps_with,
)
from mueval.conformal.thresholds import TOLERANCES, lac_sets, lac_threshold, min_calibration_size
from mueval.errors import EvaluationError, SmallCalibrationError, UsageError

__all__ = ["ConformalOutput", "conformalize", "full_sets"]


class _ProbaLookup(ClassifierMixin, BaseEstimator):
    """A "fitted classifier" whose input is a row number into a probability table.

    Parameters
    ----------
    table : ndarray of shape (n_rows, K)
        Precomputed ``predict_proba`` of the real model.
    """

    def __init__(self, table: np.ndarray | None = None) -> None:
        self.table = table

    def fit(self, X: np.ndarray, y: np.ndarray) -> _ProbaLookup:  # never trains
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return True

    def _table(self) -> np.ndarray:
        if self.table is None:
            message = "the probability lookup has no table"
            raise EvaluationError(message)
        return self.table

    @property
    def classes_(self) -> np.ndarray:
        return np.arange(self._table().shape[1])

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return self._table()[np.asarray(X)[:, 0].astype(int)]

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.argmax(self.predict_proba(X), axis=1)


@dataclass(frozen=True)
class ConformalOutput:
    """Sets and p-values of the test rows.

    Attributes
    ----------
    sets : ndarray of bool, shape (n_test, K)
    pvalues : ndarray of float, shape (n_test, K)
    n_cal : int
    threshold : float
        The score threshold of the sets; NaN under Mondrian calibration (one
        threshold per class, or per bin when the test rows span several
        bins) and for MAPIE's own non-LAC sets.
    note : str or None
        What was answered conservatively (a cohort too small to calibrate on).
    """

    sets: np.ndarray
    pvalues: np.ndarray
    n_cal: int
    threshold: float = float("nan")
    note: str | None = None


def _score_sets(test_scores: np.ndarray, q: float, rule: str) -> np.ndarray:
    """Classes whose score is at most ``q``, within the rule's tolerance."""
    if np.isinf(q):
        return np.ones(test_scores.shape, dtype=bool)
    return np.less_equal(test_scores - q, TOLERANCES[rule])


def _class_sets(
    proba_test: np.ndarray, test_scores: np.ndarray, q: float, score: ConformityScore, rule: str
) -> np.ndarray:
    """Sets at threshold ``q``; LAC through :func:`lac_sets` (the rule's exact
    float expression), other scores on their scores."""
    if score.name == "lac" and score.function is None:
        return lac_sets(proba_test, q, rule=rule)
    return _score_sets(test_scores, q, rule)


def _mondrian(
    proba_test: np.ndarray,
    test_scores: np.ndarray,
    cal_scores: np.ndarray,
    y_cal: np.ndarray,
    alpha: float,
    score: ConformityScore,
    rule: str,
) -> ConformalOutput:
    """Class-conditional thresholds and p-values, one class at a time."""
    sets = np.zeros(proba_test.shape, dtype=bool)
    pvalues = np.zeros(proba_test.shape, dtype=float)
    for c in range(proba_test.shape[1]):
        own = cal_scores[y_cal == c]
        # A class without calibration rows can never be excluded validly.
        q = lac_threshold(own, alpha, rule=rule) if len(own) else float("inf")
        sets[:, c] = _class_sets(proba_test[:, [c]], test_scores[:, [c]], q, score, rule)[:, 0]
        pvalues[:, c] = conformal_pvalues(own, test_scores[:, [c]])[:, 0]
    return ConformalOutput(sets, pvalues, len(y_cal))


def _mapie_sets(
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    alpha: float,
    score: str,
    seed: int | None,
) -> tuple[np.ndarray, ConformityScore | None]:
    """MAPIE 1.x split-conformal sets over the precomputed probabilities, and for
    RAPS the score with the ``lambda`` and ``k_reg`` MAPIE tuned."""
    n_cal = len(y_cal)
    table = np.vstack([proba_cal, proba_test])
    rows = np.arange(len(table)).reshape(-1, 1)
    scc = SplitConformalClassifier(
        estimator=_ProbaLookup(table),
        confidence_level=1.0 - alpha,
        conformity_score=score,
        prefit=True,
        random_state=seed,
    )
    with warnings.catch_warnings():
        # MAPIE warns when the calibration rows lack a class the model knows
        # (common for small users); the sets are still the split-conformal ones.
        warnings.filterwarnings("ignore", message=".*conformalization dataset has less labels.*")
        try:
            scc.conformalize(rows[:n_cal], y_cal)
            _, sets = scc.predict_set(rows[n_cal:])
        except ValueError as exc:
            # RAPS sets aside a part of the calibration rows to tune its penalty
            # (MAPIE 1.6 keeps 10 % in the end), and that part must itself hold
            # max(1/alpha, 1/(1-alpha)) rows: about 200 rows at alpha=0.05.
            extra = " (raps tunes its penalty on about 10 % of them)" if score == "raps" else ""
            message = (
                f"MAPIE refused the calibration set of {n_cal} rows{extra} for "
                f"score {score!r} at alpha={alpha}: {' '.join(str(exc).split())}"
            )
            raise EvaluationError(message) from exc
    tuned = None
    if score == "raps":
        # MAPIE keeps what it tuned on its fitted score object (1.6: lambda_star,
        # k_star); the p-values are RAPS's with those.
        fitted = scc._mapie_classifier.conformity_score_function_
        k_star = int(np.asarray(fitted.k_star).ravel()[0])
        tuned = raps_with(float(np.asarray(fitted.lambda_star).ravel()[0]), k_star)
    return np.asarray(sets)[:, :, 0].astype(bool), tuned


def conformalize(
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    *,
    alpha: float = 0.05,
    score: str | ConformityScore = "lac",
    mondrian: bool = False,
    threshold: str = "study",
    seed: int | None = None,
    bins: tuple[np.ndarray, np.ndarray] | None = None,
    small_bins: str = "error",
    bin_names: Sequence[str] | None = None,
    design: np.ndarray | None = None,
) -> ConformalOutput:
    """Prediction sets and p-values for the test rows of one split.

    Parameters
    ----------
    proba_cal : ndarray of shape (n_cal, K)
        Model probabilities on the calibration rows.
    y_cal : ndarray of int, shape (n_cal,)
        True classes of the calibration rows (0..K-1).
    proba_test : ndarray of shape (n_test, K)
        Model probabilities on the test rows.
    alpha : float
        Miscoverage level (0.05 = 95 % confidence).
    score : str or ConformityScore
        Conformity score: a name of :data:`~mueval.conformal.scores.SCORE_REGISTRY`
        or a record of :func:`~mueval.conformal.scores.get_score` (RAPS's
        ``lambda`` and ``k_reg``, ``randomized``, a function of the user's).
    mondrian : bool
        Class-conditional thresholds and p-values (within each bin).
    threshold : {"study", "mapie"}
        Threshold rule: the reference study's (MAPIE 0.8.6) or MAPIE 1.x's.
    seed : int, optional
        ``random_state`` given to MAPIE (APS/RAPS draw random numbers), and
        the seed of a randomised score's draws.
    bins : (ndarray of int, ndarray of int), optional
        Mondrian cell code of every calibration row, shape (n_cal,), and of
        every test row, shape (n_test,): each bin of test rows is conformalized
        on the calibration rows of its own bin only. None: one bin.
    small_bins : {"error", "full-set"}
        With ``bins``, a bin whose calibration rows are fewer than
        :func:`~mueval.conformal.thresholds.min_calibration_size`: raise
        :class:`SmallCalibrationError` naming it, or answer its test rows with
        the full set and say so in ``note``.
    bin_names : sequence of str, optional
        Name of each bin code, for messages.
    design : ndarray of float, shape (n_bins, d), optional
        With ``bins``: each bin's cohort indicators
        (:attr:`mueval.data.cohorts.CohortDesign.matrix`). The bins are then
        cohort patterns, not calibrated apart: every test row's threshold
        comes from the conditional quantile regression over all the
        calibration rows (:mod:`mueval.conformal.conditional_quantile`),
        compared with the rule's tolerance; ``mondrian`` must be False. Its
        p-values are the unconditional ones (no p-value describes these
        sets). A pattern whose cohorts hold too few calibration rows for a
        finite threshold follows ``small_bins`` as a small bin does.

    Returns
    -------
    ConformalOutput
        With ``bins``, ``n_cal`` is the number of calibration rows of the bins
        the test rows belong to (the calibration set actually used), and
        ``threshold`` the bin's when the test rows hold one bin, else NaN.

    Raises
    ------
    UsageError
        A score the rule cannot honour
        (:func:`~mueval.conformal.scores.check_score_options`).
    EvaluationError
        When the calibration set is smaller than
        :func:`~mueval.conformal.thresholds.min_calibration_size` (about ten
        times that for ``raps`` under the MAPIE rule; non-Mondrian only).

    Examples
    --------
    Twenty calibration rows whose true class got probability 0.9, one test row:

    >>> cal = np.tile([[0.9, 0.1]], (20, 1))
    >>> out = conformalize(cal, np.zeros(20, dtype=int), np.array([[0.5, 0.5]]))
    >>> out.sets.tolist(), out.pvalues.tolist()
    ([[False, False]], [[0.047619047619047616, 0.047619047619047616]])

    Bin 0's calibration scores are 0.05, 0.10, ..., 1.0 and bin 1's 0.025,
    ..., 0.5. With 20 rows at alpha = 0.05 the threshold is the largest score,
    so a test score of 0.58 is kept in bin 0 (9 of its 20 scores are at
    least 0.58: p = 10/21) and left out in bin 1 (p = 1/21):

    >>> cal = np.zeros((40, 2)); cal[:, 0] = 1 - np.r_[np.arange(1, 21) / 20, np.arange(1, 21) / 40]
    >>> y = np.zeros(40, dtype=int); g = np.repeat([0, 1], 20)
    >>> out = conformalize(cal, y, np.array([[0.42, 0.58]] * 2), bins=(g, np.array([0, 1])))
    >>> out.sets[:, 0].tolist(), out.pvalues[:, 0].round(3).tolist()
    ([True, False], [0.476, 0.048])
    """
    rule = _Rule(alpha, get_score(score), mondrian, threshold, seed)
    check_score_options(rule.score, threshold)  # the threshold rule too
    if design is not None and (bins is None or mondrian):
        message = "a cohort design needs the bins (cohort patterns) and no per-class calibration"
        raise UsageError(message)
    if bins is None:
        return _one_cell(proba_cal, y_cal, proba_test, rule)
    cells = _Bins(*bins, small=small_bins, names=bin_names)
    if design is not None:
        return _regressed(proba_cal, y_cal, proba_test, cells, design, rule)
    return _binned(proba_cal, y_cal, proba_test, cells, rule)


@dataclass(frozen=True)
class _Rule:
    """How one cell's test rows are conformalized: :func:`conformalize`'s keywords."""

    alpha: float
    score: ConformityScore
    mondrian: bool
    threshold: str
    seed: int | None


@dataclass(frozen=True)
class _Bins:
    """The Mondrian cells of :func:`conformalize` (``bins``, ``small_bins``, ``bin_names``)."""

    cal: np.ndarray
    test: np.ndarray
    small: str = "error"
    names: Sequence[str] | None = None

    def name(self, code: int) -> str:
        """The name of bin ``code``, for messages."""
        return str(self.names[code]) if self.names is not None else str(code)

    def checked(self, n_cal: int, n_test: int) -> tuple[np.ndarray, np.ndarray]:
        """The codes as integers, one per calibration and test row."""
        cal, test = np.asarray(self.cal, dtype=int), np.asarray(self.test, dtype=int)
        if len(cal) != n_cal or len(test) != n_test:
            message = (
                f"bin codes: {len(cal)} for {n_cal} calibration rows and "
                f"{len(test)} for {n_test} test rows; expected one per row"
            )
            raise UsageError(message)
        return cal, test


def _one_cell(
    proba_cal: np.ndarray, y_cal: np.ndarray, proba_test: np.ndarray, rule: _Rule
) -> ConformalOutput:
    """Sets and p-values of test rows calibrated on one cell's calibration rows."""
    y_cal = np.asarray(y_cal, dtype=int)
    n_cal = len(y_cal)
    alpha, score, threshold = rule.alpha, rule.score, rule.threshold
    if not rule.mondrian and n_cal < min_calibration_size(alpha):
        message = (
            f"calibration set of {n_cal} rows is smaller than "
            f"{min_calibration_size(alpha)} = max(1/alpha, 1/(1-alpha)), the minimum "
            f"at alpha={alpha}, which both threshold rules refuse"
        )
        raise SmallCalibrationError(message)
    mapie_name = score.mapie if threshold == "mapie" and not rule.mondrian else None
    mapie_own = mapie_name is not None
    if mapie_name is not None:
        sets, tuned = _mapie_sets(proba_cal, y_cal, proba_test, alpha, mapie_name, rule.seed)
        score = tuned or score
    cal_scores, test_scores = _scores(proba_cal, y_cal, proba_test, score, rule.seed)
    if rule.mondrian:
        return _mondrian(proba_test, test_scores, cal_scores, y_cal, alpha, score, threshold)
    if mapie_own:
        # MAPIE 1.x keeps its threshold to itself; for LAC it is this one.
        q = lac_threshold(cal_scores, alpha, rule="mapie") if score.name == "lac" else float("nan")
    else:
        q = lac_threshold(cal_scores, alpha, rule=threshold)
        sets = _class_sets(proba_test, test_scores, q, score, threshold)
    return ConformalOutput(sets, conformal_pvalues(cal_scores, test_scores), n_cal, q)


def _scores(
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    score: ConformityScore,
    seed: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Calibration scores at the true class, test scores at every class; a
    randomised score draws one uniform per calibration row, then per test row."""
    u_cal = u_test = None
    if score.randomized:
        draws = np.random.RandomState(seed)
        u_cal, u_test = draws.uniform(size=len(y_cal)), draws.uniform(size=len(proba_test))
    cal = class_scores(proba_cal, score, u_cal)[np.arange(len(y_cal)), y_cal]
    return cal, class_scores(proba_test, score, u_test)


def full_sets(
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    *,
    score: str | ConformityScore = "lac",
    seed: int | None = None,
) -> ConformalOutput:
    """The conservative answer to a calibration set too small for the level: every
    class in every set (an infinite threshold), which is valid whatever the data.

    The p-values are the usual counts over the few calibration rows.

    Parameters
    ----------
    proba_cal : ndarray of shape (n_cal, K)
    y_cal : ndarray of int, shape (n_cal,)
    proba_test : ndarray of shape (n_test, K)
    score : str or ConformityScore
        As for :func:`conformalize`.
    seed : int, optional
        The draws of a randomised score.

    Returns
    -------
    ConformalOutput
        ``threshold`` is ``inf``.

    Examples
    --------
    >>> out = full_sets(np.array([[0.9, 0.1]]), np.array([0]), np.array([[0.2, 0.8]]))
    >>> out.sets.tolist(), out.threshold
    ([[True, True]], inf)
    """
    y_cal = np.asarray(y_cal, dtype=int)
    cal_scores, test_scores = _scores(proba_cal, y_cal, proba_test, get_score(score), seed)
    sets = np.ones(proba_test.shape, dtype=bool)
    return ConformalOutput(sets, conformal_pvalues(cal_scores, test_scores), len(y_cal), math.inf)


def _binned(
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    bins: _Bins,
    rule: _Rule,
) -> ConformalOutput:
    """:func:`conformalize` one bin of test rows at a time, on its bin's calibration rows."""
    y_cal = np.asarray(y_cal, dtype=int)
    cal_bins, test_bins = bins.checked(len(y_cal), len(proba_test))
    if bins.small not in ("error", "full-set"):
        message = f"small_bins must be 'error' or 'full-set'; found {bins.small!r}"
        raise UsageError(message)
    alpha = rule.alpha
    sets = np.zeros(proba_test.shape, dtype=bool)
    pvalues = np.zeros(proba_test.shape, dtype=float)
    thresholds, notes, used = [], [], 0
    for code in np.unique(test_bins):
        test = test_bins == code
        cal = cal_bins == code
        n_bin = int(cal.sum())
        used += n_bin
        if n_bin < min_calibration_size(alpha):
            message = (
                f"cohort {bins.name(code)!r} has {n_bin} calibration rows, fewer than "
                f"{min_calibration_size(alpha)} = max(1/alpha, 1/(1-alpha)) at alpha={alpha}"
            )
            if bins.small == "error":
                raise SmallCalibrationError(message)
            out = full_sets(
                proba_cal[cal], y_cal[cal], proba_test[test], score=rule.score, seed=rule.seed
            )
            notes.append(f"{message}; its {int(test.sum())} test rows got the full set")
        else:
            out = _one_cell(proba_cal[cal], y_cal[cal], proba_test[test], rule)
        sets[test], pvalues[test] = out.sets, out.pvalues
        thresholds.append(out.threshold)
    q = thresholds[0] if len(thresholds) == 1 else float("nan")
    return ConformalOutput(sets, pvalues, used, q, "; ".join(notes) or None)


def _regressed(
    proba_cal: np.ndarray,
    y_cal: np.ndarray,
    proba_test: np.ndarray,
    bins: _Bins,
    design: np.ndarray,
    rule: _Rule,
) -> ConformalOutput:
    """Sets at each test row's conditional-quantile threshold (``design`` of :func:`conformalize`)."""
    y_cal = np.asarray(y_cal, dtype=int)
    cal_codes, test_codes = bins.checked(len(y_cal), len(proba_test))
    cal_scores, test_scores = _scores(proba_cal, y_cal, proba_test, rule.score, rule.seed)
    thresholds = pattern_thresholds(cal_scores, cal_codes, test_codes, design, rule.alpha)
    sets = np.zeros(proba_test.shape, dtype=bool)
    notes = []
    for code, q in thresholds.items():
        rows = test_codes == code
        sets[rows] = _class_sets(proba_test[rows], test_scores[rows], q, rule.score, rule.threshold)
        if math.isinf(q):
            message = (
                f"cohort pattern {bins.name(code)!r}: its cohorts hold too few calibration "
                f"rows for a finite conditional quantile at alpha={rule.alpha}"
            )
            if bins.small == "error":
                raise SmallCalibrationError(message)
            notes.append(f"{message}; its {int(rows.sum())} test rows got the full set")
    values = list(thresholds.values())
    q = values[0] if len(values) == 1 else float("nan")
    pvalues = conformal_pvalues(cal_scores, test_scores)
    return ConformalOutput(sets, pvalues, len(y_cal), q, "; ".join(notes) or None)
