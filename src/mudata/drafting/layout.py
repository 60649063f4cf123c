"""``mudata init``, step 3: feature table or raw signals, the reader options and their evidence.

The columns' roles come from :mod:`mudata.drafting.columns`; what the columns do
not hold (user, label, recording) from the file paths: a pattern the user
gives (:func:`mudata.drafting.selection.compile_path_pattern`) or one found here (a
folder per label, a user id at the start or end of the file names).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from mudata.drafting.columns import (
    EPOCH_UNITS,
    Roles,
    check_leaks,
    clock_step,
    epoch_unit,
    find_roles,
    resolve,
    time_unit,
    unitless_seconds,
)
from mudata.drafting.pathfields import hint, read_paths, sensor_files
from mudata.drafting.records import Choices, Layout, Sniffed
from mudata.drafting.selection import Selection, compile_path_pattern
from mudata.drafting.sensors import group_channels, report_lines, stream_sensors
from mudata.drafting.streams import StreamDraft, detect_streams
from mudata.errors import MudataUsageError as UsageError
from mudata.errors import ParseError
from mudata.readers.decode import data_suffix
from mudata.readers.time_columns import time_values
from mudata.records.classes import is_numeric_column

# A user id in a file or folder name: letters then digits ("f1", "S01", "subject101") or digits.
USER_TOKEN = re.compile(r"^[A-Za-z]{0,12}\d+$")


def _user_token(stems: list[str]) -> tuple[str, str] | None:
    """Where a user id sits in file names: ``("start"|"end", example)`` or None."""
    for side in ("end", "start"):
        tokens = [re.split(r"[-_ ]", s)[-1 if side == "end" else 0] for s in stems]
        if all(USER_TOKEN.match(t) for t in tokens) and len(set(tokens)) > 1:
            return side, tokens[0]
    return None


def _path_pattern(
    members: list[str], suffix: str, need_user: bool, need_label: bool
) -> tuple[str | None, list[str], tuple[str, ...], str]:
    """A ``path_pattern`` giving what the columns lack, the evidence for it, the
    roles neither the columns nor the paths gave (empty when a pattern is found),
    and the draft's comment on the pattern (its template, another reading)."""
    notes: list[str] = []
    # Members may differ by their compression (".csv", ".csv.gz"): each loses its own.
    suffixes = sorted({data_suffix(m) for m in members} | {suffix}, key=len, reverse=True)
    escaped = [re.escape(s) for s in suffixes]
    ext = (escaped[0] if len(escaped) == 1 else "(?:" + "|".join(escaped) + ")") + "$"
    # the name without its data suffix (".csv.gz" whole), where a user id may end
    stems = [
        PurePosixPath(m).name[: len(PurePosixPath(m).name) - len(data_suffix(m))] for m in members
    ]
    folders = [PurePosixPath(m).parent.name for m in members]
    trial_folders = all(re.fullmatch(r"[A-Za-z]+[-_]\d+", f) for f in folders)
    if not (need_label and trial_folders):
        reading = read_paths(members, need_user, need_label)
        if reading is not None:
            return reading.pattern, reading.notes, (), reading.comment()
    label_part = ""
    if need_label:
        if len(set(folders)) < 2 or "" in folders:
            message = "no label column, and the files are not in one folder per label"
            return None, [message], ("label", "user") if need_user else ("label",), ""
        if trial_folders:
            # "dws_1": the activity and the trial number, as MotionSense names its folders
            label_part = r"(?P<label>[A-Za-z]+)[-_](?P<recording>\d+)/"
            labels = {re.split(r"[-_]", f)[0] for f in folders}
            notes.append(
                f"label and recording: the folder holding each file, as <label>_<trial> "
                f"({len(labels)} labels, {len(set(folders))} folders)"
            )
        else:
            label_part = r"(?P<label>[^/]+)/"
            notes.append(f"label: the folder holding each file ({len(set(folders))} folders)")
    user_part = r"[^/]*"
    if need_user:
        where = _user_token(stems)
        if where is None:
            return (
                None,
                [
                    *notes,
                    "no user column, and no user id (like f1, S01, subject101) at the start or end of the file names",
                ],
                ("user",),
                "",
            )
        side, example = where
        users = {re.split(r"[-_ ]", s)[-1 if side == "end" else 0] for s in stems}
        if side == "end":
            user_part = r"(?:[^/]*[-_ ])?(?P<user>[A-Za-z]*\d+)"
        else:
            user_part = r"(?P<user>[A-Za-z]*\d+)(?:[-_ ][^/]*)?"
        notes.append(
            f"user: the id at the {side} of each file name (e.g. {example!r}; {len(users)} users)"
        )
    pattern = r"(?:^|/)" + label_part + user_part + ext
    return pattern, notes, (), ""


def _lag1(table: pd.DataFrame, columns: list[str]) -> float:
    """Mean lag-1 correlation of the columns over the first 2,000 rows.

    Each column's pairs of successive values are taken where both are numbers:
    one empty cell (a line cut short) made a column's correlation NaN, and a
    file of signals with such a line in every column read as a feature table.
    """
    values = table[columns].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)[:2000]
    r = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for v in values.T:
            both = np.isfinite(v[:-1]) & np.isfinite(v[1:])
            if both.sum() >= 3:
                r.append(np.corrcoef(v[:-1][both], v[1:][both])[0, 1])
    r = [x for x in r if np.isfinite(x)]
    return float(np.mean(r)) if r else 0.0


def time_rate(table: pd.DataFrame, time_col: str, member: str) -> tuple[float | None, str]:
    values = time_values(table[time_col], member, time_col)
    steps = np.diff(values)
    steps = steps[steps > 0]
    if steps.size == 0:
        return None, f"time column '{time_col}' does not advance"
    median = float(np.median(steps))
    step = clock_step(values) or median
    texty = not pd.api.types.is_numeric_dtype(table[time_col]) and not is_numeric_column(
        table[time_col]
    )
    # Numbers carry no unit: the column's name may say it (timestamp(ns)); else an
    # epoch range says it (2000-2040 in seconds,
    # milliseconds, ...); otherwise below 1 they are read as seconds, up to 1e4
    # as milliseconds, beyond as nanoseconds. The note says which was assumed.
    epoch = None if texty else epoch_unit(values)
    named = time_unit(time_col)
    if texty:
        seconds, unit = step / 1e9, "between date/times"
    elif named:
        seconds, unit = step * named[1], f"in {named[0]}, by the column's name"
    elif epoch:
        seconds, unit = step / EPOCH_UNITS[epoch], f"epoch {epoch}"
    else:
        seconds, unit = unitless_seconds(step)
    rate = round(1.0 / seconds, 3)
    shown = f"{seconds:g} s {unit}" if texty else f"{step:g}, {unit}"
    what = "median step" if step == median else "mean step (whole ticks round the median)"
    return rate, f"sampling rate: {rate} Hz, from the {what} of '{time_col}' ({shown})"


def _code_column(table: pd.DataFrame) -> tuple[str | None, str]:
    """In a file without a header: the last (or first) column, when it looks like class codes.

    Class codes are whole numbers with few distinct values; sensor values are not.
    A few rows without a code (at most 1 %: a line cut short) do not rule a
    column out; the note counts them, and the build leaves them out.
    """
    if table.shape[1] == 0:  # every column has another role
        return None, ""
    for column in (table.columns[-1], table.columns[0]):
        values = pd.to_numeric(table[column], errors="coerce")
        distinct = values.dropna().unique()
        n_missing = int(values.isna().sum())
        whole = n_missing <= 0.01 * len(values) and bool(np.all(np.mod(distinct, 1) == 0))
        if whole and 2 <= distinct.size <= 100 and table.shape[1] > 3:
            without = f", {n_missing:,} row(s) without one" if n_missing else ""
            note = (
                f"label: column {str(column)[1:]} ({column}), whole numbers with "
                f"{distinct.size} distinct values{without} -- check it"
            )
            return str(column), note
    return None, ""


def _given(choices: Choices, columns: list[str], header: bool) -> tuple[list[str], list[str]]:
    channels = [resolve(c, columns, header, "--channels") for c in choices.channels]
    features = [resolve(c, columns, header, "--features") for c in choices.features]
    for option, chosen in (("--channels", channels), ("--features", features)):
        twice = sorted({c for c in chosen if chosen.count(c) > 1})
        if twice:
            message = f"mudata init: {option} names {', '.join(map(repr, twice))} more than once; give each column once"
            raise UsageError(message)
    return channels, features


def _repeats_most(table: pd.DataFrame, time_col: str, member: str) -> float:
    """Fraction of rows whose time equals the previous row's."""
    try:
        values = time_values(table[time_col], member, time_col)
    except ParseError:
        return 0.0
    return float(np.mean(np.diff(values) == 0)) if values.size > 1 else 0.0


def _choose_kind(
    kind: str,
    first: pd.DataFrame,
    roles: Roles,
    header: bool,
    fmt: str,
    member: str,
    streams: StreamDraft | None = None,
) -> tuple[str, str]:
    if kind != "auto":
        return kind, f"--kind {kind}"
    if roles.time:
        # Streams sharing one clock repeat each other's times: count inside each stream.
        repeated = streams.repeats if streams else _repeats_most(first, roles.time, member)
        if repeated > 0.5:
            return "features", (
                f"time column '{roles.time}' repeats on {100 * repeated:.0f} % of the rows"
                f"{' of each stream' if streams else ''}, so it "
                f"cannot place samples in time: one example per row"
            )
        return "signals", f"time column '{roles.time}'"
    if not header:
        return "signals", "numbers only, no header line"
    lag = _lag1(first, roles.signals)
    return (
        "signals" if lag > 0.5 else "features"
    ), f"lag-1 correlation of successive rows {lag:.2f}"


def _label_by_codes(first: pd.DataFrame, roles: Roles, notes: list[str]) -> None:
    """Without a header: the label is the last (or first) column holding class codes."""
    # A sorted label column looks like a counter of segments: it stays a candidate.
    ruled_out = [c for c, why in roles.left_out.items() if not why.startswith("a counter of")]
    ruled_out += [roles.time] if roles.time else []  # a clock is no label either
    roles.label, note = _code_column(first.drop(columns=ruled_out))
    if roles.label in roles.signals:
        roles.signals.remove(roles.label)
    roles.left_out.pop(roles.label or "", None)
    notes += [note] if note else []


def _from_paths(
    choices: Choices, roles: Roles, members: list[str], selection: Selection, columns: list[str]
) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    """``path_pattern`` for what the columns lack: given, or found; its notes and comment."""
    options: dict[str, Any] = {}
    notes: list[str] = []
    comments: dict[str, str] = {}
    pattern: str | None
    if choices.path_pattern:
        pattern = compile_path_pattern(choices.path_pattern)
        groups = set(re.compile(pattern).groupindex)
        options["path_pattern"] = pattern
        if pattern != choices.path_pattern:
            comments["path_pattern"] = f"from --path-pattern {choices.path_pattern!r}"
        notes.append(f"path pattern: {pattern} (from --path-pattern {choices.path_pattern!r})")
        for role in ("user", "label"):
            if role not in groups and getattr(roles, role) is None:
                message = f"mudata init: --path-pattern {choices.path_pattern!r} has no {{{role}}} field and no {role} column was found; columns: {columns}"
                raise UsageError(message)
    elif not (roles.user and roles.label):
        pattern, notes, need, comment = _path_pattern(
            members, selection.suffix, not roles.user, not roles.label
        )
        if comment:
            comments["path_pattern"] = comment
        if pattern is None:
            # The hint holds every field the pattern must give, found or not.
            fields = tuple(r for r in ("label", "user") if not getattr(roles, r))
            example = hint(members, fields)
            message = (
                "mudata init: " + "; ".join(notes) + f". Columns of {members[0]}: {columns}. "
                f"Name {'it' if len(need) == 1 else 'them'} with "
                f"{' / '.join(f'--{r} COL' for r in need)}, or say where "
                f"{'it sits' if len(need) == 1 else 'they sit'} in the paths, as in "
                f"--path-pattern '{example}'"
            )
            raise UsageError(message)
        options["path_pattern"] = pattern
    # acc_walking.csv beside Gyroscope_walking.csv: files of one recording, one per
    # sensor. Read as they are, each file gives rows of its own and the feature columns
    # would mix the sensors; once user and label are found, init names the --include
    # reading one of them instead.
    per_sensor = sensor_files(members)
    if per_sensor is not None:
        raise UsageError(per_sensor.refusal())
    return options, notes, comments


def _column_options(
    kind: str, roles: Roles, given: list[str], header: bool, members: list[str]
) -> tuple[dict[str, Any], list[str], list[str]]:
    """The role, channel or feature options; the columns chosen; notes."""
    chosen = given or [c for c in roles.signals if c != roles.recording]
    role_cols = {"user_col": roles.user, "label_col": roles.label}
    if kind == "signals":
        role_cols.update({"time_col": roles.time, "recording_col": roles.recording})
    options: dict[str, Any] = {k: v for k, v in role_cols.items() if v}
    notes = []
    if kind == "signals" and not chosen:
        roles_found = {"user": roles.user, "label": roles.label, "time": roles.time}
        held = [f"{c!r} ({why})" for c, why in roles.left_out.items()]
        held += [f"{c!r} ({role})" for role, c in roles_found.items() if c]
        message = (
            f"mudata init: {members[0]} has no signal column to use as a channel "
            f"(its columns: {', '.join(held) or 'none'}); name the signal columns with "
            f"--channels A,B,C, or give --kind features for a table of features"
        )
        raise UsageError(message)
    if not header:
        used = list(options.values())  # the role columns, named c1, c2, ...
        options["header"] = False
        options["columns"] = {c: int(c[1:]) for c in [*used, *chosen]}
    if kind == "signals":
        options["channels"] = chosen
        if len(members) > 1:
            notes.append(
                f"recordings: one per file ({len(members)} files); windows never cross one"
            )
    else:
        options["feature_cols"] = chosen
    return options, chosen, notes


def _streams(
    first: pd.DataFrame, roles: Roles, member: str, choices: Choices
) -> tuple[StreamDraft, np.ndarray] | None:
    """The streams of the first file (:mod:`mudata.drafting.streams`); their keys are no signals."""
    found = detect_streams(first, roles, member, choices.streams, choices.stream_align)
    if found is None:
        return None
    for key in found[0].keys:
        if key in roles.signals:
            roles.signals.remove(key)
        roles.left_out[key] = "a stream key (reader_options.streams)"
    return found


def _stream_rates(
    first: pd.DataFrame, time_col: str, member: str, draft: StreamDraft, stream_of: np.ndarray
) -> tuple[float | None, str]:
    """Each stream's rate from its own rows; the table's is the slowest one's."""
    notes = {}
    for number, name in enumerate(draft.rows):
        rows = first[stream_of == number]
        draft.rates[name], notes[name] = time_rate(rows, time_col, member)
    slowest = draft.slowest()
    if slowest is None:
        return None, next(iter(notes.values()))
    return draft.rates[slowest], f"{notes[slowest]}, of stream {slowest!r} (the slowest)"


def propose_layout(
    first: pd.DataFrame,
    sniffed: Sniffed,
    members: list[str],
    selection: Selection,
    kind: str = "auto",
    choices: Choices | None = None,
    ruled_out: dict[str, str] | None = None,
) -> Layout:
    """Propose the reader options from the first file, the member paths and the user's choices.

    ``ruled_out`` names columns found not to be signals in all the files
    (:func:`mudata.drafting.counters.monotone_channels`), with the reason.

    Raises
    ------
    UsageError
        An option names no column (the columns are listed), or neither the
        columns nor the paths give a user and a label.
    """
    choices = choices or Choices()
    header, fmt = sniffed.header, sniffed.fmt
    columns = [str(c) for c in first.columns]
    channels, features = _given(choices, columns, header)
    given = {
        "user": choices.user,
        "label": choices.label,
        "time": choices.time,
        "recording": choices.recording,
    }
    if ruled_out:
        # Aligned streams' channels ("x [Sensor ID=1]") are ruled out by their column.
        ruled_out = {re.sub(r" \[[^\]]*\]$", "", k): v for k, v in ruled_out.items()}
    roles = find_roles(first, header, given, max_missing=choices.max_missing, ruled_out=ruled_out)
    streams = _streams(first, roles, members[0], choices)
    notes = [f"format: {fmt}, {'with' if header else 'without'} a header line"]
    if sniffed.separator not in (None, ",") or sniffed.decimal != ".":
        notes.append(f"separator {sniffed.separator!r}, decimal mark {sniffed.decimal!r}")
    # Preamble and line terminators: each option with its evidence, in the draft too.
    notes += [f"{key} = {sniffed.lines[key]!r}: {why}" for key, why in sniffed.line_notes.items()]
    notes += roles.notes
    groups = set()
    if choices.path_pattern:
        groups = set(re.compile(compile_path_pattern(choices.path_pattern)).groupindex)
    for role in ("user", "label"):
        if role in groups and given[role]:
            message = (
                f"mudata init: --{role} {given[role]!r} and the {{{role}}} field of "
                f"--path-pattern {choices.path_pattern!r} both give the {role}; give one of them"
            )
            raise UsageError(message)
        if role in groups and getattr(roles, role):
            setattr(roles, role, None)  # the pattern gives it
    if not header and roles.label is None and "label" not in groups:
        _label_by_codes(first, roles, notes)
    path_options, path_notes, comments = _from_paths(choices, roles, members, selection, columns)
    notes += path_notes
    if roles.label:
        check_leaks(roles, first, first[roles.label])
    if features or channels:
        kind, why = ("features", "--features") if features else ("signals", "--channels")
    else:
        kind, why = _choose_kind(
            kind, first, roles, header, fmt, members[0], streams[0] if streams else None
        )
    notes.append(
        f"layout: {'raw signals' if kind == 'signals' else 'a feature table'} ({why}); --kind overrides"
    )
    column_options, chosen, column_notes = _column_options(
        kind, roles, channels or features, header, members
    )
    options = {**sniffed.options(), "members": selection.glob, **path_options, **column_options}
    rate, rate_note = (
        time_rate(first, roles.time, members[0]) if kind == "signals" and roles.time else (None, "")
    )
    if streams is not None and kind == "signals":
        draft, stream_of = streams
        rate, rate_note = _stream_rates(first, roles.time or "", members[0], draft, stream_of)
        options["streams"] = draft.option()
        bare, chosen = chosen, draft.channels(chosen)
        column_notes += draft.notes(members[0])
        comments["streams"] = (
            f"{len(draft.rows)} stream(s) in {members[0]}: {draft.how}; align = "
            f'"slowest" or "per-stream"'
        )
    # Channels need not come in threes: the names say which form a sensor, and
    # its arity (after the streams, whose channels are named per stream).
    sensors = (
        group_channels(chosen, header or streams is not None, first) if kind == "signals" else []
    )
    if streams is not None and kind == "signals" and streams[0].align != "per-stream":
        # Grouped by the columns' own names, then once per stream, named after it.
        sensors = stream_sensors(group_channels(bare, True), list(streams[0].rows))
    return Layout(
        kind,
        fmt,
        header,
        options,
        chosen,
        rate,
        notes + column_notes + (report_lines(sensors) if sensors else []),
        rate_note,
        roles,
        {**sniffed.line_notes, **comments},
        sensors,
    )


__all__ = ["USER_TOKEN", "propose_layout", "time_rate"]
