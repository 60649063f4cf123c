"""Which column serves which role in a generic reader's options, and the path pattern.

Owns :data:`RESERVED` (the output table's own columns), :func:`check_roles`
(a column listed twice, or serving two roles, is a registry error naming the
field) and :func:`path_pattern` (``reader_options.path_pattern``, compiled to
linear-time matching, with its groups checked).
"""

from __future__ import annotations

from mudata.errors import Reason, RegistryError, excerpt
from mudata.readers._text import str_option
from mudata.readers.linear_regex import LinearPattern, PatternError, compile_linear
from mudata.records.entry import DatasetEntry

__all__ = ["RESERVED", "channel_roles", "check_roles", "path_pattern"]

# The output table's own columns: a feature of that name would shadow them.
RESERVED = ("userid", "label", "segment")


def check_roles(entry: DatasetEntry, field: str, columns: list[str], roles: dict[str, str]) -> None:
    """Refuse a feature or channel list that repeats a column or reuses another role's column.

    A feature column equal to the user column would leak the user id into the
    features (and a duplicated one would be counted twice), so both are
    registry errors naming the field, not silent surprises.
    """
    where = f" ({entry.source})" if entry.source else ""
    seen: set[str] = set()
    for column in columns:
        if not isinstance(column, str):
            message = f"invalid registry entry '{entry.name}'{where}: field 'reader_options.{field}': {excerpt(column)} is not a column name"
            raise RegistryError(message, reason=Reason("invalid", field))
        role = roles.get(column) or ("a column mudata adds" if column in RESERVED else None)
        if column in seen or role:
            why = "is listed twice" if column in seen else f"is {role}"
            message = (
                f"invalid registry entry '{entry.name}'{where}: field 'reader_options.{field}': "
                f"column {excerpt(column)} {why}; it cannot also serve here"
            )
            raise RegistryError(message, reason=Reason("taken", field))
        seen.add(column)


def path_pattern(entry: DatasetEntry) -> LinearPattern | None:
    text = str_option(entry, "path_pattern", None)
    if text is None:
        return None
    where = f"invalid registry entry '{entry.name}': field 'reader_options.path_pattern'"
    try:
        # Linear-time matching: the pattern comes from an entry anyone may write.
        pattern = compile_linear(text)
    except PatternError as exc:
        message = f"{where}: {excerpt(text)} {exc}"
        raise RegistryError(message, reason=Reason("invalid", "path_pattern")) from None
    unknown = set(pattern.groupindex) - {"user", "label", "recording"}
    if unknown:
        message = (
            f"{where}: unknown group(s) {sorted(unknown)}; the groups are user, label and recording"
        )
        raise RegistryError(message, reason=Reason("invalid", "path_pattern"))
    return pattern


def channel_roles(channels: list[str]) -> dict[str, str]:
    return dict.fromkeys(channels, "a channel (reader_options.channels)")
