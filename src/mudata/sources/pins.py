"""Pin and member verification: a fetched file, and every check of its bytes against the registry.

A :class:`FetchedFile` is one file of a release, located and checked; its
:class:`~mudata.readers.pins.Pins` are what the readers check again as they
read. The checks here compare a file's, or each listed member's, SHA-256 with
the entry's (in an archive through the same :class:`~mudata.bounds.archive.ArchiveIndex`
the readers read through), hold a glob's file set to the pinned one, and refuse
a file the registry cannot verify unless ``allow_unverified``. They never
modify a user's file; a cached download that fails them may be discarded.
"""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mudata.bounds.archive import ArchiveIndex, normalise_member
from mudata.display import plain
from mudata.errors import (
    ChecksumError,
    LimitError,
    MissingFileError,
    ParseError,
    UnverifiedDataError,
    excerpt,
)
from mudata.files import sha256_file
from mudata.readers.pins import Pin, Pins
from mudata.records.entry import Member, RemoteFile
from mudata.sources.release import ReleaseFile

Origin = Literal["download", "cache", "manual", "local"]


@dataclass(frozen=True)
class FetchedFile:
    """One file of a release, located and checked.

    Attributes
    ----------
    name : str
        The registry's file name (``RemoteFile.name``).
    root : Path
        What to hand to :class:`mudata.readers.sources.Sources`: the archive, the
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
        What :class:`~mudata.readers.sources.Sources` checks when a reader reads
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


def pins_for(file: ReleaseFile, allow_unverified: bool, **extra: object) -> Pins:
    """What :class:`Sources` must check when a reader reads from ``file``."""
    remote = file.remote
    members = {normalise_member(m.path, remote.name): Pin(m.sha256, m.size) for m in remote.members}
    return Pins(
        sha256=remote.sha256,
        members=members,
        allow_unverified=allow_unverified,
        label=file.label,
        glob=remote.glob,
        **extra,  # type: ignore[arg-type]
    )


def archive_verifiable(remote: RemoteFile) -> bool:
    # One rule, owned by the entry, so that `mudata info` says what fetch does.
    return remote.pinned


def members_verifiable(remote: RemoteFile) -> bool:
    return bool(remote.members) and all(m.sha256 for m in remote.members)


def require_verifiable(
    file: ReleaseFile, verifiable: bool, allow_unverified: bool, how: str
) -> None:
    if verifiable or allow_unverified:
        return
    message = (
        f"{file.label} cannot be verified: the registry records no sha256 "
        f"for {how}. Refusing to use unverified data; pass allow_unverified=True "
        f"to use it anyway, its observed sha256 will be logged and recorded."
    )
    raise UnverifiedDataError(message, subject=file.label)


def _size_note(expected: int | None, path: Path) -> str:
    actual = path.stat().st_size
    if expected is None or expected == actual:
        return ""
    return f" (size: expected {expected:,} bytes, found {actual:,})"


def _how_to_fix(file: ReleaseFile, official: str) -> str:
    """What to do about a mismatch: hashes pinned on first use are the user's own, not published."""
    if file.remote.hashes == "first-use":
        return (
            f'it changed since `mudata init` pinned it (hashes = "first-use"). If the change '
            f"is intended, pin the files again: run `mudata init` on them and `mudata register "
            f"--replace` the new draft of '{file.dataset}'."
        )
    return f"replace it with {official}."


def _checked_sha256(path: Path, expected: str | None, size: int | None, what: str, fix: str) -> str:
    """The SHA-256 of ``path``; a ChecksumError when the registry's ``expected`` differs.

    ``what`` follows the path in the message (the file or member it is), ``fix``
    ends it (:func:`_how_to_fix`); the file itself is never touched.
    """
    observed = sha256_file(path)
    if expected is not None and observed != expected:
        message = (
            f"sha256 mismatch for {path}{what}: expected {expected}, actual "
            f"{observed}{_size_note(size, path)}. The file was left untouched; {fix}"
        )
        raise ChecksumError(message)
    return observed


def check_user_file(file: ReleaseFile, path: Path) -> str:
    """Hash a file the user owns and compare with the registry; never touch it."""
    fix = _how_to_fix(file, "the official release file")
    return _checked_sha256(path, file.remote.sha256, file.remote.size, f" ({file.label})", fix)


def check_member_file(file: ReleaseFile, member: Member, path: Path) -> str:
    """Hash an extracted member the user owns and compare with the registry; never touch it."""
    what = f", member '{member.path}' of {file.label}"
    fix = _how_to_fix(file, "the one from the official archive")
    return _checked_sha256(path, member.sha256, member.size, what, fix)


def _hash_archive_members(
    file: ReleaseFile, path: Path, max_expansion: float | None
) -> dict[str, str]:
    """SHA-256 of the listed members found in the archive (absent ones omitted).

    The archive is opened through :class:`ArchiveIndex`, the same index the
    readers read through: names are normalised and checked the same way, and
    a member is read no further than its declared sizes.
    """
    found: dict[str, str] = {}
    remote = file.remote
    with ArchiveIndex(path, remote.archive, ratio=max_expansion) as index:
        for member in remote.members:
            name = normalise_member(member.path, path)
            if name in index.members:
                what = f"member {excerpt(member.path)} of archive {plain(path)} ({file.label})"
                # In chunks: a member without a registry size may be as large as
                # the expansion cap lets it be.
                digest = hashlib.sha256()
                for chunk in index.chunks(name, member.size, what):
                    digest.update(chunk)
                found[member.path] = digest.hexdigest()
    return found


def check_archive_members(
    file: ReleaseFile,
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
    remote = file.remote
    if not remote.members and remote.archive is None and remote.glob is None:
        return {}
    discard = cached and remote.sha256 is None
    fate = "It was removed from the cache." if discard else "The file was left untouched."
    try:
        if remote.glob is not None:
            with ArchiveIndex(path, remote.archive, ratio=max_expansion) as index:
                names = [n for n in index.names() if fnmatch.fnmatchcase(n, remote.glob)]
            check_file_set(file, f"archive {path}", names)
        observed = _hash_archive_members(file, path, max_expansion)
    except (ParseError, LimitError, ChecksumError, MissingFileError) as exc:
        _discard(path, discard)
        message = f"{exc} ({file.label}). {fate}"
        raise type(exc)(message) from None
    missing = [m.path for m in remote.members if m.path not in observed]
    if missing:
        message = (
            f"archive {path} ({file.label}) has no member {missing[0]!r}"
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
                f"({file.label}): expected {member.sha256}, actual {actual}. {fate}"
            )
            _discard(path, discard)
            raise ChecksumError(message)
    return observed


def check_file_set(file: ReleaseFile, where: str, names: list[str]) -> None:
    """The files ``file.remote.glob`` finds must be the pinned ones, once any is pinned.

    Without a pinned member the glob alone gives the file list (read with
    --allow-unverified, every file's hash recorded); with pins, a file added
    or gone is an error naming both lists, so that no new file is read
    unverified and no pinned file is silently missing.
    """
    remote = file.remote
    if not names:
        message = f"{where} holds no file matching the glob {remote.glob!r} of {file.label}"
        raise MissingFileError(message)
    pinned = {normalise_member(m.path, remote.name) for m in remote.members if m.sha256}
    if not pinned:
        return
    added = sorted(set(names) - pinned)
    missing = sorted(pinned - set(names))
    if added or missing:
        message = (
            f"the files of {where} matching {remote.glob!r} differ from the ones "
            f"{file.label} pins: added {added[:20] or 'none'}"
            + (f" and {len(added) - 20} more" if len(added) > 20 else "")
            + f"; missing {missing[:20] or 'none'}"
            + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
            + ". Restore the pinned files, or pin the new set again (mudata init) if the "
            "change is intended."
        )
        raise ChecksumError(message)


def _discard(path: Path, discard: bool) -> None:
    if discard:
        path.unlink(missing_ok=True)


__all__ = [
    "FetchedFile",
    "Origin",
    "archive_verifiable",
    "check_archive_members",
    "check_file_set",
    "check_member_file",
    "check_user_file",
    "members_verifiable",
    "pins_for",
    "require_verifiable",
]
