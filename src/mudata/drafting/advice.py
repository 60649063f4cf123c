"""The init option that fixes what the readers or the registry refused in a draft.

``mudata init`` checks its draft by running the registry's validation and the
reader on the files. Their messages are written for someone editing an entry
(``field 'reader_options.channels'``, ``needs reader_options.user_col``);
someone running init has options, not fields. :func:`as_advice` turns such an
error into a :class:`~mudata.errors.MudataUsageError` whose first line names the
option to give, and keeps the reader's own words, with the entry's field names
replaced by the options that set them, as a second line.
"""

from __future__ import annotations

import re

from mudata.errors import (
    EmptyResultError,
    ParseError,
    RegistryError,
    ValidationError,
)
from mudata.errors import (
    MudataUsageError as UsageError,
)

__all__ = ["INTERNAL_ERRORS", "as_advice", "plain_detail"]

#: The errors of the reader and of the registry that a draft can meet.
INTERNAL_ERRORS = (RegistryError, ParseError, EmptyResultError, ValidationError)

#: Entry settings and the init option that sets each.
OPTIONS = {
    "user_col": "--user",
    "label_col": "--label",
    "time_col": "--time",
    "recording_col": "--recording",
    "channels": "--channels",
    "feature_cols": "--features",
    "path_pattern": "--path-pattern",
    "streams.select": "--stream",
    "streams.align": "--stream-align",
    "streams": "--stream",
    "members": "--include/--exclude",
    "sensors": "--channels",
    "window_seconds": "--window",
    "sampling_rate_hz": "--sampling-rate",
    "min_per_class": "--min-per-class",
}

#: (what the message says, the advice), tried in order; the first match wins.
RULES: list[tuple[str, str]] = [
    (
        r"^(channels|sensors)\b",
        "name the signal columns with --channels A,B,C (never the user, label or time "
        "column), or give --kind features for a table of features",
    ),
    (r"^feature_cols\b", "name the numeric feature columns with --features A,B,..."),
    (r"^path_pattern\b", "give a --path-pattern that matches every data file"),
    (
        r"user_col|'user' group|no user",
        "name the user column with --user COL, or where the user sits in the file "
        "names with --path-pattern",
    ),
    (
        r"label_col|'label' group|no label",
        "name the label column with --label COL, or where the label sits in the file "
        "names with --path-pattern",
    ),
    (
        r"goes back|recording_col|time_order",
        "name the column that tells recordings apart with --recording COL (or a "
        "{recording} field in --path-pattern), or another time column with --time COL",
    ),
    (r"time_col|time column", "name the time column with --time COL"),
    (r"streams", "choose the streams to keep with --stream KEY=VALUE,... (repeatable)"),
    (r"path_pattern", "give a --path-pattern that matches every data file"),
    (r"feature_cols|must be numeric", "name the numeric feature columns with --features A,B,..."),
    (
        r"channels|sensor",
        "name the signal columns with --channels A,B,C (never the user, label or time "
        "column), or give --kind features for a table of features",
    ),
    (
        r"no complete window|no valid window|none is left",
        "give a shorter --window SECONDS (or the right --sampling-rate HZ): no recording "
        "of a class is as long as one window",
    ),
    (r"fewer than 2 users|no user passes", "lower --min-per-class, or --drop-class CODE"),
]

_FALLBACK = (
    "name the columns (--user, --label, --time, --channels or --features) or the path "
    "pattern (--path-pattern), or leave the file out with --exclude GLOB"
)
#: Longest detail kept: a message may list every value of a column.
_DETAIL_CHARS = 300


def plain_detail(message: str) -> str:
    """``message`` with the entry's field names replaced by the init options that set them.

    Examples
    --------
    >>> plain_detail("invalid registry entry 'x' (<memory>): field 'reader_options.channels': "
    ...              "column 'time' is the time column (time_col)")
    "column 'time' is the time column (--time)"
    """
    text = re.sub(r"^(invalid registry entry|dataset) '[^']*'( \([^)]*\))?: ", "", message)
    text = re.sub(r"field '(?:reader_options\.)?([\w.]+)'(: )?", "", text)

    def option(match: re.Match[str]) -> str:
        key = match.group(1)
        return OPTIONS.get(key, OPTIONS.get(key.split(".")[0], f"the draft's {key}"))

    text = re.sub(r"reader_options\.([\w.]+)", option, text)
    text = re.sub(r"\b(user_col|label_col|time_col|recording_col|feature_cols)\b", option, text)
    text = re.sub(r"\bpath_pattern\b", "--path-pattern", text)
    text = re.sub(r"reader '[\w-]+'", "this layout", text)
    if len(text) > _DETAIL_CHARS:
        text = text[: _DETAIL_CHARS - 3].rstrip(" ,'") + "..."
    return text


def as_advice(exc: Exception) -> UsageError:
    """The option to give for ``exc``, an error of the reader or the registry on a draft.

    Parameters
    ----------
    exc : Exception
        One of :data:`INTERNAL_ERRORS`.

    Returns
    -------
    UsageError
        Two lines: ``mudata init: cannot draft an entry these files fit; <option>``,
        then the reader's message in the options' words (left out when it would
        still name an entry field).
    """
    message = str(exc)
    # The field a registry message names says best which option set it wrong.
    field = re.search(r"field '(?:reader_options\.)?([\w.]+)'", message)
    named = field.group(1).replace(".", "_") if field else ""
    said = f"{named} {message}" if named else message
    advice = next((a for pattern, a in RULES if re.search(pattern, said, re.I)), _FALLBACK)
    detail = plain_detail(message)
    lines = [f"mudata init: the files do not fit the draft; {advice}"]
    if "reader_options" not in detail and "field '" not in detail:
        lines.append(f"  ({detail})")
    return UsageError("\n".join(lines))
