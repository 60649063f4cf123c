"""Reader for HAR70+ (UCI id 780): ``har70.zip`` with one CSV per subject.

Each ``<subject>.csv`` (``501.csv`` ... ``518.csv``) has the header
``timestamp,back_x,back_y,back_z,thigh_x,thigh_y,thigh_z,label`` and one row per
50 Hz sample. The release has no missing values, so the reader is strict: a
row with too many or too few fields, an empty field or a value that is not a
number raises :class:`~mudata.errors.ParseError` naming the file and its line.
Nothing is silently dropped. Blank lines (e.g. a trailing one) are skipped;
CRLF and LF line ends are both accepted.

:func:`stream_har70` reads the same files in blocks of lines, for releases
larger than memory; its chunks laid end to end are :func:`read_har70`'s table.

Plain files are parsed with Arrow's CSV reader; whatever it refuses, or
reads as NaN or infinity, is parsed again by the strict pandas path, whose
errors name the line. The outcome, a table or an error, is the one the strict
path alone gives (tests/mudata/readers/test_signal_readers.py checks them against each other).
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import IO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from mudata.config import READ_ENV, max_read_bytes
from mudata.errors import LimitError, MissingFileError, ParseError, excerpt
from mudata.readers._text import (
    check_encoding,
    csv_line_of_row,
    delimited_field_counts,
    first_non_numeric,
    list_option,
    str_option,
    text_encoding,
)
from mudata.readers.base import SignalTable
from mudata.readers.sources import Sources
from mudata.readers.stream import CHUNK_BYTES, SignalStream, line_blocks
from mudata.records.entry import DatasetEntry

CHANNELS = ("back_x", "back_y", "back_z", "thigh_x", "thigh_y", "thigh_z")
HEADER = ("timestamp", *CHANNELS, "label")


def _is_resource_fork(name: str) -> bool:
    # Archives made on macOS carry __MACOSX/._501.csv shadows of the real files.
    path = PurePosixPath(name)
    return path.parts[0] == "__MACOSX" or path.name.startswith("._")


def _first_line(data: bytes) -> bytes:
    """The bytes before the first newline (without copying the rest of the file)."""
    end = data.find(b"\n")
    return data if end < 0 else data[:end]


def _header_names(data: bytes, member: str, wanted: list[str], encoding: str) -> list[str]:
    """The header's column names (stripped); a missing wanted column is a ParseError."""
    header = _first_line(data).decode(encoding).removeprefix("\ufeff").strip()
    names = [h.strip() for h in header.split(",")]
    missing = [c for c in wanted if c not in names]
    if missing:
        message = f"{member}: header lacks columns {excerpt(missing)}; found {excerpt(names)}"
        raise ParseError(message)
    return names


def _plain(data: bytes, names: list[str], encoding: str) -> bool:
    """Whether Arrow's CSV reader and the strict pandas path must agree on ``data``.

    Arrow's reader (quoting off) splits lines and fields exactly as the field
    count of the strict path does, except where a file holds quotes, NUL
    bytes or a lone carriage return (a line end to Arrow, not to the count),
    a header whose names carry spaces or repeat, or another encoding than
    UTF-8. Such files, rare in a release, take the strict path.
    """
    first = _first_line(data).removeprefix(b"\xef\xbb\xbf").rstrip(b"\r").decode(encoding)
    return (
        encoding.lower().replace("_", "-") in ("utf-8", "utf8")
        and first.split(",") == names
        and len(set(names)) == len(names)
        and b'"' not in data
        and b"\0" not in data
        and (b"\r" not in data or data.count(b"\r") == data.count(b"\r\n"))
    )


def _parse_arrow(data: bytes, wanted: list[str]) -> dict[str, np.ndarray] | None:
    """The wanted columns as float64 with Arrow's CSV reader; None when it refuses the file.

    Arrow checks the field count of every line and the number syntax of every
    wanted value. It has no missing-value markers here: an empty or ``NA``
    field is a conversion error, and a NaN or infinite value read as a
    number sends the file to the strict path, which judges them as before.
    """
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data),
            # One block for the whole file: each column comes back as one chunk, which
            # numpy then views without a copy.
            read_options=pacsv.ReadOptions(
                use_threads=False, block_size=min(max(len(data) + 1, 1 << 20), 1 << 30)
            ),
            parse_options=pacsv.ParseOptions(quote_char=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(
                include_columns=wanted,
                column_types=dict.fromkeys(wanted, pa.float64()),
                null_values=[],
                strings_can_be_null=False,
            ),
        )
    except pa.ArrowException:
        return None
    columns = {}
    for name in wanted:
        values = table.column(name).to_numpy()
        if not np.isfinite(values).all():
            return None
        columns[name] = values
    return columns


def _parse_strict(
    data: bytes, member: str, names: list[str], wanted: list[str], encoding: str, shift: int = 0
) -> dict[str, np.ndarray]:
    """The wanted columns with pandas' parser, every malformed line named with its number.

    ``shift`` is added to the line numbers of ``data`` to give the file's.
    """
    # The tokenizer fills a short row with NaN without complaint: count the
    # fields of every line first (vectorised over the bytes).
    counts = delimited_field_counts(data)
    bad = np.flatnonzero((counts != len(names)) & (counts != 0))
    if bad.size:
        message = (
            f"{member}, line {int(bad[0]) + 1 + shift}: expected {len(names)} comma-separated "
            f"fields, found {int(counts[bad[0]])} ({bad.size} such line(s) up to line "
            f"{counts.size + shift})"
        )
        raise ParseError(message)
    try:
        table = pd.read_csv(
            io.BytesIO(data),
            engine="c",
            usecols=wanted,
            dtype=dict.fromkeys(wanted, np.float64),
            encoding=encoding,
        )
    except ValueError:
        # Some value is not a number: find the first one, with its line.
        text = pd.read_csv(
            io.BytesIO(data),
            engine="c",
            usecols=wanted,
            dtype=str,
            keep_default_na=False,
            encoding=encoding,
        )
        for column in wanted:
            row = first_non_numeric(text[column].replace("", "x"))
            if row is not None:
                line = csv_line_of_row(data, row) + shift
                message = f"{member}, line {line}: column '{column}' is not a number: {excerpt(text[column].iloc[row])}"
                raise ParseError(message) from None
        message = f"{member}: a value is not a number"
        raise ParseError(message) from None
    return {column: table[column].to_numpy() for column in wanted}


def _read_subject(
    data: bytes,
    member: str,
    channels: list[str],
    label: str,
    encoding: str = "utf-8",
    *,
    shift: tuple[int, int] = (0, 0),
) -> dict[str, np.ndarray]:
    """Parse one subject's CSV strictly; errors name ``member`` and the line.

    ``data`` is the file, or its header line followed by a part of its lines:
    ``shift`` (lines, bytes) turns the line numbers and byte offsets of
    ``data`` into the file's. Returns the channels (float64) and ``label``
    (int64 codes) by name.
    """
    lines, offset = shift
    check_encoding(data, member, encoding, line_shift=lines, offset_shift=offset)
    wanted = [*channels, label]
    names = _header_names(data, member, wanted, encoding)
    columns = _parse_arrow(data, wanted) if _plain(data, names, encoding) else None
    if columns is None:
        columns = _parse_strict(data, member, names, wanted, encoding, lines)
    for column in wanted:
        empty = np.flatnonzero(np.isnan(columns[column]))
        if empty.size:
            line = csv_line_of_row(data, int(empty[0])) + lines
            message = (
                f"{member}, line {line}: column '{column}' is empty or NaN; "
                f"the HAR70+ release has no missing values"
            )
            raise ParseError(message)
    codes = columns[label]
    # An infinite code is no class either (and has no integer to cast to).
    fractional = np.flatnonzero(~np.isfinite(codes) | (codes != np.round(codes)))
    if fractional.size:
        line = csv_line_of_row(data, int(fractional[0])) + lines
        message = f"{member}, line {line}: label must be an integer code, found {float(codes[fractional[0]])!r}"
        raise ParseError(message)
    columns[label] = codes.astype(np.int64)
    return columns


def _options(entry: DatasetEntry) -> tuple[list[str], str, str]:
    """The entry's ``channels``, ``label_column`` and ``encoding``."""
    channels = list_option(entry, "channels", list(CHANNELS))
    label = str_option(entry, "label_column", "label")
    return channels, label, text_encoding(entry)


def _subjects(entry: DatasetEntry, sources: Sources) -> list[tuple[int, str]]:
    """(subject, member) of every subject file, subjects ascending; checked as documented."""
    pattern = str_option(entry, "members", "*.csv")
    members = [n for n in sources.names(pattern) if not _is_resource_fork(n)]
    if not members:
        message = (
            f"no HAR70+ subject file matching '{pattern}' in {', '.join(map(str, sources.roots))}"
        )
        raise MissingFileError(message)
    subjects: list[tuple[int, str]] = []
    for member in members:
        stem = PurePosixPath(member).stem
        # isdecimal, not isdigit: int() refuses "²" (and runs of 4,300 digits).
        if not (stem.isdecimal() and len(stem) <= 18):
            message = f"{member}: HAR70+ subject files are named by the subject number (e.g. 501.csv); found {excerpt(stem)}"
            raise ParseError(message)
        subjects.append((int(stem), member))
    subjects.sort()
    # Counted once: a count per subject made an archive of many members quadratic.
    counts = Counter(u for u, _ in subjects)
    duplicated = sorted(u for u, n in counts.items() if n > 1)
    if duplicated:
        message = f"subjects {duplicated} appear in more than one file among {members}"
        raise ParseError(message)
    return subjects


def read_har70(entry: DatasetEntry, sources: Sources) -> SignalTable:
    """Read every subject CSV into one signal table.

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``: ``members`` (glob of the subject files, default
        ``"*.csv"``), ``channels`` (default the six of :data:`CHANNELS`),
        ``label_column`` (default ``"label"``), ``encoding`` (default ``"utf-8"``).
    sources : Sources
        The verified release.

    Returns
    -------
    SignalTable
        ``userid`` (the file stem, e.g. 501), ``label`` (int code),
        ``segment`` (one per file, 0, 1, ... in user order), then the channels;
        users ascending, samples in file order.

    Raises
    ------
    MissingFileError
        When no member matches ``members``.
    ParseError
        When a file stem is not an integer or a row is malformed (file and line named).
    """
    channels, label, encoding = _options(entry)
    subjects = _subjects(entry, sources)
    parsed = [
        _read_subject(sources.read_bytes(member), member, channels, label, encoding)
        for _, member in subjects
    ]
    lengths = [len(columns[label]) for columns in parsed]
    # Each column is copied once, from the parsed files into the table; the
    # frame is built without consolidating the columns (a second copy).
    frame = pd.DataFrame(
        {
            "userid": np.repeat(np.array([u for u, _ in subjects], dtype=np.int64), lengths),
            "label": np.concatenate([columns[label] for columns in parsed]),
            "segment": np.repeat(np.arange(len(subjects), dtype=np.int64), lengths),
            **{c: np.concatenate([columns[c] for columns in parsed]) for c in channels},
        },
        copy=False,
    )
    return SignalTable(frame)


def _is_utf8(encoding: str) -> bool:
    return encoding.lower().replace("_", "-") in ("utf-8", "utf8")


def _whole(stream: IO[bytes], member: str) -> bytes:
    """A member read in one piece, under the cap on a member read whole."""
    cap = max_read_bytes()
    data = stream.read(cap + 1)
    if len(data) > cap:
        message = (
            f"member {excerpt(member)} holds more than the cap on a member read whole, "
            f"{cap:,} bytes (${READ_ENV}); a file not in UTF-8 is parsed in one piece. "
            f"Convert it to UTF-8 to have it read in blocks, or raise the cap if it is trusted"
        )
        raise LimitError(message)
    return data


def _at_least_one(blocks: Iterator[bytes]) -> Iterator[bytes]:
    empty = True
    for block in blocks:
        empty = False
        yield block
    if empty:
        yield b""


def _subject_chunks(
    subjects: list[tuple[int, str]],
    sources: Sources,
    channels: list[str],
    label: str,
    encoding: str,
    chunk_bytes: int,
) -> Iterator[SignalTable]:
    """Each subject file's lines, a block at a time, parsed as :func:`read_har70` parses a file.

    Each block is parsed behind the file's header line, with the shift that
    keeps the line numbers and byte offsets of its errors the file's own.
    """
    for number, (user, member) in enumerate(subjects):
        with sources.open(member) as stream:
            # Blocks end at a line end, which in UTF-8 never splits a character;
            # another encoding's file is parsed in one block.
            if _is_utf8(encoding):
                blocks = line_blocks(
                    stream,
                    chunk_bytes,
                    max_line=sources.max_read,
                    what=f"member {excerpt(member)}",
                )
            else:
                blocks = iter([_whole(stream, member)])
            header = b""
            lines = offset = 0  # lines and bytes of the file before the block
            # An empty file is one empty block: its error is read_har70's.
            for block in _at_least_one(blocks):
                body = block
                if not offset:
                    header = block[: block.find(b"\n") + 1] or block
                    body = block[len(header) :]
                    offset = len(header)
                    lines = header.count(b"\n")
                columns = _read_subject(
                    header + body,
                    member,
                    channels,
                    label,
                    encoding,
                    shift=(lines - header.count(b"\n"), offset - len(header)),
                )
                lines += body.count(b"\n")
                offset += len(body)
                n = len(columns[label])
                frame = pd.DataFrame(
                    {
                        "userid": np.full(n, user, dtype=np.int64),
                        "label": columns[label],
                        "segment": np.full(n, number, dtype=np.int64),
                        **{c: columns[c] for c in channels},
                    },
                    copy=False,
                )
                yield SignalTable(frame)


def stream_har70(
    entry: DatasetEntry, sources: Sources, *, chunk_bytes: int = CHUNK_BYTES
) -> SignalStream:
    """:func:`read_har70`'s table in chunks of about ``chunk_bytes`` of text.

    The options, the checks and the errors are :func:`read_har70`'s; those
    about the files (none found, a stem that is not a number, a subject
    twice) are raised here, those about their lines as the chunks are read.
    When a file holds several malformed lines, the one named is the first
    of the first chunk that holds one.

    Parameters
    ----------
    entry : DatasetEntry
        As for :func:`read_har70`.
    sources : Sources
        The verified release.
    chunk_bytes : int
        Bytes of text parsed at a time (whole lines: a little more).

    Returns
    -------
    SignalStream
    """
    channels, label, encoding = _options(entry)
    subjects = _subjects(entry, sources)
    return SignalStream(_subject_chunks(subjects, sources, channels, label, encoding, chunk_bytes))


__all__ = ["CHANNELS", "HEADER", "read_har70", "stream_har70"]
