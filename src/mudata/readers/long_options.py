"""The checked ``reader_options`` of ``long-signals``: :class:`LongOptions`.

Owns :func:`long_options` (each role from one column or one path group, the
channels, the stream keys and ``time_order`` cross-checked) and
:func:`path_groups` (the groups of ``path_pattern`` in a member's path). The
whole-file reader (:mod:`mudata.readers.tabular`) and the chunked one
(:mod:`mudata.readers.long_stream`) read with them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mudata.errors import ParseError, Reason, RegistryError, excerpt
from mudata.readers._text import list_option, str_option
from mudata.readers.linear_regex import LinearPattern
from mudata.readers.roles import channel_roles, check_roles, path_pattern
from mudata.readers.streams import stream_options
from mudata.records.entry import DatasetEntry

__all__ = ["TIME_ORDERS", "LongOptions", "long_options", "path_groups"]

#: ``reader_options.time_order``: "strict" (time must not go back inside a
#: recording; repeated times are kept in file order) or "file" (samples are
#: taken in file order; the time column only serves the rate estimate of init).
TIME_ORDERS = ("strict", "file")


@dataclass(frozen=True)
class LongOptions:
    """The checked ``reader_options`` of ``long-signals``."""

    user_col: str | None
    label_col: str | None
    time_col: str | None
    segment_col: str | None
    recording_col: str | None
    pattern: LinearPattern | None
    channels: list[str]
    time_order: str = "strict"

    @property
    def columns(self) -> list[str]:
        """Every column a member must hold."""
        named = (self.user_col, self.label_col, self.time_col, self.segment_col, self.recording_col)
        return [c for c in named if c] + self.channels


def long_options(entry: DatasetEntry) -> LongOptions:
    """Read and cross-check the options: each role comes from one column or one path group."""
    pattern = path_pattern(entry)
    groups = set(pattern.groupindex) if pattern else set()
    found: dict[str, str | None] = {}
    for role in ("user", "label"):
        column = str_option(entry, f"{role}_col", None)
        if (column is None) == (role not in groups):
            how = "both" if column else "neither"
            message = (
                f"dataset '{entry.name}': reader 'long-signals' takes the {role} from "
                f"reader_options.{role}_col or from a '{role}' group of path_pattern; {how} given"
            )
            raise RegistryError(
                message, reason=Reason("taken" if column else "missing", f"{role}_col")
            )
        found[role] = column
    time_col = str_option(entry, "time_col", None)
    segment_col = str_option(entry, "segment_col", None)
    recording_col = str_option(entry, "recording_col", None)
    sensor_channels = [c for s in entry.sensors for c in s.channels]
    channels = list_option(entry, "channels", sensor_channels)
    roles: dict[str, str] = {}
    for kind, column in (
        ("user", found["user"]),
        ("label", found["label"]),
        ("time", time_col),
        ("segment", segment_col),
        ("recording", recording_col),
    ):
        if column:
            if column in roles:
                check_roles(entry, f"{kind}_col", [column], roles)
            roles[column] = f"the {kind} column ({kind}_col)"
    check_roles(entry, "channels", channels, roles)
    streams = stream_options(entry)
    if streams is not None:
        check_roles(entry, "streams.keys", list(streams.keys), {**roles, **channel_roles(channels)})
    absent = [c for c in sensor_channels if c not in channels]
    # Aligned streams name their channels "<channel> [<stream>]": checked once split.
    if absent and not (streams is not None and streams.align == "slowest"):
        message = (
            f"dataset '{entry.name}': sensor channels {absent} are not in "
            f"reader_options.channels {channels}"
        )
        raise RegistryError(message, reason=Reason("absent", "sensors"))
    time_order = str_option(entry, "time_order", "strict")
    if time_order not in TIME_ORDERS:
        message = (
            f"invalid registry entry '{entry.name}': field 'reader_options.time_order': "
            f"{excerpt(time_order)} is not one of {list(TIME_ORDERS)}"
        )
        raise RegistryError(message, reason=Reason("invalid", "time_order"))
    return LongOptions(
        found["user"],
        found["label"],
        time_col,
        segment_col,
        recording_col,
        pattern,
        channels,
        time_order,
    )


def path_groups(pattern: LinearPattern | None, member: str) -> dict[str, str]:
    """The named groups of a reader's ``path_pattern`` in ``member``'s path (searched,
    not anchored); none without a pattern. The long-signals, annotated-signals and
    feature-table readers all read their path fields here."""
    if pattern is None:
        return {}
    match = pattern.search(member)
    if match is None:
        message = (
            f"{member}: the path does not match reader_options.path_pattern "
            f"{pattern.pattern!r}; narrow the members glob or widen the pattern"
        )
        raise ParseError(message, reason=Reason("no-match", "path_pattern"))
    return {k: v for k, v in match.groupdict().items() if v is not None}
