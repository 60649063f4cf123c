"""Download and verify the raw files of a release.

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

import fnmatch
import ftplib
import hashlib
import logging
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Literal

import pooch
import requests

from mudata.archive import ArchiveIndex, normalise_member
from mudata.display import EscapingFormatter, plain
from mudata.entry import DatasetEntry, Member, RemoteFile
from mudata.errors import (
    ChecksumError,
    DownloadError,
    LimitError,
    MissingFileError,
    MudataError,
    ParseError,
    StorageError,
    UnverifiedDataError,
    excerpt,
)
from mudata.errors import (
    MudataUsageError as UsageError,
)
from mudata.files import kind_of, link_in_folder, links_and_special_files, sha256_file
from mudata.paths import dataset_lock, raw_dir, sweep_stale
from mudata.readers.base import Pin, Pins, Sources

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
# Errors a downloader raises when the network, the server or the disk fails;
# the FTP ones are there because pooch picks FTPDownloader for ftp:// addresses.
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    requests.RequestException,
    OSError,
    EOFError,
    ftplib.Error,
)

Origin = Literal["download", "cache", "manual", "local"]


@dataclass(frozen=True)
class FetchedFile:
    """One file of a release, located and checked.

    Attributes
    ----------
    name : str
        The registry's file name (``RemoteFile.name``).
    root : Path
        What to hand to :class:`mudata.readers.base.Sources`: the archive, the
        plain file, or the folder holding the archive's members.
    sha256 : str or None
        Observed SHA-256 of the archive or plain file; None when ``root`` is a
        folder of members (their hashes are in ``members``).
    verified : bool
        True when the bytes the readers will use were checked against the
        registry: the file's own hash, or the hash of every listed member.
    members : dict of str to str
        Observed SHA-256 of each member the registry lists, by its path inside
        the archive.
    origin : {"download", "cache", "manual", "local"}
        Downloaded now, found in the cache, found in ``manual_dir``, or a
        ``path`` from the registry.
    url : str or None
        The address the file was downloaded from (the mirror's, with
        ``mirror``); None unless ``origin`` is "download" or "cache".
    pins : Pins or None
        What :class:`~mudata.readers.base.Sources` checks when a reader reads
        from ``root``: the file's and its members' registry hashes and sizes,
        and whether unpinned members may be read.
    extracted : bool
        True when ``root`` is a folder of members extracted by the user that the
        registry lists none of (found by the reader's ``members`` glob): every
        one was read unpinned, whatever hash the archive has.
    """

    name: str
    root: Path
    sha256: str | None
    verified: bool
    members: dict[str, str] = field(default_factory=dict)
    origin: Origin = "download"
    url: str | None = None
    pins: Pins | None = field(default=None, compare=False, repr=False)
    extracted: bool = False


def pins_for(
    entry: DatasetEntry, remote: RemoteFile, allow_unverified: bool, **extra: object
) -> Pins:
    """What :class:`Sources` must check when a reader reads from ``remote``."""
    members = {normalise_member(m.path, remote.name): Pin(m.sha256, m.size) for m in remote.members}
    return Pins(
        sha256=remote.sha256,
        members=members,
        allow_unverified=allow_unverified,
        label=_what(entry, remote),
        glob=remote.glob,
        **extra,  # type: ignore[arg-type]
    )


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
        Data directory (see :func:`mudata.paths.data_home`); downloads go to
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
        ``$MUDATA_MAX_EXPANSION`` or 100 (see :mod:`mudata.archive`).
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
    UsageError
        Unverifiable file without ``allow_unverified``; bad ``manual_dir``.
    """
    manual = None if manual_dir is None else Path(manual_dir).expanduser()
    if manual is not None and not manual.is_dir():
        message = f"manual folder {manual} does not exist or is not a folder"
        raise UsageError(message)
    if manual is None:
        # Refuse before the first byte is downloaded, not after the first file.
        for remote in entry.files:
            if remote.path is None:
                verifiable = _archive_verifiable(remote)
                _require_verifiable(
                    entry, remote, verifiable, allow_unverified, "it or its members"
                )
    show_progress = sys.stderr.isatty() if progress is None else bool(progress)
    fetched = []
    # One process at a time per dataset: then any temporary file left in the
    # raw folder is a leftover of a killed run, and is swept.
    with dataset_lock(entry.name, data_home):
        sweep_stale(raw_dir(entry.name, data_home), "tmp*", keep=[f.name for f in entry.files])
        for remote in entry.files:
            if remote.path is not None:
                result = _fetch_local(entry, remote, allow_unverified, max_expansion)
            elif manual is not None:
                result = _fetch_manual(entry, remote, manual, allow_unverified, max_expansion)
            else:
                url = remote.url if mirror is None else mirror.rstrip("/") + "/" + remote.name
                target = raw_dir(entry.name, data_home) / remote.name
                if not download and not target.is_file():
                    message = (
                        f"{_what(entry, remote)} is no longer in the cache ({plain(target)}) and "
                        f"downloading is off; the table cannot be rebuilt from verified raw "
                        f"files without it"
                    )
                    raise MissingFileError(message)
                result = _fetch_remote(
                    entry, remote, url, target, show_progress, n_retries, delay,
                    allow_unverified, max_expansion, download=download,
                )  # fmt: skip
            _warn_unverified(entry, remote, result)
            fetched.append(result)
    return fetched


def _warn_unverified(entry: DatasetEntry, remote: RemoteFile, result: FetchedFile) -> None:
    if result.verified:
        return
    if result.extracted:
        located = result.pins.located if result.pins is not None else {}
        log.warning(
            "file '%s' of dataset '%s' is NOT verified: %d extracted files are read from %s "
            "that the registry pins none of; each one's sha256 is recorded in the table's "
            "provenance as unpinned",
            remote.name,
            entry.name,
            len(located),
            result.root,
        )
        return
    observed = result.sha256 or ", ".join(f"{p} {h}" for p, h in result.members.items())
    log.warning(
        "file '%s' of dataset '%s' is NOT verified (the registry records no "
        "sha256 for it, nor for every one of its members); observed sha256: %s",
        remote.name,
        entry.name,
        observed,
    )


# --------------------------------------------------------------------- checks


def _what(entry: DatasetEntry, remote: RemoteFile) -> str:
    # The name comes from the entry, and messages keep their own line breaks: escaped.
    return f"file {excerpt(remote.name)} of dataset '{entry.name}'"


def _archive_verifiable(remote: RemoteFile) -> bool:
    # One rule, owned by the entry, so that `mudata info` says what fetch does.
    return remote.pinned


def _members_verifiable(remote: RemoteFile) -> bool:
    return bool(remote.members) and all(m.sha256 for m in remote.members)


def _require_verifiable(
    entry: DatasetEntry, remote: RemoteFile, verifiable: bool, allow_unverified: bool, how: str
) -> None:
    if verifiable or allow_unverified:
        return
    message = (
        f"{_what(entry, remote)} cannot be verified: the registry records no sha256 "
        f"for {how}. Refusing to use unverified data; pass allow_unverified=True "
        f"to use it anyway, its observed sha256 will be logged and recorded."
    )
    raise UnverifiedDataError(
        message, subject=_what(entry, remote), cli={"allow_unverified=True": "--allow-unverified"}
    )


def _size_note(expected: int | None, path: Path) -> str:
    actual = path.stat().st_size
    if expected is None or expected == actual:
        return ""
    return f" (size: expected {expected:,} bytes, found {actual:,})"


def _how_to_fix(entry: DatasetEntry, remote: RemoteFile, official: str) -> str:
    """What to do about a mismatch: hashes pinned on first use are the user's own, not published."""
    if remote.hashes == "first-use":
        return (
            f'it changed since `mudata init` pinned it (hashes = "first-use"). If the change '
            f"is intended, pin the files again: run `mudata init` on them and `mudata register "
            f"--replace` the new draft of '{entry.name}'."
        )
    return f"replace it with {official}."


def _check_user_file(entry: DatasetEntry, remote: RemoteFile, path: Path) -> str:
    """Hash a file the user owns and compare with the registry; never touch it."""
    observed = sha256_file(path)
    if remote.sha256 is not None and observed != remote.sha256:
        message = (
            f"sha256 mismatch for {path} ({_what(entry, remote)}): expected "
            f"{remote.sha256}, actual {observed}{_size_note(remote.size, path)}. "
            f"The file was left untouched; {_how_to_fix(entry, remote, 'the official release file')}"
        )
        raise ChecksumError(message)
    return observed


def _check_member_file(entry: DatasetEntry, remote: RemoteFile, member: Member, path: Path) -> str:
    observed = sha256_file(path)
    if member.sha256 is not None and observed != member.sha256:
        message = (
            f"sha256 mismatch for {path}, member '{member.path}' of "
            f"{_what(entry, remote)}: expected {member.sha256}, actual "
            f"{observed}{_size_note(member.size, path)}. The file was left untouched; "
            f"{_how_to_fix(entry, remote, 'the one from the official archive')}"
        )
        raise ChecksumError(message)
    return observed


def _hash_archive_members(
    entry: DatasetEntry, remote: RemoteFile, path: Path, max_expansion: float | None
) -> dict[str, str]:
    """SHA-256 of the listed members found in the archive (absent ones omitted).

    The archive is opened through :class:`ArchiveIndex`, the same index the
    readers read through: names are normalised and checked the same way, and
    a member is read no further than its declared sizes.
    """
    found: dict[str, str] = {}
    with ArchiveIndex(path, remote.archive, ratio=max_expansion) as index:
        for member in remote.members:
            name = normalise_member(member.path, path)
            if name in index.members:
                what = f"member {excerpt(member.path)} of archive {plain(path)} ({_what(entry, remote)})"
                # In chunks: a member without a registry size may be as large as
                # the expansion cap lets it be.
                digest = hashlib.sha256()
                for chunk in index.chunks(name, member.size, what):
                    digest.update(chunk)
                found[member.path] = digest.hexdigest()
    return found


def _check_archive_members(
    entry: DatasetEntry,
    remote: RemoteFile,
    path: Path,
    *,
    cached: bool,
    max_expansion: float | None = None,
) -> dict[str, str]:
    """Hash the listed members inside the archive at ``path`` and compare them.

    An archive the registry declares (``archive = "zip"``) but lists no member
    of is still opened, so that a truncated one is reported here rather than
    as "no matching file" by the reader.

    ``cached`` archives live in mudata's cache: an unreadable one whose own hash
    the registry does not record is removed so that the next run downloads it
    again. Anything else (user files, verified downloads) is left in place.
    """
    if not remote.members and remote.archive is None and remote.glob is None:
        return {}
    discard = cached and remote.sha256 is None
    fate = "It was removed from the cache." if discard else "The file was left untouched."
    try:
        if remote.glob is not None:
            with ArchiveIndex(path, remote.archive, ratio=max_expansion) as index:
                names = [n for n in index.names() if fnmatch.fnmatchcase(n, remote.glob)]
            _check_file_set(entry, remote, f"archive {path}", names)
        observed = _hash_archive_members(entry, remote, path, max_expansion)
    except (ParseError, LimitError, ChecksumError, MissingFileError) as exc:
        _discard(path, discard)
        message = f"{exc} ({_what(entry, remote)}). {fate}"
        raise type(exc)(message) from None
    missing = [m.path for m in remote.members if m.path not in observed]
    if missing:
        message = (
            f"archive {path} ({_what(entry, remote)}) has no member {missing[0]!r}"
            + (f" (nor {missing[1:]})" if len(missing) > 1 else "")
            + f"; the registry lists it. {fate}"
        )
        _discard(path, discard)
        raise MissingFileError(message)
    for member in remote.members:
        actual = observed[member.path]
        if member.sha256 is not None and actual != member.sha256:
            message = (
                f"sha256 mismatch for member '{member.path}' of archive {path} "
                f"({_what(entry, remote)}): expected {member.sha256}, actual {actual}. {fate}"
            )
            _discard(path, discard)
            raise ChecksumError(message)
    return observed


def _check_file_set(entry: DatasetEntry, remote: RemoteFile, where: str, names: list[str]) -> None:
    """The files ``remote.glob`` finds must be the pinned ones, once any is pinned.

    Without a pinned member the glob alone gives the file list (read with
    --allow-unverified, every file's hash recorded); with pins, a file added
    or gone is an error naming both lists, so that no new file is read
    unverified and no pinned file is silently missing.
    """
    if not names:
        message = (
            f"{where} holds no file matching the glob {remote.glob!r} of {_what(entry, remote)}"
        )
        raise MissingFileError(message)
    pinned = {normalise_member(m.path, remote.name) for m in remote.members if m.sha256}
    if not pinned:
        return
    added = sorted(set(names) - pinned)
    missing = sorted(pinned - set(names))
    if added or missing:
        message = (
            f"the files of {where} matching {remote.glob!r} differ from the ones "
            f"{_what(entry, remote)} pins: added {added[:20] or 'none'}"
            + (f" and {len(added) - 20} more" if len(added) > 20 else "")
            + f"; missing {missing[:20] or 'none'}"
            + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
            + ". Restore the pinned files, or pin the new set again (mudata init) if the "
            "change is intended."
        )
        raise ChecksumError(message)


def _use_glob_in_place(
    entry: DatasetEntry, remote: RemoteFile, folder: Path, origin: Origin, allow_unverified: bool
) -> FetchedFile:
    """A folder whose file list is ``remote.glob``: pinned files checked, others read unverified."""
    _refuse_links_inside(entry, remote, folder)
    names = sorted(
        rel
        for p in folder.rglob("*")
        if p.is_file()
        and fnmatch.fnmatchcase(rel := p.relative_to(folder).as_posix(), remote.glob or "")
    )
    _check_file_set(entry, remote, f"folder {folder}", names)
    verifiable = _members_verifiable(remote)
    _require_verifiable(entry, remote, verifiable, allow_unverified, "the files its glob finds")
    members = {
        m.path: _check_member_file(entry, remote, m, folder / m.path) for m in remote.members
    }
    located = {name: folder / name for name in names}
    pins = pins_for(entry, remote, allow_unverified, located=located)
    return FetchedFile(remote.name, folder, None, verifiable, members, origin, pins=pins)


def _discard(path: Path, discard: bool) -> None:
    if discard:
        path.unlink(missing_ok=True)


# ------------------------------------------------------- user-provided files


def _use_archive_in_place(
    entry: DatasetEntry,
    remote: RemoteFile,
    path: Path,
    origin: Origin,
    allow_unverified: bool,
    max_expansion: float | None = None,
) -> FetchedFile:
    verifiable = _archive_verifiable(remote)
    _require_verifiable(entry, remote, verifiable, allow_unverified, "it or its members")
    observed = _check_user_file(entry, remote, path)
    members = _check_archive_members(entry, remote, path, cached=False, max_expansion=max_expansion)
    pins = pins_for(entry, remote, allow_unverified)
    return FetchedFile(remote.name, path, observed, verifiable, members, origin, pins=pins)


def _use_members_in_place(
    entry: DatasetEntry, remote: RemoteFile, folder: Path, origin: Origin, allow_unverified: bool
) -> FetchedFile:
    # Refused before a byte is hashed: hashing would read through a link.
    _refuse_links_inside(entry, remote, folder)
    root, paths = _locate_members(entry, remote, folder)
    verifiable = _members_verifiable(remote)
    _require_verifiable(entry, remote, verifiable, allow_unverified, "every one of its members")
    members = {m.path: _check_member_file(entry, remote, m, paths[m.path]) for m in remote.members}
    located = {normalise_member(p, root): path for p, path in paths.items()}
    pins = pins_for(entry, remote, allow_unverified, located=located)
    return FetchedFile(remote.name, root, None, verifiable, members, origin, pins=pins)


def _refuse_links_inside(entry: DatasetEntry, remote: RemoteFile, folder: Path) -> None:
    """A folder the user named holds no link (to a file or a folder) and no special file.

    Whatever the reader's pattern: a link to a folder whose name matches no
    pattern would otherwise be skipped without a word, and a FIFO would be
    left out of the listing silently. Each one is named.
    """
    found = links_and_special_files(folder)
    if not found:
        return
    shown = "; ".join(f"{excerpt(str(p))} is {kind}" for p, kind in found[:10])
    more = f"; and {len(found) - 10} more" if len(found) > 10 else ""
    message = (
        f"the folder {folder} ({_what(entry, remote)}) holds what mudata does not read: "
        f"{shown}{more}. No link is followed and no special file is read inside a folder "
        f"given to read; remove them, or copy the files themselves into the folder."
    )
    raise ParseError(message)


def _refuse_special(entry: DatasetEntry, remote: RemoteFile, path: Path) -> None:
    """A FIFO, socket or device where a file is expected: say so (never open it)."""
    kind = kind_of(path) if path.exists() and not path.is_dir() else None
    if kind is not None:
        message = (
            f"{path} ({_what(entry, remote)}) is {kind}, not a regular file; "
            f"refusing to read it. Put the release file itself there."
        )
        raise ParseError(message)


def _fetch_manual(
    entry: DatasetEntry,
    remote: RemoteFile,
    manual: Path,
    allow_unverified: bool,
    max_expansion: float | None = None,
) -> FetchedFile:
    archive = manual / remote.name
    # The user named the folder, not this file: a link planted in it is not followed.
    link = link_in_folder(manual, archive)
    if link is not None:
        message = (
            f"{archive} ({_what(entry, remote)}) in the manual folder is {link}; "
            "refusing to read it. Put the release file itself there."
        )
        raise ParseError(message)
    _refuse_special(entry, remote, archive)
    if archive.is_file():
        return _use_archive_in_place(
            entry, remote, archive, "manual", allow_unverified, max_expansion
        )
    if remote.glob is not None:
        return _use_glob_in_place(entry, remote, manual, "manual", allow_unverified)
    if not remote.members:
        return _use_extracted_in_place(entry, remote, manual, allow_unverified)
    return _use_members_in_place(entry, remote, manual, "manual", allow_unverified)


def reader_members(entry: DatasetEntry) -> str | None:
    """The glob the entry's reader finds its files by (``reader_options.members``).

    None when the entry gives none: the reader then applies its own default
    to whatever folder it is handed.
    """
    for key in ("members", "member"):
        value = entry.reader_options.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _literal_head(pattern: str) -> tuple[str, ...]:
    """The leading folders of ``pattern`` that hold no wildcard (``A/B`` of ``A/B/*/x.csv``)."""
    head = []
    for part in PurePosixPath(pattern).parts[:-1]:
        if any(c in part for c in "*?["):
            break
        head.append(part)
    return tuple(head)


def _extracted_roots(folder: Path, pattern: str | None) -> list[tuple[Path, list[str]]]:
    """Every folder from which ``pattern`` finds files: ``folder`` itself, a folder
    above it when ``folder`` is the archive's top folder, or a folder below it
    that holds the archive's top folder (the members extracted one level deeper).

    Returns each such root with the member names it gives, shallowest first.
    """
    head = _literal_head(pattern) if pattern else ()
    candidates = [folder]
    for i in range(1, len(head) + 1):
        if len(folder.parts) > i and folder.parts[-i:] == head[:i]:
            candidates.append(folder.parents[i - 1])
    if head:
        # rglob never descends into a folder link, so no root is found through one.
        candidates += sorted(
            p.parent for p in folder.rglob(head[0]) if p.is_dir() and p.parent != folder
        )
    found = []
    for root in dict.fromkeys(candidates):
        start = root.joinpath(*head) if head else root
        if not start.is_dir():
            continue
        every = (p.relative_to(root).as_posix() for p in start.rglob("*") if p.is_file())
        names = sorted(n for n in every if pattern is None or fnmatch.fnmatchcase(n, pattern))
        if names:
            found.append((root, names))
    return found


def _use_extracted_in_place(
    entry: DatasetEntry, remote: RemoteFile, manual: Path, allow_unverified: bool
) -> FetchedFile:
    """The extracted members of an archive the registry lists no member of.

    They are found the way the reader finds them in the archive: by its
    ``members`` glob, from the folder given, from the folder above it when it
    is the archive's top folder, or from a folder below it. No member has a
    hash to be checked against (an archive's own hash says nothing of files
    extracted from it), so they are read only with ``allow_unverified``, each
    one's hash recorded in the provenance as unpinned.
    """
    archive = manual / remote.name
    pattern = reader_members(entry)
    if len(entry.files) > 1:
        # Which extracted files came from which archive, no pattern can tell.
        roots: list[tuple[Path, list[str]]] = []
    else:
        _refuse_links_inside(entry, remote, manual)
        roots = _extracted_roots(manual, pattern)
    sought = f"files matching {pattern!r}" if pattern else "its extracted files"
    if not roots:
        message = (
            f"{_what(entry, remote)} is not in the manual folder {manual}: neither the "
            f"file {archive}"
            + (f" (sha256 {remote.sha256})" if remote.sha256 else "")
            + (f", downloadable from {remote.url}," if remote.url else "")
            + (
                f" nor {sought} was found below it (or from the folder above it, when it "
                f"is the archive's top folder)"
                if len(entry.files) == 1
                else " was found; the entry has several files, so only the files themselves "
                "are accepted"
            )
            + "."
        )
        raise MissingFileError(message)
    if len(roots) > 1:
        listing = ", ".join(f"{root} ({len(names)} files)" for root, names in roots[:5])
        message = (
            f"{_what(entry, remote)}: {sought} are found from more than one folder in the "
            f"manual folder {manual}: {listing}. Point --manual-dir at one of them."
        )
        raise UsageError(message)
    [(root, names)] = roots
    if not allow_unverified:
        pinned = (
            f"pins the archive (sha256 {remote.sha256}), which extracted files cannot be "
            f"checked against, and no member of it"
            if remote.sha256
            else "records no sha256 for the archive or its members"
        )
        message = (
            f"{_what(entry, remote)}: {len(names)} extracted files were found from {root}, "
            f"but the registry {pinned}. Refusing to use unverified data; put the archive "
            f"{remote.name} in the folder, or pass allow_unverified=True to read the files "
            f"as they are, each one's sha256 recorded as unpinned in the table's provenance."
        )
        raise UnverifiedDataError(
            message,
            subject=_what(entry, remote),
            cli={"allow_unverified=True": "--allow-unverified"},
        )
    located = {name: root / name for name in names}
    pins = Pins(allow_unverified=True, label=_what(entry, remote), glob=pattern, located=located)
    return FetchedFile(remote.name, root, None, False, {}, "manual", pins=pins, extracted=True)


def _fetch_local(
    entry: DatasetEntry,
    remote: RemoteFile,
    allow_unverified: bool,
    max_expansion: float | None = None,
) -> FetchedFile:
    assert remote.path is not None
    path = Path(remote.path).expanduser()
    if not path.is_absolute():
        base = entry.source.parent if entry.source is not None else Path.cwd()
        path = base / path
    _refuse_special(entry, remote, path)
    if path.is_file():
        return _use_archive_in_place(entry, remote, path, "local", allow_unverified, max_expansion)
    if path.is_dir() and remote.glob is not None:
        return _use_glob_in_place(entry, remote, path, "local", allow_unverified)
    if path.is_dir() and remote.members:
        return _use_members_in_place(entry, remote, path, "local", allow_unverified)
    message = (
        f"{_what(entry, remote)} is registered as the local path {remote.path!r} "
        f"(in {entry.source}), but {path} "
        + (
            "is a folder and the registry lists no members; give its file list as a glob "
            '(members = "**/*.csv"), or let `mudata init` draft the entry'
            if path.is_dir()
            else "does not exist"
        )
    )
    raise MissingFileError(message)


def unpinned_local_changed(entry: DatasetEntry, recorded: list[dict]) -> bool:
    """True when a registered local file without a registry hash differs from ``recorded``.

    The entry's hashes pin every verified file, so only files it does not pin
    (``path`` files used with ``allow_unverified``) can change under a built
    table. ``recorded`` is the provenance's ``files`` list. A file that can no
    longer be found or read counts as unchanged: the table built from it stands.
    """
    for remote, record in zip(entry.files, recorded, strict=True):
        if remote.path is None or record.get("verified_at_build", True):
            continue
        try:
            now = _fetch_local(entry, remote, allow_unverified=True)
            if now.sha256 != record.get("sha256") or now.members != record.get("members", {}):
                return True
            if _unpinned_reads_changed(now, record):
                return True
        except MudataError:
            continue
    return False


def listing_sha256(names: Iterable[str]) -> str:
    """SHA-256 of a sorted list of member names: changes when a member appears or goes."""
    return hashlib.sha256("\n".join(sorted(names)).encode("utf-8")).hexdigest()


def _unpinned_reads_changed(now: FetchedFile, record: dict) -> bool:
    """Whether the members read without a pin (or the list of members) changed since."""
    unpinned = record.get("unpinned") or {}
    if not unpinned and "listing_sha256" not in record:
        return False
    glob = now.pins.glob if now.pins is not None else None
    sources = Sources([now.root], [Pins(glob=glob, allow_unverified=True) if glob else None])
    try:
        if listing_sha256(sources.index) != record.get("listing_sha256"):
            return True
        for name, sha in unpinned.items():
            # Hashed in chunks: an unpinned member may be larger than a whole read allows.
            if name not in sources.index or sources.sha256(name) != sha:
                return True
    finally:
        sources.close()
    return False


def _candidate_roots(folder: Path, members: Iterable[Member]) -> list[Path]:
    """``folder`` and, when it is the archive's own top folder, the folders above it.

    A user who extracted ``x.zip`` and points at ``.../x`` holds members named
    ``x/a.txt``; their paths resolve from the parent of the folder.
    """
    roots = [folder]
    for member in members:
        parts = PurePosixPath(member.path).parts[:-1]
        for i in range(1, len(parts) + 1):
            if (
                len(folder.parts) > i
                and folder.parts[-i:] == parts[:i]
                and folder.parents[i - 1] not in roots
            ):
                roots.append(folder.parents[i - 1])
    return roots


def _locate_members(
    entry: DatasetEntry, remote: RemoteFile, folder: Path
) -> tuple[Path, dict[str, Path]]:
    """Find every listed member below ``folder``; return the root and each file.

    The root is chosen so that :meth:`Sources.find` resolves every member: by
    its path from the root, or by its file name when that name is unique below
    the root (Sources accepts bare names too).
    """
    for root in _candidate_roots(folder, remote.members):
        if all((root / m.path).is_file() for m in remote.members):
            return root, {m.path: root / m.path for m in remote.members}
    by_name: dict[str, list[Path]] = defaultdict(list)
    for path in folder.rglob("*"):
        if path.is_file():
            by_name[path.name].append(path)
    found: dict[str, Path] = {}
    missing: list[str] = []
    for member in remote.members:
        exact = folder / member.path
        hits = [exact] if exact.is_file() else by_name.get(PurePosixPath(member.path).name, [])
        if len(hits) == 1:
            found[member.path] = hits[0]
        elif not hits:
            missing.append(member.path)
        else:
            listing = ", ".join(str(h) for h in sorted(hits))
            message = (
                f"member '{member.path}' of {_what(entry, remote)} is ambiguous in the "
                f"manual folder {folder}: {len(hits)} files are named "
                f"'{PurePosixPath(member.path).name}' ({listing}). Put it at "
                f"{folder / member.path}, or point to a folder holding only one of them."
            )
            raise UsageError(message)
    if missing:
        accepted = "\n".join(f"  {m.path}" for m in remote.members)
        message = (
            f"{_what(entry, remote)} is not in the folder {folder}: neither the "
            f"archive {plain(folder / remote.name)} nor all of its members were found "
            f"(missing: {', '.join(map(plain, missing))}). Accepted: the archive itself, or every "
            f"one of these members, at this path below the folder or anywhere below it "
            f"by file name:\n{accepted}"
        )
        raise MissingFileError(message)
    return folder, found


# ------------------------------------------------------------------ downloads


class _BoundedWriter:
    """A file-like sink that hashes what it is given and refuses bytes past ``limit``.

    Pooch's downloaders only call ``write`` and ``flush`` on the object they are
    handed; raising from ``write`` aborts the transfer, and Pooch then deletes
    its temporary file. So a server streaming 400 MB for a file registered at
    2 MB costs at most ``limit`` bytes of disk, one chunk more at worst.
    """

    def __init__(self, fh: IO[bytes], limit: int | None, what: str) -> None:
        self.fh = fh
        self.limit = limit
        self.what = what
        self.written = 0
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.written += len(data)
        if self.limit is not None and self.written > self.limit:
            message = (
                f"{self.what} is larger than the {self.limit:,} bytes the registry records "
                f"(size); the download was stopped after {self.written:,} bytes and discarded"
            )
            raise LimitError(message)
        self.digest.update(data)
        return self.fh.write(data)

    def flush(self) -> None:
        self.fh.flush()


def _choose_downloader(url: str, progressbar: bool) -> object:
    """Pooch's downloader for each scheme the registry schema allows (http, https, ftp, doi)."""
    if url.startswith(("http://", "https://")):
        return pooch.HTTPDownloader(progressbar=progressbar, chunk_size=1 << 16)
    if url.startswith("ftp://"):
        return pooch.FTPDownloader(progressbar=progressbar, timeout=30)
    if url.startswith("doi:"):
        return pooch.DOIDownloader(progressbar=progressbar, timeout=30)
    message = f"unsupported url scheme in {url!r}; expected http://, https://, ftp:// or doi:"
    raise UsageError(message)


class _HashingDownloader:
    """Wraps a Pooch downloader: records the hash of what it wrote, stops past ``size``.

    Pooch's hash-mismatch error is a plain ValueError whose text is its only
    detail; recording the observed hash here lets us report expected and actual
    without parsing that text.
    """

    def __init__(
        self, url: str, progressbar: bool, limit: int | None = None, what: str = ""
    ) -> None:
        self.inner = _choose_downloader(url, progressbar)
        self.limit = limit
        self.what = what or url
        self.observed: str | None = None

    def __call__(
        self, url: str, output_file: str, pooch_: object, check_only: bool = False
    ) -> object:
        if check_only or not isinstance(output_file, str | Path):
            return self.inner(url, output_file, pooch_, check_only=check_only)  # type: ignore[operator]
        with open(output_file, "w+b") as fh:
            sink = _BoundedWriter(fh, self.limit, self.what)
            result = self.inner(url, sink, pooch_)  # type: ignore[operator]
        self.observed = sink.digest.hexdigest()
        return result


def _is_transient(exc: BaseException) -> bool:
    """Worth another attempt: network and server failures, not client errors."""
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        status = exc.response.status_code
        return status >= 500 or status in (408, 429)
    if isinstance(exc, ValueError):  # requests' InvalidURL, MissingSchema...
        return False
    # PermissionError or a full disk will not heal by waiting; a reset connection may.
    return isinstance(
        exc, requests.RequestException | ConnectionError | TimeoutError | EOFError | ftplib.Error
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code} {exc.response.reason}"
    return f"{type(exc).__name__}: {exc}"


@contextmanager
def _pooch_banner(*, show: bool) -> Iterator[None]:
    """Let Pooch's INFO lines ("Downloading data from ...") through only when ``show``.

    A filter rather than ``setLevel``: Pooch's logger is made with
    ``logging.Logger("pooch")``, outside the logging manager, so a new level
    would not clear the answer it cached for INFO at the first attempt.
    """
    logger = pooch.get_logger()
    for handler in logger.handlers:
        # Pooch's own handler prints its lines as they are, and they quote the
        # entry's URL and file name: escaped (each is one line, so line breaks
        # too), unless someone chose a formatter.
        if handler.formatter is None:
            handler.setFormatter(EscapingFormatter(keep=""))
    if show:
        yield
        return
    logger.addFilter(_warnings_only)
    try:
        yield
    finally:
        logger.removeFilter(_warnings_only)


def _warnings_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def _download(
    entry: DatasetEntry,
    remote: RemoteFile,
    url: str,
    target: Path,
    progressbar: bool,
    n_retries: int,
    delay: float,
) -> str:
    """Download ``url`` to ``target`` through Pooch; return the observed sha256.

    Pooch 1.9 (``pooch.core.stream_download``) writes to a temporary file
    (``tempfile.NamedTemporaryFile`` in the target's folder), checks its hash,
    and only then ``shutil.move``s it onto the target name; on any exception the
    temporary file is deleted. So an interrupted or wrong download never
    leaves a file under the target name. Retries are our own loop (one Pooch
    attempt each) so that 404s are not retried and the delay is ours.

    What the user sees: Pooch's "Downloading data from ..." line once, for
    the first attempt (Pooch logs it at every ``retrieve``; it is silenced for
    the others), then one warning per failed attempt that will be retried,
    and the error after the last one.
    """
    known_hash = f"sha256:{remote.sha256}" if remote.sha256 else None
    # The address comes from the entry or --mirror: escaped in every message.
    address = plain(url)
    what = f"the file downloaded from {address} ({_what(entry, remote)})"
    downloader = _HashingDownloader(url, progressbar, remote.size, what)
    attempts = 1 + max(0, n_retries)
    for attempt in range(1, attempts + 1):
        downloader.observed = None
        try:
            with _pooch_banner(show=attempt == 1):
                pooch.retrieve(
                    url,
                    known_hash=known_hash,
                    fname=target.name,
                    path=target.parent,
                    downloader=downloader,
                )
        except MudataError:
            raise
        except (ValueError, *_NETWORK_ERRORS) as exc:
            actual = downloader.observed
            if remote.sha256 is not None and actual is not None and actual != remote.sha256:
                message = (
                    f"sha256 mismatch for the file downloaded from {address} "
                    f"({_what(entry, remote)}): expected {remote.sha256}, actual {actual}. "
                    f"The download was discarded (Pooch's temporary file); {plain(target)} was not "
                    f"written. The file "
                    f"may have changed upstream, or the server (mirror) sends another file."
                )
                raise ChecksumError(message) from None
            if attempt < attempts and _is_transient(exc):
                log.warning(
                    "download of %s failed (%s); attempt %d of %d in %.1f s",
                    address,
                    _reason(exc),
                    attempt + 1,
                    attempts,
                    delay,
                )
                time.sleep(delay)
                continue
            message = (
                f"could not download {address} ({_what(entry, remote)}) after {attempt} "
                f"attempt{'s' if attempt > 1 else ''}: {_reason(exc)}. Try another "
                f"address with --mirror URL, or download the file yourself and pass "
                f"--manual-dir DIR."
            )
            raise DownloadError(message) from None
        else:
            break
    return downloader.observed if downloader.observed is not None else sha256_file(target)


def _fetch_remote(
    entry: DatasetEntry,
    remote: RemoteFile,
    url: str | None,
    target: Path,
    progressbar: bool,
    n_retries: int,
    delay: float,
    allow_unverified: bool,
    max_expansion: float | None = None,
    *,
    download: bool = True,
) -> FetchedFile:
    verifiable = _archive_verifiable(remote)
    _require_verifiable(entry, remote, verifiable, allow_unverified, "it or its members")
    observed = sha256_file(target) if target.is_file() else None
    # A cached file with the right hash (or any cached file when the registry has
    # no archive hash) is used without touching the network.
    if observed is not None and (remote.sha256 is None or observed == remote.sha256):
        origin: Origin = "cache"
    elif not download:
        message = (
            f"sha256 mismatch for the cached {plain(target)} ({_what(entry, remote)}): expected "
            f"{remote.sha256}, actual {observed}, and downloading is off; the file was left "
            f"untouched"
        )
        raise ChecksumError(message)
    else:
        if url is None:
            message = f"{_what(entry, remote)} has no url in the registry and no mirror was given"
            raise UsageError(message)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            # Otherwise Pooch fails on it and the error reads like a network failure.
            message = (
                f"cannot download {_what(entry, remote)} into {target.parent}: expected a "
                f"writable folder, got {type(exc).__name__}: {exc}. Choose another data "
                f"directory with --data-home or $MUDATA_HOME."
            )
            raise StorageError(message) from None
        observed = _download(entry, remote, url, target, progressbar, n_retries, delay)
        origin = "download"
    members = _check_archive_members(
        entry, remote, target, cached=True, max_expansion=max_expansion
    )
    pins = pins_for(entry, remote, allow_unverified)
    return FetchedFile(remote.name, target, observed, verifiable, members, origin, url, pins)
