"""The annotation table of ``annotated-signals``: its options and its intervals.

Owns ``reader_options.labels`` (:class:`LabelOptions`, every key checked with
an error naming it), the reading of the table's rows as :class:`Interval`
(line, key, bounds and class code; each checked on its own), the join text of
a key value (``01`` in a file name is ``1`` in a table), and the refusal of two
intervals of one recording that share a sample. The reader that joins them to
the signal files is :mod:`mudata.readers.annotations`.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from mudata.errors import ParseError, Reason, RegistryError, excerpt
from mudata.readers._text import check_encoding, list_option, str_option, text_encoding
from mudata.records.entry import DatasetEntry

__all__ = [
    "LABEL_KEYS",
    "MAX_INTERVALS",
    "UNITS",
    "Interval",
    "LabelOptions",
    "check_overlaps",
    "field_where",
    "key_text",
    "label_options",
    "read_intervals",
]

#: Units of an interval's start and end.
UNITS = ("sample", "s", "ms", "us", "ns")
#: The keys of ``reader_options.labels``.
LABEL_KEYS = frozenset(
    {"file", "format", "separator", "header", "columns", "key", "start", "end", "label", "unit"}
    | {"first", "encoding"}
)
#: Rows of an annotation table read at most (HAPT's has 1,214).
MAX_INTERVALS = 1_000_000


@dataclass(frozen=True)
class LabelOptions:
    """The checked ``reader_options.labels`` of an entry.

    Attributes
    ----------
    file : str
        The annotation table, a member of the release (a bare file name matches it in any folder).
    fmt : {"csv", "text"}
        Comma (or ``separator``) separated, or whitespace-separated.
    separator : str
        The separator of a CSV table.
    header : bool
        Whether the first line names the columns.
    columns : dict of str to int or str
        Names used here to a 1-based column number (without a header) or to
        the header's name; a name absent here is the header's name itself.
    key : list of str
        The fields that join an interval to a recording: path groups of
        ``path_pattern`` or columns of the signal files, and columns here.
    start, end, label : str
        The columns of the interval's bounds and of its class code.
    unit : {"sample", "s", "ms"}
        Sample indices (inclusive at both ends) or times of ``time_col``
        (``start <= t < end``).
    first : int
        The index of a recording's first sample (``unit = "sample"``): 1 or 0.
    encoding : str
        The table's text encoding.
    """

    file: str
    fmt: str
    separator: str
    header: bool
    columns: dict[str, int | str]
    key: list[str]
    start: str
    end: str
    label: str
    unit: str
    first: int
    encoding: str


@dataclass(frozen=True)
class Interval:
    """One row of the annotation table: its line, key, bounds and class code."""

    line: int
    key: tuple[str, ...]
    start: float
    end: float
    label: object


def field_where(entry: DatasetEntry, field: str) -> str:
    source = f" ({entry.source})" if entry.source else ""
    return f"invalid registry entry '{entry.name}'{source}: field 'reader_options.{field}'"


class _Fields:
    """The fields of ``reader_options.labels``, each read with an error naming it."""

    def __init__(self, entry: DatasetEntry, raw: dict[str, Any]) -> None:
        self.entry, self.raw = entry, raw
        self.sub = replace(entry, reader_options=raw)

    def fail(self, key: str, why: str) -> RegistryError:
        field = "labels" + (f".{key}" if key else "")
        return RegistryError(
            f"{field_where(self.entry, field)}: {why}", reason=Reason("invalid", field)
        )

    def text(self, key: str, default: str | None) -> str:
        try:
            value = str_option(self.sub, key, default)
        except RegistryError:
            raise self.fail(key, f"expected text, found {excerpt(self.raw[key])}") from None
        if not value:
            raise self.fail(key, "must not be empty")
        return value

    def shape(self, file: str) -> tuple[str, str, bool, dict[str, int | str]]:
        """``format``, ``separator``, ``header`` and ``columns``."""
        suffix = PurePosixPath(file).suffix.lower()
        fmt = self.text("format", "csv" if suffix in (".csv", ".tsv") else "text")
        if fmt not in ("csv", "text"):
            raise self.fail("format", f"{excerpt(fmt)} is not 'csv' or 'text'")
        separator = self.text("separator", "\t" if suffix == ".tsv" else ",")
        if len(separator) != 1 or separator in '\r\n"':
            raise self.fail("separator", f"{excerpt(separator)} is not one character")
        header = self.raw.get("header", True)
        if not isinstance(header, bool):
            raise self.fail("header", f"expected true or false, found {excerpt(header)}")
        columns = self.raw.get("columns", {})
        good = isinstance(columns, dict) and all(
            (isinstance(v, int) and not isinstance(v, bool) and v >= 1)
            or (isinstance(v, str) and v and header)
            for v in columns.values()
        )
        if not good:
            what = "column numbers (>= 1)" if not header else "column numbers or header names"
            raise self.fail(
                "columns", f"expected a table of name = {what}, found {excerpt(columns)}"
            )
        return fmt, separator, header, dict(columns)

    def names(self) -> tuple[list[str], str, str, str]:
        """``key``, ``start``, ``end`` and ``label``: one column each."""
        try:
            key = list_option(self.sub, "key", [])
        except RegistryError:
            why = f"expected a list of field names, found {excerpt(self.raw['key'])}"
            raise self.fail("key", why) from None
        if not key or len(set(key)) != len(key):
            raise self.fail("key", f"expected at least one field, each once; found {excerpt(key)}")
        start, end, label = (
            self.text("start", None),
            self.text("end", None),
            self.text("label", None),
        )
        named = [*key, start, end, label]
        if len(set(named)) != len(named):
            why = f"key, start, end and label name one column each; found {excerpt(named)}"
            raise self.fail("", why)
        return key, start, end, label

    def unit(self) -> tuple[str, int]:
        """``unit`` and ``first``."""
        unit = self.text("unit", "sample")
        if unit not in UNITS:
            raise self.fail("unit", f"{excerpt(unit)} is not one of {list(UNITS)}")
        first = self.raw.get("first", 1)
        if not isinstance(first, int) or isinstance(first, bool) or first not in (0, 1):
            why = f"the index of the first sample is 0 or 1, found {excerpt(first)}"
            raise self.fail("first", why)
        if unit != "sample" and "first" in self.raw:
            why = "only for unit = 'sample' (times are on the clock of time_col)"
            raise self.fail("first", why)
        return unit, first


def label_options(entry: DatasetEntry) -> LabelOptions:
    """``reader_options.labels``, checked: every key known, each of its type.

    Raises
    ------
    RegistryError
        A missing or unknown key, or a value of the wrong type, naming the field.
    """
    raw = entry.reader_options.get("labels")
    if not isinstance(raw, dict):
        message = (
            f"{field_where(entry, 'labels')}: reader 'annotated-signals' needs a table "
            f"labels = {{ file, key, start, end, label, unit }}; found {excerpt(raw)}"
        )
        raise RegistryError(message, reason=Reason("missing", "labels"))
    fields = _Fields(entry, raw)
    unknown = sorted(set(raw) - LABEL_KEYS)
    if unknown:
        raise fields.fail(
            unknown[0], f"not a key of labels; its keys: {', '.join(sorted(LABEL_KEYS))}"
        )
    for required in ("file", "key", "start", "end", "label"):
        if required not in raw:
            raise fields.fail(required, "missing (labels needs file, key, start, end and label)")
    file = fields.text("file", None)
    fmt, separator, header, columns = fields.shape(file)
    key, start, end, label = fields.names()
    unit, first = fields.unit()
    absent = [n for n in [*key, start, end, label] if n not in columns]
    if not header and absent:
        why = f"a table without a header needs the column number of {excerpt(absent)}"
        raise fields.fail("columns", why)
    encoding = text_encoding(fields.sub)
    return LabelOptions(
        file, fmt, separator, header, columns, key, start, end, label, unit, first, encoding
    )


def _rows(text: str, options: LabelOptions) -> list[tuple[int, list[str]]]:
    """The non-blank lines of the table as (line number, fields)."""
    if options.fmt == "csv":
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=options.separator)
        rows = []
        for fields in reader:
            if any(f.strip() for f in fields):
                rows.append((reader.line_num, [f.strip() for f in fields]))
        return rows
    return [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _positions(
    options: LabelOptions, rows: list[tuple[int, list[str]]], file: str
) -> dict[str, int]:
    """The 0-based field of each name the reader uses."""
    names = [*options.key, options.start, options.end, options.label]
    if not options.header:
        return {n: int(options.columns[n]) - 1 for n in names}
    if not rows:
        message = f"{file}: the annotation table is empty; its header line names {excerpt(names)}"
        raise ParseError(message, reason=Reason("empty", "labels"))
    fields = rows[0][1]
    positions = {}
    for name in names:
        column = str(options.columns.get(name, name))
        if column not in fields:
            message = (
                f"{file}, line {rows[0][0]}: no column {column!r} in the header {excerpt(fields)}"
            )
            raise ParseError(message, reason=Reason("absent", "labels"))
        positions[name] = fields.index(column)
    return positions


def key_text(value: object) -> str:
    """A key value as text that joins ``01`` (a file name) to ``1`` (a table)."""
    text = str(value).strip()
    if re.fullmatch(r"[+-]?\d+(\.0*)?", text):
        return str(int(float(text)))
    return text


def _bound(text: str, what: str, line: str, unit: str) -> float:
    try:
        value = float(text)
    except ValueError:
        message = f"{line}: {what} {excerpt(text)} is not a number"
        raise ParseError(message, reason=Reason("unreadable", "labels")) from None
    if not np.isfinite(value):
        message = f"{line}: {what} {excerpt(text)} is not a finite number"
        raise ParseError(message, reason=Reason("unreadable", "labels"))
    if unit == "sample" and value != int(value):
        message = f"{line}: {what} {excerpt(text)} is not a whole sample index (unit = 'sample')"
        raise ParseError(message, reason=Reason("unreadable", "labels"))
    if value < 0:
        message = f"{line}: {what} {excerpt(text)} is negative"
        raise ParseError(message, reason=Reason("unreadable", "labels"))
    return value


def read_intervals(data: bytes, options: LabelOptions) -> list[Interval]:
    """The intervals of an annotation table, each checked on its own.

    Raises
    ------
    ParseError
        A line with too few fields, a bound that is not a number (or not a whole
        index for ``unit = "sample"``), negative, or an end before its start;
        file and line named.
    """
    check_encoding(data, options.file, options.encoding)
    rows = _rows(data.decode(options.encoding).lstrip("\ufeff"), options)
    positions = _positions(options, rows, options.file)
    body = rows[1:] if options.header else rows
    if len(body) > MAX_INTERVALS:
        message = f"{options.file}: {len(body):,} intervals, more than the {MAX_INTERVALS:,} read"
        raise ParseError(message, reason=Reason("invalid", "labels"))
    need = max(positions.values()) + 1
    intervals = []
    for number, fields in body:
        line = f"{options.file}, line {number}"
        if len(fields) < need:
            message = f"{line}: {len(fields)} field(s), {need} expected ({excerpt(fields)})"
            raise ParseError(message, reason=Reason("unreadable", "labels"))
        start = _bound(fields[positions[options.start]], "start", line, options.unit)
        end = _bound(fields[positions[options.end]], "end", line, options.unit)
        if end < start or (options.unit != "sample" and end == start):
            message = f"{line}: the interval ends ({fields[positions[options.end]]}) before it starts ({fields[positions[options.start]]})"
            if end == start:
                message = f"{line}: the interval [{start:g}, {end:g}) holds no time (start = end)"
            raise ParseError(message, reason=Reason("invalid", "labels"))
        if options.unit == "sample" and start < options.first:
            message = f"{line}: start {start:g} is before the first sample, index {options.first} (labels.first)"
            raise ParseError(message, reason=Reason("invalid", "labels.first"))
        code = fields[positions[options.label]]
        label: object = int(code) if re.fullmatch(r"[+-]?\d+", code) else code
        key = tuple(key_text(fields[positions[k]]) for k in options.key)
        intervals.append(Interval(number, key, start, end, label))
    if not intervals:
        message = f"{options.file}: the annotation table holds no interval"
        raise ParseError(message, reason=Reason("empty", "labels"))
    return intervals


def check_overlaps(
    intervals: Sequence[Interval], file: str, unit: str, names: Sequence[str] = ()
) -> None:
    """Two intervals of one recording that share a sample (or a time) are an error naming both.

    Sample intervals are closed (``[start, end]``); time intervals half-open
    (``[start, end)``), so one may start where the previous ends. ``names``
    names the key's fields in the message.
    """
    by_key: dict[tuple[str, ...], list[Interval]] = {}
    for interval in intervals:
        by_key.setdefault(interval.key, []).append(interval)
    for key, group in by_key.items():
        group = sorted(group, key=lambda i: (i.start, i.end, i.line))
        widest = group[0]
        for interval in group[1:]:
            overlaps = (
                interval.start <= widest.end if unit == "sample" else interval.start < widest.end
            )
            if overlaps:
                a, b = sorted((widest, interval), key=lambda i: i.line)
                message = (
                    f"{file}: the intervals of line {a.line} ([{a.start:g}, {a.end:g}], class "
                    f"{a.label}) and line {b.line} ([{b.start:g}, {b.end:g}], class {b.label}) "
                    f"overlap in the recording {dict(zip(names, key, strict=False)) or key}; a "
                    f"sample has one "
                    f"label: correct one of them"
                )
                raise ParseError(message, reason=Reason("invalid", "labels"))
            if interval.end > widest.end:
                widest = interval
