"""Multiplexed streams: one file holding several streams, told apart by key columns.

Some releases write every device and sensor of a recording into one file, a
row per sample, with columns that say which stream the row belongs to
(``Sensor ID``, ``Sensor Type``, ``Device``). Each stream has its own clock
and rate, so time goes back across the rows of the file (a gyroscope at 50 Hz
between accelerometer rows at 100 Hz) but never inside one stream.

``reader_options.streams`` of the ``long-signals`` reader says so::

    streams = { keys = ["Sensor ID", "Sensor Type"],
                select = ["Sensor ID=1,Sensor Type=0", "Sensor ID=1,Sensor Type=1"],
                align = "slowest" }

* ``keys``: the columns whose values name a stream (read as text; they are
  never channels);
* ``select`` (default: every stream found): selectors ``KEY=VALUE,...``; a
  selector may give some of the keys only (``Sensor Type=0`` keeps every
  device's type-0 stream); a selector that matches no stream of a file is an
  error listing the streams found there;
* ``align``: how the streams become the samples windowed (see
  :func:`split_streams`):

  - ``"slowest"`` (default): the streams are resampled to the timestamps of
    the slowest one (the largest median time step), by linear interpolation
    between the two samples of the other stream around each timestamp; every
    stream's channels become channels of their own, named
    ``"<channel> [<stream>]"`` (:func:`~mudata.readers.stream_options.stream_channel`), so a window holds the
    same span of time of every stream. A timestamp before a stream's first or
    after its last sample (no sample on one side), or where either of the two
    samples interpolated carries another label than the slowest stream's
    sample, is dropped and counted: nothing is extrapolated, and no label is
    mixed.
  - ``"per-stream"``: the rows stay as they are; each stream is a recording
    of its own, so windows are cut inside one stream and never cross two
    (windows of ``window`` samples of that stream). It is for streams at
    one rate (several phones of one model): streams whose median time steps
    differ by more than :data:`~mudata.readers.stream_clocks.STEP_TOLERANCE` are refused, naming them and
    their steps, since a window of ``window`` samples would last longer in
    the slower stream, and the windows files hold windows of one length in
    samples. (Sizing windows per stream by time would give windows of
    different lengths in samples, which no table here holds.)

* ``time_unit`` (optional; ``"s"``, ``"ms"``, ``"us"`` or ``"ns"``): the unit
  of the numbers in ``time_col`` (date/time text is read in nanoseconds and
  needs none). ``mudata init`` writes the unit it assumed.

Time is checked inside each stream of each user (and ``recording_col``
value): it must not go back there, and a stream needs at least
:data:`MIN_STREAM_ROWS` rows (a rate and an interpolation need two).

Every file is windowed on the clock of its reference stream (``"slowest"``:
the stream resampled at; ``"per-stream"``: the slowest of the streams), but
windows are sized from the entry's one ``sampling_rate_hz``. So each file's
clock is checked (:func:`~mudata.readers.stream_clocks.check_clock`): its reference stream must be the first
file's (``"slowest"``), its median step within :data:`~mudata.readers.stream_clocks.STEP_TOLERANCE` of the
first file's, and, when the unit of time is known, within it of
``1 / sampling_rate_hz``; else a :class:`ParseError` names both files, the
streams and their steps.

Here, the splitting and the alignment; the options are
:mod:`mudata.readers.stream_options` and the clocks
:mod:`mudata.readers.stream_clocks` (the names of theirs the readers use are
re-exported here).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mudata.errors import ParseError, Reason, excerpt
from mudata.readers.stream_clocks import (
    Clock,
    check_clock,
    check_one_rate,
    reference_stream,
)
from mudata.readers.stream_options import (
    TIME_UNITS,
    StreamOptions,
    key_text,
    selector_matches,
    stream_channel,
    stream_name,
    stream_options,
)

log = logging.getLogger(__name__)

#: Rows a stream needs inside each user (and recording): its rate, and an
#: interpolation, need two samples at two times.
MIN_STREAM_ROWS = 2
#: Streams a file may hold: keys taking more combinations name no streams (a time, a value).
MAX_STREAMS = 1_000
#: The column :func:`split_streams` adds (per-stream) to name each row's recording.
STREAM_RECORDING = "\x1fstream"


@dataclass
class Split:
    """One member's rows once its streams are split (:func:`split_streams`).

    Attributes
    ----------
    table : DataFrame
        The rows the reader reads on, with the role columns it had.
    channels : list of str
        The channel columns of ``table``.
    recording_col : str or None
        The column naming each row's recording (per-stream: the stream is part of it).
    info : dict
        What was found: each stream's rows and median time step, the reference
        stream, the timestamps dropped (for the provenance and ``mudata init``).
    """

    table: pd.DataFrame
    channels: list[str]
    recording_col: str | None
    info: dict = field(default_factory=dict)


def _key_text(table: pd.DataFrame, keys: Sequence[str], member: str) -> list[np.ndarray]:
    texts = []
    for key in keys:
        values = table[key]
        blank = values.isna().to_numpy() | values.astype(str).str.strip().eq("").to_numpy(
            dtype=bool
        )
        if blank.any():
            row = int(np.flatnonzero(blank)[0])
            message = f"{member}: stream key column '{key}' is blank at row {row}"
            raise ParseError(message, reason=Reason("blank", "streams.keys"))
        texts.append(key_text(values))
    return texts


def _groups(table: pd.DataFrame, user_col: str | None, recording_col: str | None) -> np.ndarray:
    """Each row's (user, recording) group, numbered in order of first appearance."""
    parts = [table[c].astype(str).to_numpy(dtype=object) for c in (user_col, recording_col) if c]
    if not parts:
        return np.zeros(len(table), dtype=np.int64)
    joined = pd.Series(parts[0])
    for part in parts[1:]:
        joined = joined + "\x1f" + part
    return pd.factorize(joined)[0].astype(np.int64)


def _group_name(table: pd.DataFrame, user_col: str | None, row: int) -> str:
    return f" of user {excerpt(str(table[user_col].iloc[row]))}" if user_col else ""


def _check_stream_time(
    time: np.ndarray,
    rows: np.ndarray,
    member: str,
    time_col: str,
    name: str,
    whose: str,
    header: int,
) -> None:
    """Time must not go back inside one stream of one group (``rows``: its rows, in file order)."""
    step = np.diff(time[rows])
    back = np.flatnonzero(step < 0)
    if back.size:
        row, before = int(rows[back[0] + 1]), int(rows[back[0]])
        message = (
            f"{member}, row {row} (line {row + 1 + header}): time column '{time_col}' goes "
            f"back from the time of row {before} inside stream {excerpt(name)}{whose}; time may "
            f"go back across streams, never inside one"
        )
        raise ParseError(message, reason=Reason("goes-back", "recording_col"))


def _same_label(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    left, right = pd.Series(a, dtype=object), pd.Series(b, dtype=object)
    return (left.eq(right) | (left.isna() & right.isna())).to_numpy(dtype=bool)


def resample_linear(
    grid: np.ndarray, time: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``values`` sampled at ``time``, linearly interpolated at the times of ``grid``.

    Each grid time ``g`` with ``time[i] <= g <= time[j]`` (``i`` the last sample at
    or before ``g``, ``j`` the first at or after it) gets
    ``values[i] + (values[j] - values[i]) * (g - time[i]) / (time[j] - time[i])``
    (``values[i]`` when the two are one sample). Among samples sharing one
    time, the first is used. A grid time before the first or after the last
    sample gets NaN and is flagged: nothing is extrapolated.

    Parameters
    ----------
    grid : ndarray of float, shape (m,)
        Non-decreasing times to sample at.
    time : ndarray of float, shape (n,)
        Non-decreasing sample times, ``n >= 1``.
    values : ndarray of float, shape (n, c)

    Returns
    -------
    resampled : ndarray of float, shape (m, c)
    inside : ndarray of bool, shape (m,)
        Whether the grid time lies within the samples' times.
    before, after : ndarray of int, shape (m,)
        The samples ``i`` and ``j`` (clipped to the range where outside).
    """
    unique, first = np.unique(time, return_index=True)
    inside = (grid >= unique[0]) & (grid <= unique[-1])
    resampled = np.full((grid.size, values.shape[1]), np.nan)
    for k in range(values.shape[1]):
        resampled[:, k] = np.interp(grid, unique, values[first, k])
    resampled[~inside] = np.nan
    after_u = np.clip(np.searchsorted(unique, grid, side="left"), 0, unique.size - 1)
    before_u = np.clip(np.searchsorted(unique, grid, side="right") - 1, 0, unique.size - 1)
    return resampled, inside, first[before_u], first[after_u]


def _select(
    names: list[str], values: list[tuple[str, ...]], streams: StreamOptions, member: str
) -> list[int]:
    """The streams (indexes into ``names``) the selectors keep, in order of first appearance."""
    if not streams.select:
        return list(range(len(names)))
    kept: set[int] = set()
    for selector in streams.select:
        matched = [
            i
            for i, v in enumerate(values)
            if all(selector_matches(v[streams.keys.index(k)], want) for k, want in selector.items())
        ]
        if not matched:
            shown = ",".join(f"{k}={v}" for k, v in selector.items())
            message = (
                f"{member}: no stream matches reader_options.streams.select {shown!r}; "
                f"the streams found in this file: {excerpt(names)}"
            )
            raise ParseError(message, reason=Reason("no-match", "streams.select"))
        kept.update(matched)
    return sorted(kept)


def split_streams(
    table: pd.DataFrame,
    time: np.ndarray,
    member: str,
    streams: StreamOptions,
    *,
    user_col: str | None,
    label_col: str | None,
    time_col: str,
    recording_col: str | None,
    channels: list[str],
    header: int,
) -> Split:
    """Split one member's rows into its streams, check each stream's time, and align them.

    Parameters
    ----------
    table : DataFrame
        The member as parsed, with the key columns.
    time : ndarray of float, shape (n,)
        Its time column as numbers.
    member : str
        The file, for messages.
    streams : StreamOptions
    user_col, label_col, time_col, recording_col : str or None
        The role columns of the reader.
    channels : list of str
        The channel columns every stream holds.
    header : int
        Lines before the first row, for line numbers.

    Returns
    -------
    Split

    Raises
    ------
    ParseError
        A blank key, a selector matching no stream (the streams found are
        listed), time going back inside a stream (stream, row and line named),
        or a stream with fewer than :data:`MIN_STREAM_ROWS` rows (or none) for
        a user.
    """
    keys = list(streams.keys)
    texts = _key_text(table, keys, member)
    combined = pd.Series(texts[0])
    for text in texts[1:]:
        combined = combined + "\x1f" + pd.Series(text)
    codes, uniques = pd.factorize(combined)
    values = [tuple(str(u).split("\x1f")) for u in uniques]
    if len(uniques) > MAX_STREAMS:
        message = (
            f"{member}: the stream keys {keys} take {len(uniques):,} combinations of values, more "
            f"than the {MAX_STREAMS:,} streams a file may hold; they do not name streams "
            f"(devices, sensor types): check reader_options.streams.keys"
        )
        raise ParseError(message, reason=Reason("invalid", "streams.keys"))
    names = [stream_name(keys, v) for v in values]
    chosen = _select(names, values, streams, member)
    groups = _groups(table, user_col, recording_col)
    n_groups = int(groups.max()) + 1 if groups.size else 0
    first_row = pd.Series(np.arange(groups.size)).groupby(groups).first().to_dict()
    info: dict = {"streams": {}, "align": streams.align}
    rows_of: dict[tuple[int, int], np.ndarray] = {}
    order = np.lexsort((np.arange(codes.size), groups, codes))
    bounds = np.flatnonzero(np.diff(codes[order]) | np.diff(groups[order])) + 1
    for run in np.split(order, bounds):
        if run.size:
            rows_of[(int(codes[run[0]]), int(groups[run[0]]))] = run
    for s in chosen:
        steps = []
        for g in range(n_groups):
            rows = rows_of.get((s, g), np.zeros(0, dtype=np.int64))
            whose = _group_name(table, user_col, first_row[g])
            if rows.size < MIN_STREAM_ROWS:
                message = (
                    f"{member}: stream {excerpt(names[s])} has {rows.size} row(s){whose}; a "
                    f"stream needs at least {MIN_STREAM_ROWS} (its rate, and its alignment, "
                    f"take two samples); leave it out with reader_options.streams.select"
                )
                raise ParseError(message, reason=Reason("invalid", "streams.select"))
            _check_stream_time(time, rows, member, time_col, names[s], whose, header)
            step = np.diff(time[rows])
            steps.append(step[step > 0])
        positive = np.concatenate(steps) if steps else np.zeros(0)
        if not positive.size:
            message = f"{member}: the time of stream {excerpt(names[s])} never advances"
            raise ParseError(message, reason=Reason("invalid", "streams.select"))
        info["streams"][names[s]] = {
            "rows": int(np.count_nonzero(codes == s)),
            "step": float(np.median(positive)),
        }
    if streams.align == "per-stream":
        check_one_rate({n: v["step"] for n, v in info["streams"].items()}, member)
        return _per_stream(table, codes, chosen, names, recording_col, channels, info)
    split = _slowest(
        table, time, codes, groups, rows_of, chosen, names, label_col, channels, info, member
    )
    split.recording_col = recording_col
    return split


def _per_stream(
    table: pd.DataFrame,
    codes: np.ndarray,
    chosen: list[int],
    names: list[str],
    recording_col: str | None,
    channels: list[str],
    info: dict,
) -> Split:
    """Each stream a recording of its own; rows grouped by stream, file order kept inside."""
    keep = np.isin(codes, chosen)
    # Stream by stream, so each stream's rows are one run (a segment) of the file.
    rank = np.full(len(names), -1)
    rank[chosen] = np.arange(len(chosen))
    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(rank[codes[rows]], kind="stable")]
    out = table.iloc[rows].reset_index(drop=True)
    stream = pd.Series(np.array(names, dtype=object)[codes[rows]])
    if recording_col:
        stream = out[recording_col].astype(str) + "\x1f" + stream
    out[STREAM_RECORDING] = stream.to_numpy()
    info["reference"] = None
    info["clock"] = reference_stream({n: v["step"] for n, v in info["streams"].items()})
    return Split(out, list(channels), STREAM_RECORDING, info)


def _slowest(
    table: pd.DataFrame,
    time: np.ndarray,
    codes: np.ndarray,
    groups: np.ndarray,
    rows_of: dict[tuple[int, int], np.ndarray],
    chosen: list[int],
    names: list[str],
    label_col: str | None,
    channels: list[str],
    info: dict,
    member: str,
) -> Split:
    """Every stream resampled at the slowest stream's timestamps (:func:`resample_linear`)."""
    slowest = reference_stream({names[s]: info["streams"][names[s]]["step"] for s in chosen})
    reference = next(s for s in chosen if names[s] == slowest)
    grid_rows = np.flatnonzero(codes == reference)
    position = np.full(codes.size, -1)
    position[grid_rows] = np.arange(grid_rows.size)
    keep = np.ones(grid_rows.size, dtype=bool)
    outside = mixed = 0
    columns: dict[str, np.ndarray] = {}
    values = table[channels].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    raw_numbers = table[channels].notna().to_numpy() & np.isnan(values)
    if raw_numbers.any():
        # The reader names the bad value; here, only a number is interpolated.
        row, col = (int(v[0]) for v in np.nonzero(raw_numbers))
        message = (
            f"{member}: channel '{channels[col]}', row {row}: "
            f"{excerpt(table[channels[col]].iloc[row])} is not a number"
        )
        raise ParseError(message, reason=Reason("not-numeric", "channels"))
    labels = table[label_col].to_numpy(dtype=object) if label_col else None
    for s in chosen:
        out = np.full((grid_rows.size, len(channels)), np.nan)
        for g in np.unique(groups[grid_rows]):
            grid = rows_of[(reference, int(g))]
            at = position[grid]
            if s == reference:
                out[at] = values[grid]
                continue
            rows = rows_of[(s, int(g))]
            sampled, inside, before, after = resample_linear(time[grid], time[rows], values[rows])
            out[at] = sampled
            ok = inside
            outside += int(np.count_nonzero(keep[at] & ~inside))
            if labels is not None:
                same = _same_label(labels[rows[before]], labels[grid]) & _same_label(
                    labels[rows[after]], labels[grid]
                )
                mixed += int(np.count_nonzero(keep[at] & inside & ~same))
                ok = ok & same
            keep[at] &= ok
        for k, channel in enumerate(channels):
            columns[stream_channel(channel, names[s])] = out[:, k]
    kept_rows = grid_rows[keep]
    base = table.drop(columns=channels).iloc[kept_rows].reset_index(drop=True)
    aligned = pd.DataFrame({name: column[keep] for name, column in columns.items()})
    out_table = pd.concat([base, aligned], axis=1)
    info.update(
        reference=names[reference],
        clock=names[reference],
        outside=outside,
        mixed=mixed,
        rows=int(keep.sum()),
    )
    if outside or mixed:
        log.info(
            "%s: %d timestamps of stream %s dropped: %d outside another stream's samples, "
            "%d between samples of another class",
            member,
            outside + mixed,
            names[reference],
            outside,
            mixed,
        )
    return Split(out_table, list(columns), None, info)


__all__ = [
    "MAX_STREAMS",
    "MIN_STREAM_ROWS",
    "STREAM_RECORDING",
    # Of stream_options and stream_clocks, for the readers that import them from here.
    "TIME_UNITS",
    "Clock",
    "Split",
    "StreamOptions",
    "check_clock",
    "resample_linear",
    "split_streams",
    "stream_options",
]
