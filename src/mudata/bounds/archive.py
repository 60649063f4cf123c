"""One safe, bounded index over the members of a zip or tar archive.

Both the hash check of :mod:`mudata.sources.download` and the readers (through
:class:`mudata.readers.sources.Sources`) open members only through
:class:`ArchiveIndex`, so the name a reader asks for and the name a hash was
checked under are the same name, resolved by the same code. The index refuses
what would let two of them differ or would let an archive do harm:

* member names that collide once normalised (``data/x.csv`` and
  ``./data/x.csv``, or the same name twice: there is no "last copy wins");
* absolute names and names with a ``..`` part;
* tar symlinks, hardlinks, devices and FIFOs; zip entries whose Unix mode is a
  link or a device; encrypted zip entries;
* archives whose members declare more bytes than the expansion cap
  (:func:`mudata.config.max_expansion`), checked before anything is decompressed, and
  members that yield more bytes than they declare, checked while
  decompressing;
* archives of more members than the member cap (:func:`mudata.config.max_members`): a zip's
  count is read from its end record before its directory is parsed, a tar's
  headers are counted as they are read.
"""

from __future__ import annotations

import contextlib
import lzma
import os
import re
import stat
import struct
import tarfile
import unicodedata
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Self

# The caps are settings, read and checked in mudata.config.
from mudata.config import EXPANSION_ENV, MEMBERS_ENV, max_expansion, max_members
from mudata.errors import ChecksumError, LimitError, ParseError, excerpt
from mudata.files import open_regular, sha256_file

_EOCD = b"PK\x05\x06"
_ZIP64_EOCD = b"PK\x06\x06"
# Small archives of very regular text (test fixtures, a toy CSV) compress
# better than 100:1; below this many bytes the ratio is not enforced.
EXPANSION_FLOOR = 64 * 2**20
_CHUNK = 1 << 20

# What a truncated, corrupt or hostile archive makes the standard library raise.
CORRUPT_ARCHIVE_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    tarfile.TarError,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,  # gzip.BadGzipFile, bz2 errors, short reads
    ValueError,  # negative seeks, bad header fields
    struct.error,
    NotImplementedError,  # unsupported compression methods
    RuntimeError,  # zipfile: encrypted member
    OverflowError,
    IndexError,
    KeyError,
)


def zip_declared_count(fh: IO[bytes]) -> int | None:
    """The member count a zip's end record declares, or None when no end record is found.

    Read from the last 64 KiB (the end record and its comment) and, for a
    zip64 archive, its zip64 end record; the central directory is not parsed.
    """
    size = fh.seek(0, os.SEEK_END)
    start = max(0, size - (1 << 16) - 22)
    fh.seek(start)
    tail = fh.read()
    at = tail.rfind(_EOCD)
    if at < 0 or at + 22 > len(tail):
        return None
    (count,) = struct.unpack_from("<H", tail, at + 10)
    zip64 = tail.rfind(_ZIP64_EOCD, 0, at)
    if zip64 >= 0 and zip64 + 40 <= len(tail):
        (count64,) = struct.unpack_from("<Q", tail, zip64 + 32)
        count = max(count, count64)
    elif count == 0xFFFF:
        return None  # a zip64 record outside the tail read: the directory says
    return count


def expansion_budget(archive_size: int, ratio: float) -> float:
    """Bytes the members of an archive of ``archive_size`` bytes may declare in all."""
    return max(EXPANSION_FLOOR, ratio * archive_size)


def normalise_member(raw: str, archive: Path | str) -> str:
    """The name a member is known by: ``./`` and empty parts dropped, NFC Unicode.

    Returns ``""`` for the archive's root folder entry.

    Raises
    ------
    ParseError
        The name is absolute, holds a ``..`` part or a NUL byte.
    """
    if "\x00" in raw:
        message = (
            f"archive {archive}: member name {excerpt(raw)} holds a NUL byte; refusing the archive"
        )
        raise ParseError(message)
    if raw.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", raw):
        message = (
            f"archive {archive}: member {excerpt(raw)} has an absolute path; refusing the archive"
        )
        raise ParseError(message)
    if ".." in re.split(r"[/\\]", raw):
        message = f"archive {archive}: member {excerpt(raw)} has a '..' part; refusing the archive"
        raise ParseError(message)
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    return unicodedata.normalize("NFC", "/".join(parts))


@dataclass(frozen=True)
class _Entry:
    raw: zipfile.ZipInfo | tarfile.TarInfo
    size: int


def _kind(fh: IO[bytes], declared: str | None) -> str | None:
    if declared is not None:
        return declared
    fh.seek(0)
    if zipfile.is_zipfile(fh):
        return "zip"
    fh.seek(0)
    try:
        with tarfile.open(fileobj=fh, mode="r:*"):
            return "tar"
    except CORRUPT_ARCHIVE_ERRORS:
        return None
    finally:
        fh.seek(0)


def sniff_kind(path: Path) -> str | None:
    """'zip', 'tar' or None for a regular file (never blocks on a FIFO)."""
    with open_regular(path, "archive") as fh:
        return _kind(fh, None)


class ArchiveIndex:
    """The regular-file members of one archive, by normalised name.

    Parameters
    ----------
    path : Path
        The archive (a regular file; FIFOs and devices are refused).
    kind : {"zip", "tar"}, optional
        Default: sniffed from the content.
    sha256 : str, optional
        When given, the archive's bytes are hashed through the very descriptor
        the members are then read from, and a mismatch is a ChecksumError.
    ratio : float, optional
        Expansion cap (see :func:`mudata.config.max_expansion`).
    member_cap : int, optional
        Member cap (see :func:`mudata.config.max_members`).

    Raises
    ------
    ParseError
        Not an archive, corrupt, or holding a refused member (see module docstring).
    LimitError
        The members declare more bytes than the expansion cap allows, or are
        more than the member cap.
    ChecksumError
        ``sha256`` given and the archive differs.
    """

    def __init__(
        self,
        path: Path,
        kind: str | None = None,
        *,
        sha256: str | None = None,
        ratio: float | None = None,
        member_cap: int | None = None,
    ) -> None:
        self.path = Path(path)
        self._fh = open_regular(self.path, "archive")
        self._zip: zipfile.ZipFile | None = None
        self._tar: tarfile.TarFile | None = None
        self.members: dict[str, _Entry] = {}
        try:
            size = os.fstat(self._fh.fileno()).st_size
            if sha256 is not None:
                self._check_own_hash(sha256)
            self.budget = expansion_budget(size, max_expansion(ratio))
            self.member_cap = max_members(member_cap)
            self.kind = _kind(self._fh, kind)
            if self.kind is None:
                message = f"{self.path} is not a zip or tar archive"
                raise ParseError(message)
            try:
                self._scan()
            except (ParseError, LimitError):
                raise
            except CORRUPT_ARCHIVE_ERRORS as exc:
                message = (
                    f"{self.path} is not a readable {self.kind} archive "
                    f"({type(exc).__name__}: {str(exc)[:200]}); it is probably truncated or corrupt"
                )
                raise ParseError(message) from None
        except BaseException:
            self.close()
            raise

    def _check_own_hash(self, expected: str) -> None:
        observed = sha256_file(self._fh)
        if observed != expected:
            message = f"sha256 mismatch for {self.path}: expected {expected}, actual {observed}"
            raise ChecksumError(message)

    # ------------------------------------------------------------ scanning

    def _too_many(self, count: int | None = None) -> LimitError:
        """The refusal of an archive of more members than the cap (``count``: as its end record declares)."""
        held = (
            f"declares {count:,} members, more than the cap of {self.member_cap:,}"
            if count is not None
            else f"holds more than the cap of {self.member_cap:,} members"
        )
        message = (
            f"archive {self.path} {held}; refusing it. Raise the cap with "
            f"${MEMBERS_ENV} if the archive is trusted."
        )
        return LimitError(message)

    def _add(
        self, raw_name: str, info: zipfile.ZipInfo | tarfile.TarInfo, size: int, is_dir: bool
    ) -> None:
        self._count += 1
        if self._count > self.member_cap:
            raise self._too_many()
        name = normalise_member(raw_name, self.path)
        if name in self._seen:
            message = (
                f"archive {self.path}: members {excerpt(self._seen[name])} and {excerpt(raw_name)} both "
                f"resolve to {excerpt(name)}; refusing an archive whose member names collide"
            )
            raise ParseError(message)
        if name:
            self._seen[name] = raw_name
        self._declared += size
        if self._declared > self.budget:
            message = (
                f"archive {self.path} expands to more than {self.budget:,.0f} bytes "
                f"({os.fstat(self._fh.fileno()).st_size:,}-byte archive; cap "
                f"{self.budget / max(1, os.fstat(self._fh.fileno()).st_size):.0f} bytes per byte). Raise "
                f"the cap with ${EXPANSION_ENV} or --max-expansion if the archive is trusted."
            )
            raise LimitError(message)
        if not is_dir and name:
            self.members[name] = _Entry(info, size)

    def _scan(self) -> None:
        self._seen: dict[str, str] = {}
        self._declared = 0
        self._count = 0
        if self.kind == "zip":
            # The count first: parsing the directory holds every entry in memory.
            declared = zip_declared_count(self._fh)
            if declared is not None and declared > self.member_cap:
                raise self._too_many(declared)
            self._fh.seek(0)
            self._zip = zipfile.ZipFile(self._fh)
            for info in self._zip.infolist():
                self._check_zip_info(info)
                self._add(info.filename, info, info.file_size, info.is_dir())
        else:
            self._fh.seek(0)
            self._tar = tarfile.open(fileobj=self._fh, mode="r:*")  # noqa: SIM115 - closed by close()
            # Iterating reads one header at a time; the budget is checked before
            # the data of the next member is skipped (decompressed).
            for member in self._tar:
                self._check_tar_info(member)
                self._add(
                    member.name, member, member.size if member.isfile() else 0, member.isdir()
                )

    def _check_zip_info(self, info: zipfile.ZipInfo) -> None:
        mode = info.external_attr >> 16
        kind = stat.S_IFMT(mode)
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            what = "a symbolic link" if kind == stat.S_IFLNK else "not a regular file"
            message = f"archive {self.path}: member {excerpt(info.filename)} is {what}; refusing the archive"
            raise ParseError(message)
        if info.flag_bits & 0x1:
            message = f"archive {self.path}: member {excerpt(info.filename)} is encrypted; refusing the archive"
            raise ParseError(message)

    def _check_tar_info(self, info: tarfile.TarInfo) -> None:
        if info.isfile() or info.isdir():
            return
        what = (
            "a symbolic link"
            if info.issym()
            else "a hard link"
            if info.islnk()
            else "a device"
            if info.isdev()
            else "not a regular file"
        )
        message = (
            f"archive {self.path}: member {excerpt(info.name)} is {what}; refusing the archive"
        )
        raise ParseError(message)

    # ------------------------------------------------------------- reading

    def names(self) -> list[str]:
        """Normalised names of the regular-file members, in archive order."""
        return list(self.members)

    def size(self, name: str) -> int:
        """The size the archive declares for member ``name`` (it never yields more)."""
        return self.members[name].size

    def read(self, name: str, limit: int | None = None, what: str | None = None) -> bytes:
        """The bytes of member ``name``, at most its declared size (and ``limit``).

        Raises
        ------
        LimitError
            The member yields more bytes than it declares or than ``limit``.
        ParseError
            The member cannot be decompressed (corrupt data, bad CRC).
        """
        return b"".join(self.chunks(name, limit, what))

    def chunks(
        self, name: str, limit: int | None = None, what: str | None = None
    ) -> Iterator[bytes]:
        """The bytes of member ``name`` in chunks of at most 1 MiB, checked as :meth:`read` checks them.

        A generator: the member is opened when the first chunk is asked for and
        closed when the generator ends or is closed. A member that yields more
        than it declares (or than ``limit``) is refused one chunk past the
        bound, and one that yields less when it ends, so a consumer that stops
        early never sees more than the bound.

        Raises
        ------
        LimitError
            The member yields more bytes than it declares or than ``limit``.
        ParseError
            The member cannot be decompressed, or is shorter than it declares.
        """
        entry = self.members[name]
        bound = entry.size if limit is None else min(entry.size, limit)
        label = what or f"member '{name}' of {self.path}"
        total = 0
        try:
            with self._open(entry) as fh:
                while chunk := fh.read(min(_CHUNK, bound + 1 - total)):
                    total += len(chunk)
                    if total > bound:
                        message = (
                            f"{label} yields more than {bound:,} bytes, the size "
                            + (
                                "the archive declares for it"
                                if bound == entry.size
                                else "the registry records"
                            )
                            + "; refusing it"
                        )
                        raise LimitError(message)
                    yield chunk
        except (LimitError, ParseError):
            raise
        except CORRUPT_ARCHIVE_ERRORS as exc:
            message = f"{label} cannot be read ({type(exc).__name__}: {str(exc)[:200]}); the archive is probably corrupt"
            raise ParseError(message) from None
        if total < entry.size:
            message = f"{label} is truncated: {total:,} bytes of the {entry.size:,} it declares"
            raise ParseError(message)

    def _open(self, entry: _Entry) -> IO[bytes]:
        if self._zip is not None:
            assert isinstance(entry.raw, zipfile.ZipInfo)
            return self._zip.open(entry.raw)
        assert self._tar is not None and isinstance(entry.raw, tarfile.TarInfo)
        extracted = self._tar.extractfile(entry.raw)
        if extracted is None:  # pragma: no cover - only regular files are indexed
            message = f"member {entry.raw.name!r} of {self.path} is not a regular file"
            raise ParseError(message)
        return extracted

    def close(self) -> None:
        """Release the archive's file descriptor."""
        for handle in (self._zip, self._tar, self._fh):
            if handle is not None:
                with contextlib.suppress(*CORRUPT_ARCHIVE_ERRORS):
                    handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "CORRUPT_ARCHIVE_ERRORS",
    "EXPANSION_FLOOR",
    "MEMBERS_ENV",
    "ArchiveIndex",
    "expansion_budget",
    "max_expansion",
    "normalise_member",
    "sniff_kind",
    "zip_declared_count",
]
