"""Atomic file writes: a file is either absent, the old version, or complete.

Every file :mod:`mudata` writes goes through this module (mueval may use it too):
the content goes to a temporary file in the destination folder (same file
system, so the final rename is atomic), is flushed and ``fsync``-ed, and is then
renamed onto the final name with :func:`os.replace`. On any failure, including
``KeyboardInterrupt``, the temporary file is removed and the final name is left
as it was.

Temporary names start with ``.`` and end with ``.part``, so that they are
hidden and never mistaken for a finished file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write"]

TEMP_SUFFIX = ".part"


def _umask_mode() -> int:
    # mkstemp creates files readable by the owner only; a published file should
    # get the permissions any other new file would get.
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable; some file systems cannot, which is not an error."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: Path | str, *, keep_suffix: bool = False) -> Iterator[Path]:
    """Yield a temporary path to write; on success it becomes ``path``.

    For writers that want a path rather than bytes (``pyarrow.parquet.write_table``,
    ``DataFrame.to_csv``). The yielded file exists and is empty.

    Parameters
    ----------
    path : path-like
        The final name. Its folder must exist.
    keep_suffix : bool
        End the temporary name with ``path``'s own suffix rather than ``.part``,
        for writers that choose the format from it (matplotlib's ``savefig``).

    Yields
    ------
    Path
        A temporary file in ``path``'s folder.

    Raises
    ------
    OSError
        The folder cannot be written; nothing is left behind.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text()
    'done'
    """
    path = Path(path)
    suffix = path.suffix if keep_suffix else TEMP_SUFFIX
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, _umask_mode())
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def atomic_write(path: Path | str, content: bytes | str, *, encoding: str = "utf-8") -> Path:
    """Write ``content`` to ``path`` atomically (see the module docstring).

    Parameters
    ----------
    path : path-like
        The final name. Its folder must exist.
    content : bytes or str
        What to write; text is encoded with ``encoding``.
    encoding : str
        The encoding of text content.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    OSError
        The folder cannot be written, or the disk is full; ``path`` is unchanged
        and no temporary file is left.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "note.txt"
    >>> atomic_write(target, "hello\\n").read_text()
    'hello\\n'
    """
    payload = content.encode(encoding) if isinstance(content, str) else content
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(payload)
    return Path(path)
