"""Safe file access for both packages: read only regular files, write atomically.

Two rules, each with one owner here (:mod:`mueval` uses them too):

* **Read only regular files.** ``open(path)`` on a FIFO waits for a writer for
  ever, and a device can stream without end. Every path read goes through
  :func:`open_regular`: the type is checked with ``stat`` before opening, the
  file is opened without blocking and checked again with ``fstat`` on the open
  descriptor (in case the path was swapped in between), and anything but a
  regular file is refused with an error naming what it is.
* **A written file is either absent, the old version, or complete.** The
  content goes to a temporary file in the destination folder (same file
  system, so the final rename is atomic), is flushed and ``fsync``-ed, and is
  then renamed onto the final name with :func:`os.replace`
  (:func:`atomic_path`, :func:`atomic_write`). On any failure, including
  ``KeyboardInterrupt``, the temporary file is removed and the final name is
  left as it was. Temporary names start with ``.`` and end with ``.part``, so
  that they are hidden and never mistaken for a finished file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from mudata.errors import MudataError, ParseError

if TYPE_CHECKING:
    from io import BufferedIOBase

__all__ = [
    "TEMP_SUFFIX",
    "atomic_create",
    "atomic_path",
    "atomic_write",
    "describe_kind",
    "kind_of",
    "link_in_folder",
    "links_and_special_files",
    "open_regular",
    "read_regular",
]

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


def atomic_create(path: Path | str, content: bytes) -> bool:
    """Write ``content`` to ``path`` atomically, only if ``path`` does not exist yet.

    The complete file is linked to its final name (``os.link`` never replaces
    an existing file), so of several processes racing to create it, exactly
    one wins and every reader sees a whole file.

    Returns
    -------
    bool
        True when this call created the file, False when it existed already.

    Raises
    ------
    OSError
        The folder cannot be written; no temporary file is left.
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _umask_mode())
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_folder(path.parent)
    return True


_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def describe_kind(mode: int) -> str:
    """Plain name of a file type from ``st_mode`` (``"a FIFO (named pipe)"``, ``"a socket"``...).

    Examples
    --------
    >>> describe_kind(stat.S_IFIFO)
    'a FIFO (named pipe)'
    """
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a special file"


def kind_of(path: Path | str) -> str | None:
    """None for a regular file (symlinks followed), else what it is; never opens it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else describe_kind(mode)


def _refusal(path: Path | str, what: str, kind: str) -> str:
    return f"{what} {path} cannot be read: it is {kind}, not a regular file"


def _unreadable(
    exc: OSError, path: Path | str, what: str, unreadable: type[Exception] | None
) -> None:
    """Raise ``unreadable`` in place of ``exc`` when the caller asked for it."""
    if unreadable is not None:
        message = f"{path}: cannot read {what}: {exc.strerror or exc}"
        raise unreadable(message) from exc


def link_in_folder(folder: Path | str, path: Path | str) -> str | None:
    """What makes ``path`` unfit to read as a file of ``folder``, or None.

    The one check for reads where the user named a folder: ``path`` must lie
    inside ``folder`` with no symbolic link on the way, neither the file itself
    nor a folder between, so that a planted link can never make a read leave
    the folder (a link to ``/proc/self/environ``, or to another user's data).
    ``folder`` itself is not checked: the user named it. Kinds other than links
    are left to the caller's open (:func:`open_regular`), which names them.

    Parameters
    ----------
    folder, path : path-like

    Returns
    -------
    str or None
        A kind that completes "it is <kind>", e.g. ``"a symbolic link"``.
    """
    folder, path = Path(folder), Path(path)
    try:
        parts = path.relative_to(folder).parts
    except ValueError:
        return f"outside the folder {folder}"
    current = folder
    for part in parts:
        if part == "..":
            return f"outside the folder {folder} (through '..')"
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except OSError:  # missing: the open names it
            return None
        if stat.S_ISLNK(mode):
            if current == path:
                return "a symbolic link (no link is followed inside a folder given to read)"
            return f"inside the symbolic link {current} (no link is followed inside a folder)"
    return None


def links_and_special_files(folder: Path | str) -> list[tuple[Path, str]]:
    """Every symbolic link (to a file or a folder) and non-regular file below ``folder``.

    The listing where the user named a folder: nothing in it is followed
    (``os.walk`` with ``followlinks=False``, ``lstat``), so a link to a folder
    elsewhere is found by its own name instead of being skipped, and a FIFO,
    socket or device is found without being opened. ``folder`` itself is not
    checked: the user named it.

    Returns
    -------
    list of (Path, str)
        Each entry and what it is ("a symbolic link", "a FIFO (named pipe)"...),
        in sorted order.
    """
    found: list[tuple[Path, str]] = []
    for here, folders, files in os.walk(folder, followlinks=False):
        folders.sort()
        for name in sorted([*folders, *files]):
            path = Path(here) / name
            try:
                mode = os.lstat(path).st_mode
            except OSError:  # gone since it was listed
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                found.append((path, describe_kind(mode)))
    return found


def open_regular(
    path: Path | str,
    what: str = "file",
    error: type[Exception] = ParseError,
    *,
    refusal: Callable[[Path | str, str, str], str] = _refusal,
    unreadable: type[Exception] | None = None,
    inside: Path | str | None = None,
) -> IO[bytes]:
    """Open ``path`` for binary reading, refusing anything but a regular file.

    Parameters
    ----------
    path : path-like
        The file.
    what : str
        How to name it in the error ("registry entry", "--data"...).
    error : type
        The exception raised for a non-regular file (mudata's :class:`ParseError`
        unless told otherwise; mueval passes its own).
    refusal : callable, optional
        ``refusal(path, what, kind)`` words that error; ``kind`` is
        :func:`describe_kind`'s name of what was found.
    unreadable : type, optional
        When given, a file that cannot be opened (missing, no permission) raises
        this with ``"{path}: cannot read {what}: {reason}"``; by default the
        :class:`OSError` propagates and the caller words it.
    inside : path-like, optional
        The folder the user named, when ``path`` is a file found in it: then
        ``path`` must not be, or lie under, a symbolic link (:func:`link_in_folder`).
        A path given on its own may be a link, but only to a regular file.

    Returns
    -------
    IO[bytes]
        An open file; the caller closes it.

    Raises
    ------
    error
        ``path`` is a FIFO, socket, device or folder, or (with ``inside``) a
        symbolic link or under one.
    OSError
        It cannot be opened and ``unreadable`` is None.
    """

    def cannot_read(exc: OSError) -> BaseException:
        if unreadable is None:
            return exc
        message = f"{path}: cannot read {what}: {exc.strerror or exc}"
        return unreadable(message)

    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if inside is not None:
        link = link_in_folder(inside, path)
        if link is not None:
            raise error(refusal(path, what, link))
        # A link swapped in after the check fails to open rather than be followed.
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        _unreadable(exc, path, what, unreadable)
        raise
    if not stat.S_ISREG(mode):  # a socket would fail to open rather than be named
        raise error(refusal(path, what, describe_kind(mode)))
    try:
        fd = os.open(path, flags)
    except OSError as exc:  # e.g. a socket swapped in after the stat (ENXIO)
        _unreadable(exc, path, what, unreadable)
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(refusal(path, what, describe_kind(mode)))
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


def sha256_file(source: Path | str | IO[bytes]) -> str:
    """SHA-256 of a file's bytes, as 64 lowercase hex digits, read in chunks.

    The one hash of a file in mudata: pinning (``mudata init``), checking a
    download or a local copy, and an archive's own hash all call it.

    Parameters
    ----------
    source : path or binary file object
        A path is opened with :func:`open_regular` (a FIFO, socket or device
        is refused instead of blocking on it). An open file is hashed from
        its start, and left at its start.

    Returns
    -------
    str

    Examples
    --------
    >>> import io
    >>> sha256_file(io.BytesIO(b"abc"))[:16]
    'ba7816bf8f01cfea'
    """
    # file_digest reads with ``readinto``, which IO[bytes] does not declare; the
    # files opened here, and the binary streams given, are buffered ones.
    if isinstance(source, (str, os.PathLike)):
        with open_regular(source) as fh:
            return hashlib.file_digest(cast("BufferedIOBase", fh), "sha256").hexdigest()
    source.seek(0)
    digest = hashlib.file_digest(cast("BufferedIOBase", source), "sha256").hexdigest()
    source.seek(0)
    return digest
