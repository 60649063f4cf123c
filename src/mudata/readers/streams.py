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
    ``"<channel> [<stream>]"`` (:func:`stream_channel`), so a window holds the
    same span of time of every stream. A timestamp before a stream's first or
    after its last sample (no sample on one side), or where either of the two
    samples interpolated carries another label than the slowest stream's
    sample, is dropped and counted: nothing is extrapolated, and no label is
    mixed.
  - ``"per-stream"``: the rows stay as they are; each stream is a recording
    of its own, so windows are cut inside one stream and never cross two
    (windows of ``window`` samples of that stream). It is for streams at
    one rate (several phones of one model): streams whose median time steps
    differ by more than :data:`STEP_TOLERANCE` are refused, naming them and
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
clock is checked (:func:`check_clock`): its reference stream must be the first
file's (``"slowest"``), its median step within :data:`STEP_TOLERANCE` of the
first file's, and, when the unit of time is known, within it of
``1 / sampling_rate_hz``; else a :class:`ParseError` names both files, the
streams and their steps.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mudata.classes import is_numeric_column, number_text
from mudata.entry import DatasetEntry
from mudata.errors import ParseError, Reason, RegistryError, excerpt

log = logging.getLogger(__name__)

ALIGNS = ("slowest", "per-stream")
#: Rows a stream needs inside each user (and recording): its rate, and an
#: interpolation, need two samples at two times.
MIN_STREAM_ROWS = 2
#: Streams a file may hold: keys taking more combinations name no streams (a time, a value).
MAX_STREAMS = 1_000
#: The column :func:`split_streams` adds (per-stream) to name each row's recording.
STREAM_RECORDING = "\x1fstream"
#: Median time steps within this fraction of each other are one rate: of the
#: streams of a file (ties for the slowest; per-stream windows), of the
#: reference streams of two files, and of a file and ``sampling_rate_hz``.
STEP_TOLERANCE = 0.1
#: ``time_unit``: the length of one unit of a numeric time column, in seconds.
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class StreamOptions:
    """``reader_options.streams``, checked.

    Attributes
    ----------
    keys : tuple of str
        The columns naming a stream.
    select : tuple of dict
        Selectors, each key column to the text value it must hold (a subset of ``keys``).
    align : {"slowest", "per-stream"}
    time_unit : str or None
        A key of :data:`TIME_UNITS`: the unit of a numeric time column.
    """

    keys: tuple[str, ...]
    select: tuple[dict[str, str], ...] = ()
    align: str = "slowest"
    time_unit: str | None = None


def stream_name(keys: Sequence[str], values: Sequence[str]) -> str:
    """A stream's name, as a selector would give it: ``"Sensor ID=1,Sensor Type=0"``."""
    return ",".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))


def stream_channel(channel: str, stream: str) -> str:
    """The name of ``channel`` of ``stream`` once the streams are aligned (``"x [Sensor ID=1]"``)."""
    return f"{channel} [{stream}]"


def parse_selector(text: str, keys: Sequence[str] | None, where: str) -> dict[str, str]:
    """A selector ``KEY=VALUE,KEY=VALUE`` as a dict; every key one of ``keys`` (when given).

    Raises
    ------
    ValueError
        (a :class:`RegistryError`) a part without ``=``, a key given twice, or a
        key that is not a stream key, naming the selector and the keys.
    """
    selector: dict[str, str] = {}
    for part in str(text).split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            message = (
                f"{where}: {excerpt(text)} is not KEY=VALUE[,KEY=VALUE...] (part {excerpt(part)})"
            )
            raise RegistryError(message, reason=Reason("invalid", "streams.select"))
        if key in selector:
            message = f"{where}: {excerpt(text)} gives {excerpt(key)} twice"
            raise RegistryError(message, reason=Reason("invalid", "streams.select"))
        if keys is not None and key not in keys:
            message = f"{where}: {excerpt(text)} names {excerpt(key)}, not a stream key; the keys: {list(keys)}"
            raise RegistryError(message, reason=Reason("invalid", "streams.select"))
        selector[key] = value
    return selector


def stream_options(entry: DatasetEntry) -> StreamOptions | None:
    """``reader_options.streams`` checked (None when absent)."""
    value = entry.reader_options.get("streams")
    if value is None:
        return None
    where = f"invalid registry entry '{entry.name}'" + (
        f" ({entry.source})" if entry.source else ""
    )
    field_ = f"{where}: field 'reader_options.streams"
    if not isinstance(value, dict):
        message = f"{field_}': expected a table {{ keys = [...], select = [...], align = ... }}, found {excerpt(value)}"
        raise RegistryError(message, reason=Reason("invalid", "streams"))
    unknown = sorted(set(value) - {"keys", "select", "align", "time_unit"})
    if unknown:
        message = (
            f"{field_}': unknown key(s) {unknown}; the keys are keys, select, align and time_unit"
        )
        raise RegistryError(message, reason=Reason("invalid", "streams"))
    keys = value.get("keys")
    if (
        not isinstance(keys, list)
        or not keys
        or not all(isinstance(k, str) and k for k in keys)
        or len(set(keys)) != len(keys)
    ):
        message = f"{field_}.keys': expected a list of distinct column names, found {excerpt(keys)}"
        raise RegistryError(message, reason=Reason("invalid", "streams.keys"))
    select = value.get("select", [])
    if not isinstance(select, list) or not all(isinstance(s, str) for s in select):
        message = (
            f"{field_}.select': expected a list of 'KEY=VALUE,...' texts, found {excerpt(select)}"
        )
        raise RegistryError(message, reason=Reason("invalid", "streams.select"))
    selectors = tuple(parse_selector(s, keys, f"{field_}.select'") for s in select)
    align = value.get("align", "slowest")
    if align not in ALIGNS:
        message = f"{field_}.align': {excerpt(align)} is not one of {list(ALIGNS)}"
        raise RegistryError(message, reason=Reason("invalid", "streams.align"))
    time_unit = value.get("time_unit")
    if time_unit is not None and time_unit not in TIME_UNITS:
        message = f"{field_}.time_unit': {excerpt(time_unit)} is not one of {list(TIME_UNITS)}"
        raise RegistryError(message, reason=Reason("invalid", "streams.time_unit"))
    if not entry.reader_options.get("time_col"):
        message = f"{where}: reader_options.streams needs reader_options.time_col (each stream's time is checked, and aligned by it)"
        raise RegistryError(message, reason=Reason("missing", "time_col"))
    return StreamOptions(tuple(keys), selectors, align, time_unit)


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


def key_text(values: pd.Series) -> np.ndarray:
    """A key column's values as the text naming streams.

    In a column of numbers, values compare as numbers and are named in their
    shortest form (``1``, ``1.0`` and ``01`` are one stream, ``"1"``), as class
    codes are; so a file read as text and the same file read as numbers (by
    ``mudata init``, or from Parquet) name their streams alike. Text is
    stripped of spaces.
    """
    text = values.astype(str).str.strip()
    if is_numeric_column(values):
        numbers = pd.to_numeric(text, errors="coerce")
        uniques = pd.unique(numbers.dropna())
        names = {u: number_text(u) for u in uniques}
        return np.array([names.get(v, t) for v, t in zip(numbers, text, strict=True)], dtype=object)
    return text.to_numpy(dtype=object)


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


def selector_matches(value: str, want: str) -> bool:
    """Whether a stream's key text matches a selector's value (numbers as numbers: ``01`` is ``1``)."""
    if value == want:
        return True
    try:
        return number_text(float(want)) == value
    except ValueError:
        return False


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


def reference_stream(steps: dict[str, float]) -> str:
    """The slowest stream: the largest median time step.

    Streams whose steps lie within :data:`STEP_TOLERANCE` of the largest are
    one rate, and the first of them by name is taken: so every file of a
    release takes the same reference whatever order its rows come in, and a
    clock's jitter does not swap it from file to file.
    """
    largest = max(steps.values())
    tied = [name for name, step in steps.items() if step * (1 + STEP_TOLERANCE) >= largest]
    return min(tied)


def one_rate(a: float, b: float) -> bool:
    """Whether two median steps (or rates) are one, within :data:`STEP_TOLERANCE`."""
    return max(a, b) <= (1 + STEP_TOLERANCE) * min(a, b)


@dataclass(frozen=True)
class Clock:
    """The clock a file is windowed on: its reference stream and that stream's median step.

    Attributes
    ----------
    member : str
        The file.
    stream : str
        The reference stream: the one resampled at (``"slowest"``), or the
        slowest of the streams (``"per-stream"``).
    step : float
        Its median time step, in the time column's units.
    unit : float or None
        The length of one unit in seconds (None: not known).
    same_stream : bool
        Whether every file must have this reference stream (``"slowest"``:
        the channels are aligned to it).
    """

    member: str
    stream: str
    step: float
    unit: float | None
    same_stream: bool


def check_clock(clock: Clock, first: Clock | None, rate_hz: float, entry: str) -> None:
    """A file's clock agrees with the first file's, and with the entry's rate when the unit is known.

    Raises
    ------
    ParseError
        The reference stream differs from the first file's (``"slowest"``),
        or its median step differs by more than :data:`STEP_TOLERANCE` from
        the first file's or from ``1 / rate_hz``; naming both files, the
        streams and their steps.
    """
    if first is not None and first.member != clock.member:
        if clock.same_stream and clock.stream != first.stream:
            message = (
                f"{clock.member}: its slowest stream is {excerpt(clock.stream)} (median time step "
                f"{clock.step:g}), where {first.member}'s is {excerpt(first.stream)} (step "
                f"{first.step:g}): its channels would be aligned to another clock; keep streams "
                f"every file holds at one rate with reader_options.streams.select"
            )
            raise ParseError(message, reason=Reason("differs", "streams.select"))
        if not one_rate(clock.step, first.step):
            message = (
                f"{clock.member}: stream {excerpt(clock.stream)} steps by {clock.step:g} "
                f"(median), where stream {excerpt(first.stream)} of {first.member} steps by "
                f"{first.step:g}: more than {100 * STEP_TOLERANCE:g} % apart, so its windows would "
                f"last another time; every file's streams must keep one rate: leave it out "
                f"(reader_options.members)"
            )
            raise ParseError(message, reason=Reason("differs", "members"))
    if clock.unit is not None and rate_hz > 0:
        seconds = clock.step * clock.unit
        if not one_rate(seconds, 1.0 / rate_hz):
            message = (
                f"{clock.member}: stream {excerpt(clock.stream)} steps by {clock.step:g} "
                f"(median; {seconds:g} s, {1.0 / seconds:.4g} Hz), where dataset '{entry}' "
                f"has sampling_rate_hz = {rate_hz:g} (a step of {1.0 / rate_hz:g} s): more "
                f"than {100 * STEP_TOLERANCE:g} % apart; correct sampling_rate_hz or "
                f"reader_options.streams.time_unit"
            )
            raise ParseError(message, reason=Reason("invalid", "streams.time_unit"))


def _check_one_rate(steps: dict[str, float], member: str) -> None:
    """Per-stream windows: every stream kept at one rate (windows of one length in samples)."""
    slow, fast = max(steps, key=steps.__getitem__), min(steps, key=steps.__getitem__)
    if not one_rate(steps[slow], steps[fast]):
        shown = ", ".join(f"{name}: {step:g}" for name, step in steps.items())
        message = (
            f'{member}: align = "per-stream" windows every stream in one number of samples, '
            f"but the streams' median time steps differ by more than "
            f"{100 * STEP_TOLERANCE:g} % ({shown}): a window of {excerpt(slow)} would last "
            f"{steps[slow] / steps[fast]:.3g} times as long as one of {excerpt(fast)}; use "
            f'align = "slowest" (every stream resampled at the slowest one\'s timestamps), or '
            f"keep streams of one rate with reader_options.streams.select"
        )
        raise ParseError(message, reason=Reason("invalid", "streams.align"))


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
        _check_one_rate({n: v["step"] for n, v in info["streams"].items()}, member)
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
