"""``annotated-signals``: raw samples whose labels are intervals in a separate table.

Releases such as UCI HAPT publish the signals without a label column, one file
per recording and sensor (``RawData/acc_exp01_user01.txt``,
``gyro_exp01_user01.txt``), and the labels as an annotation table of intervals
(``RawData/labels.txt``: ``experiment user activity start end``). This reader
joins the two:

* the signal files are read as ``long-signals`` reads them (format, header,
  ``columns``, line shapes); ``path_pattern`` names the fields of each path:
  ``user``, an optional ``sensor`` (the files of one recording that differ by
  their sensor are laid side by side, channel ``<sensor>_<column>``), and the
  key fields that join a recording to its intervals (``experiment``);
* ``reader_options.labels`` describes the annotation table
  (:class:`LabelOptions`): its ``file``, the ``key`` fields, the ``start``,
  ``end`` and ``label`` columns, and the ``unit`` of start and end
  (``"sample"``: 1-based inclusive indices by default, as HAPT writes them;
  ``"s"``, ``"ms"``, ``"us"`` or ``"ns"``: times on the clock of ``time_col``, in
  the numbers it holds, an interval holding
  ``start <= t < end``).

Samples outside every interval are unlabelled: dropped, and counted per
recording (``attrs["unlabelled"]``). Overlapping intervals, an interval that
ends before it starts, lies before the first sample or after the last, or has
a non-integer sample index are errors naming the file and the line of each
interval concerned. An annotation row whose key matches no recording is
counted and named in a warning (``attrs["unmatched_intervals"]``): a release
may publish the labels of recordings it does not include; when no row matches
any recording, the reader stops.

Every interval is a recording of its own (``recording`` column), so a window
never spans two intervals, even two of one class with unlabelled samples
between them.

The annotation table itself (its options, its intervals, their overlaps) is
:mod:`mudata.readers.intervals`; here, the signal files and the join.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from mudata.errors import ParseError, Reason, RegistryError, excerpt
from mudata.readers._text import list_option, str_option
from mudata.readers.base import SignalTable
from mudata.readers.column_values import numeric_columns, text_users
from mudata.readers.intervals import (
    Interval,
    LabelOptions,
    check_overlaps,
    field_where,
    key_text,
    label_options,
    read_intervals,
)
from mudata.readers.linear_regex import LinearPattern, PatternError, compile_linear
from mudata.readers.long_options import path_groups
from mudata.readers.members import check_columns, matching_members, parse_member
from mudata.readers.sources import Sources
from mudata.readers.time_columns import check_time, time_values
from mudata.records.entry import DatasetEntry

log = logging.getLogger(__name__)

#: The path groups with a meaning of their own; any other named group is a key field.
_OWN_GROUPS = ("user", "sensor", "recording")


@dataclass(frozen=True)
class AnnotatedOptions:
    """The checked ``reader_options`` of ``annotated-signals`` (besides ``labels``)."""

    pattern: LinearPattern | None
    user_col: str | None
    time_col: str | None
    channels: list[str]
    column_keys: list[str]
    path_keys: list[str]
    labels: LabelOptions


def _pattern(entry: DatasetEntry) -> LinearPattern | None:
    text = str_option(entry, "path_pattern", None)
    if text is None:
        return None
    try:
        pattern = compile_linear(text)
    except PatternError as exc:
        message = f"{field_where(entry, 'path_pattern')}: {excerpt(text)} {exc}"
        raise RegistryError(message, reason=Reason("invalid", "path_pattern")) from None
    if "label" in pattern.groupindex:
        message = (
            f"{field_where(entry, 'path_pattern')}: reader 'annotated-signals' takes the labels "
            f"from reader_options.labels, not from a 'label' group"
        )
        raise RegistryError(message, reason=Reason("taken", "path_pattern"))
    return pattern


def annotated_options(entry: DatasetEntry) -> AnnotatedOptions:
    """Read and cross-check the options: the user, the channels and where each key comes from."""
    labels = label_options(entry)
    pattern = _pattern(entry)
    groups = set(pattern.groupindex) if pattern else set()
    if "label_col" in entry.reader_options:
        message = f"{field_where(entry, 'label_col')}: reader 'annotated-signals' takes the labels from reader_options.labels"
        raise RegistryError(message, reason=Reason("taken", "label_col"))
    user_col = str_option(entry, "user_col", None)
    if (user_col is None) == ("user" not in groups):
        how = "both" if user_col else "neither"
        message = (
            f"dataset '{entry.name}': reader 'annotated-signals' takes the user from "
            f"reader_options.user_col or from a 'user' group of path_pattern; {how} given"
        )
        raise RegistryError(message, reason=Reason("taken" if user_col else "missing", "user_col"))
    time_col = str_option(entry, "time_col", None)
    if labels.unit != "sample" and time_col is None:
        message = f"{field_where(entry, 'labels.unit')}: intervals in {labels.unit!r} are times of the signals' time column: name it as reader_options.time_col"
        raise RegistryError(message, reason=Reason("missing", "time_col"))
    sensor_channels = [c for s in entry.sensors for c in s.channels]
    channels = list_option(entry, "channels", sensor_channels)
    if not channels:
        message = f"{field_where(entry, 'channels')}: no channel named"
        raise RegistryError(message, reason=Reason("missing", "channels"))
    absent = [c for c in sensor_channels if c not in channels]
    if absent:
        message = f"dataset '{entry.name}': sensor channels {absent} are not in reader_options.channels {channels}"
        raise RegistryError(message, reason=Reason("absent", "sensors"))
    path_keys = [k for k in labels.key if k in groups]
    column_keys = [k for k in labels.key if k not in groups]
    return AnnotatedOptions(pattern, user_col, time_col, channels, column_keys, path_keys, labels)


@dataclass
class _Recording:
    """The samples of one recording: its key, name, user and channels, and times."""

    key: tuple[str, ...]
    name: str
    frame: pd.DataFrame
    time: np.ndarray | None


def _channel(sensor: str | None, column: str) -> str:
    return f"{sensor}_{column}" if sensor else column


_Files = dict[tuple[str, ...], dict[str | None, tuple[str, pd.DataFrame]]]


def _files(entry: DatasetEntry, sources: Sources, options: AnnotatedOptions) -> _Files:
    """The signal files, parsed, by recording (their path's key) and sensor."""
    fmt, members = matching_members(entry, sources)
    # A members glob that also matches the annotation table does not make it a signal file.
    members = [m for m in members if m != options.labels.file]
    files: _Files = {}
    text = [options.user_col] if options.user_col else []
    text += options.column_keys
    for member in members:
        groups = path_groups(options.pattern, member)
        table = parse_member(
            sources.read_decoded(member), member, fmt, entry, text, sources.max_expansion
        )
        sensor = groups.get("sensor")
        columns = [c for c in table.columns if _channel(sensor, str(c)) in options.channels]
        needed = [*text, *([options.time_col] if options.time_col else [])]
        check_columns(table, member, needed)
        path_key = tuple(key_text(groups[k]) for k in options.path_keys)
        path_key += (groups.get("recording", ""),) if "recording" in groups else ()
        path_key += (groups.get("user", ""),) if "user" not in options.path_keys else ()
        sensors = files.setdefault(path_key, {})
        if sensor in sensors:
            message = f"{member} and {sensors[sensor][0]} are both sensor {sensor!r} of one recording {excerpt(path_key)}; the path_pattern must tell them apart"
            raise ParseError(message, reason=Reason("invalid", "path_pattern"))
        sensors[sensor] = (member, table[[*needed, *columns]])
    return files


def _recordings(
    entry: DatasetEntry, sources: Sources, options: AnnotatedOptions
) -> list[_Recording]:
    """The signal files, joined per recording: the files of its sensors side by side."""
    recordings = []
    for sensors in _files(entry, sources, options).values():
        named = sorted(sensors.items(), key=lambda item: str(item[0]))
        lengths = {member: len(table) for _, (member, table) in named}
        if len(set(lengths.values())) > 1:
            message = f"the sensor files of one recording hold different numbers of samples: {excerpt(lengths)}; each sample must be in every file"
            raise ParseError(message, reason=Reason("differs", "members"))
        first_member, first_table = named[0][1]
        parts = {}
        for sensor, (member, table) in named:
            for column in table.columns:
                name = _channel(sensor, str(column))
                if name in options.channels:
                    parts[name] = numeric_columns(table, [column], member)[column].to_numpy()
        missing = [c for c in options.channels if c not in parts]
        if missing:
            message = f"{first_member}: the recording's files ({', '.join(m for _, (m, _) in named)}) hold no channel {excerpt(missing)}"
            raise ParseError(message, reason=Reason("absent", "channels"))
        frame = pd.DataFrame({c: parts[c] for c in options.channels})
        groups = path_groups(options.pattern, first_member)
        if options.user_col:
            users = text_users(first_table[options.user_col], first_member, options.user_col)
        else:
            users = np.full(len(frame), groups["user"], dtype=object)
        frame.insert(0, "userid", users)
        time = None
        if options.time_col:
            time = time_values(first_table[options.time_col], first_member, options.time_col)
        by_path = dict(
            zip(options.path_keys, (key_text(groups[k]) for k in options.path_keys), strict=True)
        )
        if options.column_keys:
            values = pd.DataFrame(
                {k: first_table[k].map(key_text).to_numpy() for k in options.column_keys}
            )
            split = values.groupby(options.column_keys, sort=False).indices
        else:
            split = {(): np.arange(len(frame))}
        if time is not None:
            # Time must not go back inside a recording: one per value of the column keys.
            local = np.zeros(len(frame), dtype=np.int64)
            for number, rows in enumerate(split.values()):
                local[rows] = number
            header = int(entry.reader_options.get("header", True) is not False)
            check_time(time, local, first_member, str(options.time_col), header)
        for column_key, rows in split.items():
            values_of = column_key if isinstance(column_key, tuple) else (column_key,)
            by_column = dict(zip(options.column_keys, values_of, strict=True))
            key = tuple({**by_path, **by_column}[k] for k in options.labels.key)
            rows = np.sort(rows)
            shown = ", ".join(f"{k}={v}" for k, v in zip(options.labels.key, key, strict=True))
            recordings.append(
                _Recording(
                    key,
                    f"{first_member} ({shown})",
                    frame.iloc[rows].reset_index(drop=True),
                    None if time is None else time[rows],
                )
            )
    return recordings


def _samples(recording: _Recording, interval: Interval, options: LabelOptions) -> tuple[int, int]:
    """Rows ``[lo, hi)`` of ``recording`` inside ``interval``; one outside the samples is an error."""
    n = len(recording.frame)
    line = f"{options.file}, line {interval.line}"
    if options.unit == "sample":
        lo, hi = int(interval.start) - options.first, int(interval.end) - options.first + 1
        if hi > n:
            message = (
                f"{line}: the interval [{interval.start:g}, {interval.end:g}] ends after the last "
                f"sample of {recording.name}, which holds {n:,} samples (index {options.first} to "
                f"{n - 1 + options.first:,})"
            )
            raise ParseError(message, reason=Reason("invalid", "labels"))
        return lo, hi
    time = recording.time
    assert time is not None  # annotated_options requires time_col for time units
    step = float(np.median(np.diff(time))) if n > 1 else 0.0
    if n == 0 or interval.start > time[-1] or interval.end > time[-1] + max(step, 0) * 1.5:
        last = f"{time[-1]:g}" if n else "none"
        message = (
            f"{line}: the interval [{interval.start:g}, {interval.end:g}) {options.unit} ends after "
            f"the last sample of {recording.name} (time {last}); is labels.unit the unit of "
            f"the time column?"
        )
        raise ParseError(message, reason=Reason("invalid", "labels.unit"))
    lo = int(np.searchsorted(time, interval.start, side="left"))
    hi = int(np.searchsorted(time, interval.end, side="left"))
    return lo, hi


def read_annotated_signals(entry: DatasetEntry, sources: Sources) -> SignalTable:
    """Read raw samples and label them from an annotation table of intervals.

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``: as ``long-signals`` for the signal files
        (``format``, ``members``, ``header``, ``columns``, ``separator``,
        line shapes, ``time_col``, ``channels``, ``user_col`` or a ``user``
        group of ``path_pattern``), with ``sensor`` and key groups in
        ``path_pattern``, and ``labels`` (:class:`LabelOptions`).
    sources : Sources
        The verified files.

    Returns
    -------
    SignalTable
        ``userid``, ``label``, ``segment`` and ``recording`` (one per
        interval), then the channels as float64; only the samples inside an
        interval, in file order. ``attrs["unlabelled"]`` counts the samples
        left out per recording, ``attrs["unmatched_intervals"]`` the lines of
        the table whose key matches no recording.

    Raises
    ------
    RegistryError
        The options contradict each other.
    ParseError
        A bad interval, two overlapping ones (file and line of each named),
        sensor files of one recording of different lengths, or no interval
        that matches any recording.
    """
    options = annotated_options(entry)
    labels = options.labels
    file = sources.find(labels.file)
    labels = replace(labels, file=file)
    options = replace(options, labels=labels)
    intervals = read_intervals(sources.read_decoded(file), labels)
    check_overlaps(intervals, file, labels.unit, labels.key)
    recordings = _recordings(entry, sources, options)
    by_key: dict[tuple[str, ...], _Recording] = {}
    for recording in recordings:
        if recording.key in by_key:
            message = f"{recording.name} and {by_key[recording.key].name} have one key {excerpt(recording.key)}; name what tells them apart in labels.key"
            raise ParseError(message, reason=Reason("invalid", "labels.key"))
        by_key[recording.key] = recording
    unmatched = [i for i in intervals if i.key not in by_key]
    if len(unmatched) == len(intervals):
        shown = ", ".join(str(dict(zip(labels.key, k, strict=True))) for k in list(by_key)[:3])
        message = (
            f"{file}: no interval matches a recording by its key {labels.key} (first interval: "
            f"line {intervals[0].line}, {dict(zip(labels.key, intervals[0].key, strict=True))}; "
            f"recordings: {shown or 'none'})"
        )
        raise ParseError(message, reason=Reason("no-match", "labels.key"))
    if unmatched:
        log.warning(
            "%s: %d interval(s) of %s match no recording by their key %s and are not used "
            "(first: line %d, %s)",
            entry.name,
            len(unmatched),
            file,
            labels.key,
            unmatched[0].line,
            dict(zip(labels.key, unmatched[0].key, strict=True)),
        )
    mine: dict[tuple[str, ...], list[Interval]] = {}
    for interval in intervals:
        mine.setdefault(interval.key, []).append(interval)
    pieces, unlabelled, number = [], {}, 0
    for recording in recordings:
        covered = 0
        for interval in sorted(mine.get(recording.key, []), key=lambda i: i.start):
            lo, hi = _samples(recording, interval, labels)
            part = recording.frame.iloc[lo:hi]
            if part.empty:
                continue
            piece = pd.DataFrame(
                {
                    "userid": part["userid"].to_numpy(),
                    "label": np.full(len(part), interval.label, dtype=object),
                    "segment": number,
                    "recording": number,
                }
            )
            for channel in options.channels:
                piece[channel] = part[channel].to_numpy(dtype=np.float64)
            pieces.append((lo, piece))
            covered += len(part)
            number += 1
        left = len(recording.frame) - covered
        if left:
            unlabelled[recording.name] = left
    if not pieces:
        message = f"{file}: the intervals hold no sample of the recordings"
        raise ParseError(message, reason=Reason("empty", "labels"))
    table = pd.concat([p for _, p in pieces], ignore_index=True)
    if pd.api.types.is_object_dtype(table["label"]) and all(
        isinstance(v, int) for v in table["label"].unique()
    ):
        table["label"] = table["label"].astype(np.int64)
    table["segment"] = table["segment"].astype(np.int64)
    table["recording"] = table["recording"].astype(np.int64)
    if unlabelled:
        log.info(
            "%s: %d samples outside every interval of %s (unlabelled, dropped) in %d recording(s)",
            entry.name,
            sum(unlabelled.values()),
            file,
            len(unlabelled),
        )
    table.attrs["unlabelled"] = unlabelled
    table.attrs["unmatched_intervals"] = [i.line for i in unmatched]
    return SignalTable(table)


__all__ = [
    "AnnotatedOptions",
    "annotated_options",
    "read_annotated_signals",
]
