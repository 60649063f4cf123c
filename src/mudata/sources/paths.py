"""Where mudata keeps downloads, built tables and the user's registry."""

from __future__ import annotations

import fcntl
import logging
import os
import re
import uuid
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pooch

from mudata import config
from mudata.errors import MudataError, StorageError
from mudata.files import atomic_create, read_regular

log = logging.getLogger(__name__)

#: The file in the data home holding its identity (see :func:`home_identity`).
HOME_ID_FILE = ".mudata-home"
_HOME_ID = re.compile(r"[0-9a-f]{32}")


def data_home(data_home: Path | str | None = None) -> Path:
    """The data directory: the argument, else ``$MUDATA_HOME``, else Pooch's OS cache."""
    if data_home is not None:
        return Path(data_home).expanduser()
    env = config.home()
    if env is not None:
        return env
    return Path(pooch.os_cache("mudata"))


def raw_dir(name: str, home: Path | str | None = None) -> Path:
    """Where the verified raw files of dataset ``name`` are kept."""
    return data_home(home) / name / "raw"


def table_dir(name: str, home: Path | str | None = None) -> Path:
    """Where the built feature table of dataset ``name`` and its datapackage live."""
    return data_home(home) / name


def user_registry_dir(home: Path | str | None = None) -> Path:
    """Where ``mudata register`` installs user entries."""
    return data_home(home) / "registry"


def home_identity(home: Path | str | None = None, *, create: bool = False) -> str | None:
    """The data home's identity: 32 hex digits kept in ``<home>/.mudata-home``.

    Every table built records it (``provenance["build"]["home_id"]``), so that
    ``mudata verify`` can tell a table built in this data home from one copied
    in from elsewhere (or written by a version that kept no build record). It
    is a label, not a secret: whoever can write the data home can copy it.

    Parameters
    ----------
    home : path-like, optional
        The data home (see :func:`data_home`).
    create : bool
        Create the file when it is missing (a build); otherwise None is returned.

    Returns
    -------
    str or None
        None when the file is missing (and ``create`` is False) or unreadable,
        or cannot be created.

    Raises
    ------
    StorageError
        With ``create``: the file cannot be written, or holds something else
        than an identity.
    """
    path = data_home(home) / HOME_ID_FILE
    try:
        text = read_regular(path, "data home identity", StorageError).decode("ascii").strip()
    except (MudataError, OSError, UnicodeDecodeError) as exc:
        if not create:
            return None
        if path.exists() or path.is_symlink():
            message = (
                f"the data home identity {path} cannot be read ({exc}); remove it and "
                f"build again (tables built before then will verify as unverifiable)"
            )
            raise StorageError(message) from None
        return _create_identity(path)
    if _HOME_ID.fullmatch(text):
        return text
    if not create:
        return None
    message = (
        f"the data home identity {path} holds {text[:40]!r}, not 32 hex digits; remove it "
        f"and build again (tables built before then will verify as unverifiable)"
    )
    raise StorageError(message)


def _create_identity(path: Path) -> str | None:
    """Write a new identity; when another process wins the race, take its identity.

    None when the data home cannot be written: the table's own write then
    reports the folder (a build record without identity verifies as unverifiable).
    """
    identity = uuid.uuid4().hex
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        created = atomic_create(path, (identity + "\n").encode("ascii"))
    except OSError:
        return None
    return identity if created else home_identity(path.parent)


_held: dict[Path, int] = {}


def dataset_lock(name: str, home: Path | str | None = None) -> AbstractContextManager[None]:
    """Hold ``<data home>/<name>/.lock`` (``flock``) while a dataset is fetched or written.

    Reentrant within a process. Without a writable folder there is nothing to
    protect yet: the lock is skipped and the caller's own write reports the folder.
    """
    return folder_lock(table_dir(name, home))


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """:func:`dataset_lock` of the dataset whose folder (:func:`table_dir`) is ``folder``.

    For a caller that holds the table's path already: ``folder_lock(path.parent)``.
    """
    path = folder / ".lock"
    if path in _held:
        _held[path] += 1
        try:
            yield
        finally:
            _held[path] -= 1
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _held[path] = 1
        yield
    finally:
        _held.pop(path, None)
        os.close(fd)  # closing releases the lock


def sweep_stale(folder: Path, *patterns: str, keep: Iterable[str] = ()) -> list[Path]:
    """Remove leftover temporary files matching any of ``patterns`` in ``folder``, except ``keep``.

    Only call while holding :func:`dataset_lock`: no other mudata process is
    then writing there, so such files belong to a killed run. ``keep`` names
    files that merely look temporary (a release file called ``tmp_data.zip``).
    """
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    kept = set(keep)
    for path in (p for pattern in patterns for p in folder.glob(pattern)):
        if path.name not in kept and path.is_file() and not path.is_symlink():
            try:
                path.unlink()
            except OSError:
                continue
            log.info("removed %s, a temporary file left by an interrupted run", path)
            removed.append(path)
    return removed


def sweep_when_idle(folder: Path, patterns: Iterable[str]) -> list[Path]:
    """:func:`sweep_stale` for each pattern in a dataset's ``folder``, when no process works there.

    For the runs that find the table built and take no lock (a ``load``): the
    leftovers of a killed run go now rather than at the next build. The lock is
    tried without waiting; when another process holds it, its temporary files
    are its own and nothing is removed.
    """
    path = folder / ".lock"
    if path in _held:  # this process holds the lock already
        return sweep_stale(folder, *patterns)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:  # no lock file: no mudata run ever wrote here
        return []
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process is at work here
            return []
        return sweep_stale(folder, *patterns)
    finally:
        os.close(fd)  # closing releases the lock


__all__ = [
    "HOME_ID_FILE",
    "data_home",
    "dataset_lock",
    "folder_lock",
    "home_identity",
    "raw_dir",
    "sweep_stale",
    "sweep_when_idle",
    "table_dir",
    "user_registry_dir",
]
