"""Conformity scores as plug-ins: one registry from names to score functions.

The convention is MAPIE's and crepes': a score is a **non-conformity** score,
larger = stranger; a class enters a prediction set when its score is at most
the calibration threshold. A score function is

    ``function(proba, y) -> scores``

with ``proba`` the class probabilities, shape (n, K), ``y`` class indices,
shape (n,), and ``scores`` float, shape (n,): the score of row ``i`` were its
label ``y[i]``. The calibration rows are scored at their true class, each test
row at every candidate class (:func:`class_scores`).

The registered scores (:data:`SCORE_REGISTRY`; their names are
:data:`mueval.names.SCORES`, which the command line offers without importing
numpy) with ``rank(c)`` = 1 + the number of classes strictly more probable than
``c``:

- ``lac``: ``1 - p_y`` (Sadinle et al. 2019; the protocol's);
- ``aps``: ``sum of p_k over the classes ranked strictly above y, plus p_y``
  (Romano et al. 2020), MAPIE's ``get_true_label_cumsum_proba``; tied classes
  are not counted above each other, so the score does not depend on an order
  among ties (MAPIE's sorts them by index);
- ``raps``: the APS score plus ``lambda * max(0, rank(y) - k_reg)``
  (Angelopoulos et al. 2021), MAPIE's ``_regularize_conformity_score``;
  ``lambda`` and ``k_reg`` are given (:func:`get_score`), or, left unset,
  tuned by MAPIE 1.x as it does by default (``--threshold mapie`` only);
- ``top_k``: ``rank(y)``, MAPIE's ``TopKConformityScore``.

``randomized=True`` (``--randomized``, aps and raps only) subtracts ``u * p_y``
with ``u`` uniform on [0, 1), one per row, as MAPIE 1.x does on its
calibration rows: ties between scores (a model whose probabilities sit at 0
and 1) are then broken at random, so they no longer push coverage above
``1 - alpha + 1/(n+1)``. The default is deterministic (the study's numbers).

A callable given as ``score`` is registered for the run under its
``__name__`` (:func:`get_score`), as crepes takes a score function.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mueval.errors import UsageError
from mueval.metrics.array_checks import as_float_matrix, as_labels, check_same_rows
from mueval.names import SCORES, THRESHOLD_RULES

__all__ = [
    "SCORE_REGISTRY",
    "ConformityScore",
    "ScoreFunction",
    "aps_scores",
    "check_score_options",
    "class_scores",
    "get_score",
    "lac_scores",
    "raps_scores",
    "raps_with",
    "top_k_scores",
]

#: ``function(proba (n, K), y (n,)) -> scores (n,)``, larger = stranger.
ScoreFunction = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _ranks(proba: np.ndarray) -> np.ndarray:
    """``rank[r, c]``: 1 + the number of classes strictly more probable than ``c``."""
    above = proba[:, None, :] > proba[:, :, None]  # (n, c, k): p_k > p_c
    return above.sum(axis=2).astype(float) + 1.0


def _lac_every(proba: np.ndarray) -> np.ndarray:
    return 1.0 - proba


def _aps_every(proba: np.ndarray) -> np.ndarray:
    # For each candidate c: the mass of the classes ranked strictly above it, plus p_c.
    above = proba[:, None, :] > proba[:, :, None]  # (n, c, k): p_k > p_c
    return (above * proba[:, None, :]).sum(axis=2) + proba


def _raps_every(proba: np.ndarray, *, lam: float, k_reg: int) -> np.ndarray:
    return _aps_every(proba) + lam * np.maximum(0.0, _ranks(proba) - k_reg)


def _at_labels(
    every: Callable[[np.ndarray], np.ndarray], proba: ArrayLike, y: ArrayLike
) -> NDArray:
    proba = as_float_matrix("proba", proba, low=0.0, high=1.0)
    y = as_labels("y", y, proba.shape[1])
    check_same_rows(proba=proba, y=y)
    return every(proba)[np.arange(y.size), y]


def lac_scores(proba: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
    """LAC conformity scores ``1 - proba[i, y_i]``, computed in float64.

    Compute calibration scores with this function so that they are the same
    floats that :func:`lac_pvalues` and :func:`lac_sets` compare them with.

    Parameters
    ----------
    proba : array of float, shape (n, K)
        Predicted class probabilities.
    y : array of int, shape (n,)
        True class indices.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    return _at_labels(_lac_every, proba, y)


def aps_scores(proba: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
    """APS scores: the probability of the classes ranked strictly above ``y_i``, plus ``p_y``.

    Examples
    --------
    >>> aps_scores([[0.5, 0.3, 0.2]], [2]).round(12).tolist()
    [1.0]
    """
    return _at_labels(_aps_every, proba, y)


def raps_scores(proba: ArrayLike, y: ArrayLike, *, lam: float, k_reg: int) -> NDArray[np.float64]:
    """RAPS scores: the APS score plus ``lam * max(0, rank(y_i) - k_reg)``.

    Examples
    --------
    The third class has rank 3: with ``k_reg=1`` it pays two penalties.

    >>> raps_scores([[0.5, 0.3, 0.2]], [2], lam=0.1, k_reg=1).round(12).tolist()
    [1.2]
    """
    return _at_labels(functools.partial(_raps_every, lam=lam, k_reg=k_reg), proba, y)


def top_k_scores(proba: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
    """Top-k scores: the rank of ``y_i`` (1 = most probable)."""
    return _at_labels(_ranks, proba, y)


@dataclass(frozen=True)
class ConformityScore:
    """One conformity score as a run uses it.

    Attributes
    ----------
    name : str
        As run.json and the tables record it.
    every : callable or None
        ``every(proba) -> s`` of shape (n, K), the score of every (row,
        candidate class); None for RAPS left to MAPIE to tune.
    summary : str
        One line for ``--help`` and the docs.
    mapie : str or None
        MAPIE 1.x's name of the same score, whose own sets ``--threshold mapie``
        uses; None when the sets are made here under either rule.
    randomizable : bool
        Whether ``randomized=True`` applies (the APS family).
    randomized : bool
        Subtract ``u * p_c`` (``u`` uniform, one per row).
    params : dict
        What run.json records of its options (RAPS's ``lambda`` and ``k_reg``).
    function : callable or None
        A user's score function, as given.
    """

    name: str
    every: Callable[[np.ndarray], np.ndarray] | None
    summary: str
    mapie: str | None = None
    randomizable: bool = False
    randomized: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    function: Callable[..., Any] | None = None

    @property
    def tuned_by_mapie(self) -> bool:
        """RAPS without ``lambda`` and ``k_reg``: only MAPIE 1.x's own sets have them."""
        return self.every is None


#: The named scores (:data:`mueval.names.SCORES` spells the same names).
SCORE_REGISTRY: dict[str, ConformityScore] = {
    "lac": ConformityScore("lac", _lac_every, "1 - p(y) (the protocol's)", mapie="lac"),
    "aps": ConformityScore(
        "aps",
        _aps_every,
        "probability of the classes ranked above y, plus p(y) (Romano et al. 2020)",
        mapie="aps",
        randomizable=True,
    ),
    "raps": ConformityScore(
        "raps",
        None,
        "aps + lambda * max(0, rank(y) - k_reg) (Angelopoulos et al. 2021)",
        mapie="raps",
        randomizable=True,
    ),
    "top_k": ConformityScore("top_k", _ranks, "rank of y (1 = most probable)", mapie="top_k"),
}


def _from_function(function: Callable[..., Any]) -> ConformityScore:
    """A user's ``function(proba, y) -> scores`` as a registry record."""
    name = getattr(function, "__name__", type(function).__name__)
    if not isinstance(name, str) or not name.isidentifier() or name == "<lambda>":
        name = "custom"
    if name in SCORE_REGISTRY:
        message = (
            f"score function {name!r} has the name of a built-in score; rename it (run.json "
            "and compare tell scores apart by name)"
        )
        raise UsageError(message)

    def every(proba: np.ndarray) -> np.ndarray:
        n, k = proba.shape
        columns = []
        for c in range(k):
            out = np.asarray(function(proba, np.full(n, c, dtype=int)), dtype=np.float64)
            if out.shape != (n,) or not np.isfinite(out).all():
                message = (
                    f"score function {name!r} returned shape {out.shape} with "
                    f"{int((~np.isfinite(out)).sum())} values not finite; expected "
                    f"({n},) finite scores, one per row"
                )
                raise UsageError(message)
            columns.append(out)
        return np.stack(columns, axis=1)

    return ConformityScore(name, every, "a score function of the user's", function=function)


def get_score(
    score: str | Callable[..., Any] | ConformityScore,
    *,
    randomized: bool = False,
    raps_lambda: float | None = None,
    raps_k_reg: int | None = None,
) -> ConformityScore:
    """The record of ``score``, with its options, checked.

    Parameters
    ----------
    score : str, callable or ConformityScore
        A name of :data:`SCORE_REGISTRY`, or ``function(proba, y) -> scores``.
    randomized : bool
        Break ties at random (aps and raps).
    raps_lambda, raps_k_reg : float and int, optional
        RAPS's penalty and the rank from which it applies: both or neither;
        neither leaves them to MAPIE 1.x's tuning (``--threshold mapie`` only).

    Raises
    ------
    UsageError
        An unknown name, or options the score has not.
    """
    if isinstance(score, ConformityScore):
        return score
    if callable(score) and not isinstance(score, str):
        record = _from_function(score)
    elif isinstance(score, str) and score in SCORE_REGISTRY:
        record = SCORE_REGISTRY[score]
    else:
        message = f"unknown conformity score {score!r}; valid: {', '.join(SCORES)} or a function (proba, y) -> scores"
        raise UsageError(message)
    given = {"raps_lambda": raps_lambda, "raps_k_reg": raps_k_reg}
    if record.name != "raps" and any(v is not None for v in given.values()):
        message = f"--raps-lambda and --raps-k-reg apply to --score raps, not {record.name}"
        raise UsageError(message)
    if randomized and not record.randomizable:
        message = (
            f"--randomized applies to aps and raps (their ties are broken by a uniform draw); "
            f"score {record.name} has no randomised form"
        )
        raise UsageError(message)
    if record.name == "raps":
        record = raps_with(raps_lambda, raps_k_reg)
    if randomized:
        record = dataclasses.replace(record, randomized=True)
    return record


def raps_with(lam: float | None, k_reg: int | None) -> ConformityScore:
    """RAPS with the given penalty, or left to MAPIE (both None)."""
    base = SCORE_REGISTRY["raps"]
    if lam is None and k_reg is None:
        return base
    if lam is None or k_reg is None:
        message = (
            "RAPS needs both --raps-lambda and --raps-k-reg (or neither: MAPIE 1.x tunes them)"
        )
        raise UsageError(message)
    if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not 0.0 <= lam < np.inf:
        message = f"--raps-lambda must be a number of 0 or more, got {lam!r}"
        raise UsageError(message)
    if isinstance(k_reg, bool) or not isinstance(k_reg, (int, np.integer)) or k_reg < 0:
        message = f"--raps-k-reg must be a whole number of 0 or more, got {k_reg!r}"
        raise UsageError(message)
    every = functools.partial(_raps_every, lam=float(lam), k_reg=int(k_reg))
    params = {"lambda": float(lam), "k_reg": int(k_reg)}
    return ConformityScore("raps", every, base.summary, None, True, False, params)


def check_score_options(record: ConformityScore, threshold: str) -> None:
    """Refuse what ``threshold`` cannot honour for ``record``, with the reason.

    Raises
    ------
    UsageError
        RAPS without ``lambda`` and ``k_reg`` under the study rule (MAPIE 1.x
        tunes them on calibration rows it holds out, which the study's rule,
        MAPIE 0.8.6's, does not do; computing APS instead would be silently
        wrong), or ``randomized`` where MAPIE's own sets are used.
    """
    if threshold not in THRESHOLD_RULES:
        message = f"unknown threshold rule {threshold!r}; valid: {', '.join(THRESHOLD_RULES)}"
        raise UsageError(message)
    if record.tuned_by_mapie and threshold == "study":
        message = (
            "--score raps under --threshold study needs --raps-lambda and --raps-k-reg: MAPIE "
            "1.x's default tunes them on 10 % of the calibration rows it holds out, which the "
            "study's rule does not do (give both, e.g. --raps-lambda 0.01 --raps-k-reg 2, or "
            "use --threshold mapie for MAPIE's own tuned RAPS)"
        )
        raise UsageError(message)
    if record.randomized and threshold == "mapie" and record.mapie is not None:
        message = (
            f"--randomized with --threshold mapie: the {record.name} sets are then MAPIE "
            "1.x's own, which always randomise the calibration scores and include the last "
            "label; --randomized applies to the sets made here (--threshold study, or raps "
            "with --raps-lambda and --raps-k-reg)"
        )
        raise UsageError(message)


def class_scores(
    proba: np.ndarray, score: str | ConformityScore, u: np.ndarray | None = None
) -> np.ndarray:
    """Conformity score of every (row, candidate class).

    Parameters
    ----------
    proba : ndarray of shape (n, K)
        Predicted probabilities.
    score : str or ConformityScore
        A registered name (without options) or a record of :func:`get_score`.
    u : ndarray of shape (n,), optional
        The uniform draws of a randomised score, one per row (required then).

    Returns
    -------
    ndarray of shape (n, K)
        ``s[r, c]``, larger = stranger.

    Raises
    ------
    UsageError
        RAPS without ``lambda`` and ``k_reg`` (only MAPIE's own sets have them).
    """
    record = get_score(score)
    if record.every is None:
        message = (
            "raps without --raps-lambda and --raps-k-reg exists only as MAPIE 1.x's own "
            "sets (--threshold mapie), which tune them; this step needs both given"
        )
        raise UsageError(message)
    scores = record.every(np.asarray(proba, dtype=np.float64))
    if record.randomized:
        if u is None or len(u) != len(scores):
            message = f"randomised {record.name} needs one uniform draw per row"
            raise UsageError(message)
        scores = scores - np.asarray(u, dtype=np.float64)[:, None] * proba
    return scores
