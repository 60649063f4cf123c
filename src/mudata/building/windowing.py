"""Smoothing and windowing of raw sample sequences, vectorised with numpy.

These are the two steps of the study's windowing recipe that come before the
features (see ``docs/datasets.md``, "The windowing recipe"):

* :func:`moving_average` -- the study's edge-aware moving average, built on
  :func:`running_means` (the featurizer applies that to many sequences at once);
* :func:`window_count` -- how many windows a sequence yields once the last
  window start is dropped.
"""

from __future__ import annotations

from typing import overload

import numpy as np


def moving_average(values: np.ndarray, span: int) -> np.ndarray:
    """The study's moving average of ``span`` samples along axis 0.

    For the 1-based position ``i >= span`` the result is the mean of samples
    ``i-span+1 .. i``; for ``i = 1 .. span-1`` it is the mean of samples
    ``i .. i+span-1`` (the backward window would start before the sequence).
    A NaN sample spreads to every mean that includes it. Where the forward
    window of an early position runs past the end of the sequence (sequences
    shorter than ``2*span - 2``), the samples it needs do not exist and the
    mean is NaN, as in the study's code, where such indices read as missing.

    Parameters
    ----------
    values : ndarray, shape (L,) or (L, c)
        One sequence per column.
    span : int
        Number of samples averaged (``span >= 1``; 1 returns a copy).

    Returns
    -------
    ndarray, same shape as ``values``, float64
    """
    values = np.asarray(values, dtype=np.float64)
    if span < 1:
        message = f"moving-average span must be >= 1, got {span}"
        raise ValueError(message)
    if span == 1:
        return values.copy()
    means = running_means(values, span)
    n_full = means.shape[0]  # number of complete backward windows
    if n_full <= 0:
        return np.full_like(values, np.nan)
    # means[j] is the mean of samples j..j+span-1 (0-based): it is the backward
    # mean of position j+span-1 and the forward mean of position j.
    head = np.full((span - 1, *values.shape[1:]), np.nan)
    n_head = min(span - 1, n_full)
    head[:n_head] = means[:n_head]
    return np.concatenate([head, means], axis=0)


# Means computed per block: a block's samples stay in the processor's cache
# through the 2 * span passes of the sum and the correction.
_BLOCK = 1 << 14


def _block_means(values: np.ndarray, span: int) -> np.ndarray:
    n_full = values.shape[0] - span + 1
    # Sum of `span` shifted slices: exact sequential sums, no cumulative-sum
    # cancellation, so long sequences keep full precision.
    total = values[0:n_full].copy()
    for shift in range(1, span):
        total += values[shift : shift + n_full]
    means = total / span
    # One refinement pass (as R's mean() does) brings each mean within an ulp
    # or so of the exact one, independent of the summation order.
    correction = np.subtract(values[0:n_full], means, out=total)
    step = np.empty_like(means)
    for shift in range(1, span):
        correction += np.subtract(values[shift : shift + n_full], means, out=step)
    means += correction / span
    return means


# Spans up to this one are summed directly (2 * span vectorised passes per
# sample, as the registry's spans of 10 always were); longer spans take the
# exact path, whose cost per sample does not depend on the span. Measured
# with benchmarks/smoothing.py (200,000 samples), the two cost about the same
# CPU time from a span of 300 to 600; above it the exact path wins, and it is
# exact wherever it runs.
DIRECT_MAX_SPAN = 256


# Windows per block of the exact path: its Python integers (about 100 bytes
# each) are held for one block at a time, whatever the length.
_EXACT_BLOCK = 1 << 16


def _exact_means(values: np.ndarray, span: int) -> np.ndarray:
    """Running means of one column, each the correctly rounded mean of its samples.

    Every finite sample is an integer multiple of one power of two, ``2**low``
    (the least significant bit of the smallest sample), so the samples become
    Python integers and each window's sum is a difference of two exact prefix
    sums; one division (correctly rounded by Python's integer true division)
    gives the mean. The prefix sums at the start and at the end of the windows
    are carried from block to block, so memory stays bounded. Windows holding
    a NaN or an infinity are NaN, as on the direct path.
    """
    n_full = values.shape[0] - span + 1
    finite = np.isfinite(values)
    mantissa, exponent = np.frexp(np.where(finite, values, 0.0))
    # |mantissa| in [0.5, 1): times 2**53 it is an integer below 2**53, exactly.
    digits = (mantissa * 2.0**53).astype(np.int64)
    shift = exponent.astype(np.int64) - 53
    nonzero = digits != 0
    low = int(shift[nonzero].min()) if nonzero.any() else 0
    # A zero digit (a zero sample, or a NaN or infinity set to 0.0) has the shift
    # of frexp(0.0), -53, which is below ``low`` when every nonzero sample is
    # coarser; 2 to a negative power is a Python float, and from that sample on
    # the prefix sums would be rounded floats (after a huge sample, their
    # differences cancel to nothing). A zero digit times 2**0 is the integer 0.
    shift[~nonzero] = low
    scale, divisor = (2**low, span) if low >= 0 else (1, span * 2**-low)

    def integers(lo: int, hi: int) -> np.ndarray:
        # Arbitrary-precision integers: an object array adds them in C loops.
        return digits[lo:hi].astype(object) * 2 ** (shift[lo:hi] - low).astype(object)

    def running(carried: int, lo: int, hi: int) -> np.ndarray:
        # Prefix sums before samples lo .. hi-1 (the first is ``carried``) and after the last.
        sums = np.empty(hi - lo + 1, dtype=object)
        sums[0] = carried
        sums[1:] = np.cumsum(integers(lo, hi)) + carried
        return sums

    lead = 0  # prefix sum before the last sample of the block's first window
    for lo in range(0, span - 1, _EXACT_BLOCK):
        lead = running(lead, lo, min(lo + _EXACT_BLOCK, span - 1))[-1]
    lag = 0  # prefix sum before its first sample
    means = np.empty(n_full)
    for lo in range(0, n_full, _EXACT_BLOCK):
        hi = min(lo + _EXACT_BLOCK, n_full)
        before = running(lag, lo, hi)
        after = running(lead, lo + span - 1, hi + span - 1)
        means[lo:hi] = ((after[1:] - before[:-1]) * scale / divisor).astype(np.float64)
        lag, lead = before[-1], after[-1]
    bad = np.concatenate([[0], np.cumsum(~finite, dtype=np.int64)])
    means[(bad[span:] - bad[:-span]) > 0] = np.nan
    return means


def running_means(values: np.ndarray, span: int) -> np.ndarray:
    """Mean of every run of ``span`` consecutive samples along axis 0.

    ``out[j]`` is the mean of ``values[j : j + span]``. Up to
    :data:`DIRECT_MAX_SPAN`, it is the sequential sum of its samples divided by
    ``span``, refined by one correction pass as R's ``mean()`` does; for
    longer spans, the correctly rounded mean of the exact sum (so the cost is
    linear in the length for every span). Either way a mean holding a NaN or
    an infinity is NaN, and each mean depends only on its own samples, so the
    means of sequences laid end to end equal those of each sequence, bit for
    bit.

    Parameters
    ----------
    values : ndarray, shape (L,) or (L, c), float64
    span : int
        ``span >= 1``; 1 returns ``values`` itself (no copy).

    Returns
    -------
    ndarray, shape (max(L - span + 1, 0), ...)
    """
    if span == 1:
        return values
    n_full = max(values.shape[0] - span + 1, 0)
    means = np.empty((n_full, *values.shape[1:]))
    if n_full == 0:
        return means
    if span > DIRECT_MAX_SPAN:
        columns = values.reshape(values.shape[0], -1)
        flat = means.reshape(n_full, -1)
        for k in range(columns.shape[1]):
            flat[:, k] = _exact_means(np.ascontiguousarray(columns[:, k]), span)
        return means
    for lo in range(0, n_full, _BLOCK):
        hi = min(lo + _BLOCK, n_full)
        means[lo:hi] = _block_means(values[lo : hi + span - 1], span)
    return means


@overload
def window_count(length: int, window: int) -> int: ...


@overload
def window_count(length: np.ndarray, window: int) -> np.ndarray: ...


def window_count(length: int | np.ndarray, window: int) -> int | np.ndarray:
    """Number of windows the study's recipe cuts from a sequence of ``length``.

    Starts are ``1, 1+w, 1+2w, ...`` up to ``length``, i.e. ``ceil(L/w)`` of
    them, and the last start is always dropped. Every kept window is therefore
    complete: window ``k`` ends at ``(k+1)w <= (ceil(L/w)-1)w < L``.

    Parameters
    ----------
    length : int or ndarray of int
        Sequence length(s) ``L >= 0``.
    window : int
        Window length ``w >= 1``.

    Returns
    -------
    int or ndarray of int
        ``max(0, ceil(L/w) - 1)``.
    """
    starts = -(-np.asarray(length) // window)  # ceil(L / w)
    result = np.maximum(starts - 1, 0)
    return int(result) if np.ndim(result) == 0 else result


__all__ = ["DIRECT_MAX_SPAN", "moving_average", "running_means", "window_count"]
