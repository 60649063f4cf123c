"""``mudata init``, step 3b: a file holding several streams, told apart by key columns.

A file where time goes back, but never inside the rows that share the values
of a few columns, holds one stream per value: a device, a sensor type (see
:mod:`mudata.readers.streams`). The key columns are found as the fewest
columns, each with few distinct values (at most :data:`MAX_KEY_VALUES`),
inside whose every value (and every user's rows) time never goes back, nor
repeats on more than :data:`MAX_STREAM_REPEATS` of the steps; among
equal numbers of columns, the one giving the fewest streams (the coarsest
split that explains the file). The user may name the streams to keep
(``--stream 'Sensor ID=1,Sensor Type=0'``, repeatable): their keys are then
keys too, and each must match a stream of the file.

Streams may also share one clock: one row per stream at each timestamp (two
phones logged together). Time then repeats from row to row but never inside
one stream, so the repeats that make a file a feature table are counted
inside each stream (:attr:`StreamDraft.repeats`). ``align = "per-stream"`` is
refused for streams of different rates (the reader would refuse it).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mudata.drafting.columns import Roles
from mudata.errors import MudataUsageError as UsageError
from mudata.errors import ParseError, RegistryError
from mudata.readers.stream_clocks import one_rate, reference_stream
from mudata.readers.stream_options import (
    ALIGNS,
    TIME_UNITS,
    key_text,
    parse_selector,
    selector_matches,
    stream_channel,
    stream_name,
)
from mudata.readers.time_columns import time_values

#: A key column takes at most this many distinct values in the first file.
MAX_KEY_VALUES = 16
#: Key sets tried, of at most this many columns.
MAX_KEYS = 3
#: A clock is steady when its steps spread (between quartiles) by at most this part of their median.
STEADY_SPREAD = 0.5
#: Runs of rows per stream, at least, in a file where streams interleave.
MIN_RUNS_PER_STREAM = 3
#: A file interleaves clocks when more than this part of its steps are short (below half the median).
SHORT_STEPS = 0.1
#: A stream's time may repeat (its clock's resolution) on at most this part of its
#: steps: the rows of two streams sharing one clock, taken as one, repeat on half.
MAX_STREAM_REPEATS = 0.25


@dataclass
class StreamDraft:
    """The streams found in the first file, and the option that reads them.

    Attributes
    ----------
    keys : list of str
        The key columns.
    select : list of str
        The selectors given with ``--stream`` (empty: every stream).
    align : str
        ``"slowest"`` or ``"per-stream"``.
    rows : dict of str to int
        Rows of each stream kept, by name, in order of first appearance.
    how : str
        How the keys were found.
    rates : dict of str to float or None
        Each stream's rate in Hz (set by the layout; None: unknown).
    steps : dict of str to float
        Each stream's median time step, in the time column's units.
    repeats : float
        The fraction of rows whose time equals the previous row's of the same stream.
    """

    keys: list[str]
    select: list[str]
    align: str
    rows: dict[str, int]
    how: str
    rates: dict[str, float | None] = field(default_factory=dict)
    steps: dict[str, float] = field(default_factory=dict)
    repeats: float = 0.0

    def option(self) -> dict[str, object]:
        """``reader_options.streams``, with the unit of time the rates assumed when known."""
        option: dict[str, object] = {"keys": self.keys, "select": self.select, "align": self.align}
        unit = self.time_unit()
        if unit is not None:
            option["time_unit"] = unit
        return option

    def time_unit(self) -> str | None:
        """The unit (a key of :data:`TIME_UNITS`) the rates read the time column in.

        A rate is ``1 / (step * unit)``; the layout's rule takes one of the
        units of :data:`TIME_UNITS`, so the nearest of them (on a log scale)
        is that one. None when the slowest stream's rate is unknown.
        """
        slowest = self.slowest()
        rate, step = (self.rates.get(slowest), self.steps.get(slowest)) if slowest else (None, None)
        if not rate or not step:
            return None
        seconds = 1.0 / (rate * step)
        return min(TIME_UNITS, key=lambda unit: abs(np.log10(TIME_UNITS[unit] / seconds)))

    def channels(self, channels: list[str]) -> list[str]:
        """The channels the reader gives: the aligned streams' (``"x [Sensor ID=1]"``), or as they are."""
        if self.align == "per-stream":
            return list(channels)
        return [stream_channel(c, name) for name in self.rows for c in channels]

    def slowest(self) -> str | None:
        """The stream the reader resamples at (:func:`~mudata.readers.stream_clocks.reference_stream`);
        None when a rate is unknown."""
        if not self.rates or any(r is None for r in self.rates.values()):
            return None
        steps = self.steps or {n: 1.0 / (r or 1.0) for n, r in self.rates.items()}
        return reference_stream({n: steps[n] for n in self.rows})

    def notes(self, member: str) -> list[str]:
        """What was found, for the report and the draft."""
        lines = [
            f"streams: keys {', '.join(map(repr, self.keys))} ({self.how}); "
            f"{len(self.rows)} stream(s) kept in {member}:"
        ]
        for name, n in self.rows.items():
            rate = self.rates.get(name)
            lines.append(f"  {name}: {n:,} rows, {f'{rate:g} Hz' if rate else 'rate unknown'}")
        slowest = self.slowest()
        if self.align == "slowest" and len(self.rows) > 1:
            lines.append(
                f'  align = "slowest": every stream is resampled at the timestamps of '
                f"{slowest or 'the slowest stream'} by linear interpolation (timestamps outside "
                f'another stream\'s samples, or between two classes, dropped); align = "per-stream" '
                f"windows each stream on its own instead"
            )
        elif self.align == "per-stream":
            lines.append(
                '  align = "per-stream": each stream is a recording of its own; windows never cross two'
            )
        return lines


def _monotone(time: np.ndarray, groups: np.ndarray) -> bool:
    order = np.lexsort((np.arange(time.size), groups))
    same = groups[order][1:] == groups[order][:-1]
    return not bool(np.any(same & (np.diff(time[order]) < 0)))


def _codes(table: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Each row's combination of ``columns``' values, numbered in order of first appearance."""
    codes = np.zeros(len(table), dtype=np.int64)
    for column in columns:
        part = pd.factorize(table[column])[0].astype(np.int64)
        codes = pd.factorize(codes * (int(part.max()) + 1) + part)[0].astype(np.int64)
    return codes


def _candidates(table: pd.DataFrame, roles: Roles) -> list[str]:
    """Columns that may name streams: few distinct values, none missing, whole numbers or text."""
    taken = {roles.user, roles.label, roles.time, roles.recording}
    found = []
    for column in map(str, table.columns):
        values = table[column]
        if column in taken or values.isna().any():
            continue
        distinct = values.unique()
        if not 2 <= distinct.size <= MAX_KEY_VALUES:
            continue
        numbers = pd.to_numeric(pd.Series(distinct), errors="coerce")
        if numbers.notna().all() and not bool(np.all(np.mod(numbers.to_numpy(), 1) == 0)):
            continue  # fractions: a measured value, not a name
        found.append(column)
    return found


def _stream_rows(
    table: pd.DataFrame, keys: list[str]
) -> tuple[dict[str, int], list[dict[str, str]], np.ndarray]:
    """Each stream's rows by name, its key values, and each row's stream (first appearance first)."""
    texts = {k: key_text(table[k]) for k in keys}  # named as the reader names them
    codes = _codes(pd.DataFrame(texts), keys)
    first = pd.Series(np.arange(len(table))).groupby(codes).first()
    rows: dict[str, int] = {}
    values = []
    for code, row in first.items():
        value = {k: str(texts[k][int(row)]) for k in keys}
        values.append(value)
        rows[stream_name(keys, list(value.values()))] = int(np.count_nonzero(codes == code))
    return rows, values, codes


def _steady(time: np.ndarray, codes: np.ndarray) -> bool:
    """Whether inside every group of ``codes`` time advances in steady steps (a clock of its own).

    Steady: the spread of the steps between the quartiles is at most
    :data:`STEADY_SPREAD` of their median. The rows of one value of a column
    that merely takes few values (a quantised signal) are a random subset of
    the file's: their steps spread as widely as the gaps between them.
    """
    order = np.lexsort((np.arange(time.size), codes))
    same = codes[order][1:] == codes[order][:-1]
    steps = np.diff(time[order])
    for code in np.unique(codes):
        mine = steps[same & (codes[order][1:] == code)]
        mine = mine[mine > 0]
        if mine.size < 10:
            return False
        low, mid, high = np.percentile(mine, [25, 50, 75])
        if high - low > STEADY_SPREAD * mid:
            return False
    return True


def _few_repeats(time: np.ndarray, codes: np.ndarray) -> bool:
    """Whether inside every group of ``codes`` time repeats on at most
    :data:`MAX_STREAM_REPEATS` of the steps: one clock, not several sharing its ticks."""
    order = np.lexsort((np.arange(time.size), codes))
    same = codes[order][1:] == codes[order][:-1]
    repeat = same & (np.diff(time[order]) == 0)
    steps = np.bincount(codes[order][1:][same], minlength=int(codes.max()) + 1)
    repeats = np.bincount(codes[order][1:][repeat], minlength=steps.size)
    return bool(np.all(repeats <= MAX_STREAM_REPEATS * steps))


def _interleaved(time: np.ndarray, codes: np.ndarray) -> bool:
    """Whether rows of several clocks interleave: more than :data:`SHORT_STEPS` of the steps
    (inside each group of ``codes``) are shorter than half the median step, or none."""
    order = np.lexsort((np.arange(time.size), codes))
    same = codes[order][1:] == codes[order][:-1]
    steps = np.diff(time[order])[same]
    positive = steps[steps > 0]
    if not positive.size:
        return False
    return bool(np.mean(steps < 0.5 * np.median(positive)) > SHORT_STEPS)


def _alternate(codes: np.ndarray) -> bool:
    """Whether the groups' rows alternate through the file (at least
    :data:`MIN_RUNS_PER_STREAM` runs per group), as simultaneous streams do.

    Recordings one after the other, each restarting its clock, take one run of
    rows each: their column tells recordings apart (``recording_col``), not streams.
    """
    runs = 1 + int(np.count_nonzero(codes[1:] != codes[:-1])) if codes.size else 0
    return runs >= MIN_RUNS_PER_STREAM * (int(codes.max()) + 1 if codes.size else 0)


def _search(
    table: pd.DataFrame, candidates: list[str], base: list[str], named: list[str], explains
) -> list[str] | None:
    """The fewest candidate columns (then the fewest streams) whose groups ``explains`` accepts."""
    best: tuple[int, list[str]] | None = None
    for size in range(1, MAX_KEYS + 1):
        for combo in itertools.combinations(candidates, size):
            if explains(_codes(table, base + named + list(combo))):
                streams = int(_codes(table, named + list(combo)).max()) + 1
                if best is None or streams < best[0]:
                    best = (streams, list(combo))
        if best is not None:
            return best[1]
    return None


def detect_streams(
    table: pd.DataFrame, roles: Roles, member: str, selectors: tuple[str, ...], align: str | None
) -> tuple[StreamDraft, np.ndarray] | None:
    """The streams of the first file, or None when its time never goes back (and none is given).

    Returns
    -------
    (StreamDraft, ndarray) or None
        The draft (rates not yet set) and each row's stream number (-1: not kept).

    Raises
    ------
    UsageError
        A ``--stream`` that does not parse, names no column, or matches no stream
        (the streams found are listed); ``--stream`` without a time column.
    """
    if align is not None and align not in ALIGNS:
        message = f"mudata init: --stream-align {align!r} is not one of {list(ALIGNS)}"
        raise UsageError(message)
    columns = [str(c) for c in table.columns]
    try:
        parsed = [parse_selector(s, None, "--stream") for s in selectors]
    except RegistryError as exc:
        raise UsageError(f"mudata init: {exc}") from None
    named = list(dict.fromkeys(k for s in parsed for k in s))
    unknown = [k for k in named if k not in columns]
    if unknown:
        message = f"mudata init: --stream names {unknown}, not columns of {member}; its columns: {columns}"
        raise UsageError(message)
    if roles.time is None:
        if selectors:
            message = "mudata init: --stream needs a time column (each stream's time is checked and aligned); name it with --time COL"
            raise UsageError(message)
        return None
    try:
        time = time_values(table[roles.time], member, roles.time)
    except ParseError:
        return None
    base = [c for c in (roles.user, roles.recording) if c]
    candidates = [c for c in _candidates(table, roles) if c not in named]
    keys = [c for c in columns if c in named]
    how = "from --stream"
    if not _monotone(time, _codes(table, base + named)):
        found = _search(
            table,
            candidates,
            base,
            named,
            lambda codes: (
                _monotone(time, codes) and _alternate(codes) and _few_repeats(time, codes)
            ),
        )
        if found is None:
            return None  # the reader's own error says where time goes back
        keys = [c for c in columns if c in named or c in found]
        how = f"time goes back in {member}, never inside one stream"
    else:
        # Time in order across the file: streams still show as columns whose every
        # value keeps a steady clock of its own, between rows of the other values.
        found = _search(
            table,
            candidates,
            base,
            named,
            lambda codes: _steady(time, codes) and _few_repeats(time, codes),
        )
        if found is not None and not _interleaved(time, _codes(table, base + named)):
            found = None  # the file's own clock keeps one step: one stream
        if found is not None:
            keys = [c for c in columns if c in named or c in found]
            how = (
                f"time is in order through {member}, but the rows of each stream, "
                f"interleaved, keep a steady clock of their own"
            )
        elif not selectors:
            return None
    if named and keys != [c for c in columns if c in named]:
        how += "; with the keys of --stream"
    rows, values, codes = _stream_rows(table, keys)
    names = list(rows)
    keep = _selected(values, names, selectors, parsed, member)
    kept = {n: rows[n] for n, k in zip(names, keep, strict=True) if k}
    number = np.full(len(names), -1)
    number[keep] = np.arange(int(keep.sum()))
    stream_of = number[codes]
    draft = StreamDraft(keys, list(selectors), align or "slowest", kept, how)
    groups = _codes(
        pd.DataFrame({"s": stream_of, **{c: table[c].to_numpy() for c in base}}), ["s", *base]
    )
    draft.steps, draft.repeats = _clocks(time, groups, stream_of, list(kept))
    if draft.align == "per-stream":
        _one_rate(draft.steps, member)
    return draft, stream_of


def _selected(
    values: list[dict[str, str]],
    names: list[str],
    selectors: tuple[str, ...],
    parsed: list[dict[str, str]],
    member: str,
) -> np.ndarray:
    """Which streams the ``--stream`` selectors keep (all of them when none is given).

    Raises
    ------
    UsageError
        A selector that matches no stream, listing the streams found.
    """
    keep = np.ones(len(names), dtype=bool)
    if not parsed:
        return keep
    keep[:] = False
    for text, selector in zip(selectors, parsed, strict=True):
        hits = [
            i
            for i, v in enumerate(values)
            if all(selector_matches(v[k], w) for k, w in selector.items())
        ]
        if not hits:
            message = f"mudata init: --stream {text!r} matches no stream of {member}; the streams found: {names}"
            raise UsageError(message)
        keep[hits] = True
    return keep


def _clocks(
    time: np.ndarray, groups: np.ndarray, stream_of: np.ndarray, names: list[str]
) -> tuple[dict[str, float], float]:
    """Each kept stream's median time step (inside each user's rows), and the fraction of
    the kept rows whose time repeats the previous one of their stream (and user)."""
    order = np.lexsort((np.arange(time.size), groups))
    same = groups[order][1:] == groups[order][:-1]
    steps = np.diff(time[order])
    stream = stream_of[order][1:]
    medians = {}
    for number, name in enumerate(names):
        mine = steps[same & (stream == number)]
        positive = mine[mine > 0]
        if positive.size:
            medians[name] = float(np.median(positive))
    kept = int(np.count_nonzero(stream_of >= 0))
    repeats = int(np.count_nonzero(same & (stream >= 0) & (steps == 0)))
    return medians, repeats / kept if kept else 0.0


def _one_rate(steps: dict[str, float], member: str) -> None:
    """``--stream-align per-stream`` for streams of different rates: refused, as the reader does."""
    if len(steps) < 2:
        return
    slow, fast = max(steps, key=steps.__getitem__), min(steps, key=steps.__getitem__)
    if not one_rate(steps[slow], steps[fast]):
        message = (
            f"mudata init: --stream-align per-stream windows every stream of {member} in one "
            f"number of samples, but {slow!r} steps {steps[slow] / steps[fast]:.3g} times as "
            f"long as {fast!r} (median time steps {steps[slow]:g} and {steps[fast]:g}): its "
            f"windows would last longer; keep the streams of one rate (--stream), or leave "
            f"--stream-align out (the slowest: every stream resampled at its timestamps)"
        )
        raise UsageError(message)


__all__ = [
    "MAX_KEYS",
    "MAX_KEY_VALUES",
    "MAX_STREAM_REPEATS",
    "MIN_RUNS_PER_STREAM",
    "SHORT_STEPS",
    "STEADY_SPREAD",
    "StreamDraft",
    "detect_streams",
]
