"""The manual folder, and the files a user has, used in place (never copied, moved or deleted).

``manual_dir`` (the TensorFlow Datasets convention) holds a release the user
already has: each archive under its registry name, or the archive's listed
members (at their path inside the archive, or anywhere below the folder by
file name), or, for an entry that lists no member, the files a reader's
``members`` glob finds in a folder the user extracted. The same in-place uses
serve a registered ``path`` (:mod:`mudata.sources.registered`). No link is
followed and no special file is read inside a folder given to read.
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from mudata.bounds.archive import normalise_member
from mudata.display import plain
from mudata.errors import (
    MissingFileError,
    MudataUsageError,
    ParseError,
    UnverifiedDataError,
    excerpt,
)
from mudata.files import kind_of, link_in_folder, links_and_special_files
from mudata.readers.pins import Pins
from mudata.records.entry import Member
from mudata.sources.pins import (
    FetchedFile,
    Origin,
    archive_verifiable,
    check_archive_members,
    check_file_set,
    check_member_file,
    check_user_file,
    members_verifiable,
    pins_for,
    require_verifiable,
)
from mudata.sources.release import ReleaseFile


def use_glob_in_place(
    file: ReleaseFile, folder: Path, origin: Origin, allow_unverified: bool
) -> FetchedFile:
    """A folder whose file list is ``remote.glob``: pinned files checked, others read unverified."""
    remote = file.remote
    _refuse_links_inside(file, folder)
    names = sorted(
        rel
        for p in folder.rglob("*")
        if p.is_file()
        and fnmatch.fnmatchcase(rel := p.relative_to(folder).as_posix(), remote.glob or "")
    )
    check_file_set(file, f"folder {folder}", names)
    verifiable = members_verifiable(remote)
    require_verifiable(file, verifiable, allow_unverified, "the files its glob finds")
    members = {m.path: check_member_file(file, m, folder / m.path) for m in remote.members}
    located = {name: folder / name for name in names}
    pins = pins_for(file, allow_unverified, located=located)
    return FetchedFile(remote.name, folder, None, verifiable, members, origin, pins=pins)


def use_archive_in_place(
    file: ReleaseFile,
    path: Path,
    origin: Origin,
    allow_unverified: bool,
    max_expansion: float | None = None,
) -> FetchedFile:
    remote = file.remote
    verifiable = archive_verifiable(remote)
    require_verifiable(file, verifiable, allow_unverified, "it or its members")
    observed = check_user_file(file, path)
    members = check_archive_members(file, path, cached=False, max_expansion=max_expansion)
    pins = pins_for(file, allow_unverified)
    return FetchedFile(remote.name, path, observed, verifiable, members, origin, pins=pins)


def use_members_in_place(
    file: ReleaseFile, folder: Path, origin: Origin, allow_unverified: bool
) -> FetchedFile:
    remote = file.remote
    # Refused before a byte is hashed: hashing would read through a link.
    _refuse_links_inside(file, folder)
    root, paths = _locate_members(file, folder)
    verifiable = members_verifiable(remote)
    require_verifiable(file, verifiable, allow_unverified, "every one of its members")
    members = {m.path: check_member_file(file, m, paths[m.path]) for m in remote.members}
    located = {normalise_member(p, root): path for p, path in paths.items()}
    pins = pins_for(file, allow_unverified, located=located)
    return FetchedFile(remote.name, root, None, verifiable, members, origin, pins=pins)


def _refuse_links_inside(file: ReleaseFile, folder: Path) -> None:
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
        f"the folder {folder} ({file.label}) holds what mudata does not read: "
        f"{shown}{more}. No link is followed and no special file is read inside a folder "
        f"given to read; remove them, or copy the files themselves into the folder."
    )
    raise ParseError(message)


def refuse_special(file: ReleaseFile, path: Path) -> None:
    """A FIFO, socket or device where a file is expected: say so (never open it)."""
    kind = kind_of(path) if path.exists() and not path.is_dir() else None
    if kind is not None:
        message = (
            f"{path} ({file.label}) is {kind}, not a regular file; "
            f"refusing to read it. Put the release file itself there."
        )
        raise ParseError(message)


def fetch_manual(
    file: ReleaseFile,
    manual: Path,
    allow_unverified: bool,
    max_expansion: float | None = None,
) -> FetchedFile:
    remote = file.remote
    archive = manual / remote.name
    # The user named the folder, not this file: a link planted in it is not followed.
    link = link_in_folder(manual, archive)
    if link is not None:
        message = (
            f"{archive} ({file.label}) in the manual folder is {link}; "
            "refusing to read it. Put the release file itself there."
        )
        raise ParseError(message)
    refuse_special(file, archive)
    if archive.is_file():
        return use_archive_in_place(file, archive, "manual", allow_unverified, max_expansion)
    if remote.glob is not None:
        return use_glob_in_place(file, manual, "manual", allow_unverified)
    if not remote.members:
        return _use_extracted_in_place(file, manual, allow_unverified)
    return use_members_in_place(file, manual, "manual", allow_unverified)


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


def _use_extracted_in_place(file: ReleaseFile, manual: Path, allow_unverified: bool) -> FetchedFile:
    """The extracted members of an archive the registry lists no member of.

    They are found the way the reader finds them in the archive: by its
    ``members`` glob, from the folder given, from the folder above it when it
    is the archive's top folder, or from a folder below it. No member has a
    hash to be checked against (an archive's own hash says nothing of files
    extracted from it), so they are read only with ``allow_unverified``, each
    one's hash recorded in the provenance as unpinned.
    """
    remote = file.remote
    archive = manual / remote.name
    pattern = file.member_glob
    if not file.only_file:
        # Which extracted files came from which archive, no pattern can tell.
        roots: list[tuple[Path, list[str]]] = []
    else:
        _refuse_links_inside(file, manual)
        roots = _extracted_roots(manual, pattern)
    sought = f"files matching {pattern!r}" if pattern else "its extracted files"
    if not roots:
        message = (
            f"{file.label} is not in the manual folder {manual}: neither the "
            f"file {archive}"
            + (f" (sha256 {remote.sha256})" if remote.sha256 else "")
            + (f", downloadable from {remote.url}," if remote.url else "")
            + (
                f" nor {sought} was found below it (or from the folder above it, when it "
                f"is the archive's top folder)"
                if file.only_file
                else " was found; the entry has several files, so only the files themselves "
                "are accepted"
            )
            + "."
        )
        raise MissingFileError(message)
    if len(roots) > 1:
        listing = ", ".join(f"{root} ({len(names)} files)" for root, names in roots[:5])
        message = (
            f"{file.label}: {sought} are found from more than one folder in the "
            f"manual folder {manual}: {listing}. Point --manual-dir at one of them."
        )
        raise MudataUsageError(message)
    [(root, names)] = roots
    if not allow_unverified:
        pinned = (
            f"pins the archive (sha256 {remote.sha256}), which extracted files cannot be "
            f"checked against, and no member of it"
            if remote.sha256
            else "records no sha256 for the archive or its members"
        )
        message = (
            f"{file.label}: {len(names)} extracted files were found from {root}, "
            f"but the registry {pinned}. Refusing to use unverified data; put the archive "
            f"{remote.name} in the folder, or pass allow_unverified=True to read the files "
            f"as they are, each one's sha256 recorded as unpinned in the table's provenance."
        )
        raise UnverifiedDataError(message, subject=file.label)
    located = {name: root / name for name in names}
    pins = Pins(allow_unverified=True, label=file.label, glob=pattern, located=located)
    return FetchedFile(remote.name, root, None, False, {}, "manual", pins=pins, extracted=True)


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


def _locate_members(file: ReleaseFile, folder: Path) -> tuple[Path, dict[str, Path]]:
    """Find every listed member below ``folder``; return the root and each file.

    The root is chosen so that :meth:`Sources.find` resolves every member: by
    its path from the root, or by its file name when that name is unique below
    the root (Sources accepts bare names too).
    """
    remote = file.remote
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
                f"member '{member.path}' of {file.label} is ambiguous in the "
                f"manual folder {folder}: {len(hits)} files are named "
                f"'{PurePosixPath(member.path).name}' ({listing}). Put it at "
                f"{folder / member.path}, or point to a folder holding only one of them."
            )
            raise MudataUsageError(message)
    if missing:
        accepted = "\n".join(f"  {m.path}" for m in remote.members)
        message = (
            f"{file.label} is not in the folder {folder}: neither the "
            f"archive {plain(folder / remote.name)} nor all of its members were found "
            f"(missing: {', '.join(map(plain, missing))}). Accepted: the archive itself, or every "
            f"one of these members, at this path below the folder or anywhere below it "
            f"by file name:\n{accepted}"
        )
        raise MissingFileError(message)
    return folder, found


__all__ = [
    "fetch_manual",
    "refuse_special",
    "use_archive_in_place",
    "use_glob_in_place",
    "use_members_in_place",
]
