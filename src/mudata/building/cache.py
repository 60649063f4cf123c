"""The built table in the data home: where it lives, whether it is still current, how it is served.

A table counts as current when it was built from the same entry with the same
recipe version and no registered file it does not pin has changed since. A
fetch serves it without reading a row when its file is unchanged since it was
written (:func:`current_path`); a load reads and hashes its rows
(:func:`current_table`). A damaged table is not served: a warning, and the
caller rebuilds it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from mudata.building.provenance import RECIPE_VERSIONS, entry_fingerprint
from mudata.errors import (
    CorruptTableError,
)
from mudata.publish.store import (
    load_table,
    read_provenance,
    read_stamped,
    repair_if_current,
)
from mudata.records.entry import DatasetEntry
from mudata.sources.paths import (
    folder_lock,
    table_dir,
)
from mudata.sources.release import release_files

log = logging.getLogger(__name__)


def parquet_path(entry: DatasetEntry, data_home: Path | str | None = None) -> Path:
    """Where the built table of ``entry`` lives."""
    return table_dir(entry.name, data_home) / f"{entry.name}.parquet"


def is_built(entry: DatasetEntry, data_home: Path | str | None = None) -> bool:
    """True when the table exists and was built from this entry with the current recipe.

    Registered local files the entry records no hash for are hashed again: the
    table is out of date when one of them changed since it was built. The rows
    themselves are checked by :func:`current_table`, not here.
    """
    return _is_built(entry, parquet_path(entry, data_home))


def _is_built(entry: DatasetEntry, path: Path) -> bool:
    """:func:`is_built` of the table at ``path``."""
    if not path.is_file():
        return False
    return _up_to_date(entry, read_provenance(path))


def _up_to_date(entry: DatasetEntry, provenance: dict[str, Any] | None) -> bool:
    if not (
        provenance
        and provenance.get("entry_sha256") == entry_fingerprint(entry)
        and provenance.get("recipe", {}).get("version") == RECIPE_VERSIONS[entry.recipe.name]
    ):
        return False
    # Here, not at the top: imports pooch's network stack.
    from mudata.sources.registered import unpinned_local_changed

    return not unpinned_local_changed(release_files(entry), provenance.get("files", []))


def current_table(entry: DatasetEntry, path: Path) -> pd.DataFrame | None:
    """The built table at ``path``, checked against its ``table_sha256``; None when it must be (re)built.

    ``path`` is :func:`parquet_path` of ``entry``. A table whose rows no longer
    match the hash recorded at build time is not served: a warning says so
    and None is returned, so that the caller rebuilds it from the verified
    raw files. A read: nothing is written.
    """
    if not _is_built(entry, path):
        return None
    loaded = _checked_rows(path)
    if loaded is None:
        return None
    frame, provenance = loaded
    frame.attrs["provenance"] = provenance
    return frame


def _checked_rows(path: Path) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """The table's rows and provenance, their hash checked; None (with a warning) when
    they fail, so that the caller rebuilds the table from the verified raw files."""
    try:
        return load_table(path)
    except CorruptTableError as exc:
        log.warning("%s; rebuilding it from the verified raw files", exc)
        return None


def current_path(entry: DatasetEntry, path: Path, *, verify: bool = False) -> dict[str, Any] | None:
    """The provenance of the built table at ``path``, for a fetch; None when it must be (re)built.

    ``path`` is :func:`parquet_path` of ``entry``. The fast path of ``mudata
    fetch``: when the file's size and times are those its stamp recorded
    with the hash its footer holds and ``datapackage.json`` agrees
    (:func:`mudata.publish.store.read_stamped`), no row is read. Otherwise,
    or with ``verify``, the rows are hashed as :func:`current_table` does; a
    table that passes has its descriptors and its stamp repaired
    (:func:`mudata.publish.store.repair_if_current`), one that fails is not
    served (a warning, and None).
    """
    if not path.is_file():
        return None
    provenance, as_written = read_stamped(path, check=not verify)
    if not _up_to_date(entry, provenance):
        return None
    assert provenance is not None  # _up_to_date refuses None
    if as_written:
        return provenance
    loaded = _checked_rows(path)
    if loaded is None:
        return None
    frame, provenance = loaded
    with folder_lock(path.parent):
        # Another process may have written a new table since it was read: only
        # the rows just checked may be described.
        repair_if_current(path, frame, provenance)
    return provenance


def find_cached(
    entry: DatasetEntry, path: Path, read_back: bool, verify: bool
) -> tuple[pd.DataFrame | None, dict[str, Any]] | None:
    """The rows (None for a fetch) and provenance of the table at ``path``; None when it must be built.

    ``path`` is :func:`parquet_path` of ``entry``, computed once by the caller.
    """
    if read_back:
        frame = current_table(entry, path)
        return None if frame is None else (frame, frame.attrs["provenance"])
    record = current_path(entry, path, verify=verify)
    return None if record is None else (None, record)


def users_of(frame: pd.DataFrame | None, record: dict[str, Any]) -> int:
    """Users of a cached table: counted in its rows when read, else as its provenance records."""
    if frame is not None:
        return int(frame["userid"].nunique())
    users = (
        record.get("counts", {}).get("users") if isinstance(record.get("counts"), dict) else None
    )
    # A record without a count (not one mudata wrote) counts as too few: it is rebuilt.
    return users if isinstance(users, int) and not isinstance(users, bool) else 0


__all__ = ["current_path", "current_table", "find_cached", "is_built", "parquet_path", "users_of"]
