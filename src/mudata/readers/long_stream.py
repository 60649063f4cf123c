"""The ``long-signals`` reader in chunks: :func:`stream_long_signals`.

Its chunks laid end to end are :func:`mudata.readers.tabular.read_long_signals`'s
table, bit for bit, with the same checks and the same errors. Each member of
delimited text is read in blocks of whole lines, more than once:

1. its bytes are checked as text (encoding, quotes, line ends, field counts),
   block by block, with the line and byte offsets of the file;
2. every block is parsed as the whole reader parses the file, and the type
   pandas gives each column in each block is tallied: the whole file's type
   follows from them (ints and floats make floats; numbers and text make text);
3. once every member passed 1 and 2 (the whole reader parses every member
   before it checks a value, so its errors about a member's columns come
   first), each member is parsed again with its columns' types fixed, and
   cut into chunks of rows. What the whole reader computes over a file
   (recordings and segments numbered, the last time of each recording,
   repeated times, user ids that would merge) is carried from block to block.

A value error found in a block is held until the member ends: the whole
reader checks the users of the whole file before its times, and its times
before its channels, so a later block may hold the error it gives.

A member is read whole instead (under :func:`mudata.config.max_read_bytes`,
logged at info) where reading it in parts could read it differently:
Parquet and MATLAB files, another encoding than UTF-8, quotes (a quoted field
may hold a line break), NUL bytes, lone carriage returns, a blank first line
before a header, a line with more fields than the first in a file without a
header, and column types that do not combine as above.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, TypeAlias

import numpy as np
import pandas as pd

from mudata.errors import LimitError, ParseError, excerpt
from mudata.readers._text import (
    check_encoding,
    delimited_field_counts,
    first_non_numeric,
    text_encoding,
    whitespace_field_counts,
)
from mudata.readers.base import SignalTable
from mudata.readers.column_values import numeric_columns, text_users
from mudata.readers.lines import line_options
from mudata.readers.long_options import LongOptions, long_options, path_groups
from mudata.readers.members import check_columns, matching_members, parse_member
from mudata.readers.sources import Sources
from mudata.readers.stream import CHUNK_BYTES, SignalStream, line_blocks
from mudata.readers.tabular import read_long_signals
from mudata.readers.time_columns import check_time_blank, time_goes_back, time_text
from mudata.readers.times import FirstTime, check_offsets
from mudata.records.entry import DatasetEntry

log = logging.getLogger(__name__)

#: A column's type as pandas takes it (``dtype=``) and gives it (``.dtype``).
_ColumnDtype: TypeAlias = "type | np.dtype[Any] | pd.api.extensions.ExtensionDtype"

#: The order in which the whole reader checks a file's values: an error of an
#: earlier kind anywhere in the file is the one it gives (channels follow, in order).
USER_BLANK, USER_MERGE, TIME_TEXT, TIME_OFFSETS, TIME_BLANK, TIME_BACK, CHANNEL = range(7)


@dataclass
class _Plan:
    """How one member is read (steps 1 and 2 of the module docstring)."""

    member: str
    whole: str | None = None  # why it is read whole; None when read in blocks
    dtypes: dict[str, _ColumnDtype] = field(default_factory=dict)
    time_numeric: bool | None = None  # every time value a number (text time columns)
    label_sample: pd.Series | None = None  # the dtype its label column gets
    #: The first time value that is no number, and its row, when numbers come before it.
    time_stray: tuple[int, object] | None = None


@dataclass
class _Reading:
    """What a stream reads: the entry's options, resolved once."""

    entry: DatasetEntry
    sources: Sources
    options: LongOptions
    fmt: str
    header: bool
    encoding: str
    chunk_bytes: int

    @property
    def text_columns(self) -> list[str]:
        return [self.options.user_col] if self.options.user_col else []

    def parse(
        self, data: bytes, member: str, dtypes: dict[str, _ColumnDtype] | None
    ) -> pd.DataFrame:
        table = parse_member(
            data,
            member,
            self.fmt,
            self.entry,
            self.text_columns,
            self.sources.max_expansion,
            dtypes=dtypes,
        )
        check_columns(table, member, self.options.columns)
        return table

    def whole(self, member: str) -> pd.DataFrame:
        return self.parse(self.sources.read_decoded(member), member, None)


def _kind(dtype: _ColumnDtype) -> str:
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if dtype == np.int64 or dtype == np.float64:
        return str(dtype)
    if pd.api.types.is_string_dtype(dtype) and dtype is not np.dtype(object):
        return "str"
    return "other"


def _combined(kinds: set[str]) -> _ColumnDtype | None:
    """The whole file's dtype of a column whose blocks have ``kinds``; None when unknown."""
    if len(kinds) == 1 and next(iter(kinds)) in ("int64", "float64", "bool"):
        return {"int64": np.int64, "float64": np.float64, "bool": bool}[next(iter(kinds))]
    if kinds == {"int64", "float64"}:
        return np.float64  # pandas reads every value of the column as a float
    if "str" in kinds and kinds <= {"str", "int64", "float64"}:
        return str  # one value that is no number makes the whole column text
    return None


def _header_line(block: bytes) -> bytes:
    end = block.find(b"\n")
    return block if end < 0 else block[: end + 1]


def _text_shape(fh: IO[bytes], reading: _Reading, member: str) -> tuple[str | None, int]:
    """Step 1: the text checked block by block; why it must be read whole, and its size."""
    lines = offset = 0
    why = None
    width = None
    for block in line_blocks(
        fh, reading.chunk_bytes, max_line=reading.sources.max_read, what=f"member {excerpt(member)}"
    ):
        check_encoding(block, member, reading.encoding, line_shift=lines, offset_shift=offset)
        if why is None:
            if b'"' in block:
                why = "it holds quotes (a quoted field may hold a line break)"
            elif b"\0" in block:
                why = "it holds NUL bytes"
            elif block.count(b"\r") != block.count(b"\r\n"):
                why = "it ends lines with a lone carriage return"
            elif reading.header and not offset and not _header_line(block).strip():
                why = "its first line is blank"
            elif not reading.header:
                counts = (
                    whitespace_field_counts(block)
                    if reading.fmt == "text" and not reading.entry.reader_options.get("separator")
                    else delimited_field_counts(block, _separator(reading).encode())
                )
                counts = counts[counts > 0]
                if counts.size:
                    width = int(counts[0]) if width is None else width
                    if int(counts.max()) > width:
                        why = "a line has more fields than the first (no header)"
        lines += block.count(b"\n")
        offset += len(block)
    return why, offset


def _separator(reading: _Reading) -> str:
    return str(reading.entry.reader_options.get("separator") or ",")


def _blocks(fh: IO[bytes], reading: _Reading, member: str) -> Iterator[tuple[bytes, int]]:
    """Each block of lines with the header line before it, and the lines of the file before it."""
    header = b""
    lines = 0
    first = True
    for block in line_blocks(
        fh, reading.chunk_bytes, max_line=reading.sources.max_read, what=f"member {excerpt(member)}"
    ):
        body = block
        if first and reading.header:
            header = _header_line(block)
            body = block[len(header) :]
            lines = header.count(b"\n")
        first = False
        yield header + body, lines
        lines += body.count(b"\n")
    if first:
        yield b"", 0  # an empty file: the whole reader's error


def _label_sample(
    reading: _Reading, dtype: _ColumnDtype | None, has_value: bool, groups: bool
) -> pd.Series:
    """A one-row label column of the dtype the member's frame gets (for the dtype of the concatenation)."""
    if groups:
        values: np.ndarray = np.full(1, "x", dtype=object)
    elif not has_value:
        values = pd.Series([np.nan], dtype=dtype if dtype is not None else object).to_numpy()
    else:
        examples: dict[_ColumnDtype | None, object] = {np.int64: 0, np.float64: 0.0, bool: True}
        example = examples.get(dtype, "x")
        values = pd.Series([example], dtype=dtype).to_numpy()
    return pd.DataFrame({"label": values})["label"]


def _plan(reading: _Reading, member: str) -> _Plan:
    """Steps 1 and 2 for one member: its errors about text and columns, and how to read it."""
    options = reading.options
    groups = options.label_col is None
    if reading.fmt in ("parquet", "mat"):
        return _whole_plan(reading, member, f"it is {reading.fmt}", reading.whole(member), groups)
    if line_options(reading.entry).preamble:
        # Its first lines are not the header and the data: a block read alone cannot tell.
        why = "its data start after a preamble (skip_lines, comment or header_line)"
        with reading.sources.open_decoded(member) as fh:
            size = fh.seek(0, 2)
        return _whole_plan(reading, member, why, _whole_capped(reading, member, why, size), groups)
    if reading.encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
        # Lines end at a newline byte in UTF-8 only (not in UTF-16, say).
        why = f"it is in {reading.encoding}, not UTF-8"
        return _whole_plan(reading, member, why, reading.whole(member), groups)
    with reading.sources.open_decoded(member) as fh:
        shape, size = _text_shape(fh, reading, member)
        if shape is not None:
            return _whole_plan(
                reading, member, shape, _whole_capped(reading, member, shape, size), groups
            )
        fh.seek(0)
        kinds: dict[str, set[str]] = {c: set() for c in options.columns}
        numeric = True
        stray: tuple[int, object] | None = None
        rows = 0
        has_label = False
        for data, lines in _blocks(fh, reading, member):
            try:
                table = reading.parse(data, member, None)
            except ParseError as exc:
                # A block read alone may fail where the whole file does not
                # (or fail naming its own line): the whole read decides.
                why = "a block of it cannot be read alone"
                if size > reading.sources.max_read:
                    message = (
                        f"{exc}; in the part of the file after its line {lines:,} (the file "
                        f"holds {size:,} bytes, more than the {reading.sources.max_read:,} read "
                        f"whole at most, so a line named here is counted from that part)"
                    )
                    raise ParseError(message, reason=exc.reason) from None
                return _whole_plan(reading, member, why, reading.whole(member), groups)
            if not isinstance(table.index, pd.RangeIndex):
                why = "a line has one more field than the header"
                return _whole_plan(
                    reading, member, why, _whole_capped(reading, member, why, size), groups
                )
            if not len(table):
                continue
            for column in options.columns:
                kinds[column].add(_kind(table[column].dtype))
            if options.time_col and _kind(table[options.time_col].dtype) in ("str", "other"):
                bad = first_non_numeric(table[options.time_col])
                if numeric and bad is not None and rows + bad > 0:
                    stray = (rows + bad, table[options.time_col].iloc[bad])
                numeric = numeric and bad is None
            if options.label_col:
                has_label = has_label or bool(table[options.label_col].notna().any())
            rows += len(table)
    dtypes: dict[str, _ColumnDtype] = {}
    for column, seen in kinds.items():
        if not seen or column == options.user_col:
            continue
        dtype = _combined(seen)
        if dtype is None:
            why = f"column {column!r} has types {sorted(seen)} in different parts"
            return _whole_plan(
                reading, member, why, _whole_capped(reading, member, why, size), groups
            )
        dtypes[column] = dtype
    sample = _label_sample(reading, dtypes.get(options.label_col or ""), has_label, groups)
    return _Plan(member, None, dtypes, numeric, sample, stray)


def _whole_capped(reading: _Reading, member: str, why: str, size: int) -> pd.DataFrame:
    """The member read whole, or an error saying why it had to be and that it is too large."""
    cap = reading.sources.max_read
    if size > cap:
        message = (
            f"{member}: must be read whole, since {why}, and holds {size:,} bytes, "
            f"more than the {cap:,} read whole at most; raise MUDATA_MAX_READ_BYTES if it is "
            f"trusted, or rewrite it as plain CSV without quotes"
        )
        raise LimitError(message)
    return reading.whole(member)


def _whole_plan(
    reading: _Reading, member: str, why: str, table: pd.DataFrame, groups: bool
) -> _Plan:
    log.info("%s: read whole, not in parts: %s", member, why)
    label = reading.options.label_col
    if label is None:
        sample = _label_sample(reading, None, True, groups)
    else:
        column = pd.DataFrame({"label": table[label].to_numpy()})["label"]
        sample = column[column.notna()].iloc[:1] if column.notna().any() else column.iloc[:1]
    return _Plan(member, why, {}, None, sample)


@dataclass
class _Carried:
    """What the whole table numbers across members: recordings and segments."""

    recordings: int = 0  # recordings of the members before
    segment: int = 0  # the last segment's number
    rows: int = 0  # rows of the table so far


class _Member:
    """One member's parts checked and numbered as :func:`read_long_signals` does the whole file."""

    def __init__(
        self,
        reading: _Reading,
        plan: _Plan,
        number: int,
        carried: _Carried,
        label: _ColumnDtype,
    ) -> None:
        self.reading, self.plan, self.number, self.carried = reading, plan, number, carried
        self.label_dtype: Any = label
        self.member = plan.member
        self.groups = path_groups(reading.options.pattern, self.member)
        self.rows = 0
        self.users: dict[str, object] = {}
        self.recordings: dict[str, int] = {}
        self.last: dict[int, tuple[float, int]] = {}  # recording -> (time, row) of its last sample
        self.first_time: FirstTime | None = None  # the file's first date/time, offset or not
        self.repeats = 0
        self.error: tuple[int, ParseError] | None = None
        self.back: tuple[int, int, int] | None = None  # (recording, row, row before)
        self.last_segment: np.ndarray | None = None

    @property
    def worst(self) -> float:
        """The earliest kind of error found so far (inf: none)."""
        error = self.error[0] if self.error is not None else math.inf
        return min(error, TIME_BACK) if self.back is not None else error

    def _fail(self, kind: int, exc: ParseError) -> None:
        if self.error is None or kind < self.error[0]:
            self.error = (kind, exc)

    def part(self, table: pd.DataFrame) -> pd.DataFrame | None:
        """The rows of one part, numbered; None once the file has an error (raised by :meth:`end`)."""
        options, member = self.reading.options, self.member
        n, shift = len(table), self.rows
        self.rows += n
        users = self._users(table, n, shift)
        if users is None:
            return None
        local = self._recordings(table, users, n)
        if options.time_col and options.time_order == "strict":
            self._time(table, local, shift)
        channels: dict[str, pd.Series] = {}
        for i, column in enumerate(options.channels):
            if CHANNEL + i >= self.worst:
                break
            try:
                channels.update(numeric_columns(table, [column], member, row_shift=shift))
            except ParseError as exc:
                self._fail(CHANNEL + i, exc)
        if self.worst < math.inf:
            return None
        labels = (
            table[options.label_col].to_numpy()
            if options.label_col
            else np.full(n, self.groups["label"], dtype=object)
        )
        recording = local + self.carried.recordings
        frame = pd.DataFrame({"userid": users, "label": labels})
        frame["segment"] = self._segments(table, recording, n)
        frame["recording"] = recording.astype(np.int64)
        for column in options.channels:
            frame[column] = channels[column].to_numpy()
        if frame["label"].dtype != self.label_dtype:
            frame["label"] = frame["label"].astype(self.label_dtype)
        return frame

    def _users(self, table: pd.DataFrame, n: int, shift: int) -> np.ndarray | None:
        column = self.reading.options.user_col
        if not column:
            return np.full(n, self.groups["user"], dtype=object)
        values = table[column]
        try:
            return text_users(values, self.member, column, row_shift=shift, seen=self.users)
        except ParseError as exc:
            blank = values.isna().any() or values.astype(str).str.strip().eq("").any()
            self._fail(USER_BLANK if blank else USER_MERGE, exc)
            return None

    def _recordings(self, table: pd.DataFrame, users: np.ndarray, n: int) -> np.ndarray:
        """Each row's recording, numbered in the order of first appearance in the file."""
        options = self.reading.options
        recording = pd.Series(users, dtype=object).astype(str)
        if "recording" in self.groups:
            recording = recording + "\x1f" + self.groups["recording"]
        if options.recording_col:
            recording = recording + "\x1f" + table[options.recording_col].astype(str).to_numpy()
        codes, uniques = pd.factorize(recording)
        known = self.recordings
        mapped = np.array([known.setdefault(u, len(known)) for u in uniques], dtype=np.int64)
        return mapped[codes] if n else np.zeros(0, dtype=np.int64)

    def _time(self, table: pd.DataFrame, local: np.ndarray, shift: int) -> None:
        """:func:`check_time` over the parts: the last time of each recording is carried."""
        if self.worst <= TIME_TEXT:
            return
        column = self.reading.options.time_col
        assert column is not None
        values = table[column]
        try:
            time, parsed = time_text(
                values,
                self.member,
                column,
                row_shift=shift,
                numeric=self.plan.time_numeric,
                stray=self.plan.time_stray,
            )
        except ParseError as exc:
            self._fail(TIME_TEXT, exc)
            return
        if self.worst <= TIME_OFFSETS:
            return  # a text error of a later part still wins: it was checked above
        if parsed is not None:
            try:
                self.first_time = check_offsets(
                    parsed, values, self.member, column, row_shift=shift, first=self.first_time
                )
            except ParseError as exc:
                self._fail(TIME_OFFSETS, exc)
                return
        try:
            check_time_blank(time, self.member, column, shift)
        except ParseError as exc:
            self._fail(TIME_BLANK, exc)
            return
        if self.worst < TIME_BACK or not time.size:
            return
        order = np.lexsort((np.arange(time.size), local))
        rec, t, rows = local[order], time[order], order + shift
        first = np.r_[True, rec[1:] != rec[:-1]]
        before_t = np.r_[np.nan, t[:-1]]
        before_row = np.r_[-1, rows[:-1]]
        valid = ~first
        for i in np.flatnonzero(first):
            if int(rec[i]) in self.last:
                before_t[i], before_row[i] = self.last[int(rec[i])]
                valid[i] = True
        step = t - before_t
        self.repeats += int(np.count_nonzero(valid & (step == 0)))
        back = np.flatnonzero(valid & (step < 0))
        if back.size:
            i = back[0]
            found = (int(rec[i]), int(rows[i]), int(before_row[i]))
            if self.back is None or found < self.back:
                self.back = found
        last = np.r_[first[1:], True]
        for i in np.flatnonzero(last):
            self.last[int(rec[i])] = (float(t[i]), int(rows[i]))

    def _segments(self, table: pd.DataFrame, recording: np.ndarray, n: int) -> np.ndarray:
        """Segment numbers: a new one where the segment column (or the recording) changes."""
        column = self.reading.options.segment_col
        values = table[column].to_numpy() if column else recording
        change = np.zeros(n, dtype=bool)
        change[1:] = values[1:] != values[:-1]
        if n and self.carried.rows:
            # A new file is a new segment; inside one, compare with the last row of the part before.
            if self.last_segment is None:
                change[0] = True
            else:
                pair = np.concatenate([self.last_segment, values[:1]])
                change[0] = bool(pair[1:] != pair[:1])
        if n:
            self.last_segment = values[-1:]
        segments = self.carried.segment + np.cumsum(change).astype(np.int64)
        if n:
            self.carried.segment = int(segments[-1])
        self.carried.rows += n
        return segments

    def end(self) -> None:
        """Raise the error the whole reader gives for this file, if any; count its recordings."""
        if self.error is not None and (self.back is None or self.error[0] < TIME_BACK):
            raise self.error[1]
        if self.back is not None:
            column = self.reading.options.time_col
            assert column is not None
            _, row, before = self.back
            # The whole reader's line numbers: one header line unless header = false.
            header = int(self.reading.entry.reader_options.get("header", True) is not False)
            raise time_goes_back(self.member, column, row, before, header, len(self.recordings))
        self.carried.recordings += len(self.recordings)


def _chunks(reading: _Reading, members: list[str], attrs: dict) -> Iterator[SignalTable]:
    plans = [_plan(reading, member) for member in members]
    samples = [p.label_sample for p in plans if p.label_sample is not None]
    label = pd.concat(samples, ignore_index=True).dtype
    carried = _Carried()
    repeats = {}
    for number, plan in enumerate(plans):
        state = _Member(reading, plan, number, carried, label)
        for table in _tables(reading, plan):
            frame = state.part(table)
            if frame is not None and len(frame):
                yield SignalTable(frame)
        state.end()
        repeats[plan.member] = state.repeats
    repeated = {m: n for m, n in repeats.items() if n}
    if repeated:
        log.info(
            "%s: %d samples repeat the time of the previous one (kept in file order): %s",
            reading.entry.name,
            sum(repeated.values()),
            excerpt(repeated),
        )
    attrs["time_repeats"] = repeated


def _tables(reading: _Reading, plan: _Plan) -> Iterator[pd.DataFrame]:
    """The member's parts, typed as the whole file is (or the whole file, as one part)."""
    if plan.whole is not None:
        yield reading.whole(plan.member)
        return
    with reading.sources.open_decoded(plan.member) as fh:
        for data, _ in _blocks(fh, reading, plan.member):
            yield reading.parse(data, plan.member, plan.dtypes)


def _whole_streams(entry: DatasetEntry, sources: Sources, attrs: dict) -> Iterator[SignalTable]:
    log.info("%s: read whole, not in parts: its files hold several streams", entry.name)
    table = read_long_signals(entry, sources)
    attrs.update(table.frame.attrs)
    yield table


def stream_long_signals(
    entry: DatasetEntry, sources: Sources, *, chunk_bytes: int = CHUNK_BYTES
) -> SignalStream:
    """:func:`~mudata.readers.tabular.read_long_signals`'s table in chunks of about ``chunk_bytes`` of text.

    The options, checks and errors are the whole reader's (see the module
    docstring for the members read whole). The members are checked and
    typed before the first chunk is given, so errors about their text or
    columns come first, as in the whole reader.

    Parameters
    ----------
    entry : DatasetEntry
        As for :func:`~mudata.readers.tabular.read_long_signals`.
    sources : Sources
        The verified release.
    chunk_bytes : int
        Bytes of text parsed at a time (whole lines: a little more).

    Returns
    -------
    SignalStream
        ``attrs["time_repeats"]`` once the chunks are exhausted.
    """
    options = long_options(entry)
    if entry.reader_options.get("streams") is not None:
        # Streams are aligned over a whole file (the slowest one's times): read whole.
        whole: dict = {}
        return SignalStream(_whole_streams(entry, sources, whole), whole)
    fmt, members = matching_members(entry, sources)
    header = fmt != "mat" and entry.reader_options.get("header", True) is not False
    reading = _Reading(entry, sources, options, fmt, header, text_encoding(entry), chunk_bytes)
    attrs: dict = {}
    return SignalStream(_chunks(reading, members, attrs), attrs)


__all__ = ["stream_long_signals"]
