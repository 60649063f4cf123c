"""Reader for the WISDM v1.1 transformed ARFF (``WISDM_ar_v1.1_transformed.arff``).

The file holds one row per 10 s window with 43 features computed by the
authors. It has CRLF line endings, ``?`` for missing values and a nominal class
attribute. The reader parses the header itself instead of using a generic
ARFF library so that a malformed row is reported with its line number.
"""

from __future__ import annotations

import io
import logging
import re

import numpy as np
import pandas as pd

from mudata.errors import ParseError, excerpt
from mudata.readers._text import decode_text, list_option, str_option, text_encoding
from mudata.readers.base import FeatureTable
from mudata.readers.sources import Sources

log = logging.getLogger(__name__)

# The class attribute is written without a space before its values: `class{ ... }`.
_ATTRIBUTE = re.compile(r'^@attribute\s+(?:"([^"]+)"|([^\s{]+))\s*(.*)$', re.IGNORECASE)


def _parse_header(lines: list[str], member: str) -> tuple[list[str], int]:
    names: list[str] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.lower() == "@data":
            return names, number
        match = _ATTRIBUTE.match(stripped)
        if match:
            names.append(match.group(1) or match.group(2))
    message = f"{member}: no '@data' line found; is this an ARFF file?"
    raise ParseError(message)


def read_wisdm_arff(entry, sources: Sources) -> FeatureTable:
    """Read the transformed ARFF into a feature table.

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``: ``member`` (path of the ARFF in the release),
        ``user_column`` (``"user"``), ``label_column`` (``"class"``) and
        ``drop_columns`` (columns left out of the features), ``encoding``
        (default ``"utf-8"``).
    sources : Sources
        The verified release.

    Returns
    -------
    FeatureTable
        ``userid``, ``label`` (class name as in the file) and the kept features,
        rows in file order. Missing values (``?``) become NaN.

    Raises
    ------
    ParseError
        When the header is missing, a data row has the wrong number of fields
        (named by its line number), or a value is not numeric.
    """
    member = str_option(entry, "member", "WISDM_ar_v1.1_transformed.arff")
    user_column = str_option(entry, "user_column", "user")
    label_column = str_option(entry, "label_column", "class")
    drop = list_option(entry, "drop_columns", [])

    text = decode_text(sources.read_bytes(member), member, text_encoding(entry))
    lines = text.splitlines()  # handles CRLF and a missing final newline alike
    names, data_start = _parse_header(lines, member)
    for required in (user_column, label_column, *drop):
        if required not in names:
            message = f"{member}: attribute {excerpt(required)} not in the header (found {excerpt(names)})"
            raise ParseError(message)

    body = lines[data_start:]
    kept_lines: list[str] = []
    for offset, line in enumerate(body):
        stripped = line.strip()
        if not stripped or stripped.startswith("%"):
            continue
        n_fields = stripped.count(",") + 1
        if n_fields != len(names):
            line_number = data_start + offset + 1
            message = (
                f"{member}, line {line_number}: expected {len(names)} comma-separated "
                f"values, found {n_fields}: {excerpt(stripped, 80)}"
            )
            raise ParseError(message)
        kept_lines.append(stripped)

    frame = pd.read_csv(
        io.StringIO("\n".join(kept_lines)),
        header=None,
        names=names,
        na_values=["?"],
        keep_default_na=False,
        dtype={user_column: str, label_column: str},
        skipinitialspace=True,
    )
    feature_names = [n for n in names if n not in (user_column, label_column, *drop)]
    for name in feature_names:
        if not pd.api.types.is_numeric_dtype(frame[name]):
            values = pd.to_numeric(frame[name], errors="coerce")
            bad = frame[name][values.isna() & frame[name].notna()]
            first = int(bad.index[0])
            message = (
                f"{member}: attribute {excerpt(name)} has non-numeric value {excerpt(bad.iloc[0])} "
                f"in data row {first + 1}"
            )
            raise ParseError(message)
    users = pd.to_numeric(frame[user_column].str.strip('"'), errors="coerce")
    if users.isna().any():
        first = int(users.isna().to_numpy().nonzero()[0][0])
        message = f"{member}: user id {excerpt(frame[user_column].iloc[first])} in data row {first + 1} is not an integer"
        raise ParseError(message)

    table = pd.DataFrame(
        {"userid": users.astype(np.int64), "label": frame[label_column].str.strip('"')}
    )
    table = pd.concat([table, frame[feature_names].astype(np.float64)], axis=1)
    log.info(
        "%s: %d rows, %d users, %d features",
        member,
        len(table),
        table["userid"].nunique(),
        len(feature_names),
    )
    return FeatureTable(table)


__all__ = ["read_wisdm_arff"]
