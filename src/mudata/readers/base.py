"""What a reader receives and what it returns.

A reader turns the verified files of one release into one of two raw tables:

* :class:`FeatureTable` -- already one row per example with computed features
  (recipe ``precomputed``), or
* :class:`SignalTable` -- raw samples in long format, one row per sample, in
  file order, with a ``segment`` column that groups samples recorded together
  (recipe ``study-window`` windows each (user, class) sequence; recipe
  ``study-segment`` makes one feature row per segment).

Both keep the raw class code in ``label``; mapping codes to names, the user
filter and validation happen downstream, once, for every reader.
"""

from __future__ import annotations

import fnmatch
import io
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING

import pandas as pd

from mudata.errors import MissingFileError, ParseError

if TYPE_CHECKING:
    from mudata.registry import DatasetEntry


@dataclass
class FeatureTable:
    """Feature rows: columns ``userid``, ``label`` (raw code), then numeric features."""

    frame: pd.DataFrame


@dataclass
class SignalTable:
    """Raw samples: columns ``userid``, ``label`` (raw code), ``segment``, then channels.

    Rows are in recording order. ``segment`` identifies a contiguous recording
    (a file, a repetition); the windowing recipe ignores it, the segment recipe
    makes one feature row per segment.
    """

    frame: pd.DataFrame


RawTable = FeatureTable | SignalTable


class Sources:
    """Read-only view over the verified files of a release.

    Members are addressed by their path inside the release with the archive's
    top folder kept (``gestures-dataset/U01/01/01.txt``). A source is either an
    archive (zip or tar) or a folder holding the extracted members.

    Parameters
    ----------
    roots : list of Path
        Archives or folders, searched in order.
    """

    def __init__(self, roots: list[Path]) -> None:
        self.roots = list(roots)
        self._zips: dict[Path, zipfile.ZipFile] = {}
        self._index: dict[str, tuple[Path, str]] | None = None

    def _build_index(self) -> dict[str, tuple[Path, str]]:
        index: dict[str, tuple[Path, str]] = {}
        for root in self.roots:
            if root.is_dir():
                for p in sorted(root.rglob("*")):
                    if p.is_file():
                        index.setdefault(p.relative_to(root).as_posix(), (root, p.relative_to(root).as_posix()))
            elif zipfile.is_zipfile(root):
                zf = self._zip(root)
                for name in zf.namelist():
                    if not name.endswith("/"):
                        index.setdefault(name, (root, name))
            elif tarfile.is_tarfile(root):
                with tarfile.open(root) as tf:
                    for info in tf.getmembers():
                        if info.isfile():
                            index.setdefault(info.name, (root, info.name))
            else:
                index.setdefault(root.name, (root, ""))
        return index

    def _zip(self, path: Path) -> zipfile.ZipFile:
        if path not in self._zips:
            try:
                self._zips[path] = zipfile.ZipFile(path)
            except zipfile.BadZipFile as exc:
                message = f"{path} is not a readable zip archive ({exc}); it may be truncated or corrupt"
                raise ParseError(message) from None
        return self._zips[path]

    @property
    def index(self) -> dict[str, tuple[Path, str]]:
        if self._index is None:
            self._index = self._build_index()
        return self._index

    def names(self, pattern: str = "*") -> list[str]:
        """Member paths matching a glob ``pattern`` (``fnmatch`` rules), sorted."""
        return sorted(n for n in self.index if fnmatch.fnmatchcase(n, pattern))

    def find(self, member: str) -> str:
        """Resolve a member path; a bare file name matches a member in any folder."""
        if member in self.index:
            return member
        matches = [n for n in self.index if PurePosixPath(n).name == PurePosixPath(member).name]
        if len(matches) == 1:
            return matches[0]
        message = f"file '{member}' not found in {', '.join(map(str, self.roots))}"
        if len(matches) > 1:
            message = f"file '{member}' is ambiguous in {', '.join(map(str, self.roots))}: {matches}"
        raise MissingFileError(message)

    @contextmanager
    def open(self, member: str) -> Iterator[IO[bytes]]:
        """Open a member for binary reading."""
        name = self.find(member)
        root, inner = self.index[name]
        if root.is_dir():
            with open(root / inner, "rb") as fh:
                yield fh
        elif zipfile.is_zipfile(root):
            try:
                with self._zip(root).open(inner) as fh:
                    yield fh
            except (zipfile.BadZipFile, EOFError) as exc:
                message = f"member '{inner}' of {root} cannot be read ({exc}); the archive may be corrupt"
                raise ParseError(message) from None
        elif inner == "":
            with open(root, "rb") as fh:
                yield fh
        else:
            with tarfile.open(root) as tf:
                extracted = tf.extractfile(inner)
                if extracted is None:
                    raise MissingFileError(f"member '{inner}' of {root} is not a regular file")
                yield io.BytesIO(extracted.read())

    def read_bytes(self, member: str) -> bytes:
        """The whole content of a member."""
        with self.open(member) as fh:
            return fh.read()

    def close(self) -> None:
        for zf in self._zips.values():
            zf.close()
        self._zips.clear()


Reader = Callable[["DatasetEntry", Sources], RawTable]
