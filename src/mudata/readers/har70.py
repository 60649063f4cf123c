"""Reader for HAR70+ (UCI id 780): ``har70.zip`` with one CSV per subject.

Each ``<subject>.csv`` (``501.csv`` ... ``518.csv``) has the header
``timestamp,back_x,back_y,back_z,thigh_x,thigh_y,thigh_z,label`` and one row per
50 Hz sample. The release has no missing values, so the reader is strict: a
row with too many or too few fields, an empty field or a value that is not a
number raises :class:`~mudata.errors.ParseError` naming the file and its line.
Nothing is silently dropped. Blank lines (e.g. a trailing one) are skipped;
CRLF and LF line ends are both accepted.
"""

from __future__ import annotations

import io
from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from mudata.errors import MissingFileError, ParseError, excerpt
from mudata.readers._text import (
    check_encoding,
    csv_line_of_row,
    delimited_field_counts,
    first_non_numeric,
    list_option,
    str_option,
    text_encoding,
)
from mudata.readers.base import SignalTable, Sources
from mudata.registry import DatasetEntry

CHANNELS = ("back_x", "back_y", "back_z", "thigh_x", "thigh_y", "thigh_z")
HEADER = ("timestamp", *CHANNELS, "label")


def _is_resource_fork(name: str) -> bool:
    # Archives made on macOS carry __MACOSX/._501.csv shadows of the real files.
    path = PurePosixPath(name)
    return path.parts[0] == "__MACOSX" or path.name.startswith("._")


def _read_subject(
    data: bytes, member: str, channels: list[str], label: str, encoding: str = "utf-8"
) -> pd.DataFrame:
    """Parse one subject's CSV strictly; errors name ``member`` and the line."""
    check_encoding(data, member, encoding)
    header = data.split(b"\n", 1)[0].decode(encoding).removeprefix("\ufeff").strip()
    names = [h.strip() for h in header.split(",")]
    missing = [c for c in [*channels, label] if c not in names]
    if missing:
        message = f"{member}: header lacks columns {excerpt(missing)}; found {excerpt(names)}"
        raise ParseError(message)

    # The tokenizer fills a short row with NaN without complaint: count the
    # fields of every line first (vectorised over the bytes).
    counts = delimited_field_counts(data)
    bad = np.flatnonzero((counts != len(names)) & (counts != 0))
    if bad.size:
        message = (
            f"{member}, line {int(bad[0]) + 1}: expected {len(names)} comma-separated "
            f"fields, found {int(counts[bad[0]])} ({bad.size} such line(s) in all)"
        )
        raise ParseError(message)

    wanted = [*channels, label]
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
                line = csv_line_of_row(data, row)
                message = f"{member}, line {line}: column '{column}' is not a number: {excerpt(text[column].iloc[row])}"
                raise ParseError(message) from None
        message = f"{member}: a value is not a number"
        raise ParseError(message) from None
    for column in wanted:
        empty = np.flatnonzero(table[column].isna().to_numpy())
        if empty.size:
            line = csv_line_of_row(data, int(empty[0]))
            message = (
                f"{member}, line {line}: column '{column}' is empty or NaN; "
                f"the HAR70+ release has no missing values"
            )
            raise ParseError(message)
    codes = table[label].to_numpy()
    fractional = np.flatnonzero(codes != np.round(codes))
    if fractional.size:
        line = csv_line_of_row(data, int(fractional[0]))
        message = (
            f"{member}, line {line}: label must be an integer code, found {codes[fractional[0]]!r}"
        )
        raise ParseError(message)
    frame = table[channels].copy()
    frame.insert(0, "label", codes.astype(np.int64))
    return frame


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
    pattern = str_option(entry, "members", "*.csv")
    channels = list_option(entry, "channels", list(CHANNELS))
    label = str_option(entry, "label_column", "label")
    encoding = text_encoding(entry)

    members = [n for n in sources.names(pattern) if not _is_resource_fork(n)]
    if not members:
        message = (
            f"no HAR70+ subject file matching '{pattern}' in {', '.join(map(str, sources.roots))}"
        )
        raise MissingFileError(message)
    subjects: list[tuple[int, str]] = []
    for member in members:
        stem = PurePosixPath(member).stem
        if not stem.isdigit():
            message = f"{member}: HAR70+ subject files are named by the subject number (e.g. 501.csv); found {excerpt(stem)}"
            raise ParseError(message)
        subjects.append((int(stem), member))
    subjects.sort()
    duplicated = sorted({u for u, _ in subjects if [s for s, _ in subjects].count(u) > 1})
    if duplicated:
        message = f"subjects {duplicated} appear in more than one file among {members}"
        raise ParseError(message)

    frames = []
    for segment, (user, member) in enumerate(subjects):
        frame = _read_subject(sources.read_bytes(member), member, channels, label, encoding)
        frame.insert(0, "userid", np.int64(user))
        frame.insert(2, "segment", np.int64(segment))
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    frame["userid"] = frame["userid"].astype(np.int64)
    frame["segment"] = frame["segment"].astype(np.int64)
    return SignalTable(frame[["userid", "label", "segment", *channels]])
