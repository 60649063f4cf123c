"""Delimited text: the separators and missing cells the readers know, and a sniff of both marks.

Owns :data:`SEPARATORS` (as ``reader_options.separator`` names them),
:data:`SPREADSHEET_MISSING` (the error cells read as missing values) and
:func:`sniff_delimited` (the separator and the decimal mark of delimited
text, from its first lines).
"""

from __future__ import annotations

import re

__all__ = ["SEPARATORS", "SPREADSHEET_MISSING", "sniff_delimited"]

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
    with decimal commas holds commas too). Decimal commas are assumed when the
    separator is not a comma and some field reads as ``12,5``.

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
    for candidate in ("\t", ";", ",", "|"):
        counts = {line.count(candidate) for line in bare}
        if lines and len(counts) == 1 and counts.pop() > 0:
            separator = candidate
            break
    decimal = "."
    if separator not in (None, ","):
        fields = [f.strip().strip('"') for line in lines for f in line.split(separator)]
        if any(_DECIMAL_COMMA.match(f) for f in fields):
            decimal = ","
    return separator, decimal
