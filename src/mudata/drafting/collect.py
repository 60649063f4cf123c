"""``mudata init``, step 1: the user's files, hashed and pinned on first use.

Owns what a draft reads: one folder (its regular files; a link, FIFO, socket
or device refused, hidden files left out), one archive (zip or tar, pinned
whole), or plain files; the names an entry cannot hold refused; the
documentation beside the data read for a class legend; and the
:class:`~mudata.readers.sources.Sources` reading the data under the pins just
taken, as ``mudata fetch`` will read it. Documentation and metadata are told
apart from data by :mod:`mudata.drafting.selection`.
"""

from __future__ import annotations

import io
import os
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mudata.bounds.archive import ArchiveIndex, sniff_kind
from mudata.config import max_read_bytes
from mudata.display import shown
from mudata.drafting.aligned_layout import AlignedDraft, find_aligned
from mudata.drafting.records import Choices
from mudata.drafting.selection import Selection, select
from mudata.errors import MudataUsageError as UsageError
from mudata.files import links_and_special_files, open_regular, sha256_file
from mudata.readers.decode import head
from mudata.readers.pins import Pin, Pins
from mudata.readers.sources import Sources

__all__ = ["DOC_READ_BYTES", "Collected", "collect"]


@dataclass
class Collected:
    """The user's data files as registry ``files`` specs, and Sources reading them under their pins."""

    files: list[dict[str, Any]]
    sources: Sources
    members: list[str]
    suffix: str
    selection: Selection = field(default_factory=lambda: Selection([]))
    documents: dict[str, str] = field(default_factory=dict)
    #: Feature tables with side files, when the files are of that shape.
    aligned: AlignedDraft | None = None


#: Documentation files read for a class legend: text only, at most this many bytes each.
DOC_READ_BYTES = 1 << 18
_DOC_TEXT = (".txt", ".md", ".rst", "")


def _is_text_doc(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in _DOC_TEXT


def _doc_text(data: bytes) -> str:
    return data[:DOC_READ_BYTES].decode("utf-8", "replace")


def _relative(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), base.resolve()).replace(os.sep, "/")
    except ValueError:  # another drive on Windows
        return str(path.resolve())


def _hidden(name: str) -> bool:
    # ".zenodo.json" is not hidden from the selection: it is reported as metadata.
    parts = PurePosixPath(name).parts
    return any((p.startswith(".") and p != parts[-1]) or p == "__MACOSX" for p in parts) or (
        parts[-1].startswith(".") and not parts[-1].endswith(".json")
    )


def _file_head(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return head(fh, path.name)


def _folder_files(folder: Path) -> list[str]:
    """The regular files of ``folder`` (relative names, hidden ones left out).

    A symbolic link (to a file or a folder) or a FIFO, socket or device among
    them (:func:`mudata.files.links_and_special_files`) is refused, naming
    each: a link would pin and build whatever it points to (another user's
    rows, ``/proc/self/environ``), and a FIFO would hang.
    """
    refused = [
        f"{path} ({kind})"
        for path, kind in sorted(links_and_special_files(folder))
        if not _hidden(path.relative_to(folder).as_posix())
    ]
    if refused:
        more = f" and {len(refused) - 10} more" if len(refused) > 10 else ""
        message = (
            f"mudata init reads only regular files inside {folder}, and no links; found "
            f"{', '.join(refused[:10])}{more}. Copy the files themselves into the folder."
        )
        raise UsageError(message)
    # rglob never descends into a folder link (none is left here anyway).
    return [
        name
        for p in sorted(folder.rglob("*"))
        if not _hidden(name := p.relative_to(folder).as_posix()) and p.is_file()
    ]


def _check_names(names: list[str], where: object) -> None:
    """Refuse names a registry entry cannot hold, or could not tell apart, naming them.

    A control character (a line break, an escape) has no place in a member path
    of an entry, and two names equal once Unicode-normalised (``é`` as one code
    point and as ``e`` plus an accent, from two file systems) are one member to
    the readers, which would refuse the draft at ``fetch``.
    """
    odd = [n for n in names if not n.isprintable()]
    if odd:
        message = (
            f"mudata init: {len(odd)} file name(s) in {shown(where, quote=False)} hold control "
            f"or invisible characters a registry entry cannot hold, such as {shown(odd[0])}; "
            f"rename them, or leave them out with --exclude"
        )
        raise UsageError(message)
    seen: dict[str, str] = {}
    for name in names:
        key = unicodedata.normalize("NFC", name)
        if key in seen:
            message = (
                f"mudata init: {shown(seen[key])} and {shown(name)} in {shown(where, quote=False)} "
                f"(code points {seen[key][:200]!a} and {name[:200]!a}) "
                f"are the same name once Unicode-normalised (NFC), so the readers cannot tell "
                f"them apart; rename one of them, or leave one out with --exclude"
            )
            raise UsageError(message)
        seen[key] = name


def _select(
    names: list[str],
    read_head: Callable[[str], bytes],
    read: Callable[[str], bytes],
    choices: Choices,
    where: str,
    aligned: bool,
) -> tuple[Selection, AlignedDraft | None]:
    """The data files: feature tables with side files (:mod:`mudata.drafting.aligned_layout`)
    when ``aligned`` and the files are of that shape, else by the rules of
    :func:`mudata.drafting.selection.select`."""
    found = find_aligned(names, read_head, read, choices) if aligned else None
    if found is not None:
        return found.selection(names, where), found
    selection = select(
        names, read_head, include=choices.include, exclude=choices.exclude, where=where
    )
    return selection, None


def _read_file(path: Path) -> bytes:
    """A whole file of a folder, refused past :func:`mudata.config.max_read_bytes`."""
    cap = max_read_bytes()
    with open_regular(path, "file") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > cap:
            message = (
                f"mudata init: {path} holds {size:,} bytes, more than the {cap:,} a file "
                f"may be read whole"
            )
            raise UsageError(message)
        return fh.read()


def _collect_folder(folder: Path, base: Path, choices: Choices, aligned: bool) -> Collected:
    names = _folder_files(folder)
    selection, found = _select(
        names,
        lambda n: _file_head(folder / n),
        lambda n: _read_file(folder / n),
        choices,
        str(folder),
        aligned,
    )
    members = selection.members
    _check_names(selection.pinned, folder)
    pins = {n: sha256_file(folder / n) for n in selection.pinned}
    spec = {
        "name": folder.name or "data",
        "path": _relative(folder, base),
        "glob": selection.glob,
        "hashes": "first-use",
        "members": [{"path": n, "sha256": h} for n, h in pins.items()],
    }
    source_pins = Pins(
        members={n: Pin(h) for n, h in pins.items()},
        located={n: folder / n for n in selection.pinned},
        label=f"folder {folder}",
        glob=selection.glob,
    )
    files, roots = [spec], [folder]
    root_pins: list[Pins | None] = [source_pins]
    if selection.annotation is not None and selection.annotation.separate:
        # No glob selects the annotation table with the data files: a file of its own.
        path = folder / selection.annotation.member
        digest = sha256_file(path)
        files.append(
            {
                "name": path.name,
                "path": _relative(path, base),
                "sha256": digest,
                "hashes": "first-use",
            }
        )
        roots.append(path)
        root_pins.append(Pins(sha256=digest, label=f"file {path}"))
    documents = {}
    windows = found.windows if found is not None else []
    for doc in selection.left_out:
        if _is_text_doc(doc) and doc not in windows:
            with open(folder / doc, "rb") as fh:
                documents[doc] = _doc_text(fh.read(DOC_READ_BYTES))
    return Collected(
        files, Sources(roots, root_pins), members, selection.suffix, selection, documents, found
    )


def _collect_archive(
    archive: Path, kind: str, base: Path, choices: Choices, aligned: bool
) -> Collected:
    with ArchiveIndex(archive, kind) as index:
        names = [n for n in index.names() if not _hidden(n)]
        selection, found = _select(
            names,
            lambda n: head(io.BytesIO(index.read(n)), n),
            index.read,
            choices,
            str(archive),
            aligned,
        )
        windows = found.windows if found is not None else []
        documents = {
            doc: _doc_text(index.read(doc))
            for doc in selection.left_out
            if _is_text_doc(doc)
            and doc not in windows
            and doc in index.members
            and index.size(doc) <= DOC_READ_BYTES
        }
    _check_names(selection.pinned, archive)
    digest = sha256_file(archive)
    # The archive is pinned whole; an annotation table no glob selects with the
    # data files is read from it all the same (the reader's members select the data).
    separate = selection.annotation is not None and selection.annotation.separate
    glob = None if separate else selection.glob
    spec = {
        "name": archive.name,
        "path": _relative(archive, base),
        "sha256": digest,
        **({"glob": glob} if glob else {}),
        "hashes": "first-use",
    }
    sources = Sources([archive], [Pins(sha256=digest, label=f"archive {archive}", glob=glob)])
    return Collected(
        [spec], sources, selection.members, selection.suffix, selection, documents, found
    )


#: How every zip file begins (a local file header): a file that begins so but
#: that zipfile cannot open lacks its central directory, at the end.
_ZIP_START = b"PK\x03\x04"


def _refuse_broken_zip(path: Path) -> None:
    """A zip archive cut short (or corrupt) is said to be one, not left out as no
    data format (``.zip``), which read as if zip files were not read at all."""
    if not path.is_file():
        return
    with open_regular(path, "file") as fh:
        start = fh.read(len(_ZIP_START))
    looks_zip = start == _ZIP_START or path.suffix.lower() == ".zip"
    if looks_zip and sniff_kind(path) is None:
        message = (
            f"{path} is not a readable zip archive (its central directory, at the end of "
            "the file, is missing or damaged): it is probably truncated or corrupt; "
            "download or copy it again"
        )
        raise UsageError(message)


def collect(
    paths: list[Path], base: Path, choices: Choices | None = None, *, aligned: bool = True
) -> Collected:
    """The data files of ``paths`` (one folder, one archive, or plain files), hashed.

    Parameters
    ----------
    paths : list of Path
        What the user has.
    base : Path
        The folder the entry will be written to: paths are written relative to it.
    choices : Choices, optional
        ``include`` and ``exclude`` globs.
    aligned : bool
        Look for feature tables with side files (:mod:`mudata.drafting.aligned_layout`)
        in a folder or an archive; false for ``--kind signals``.

    Returns
    -------
    Collected
    """
    choices = choices or Choices()
    paths = [Path(p).expanduser() for p in paths]
    if len(paths) == 1 and paths[0].is_dir():
        return _collect_folder(paths[0], base, choices, aligned)
    if len(paths) == 1 and paths[0].is_file() and (kind := sniff_kind(paths[0])):
        return _collect_archive(paths[0], kind, base, choices, aligned)
    for path in paths:
        _refuse_broken_zip(path)
    odd = [str(p) for p in paths if not p.is_file()]
    if odd:
        message = f"mudata init takes one folder, one archive, or regular files; not {odd}"
        raise UsageError(message)
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        message = f"mudata init: two files share a name ({sorted(n for n in names if names.count(n) > 1)}); put them in one folder and pass the folder"
        raise UsageError(message)
    by_name = dict(zip(names, paths, strict=True))
    selection = select(
        names,
        lambda n: _file_head(by_name[n]),
        include=choices.include,
        exclude=choices.exclude,
        where=str(paths[0].parent),
    )
    chosen = [by_name[n] for n in selection.pinned]
    digests = [sha256_file(p) for p in chosen]
    files = [
        {"name": p.name, "path": _relative(p, base), "sha256": d, "hashes": "first-use"}
        for p, d in zip(chosen, digests, strict=True)
    ]
    pins: list[Pins | None] = [
        Pins(sha256=d, label=f"file {p}") for p, d in zip(chosen, digests, strict=True)
    ]
    return Collected(files, Sources(chosen, pins), selection.members, selection.suffix, selection)
