"""Record types of ``mudata init``: the user's choices, a file's format, a proposed layout.

Kept apart so that the stages that fill them (:mod:`mudata.drafting.layout`) and
the one that reads them (:mod:`mudata.drafting.draft`) do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mudata.drafting.columns import MAX_MISSING, Roles
from mudata.drafting.sensors import SensorGroup


@dataclass(frozen=True)
class Choices:
    """What the user told ``mudata init`` (each None or empty: detect it).

    Attributes
    ----------
    label, user, time, recording : str, optional
        Columns of those roles (names, or 1-based numbers without a header).
    channels : tuple of str
        Signal columns, any number; their names group them into sensors
        (:func:`mudata.drafting.sensors.group_channels`).
    features : tuple of str
        Feature columns of a feature table.
    path_pattern : str, optional
        A regular expression with named groups, or a template such as
        ``a{label}_s{user}_t{recording}_*.mat``.
    include, exclude : tuple of str
        Globs overriding which files are data (:func:`mudata.drafting.selection.select`).
    window : float, optional
        Window length in seconds (default 3).
    max_missing : float
        Columns with a larger fraction of empty cells are left out.
    streams : tuple of str
        Streams to keep (``KEY=VALUE,...``, :mod:`mudata.drafting.streams`);
        empty: every stream found.
    stream_align : str, optional
        ``"slowest"`` or ``"per-stream"`` (default ``"slowest"``).
    drop_class, keep_class : tuple of str
        Class codes to leave out of the draft's ``[[classes]]``, and codes
        init flags as not an activity (:mod:`mudata.drafting.nulls`) to keep.
    label_file, user_file : str, optional
        Which side file of feature tables holds the label and which the user
        (:mod:`mudata.drafting.aligned_layout`), as ``y_{split}.txt``.
    """

    label: str | None = None
    user: str | None = None
    time: str | None = None
    recording: str | None = None
    channels: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    path_pattern: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    window: float | None = None
    max_missing: float = MAX_MISSING
    streams: tuple[str, ...] = ()
    stream_align: str | None = None
    drop_class: tuple[str, ...] = ()
    keep_class: tuple[str, ...] = ()
    label_file: str | None = None
    user_file: str | None = None


@dataclass
class Sniffed:
    """How a data file is written: reader format, header line, separator and decimal mark."""

    fmt: str
    header: bool
    separator: str | None = None
    decimal: str = "."
    lines: dict[str, Any] = field(default_factory=dict)
    line_notes: dict[str, str] = field(default_factory=dict)

    def options(self) -> dict[str, Any]:
        """The reader options that say so (only those differing from the defaults).

        ``lines`` holds the line options (``skip_lines``, ``comment``,
        ``header_line``, ``line_end``: :mod:`mudata.readers.lines`), and
        ``line_notes`` the evidence for each.
        """
        options: dict[str, Any] = {"format": self.fmt}
        if self.fmt == "csv" and self.separator not in (None, ","):
            options["separator"] = self.separator
        if self.decimal != ".":
            options["decimal"] = self.decimal
        return {**options, **self.lines}


@dataclass
class Layout:
    """What :func:`propose_layout` found, with the evidence to print."""

    kind: str
    fmt: str
    header: bool
    options: dict[str, Any]
    channels: list[str]
    sampling_rate_hz: float | None
    notes: list[str] = field(default_factory=list)
    rate_note: str = ""
    roles: Roles = field(default_factory=Roles)
    option_notes: dict[str, str] = field(default_factory=dict)
    #: The channels grouped into sensors (raw signals only), with the reasons.
    sensors: list[SensorGroup] = field(default_factory=list)
    #: The reader, when not the layout's generic one (``annotated-signals``).
    reader: str | None = None


__all__ = ["Choices", "Layout", "Sniffed"]
