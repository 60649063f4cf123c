"""Compressed streams, made readable: gzip, bzip2 and xz, decompressed as they are read.

Owns :func:`decoded_chunks` (and :func:`decompress` for whole bytes): gzip,
bzip2 and xz single files (``.csv.gz``, ``.txt.bz2``, ...) and such members of
archives, decompressed chunk by chunk as they are read, under the archive
expansion cap (:func:`mudata.bounds.archive.max_expansion`), so that a small
hostile stream cannot fill the memory; :func:`head` (the first bytes of a
file, for a look at its columns); and the names of compressed files
(:func:`compression_of`, :func:`plain_name`, :func:`data_suffix`).

MATLAB files are read in :mod:`mudata.readers.matlab`, the separators of
delimited text in :mod:`mudata.readers.delimited`. The readers call these
after the bytes were checked against their pins: the pins are those of the
files as published (compressed).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath
from typing import IO

from mudata.bounds.archive import expansion_budget, max_expansion
from mudata.errors import LimitError, MudataError, ParseError, Reason

__all__ = [
    "COMPRESSIONS",
    "ChunkReader",
    "compression_of",
    "data_suffix",
    "decoded_chunks",
    "decompress",
    "head",
    "plain_name",
]

#: File name suffix -> compression, for the single-stream formats read here.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
_CHUNK = 1 << 20
_OPENERS = {
    "gzip": lambda fh: gzip.GzipFile(fileobj=fh, mode="rb"),
    "bzip2": lambda fh: bz2.BZ2File(fh, mode="rb"),
    "xz": lambda fh: lzma.LZMAFile(fh, mode="rb"),  # noqa: SIM115 - callers close it
}


def compression_of(name: str) -> str | None:
    """``"gzip"``, ``"bzip2"``, ``"xz"`` or None, from the suffix of ``name``."""
    return COMPRESSIONS.get(PurePosixPath(name).suffix.lower())


def plain_name(name: str) -> str:
    """``name`` without its compression suffix (``a/b.csv.gz`` -> ``a/b.csv``)."""
    return name[: -len(PurePosixPath(name).suffix)] if compression_of(name) else name


def data_suffix(name: str) -> str:
    """The suffix that says the format, compression suffix included (``.csv.gz``)."""
    path = PurePosixPath(name)
    if compression_of(name):
        inner = PurePosixPath(path.stem).suffix.lower()
        return inner + path.suffix.lower()
    return path.suffix.lower()


class ChunkReader(io.RawIOBase):
    """A read-only binary file over an iterator of byte chunks (for the stdlib decompressors).

    The decompressors of :mod:`gzip`, :mod:`bz2` and :mod:`lzma` read their
    input through ``read``; this lets them take a member chunk by chunk as it
    is hashed, instead of its whole bytes.
    """

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        # A view, not a slice, of the chunk being read: the decompressors ask
        # for a few KiB at a time, and slicing would copy the rest each time.
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = memoryview(chunk)
        n = min(len(view), len(self._pending))
        view[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def decoded_chunks(
    chunks: Iterable[bytes], name: str, compressed_size: int, *, ratio: float | None = None
) -> Iterator[bytes]:
    """The decompressed content of a stream given in ``chunks``, in chunks of at most 1 MiB.

    Parameters
    ----------
    chunks : iterable of bytes
        The stream as published, in order.
    name : str
        Its path; the suffix says the compression (none: the chunks pass as they are).
    compressed_size : int
        Its size as published (at least what ``chunks`` yield): the expansion
        budget is counted from it.
    ratio : float, optional
        Expansion cap (bytes out per byte in); default as for archives.

    Raises
    ------
    LimitError
        The stream expands beyond the cap (raised as soon as the output passes
        it, so no more than the budget is ever produced).
    ParseError
        The stream is corrupt or truncated.
    """
    kind = compression_of(name)
    if kind is None:
        yield from chunks
        return
    budget = expansion_budget(compressed_size, max_expansion(ratio))
    total = 0
    try:
        with _OPENERS[kind](ChunkReader(chunks)) as stream:
            while chunk := stream.read(_CHUNK):
                total += len(chunk)
                if total > budget:
                    message = (
                        f"{name}: the {kind} stream expands to more than {budget:,.0f} bytes "
                        f"({compressed_size:,} compressed); raise the cap with $MUDATA_MAX_EXPANSION "
                        f"or --max-expansion if the file is trusted"
                    )
                    raise LimitError(message)
                yield chunk
    except MudataError:
        raise  # the chunks' own refusals (a member past its size), and the cap above
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
        message = f"{name}: not a readable {kind} stream ({type(exc).__name__}: {str(exc)[:200]}); the file is probably truncated or corrupt"
        raise ParseError(message, reason=Reason("unreadable", "members")) from None


def decompress(data: bytes, name: str, *, ratio: float | None = None) -> bytes:
    """The decompressed content of ``data`` (named ``name``), or ``data`` if not compressed.

    Parameters
    ----------
    data : bytes
        The member's bytes as published (already checked against its pin).
    name : str
        Its path; the suffix says the compression.
    ratio : float, optional
        Expansion cap (bytes out per byte in); default as for archives.

    Raises
    ------
    LimitError
        The stream expands beyond the cap.
    ParseError
        The stream is corrupt or truncated.
    """
    if compression_of(name) is None:
        return data
    return b"".join(decoded_chunks([data], name, len(data), ratio=ratio))


def head(stream: IO[bytes], name: str, size: int = 1 << 16) -> bytes:
    """The first ``size`` bytes of ``stream`` (a file named ``name``), decompressed.

    For a look at the columns of a file, not for its data: a corrupt or
    truncated stream gives the bytes decoded so far (possibly none).
    """
    kind = compression_of(name)
    if kind is None:
        return stream.read(size)
    try:
        with _OPENERS[kind](stream) as decoded:
            return decoded.read(size)
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError):
        return b""
