"""The pipeline: a table found in the cache, or built from its verified files and stored.

It wires the stages, one per module, under the dataset's lock: the raw files
(:mod:`mudata.sources`), the rows (:mod:`mudata.building.labelled`), the record of
what each stage did (:mod:`mudata.building.provenance`) and the files written
(:mod:`mudata.publish.store`); :mod:`mudata.building.cache` says when the table
built before is served instead. Its settings are one
:class:`~mudata.building.options.BuildOptions`.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from mudata.building.cache import find_cached, parquet_path, users_of
from mudata.building.labelled import build_table
from mudata.building.options import BuildOptions
from mudata.building.provenance import build_record, table_provenance
from mudata.errors import (
    ChecksumError,
    LimitError,
    ParseError,
)
from mudata.publish.store import (
    load_table,
    stamp_path,
    write_table,
)
from mudata.readers import (
    Sources,
)
from mudata.records.entry import DatasetEntry
from mudata.sources.paths import (
    folder_lock,
    sweep_stale,
    sweep_when_idle,
)

if TYPE_CHECKING:
    from mudata.sources.pins import FetchedFile

log = logging.getLogger(__name__)


def _temporary_files(target: Path) -> tuple[str, ...]:
    """Name patterns of the temporary files a build writes beside the table ``target``."""
    return (
        f".{target.name}.*.part",
        ".datapackage.json.*.part",
        ".croissant.json.*.part",
        f".{stamp_path(target).name}.*.part",
    )


def _spool_dir(dataset_folder: Path) -> Path | None:
    """Where a build spools members: ``<data home>/<name>/.spool``, emptied first.

    ``dataset_folder`` is ``<data home>/<name>`` (:func:`mudata.sources.paths.table_dir`).

    On the data home's disk, not ``$TMPDIR`` (often a small memory-backed
    /tmp), since a release may be larger than memory. Called under the
    dataset's lock, so whatever is there was left by a killed run. None (the
    system's temporary folder) when the data home cannot hold it: read-only,
    or the name taken by a link or a file.
    """
    folder = dataset_folder / SPOOL_FOLDER
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if folder.is_symlink() or not folder.is_dir():
            return None
        folder.chmod(0o700)  # its owner's only, also when an older run made it otherwise
    except OSError:
        return None
    for stale in folder.glob("mudata-spool-*"):
        _sweep(stale)
    return folder


def _sweep(stale: Path) -> None:
    """Remove what a killed run left in the spool folder, and log what became of it.

    A link (or a file) under a spool's name is no spool: it is removed itself,
    never followed, since what it points to is not the build's to delete.
    """
    if stale.is_symlink() or not stale.is_dir():
        what = "a link" if stale.is_symlink() else "a file"
        try:
            stale.unlink()
        except OSError as exc:
            log.warning("could not remove %s, %s under a spool's name: %s", stale, what, exc)
            return
        log.info(
            "removed %s, %s under a spool's name (what it points to is left alone)", stale, what
        )
        return
    shutil.rmtree(stale, ignore_errors=True)
    if stale.exists() or stale.is_symlink():
        log.warning("could not remove %s, a spool left by an interrupted run", stale)
    else:
        log.info("removed %s, a spool left by an interrupted run", stale)


#: The folder, in a dataset's folder of the data home, where its build spools members.
SPOOL_FOLDER = ".spool"


def build(entry: DatasetEntry, options: BuildOptions | None = None) -> Path:
    """Build (or find) the published table of ``entry``; return its Parquet path.

    A table already built from the same entry with the same recipe version,
    unchanged since it was written (see :func:`mudata.building.cache.current_path`),
    is returned without reading its rows.
    """
    return build_frame(entry, options, read_back=False)[0]


def build_frame(
    entry: DatasetEntry, options: BuildOptions | None = None, *, read_back: bool = True
) -> tuple[Path, pd.DataFrame | None]:
    """Build (or find) the table of ``entry``; return its path and its checked rows.

    Parameters
    ----------
    entry : DatasetEntry
        The registry entry.
    options : BuildOptions, optional
        How to build it (default: ``BuildOptions()``). A cached table with
        fewer users than ``options.min_users`` is built again, so that the
        :class:`~mudata.errors.EmptyResultError` says which users were dropped and why.
    read_back : bool
        When True (a load), the rows of a table already built are read and
        hashed, and nothing is written unless the table must be built. When
        False (a fetch), None stands for the rows: a table just built is not
        read back, and one already built is checked by
        :func:`~mudata.building.cache.current_path` (no row read when its file is
        unchanged since it was written, unless ``options.verify``), its
        descriptors repaired and the leftovers of killed runs removed.
    """
    options = BuildOptions() if options is None else options
    home = options.data_home
    target = parquet_path(entry, home)
    leftovers = _temporary_files(target)
    if not options.force:
        found = find_cached(entry, target, read_back, options.verify)
        if found is not None and users_of(*found) >= options.min_users:
            log.info(
                "%s: cached table %s, its raw files verified at build time (%s); "
                "`mudata verify %s` rebuilds it from them and compares",
                entry.name,
                target,
                found[1].get("built", "time not recorded"),
                entry.name,
            )
            if not read_back:  # a fetch writes; a load (a read) leaves the folder as it is
                sweep_when_idle(target.parent, leftovers)
            return target, found[0]
        if found is not None:  # too few users: built again, whatever another process did
            options = replace(options, force=True)
    with folder_lock(target.parent):
        found = None if options.force else find_cached(entry, target, read_back, options.verify)
        if found is not None:
            return target, found[0]  # built by another process while this one waited
        sweep_stale(target.parent, *leftovers)
        fetched, sources = open_sources(entry, options, spool_in=target.parent)
        try:
            table, drops = build_table(entry, sources, min_users=options.min_users)
        except (ParseError, LimitError, ChecksumError) as exc:
            _discard_unhashed_cache(entry, fetched, exc)
            raise
        finally:
            sources.close()
        provenance = table_provenance(entry, fetched, sources, table, drops)
        provenance["build"] = build_record(home, options.manual_dir, options.min_users)
        path = write_table(table, target.parent, entry.name, provenance)
        del table  # let go before it is read back: the rows are not held twice
    log.info(
        "%s: %d rows, %d users written to %s",
        entry.name,
        provenance["counts"]["rows"],
        provenance["counts"]["users"],
        path,
    )
    if not read_back:
        return path, None
    frame, record = load_table(path)
    frame.attrs["provenance"] = record
    return path, frame


def open_sources(
    entry: DatasetEntry, options: BuildOptions, *, spool_in: Path
) -> tuple[list[FetchedFile], Sources]:
    """Obtain and verify the raw files of ``entry``; open them for its reader.

    Call it under the dataset's lock (:func:`mudata.sources.paths.dataset_lock`):
    the spool folder it empties first (in ``spool_in``, the dataset's folder
    of the data home) is then the build's own. The caller closes the
    :class:`~mudata.readers.sources.Sources`.
    """
    # Here, not at the top: imports pooch's network stack.
    from mudata.sources.download import fetch_sources

    fetched = fetch_sources(
        entry,
        data_home=options.data_home,
        mirror=options.mirror,
        manual_dir=options.manual_path,
        progress=options.progress,
        allow_unverified=options.allow_unverified,
        download=options.download,
        max_expansion=options.max_expansion,
    )
    sources = Sources(
        [f.root for f in fetched],
        [f.pins for f in fetched],
        max_expansion=options.max_expansion,
        spool_dir=_spool_dir(spool_in),
    )
    return fetched, sources


def _discard_unhashed_cache(
    entry: DatasetEntry, fetched: list[FetchedFile], exc: Exception
) -> None:
    """Remove cached downloads without a registry hash after their bytes failed to read.

    Such a file cannot be told apart from a damaged or hostile download; kept,
    it would fail the same way at every run. Hashed files and user files stay.
    """
    removed = []
    for f, spec in zip(fetched, entry.files, strict=True):
        if f.origin in ("download", "cache") and spec.sha256 is None and f.root.is_file():
            f.root.unlink(missing_ok=True)
            removed.append(str(f.root))
    if removed:
        exc.args = (f"{exc}. Removed from the cache (no registry hash): {', '.join(removed)}",)


__all__ = ["SPOOL_FOLDER", "build", "build_frame", "open_sources"]
