"""The verified files of a release, as a reader reads them: :class:`Sources`.

Owns the index of a release's members (archives, folders and plain files,
searched in order; a folder holding links or special files is refused), and
every way a reader reads a member: whole, streamed through a spool, or
decompressed, each checked against its pins (:mod:`mudata.readers.pins`)
before a byte is handed over (:mod:`mudata.readers.member_bytes`).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

from mudata.bounds.archive import ArchiveIndex, sniff_kind
from mudata.config import max_read_bytes
from mudata.errors import ChecksumError, MissingFileError, MudataError, ParseError, Reason, excerpt
from mudata.files import links_and_special_files, open_regular
from mudata.readers.decode import compression_of, decoded_chunks
from mudata.readers.member_bytes import (
    CHUNK,
    Hashing,
    MemberRead,
    capped,
    expected_hash,
    file_chunks,
    read_back,
    too_large,
)
from mudata.readers.pins import Pins, Read, admit
from mudata.readers.spool import Spool

__all__ = ["Sources", "refuse_unlisted"]


class Sources:
    """Read-only view over the verified files of a release.

    Members are addressed by their path inside the release with the archive's
    top folder kept (``gestures-dataset/U01/01/01.txt``). A source is either an
    archive (zip or tar, read through :class:`mudata.bounds.archive.ArchiveIndex`), a
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
        Expansion cap of archives (see :func:`mudata.bounds.archive.max_expansion`).
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
                    refuse_unlisted(root)
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
            return read_back(fh, size, member)

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
            hashing = Hashing(source.chunks)
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
            hashing = Hashing(source.chunks)
            for _ in hashing:
                pass
            self._verify(source, hashing)
        finally:
            source.close()
        return str(hashing.digest.hexdigest())

    def _member(self, member: str, *, cap: int | None = None) -> MemberRead:
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
        admit(root, name, pins, pin)
        limit = pin.size if pin is not None else None
        source = MemberRead(name, root, inner, pins, pin, f"member {excerpt(name)} of {root}")
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
            piece = source.size + 1 if cap is not None else CHUNK
            source.chunks = file_chunks(source.file, path, limit, piece)
        if cap is not None and source.size > cap:
            source.close()
            raise too_large(source.what, cap, f"holds {source.size:,} bytes, more")
        if cap is not None and source.file is not None:
            # An archive member never yields more than it declares (checked
            # just above against the cap); a file may grow after its fstat.
            source.chunks = capped(source.chunks, source.what, cap)
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
            hashing = Hashing(source.chunks)
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
        self, spool: Spool, source: MemberRead, hashing: Hashing, decoding: bool, cap: int | None
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
                    raise too_large(source.what, cap, "decompresses to more bytes")
                spool.write(chunk)
        except MudataError:
            if decoding and not hashing.failed and expected_hash(source) is not None:
                # A stream that fails to decode may be a stream that changed: the
                # hash says which, as it did when members were read whole first.
                for _ in hashing:
                    pass
                self._verify(source, hashing)
            raise

    def _verify(self, source: MemberRead, hashing: Hashing) -> None:
        """Check the hash of what passed against the pin, and record the read."""
        observed = hashing.digest.hexdigest()
        expected = expected_hash(source)
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


def refuse_unlisted(root: Path) -> None:
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
