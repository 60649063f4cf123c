"""Generic readers for user-registered datasets that need no code of their own.

* ``feature-table`` (:func:`read_feature_table`): a table of computed
  features, one row per example (one file or several), its labels and users
  in its columns, its paths, or side files (:mod:`mudata.readers.aligned`).
* ``long-signals`` (:func:`read_long_signals`): raw samples in long format,
  one row per sample (one file or one per user or recording).

Both read CSV (any of :data:`~mudata.readers.delimited.SEPARATORS`, decimal
point or comma), Parquet, whitespace-separated text and MATLAB files
(:mod:`mudata.readers.matlab`), plain or compressed
(:mod:`mudata.readers.decode`), and are configured entirely by the entry's
``reader_options``.

The parts they share are modules of their own: the members and their
parsing (:mod:`mudata.readers.members`), the roles of columns
(:mod:`mudata.readers.roles`), their values
(:mod:`mudata.readers.column_values`), the time column
(:mod:`mudata.readers.time_columns`) and the options of ``long-signals``
(:mod:`mudata.readers.long_options`).
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pandas as pd

from mudata.errors import ParseError, Reason, RegistryError, excerpt
from mudata.readers._text import list_option, str_option
from mudata.readers.aligned import read_aligned_features, side_options
from mudata.readers.base import FeatureTable, SignalTable
from mudata.readers.column_values import numeric_columns, text_users
from mudata.readers.long_options import LongOptions, long_options, path_groups
from mudata.readers.members import load_members, load_stacked
from mudata.readers.roles import RESERVED, check_roles, path_pattern
from mudata.readers.sources import Sources
from mudata.readers.streams import (
    TIME_UNITS,
    Clock,
    StreamOptions,
    check_clock,
    split_streams,
    stream_options,
)
from mudata.readers.time_columns import check_time, check_time_blank, time_text, time_values
from mudata.readers.times import check_offsets
from mudata.records.entry import DatasetEntry

__all__ = ["read_feature_table", "read_long_signals"]

log = logging.getLogger(__name__)


def read_feature_table(entry: DatasetEntry, sources: Sources) -> FeatureTable:
    """Read a table of computed features.

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``: ``format`` (``"csv"`` or ``"parquet"``), ``members``
        (glob, default ``"*.<format>"``; several files are stacked in name
        order), ``user_col``, ``label_col``, ``feature_cols`` (optional list;
        default every other numeric column, the others named in a warning).
        With ``label_file`` or ``user_file`` the labels or users are in side
        files aligned with each table row by row
        (:func:`mudata.readers.aligned.read_aligned_features`).
    sources : Sources
        The verified files.

    Returns
    -------
    FeatureTable
        ``userid`` (int), ``label`` (as in the file), then the features as
        float64, rows in file order.

    Raises
    ------
    ParseError
        When a file lacks a named column (file, missing and found columns
        named), a user id is not an integer or a feature is not numeric.
    """
    if side_options(entry) is not None:
        return read_aligned_features(entry, sources)
    pattern = path_pattern(entry)
    groups = set(pattern.groupindex) if pattern else set()
    cols: dict[str, str | None] = {}
    for role in ("user", "label"):
        cols[role] = str_option(entry, f"{role}_col", None)
        if (cols[role] is None) == (role not in groups):
            how = "both" if cols[role] else "neither"
            message = (
                f"dataset '{entry.name}': reader 'feature-table' takes the {role} from "
                f"reader_options.{role}_col or from a '{role}' group of path_pattern; {how} given"
            )
            raise RegistryError(
                message, reason=Reason("taken" if cols[role] else "missing", f"{role}_col")
            )
    # A role from the path is not a column: named so that no column can be it.
    user_col = cols["user"] or "\0user"
    label_col = cols["label"] or "\0label"
    feature_cols = (
        list_option(entry, "feature_cols", []) if "feature_cols" in entry.reader_options else None
    )
    if user_col == label_col:
        check_roles(entry, "label_col", [label_col], {user_col: "the user column (user_col)"})
    roles = {user_col: "the user column (user_col)", label_col: "the label column (label_col)"}
    if feature_cols is not None:
        check_roles(entry, "feature_cols", list(feature_cols), roles)
    required = [c for c in (cols["user"], cols["label"], *(feature_cols or [])) if c]
    frames = []
    # The path of each row is its member's: members are parsed one by one.
    load = load_members if pattern else load_stacked
    for member, table in load(entry, sources, required, [c for c in [cols["user"]] if c]):
        if pattern is not None:
            found = path_groups(pattern, member)
            for role, column in (("user", user_col), ("label", label_col)):
                if cols[role] is None:
                    table = table.assign(**{column: np.full(len(table), found[role], dtype=object)})
        if feature_cols is None:
            chosen = [
                c
                for c in table.columns
                if c not in (user_col, label_col, *RESERVED)
                and pd.api.types.is_numeric_dtype(table[c])
                and not pd.api.types.is_bool_dtype(table[c])
            ]
            others = [c for c in table.columns if c not in (user_col, label_col, *chosen)]
            reserved = [c for c in others if c in RESERVED]
            skipped = [c for c in others if c not in RESERVED]
            if skipped:
                # One stray text value makes a whole column non-numeric: say so.
                log.warning(
                    "%s: non-numeric column(s) %s left out of the features; list "
                    "reader_options.feature_cols to keep them (each value must be a number)",
                    member,
                    excerpt(skipped),
                )
            if reserved:
                log.warning(
                    "%s: column(s) %s left out of the features: the table has its own "
                    "columns of those names",
                    member,
                    reserved,
                )
        else:
            chosen = list(feature_cols)
        frame = pd.DataFrame(
            {
                "userid": text_users(table[user_col], member, user_col),
                "label": table[label_col].to_numpy(),
            }
        )
        frames.append(
            (
                member,
                pd.concat(
                    [
                        frame,
                        numeric_columns(table, chosen, member, setting="feature_cols").reset_index(
                            drop=True
                        ),
                    ],
                    axis=1,
                ),
            )
        )
    columns = list(frames[0][1].columns)
    for member, frame in frames[1:]:
        if list(frame.columns) != columns:
            message = f"{member}: feature columns {excerpt(list(frame.columns)[2:])} differ from {frames[0][0]}'s {excerpt(columns[2:])}"
            raise ParseError(message, reason=Reason("differs", "members"))
    return FeatureTable(pd.concat([f for _, f in frames], ignore_index=True))


def _member_frame(
    member: str, table: pd.DataFrame, options: LongOptions, number: int, header: int
) -> tuple[pd.DataFrame, int]:
    """One member's rows (user, label, a recording key and the channels, in file
    order), and how many of its times repeat the previous one (:func:`check_time`)."""
    groups = path_groups(options.pattern, member)
    n = len(table)
    users = (
        text_users(table[options.user_col], member, options.user_col)
        if options.user_col
        else np.full(n, groups["user"], dtype=object)
    )
    labels = (
        table[options.label_col].to_numpy()
        if options.label_col
        else np.full(n, groups["label"], dtype=object)
    )
    recording = pd.Series(users, dtype=object).astype(str)
    if "recording" in groups:
        recording = recording + "\x1f" + groups["recording"]
    if options.recording_col:
        recording = recording + "\x1f" + table[options.recording_col].astype(str).to_numpy()
    local = pd.factorize(recording)[0]
    repeats = 0
    if options.time_col and options.time_order == "strict":
        repeats = check_time(
            time_values(table[options.time_col], member, options.time_col),
            local,
            member,
            options.time_col,
            header,
        )
    frame = pd.DataFrame({"userid": users, "label": labels, "_file": number, "_recording": local})
    if options.segment_col:
        frame["_segment"] = table[options.segment_col].to_numpy()
    frame = pd.concat(
        [frame, numeric_columns(table, options.channels, member).reset_index(drop=True)], axis=1
    )
    return frame, repeats


def _runs(frame: pd.DataFrame, key: list[str]) -> np.ndarray:
    """Number each contiguous run of ``key``, so that segments are contiguous by construction."""
    change = np.zeros(len(frame), dtype=bool)
    for column in key:
        values = frame[column].to_numpy()
        change[1:] |= values[1:] != values[:-1]
    return np.cumsum(change).astype(np.int64)


def read_long_signals(entry: DatasetEntry, sources: Sources) -> SignalTable:
    """Read raw samples in long format (one row per sample).

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``:

        * ``format`` (``"csv"``, ``"parquet"`` or ``"text"``: whitespace-separated),
          ``members`` (glob), ``header`` (default true; without a header,
          ``columns`` maps names to 1-based column numbers), ``encoding``;
        * ``user_col`` and ``label_col``, or the groups ``user`` and ``label``
          of ``path_pattern``, a regular expression searched in each member's
          path (``recording`` is a third, optional group);
        * ``time_col`` (optional; numbers, or text parsed as date/times): it
          must not go back inside a recording; repeated times are kept in file
          order and counted (``attrs["time_repeats"]``, by file). With
          ``time_order = "file"`` it is not checked. Samples are always taken in
          file order at ``sampling_rate_hz``;
        * ``format = "mat"``: ``variable`` names the array (default: the only
          numeric 2-D one); ``separator`` and ``decimal`` for delimited text;
          compressed members (``.gz``, ``.bz2``, ``.xz``) are decompressed;
        * ``recording_col`` (optional): a recording is one (file, user,
          ``recording`` group, ``recording_col`` value); windows never cross one;
        * ``channels`` (default the sensors' channels), ``segment_col``
          (optional; default: one segment per recording run).
    sources : Sources
        The verified files.

    Returns
    -------
    SignalTable
        ``userid`` (text), ``label``, ``segment`` (int), ``recording`` (int),
        then the channels as float64 (NaN kept), rows in file order.

    Raises
    ------
    RegistryError
        When the options contradict each other or miss a sensor channel.
    ParseError
        When a file lacks a named column (file, missing and found columns
        named), a path does not match ``path_pattern``, a channel is not
        numeric, or time goes back inside a recording (file and row named).
    """
    options = long_options(entry)
    streams = stream_options(entry)
    keys = list(streams.keys) if streams else []
    header = int(entry.reader_options.get("header", True) is not False)
    frames, repeats, found = [], {}, {}
    text_columns = [options.user_col] if options.user_col else []
    member_options = options
    first_clock: Clock | None = None
    for number, (member, table) in enumerate(
        load_members(entry, sources, options.columns + keys, text_columns + keys)
    ):
        if streams is not None:
            table, member_options, found[member], clock = _split(
                entry, member, table, options, streams, header, member_options
            )
            # Windows are sized from the entry's one rate: every file's clock must agree.
            check_clock(clock, first_clock, entry.sampling_rate_hz, entry.name)
            first_clock = first_clock or clock
        member_frame, repeats[member] = _member_frame(member, table, member_options, number, header)
        frames.append(member_frame)
    options = member_options
    frame = pd.concat(frames, ignore_index=True)
    frame["recording"] = pd.factorize(
        frame["_file"].astype(str) + "/" + frame["_recording"].astype(str)
    )[0].astype(np.int64)
    key = ["_file", "_segment"] if options.segment_col else ["recording"]
    frame.insert(2, "segment", _runs(frame, key))
    columns = ["userid", "label", "segment", "recording", *options.channels]
    table = frame[columns].reset_index(drop=True)
    repeated = {m: n for m, n in repeats.items() if n}
    if repeated:
        log.info(
            "%s: %d samples repeat the time of the previous one (kept in file order): %s",
            entry.name,
            sum(repeated.values()),
            excerpt(repeated),
        )
    # Read by the pipeline into the provenance's counts (``time_repeats``).
    table.attrs["time_repeats"] = repeated
    if streams is not None:
        table.attrs["streams"] = found
    return SignalTable(table)


def _split(
    entry: DatasetEntry,
    member: str,
    table: pd.DataFrame,
    options: LongOptions,
    streams: StreamOptions,
    header: int,
    before: LongOptions,
) -> tuple[pd.DataFrame, LongOptions, dict, Clock]:
    """One member split into its streams (:mod:`mudata.readers.streams`), the options
    the rest of the reader reads it with (``before`` holds the previous member's),
    and the clock it is windowed on."""
    assert options.time_col is not None  # stream_options requires it
    values = table[options.time_col]
    time, parsed = time_text(values, member, options.time_col)
    if parsed is not None:
        check_offsets(parsed, values, member, options.time_col)
    check_time_blank(time, member, options.time_col)
    # Date/time text is read in nanoseconds; numbers are in the unit the entry names.
    unit = 1e-9 if parsed is not None else TIME_UNITS.get(streams.time_unit or "")
    split = split_streams(
        table,
        time,
        member,
        streams,
        user_col=options.user_col,
        label_col=options.label_col,
        time_col=options.time_col,
        recording_col=options.recording_col,
        channels=options.channels,
        header=header,
    )
    if before is not options and set(before.channels) != set(split.channels):
        message = (
            f"{member}: holds the streams {excerpt(sorted(split.info['streams']))}, where the "
            f"files before it give the channels {excerpt(before.channels)}; every file must "
            f"hold the same streams: choose them with reader_options.streams.select"
        )
        raise ParseError(message, reason=Reason("differs", "streams.select"))
    channels = before.channels if before is not options else split.channels
    absent = [c for s in entry.sensors for c in s.channels if c not in channels]
    if absent:
        message = (
            f"dataset '{entry.name}': sensor channels {absent} are not channels of the streams "
            f"of {member}; its channels: {excerpt(channels)}"
        )
        raise ParseError(message, reason=Reason("absent", "sensors"))
    found = dataclasses.replace(options, channels=channels, recording_col=split.recording_col)
    reference = split.info["clock"]
    clock = Clock(
        member,
        reference,
        split.info["streams"][reference]["step"],
        unit,
        streams.align == "slowest",
    )
    return split.table, found, split.info, clock
