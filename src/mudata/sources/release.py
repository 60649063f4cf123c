"""One file of a release as the sources stage sees it: the registry's record and its dataset.

This module owns :class:`ReleaseFile`, what every check and every way of
obtaining a file takes (:mod:`mudata.sources.pins`, :mod:`mudata.sources.manual`,
:mod:`mudata.sources.registered`, :mod:`mudata.sources.remote`), and
:func:`release_files`, the one place the sources stage reads a
:class:`~mudata.records.entry.DatasetEntry`: the stage needs a file's record, the
dataset's name, the folder its entry came from and the reader's member glob,
not the entry's recipe, classes or licence.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mudata.errors import excerpt
from mudata.records.entry import DatasetEntry, RemoteFile

__all__ = ["ReleaseFile", "reader_members", "release_files"]


@dataclass(frozen=True)
class ReleaseFile:
    """One file an entry lists, with what the sources stage needs of the entry.

    Attributes
    ----------
    remote : RemoteFile
        The registry's record of the file: address or path, hashes, members.
    dataset : str
        The entry's name: downloads go to its folder, and messages name it.
    source : Path or None
        The entry's TOML file: a relative ``path`` is read from its folder
        (the current folder when None).
    member_glob : str or None
        The glob the entry's reader finds its files by (:func:`reader_members`):
        how the files of an archive the user extracted are found.
    only_file : bool
        The entry lists this file alone: files extracted from it can then be
        told apart from another file's.
    """

    remote: RemoteFile
    dataset: str
    source: Path | None = None
    member_glob: str | None = None
    only_file: bool = True

    @property
    def label(self) -> str:
        """How messages name the file: ``file 'x.zip' of dataset 'name'``."""
        # The file name comes from the entry, and messages keep their own line
        # breaks: escaped.
        return f"file {excerpt(self.remote.name)} of dataset '{self.dataset}'"

    @property
    def base(self) -> Path:
        """The folder a relative ``path`` is read from: the entry's own, or the current one."""
        return self.source.parent if self.source is not None else Path.cwd()


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


def release_files(entry: DatasetEntry) -> list[ReleaseFile]:
    """Every file of ``entry`` as the sources stage takes it, in registry order."""
    glob = reader_members(entry)
    only = len(entry.files) == 1
    return [ReleaseFile(remote, entry.name, entry.source, glob, only) for remote in entry.files]
