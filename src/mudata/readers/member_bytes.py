"""The published bytes of one member as a reader reads them: bounded, hashed, then checked.

Owns :class:`MemberRead` (where a member is, its pins, its size and its
chunks), :class:`Hashing` (the hash and count of the bytes as they pass),
:func:`expected_hash`, and the bounds a read keeps: :func:`file_chunks` (a
file refused one piece past its pinned size), :func:`capped` and
:func:`too_large` (the cap on a member read whole) and :func:`read_back`.
:class:`~mudata.readers.sources.Sources` reads every member through them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mudata.config import DEFAULT_MAX_READ_BYTES, READ_ENV
from mudata.errors import ChecksumError, LimitError
from mudata.readers.pins import Pin, Pins

__all__ = [
    "CHUNK",
    "Hashing",
    "MemberRead",
    "capped",
    "expected_hash",
    "file_chunks",
    "read_back",
    "too_large",
]

#: The pieces a member is read and hashed in.
CHUNK = 1 << 20


@dataclass
class Hashing:
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
class MemberRead:
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


def expected_hash(source: MemberRead) -> str | None:
    """The hash a member's bytes must have: the root's for a plain file, else the member's pin."""
    if source.pins is not None and source.inner == "":
        return source.pins.sha256
    return source.pin.sha256 if source.pin else None


def file_chunks(
    fh: IO[bytes], path: Path, limit: int | None, piece: int = CHUNK
) -> Iterator[bytes]:
    """The bytes of an open file in pieces, refused one piece past ``limit`` (the pinned size)."""
    total = 0
    while chunk := fh.read(piece if limit is None else min(piece, limit + 1 - total)):
        total += len(chunk)
        if limit is not None and total > limit:
            message = f"{path} holds more than {limit:,} bytes, the size the registry records; refusing it"
            raise LimitError(message)
        yield chunk


def capped(chunks: Iterator[bytes], what: str, cap: int) -> Iterator[bytes]:
    """``chunks``, refused once they pass ``cap`` bytes (a member read whole)."""
    total = 0
    try:
        for chunk in chunks:
            total += len(chunk)
            if total > cap:
                raise too_large(what, cap, "yields more bytes")
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def too_large(what: str, cap: int, found: str) -> LimitError:
    """The refusal of a member too large to be read whole."""
    message = (
        f"{what} {found} than the cap on a member read whole, {cap:,} bytes "
        f"(${READ_ENV}, default {DEFAULT_MAX_READ_BYTES:,}); refusing it. If the file is trusted, "
        f"raise the cap with {READ_ENV}={cap * 4}. Only the HAR70+ reader (har70-csv) "
        f"streams members in chunks; the other readers, long-signals included, read each "
        f"member whole"
    )
    return LimitError(message)


def read_back(fh: IO[bytes], size: int, member: str) -> bytes:
    """The ``size`` checked bytes of ``fh``, read from its start in one piece."""
    data = fh.read(size + 1)
    if len(data) != size:
        message = (
            f"{member} changed while it was read: {len(data):,} bytes where {size:,} were "
            f"checked; nothing was built from them"
        )
        raise ChecksumError(message)
    return data
