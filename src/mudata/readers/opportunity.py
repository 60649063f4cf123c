"""Reader for OPPORTUNITY (UCI id 226): ``OpportunityUCIDataset/dataset/S<u>-ADL<r>.dat``.

Each recording is space-separated text without a header, 250 columns (1-based
numbering as in the release's ``column_names.txt``), ``NaN`` for missing
values, 30 Hz. Drill runs (``S<u>-Drill.dat``) are not read. Every line must
have exactly 250 fields: the check runs over the raw bytes before parsing, so
a truncated or ragged line is reported with its file and line number.
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
    list_option,
    str_option,
    text_encoding,
    whitespace_field_counts,
)
from mudata.readers.base import SignalTable
from mudata.readers.sources import Sources
from mudata.records.entry import DatasetEntry

_MEMBER = re.compile(r"S(\d+)-ADL(\d+)\.dat$")
N_COLUMNS = 250
LABEL_COLUMN = 244  # Locomotion
DEFAULT_COLUMNS = {
    "back_x": 38, "back_y": 39, "back_z": 40,  # IMU BACK accX/Y/Z
    "shoe_x": 125, "shoe_y": 126, "shoe_z": 127,  # IMU R-SHOE Body_Ax/Ay/Az
}  # fmt: skip


def _listed_runs(
    entry: DatasetEntry, options: dict, sources: Sources
) -> list[tuple[int, int, str]]:
    """Runs named by ``member_pattern`` x ``subjects`` x ``runs``, in that order."""
    template = options["member_pattern"]
    subjects = list_option(entry, "subjects", [1, 2, 3, 4], int)
    run_names = list_option(entry, "runs", [f"ADL{i}" for i in range(1, 6)])
    listed = []
    for subject in subjects:
        for order, run in enumerate(run_names):
            try:
                name = str(template).format(subject=subject, run=run)
            except (KeyError, IndexError, ValueError, AttributeError) as exc:
                message = (
                    f"invalid registry entry: field 'reader_options.member_pattern': "
                    f"{excerpt(template)} is not a pattern with {{subject}} and {{run}} "
                    f"({type(exc).__name__}: {str(exc)[:80]})"
                )
                raise RegistryError(message) from None
            member = sources.find(name)
            listed.append((subject, order, member))
    return listed


def read_opportunity(entry: DatasetEntry, sources: Sources) -> SignalTable:
    """Read the ADL runs of every subject into one signal table.

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``: either ``members`` (glob, default
        ``"*S*-ADL*.dat"``; the subject and run numbers are read from the
        names) or ``member_pattern`` (e.g.
        ``"OpportunityUCIDataset/dataset/S{subject}-{run}.dat"``) with
        ``subjects`` (default 1..4) and ``runs`` (default ``ADL1..ADL5``, read
        in that order; a missing one is an error); ``n_columns`` (default 250), ``label_column`` (1-based, default 244),
        ``columns`` (channel name to 1-based column, default
        :data:`DEFAULT_COLUMNS`), ``encoding`` (default ``"utf-8"``).
    sources : Sources
        The verified release.

    Returns
    -------
    SignalTable
        ``userid`` (subject number), ``label`` (int code of the label column),
        ``segment`` (one per run, 0, 1, ...), then the channels (NaN kept);
        per user ADL1..ADL5 concatenated in that order, users ascending.

    Raises
    ------
    MissingFileError
        When no ADL file matches, or a listed run is missing.
    ParseError
        When a line has the wrong number of fields, a channel value is not a
        number, or a label is missing or not an integer (file and line named).
    """
    options = entry.reader_options
    pattern = str_option(entry, "members", "*S*-ADL*.dat")
    n_columns = int_option(entry, "n_columns", N_COLUMNS, minimum=1)
    label_column = int_option(entry, "label_column", LABEL_COLUMN, minimum=1)
    columns = columns_option(entry, "columns", DEFAULT_COLUMNS)
    encoding = text_encoding(entry)
    for name, number in {**columns, "label": label_column}.items():
        if not 1 <= int(number) <= n_columns:
            where = f" ({entry.source})" if entry.source else ""
            field = "label_column" if name == "label" else f"columns.{name}"
            message = (
                f"invalid registry entry '{entry.name}'{where}: field 'reader_options.{field}': "
                f"column {number} is outside 1..{n_columns}"
            )
            raise RegistryError(message)

    if "member_pattern" in options:
        runs = _listed_runs(entry, options, sources)
    else:
        runs = []
        for member in sources.names(pattern):
            match = _MEMBER.search(member)
            if match:
                runs.append((int(match.group(1)), int(match.group(2)), member))
        if not runs:
            message = f"no OPPORTUNITY ADL run matching '{pattern}' (S<user>-ADL<run>.dat) in {sources.roots}"
            raise MissingFileError(message)
        runs.sort()

    names = list(columns)
    frames = []
    for segment, (user, _, member) in enumerate(runs):
        data = sources.read_bytes(member)
        check_encoding(data, member, encoding)
        counts = whitespace_field_counts(data)
        check_field_counts(counts, n_columns, lambda line, m=member: f"{m}, line {line + 1}")
        usecols = [label_column - 1, *(columns[n] - 1 for n in names)]
        try:
            table = pd.read_csv(
                io.BytesIO(data),
                sep=r"\s+",
                header=None,
                usecols=usecols,
                dtype=np.float64,
                engine="c",
                encoding=encoding,
            )
        except ValueError as exc:
            message = f"{member}: a value in columns {sorted(c + 1 for c in usecols)} is not a number ({str(exc)[:200]})"
            raise ParseError(message) from None
        codes = table[label_column - 1].to_numpy()
        bad = np.flatnonzero(~np.isfinite(codes) | (codes != np.round(codes)))
        if bad.size:
            line = int(np.flatnonzero(counts)[bad[0]]) + 1
            message = (
                f"{member}, line {line}: label column {label_column} must hold an "
                f"integer code, found {codes[bad[0]]!r}"
            )
            raise ParseError(message)
        frame = pd.DataFrame(
            {
                "userid": np.full(codes.size, user, dtype=np.int64),
                "label": codes.astype(np.int64),
                "segment": np.full(codes.size, segment, dtype=np.int64),
            }
        )
        for name in names:
            frame[name] = table[columns[name] - 1].to_numpy(dtype=np.float64)
        frames.append(frame)
    return SignalTable(pd.concat(frames, ignore_index=True))


__all__ = ["DEFAULT_COLUMNS", "LABEL_COLUMN", "N_COLUMNS", "read_opportunity"]
