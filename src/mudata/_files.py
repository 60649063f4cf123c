"""Opening files the user or a registry names, without ever blocking on a FIFO.

``open(path)`` on a FIFO waits for a writer for ever, and a device can stream
without end. Every path mudata reads goes through :func:`open_regular`: the
file is opened without blocking and checked with ``fstat`` on the open
descriptor (no check-then-open race), and anything but a regular file is
refused with an error naming what it is.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

from mudata.errors import MudataError, ParseError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def describe_kind(mode: int) -> str:
    """'a FIFO (named pipe)', 'a socket'... for a non-regular ``st_mode``."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def kind_of(path: Path | str) -> str | None:
    """None for a regular file (symlinks followed), else what it is; never opens it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else describe_kind(mode)


def open_regular(
    path: Path | str, what: str = "file", error: type[MudataError] = ParseError
) -> IO[bytes]:
    """Open ``path`` for binary reading, refusing anything but a regular file.

    Parameters
    ----------
    path : path-like
        The file.
    what : str
        How to name it in the error ("registry entry", "member ...").
    error : type
        The :class:`MudataError` subclass raised for a non-regular file.

    Raises
    ------
    error
        ``path`` is a FIFO, socket, device or folder.
    OSError
        It cannot be opened (missing, no permission): the caller words that.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            message = (
                f"{what} {path} cannot be read: it is {describe_kind(mode)}, not a regular file"
            )
            raise error(message)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(
    path: Path | str, what: str = "file", error: type[MudataError] = ParseError
) -> bytes:
    """The whole content of a regular file (see :func:`open_regular`)."""
    with open_regular(path, what, error) as fh:
        return fh.read()
