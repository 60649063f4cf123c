"""The pooled coverage of a strategy and classifier against ``1 - alpha``: an exact test.

``pooled-below-target`` (an error) asks whether the covered count of all the
test rows of one (strategy, classifier), over every user and iteration, is
lower than split conformal allows. The Clopper-Pearson interval of that count
treats the rows as independent, and they are not: the rows of one iteration
share calibration sets, and iterations re-test the same rows (under
``--split blocked`` the very same rows against the very same calibration rows
in every iteration). This module tests the count under the null of
:mod:`.user_level` (each user's calibration and test rows exchangeable,
``X_u ~ BetaBinomial(m, k, n + 1 - k)`` per calibration set or Mondrian cell)
with the per-user verdicts' combination rules.

Within one iteration, the users' counts ``X_u`` add up to ``S``:

- **MM**: every test row is thresholded by the one calibration set of the
  iteration (same ``n`` and ``k`` for every user), so ``S`` is itself
  Beta-Binomial over all the test rows: exact. Under class-conditional
  calibration the cells of one class are shared by all users, and the rule
  below (``"any"``) is used.
- **UDM**: each user's model, calibration and test rows are the user's own,
  so the users' counts are independent when the users' rows are: ``S`` has
  the convolution of their laws, exact.
- **UIM, UCM, UAM and any other**: a user's count depends on models trained
  on the other users (and, under UIM, on calibration rows the users share):
  dependent in a way the run does not record. Whatever that dependence, the
  sum of the users' counts is at most, in the convex order, their
  *comonotone* sum ``S_c = sum_u F_u^{-1}(U)`` with one uniform ``U``
  (Meilijson and Nádas 1979; Dhaene, Denuit, Goovaerts, Kaas and Vyncke
  2002). Since ``(d - s)_+ >= (d - c) 1{s <= c}`` is convex in ``s``,

      P(S <= c) <= E[(d - S)_+] / (d - c) <= E[(d - S_c)_+] / (d - c)

  for every ``d > c``, and the p-value is the smallest such bound
  (:func:`comonotone_pvalue`), valid under any dependence between users.

Across iterations the rule is the per-user verdicts'
(:func:`~mueval.guarantees.user_level.default_combine`): ``"convolution"``
(UDM, UCM, UAM under a random split: independent iterations) adds the
iterations' totals, whose law is the convolution of the iterations' laws
(convex order is kept by independent sums, so the bound above applies to it
when an iteration's law is a comonotone bound); ``"bonferroni"`` (MM, UIM, and
every strategy under ``--split blocked``) takes ``min(1, B * min_i p_i)``
over the ``B`` iterations, valid however they depend on each other.

Ties and the rules' tolerances only add covered rows, so the p-value stays
valid (conservative) with them, as for the per-user test.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import signal

from mueval.guarantees.covered_law import covered_pmf, null_pmf
from mueval.guarantees.user_level import COMBINES
from mueval.metrics.frame_checks import check_choice

__all__ = [
    "POOLED_DEPENDENCE",
    "WITHIN_ITERATION",
    "comonotone_pmf",
    "comonotone_pvalue",
    "pooled_pvalue",
    "within_iteration",
]

#: How the users' counts of one iteration depend on each other.
WITHIN_ITERATION: tuple[str, ...] = ("shared", "independent", "any")

#: Per strategy (others: ``"any"``, valid under every dependence).
POOLED_DEPENDENCE: dict[str, str] = {"mm": "shared", "udm": "independent"}


def within_iteration(strategy: str) -> str:
    """How a strategy's users' counts of one iteration combine.

    Examples
    --------
    >>> within_iteration("mm"), within_iteration("udm"), within_iteration("uim")
    ('shared', 'independent', 'any')
    """
    return POOLED_DEPENDENCE.get(str(strategy).lower(), "any")


def comonotone_pmf(pmfs: Sequence[np.ndarray]) -> np.ndarray:
    """Law of the comonotone sum ``sum_u F_u^{-1}(U)`` of counts with laws ``pmfs``.

    Parameters
    ----------
    pmfs : sequence of 1-D arrays
        ``pmfs[u][x] = P(X_u = x)`` for ``x = 0..m_u``.

    Returns
    -------
    ndarray, shape (sum(m_u) + 1,)

    Examples
    --------
    Two fair coins moved together: 0 or 2, each with probability 1/2.

    >>> comonotone_pmf([np.array([0.5, 0.5]), np.array([0.5, 0.5])]).tolist()
    [0.5, 0.0, 0.5]
    """
    cdfs = []
    for pmf in pmfs:
        cdf = np.cumsum(np.asarray(pmf, dtype=np.float64))
        cdf = np.minimum(cdf / cdf[-1], 1.0)
        cdf[-1] = 1.0
        cdfs.append(cdf)
    size = sum(c.size - 1 for c in cdfs) + 1
    if not cdfs:
        return np.ones(1)
    # U runs through (0, 1]; each quantile function steps at its CDF's values,
    # so the sum is constant between consecutive values of the union.
    levels = np.unique(np.concatenate(cdfs))
    levels = levels[levels > 0.0]
    widths = np.diff(np.concatenate([[0.0], levels]))
    total = np.zeros(levels.size, dtype=np.int64)
    for cdf in cdfs:
        # The quantile at u in (previous level, level]: the first x with F(x) >= level.
        total += np.searchsorted(cdf, levels, side="left")
    out = np.zeros(size)
    np.add.at(out, total, widths)
    return out


def _convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The law of an independent sum: direct below a few thousand values (exact
    sums of non-negative terms), by FFT above (absolute error about 1e-13, far
    below any level; the negative round-off is cut)."""
    if min(a.size, b.size) < 2000:
        return np.convolve(a, b)
    return np.clip(signal.fftconvolve(a, b), 0.0, None)


def _tail(pmf: np.ndarray, covered: int) -> float:
    """``P(X <= covered)``."""
    return float(min(1.0, pmf[: covered + 1].sum()))


def comonotone_pvalue(covered: int, pmf: np.ndarray) -> float:
    """``min over d > c`` of ``E[(d - T)_+] / (d - c)``, ``T`` with law ``pmf``.

    A valid p-value for ``P(S <= covered)`` whenever ``S`` is at most ``T``
    in the convex order (module docstring). The bound is piecewise linear in
    ``d`` between the support points of ``T``, so its minimum is at one of
    them.

    Examples
    --------
    ``T`` uniform on 0..2 and ``c = 0``: ``d = 1`` gives 1/3, ``d = 2`` gives
    (2/3 + 1/3) / 2 = 1/2, so 1/3, the exact ``P(T <= 0)`` here:

    >>> round(comonotone_pvalue(0, np.array([1, 1, 1]) / 3), 4)
    0.3333
    """
    pmf = np.asarray(pmf, dtype=np.float64)
    values = np.arange(pmf.size)
    support = values[(pmf > 0) & (values > covered)]
    if support.size == 0:
        return 1.0
    cdf = np.cumsum(pmf)
    first = np.cumsum(pmf * values)
    # E[(d - T)_+] = d F(d) - sum_{t <= d} t p(t), at integer d.
    expected = support * cdf[support] - first[support]
    return float(min(1.0, np.min(expected / (support - covered))))


def _iteration_law(
    users: np.ndarray, m: np.ndarray, n: np.ndarray, k: np.ndarray, dependence: str
) -> tuple[np.ndarray, bool]:
    """(law of one iteration's total or its convex-order bound, exact?).

    ``users``, ``m``, ``n``, ``k``: the iteration's cells (user, test rows,
    calibration rows, rank), in the cells' order. A user's law is the
    convolution over its cells in that order (:func:`null_pmf`); the users come
    in sorted order, as a groupby sorts them.
    """
    if dependence == "shared":
        keys = np.unique(np.stack([n, k]), axis=1)
        if keys.shape[1] == 1:
            return covered_pmf(int(m.sum()), int(keys[0, 0]), int(keys[1, 0])), True
        dependence = "any"
    codes, _ = pd.factorize(users, sort=True)
    laws = [null_pmf(m[codes == u], n[codes == u], k[codes == u]) for u in range(codes.max() + 1)]
    if dependence == "independent" or len(laws) == 1:
        total = np.ones(1)
        for law in laws:
            total = _convolve(total, law)
        return total, True
    return comonotone_pmf(laws), False


def pooled_pvalue(cells: pd.DataFrame, *, dependence: str, combine: str) -> float:
    """The p-value of one (strategy, classifier)'s pooled covered count.

    Parameters
    ----------
    cells : DataFrame
        That pair's cells, as :func:`~mueval.guarantees.user_level.user_verdicts`
        takes them, with a finite ``rank`` on every row: ``user``,
        ``iteration``, ``n_cal``, ``n_test``, ``n_covered``, ``rank``.
    dependence : {"shared", "independent", "any"}
        How the users' counts of one iteration depend (:func:`within_iteration`).
    combine : {"convolution", "bonferroni"}
        How the iterations combine.

    Returns
    -------
    float
        In (0, 1]; ``nan`` for no cells.

    Examples
    --------
    MM, one iteration: 3 users share a 20-row calibration set (rank 20, the
    coverage of the set Beta(20, 1)); 60 test rows in all, 50 covered:

    >>> cells = pd.DataFrame({"user": [1, 2, 3], "iteration": 0, "n_cal": 20,
    ...     "rank": 20, "n_test": 20, "n_covered": [20, 15, 15]})
    >>> p = pooled_pvalue(cells, dependence="shared", combine="bonferroni")
    >>> round(p, 4) == round(float(covered_pmf(60, 20, 20)[:51].sum()), 4)
    True
    """
    check_choice("dependence", dependence, WITHIN_ITERATION)
    check_choice("combine", combine, COMBINES)
    if cells.empty:
        return float("nan")
    # As arrays, grouped once: pandas' per-group indexing cost more than the laws.
    users = cells["user"].to_numpy()
    m, n, k, covered_rows = (
        cells[c].to_numpy(dtype=np.int64) for c in ("n_test", "n_cal", "rank", "n_covered")
    )
    iterations, _ = pd.factorize(cells["iteration"], sort=True)
    laws = []
    counts = []
    for it in range(iterations.max() + 1):
        rows = iterations == it
        laws.append(_iteration_law(users[rows], m[rows], n[rows], k[rows], dependence))
        counts.append(int(covered_rows[rows].sum()))
    if combine == "convolution":
        total = np.ones(1)
        for law, _ in laws:
            total = _convolve(total, law)
        covered = sum(counts)
        exact = all(e for _, e in laws)
        return _tail(total, covered) if exact else comonotone_pvalue(covered, total)
    per_iteration = [
        _tail(law, c) if exact else comonotone_pvalue(c, law)
        for (law, exact), c in zip(laws, counts, strict=True)
    ]
    return float(min(1.0, len(per_iteration) * min(per_iteration)))
