"""Reader for the Smartwatch Gestures release (Costante et al. 2014).

Layout ``gestures-dataset/U01..U08/01..20/01..NN.txt`` (user, gesture,
repetition); each file is one gesture, space-separated, 6 columns, the last
three the x, y, z acceleration. The study used repetitions 01-20 only.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd

from mudata.errors import MissingFileError, ParseError, RegistryError, excerpt
from mudata.readers._text import (
    check_encoding,
    check_field_counts,
    columns_option,
    int_option,
    str_option,
    text_encoding,
    whitespace_field_counts,
)
from mudata.readers.base import SignalTable
from mudata.readers.sources import Sources
from mudata.records.entry import DatasetEntry

_MEMBER = re.compile(r"U(\d+)/(\d+)/(\d+)\.txt$")
DEFAULT_COLUMNS = {"x": 4, "y": 5, "z": 6}


def read_gestures(entry: DatasetEntry, sources: Sources) -> SignalTable:
    """Read every repetition file into one signal table.

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``: ``members`` (glob, default ``"<root>/U*/*/*.txt"``
        with ``root`` the archive's top folder, or ``"*U*/*/*.txt"``),
        ``repetitions`` (highest repetition number kept, default 20),
        ``n_columns`` (fields per line, default 6) and ``columns`` (channel name
        to 1-based column, default ``{"x": 4, "y": 5, "z": 6}``), ``encoding``
        (default ``"utf-8"``).
    sources : Sources
        The verified release.

    Returns
    -------
    SignalTable
        ``userid`` (1..8), ``label`` (gesture number, int), ``segment`` (one per
        file, 0, 1, ...), then the channels; ordered by user, gesture,
        repetition, samples in file order.

    Raises
    ------
    MissingFileError
        When no member matches.
    ParseError
        Naming the file and line of the first line without ``n_columns`` fields
        or with a non-numeric value.
    """
    root = str_option(entry, "root", None)
    pattern = str_option(entry, "members", f"{root}/U*/*/*.txt" if root else "*U*/*/*.txt")
    max_repetition = int_option(entry, "repetitions", 20)
    n_columns = int_option(entry, "n_columns", 6, minimum=1)
    columns = columns_option(entry, "columns", DEFAULT_COLUMNS)
    outside = {n: c for n, c in columns.items() if c > n_columns}
    if outside:
        raise RegistryError(
            f"invalid registry entry '{entry.name}': field 'reader_options.columns': "
            f"{outside} outside 1..{n_columns} (n_columns)"
        )
    encoding = text_encoding(entry)

    found: list[tuple[int, int, int, str]] = []
    for name in sources.names(pattern):
        match = _MEMBER.search(name)
        if match is None:
            continue  # info.txt and the like
        user, gesture, repetition = (int(g) for g in match.groups())
        if repetition <= max_repetition:
            found.append((user, gesture, repetition, name))
    if not found:
        message = f"no gesture file matching '{pattern}' (U<user>/<gesture>/<repetition>.txt) in {sources.roots}"
        raise MissingFileError(message)
    found.sort()

    # Read the small files once and parse them as one buffer: one parser call,
    # one vectorised field check, segment ids from the line counts.
    chunks: list[bytes] = []
    for _, _, _, name in found:
        data = sources.read_bytes(name)
        check_encoding(data, name, encoding)
        data = data.replace(b"\r\n", b"\n").strip()
        chunks.append(data + b"\n" if data else b"")
    lines_per_file = np.array([c.count(b"\n") for c in chunks], dtype=np.int64)
    buffer = b"".join(chunks)
    first_line = np.concatenate([[0], np.cumsum(lines_per_file)[:-1]])

    def describe(line: int) -> str:
        index = int(np.searchsorted(first_line, line, side="right") - 1)
        return f"{found[index][3]}, line {line - first_line[index] + 1}"

    counts = whitespace_field_counts(buffer)
    check_field_counts(counts, n_columns, describe)
    blank = np.flatnonzero(counts == 0)
    if blank.size:
        message = f"{describe(int(blank[0]))}: blank line inside a gesture file"
        raise ParseError(message)
    empty = [found[i][3] for i in np.flatnonzero(lines_per_file == 0)]
    if empty:
        message = f"empty gesture file(s): {empty}"
        raise ParseError(message)

    names = list(columns)
    usecols = [columns[n] - 1 for n in names]
    table = pd.read_csv(
        io.BytesIO(buffer),
        sep=r"\s+",
        header=None,
        usecols=usecols,
        dtype=str,
        engine="c",
        encoding=encoding,
    )
    values = {}
    for name, col in zip(names, usecols, strict=True):
        numeric = pd.to_numeric(table[col], errors="coerce")
        bad = np.flatnonzero(numeric.isna().to_numpy())
        if bad.size:
            message = f"{describe(int(bad[0]))}: column {col + 1} ('{name}') is not a number: {excerpt(table[col].iloc[bad[0]])}"
            raise ParseError(message)
        values[name] = numeric.to_numpy(dtype=np.float64)

    keys = np.array([f[:3] for f in found], dtype=np.int64)
    frame = pd.DataFrame(
        {
            "userid": np.repeat(keys[:, 0], lines_per_file),
            "label": np.repeat(keys[:, 1], lines_per_file),
            "segment": np.repeat(np.arange(len(found), dtype=np.int64), lines_per_file),
            **values,
        }
    )
    return SignalTable(frame)


__all__ = ["DEFAULT_COLUMNS", "read_gestures"]
