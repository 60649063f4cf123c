"""The exact null of a user's covered count under a class-stratified split.

UDM, UCM and UAM split one user's rows into calibration and test rows with a
split stratified on the class: each class ``c`` of the user's ``N_c`` pooled
rows (calibration and test together) gives ``n_c`` rows to calibration and
``N_c - n_c`` to test, and which of its rows go where is uniformly random.
The Beta-Binomial null of :mod:`.user_level` is the law of the covered count
when the calibration and test scores are exchangeable *as a whole*; under a
stratified split they are exchangeable only *within each class*, and the law
of the count depends on how the classes' scores interleave.

Why no distribution-free null is tighter
----------------------------------------
When every class has the same score distribution, the labels say nothing about
the scores, the stratified split is a uniformly random split of the scores,
and the count is exactly Beta-Binomial. Any null that holds whatever the
classes' distributions are must therefore be at least as wide as the
Beta-Binomial; a narrower law (the issue's variance 6.8 against 18.8 with 20
classes) holds only for classes whose scores are apart. The gain has to come
from the data: the test below conditions on the user's scores.

The conditional (randomization) null
------------------------------------
Fix the ``N = n + m`` pooled rows of one iteration (``n`` calibration and ``m``
test rows) and their scores: for UCM the model never saw the user; for UDM and
UAM, given the training part, the model is fixed and the rest of the user's
rows is split. Sort the pooled rows by score, ties broken by a fixed order of
the rows (their class, then their position: anything that does not depend on
which rows calibrate). The threshold is the ``k``-th smallest calibration score;
if it sits at sorted position ``t``, the rows before it hold ``k - 1``
calibration rows and ``t - k`` test rows, all covered. So the tie-broken covered
count is ``X = t - k`` and

    P(X <= x) = P(at least k calibration rows among the first x + k positions).

Among the first ``j`` positions, ``a_c(j)`` rows are of class ``c``; under the
split, the number of them that calibrate is hypergeometric (``a_c(j)`` draws
from ``N_c`` rows of which ``n_c`` calibrate), independently across classes.
The law of ``X`` is therefore exact, from ``C`` hypergeometric laws per
position. :func:`stratified_pmf` computes ``P(X = x)`` directly (not as a
difference of the CDF), so the far lower tail keeps its relative precision:

    P(X = x) = sum_h P(H_c* = h) * (n_c* - h) / (N_c* - a_c*) * P(sum_{c != c*} H_c = k - 1 - h)

with ``c*`` the class at position ``t = k + x`` and the ``H`` and ``a`` of the
first ``t - 1`` positions. The sum runs over the classes' deficits
``n_c - H_c``, which add up to ``n - k + 1`` (about ``alpha * n``): a
convolution of short arrays, so a user of 1,000 rows costs milliseconds.

Validity. Under the null "within each class of the pooled rows, the split is
uniformly random given the scores" (true by construction for a uniformly
random stratified split; what a blocked split or a user who changes over the
split would break), the tie-broken count has exactly this law given the
scores, so ``P(p <= u) <= u`` given the scores and hence unconditionally. The
observed count is at least the tie-broken one (rows tied with the threshold,
and the MAPIE rule's 1e-8 tolerance, only add covered rows), so the p-value
``P(X <= observed)`` stays valid. Iterations with independent splits convolve,
as in :func:`~mueval.guarantees.user_level.null_pmf`. With one class the law is
the Beta-Binomial itself (a test checks it), whatever the scores.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import gammaln

from mueval.data.table import MAX_CLASSES
from mueval.errors import DataError

__all__ = [
    "cell_laws",
    "decode_order",
    "hypergeom_pmf",
    "pooled_classes",
    "stratified_pmf",
    "stratified_pvalue",
    "task_pmf",
]


def hypergeom_pmf(total: int, marked: int, draws: int) -> np.ndarray:
    """``P(H = h)``, ``h = 0..marked``, for ``draws`` rows drawn without replacement
    from ``total`` rows of which ``marked`` are marked.

    Examples
    --------
    >>> hypergeom_pmf(4, 2, 2).round(4).tolist()
    [0.1667, 0.6667, 0.1667]
    """
    if not 0 <= marked <= total or not 0 <= draws <= total:
        message = f"need 0 <= marked, draws <= total; found {total=}, {marked=}, {draws=}"
        raise ValueError(message)
    h = np.arange(marked + 1)
    ok = (h <= draws) & (draws - h <= total - marked)
    out = np.zeros(marked + 1)
    hh = h[ok]
    log = (
        _log_choose(marked, hh)
        + _log_choose(total - marked, draws - hh)
        - _log_choose(total, np.asarray(draws))
    )
    out[ok] = np.exp(log)
    return out


def _hypergeom_rows(total: int, marked: int, draws: np.ndarray, h: np.ndarray) -> np.ndarray:
    """:func:`hypergeom_pmf` at the values ``h`` for many draw counts at once,
    shape (len(draws), len(h)).

    The binomial coefficients are looked up in one table of ``log(j!)``, with
    the float operations of :func:`_log_choose` in its order, so the values are
    its values: this runs for every class of every cell of a run.
    """
    hh = np.asarray(h, dtype=np.int64)[None, :]
    dd = np.asarray(draws, dtype=np.int64)[:, None]
    rest = dd - hh
    ok = (hh >= 0) & (rest >= 0) & (rest <= total - marked)
    table = _log_factorials(total)
    # log C(marked, h): -inf where h > marked (no such draw).
    inside = ok & (hh <= marked)
    sh = np.where(inside, hh, 0)
    first = np.where(inside, (table[marked] - table[sh]) - table[marked - sh], -np.inf)
    sr = np.where(ok, rest, 0)
    second = (table[total - marked] - table[sr]) - table[total - marked - sr]
    third = (table[total] - table[dd]) - table[total - dd]
    return np.exp(np.where(ok, first + second - third, -np.inf))


def _convolve_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise convolution of two stacks of pmfs (exact sums, no FFT: the far
    lower tail keeps its relative precision)."""
    out = np.zeros((a.shape[0], a.shape[1] + b.shape[1] - 1))
    for j in range(b.shape[1]):
        out[:, j : j + a.shape[1]] += a * b[:, j : j + 1]
    return out


#: ``gammaln(j + 1)`` for ``j = 0, 1, ...``, grown on demand: a run asks for the
#: binomial coefficients of the same few hundred sizes thousands of times.
_LOG_FACTORIALS = gammaln(np.arange(1.0, 1025.0))


def _log_factorials(n: int) -> np.ndarray:
    """``log(j!)`` for ``j = 0..n`` at least: the values ``gammaln`` gives."""
    global _LOG_FACTORIALS
    if n >= len(_LOG_FACTORIALS):
        _LOG_FACTORIALS = gammaln(np.arange(1.0, max(2 * len(_LOG_FACTORIALS), n + 1) + 1.0))
    return _LOG_FACTORIALS


def _log_choose(n: int, k: np.ndarray) -> np.ndarray:
    """``log C(n, k)``, ``-inf`` where ``k < 0`` or ``k > n`` (as ``gammaln`` gives
    there): the same floats as ``gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)``,
    looked up instead of computed."""
    k = np.asarray(k)
    if not (np.issubdtype(k.dtype, np.integer) and float(n).is_integer()):
        return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    n = int(n)
    table = _log_factorials(max(n, 0))
    inside = (k >= 0) & (k <= n)
    j = np.where(inside, k, 0).astype(np.int64)
    return np.where(inside, table[n] - table[j] - table[n - j], -np.inf)


def pooled_classes(
    cal_scores: np.ndarray,
    cal_classes: np.ndarray,
    test_scores: np.ndarray,
    test_classes: np.ndarray,
) -> np.ndarray:
    """The classes of the pooled calibration and test rows, sorted by score.

    Ties are broken by class, then by the row's place in its class's rows
    sorted by score (which role a row plays does not enter), so the sequence
    depends on the pooled rows only, as :func:`stratified_pmf` requires.

    Parameters
    ----------
    cal_scores, test_scores : ndarray of float
        Conformity scores at the true class.
    cal_classes, test_classes : ndarray of int
        The true classes (codes ``0..C-1``).

    Returns
    -------
    ndarray of int, shape (n + m,)

    Examples
    --------
    >>> pooled_classes(np.array([0.1, 0.5]), np.array([0, 1]), np.array([0.3]), np.array([1])).tolist()
    [0, 1, 1]
    """
    scores = np.concatenate([np.asarray(cal_scores, float), np.asarray(test_scores, float)])
    classes = np.concatenate([np.asarray(cal_classes, int), np.asarray(test_classes, int)])
    if scores.shape != classes.shape or np.isnan(scores).any():
        message = "scores and classes must be arrays of one length, without nan"
        raise ValueError(message)
    # Within a class, rows with the same score are interchangeable: the class
    # sequence is the same whichever of them comes first.
    return classes[np.lexsort((classes, scores))]


def stratified_pmf(
    order: Sequence[int] | np.ndarray, n_cal_class: Sequence[int] | np.ndarray, k: int
) -> np.ndarray:
    """Exact law of the covered count of one iteration under a stratified split.

    Parameters
    ----------
    order : sequence of int, shape (n + m,)
        The classes of the pooled calibration and test rows sorted by score
        (:func:`pooled_classes`).
    n_cal_class : sequence or array of int, shape (C,)
        The calibration rows of each class (``n_c``; ``sum = n``).
    k : int
        The threshold's rank among the ``n`` calibration scores, ``1..n + 1``
        (``n + 1``: no finite threshold, every row covered).

    Returns
    -------
    ndarray of float, shape (m + 1,)
        ``P(X = x)``, ``x = 0..m``, for the tie-broken covered count ``X``.

    Examples
    --------
    One class: the Beta-Binomial (here n = 1, k = 1: uniform on 0..2):

    >>> stratified_pmf([0, 0, 0], [1], 1).round(4).tolist()
    [0.3333, 0.3333, 0.3333]

    Two classes apart, the calibration row of the upper class thresholds: one
    row of each class calibrates, so the lower class's test row is covered
    surely and the upper one's half the time:

    >>> stratified_pmf([0, 0, 1, 1], [1, 1], 2).round(4).tolist()
    [0.0, 0.5, 0.5]
    """
    order = np.asarray(order, dtype=np.int64)
    sizes = np.asarray(n_cal_class, dtype=np.int64)
    n_classes = len(sizes)
    if order.ndim != 1 or (order.size and (order.min() < 0 or order.max() >= n_classes)):
        message = f"order must hold class codes 0..{n_classes - 1}"
        raise ValueError(message)
    totals = np.bincount(order, minlength=n_classes)
    n = int(sizes.sum())
    if (sizes < 0).any() or (sizes > totals).any():
        message = (
            f"n_cal_class {sizes.tolist()} exceeds the pooled rows per class {totals.tolist()}"
        )
        raise ValueError(message)
    m = int(order.size) - n
    k = int(k)
    if not 1 <= k <= n + 1:
        message = f"need 1 <= k <= n + 1 = {n + 1}; found k={k}"
        raise ValueError(message)
    pmf = np.zeros(m + 1)
    if k > n:
        pmf[m] = 1.0
        return pmf
    # prefix[j, c]: rows of class c among the first j sorted positions.
    onehot = np.zeros((order.size + 1, n_classes), dtype=np.int64)
    onehot[np.arange(1, order.size + 1), order] = 1
    prefix = np.cumsum(onehot, axis=0)
    # One row per outcome x = 0..m: the k-th calibration row at position t = k + x.
    t = k + np.arange(m + 1)
    star = order[t - 1]
    before = prefix[t - 1]  # shape (m + 1, C)
    # k - 1 calibration rows before t means n - k + 1 calibration rows missing
    # from the prefix, summed over the classes: count each class's *deficit*
    # d = n_c - h, whose larger values never matter.
    target = n - k + 1
    total = np.zeros((m + 1, target + 1))
    total[:, 0] = 1.0
    for c in range(n_classes):
        if not sizes[c]:
            continue
        deficits = np.arange(min(int(sizes[c]), target) + 1)
        part = _hypergeom_rows(int(totals[c]), int(sizes[c]), before[:, c], sizes[c] - deficits)
        is_star = star == c
        if is_star.any():
            # P(position t calibrates | d of the class's calibration rows are
            # not among its earlier rows) = d / (the class's rows from t on).
            left = (totals[c] - before[is_star, c])[:, None]
            part[is_star] *= deficits[None, :] / left
        total = _convolve_rows(total, part)[:, : target + 1]
    pmf = total[:, target]
    # A position whose class has no calibration row never holds the threshold.
    pmf = np.where(sizes[star] > 0, pmf, 0.0)
    return np.clip(pmf, 0.0, None)


def stratified_pvalue(covered: int, pmfs: Sequence[np.ndarray]) -> float:
    """``P(X_1 + ... + X_B <= covered)`` for independent iterations with laws ``pmfs``.

    Examples
    --------
    >>> round(stratified_pvalue(1, [np.array([0.5, 0.5]), np.array([0.0, 1.0])]), 4)
    0.5
    """
    total = np.ones(1)
    for part in pmfs:
        total = np.convolve(total, np.asarray(part, dtype=np.float64))
    covered = int(covered)
    if not 0 <= covered < total.size:
        message = f"covered must be in 0..{total.size - 1} (the test rows); found {covered}"
        raise ValueError(message)
    return float(min(1.0, total[: covered + 1].sum()))


def decode_order(signed: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """A task's ``pooled_order`` (:mod:`mueval.evaluation.pooled_order`) as the
    classes in score order (renumbered ``0..C-1`` in code order), the
    calibration rows per class and the test rows.

    Examples
    --------
    >>> order, sizes, m = decode_order([0, 1, -2, -1])
    >>> order.tolist(), sizes.tolist(), m
    ([0, 1, 1, 0], [1, 1], 2)
    """
    values = np.asarray(signed)
    if values.ndim != 1 or not np.issubdtype(values.dtype, np.integer):
        message = "a pooled order must be a 1-D sequence of whole class codes"
        raise ValueError(message)
    values = values.astype(np.int64)
    cal = values >= 0
    # The law depends on which rows share a class, not on the codes: number the
    # classes present 0..C-1 (a huge code in a hostile file allocates nothing).
    _, classes = np.unique(np.where(cal, values, -values - 1), return_inverse=True)
    classes = classes.ravel()
    n_classes = int(classes.max()) + 1 if classes.size else 0
    return classes, np.bincount(classes[cal], minlength=n_classes), int((~cal).sum())


def task_pmf(signed: Sequence[int] | np.ndarray, k: int) -> np.ndarray:
    """:func:`stratified_pmf` of one task from its recorded ``pooled_order``.

    Examples
    --------
    Classes 0, 1, 1, 0 in score order, one calibration row of each: the
    threshold (the larger) covers no test row when the calibration rows are
    the first two, one when they are the first and the third, both otherwise:

    >>> task_pmf([0, 1, -2, -1], 2).round(4).tolist()
    [0.25, 0.25, 0.5]
    """
    order, sizes, _ = decode_order(signed)
    return stratified_pmf(order, sizes, k)


def cell_laws(
    cells: pd.DataFrame, ranks: Sequence[float], n_classes: int | None = None
) -> list[np.ndarray | None]:
    """Each cell's exact null law from its ``pooled_order``, or None (the Beta-Binomial).

    Parameters
    ----------
    cells : DataFrame
        :func:`~mueval.guarantees.run_verdicts.verdict_cells` rows, with
        ``pooled_order`` (a sequence of signed class codes, or None).
    ranks : sequence of float
        The threshold rank of each cell (``n_cal + 1``: every row covered).
    n_classes : int, optional
        The run's classes: a code outside ``-n_classes..n_classes - 1`` is an
        error (and bounds the work a hostile file can ask for); without it, at
        most :data:`~mueval.data.table.MAX_CLASSES`.

    Returns
    -------
    list
        Per cell, :func:`task_pmf` (an array over ``0..n_test``) or None.

    Raises
    ------
    DataError
        A pooled order whose calibration or test rows disagree with the cell's
        ``n_cal`` and ``n_test``.
    """
    limit = MAX_CLASSES if n_classes is None else int(n_classes)
    out: list[np.ndarray | None] = []
    columns = ["strategy", "classifier", "user", "iteration", "n_cal", "n_test"]
    for row, signed, k in zip(
        cells[columns].itertuples(index=False), cells["pooled_order"], ranks, strict=True
    ):
        if signed is None or (isinstance(signed, float) and np.isnan(signed)):
            out.append(None)
            continue
        try:
            values = np.asarray(signed)
            order, sizes, m = decode_order(values)
            if values.size and (values.min() < -limit or values.max() >= limit):
                message = f"pooled_order holds class codes outside -{limit}..{limit - 1}"
                raise ValueError(message)
        except ValueError as exc:
            message = f"{row.strategy} / {row.classifier} iteration {row.iteration} user {row.user}: {exc}"
            raise DataError(message) from exc
        if int(sizes.sum()) != row.n_cal or m != row.n_test:
            message = (
                f"{row.strategy} / {row.classifier} iteration {row.iteration} user {row.user}: "
                f"pooled_order holds {int(sizes.sum())} calibration and {m} test rows; the task "
                f"has n_cal={row.n_cal} and {row.n_test} test rows"
            )
            raise DataError(message)
        out.append(stratified_pmf(order, sizes, int(k)))
    return out
