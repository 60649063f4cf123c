"""The registered path: a file or folder an entry names by ``path`` (``mudata register``).

Used in place; when the entry pins it, it is checked as any user file is
(:mod:`mudata.sources.pins`); when it does not, whatever a build read of it
unpinned is recorded, so that :func:`unpinned_local_changed` can tell a
built table that its files changed under it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mudata.errors import (
    MissingFileError,
    MudataError,
)
from mudata.readers.pins import Pins
from mudata.readers.sources import Sources
from mudata.sources.manual import (
    refuse_special,
    use_archive_in_place,
    use_glob_in_place,
    use_members_in_place,
)
from mudata.sources.pins import FetchedFile
from mudata.sources.release import ReleaseFile


def fetch_local(
    file: ReleaseFile,
    allow_unverified: bool,
    max_expansion: float | None = None,
) -> FetchedFile:
    """The file or folder ``file`` names by ``path``, checked and used in place."""
    remote = file.remote
    assert remote.path is not None
    path = Path(remote.path).expanduser()
    if not path.is_absolute():
        path = file.base / path
    refuse_special(file, path)
    if path.is_file():
        return use_archive_in_place(file, path, "local", allow_unverified, max_expansion)
    if path.is_dir() and remote.glob is not None:
        return use_glob_in_place(file, path, "local", allow_unverified)
    if path.is_dir() and remote.members:
        return use_members_in_place(file, path, "local", allow_unverified)
    message = (
        f"{file.label} is registered as the local path {remote.path!r} "
        f"(in {file.source}), but {path} "
        + (
            "is a folder and the registry lists no members; give its file list as a glob "
            '(members = "**/*.csv"), or let `mudata init` draft the entry'
            if path.is_dir()
            else "does not exist"
        )
    )
    raise MissingFileError(message)


def unpinned_local_changed(files: Sequence[ReleaseFile], recorded: list[dict[str, Any]]) -> bool:
    """True when a registered local file without a registry hash differs from ``recorded``.

    The entry's hashes pin every verified file, so only files it does not pin
    (``path`` files used with ``allow_unverified``) can change under a built
    table. ``recorded`` is the provenance's ``files`` list. A file that can no
    longer be found or read counts as unchanged: the table built from it stands.
    """
    for file, record in zip(files, recorded, strict=True):
        if file.remote.path is None or record.get("verified_at_build", True):
            continue
        try:
            now = fetch_local(file, allow_unverified=True)
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


def _unpinned_reads_changed(now: FetchedFile, record: dict[str, Any]) -> bool:
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


__all__ = ["fetch_local", "listing_sha256", "unpinned_local_changed"]
