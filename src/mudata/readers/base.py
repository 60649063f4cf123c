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
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any

from mudata.archive import ArchiveIndex, sniff_kind
from mudata.config import DEFAULT_MAX_READ_BYTES, READ_ENV, max_read_bytes
from mudata.entry import DatasetEntry
from mudata.errors import (
    ChecksumError,
    LimitError,
    MissingFileError,
    MudataError,
    ParseError,
    Reason,
    UnpinnedMemberError,
    UnverifiedDataError,
    excerpt,
)
from mudata.files import links_and_special_files, open_regular
from mudata.readers.decode import compression_of, decoded_chunks
from mudata.readers.spool import Spool

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


_CHUNK = 1 << 20


@dataclass
class _Hashing:
    """The published bytes of one member as they pass: their hash, their count, and how they ended."""

    chunks: Iterator[bytes]
    digest: Any = field(default_factory=hashlib.sha256)
    size: int = 0
    failed: bool = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self.chunks:
                self.digest.update(chunk)
                self.size += len(chunk)
                yield chunk
        except BaseException:
            self.failed = True
            raise


@dataclass
class _Member:
    """One member being read: where it is, its pins, its size as published, and its chunks."""

    name: str
    root: Path
    inner: str
    pins: Pins | None
    pin: Pin | None
    what: str
    size: int = 0
    chunks: Iterator[bytes] = field(default_factory=lambda: iter(()))
    file: IO[bytes] | None = None

    def close(self) -> None:
        """Close the member's chunks (an archive member) and its file (a plain file)."""
        close = getattr(self.chunks, "close", None)
        if close is not None:
            close()
        if self.file is not None:
            self.file.close()


def _expected(source: _Member) -> str | None:
    """The hash a member's bytes must have: the root's for a plain file, else the member's pin."""
    if source.pins is not None and source.inner == "":
        return source.pins.sha256
    return source.pin.sha256 if source.pin else None


class Sources:
    """Read-only view over the verified files of a release.

    Members are addressed by their path inside the release with the archive's
    top folder kept (``gestures-dataset/U01/01/01.txt``). A source is either an
    archive (zip or tar, read through :class:`mudata.archive.ArchiveIndex`), a
    folder holding the extracted members, or a plain file.

    Every member is hashed and checked against its ``pins`` before a reader
    sees a byte of it; :attr:`reads` records each member read and whether its
    bytes were pinned. :meth:`open` and :meth:`open_decoded` stream a member
    in chunks of 1 MiB into a spool (:class:`mudata.readers.spool.Spool`:
    memory up to 1 MiB, then an unnamed file in a private temporary folder),
    so memory stays constant whatever the member's size; :meth:`read_bytes`
    and :meth:`read_decoded` return the whole member, up to :func:`mudata.config.max_read_bytes`.

    Parameters
    ----------
    roots : list of Path
        Archives, folders or files, searched in order.
    pins : list of Pins or None, optional
        One per root. A root without pins is read as is and its reads are
        recorded as unverified (tests and direct use of a reader).
    max_expansion : float, optional
        Expansion cap of archives (see :func:`mudata.archive.max_expansion`).
    max_read : int, optional
        Cap on a member read whole (see :func:`mudata.config.max_read_bytes`).
    spool_dir : Path, optional
        Where spool folders are made; default the system's temporary folder.
    """

    def __init__(
        self,
        roots: list[Path],
        pins: list[Pins | None] | None = None,
        *,
        max_expansion: float | None = None,
        max_read: int | None = None,
        spool_dir: Path | None = None,
    ) -> None:
        self.roots = [Path(r) for r in roots]
        self.pins = list(pins) if pins is not None else [None] * len(self.roots)
        if len(self.pins) != len(self.roots):
            raise ValueError("Sources: one Pins (or None) per root")
        self.max_expansion = max_expansion
        self.max_read = max_read_bytes(max_read)
        self.spool_dir = spool_dir
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
        """Open a member for binary reading, its bytes as published, checked first.

        The member is streamed in chunks of 1 MiB into a spool (memory up to
        1 MiB, then a file in a private temporary folder) while it is hashed;
        the spool is handed over, at its start, only once the hash matched the
        pin, and removed when the ``with`` block ends, however it ends. Memory
        stays constant whatever the member's size. An uncompressed file in a
        folder (or given as the root) is not copied: it is hashed through its
        open descriptor, then handed over from its start.

        Raises
        ------
        ChecksumError
            The member's hash differs from its pin; nothing is handed over.
        LimitError
            The member is longer than its pin or its declared size, or holding
            it would fill the disk.
        """
        with self._spooled(member, decode=False) as (fh, _):
            yield fh

    @contextmanager
    def open_decoded(self, member: str) -> Iterator[IO[bytes]]:
        """Open a member's decompressed content for binary reading (checked first).

        The stream counterpart of :meth:`read_decoded`, as :meth:`open` is of
        :meth:`read_bytes`: a gzip, bzip2 or xz member is hashed as published
        and decompressed chunk by chunk, under the expansion cap, into the
        spool; its bytes are handed over only once the hash matched.
        """
        with self._spooled(member, decode=True) as (fh, _):
            yield fh

    def read_decoded(self, member: str) -> bytes:
        """The content of a member, checked against its pins, then decompressed.

        A gzip, bzip2 or xz member (``.csv.gz``, ...) is checked as published
        and decompressed under the expansion cap
        (:func:`mudata.readers.decode.decoded_chunks`) into a spool, which is
        read back once the hash matched; other members are returned as
        :meth:`read_bytes` gives them.

        Raises
        ------
        LimitError
            The decompressed content is larger than :func:`mudata.config.max_read_bytes`
            (besides what :meth:`open_decoded` refuses).
        """
        if compression_of(self.find(member)) is None:
            return self.read_bytes(member)
        with self._spooled(member, decode=True, cap=self.max_read) as (fh, size):
            return _read_back(fh, size, member)

    def read_bytes(self, member: str) -> bytes:
        """The whole content of a member, checked against its pins.

        The member is refused before it is read when it declares more than
        :func:`mudata.config.max_read_bytes`, and one chunk past its declared size when it
        yields more (so at most that many bytes are ever held).

        Raises
        ------
        LimitError
            The member is larger than :func:`mudata.config.max_read_bytes` (besides what
            :meth:`open` refuses).
        """
        source = self._member(member, cap=self.max_read)
        try:
            hashing = _Hashing(source.chunks)
            # One piece for a file (read at once), chunks for an archive member.
            data = b"".join(hashing)
            self._verify(source, hashing)
        finally:
            source.close()
        return data

    def sha256(self, member: str) -> str:
        """The SHA-256 of a member as published, read in chunks, checked against its pin."""
        source = self._member(member)
        try:
            hashing = _Hashing(source.chunks)
            for _ in hashing:
                pass
            self._verify(source, hashing)
        finally:
            source.close()
        return hashing.digest.hexdigest()

    def _member(self, member: str, *, cap: int | None = None) -> _Member:
        """The published bytes of a member, opened and bounded, its pins admitting it.

        ``cap`` (a whole read): refused at once when the member declares more,
        and a file is read in one piece.
        """
        if self._closed:
            raise ValueError("read from closed Sources")
        name = self.find(member)
        i, inner = self.index[name]
        root, pins = self.roots[i], self.pins[i]
        pin = pins.members.get(name) if pins is not None else None
        _admit(root, name, pins, pin)
        limit = pin.size if pin is not None else None
        source = _Member(name, root, inner, pins, pin, f"member {excerpt(name)} of {root}")
        if i in self._archives:
            archive = self._archives[i]
            source.size = archive.size(inner)
            source.chunks = archive.chunks(inner, limit, source.what)
        else:
            path = Path(inner) if inner else root
            source.what = str(path)
            # A file found in a folder root must not be, or lie under, a link.
            folder = root if inner and root.is_dir() and path.is_relative_to(root) else None
            source.file = open_regular(path, "file", inside=folder)
            source.size = os.fstat(source.file.fileno()).st_size
            # A whole read takes a file in one piece (refused below if over the cap).
            piece = source.size + 1 if cap is not None else _CHUNK
            source.chunks = _file_chunks(source.file, path, limit, piece)
        if cap is not None and source.size > cap:
            source.close()
            raise _too_large(source.what, cap, f"holds {source.size:,} bytes, more")
        if cap is not None and source.file is not None:
            # An archive member never yields more than it declares (checked
            # just above against the cap); a file may grow after its fstat.
            source.chunks = _capped(source.chunks, source.what, cap)
        return source

    @contextmanager
    def _spooled(
        self, member: str, *, decode: bool, cap: int | None = None
    ) -> Iterator[tuple[IO[bytes], int]]:
        """The member's bytes (decoded when ``decode``) and their count, once its hash matched.

        Published bytes pass in chunks through a hash, then (``decode``)
        through a decompressor, into a :class:`Spool` that ``cap`` bounds.
        """
        source = self._member(member)
        try:
            hashing = _Hashing(source.chunks)
            decoding = decode and compression_of(source.name) is not None
            if source.file is not None and not decoding:
                # Hashed where it is, then read again from its start: this
                # trusts that nobody writes the file while mudata holds it
                # open (out of scope, docs/trust.md), and saves a copy of what
                # may be a recording larger than memory.
                for _ in hashing:
                    pass
                self._verify(source, hashing)
                source.file.seek(0)
                yield source.file, hashing.size
                return
            with Spool(source.what, self.spool_dir) as spool:
                self._fill(spool, source, hashing, decoding, cap)
                self._verify(source, hashing)
                yield spool.reader(), spool.size
        finally:
            source.close()

    def _fill(
        self, spool: Spool, source: _Member, hashing: _Hashing, decoding: bool, cap: int | None
    ) -> None:
        """Pass the member's bytes (decoded when ``decoding``) into ``spool``, at most ``cap``."""
        stream = (
            decoded_chunks(hashing, source.name, source.size, ratio=self.max_expansion)
            if decoding
            else iter(hashing)
        )
        try:
            for chunk in stream:
                if cap is not None and spool.size + len(chunk) > cap:
                    raise _too_large(source.what, cap, "decompresses to more bytes")
                spool.write(chunk)
        except MudataError:
            if decoding and not hashing.failed and _expected(source) is not None:
                # A stream that fails to decode may be a stream that changed: the
                # hash says which, as it did when members were read whole first.
                for _ in hashing:
                    pass
                self._verify(source, hashing)
            raise

    def _verify(self, source: _Member, hashing: _Hashing) -> None:
        """Check the hash of what passed against the pin, and record the read."""
        observed = hashing.digest.hexdigest()
        expected = _expected(source)
        pins = source.pins
        if expected is not None and observed != expected:
            where = (
                f"{source.root}"
                if source.inner == ""
                else f"member {excerpt(source.name)} of {source.root}"
            )
            message = (
                f"sha256 mismatch for {where}"
                + (f" ({pins.label})" if pins is not None and pins.label else "")
                + f": expected {expected}, actual {observed}. Its bytes changed after they "
                f"were checked; nothing was built from them."
            )
            raise ChecksumError(message)
        verified = pins is not None and (
            pins.sha256 is not None or bool(source.pin and source.pin.sha256)
        )
        self.reads[(source.root, source.name)] = Read(source.root, source.name, observed, verified)

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
    raise ParseError(message, reason=Reason("unreadable", "members"))


def _admit(root: Path, name: str, pins: Pins | None, pin: Pin | None) -> None:
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
        raise UnverifiedDataError(
            message, subject=what, cli={"allow_unverified=True": "--allow-unverified"}
        )


def _file_chunks(
    fh: IO[bytes], path: Path, limit: int | None, piece: int = _CHUNK
) -> Iterator[bytes]:
    """The bytes of an open file in pieces, refused one piece past ``limit`` (the pinned size)."""
    total = 0
    while chunk := fh.read(piece if limit is None else min(piece, limit + 1 - total)):
        total += len(chunk)
        if limit is not None and total > limit:
            message = f"{path} holds more than {limit:,} bytes, the size the registry records; refusing it"
            raise LimitError(message)
        yield chunk


def _capped(chunks: Iterator[bytes], what: str, cap: int) -> Iterator[bytes]:
    """``chunks``, refused once they pass ``cap`` bytes (a member read whole)."""
    total = 0
    try:
        for chunk in chunks:
            total += len(chunk)
            if total > cap:
                raise _too_large(what, cap, "yields more bytes")
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def _too_large(what: str, cap: int, found: str) -> LimitError:
    """The refusal of a member too large to be read whole."""
    message = (
        f"{what} {found} than the cap on a member read whole, {cap:,} bytes "
        f"(${READ_ENV}, default {DEFAULT_MAX_READ_BYTES:,}); refusing it. If the file is trusted, "
        f"raise the cap with {READ_ENV}={cap * 4}. Only the HAR70+ reader (har70-csv) "
        f"streams members in chunks; the other readers, long-signals included, read each "
        f"member whole"
    )
    return LimitError(message)


def _read_back(fh: IO[bytes], size: int, member: str) -> bytes:
    """The ``size`` checked bytes of ``fh``, read from its start in one piece."""
    data = fh.read(size + 1)
    if len(data) != size:
        message = (
            f"{member} changed while it was read: {len(data):,} bytes where {size:,} were "
            f"checked; nothing was built from them"
        )
        raise ChecksumError(message)
    return data


Reader = Callable[["DatasetEntry", Sources], RawTable]
