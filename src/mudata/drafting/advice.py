"""The init option that fixes what the readers or the registry refused in a draft.

``mudata init`` checks its draft by running the registry's validation and the
reader on the files. Their messages are written for someone editing an entry
(``field 'reader_options.channels'``, ``needs reader_options.user_col``);
someone running init has options, not fields. :func:`as_advice` turns such an
error into a :class:`~mudata.errors.MudataUsageError` whose first line names the
option to give, and keeps the reader's own words, with the entry's field names
replaced by the options that set them, as a second line.

The option is chosen from the error's :class:`~mudata.errors.Reason` (what is
wrong, and the setting that fixes it), which the readers raise with every
refusal; the words of the message never choose it. An error without a reason
(a third-party reader's, or the registry schema's) is advised by the field it
names in the registry's ``field '...'`` form, else by the general line.
"""

from __future__ import annotations

import re

from mudata.errors import (
    EmptyResultError,
    ParseError,
    Reason,
    RegistryError,
    ValidationError,
)
from mudata.errors import (
    MudataUsageError as UsageError,
)

__all__ = ["ADVICE", "INTERNAL_ERRORS", "advice_for", "as_advice", "plain_detail"]

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

_CHANNELS = (
    "name the signal columns with --channels A,B,C (never the user, label or time "
    "column), or give --kind features for a table of features"
)
_WINDOW = (
    "give a shorter --window SECONDS (or the right --sampling-rate HZ): no recording "
    "of a class is as long as one window"
)

#: The advice for the entry setting an error's :class:`~mudata.errors.Reason` names:
#: the longest key that is the setting or a dotted prefix of it wins.
ADVICE: dict[str, str] = {
    "channels": _CHANNELS,
    "sensors": _CHANNELS,
    "feature_cols": "name the numeric feature columns with --features A,B,...",
    "path_pattern": "give a --path-pattern that matches every data file",
    "user_col": (
        "name the user column with --user COL, or where the user sits in the file "
        "names with --path-pattern"
    ),
    "label_col": (
        "name the label column with --label COL, or where the label sits in the file "
        "names with --path-pattern"
    ),
    "recording_col": (
        "name the column that tells recordings apart with --recording COL (or a "
        "{recording} field in --path-pattern), or another time column with --time COL"
    ),
    "time_col": "name the time column with --time COL",
    "streams": "choose the streams to keep with --stream KEY=VALUE,... (repeatable)",
    "members": "leave the files that differ out with --exclude GLOB (or --include only the data)",
    "labels": (
        "leave the annotation table out with --exclude GLOB, or name the label column "
        "with --label COL"
    ),
    "recipe.window": _WINDOW,
    "window_seconds": _WINDOW,
    "min_per_class": (
        "too few users keep enough windows of every class: give a lower "
        "--min-per-class N, or a shorter --window SECONDS"
    ),
    "classes": (
        "a class of the draft is not in the label column as written: name the label "
        "column with --label COL"
    ),
}

#: Where what is wrong changes the advice for a setting: ``(code, setting)``.
SPECIFIC: dict[tuple[str, str], str] = {
    ("absent", "channels"): (
        "name with --channels A,B,C columns that every file holds, or leave the files "
        "without them out with --exclude GLOB"
    ),
    ("not-numeric", "time_col"): (
        "name the time column with --time COL (its values are not numbers or dates)"
    ),
    # The column is the right one; one row lacks its value (a line cut short,
    # a stray line at the end): naming the column again would not help.
    **{
        ("blank", setting): (
            f"a row has no {what} (a line cut short, or a stray line such as a "
            "footer?); repair or remove that line, or leave the file out with --exclude GLOB"
        )
        for setting, what in (
            ("time_col", "time"),
            ("user_col", "user"),
            ("streams.keys", "stream key"),
        )
    },
}

#: Settings init detects itself from the first file (no option sets them): when
#: another file refuses them, that file is not laid out as the first.
DETECTED = (
    "format",
    "separator",
    "decimal",
    "header",
    "header_line",
    "comment",
    "skip_lines",
    "line_end",
    "encoding",
    "columns",
    "variable",
    "time_order",
)

_DETECTED_ADVICE = (
    "a file is not laid out as the first one init read ({setting}); leave such files "
    "out with --exclude GLOB, or --include only those alike"
)

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


def advice_for(reason: Reason | None, field: str = "") -> str:
    """The advice for ``reason``, or for the entry ``field`` an error without one names.

    Examples
    --------
    >>> advice_for(Reason("goes-back", "recording_col")).startswith("name the column")
    True
    >>> advice_for(None, "sensors") == advice_for(Reason("missing", "channels"))
    True
    """
    setting = reason.setting if reason is not None else field.removeprefix("reader_options.")
    if reason is not None and (reason.code, setting) in SPECIFIC:
        return SPECIFIC[reason.code, setting]
    if setting in DETECTED:
        return _DETECTED_ADVICE.format(setting=setting.replace("_", " "))
    parts = setting.split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in ADVICE:
            return ADVICE[key]
    return _FALLBACK


def as_advice(exc: Exception) -> UsageError:
    """The option to give for ``exc``, an error of the reader or the registry on a draft.

    Parameters
    ----------
    exc : Exception
        One of :data:`INTERNAL_ERRORS`; its ``reason`` (a
        :class:`~mudata.errors.Reason`) chooses the option.

    Returns
    -------
    UsageError
        Two lines: ``mudata init: the files do not fit the draft; <option>``,
        then the reader's message in the options' words (left out when it would
        still name an entry field).
    """
    message = str(exc)
    reason = getattr(exc, "reason", None)
    field = ""
    if not isinstance(reason, Reason):
        reason = None
        # The registry's schema words every refusal "field 'NAME': ..." (its
        # own format, not a reader's prose): the one thing read from a message.
        named = re.search(r"field '([\w.]+)'", message)
        field = named.group(1) if named else ""
    advice = advice_for(reason, field)
    detail = plain_detail(message)
    lines = [f"mudata init: the files do not fit the draft; {advice}"]
    if "reader_options" not in detail and "field '" not in detail:
        lines.append(f"  ({detail})")
    return UsageError("\n".join(lines))
