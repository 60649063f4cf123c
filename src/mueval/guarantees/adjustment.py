"""Multiple-comparison corrections of exact p-values, and the words a flag is given.

Holm's step-down (family-wise error, whatever the dependence),
Benjamini-Hochberg's step-up (false discovery rate, independent or PRDS
p-values) or none, over a family of tests: the users of one (strategy,
classifier), every user of a run (:func:`adjust_family`), or the tests of one
kind that ``mueval compare`` runs (:func:`mueval.comparison.tables.adjust_table`).
numpy and pandas only, so that ``mueval compare`` loads no verdict machinery.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mueval.metrics.frame_checks import check_choice, check_level
from mueval.names import USER_CORRECTIONS, USER_FAMILIES, USER_FAMILY_WORDS

__all__ = [
    "CORRECTIONS",
    "FAMILIES",
    "adjust_family",
    "adjust_pvalues",
    "verdict_label",
]

#: Multiplicity corrections across the users of one (strategy, classifier)
#: (declared in :mod:`mueval.names`, which the command line offers).
CORRECTIONS: tuple[str, ...] = USER_CORRECTIONS

#: Over which users a correction runs: the whole run, or each (strategy, classifier).
FAMILIES: tuple[str, ...] = USER_FAMILIES

_CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no correction"}


def adjust_pvalues(pvalues: Sequence[float] | np.ndarray, correction: str = "holm") -> np.ndarray:
    """Multiplicity-adjusted p-values of one family (the users of one
    strategy and classifier).

    Parameters
    ----------
    pvalues : array of float, shape (u,)
        ``nan`` entries (users without a verdict) stay ``nan`` and are not
        counted in the family.
    correction : {"holm", "bh", "none"}
        Holm's step-down (family-wise error, any dependence),
        Benjamini-Hochberg's step-up (false discovery rate, independent or
        PRDS p-values), or none.

    Returns
    -------
    ndarray of float, shape (u,)
        Rejecting where the adjusted value is at most ``level`` is the
        procedure at ``level``.

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.04, 0.03, 0.5], "holm").round(4).tolist()
    [0.04, 0.09, 0.09, 0.5]
    >>> adjust_pvalues([0.01, 0.04, 0.03, 0.5], "bh").round(4).tolist()
    [0.04, 0.0533, 0.0533, 0.5]
    """
    check_choice("correction", correction, CORRECTIONS)
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or ((p < 0) | (p > 1)).any():
        message = f"pvalues must be a 1-D array of values in [0, 1] or nan; found {p.tolist()[:5]}"
        raise ValueError(message)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    u = q.size
    if u == 0 or correction == "none":
        out[ok] = q
        return out
    order = np.argsort(q, kind="stable")
    ranked = q[order]
    i = np.arange(1, u + 1)
    if correction == "holm":
        # Step-down: the i-th smallest is tested at level/(u - i + 1); an
        # adjusted value can never fall below an earlier one.
        adjusted = np.maximum.accumulate(np.minimum(1.0, (u - i + 1) * ranked))
    else:
        # Step-up: each adjusted value is the smallest scaled value at or above it.
        adjusted = np.minimum.accumulate((np.minimum(1.0, ranked * u / i))[::-1])[::-1]
    back = np.empty(u)
    back[order] = adjusted
    out[ok] = back
    return out


def verdict_label(level: float, correction: str, family: str | None = None) -> str:
    """The words for a flag: ``"below target at level 0.05 after Holm"``.

    With ``family``, the users the correction ran over follow.

    Examples
    --------
    >>> verdict_label(0.05, "bh")
    'below target at level 0.05 after Benjamini-Hochberg'
    >>> verdict_label(0.05, "holm", "run")
    'below target at level 0.05 after Holm over every user of the run'
    """
    check_choice("correction", correction, CORRECTIONS)
    label = f"below target at level {level:g} after {_CORRECTION_NAMES[correction]}"
    if family is None:
        return label
    check_choice("family", family, FAMILIES)
    return f"{label} over {USER_FAMILY_WORDS[family]}"


def adjust_family(
    table: pd.DataFrame, *, level: float, correction: str, family: str
) -> pd.DataFrame:
    """``p_adjusted`` and ``below`` of a verdict table, corrected over ``family``.

    Parameters
    ----------
    table : DataFrame
        Rows with ``strategy``, ``classifier`` and ``p_value`` (``nan``: no
        verdict, left out of every family), such as :func:`user_verdicts`
        gives for one or several strategies.
    level : float
        Level of the verdict after the correction.
    correction : {"holm", "bh", "none"}
        The correction.
    family : {"run", "pair"}
        ``"run"``: every row of ``table`` is one family, so Holm's
        family-wise error (BH's false discovery rate) holds over all of them
        at once; ``"pair"``: each (strategy, classifier) is a family.

    Returns
    -------
    DataFrame
        A copy with ``p_adjusted`` and ``below`` (``<NA>`` without a
        p-value) recomputed, and ``family``.

    Examples
    --------
    >>> t = pd.DataFrame({"strategy": ["mm", "mm", "uim"], "classifier": "nb",
    ...                   "p_value": [0.02, 0.5, 0.03]})
    >>> adjust_family(t, level=0.05, correction="holm", family="pair")["below"].tolist()
    [True, False, True]
    >>> adjust_family(t, level=0.05, correction="holm", family="run")["below"].tolist()
    [False, False, False]
    """
    level = check_level("level", level)
    check_choice("correction", correction, CORRECTIONS)
    check_choice("family", family, FAMILIES)
    out = table.copy()
    p = out["p_value"].to_numpy(dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    if family == "run":
        adjusted = adjust_pvalues(p, correction)
    else:
        for idx in out.groupby(["strategy", "classifier"], sort=False).indices.values():
            adjusted[idx] = adjust_pvalues(p[idx], correction)
    out["p_adjusted"] = adjusted
    below = pd.Series(adjusted <= level, index=out.index)
    out["below"] = below.astype("boolean").mask(np.isnan(adjusted))
    out["family"] = family
    return out
