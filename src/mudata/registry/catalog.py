"""What the registry holds and what the data home has built: ``mudata.list()`` and ``mudata.info()``.

Both say, for a dataset, whether its table is built (and up to date) in the
data home, how much a fetch downloads, and how many users it has: the built
table's count when there is one, else what the registry entry says the
study's filter kept, else nothing (unknown).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mudata.building.cache import (
    is_built,
    parquet_path,
)
from mudata.errors import RegistryError
from mudata.publish.store import read_provenance
from mudata.records.entry import DatasetEntry
from mudata.registry.lookup import get_entry, load_registry

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DatasetInfo",
    "dataset_info",
    "download_bytes",
    "list_datasets",
    "size_text",
    "users_text",
]

#: The columns of :func:`list_datasets`, in order.
LIST_COLUMNS = (
    "name",
    "title",
    "licence",
    "built",
    "download_bytes",
    "users",
    "users_from",
    "path",
)


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset as the registry and the data home know it.

    Attributes
    ----------
    name, title, licence : str
        From the registry entry.
    built : bool
        A table built from this entry (with the current recipe) is in the data home.
    path : Path
        Where the table is, or will be once fetched.
    download_bytes : int or None
        What fetching downloads: the sizes the entry records of its remote
        files, added up; 0 when every file is local (a registered path, or
        ``--manual-dir``); None when a remote file has no recorded size.
    users : int or None
        Users of the table: the built table's count, else the entry's
        ``users`` (what the study's filter kept), else None (unknown).
    users_from : {"table", "registry"} or None
        Where ``users`` comes from.
    users_dropped : int or None
        Users the filter dropped, when the table is built (else None).
    rows : int or None
        Rows of the built table (else None).
    entry : DatasetEntry
        The whole registry entry (``mudata info --json`` prints it).
    """

    name: str
    title: str
    licence: str
    built: bool
    path: Path
    download_bytes: int | None
    users: int | None
    users_from: Literal["table", "registry"] | None
    users_dropped: int | None
    rows: int | None
    entry: DatasetEntry = field(repr=False)


def size_text(n_bytes: int | None) -> str:
    """A download size for a person: ``10.9 MiB``; ``local`` for 0, ``unknown`` for None.

    Examples
    --------
    >>> size_text(11404612), size_text(0), size_text(None), size_text(512)
    ('10.9 MiB', 'local', 'unknown', '512 B')
    """
    if n_bytes is None:
        return "unknown"
    if n_bytes == 0:
        return "local"
    size = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n_bytes} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError  # pragma: no cover (the loop returns at GiB)


def users_text(info: DatasetInfo) -> str:
    """The users column of ``mudata list``: the table's count, the registry's, or unknown.

    Examples
    --------
    >>> import mudata
    >>> users_text(mudata.info("wisdm")) in ("16 kept", "16 (registry)")
    True
    """
    if info.users is None:
        return "unknown"
    return f"{info.users} kept" if info.users_from == "table" else f"{info.users} (registry)"


def download_bytes(entry: DatasetEntry) -> int | None:
    """The bytes a fetch of ``entry`` downloads, or None when a remote file's size is unknown."""
    remote = [f for f in entry.files if f.url is not None]
    if any(f.size is None for f in remote):
        return None
    return sum(int(f.size or 0) for f in remote)


def _info(entry: DatasetEntry, data_home: Path | str | None) -> DatasetInfo:
    path = parquet_path(entry, data_home)
    built = is_built(entry, data_home)
    counts = (read_provenance(path) or {}).get("counts", {}) if built else {}
    if isinstance(counts.get("users"), int):
        users, users_from = counts["users"], "table"
    elif entry.users is not None:
        users, users_from = entry.users, "registry"
    else:
        users, users_from = None, None
    dropped = counts.get("users_dropped")
    return DatasetInfo(
        name=entry.name,
        title=entry.title,
        licence=entry.licence,
        built=built,
        path=path,
        download_bytes=download_bytes(entry),
        users=users,
        users_from=users_from,  # type: ignore[arg-type]
        users_dropped=len(dropped) if isinstance(dropped, dict) else None,
        rows=counts.get("rows") if isinstance(counts.get("rows"), int) else None,
        entry=entry,
    )


def dataset_info(name: str, *, data_home: Path | str | None = None) -> DatasetInfo:
    """What the registry and the data home know of dataset ``name`` (``mudata.info``).

    Nothing is downloaded or built: a built table's provenance is read from
    its Parquet footer.

    Parameters
    ----------
    name : str
        A registry name (:func:`list_datasets` lists them).
    data_home : path-like, optional
        Data directory; default ``$MUDATA_HOME`` or Pooch's OS cache folder.

    Returns
    -------
    DatasetInfo
        ``built``, ``path``, ``download_bytes``, ``users`` (and where that
        count comes from), ``users_dropped``, ``rows``, and the whole ``entry``.

    Raises
    ------
    mudata.errors.UnknownDatasetError
        No entry has that name (the message suggests the closest one).

    Examples
    --------
    >>> import mudata
    >>> info = mudata.info("wisdm")
    >>> info.download_bytes
    11404612
    >>> info.users_from in ("table", "registry")
    True
    """
    return _info(get_entry(name, data_home), data_home)


def list_datasets(
    *, data_home: Path | str | None = None, broken: dict[str, RegistryError] | None = None
) -> pd.DataFrame:
    """Every registered dataset, one row each, sorted by name (``mudata.list``).

    Parameters
    ----------
    data_home : path-like, optional
        Data directory, as for :func:`dataset_info`.
    broken : dict, optional
        Filled with the registry files that could not be read (file name ->
        error) instead of failing on them; ``mudata list`` warns of each.

    Returns
    -------
    DataFrame
        Columns ``name``, ``title``, ``licence``, ``built`` (bool),
        ``download_bytes`` and ``users`` (nullable integers: missing when
        unknown), ``users_from`` ("table", "registry" or missing) and ``path``
        (where the table is or will be), as in :class:`DatasetInfo`.

    Examples
    --------
    >>> import mudata
    >>> table = mudata.list()
    >>> {"wisdm", "gestures"} <= set(table["name"])
    True
    >>> list(table.columns[:4])
    ['name', 'title', 'licence', 'built']
    """
    # Here, not at the top: pandas, only for the frame.
    import pandas as pd

    entries = load_registry(data_home, broken=broken)
    infos = [_info(entries[name], data_home) for name in sorted(entries)]
    frame = pd.DataFrame(
        {
            "name": [i.name for i in infos],
            "title": [i.title for i in infos],
            "licence": [i.licence for i in infos],
            "built": pd.array([i.built for i in infos], dtype=bool),
            "download_bytes": pd.array([i.download_bytes for i in infos], dtype="Int64"),
            "users": pd.array([i.users for i in infos], dtype="Int64"),
            "users_from": pd.array([i.users_from for i in infos], dtype="string"),
            "path": [str(i.path) for i in infos],
        },
        columns=list(LIST_COLUMNS),
    )
    return frame
