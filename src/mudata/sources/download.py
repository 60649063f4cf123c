"""Obtain and verify the raw files of a release: which of three ways each file takes.

Every file an entry lists is obtained in one of three ways, then checked
against the registry's SHA-256 hashes before any reader sees it:

* a ``path`` in the registry (a file the user registered): used in place;
* ``manual_dir`` (the TensorFlow Datasets convention): the user already has the
  archive, or its members, in a folder; used in place, never copied, moved or
  deleted;
* otherwise a download through Pooch into ``raw_dir(entry.name, data_home)``,
  from the registry's ``url`` or from ``mirror`` (same file name, same hashes).

A file the registry records no hash for (neither the file's nor its members')
is refused unless ``allow_unverified=True``; then its observed hash is logged
and returned so that provenance records what was used.

What the reader side gets is one root per file, in registry order:
``Sources([f.root for f in fetch_sources(entry)])``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from mudata.display import plain
from mudata.errors import (
    MissingFileError,
    MudataUsageError,
)
from mudata.records.entry import DatasetEntry
from mudata.sources.manual import fetch_manual
from mudata.sources.paths import dataset_lock, raw_dir, sweep_stale
from mudata.sources.pins import FetchedFile, archive_verifiable, require_verifiable
from mudata.sources.registered import fetch_local
from mudata.sources.release import ReleaseFile, release_files
from mudata.sources.remote import fetch_remote

log = logging.getLogger(__name__)


def fetch_sources(
    entry: DatasetEntry,
    *,
    data_home: Path | str | None = None,
    mirror: str | None = None,
    manual_dir: Path | str | None = None,
    progress: bool | None = None,
    n_retries: int = 3,
    delay: float = 1.0,
    allow_unverified: bool = False,
    max_expansion: float | None = None,
    download: bool = True,
) -> list[FetchedFile]:
    """Obtain and verify every file of ``entry``; one result per file, in order.

    Parameters
    ----------
    entry : DatasetEntry
        The registry entry whose ``files`` are fetched.
    data_home : path-like, optional
        Data directory (see :func:`mudata.sources.paths.data_home`); downloads go to
        ``<data_home>/<name>/raw``.
    mirror : str, optional
        Base address serving the same files under their registry names;
        replaces each file's ``url``, the hashes stay the registry's.
    manual_dir : path-like, optional
        Folder holding the files the user already has: each archive under its
        registry name, or the archive's listed members (at their path inside
        the archive, or anywhere below the folder by file name). Nothing is
        downloaded; user files are never modified.
    progress : bool, optional
        Show a download progress bar; by default only when stderr is a terminal.
    n_retries : int
        Further attempts after a download fails on a network error or a server
        error (5xx, 408, 429). Other client errors (404...) are not retried.
    delay : float
        Seconds to wait between attempts.
    allow_unverified : bool
        Accept files the registry records no hash for, with a warning.
    max_expansion : float, optional
        Expansion cap of archives, in bytes out per archive byte; default
        ``$MUDATA_MAX_EXPANSION`` or 100 (see :mod:`mudata.bounds.archive`).
    download : bool
        When False, a file that is not in the cache is a MissingFileError.

    Returns
    -------
    list of FetchedFile
        ``[f.root for f in result]`` is what :class:`Sources` takes.

    Raises
    ------
    ChecksumError
        A file or member does not have the registry's SHA-256.
    MissingFileError
        A file or a listed member is not where it should be.
    DownloadError
        The download failed (after retries).
    ParseError
        An archive is truncated, corrupt or holds a refused member; a path
        is a FIFO, socket or device.
    LimitError
        A download goes past its registry size, an archive past the expansion cap.
    MudataUsageError
        Unverifiable file without ``allow_unverified``; bad ``manual_dir``.
    """
    manual = None if manual_dir is None else Path(manual_dir).expanduser()
    if manual is not None and not manual.is_dir():
        message = f"manual folder {manual} does not exist or is not a folder"
        raise MudataUsageError(message)
    files = release_files(entry)
    # Whether each download is verifiable, asked once: for a download, it is
    # refused here, before the first byte is downloaded (not after the first file).
    verifiable = [archive_verifiable(file.remote) for file in files]
    if manual is None:
        for file, pinned in zip(files, verifiable, strict=True):
            if file.remote.path is None:
                require_verifiable(file, pinned, allow_unverified, "it or its members")
    show_progress = sys.stderr.isatty() if progress is None else bool(progress)
    fetched = []
    # One process at a time per dataset: then any temporary file left in the
    # raw folder is a leftover of a killed run, and is swept.
    with dataset_lock(entry.name, data_home):
        raw = raw_dir(entry.name, data_home)
        sweep_stale(raw, "tmp*", keep=[f.name for f in entry.files])
        for file, pinned in zip(files, verifiable, strict=True):
            remote = file.remote
            if remote.path is not None:
                result = fetch_local(file, allow_unverified, max_expansion)
            elif manual is not None:
                result = fetch_manual(file, manual, allow_unverified, max_expansion)
            else:
                url = remote.url if mirror is None else mirror.rstrip("/") + "/" + remote.name
                target = raw / remote.name
                if not download and not target.is_file():
                    message = (
                        f"{file.label} is no longer in the cache ({plain(target)}) and "
                        f"downloading is off; the table cannot be rebuilt from verified raw "
                        f"files without it"
                    )
                    raise MissingFileError(message)
                result = fetch_remote(
                    file, url, target, show_progress, n_retries, delay,
                    allow_unverified, max_expansion, download=download, verifiable=pinned,
                )  # fmt: skip
            _warn_unverified(file, result)
            fetched.append(result)
    return fetched


def _warn_unverified(file: ReleaseFile, result: FetchedFile) -> None:
    if result.verified:
        return
    if result.extracted:
        located = result.pins.located if result.pins is not None else {}
        log.warning(
            "file '%s' of dataset '%s' is NOT verified: %d extracted files are read from %s "
            "that the registry pins none of; each one's sha256 is recorded in the table's "
            "provenance as unpinned",
            file.remote.name,
            file.dataset,
            len(located),
            result.root,
        )
        return
    observed = result.sha256 or ", ".join(f"{p} {h}" for p, h in result.members.items())
    log.warning(
        "file '%s' of dataset '%s' is NOT verified (the registry records no "
        "sha256 for it, nor for every one of its members); observed sha256: %s",
        file.remote.name,
        file.dataset,
        observed,
    )


__all__ = ["fetch_sources"]
