"""``mudata init``, step 3a': columns that count rows or never go back, whatever their notation.

A row counter written by a program that rounds (R's ``write.csv`` prints
``1e+05``, ``1.0001e+05``, ..., ``1.6248e+05`` once the counter passes 99,999
with 5 significant digits) is flat for ten rows at a time beyond that point,
so it no longer steps by 1; it still tracks the row number within the
rounding of its printed digits. Two rules hold on such bytes:

* :func:`counter_evidence` -- the column never decreases (except where it
  restarts) and every value lies within the rounding of its significant
  digits of ``row + offset``, one offset per run between restarts and gaps;
* :func:`monotone_evidence` -- the column never decreases (or never
  increases) through a file: a time or a counter, never a signal;
  :func:`monotone_channels` applies the same rule to every recording the
  reader read, once the draft's reader has read all the files.

A signal that trends upward goes back now and then: neither rule holds for it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Fewest rows a column needs before it is called a row counter.
MIN_ROWS = 3
#: Fewest changes of value a monotone column needs: a still sensor stepping
#: once (31, 31, 32, 32) in a two-second recording is no clock.
MIN_CHANGES = 10
#: A counter restarts (or skips rows) at most once per this many rows on average.
ROWS_PER_RUN = 50
_MAX_DIGITS = 15


def significant_digits(values: np.ndarray) -> int:
    """The most significant digits any whole value of ``values`` is written with.

    ``99999`` has 5, ``1.0001e+05`` (100010) has 5, ``1e+05`` has 1; values that
    are not whole count for nothing here (their rounding is at most 0.5 of a
    row, the least tolerance :func:`counter_evidence` allows).
    """
    finite = np.abs(values[np.isfinite(values)])
    whole = finite[(finite == np.round(finite)) & (finite > 0) & (finite < 10.0**_MAX_DIGITS)]
    if whole.size == 0:
        return _MAX_DIGITS
    digits = np.floor(np.log10(whole)).astype(int) + 1
    trailing = np.zeros(whole.size, dtype=int)
    for k in range(1, _MAX_DIGITS):
        trailing += np.mod(whole, 10.0**k) == 0
    return int(np.max(digits - trailing))


def _rounding(values: np.ndarray, digits: int) -> np.ndarray:
    """Half a unit in the last of ``digits`` significant digits of each value (at least 0.5)."""
    magnitude = np.floor(np.log10(np.maximum(np.abs(values), 1.0)))
    return np.maximum(0.5 * 10.0 ** (magnitude - digits + 1), 0.5)


def _runs(values: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    """Start index of each run between restarts (a step down) and gaps (a step up that
    rounding cannot explain)."""
    steps = np.diff(values)
    limit = 1 + tolerance[1:] + tolerance[:-1]
    breaks = np.flatnonzero((steps < 0) | (steps > limit * (1 + 1e-12))) + 1
    return np.concatenate([[0], breaks])


def _tracks_rows(values: np.ndarray, tolerance: np.ndarray, starts: np.ndarray) -> bool:
    """Whether each run is ``row + offset`` within ``tolerance``: some offset lies in
    every interval ``[value - row - tol, value - row + tol]`` of the run."""
    rows = np.arange(values.size, dtype=float)
    residual = values - rows
    low = np.maximum.reduceat(residual - tolerance, starts)
    high = np.minimum.reduceat(residual + tolerance, starts)
    return bool(np.all(low <= high + 1e-9 * np.maximum(1.0, np.abs(high))))


def _shown(value: float) -> str:
    return f"{value:.0f}" if abs(value) < 1e15 and value == round(value) else f"{value:g}"


def counter_evidence(values: pd.Series | np.ndarray) -> str | None:
    """Why ``values`` is a row counter, or None.

    The values, in file order, must lie within the rounding of their
    significant digits (:func:`significant_digits`) of ``row + offset``, with
    one offset per run; runs end where the column goes down (a restart) or
    jumps further than rounding explains (a gap), and there are few of them
    (one per :data:`ROWS_PER_RUN` rows on average). Missing values rule it out.
    """
    numbers = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    n = numbers.size
    if n < MIN_ROWS or not np.all(np.isfinite(numbers)) or np.ptp(numbers) == 0:
        return None
    digits = significant_digits(numbers)
    tolerance = _rounding(numbers, digits)
    starts = _runs(numbers, tolerance)
    if starts.size > max(1, n // ROWS_PER_RUN) or not _tracks_rows(numbers, tolerance, starts):
        return None
    restarts = int(np.count_nonzero(np.diff(numbers)[starts[1:] - 1] < 0))
    gaps = starts.size - 1 - restarts
    rounded = bool(np.any(tolerance > 0.5))
    how = (
        f"the row number within the rounding of its {digits} significant digits"
        if rounded
        else "whole numbers stepping by 1"
    )
    extra = "".join(
        f", {k} {what}" for k, what in ((restarts, "restart(s)"), (gaps, "gap(s)")) if k
    )
    return f"a row counter ({how}, {_shown(numbers[0])} to {_shown(numbers[-1])}{extra})"


def monotone_evidence(values: pd.Series | np.ndarray) -> str | None:
    """Why ``values`` is a time or a counter: it never decreases (or never increases)
    through the file and changes at least :data:`MIN_CHANGES` times; else None."""
    numbers = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    numbers = numbers[np.isfinite(numbers)]
    steps = np.diff(numbers)
    up, down = int(np.count_nonzero(steps > 0)), int(np.count_nonzero(steps < 0))
    if min(up, down) > 0 or max(up, down) < MIN_CHANGES:
        return None
    word = "decreases" if down == 0 else "increases"
    return (
        f"a time or a counter (never {word} through the file: "
        f"{_shown(numbers[0])} to {_shown(numbers[-1])}, {max(up, down)} changes)"
    )


def monotone_channels(frame: pd.DataFrame, channels: list[str]) -> dict[str, str]:
    """The ``channels`` of a reader's table that never decrease (or never increase)
    within any recording, with the reason; rows of one recording are consecutive.

    Parameters
    ----------
    frame : DataFrame
        A :class:`~mudata.readers.base.SignalTable` frame (``recording`` and the channels).
    channels : list of str
        The columns to check.
    """
    recording = frame["recording"].to_numpy()
    same = recording[1:] == recording[:-1]
    count = int(np.unique(recording).size)
    found = {}
    for column in channels:
        steps = np.diff(frame[column].to_numpy(dtype=float))[same]
        up, down = int(np.count_nonzero(steps > 0)), int(np.count_nonzero(steps < 0))
        if min(up, down) == 0 and max(up, down) >= MIN_CHANGES:
            word = "decreases" if down == 0 else "increases"
            found[column] = (
                f"a time or a counter (never {word} within any of the {count} recordings, "
                f"{max(up, down)} changes)"
            )
    return found


__all__ = [
    "MIN_CHANGES",
    "MIN_ROWS",
    "ROWS_PER_RUN",
    "counter_evidence",
    "monotone_channels",
    "monotone_evidence",
    "significant_digits",
]
