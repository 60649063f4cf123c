"""Where a member's bytes wait while they are hashed: memory up to 1 MiB, then a private file.

A reader must not see a byte of a member before the member's hash matched its
pin, and a member may be larger than memory (an expansion bomb, or a cohort's
recording). :class:`Spool` holds the bytes in between: the first
:data:`IN_MEMORY` bytes in memory, then in an unnamed temporary file inside a
private folder (mode 0700) made for it, checking as it goes that the disk
keeps :data:`RESERVE` bytes free. Closing the spool, on success, on an error
or on ``KeyboardInterrupt``, removes the folder and the file.

The folder is made under the ``folder`` given (a build gives
``<data home>/<name>/.spool``), by default the system's temporary folder
(``$TMPDIR``, see :func:`tempfile.gettempdir`): the roots a release is read
from may be read-only (``--manual-dir``, a shared copy), and ``Sources`` is
used without a data home (``mudata init``, tests).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import IO, Self

from mudata.errors import LimitError

#: Bytes a spool keeps in memory before it moves to a file: small members
#: (most members of most releases) never touch the disk.
IN_MEMORY = 1 << 20
#: Free bytes a spool leaves on its file system: past this it stops with an
#: error rather than fill the disk.
RESERVE = 512 * 2**20
#: How often (in bytes written) the free space is looked at again.
CHECK_EVERY = 64 * 2**20


class Spool:
    """Bytes written in order, then read back from the start.

    Parameters
    ----------
    what : str
        Names the bytes in messages ("member 'a.csv' of x.zip").
    folder : Path, optional
        Where the private folder is made; default the system's temporary folder.

    Raises
    ------
    LimitError
        (from :meth:`write`) The disk would keep less than :data:`RESERVE`
        bytes free, or is full.
    """

    def __init__(self, what: str, folder: Path | None = None) -> None:
        self.what = what
        self._parent = folder
        self.folder: Path | None = None
        self.size = 0
        self._file: IO[bytes] = io.BytesIO()
        self._checked_at = 0

    def write(self, chunk: bytes) -> None:
        """Append ``chunk``."""
        if self.folder is None and self.size + len(chunk) > IN_MEMORY:
            self._to_disk(len(chunk))
        if self.folder is not None and self.size + len(chunk) - self._checked_at >= CHECK_EVERY:
            self._check_space(len(chunk))
        try:
            self._file.write(chunk)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
                raise self._full(exc.strerror or str(exc)) from None
            raise
        self.size += len(chunk)

    def reader(self) -> IO[bytes]:
        """The bytes written, as a binary file at its start (closed with the spool)."""
        self._file.flush()
        self._file.seek(0)
        return self._file

    @property
    def parent(self) -> Path:
        """The folder the private folder is made in."""
        return Path(self._parent) if self._parent is not None else Path(tempfile.gettempdir())

    def _to_disk(self, coming: int) -> None:
        parent = self.parent
        parent.mkdir(parents=True, exist_ok=True)
        while self.folder is None:
            # Named before it is made, so that an interrupt arriving just after
            # it was made still finds it to remove (mkdtemp returns the name
            # only once the folder exists). Readable by its owner only.
            self.folder = parent / f"mudata-spool-{secrets.token_hex(8)}"
            try:
                os.mkdir(self.folder, 0o700)
            except FileExistsError:
                self.folder = None
        self._check_space(coming)
        held = self._file.getvalue()  # type: ignore[attr-defined]
        # On Linux and other POSIX systems the file has no name from the start,
        # so that even a killed process leaves at most an empty folder.
        self._file = tempfile.TemporaryFile(dir=self.folder)  # noqa: SIM115 - closed by close()
        self._file.write(held)

    def _check_space(self, coming: int) -> None:
        assert self.folder is not None
        stats = os.statvfs(self.folder)
        free = stats.f_bavail * stats.f_frsize
        self._checked_at = self.size
        if free - coming < RESERVE:
            raise self._full(f"{free:,} bytes free, and {RESERVE:,} are kept free")

    def _full(self, why: str) -> LimitError:
        message = (
            f"{self.what}: no room to hold it while it is checked, after {self.size:,} bytes "
            f"in {self.parent} ({why}); refusing it rather than fill the disk. Free some space "
            f"there, or point {'the data home (MUDATA_HOME)' if self._parent is not None else 'TMPDIR'} "
            f"to a folder on a larger disk"
        )
        return LimitError(message)

    def close(self) -> None:
        """Remove the bytes: the file and the private folder."""
        with contextlib.suppress(OSError):
            self._file.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["CHECK_EVERY", "IN_MEMORY", "RESERVE", "Spool"]
