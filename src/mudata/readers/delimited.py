"""Delimited text: the separators and missing cells the readers know, and a sniff of both marks.

Owns :data:`SEPARATORS` (as ``reader_options.separator`` names them),
:data:`SPREADSHEET_MISSING` (the error cells read as missing values),
:func:`sniff_delimited` (the separator and the decimal mark of delimited
text, from its first lines) and :func:`check_no_repeated_header` (a header
line again among the rows, as files joined with their headers leave it).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd

from mudata.errors import ParseError, Reason, excerpt

__all__ = ["SEPARATORS", "SPREADSHEET_MISSING", "check_no_repeated_header", "sniff_delimited"]

#: Cells spreadsheets write for an undefined value; read as missing, as are
#: pandas' defaults (empty, ``NA``, ``#N/A``, ``NaN``, ...).
SPREADSHEET_MISSING = ("#DIV/0!", "#N/A", "#NUM!", "#VALUE!", "#REF!", "#NAME?", "#NULL!")
#: The separators a delimited file may use, as ``reader_options.separator`` names them.
SEPARATORS = (",", ";", "\t", "|")

_DECIMAL_COMMA = re.compile(r"^-?\d+,\d+$")
_QUOTED = re.compile(r'"[^"]*"')


def sniff_delimited(head: str) -> tuple[str | None, str]:
    """The separator and the decimal mark of delimited text, from its first lines.

    A separator found the same number of times (at least once) on every one of
    the first lines wins, tab before semicolon before comma (a semicolon file
    with decimal commas holds commas too); from five lines on, one line may
    differ, and one in ten from twenty (a line cut short, a cell holding the
    separator), so that one broken line does not make a whole file one
    column. Decimal commas are assumed when the separator is not a comma and
    some field reads as ``12,5``.

    Returns
    -------
    (str or None, str)
        The separator (None: whitespace-separated) and ``"."`` or ``","``.
    """
    lines = [line for line in head.splitlines()[:20] if line.strip()]
    if len(lines) > 1:
        lines = lines[:-1]  # the last line of a head may be cut
    # Separators inside quoted fields ("2,5") do not count.
    bare = [_QUOTED.sub('""', line) for line in lines]
    separator = None
    differing = max(1, len(bare) // 10) if len(bare) >= 5 else 0
    for candidate in ("\t", ";", ",", "|"):
        counts = Counter(line.count(candidate) for line in bare)
        if not counts:
            break
        count, lines_with_it = counts.most_common(1)[0]
        if count > 0 and lines_with_it >= len(bare) - differing:
            separator = candidate
            break
    decimal = "."
    if separator not in (None, ","):
        fields = [f.strip().strip('"') for line in lines for f in line.split(separator)]
        if any(_DECIMAL_COMMA.match(f) for f in fields):
            decimal = ","
    return separator, decimal


#: Column names pandas makes up: an empty header cell, a name given twice.
_MADE_UP = re.compile(r"^Unnamed: \d+$|\.\d+$")


def check_no_repeated_header(table: pd.DataFrame, member: str) -> None:
    """Refuse a table whose rows hold its header line again.

    Files joined with their headers (``cat a.csv b.csv``) hold the header line
    among the rows: read as data, its user column names a user ``user_name``
    and its label column a class ``activity``, each of one row, and every
    numeric column turns to text. A row is the header again when each of at
    least two columns holds its own name (the names pandas made up, for an
    empty or a repeated header cell, are not compared).

    Raises
    ------
    ParseError
        Naming the member and the first such row.

    Examples
    --------
    >>> table = pd.DataFrame({"user": ["1", "user", "2"], "x": ["0.5", "x", "0.7"]})
    >>> check_no_repeated_header(table, "joined.csv")
    Traceback (most recent call last):
    ...
    mudata.errors.ParseError: joined.csv: data row 2 repeats the header line ('user', 'x'): were files joined with their headers? Remove the line, or read the files one by one
    """
    names = [c for c in table.columns if isinstance(c, str) and not _MADE_UP.search(c)]
    # A column of numbers holds no name: the header line would have made it text.
    if len(names) < 2 or not all(pd.api.types.is_string_dtype(table[c].dtype) for c in names):
        return
    rows = np.ones(len(table), dtype=bool)
    for name in names:
        rows &= table[name].to_numpy() == name
        if not rows.any():
            return
    first = int(np.flatnonzero(rows)[0])
    shown_names = ", ".join(excerpt(n, 40) for n in names[:4]) + (", ..." if len(names) > 4 else "")
    message = (
        f"{member}: data row {first + 1:,} repeats the header line ({shown_names}): were files "
        f"joined with their headers? Remove the line, or read the files one by one"
    )
    raise ParseError(message, reason=Reason("unreadable", "members"))
