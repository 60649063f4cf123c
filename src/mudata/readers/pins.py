"""What the registry pins of a source root, as the readers check it: :class:`Pins`.

Owns :class:`Pin` (one member's hash and size), :class:`Pins` (a root's
hash, its listed members, the glob and whether unpinned bytes may be read),
:class:`Read` (the record of one member read) and :func:`admit` (the refusal,
before a byte is read, of a member its root's pins do not allow). The fetch
stage builds them (:mod:`mudata.sources.pins`); :class:`~mudata.readers.sources.Sources`
checks every read against them.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from mudata.errors import UnpinnedMemberError, UnverifiedDataError, excerpt

__all__ = ["Pin", "Pins", "Read", "admit"]


@dataclass(frozen=True)
class Pin:
    """The registry's hash and size of one member (either may be absent)."""

    sha256: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class Pins:
    """What the registry pins of one source root, and what may be read without a pin.

    Attributes
    ----------
    sha256 : str or None
        The root's own hash (archive or plain file): every byte inside is pinned.
    members : dict of str to Pin
        The members the registry lists, by normalised path.
    located : dict of str to Path
        For a folder root: where each listed member was found (it may be below
        the folder under its bare file name).
    allow_unverified : bool
        Whether a member without a pin may be read (recorded as unverified).
        Ignored for members not listed when some listed member has a hash:
        those are always refused.
    label : str
        Names the file in messages ("file 'x.zip' of dataset 'y'").
    glob : str or None
        The entry's ``glob`` (``fnmatch`` rules, ``*`` crosses folders): only
        members whose path matches it belong to the release.
    """

    sha256: str | None = None
    members: dict[str, Pin] = field(default_factory=dict)
    located: dict[str, Path] = field(default_factory=dict)
    allow_unverified: bool = False
    label: str = ""
    glob: str | None = None

    def admits(self, name: str) -> bool:
        """Whether the member ``name`` belongs to the release (matches ``glob``)."""
        return self.glob is None or fnmatch.fnmatchcase(name, self.glob)

    @property
    def pins_members(self) -> bool:
        """True when the registry gives a hash for at least one listed member."""
        return any(p.sha256 for p in self.members.values())


@dataclass(frozen=True)
class Read:
    """One member a reader read: the SHA-256 of its bytes and whether they were pinned."""

    root: Path
    name: str
    sha256: str
    verified: bool


def admit(root: Path, name: str, pins: Pins | None, pin: Pin | None) -> None:
    """Refuse, before reading it, a member that the pins of its root do not allow."""
    if pins is None or pins.sha256 is not None or (pin is not None and pin.sha256):
        return
    what = f"member {excerpt(name)} of {root}" + (f" ({pins.label})" if pins.label else "")
    if pin is None and pins.pins_members:
        message = (
            f"{what} is read by the reader but not listed in the registry entry, which "
            f"pins the members it lists by sha256; refusing unlisted bytes "
            f"(allow_unverified=True does not change this). List the member with its "
            f"sha256 in the entry, or narrow the reader's members pattern."
        )
        raise UnpinnedMemberError(message, cli={"allow_unverified=True": "--allow-unverified"})
    if not pins.allow_unverified:
        message = (
            f"{what} has no sha256 in the registry; refusing unverified data. Pass "
            f"allow_unverified=True to use it, recorded as unverified."
        )
        raise UnverifiedDataError(message, subject=what)
