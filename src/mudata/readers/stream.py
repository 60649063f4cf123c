"""Raw samples read in chunks: what a reader of long-format signals gives the pipeline.

A release larger than memory cannot be one :class:`~mudata.readers.base.SignalTable`.
A reader that can read its members piece by piece also offers a *stream
reader*, ``(entry, sources, *, chunk_bytes=CHUNK_BYTES) -> SignalStream``
(listed in :data:`mudata.readers.STREAM_READERS`), whose chunks, laid end to
end, are the table its whole reader returns. The ``study-window`` recipe
windows them as they come (:class:`mudata.building.study_windows.StudyWindows`), so memory
is bounded by a chunk, a few samples per (user, class, recording) and the
feature rows.

The rules a stream keeps, so that the table built from it is the whole
path's, bit for bit:

* rows come in the order of the whole table (file order, members in their
  order); a chunk may end anywhere, even inside a recording;
* every chunk has the whole table's columns, each with one dtype in all chunks;
* counters that the whole table keeps in ``frame.attrs`` (``time_repeats``)
  are in :attr:`SignalStream.attrs` once the chunks are exhausted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from mudata.config import DEFAULT_MAX_READ_BYTES
from mudata.errors import LimitError
from mudata.readers.base import SignalTable
from mudata.readers.sources import Sources
from mudata.records.entry import DatasetEntry

if TYPE_CHECKING:
    import pandas as pd

#: Bytes of text a stream reader parses at a time (whole lines, so a little more).
CHUNK_BYTES = 1 << 22


@dataclass
class SignalStream:
    """Raw samples in chunks (see the module docstring).

    Attributes
    ----------
    chunks : iterable of SignalTable
        Consumed once, in order.
    attrs : dict
        The counters of the whole table's ``frame.attrs``, complete once
        ``chunks`` is exhausted.
    """

    chunks: Iterable[SignalTable]
    attrs: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[SignalTable]:
        return iter(self.chunks)


#: Chunks joined at most at once (each pending frame holds a few kilobytes of its own).
MAX_PENDING_FRAMES = 256


def coalesced(chunks: Iterable[SignalTable], min_rows: int = 1 << 16) -> Iterator[SignalTable]:
    """``chunks`` joined, in order, into chunks of ``min_rows`` rows or more.

    The last chunk may be shorter, and so may one joined from
    :data:`MAX_PENDING_FRAMES` chunks.

    A release of many tiny files gives one tiny chunk per file; windowing them
    one at a time costs a fixed overhead each. Chunk boundaries never change the
    table (see the module docstring), so small chunks are joined first.

    Parameters
    ----------
    chunks : iterable of SignalTable
    min_rows : int, optional
        Rows gathered before a chunk is passed on; memory holds at most about
        this many rows plus one incoming chunk.
    """
    pending: list[pd.DataFrame] = []
    rows = 0
    for chunk in chunks:
        pending.append(chunk.frame)
        rows += len(chunk.frame)
        # A frame costs kilobytes of its own: many tiny ones are joined early.
        if rows >= min_rows or len(pending) >= MAX_PENDING_FRAMES:
            yield SignalTable(_joined(pending))
            pending, rows = [], 0
    if pending:
        yield SignalTable(_joined(pending))


def _joined(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """One frame of ``frames`` in order (the frame itself when there is one)."""
    # Here, not at the top: `mudata list` imports the readers and must not pay for pandas.
    import pandas as pd

    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


#: A stream reader: ``(entry, sources, *, chunk_bytes=CHUNK_BYTES) -> SignalStream``.
StreamReader = Callable[[DatasetEntry, Sources], SignalStream]


def line_blocks(
    stream: IO[bytes],
    size: int,
    *,
    max_line: int = DEFAULT_MAX_READ_BYTES,
    what: str = "the file",
) -> Iterator[bytes]:
    """The bytes of ``stream`` in blocks of whole lines of about ``size`` bytes.

    Each block but the last ends with a newline; a line longer than ``size``
    is one block of its own. The blocks laid end to end are the stream's bytes.

    Parameters
    ----------
    stream : binary file object
    size : int
        Bytes read at a time (``size >= 1``).
    max_line : int, optional
        Longest line accepted, in bytes: a stream that runs on without a line
        break (an expansion bomb of zeros, a binary file) is refused here
        rather than gathered into memory. A stream reader passes
        :attr:`Sources.max_read <mudata.readers.sources.Sources>`, the cap of a
        member read whole, so that a line its whole reader reads is read in
        blocks too, and one it refuses is refused here.
    what : str, optional
        Names the stream in the error.

    Raises
    ------
    LimitError
        A line runs past ``max_line`` bytes.
    """
    if size < 1:
        message = f"block size must be at least 1 byte, got {size}"
        raise ValueError(message)
    pending: list[bytes] = []  # the parts of a line not yet ended (joined once)
    pending_bytes = 0
    offset = 0  # bytes of the stream before the pending line
    while True:
        data = stream.read(size)
        if not data:
            break
        end = data.rfind(b"\n") + 1
        if end == 0:
            pending.append(data)
            pending_bytes += len(data)
            if pending_bytes > max_line:
                message = (
                    f"{what}: a line runs past {max_line:,} bytes without a line break "
                    f"(from byte {offset:,}); this is not a file of text lines"
                )
                raise LimitError(message)
            continue
        block = b"".join([*pending, data[:end]]) if pending else data[:end]
        offset += len(block)
        pending, pending_bytes = ([data[end:]], len(data) - end) if end < len(data) else ([], 0)
        yield block
    if pending:
        yield b"".join(pending)


__all__ = [
    "CHUNK_BYTES",
    "MAX_PENDING_FRAMES",
    "SignalStream",
    "StreamReader",
    "coalesced",
    "line_blocks",
]
