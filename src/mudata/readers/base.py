"""What a reader receives and what it returns.

A reader turns the verified files of one release into one of two raw tables:

* :class:`FeatureTable` -- already one row per example with computed features
  (recipe ``precomputed``), or
* :class:`SignalTable` -- raw samples in long format, one row per sample, in
  file order, with a ``segment`` column that groups samples recorded together
  (recipe ``study-window`` windows each (user, class) sequence; recipe
  ``study-segment`` makes one feature row per segment).

Both keep the raw class code in ``label``; mapping codes to names, the user
filter and validation happen downstream, once, for every reader.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING

from mudata.archive import ArchiveIndex, sniff_kind
from mudata.entry import DatasetEntry
from mudata.errors import (
    ChecksumError,
    LimitError,
    MissingFileError,
    ParseError,
    UnpinnedMemberError,
    UsageError,
    excerpt,
)
from mudata.files import links_and_special_files, open_regular
from mudata.readers.decode import decompress

if TYPE_CHECKING:
    # Annotations only: `mudata list` reads the registry, which checks reader
    # options here, and must not pay for importing pandas.
    import pandas as pd


@dataclass
class FeatureTable:
    """Feature rows: columns ``userid``, ``label`` (raw code), then numeric features."""

    frame: pd.DataFrame


@dataclass
class SignalTable:
    """Raw samples: columns ``userid``, ``label`` (raw code), ``segment``, then channels.

    Rows are in recording order. ``segment`` identifies a contiguous recording
    (a file, a repetition); the windowing recipe ignores it, the segment recipe
    makes one feature row per segment. An optional ``recording`` column (int)
    names recordings: the windowing recipe then never lets a window span two.
    """

    frame: pd.DataFrame


RawTable = FeatureTable | SignalTable


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


class Sources:
    """Read-only view over the verified files of a release.

    Members are addressed by their path inside the release with the archive's
    top folder kept (``gestures-dataset/U01/01/01.txt``). A source is either an
    archive (zip or tar, read through :class:`mudata.archive.ArchiveIndex`), a
    folder holding the extracted members, or a plain file.

    Every member is read whole, hashed, and checked against its ``pins``
    before a reader sees a byte of it; :attr:`reads` records each member read
    and whether its bytes were pinned.

    Parameters
    ----------
    roots : list of Path
        Archives, folders or files, searched in order.
    pins : list of Pins or None, optional
        One per root. A root without pins is read as is and its reads are
        recorded as unverified (tests and direct use of a reader).
    max_expansion : float, optional
        Expansion cap of archives (see :func:`mudata.archive.max_expansion`).
    """

    def __init__(
        self,
        roots: list[Path],
        pins: list[Pins | None] | None = None,
        *,
        max_expansion: float | None = None,
    ) -> None:
        self.roots = [Path(r) for r in roots]
        self.pins = list(pins) if pins is not None else [None] * len(self.roots)
        if len(self.pins) != len(self.roots):
            raise ValueError("Sources: one Pins (or None) per root")
        self.max_expansion = max_expansion
        self._archives: dict[int, ArchiveIndex] = {}
        self._index: dict[str, tuple[int, str]] | None = None
        self.reads: dict[tuple[Path, str], Read] = {}
        self._closed = False

    def _build_index(self) -> dict[str, tuple[int, str]]:
        index: dict[str, tuple[int, str]] = {}
        for i, root in enumerate(self.roots):
            pins = self.pins[i]
            if root.is_dir():
                for name, path in (pins.located if pins else {}).items():
                    index.setdefault(name, (i, str(path)))
                if not (pins and pins.located):
                    # The fetch stage checked the folder it located members in;
                    # a folder given as is gets the same check here.
                    _refuse_unlisted(root)
                for p in sorted(root.rglob("*")):
                    name = p.relative_to(root).as_posix()
                    # Files outside the glob are not indexed. File links are, so
                    # that reading one is refused by name.
                    if (p.is_file() or p.is_symlink()) and (pins is None or pins.admits(name)):
                        index.setdefault(name, (i, str(p)))
                continue
            kind = sniff_kind(root)
            if kind is None:
                index.setdefault(root.name, (i, ""))
                continue
            archive = ArchiveIndex(
                root, kind, sha256=pins.sha256 if pins else None, ratio=self.max_expansion
            )
            self._archives[i] = archive
            for name in archive.names():
                if pins is None or pins.admits(name):
                    index.setdefault(name, (i, name))
        return index

    @property
    def index(self) -> dict[str, tuple[int, str]]:
        """Member path to (root number, inner name or file path)."""
        if self._index is None:
            self._index = self._build_index()
        return self._index

    def names(self, pattern: str = "*") -> list[str]:
        """Member paths matching a glob ``pattern`` (``fnmatch`` rules), sorted."""
        return sorted(n for n in self.index if fnmatch.fnmatchcase(n, pattern))

    def find(self, member: str) -> str:
        """Resolve a member path; a bare file name matches a member in any folder."""
        if member in self.index:
            return member
        matches = [n for n in self.index if PurePosixPath(n).name == PurePosixPath(member).name]
        if len(matches) == 1:
            return matches[0]
        message = f"file '{member}' not found in {', '.join(map(str, self.roots))}"
        if len(matches) > 1:
            shown = ", ".join(matches[:10]) + (
                f" and {len(matches) - 10} more" if len(matches) > 10 else ""
            )
            message = f"file '{member}' is ambiguous in {', '.join(map(str, self.roots))}: {excerpt(shown)}"
        raise MissingFileError(message)

    @contextmanager
    def open(self, member: str) -> Iterator[IO[bytes]]:
        """Open a member for binary reading (its bytes are checked first)."""
        yield io.BytesIO(self.read_bytes(member))

    @contextmanager
    def open_decoded(self, member: str) -> Iterator[IO[bytes]]:
        """Open a member's decompressed content for binary reading (checked first).

        The stream counterpart of :meth:`read_decoded`: a gzip, bzip2 or xz
        member is checked as published, then decompressed under the expansion cap.
        """
        yield io.BytesIO(self.read_decoded(member))

    def read_decoded(self, member: str) -> bytes:
        """The content of a member, checked against its pins, then decompressed.

        A gzip, bzip2 or xz member (``.csv.gz``, ...) is checked as published
        and decompressed under the expansion cap
        (:func:`mudata.readers.decode.decompress`); other members are returned
        as :meth:`read_bytes` gives them.
        """
        return decompress(self.read_bytes(member), member, ratio=self.max_expansion)

    def read_bytes(self, member: str) -> bytes:
        """The whole content of a member, checked against its pins."""
        if self._closed:
            raise ValueError("read from closed Sources")
        name = self.find(member)
        i, inner = self.index[name]
        root, pins = self.roots[i], self.pins[i]
        pin = pins.members.get(name) if pins is not None else None
        _admit(root, name, pins, pin)
        limit = pin.size if pin is not None else None
        if i in self._archives:
            data = self._archives[i].read(inner, limit, f"member '{name}' of {root}")
        else:
            path = Path(inner) if inner else root
            # A file found in a folder root must not be, or lie under, a link.
            folder = root if inner and root.is_dir() and path.is_relative_to(root) else None
            data = _read_file(path, limit, folder)
        observed = hashlib.sha256(data).hexdigest()
        expected = pins.sha256 if pins is not None and inner == "" else pin.sha256 if pin else None
        if expected is not None and observed != expected:
            where = f"{root}" if inner == "" else f"member {excerpt(name)} of {root}"
            message = (
                f"sha256 mismatch for {where}"
                + (f" ({pins.label})" if pins is not None and pins.label else "")
                + f": expected {expected}, actual {observed}. Its bytes changed after they "
                f"were checked; nothing was built from them."
            )
            raise ChecksumError(message)
        verified = pins is not None and (pins.sha256 is not None or bool(pin and pin.sha256))
        self.reads[(root, name)] = Read(root, name, observed, verified)
        return data

    def close(self) -> None:
        """Release open archives; the index (the names) stays readable."""
        for archive in self._archives.values():
            archive.close()
        self._archives.clear()
        self._closed = True


def _refuse_unlisted(root: Path) -> None:
    """Refuse, naming each, what a folder listing would skip without a word.

    A link to a folder is not descended (its files would vanish from the
    listing whatever their names), and a FIFO, socket or device is never
    read. Links to files stay listed: reading one is refused by name.
    """
    found = [
        (p, kind)
        for p, kind in links_and_special_files(root)
        if kind != "a symbolic link" or p.is_dir()
    ]
    if not found:
        return
    shown = "; ".join(
        f"{excerpt(str(p))} is {kind + ' to a folder' if p.is_symlink() else kind}"
        for p, kind in found[:10]
    )
    more = f"; and {len(found) - 10} more" if len(found) > 10 else ""
    message = (
        f"the folder {root} holds what mudata does not read: {shown}{more}. No link is "
        f"followed and no special file is read inside a folder given to read."
    )
    raise ParseError(message)


def _admit(root: Path, name: str, pins: Pins | None, pin: Pin | None) -> None:
    """Refuse, before reading it, a member that the pins of its root do not allow."""
    if pins is None or pins.sha256 is not None or (pin is not None and pin.sha256):
        return
    what = f"member {excerpt(name)} of {root}" + (f" ({pins.label})" if pins.label else "")
    if pin is None and pins.pins_members:
        message = (
            f"{what} is read by the reader but not listed in the registry entry, which "
            f"pins the members it lists by sha256; refusing unlisted bytes "
            f"(--allow-unverified does not change this). List the member with its "
            f"sha256 in the entry, or narrow the reader's members pattern."
        )
        raise UnpinnedMemberError(message)
    if not pins.allow_unverified:
        message = (
            f"{what} has no sha256 in the registry; refusing unverified data. Pass "
            f"--allow-unverified (allow_unverified=True) to use it, recorded as unverified."
        )
        raise UsageError(message)


def _read_file(path: Path, limit: int | None, inside: Path | None = None) -> bytes:
    with open_regular(path, "file", inside=inside) as fh:
        data = fh.read() if limit is None else fh.read(limit + 1)
    if limit is not None and len(data) > limit:
        message = (
            f"{path} holds more than {limit:,} bytes, the size the registry records; refusing it"
        )
        raise LimitError(message)
    return data


Reader = Callable[["DatasetEntry", Sources], RawTable]
