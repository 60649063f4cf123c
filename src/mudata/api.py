"""The Python API: ``fetch`` a dataset's table, ``load`` it, read its ``provenance``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mudata.errors import MissingFileError
from mudata.pipeline import build_frame, parquet_path
from mudata.registry import get_entry
from mudata.store import read_provenance


def fetch(
    name: str,
    *,
    data_home: Path | str | None = None,
    download_if_missing: bool = True,
    mirror: str | None = None,
    manual_dir: Path | str | None = None,
    allow_unverified: bool = False,
    force: bool = False,
    progress: bool | None = None,
    max_expansion: float | None = None,
    min_users: int = 2,
) -> Path:
    """Build the dataset's feature table if needed and return the Parquet path.

    Parameters
    ----------
    name : str
        A registry name (``mudata list`` shows them).
    data_home : path-like, optional
        Data directory; default ``$MUDATA_HOME`` or Pooch's OS cache folder.
    download_if_missing : bool
        If False and the table is not built yet (and no ``manual_dir`` is
        given), raise :class:`~mudata.errors.MissingFileError` instead of downloading.
    mirror : str, optional
        Base address serving the same files under the same names.
    manual_dir : path-like, optional
        Folder holding the release (archive or extracted members) already.
    allow_unverified : bool
        Accept files for which the registry records no SHA-256 (the hash seen
        is recorded in the provenance).
    force : bool
        Rebuild even when an up-to-date table exists.
    progress : bool, optional
        Show download progress bars; default: only on a terminal.
    max_expansion : float, optional
        How far an archive may expand, in bytes per archive byte; default
        ``$MUDATA_MAX_EXPANSION``, else 100 (small archives may always reach 64 MiB).
    min_users : int
        Fewest users the table must keep after the user filter (at least 2).

    Returns
    -------
    Path
        ``<data_home>/<name>/<name>.parquet``. Its rows were checked against
        the hash recorded when it was built; a damaged table is rebuilt from
        the verified raw files, with a warning.
    """
    return _fetch(
        name,
        data_home=data_home,
        download_if_missing=download_if_missing,
        mirror=mirror,
        manual_dir=manual_dir,
        allow_unverified=allow_unverified,
        force=force,
        progress=progress,
        max_expansion=max_expansion,
        min_users=min_users,
    )[0]


def _fetch(
    name: str,
    *,
    data_home: Path | str | None,
    download_if_missing: bool,
    manual_dir: Path | str | None,
    **options: Any,
) -> tuple[Path, Any]:
    entry = get_entry(name, data_home)
    # A table that exists but is out of date or damaged is rebuilt from the
    # cached raw files without downloading (or a clear error names the missing one).
    if not download_if_missing and manual_dir is None and not parquet_path(entry, data_home).exists():
        message = (
            f"dataset '{entry.name}' is not built in {parquet_path(entry, data_home).parent} "
            "and download_if_missing=False"
        )
        raise MissingFileError(message)
    return build_frame(
        entry,
        data_home=data_home,
        manual_dir=manual_dir,
        download=download_if_missing,
        **options,
    )


def load(
    name: str,
    *,
    data_home: Path | str | None = None,
    download_if_missing: bool = True,
    return_X_y: bool = False,
    as_frame: bool = True,
    mirror: str | None = None,
    manual_dir: Path | str | None = None,
    allow_unverified: bool = False,
    progress: bool | None = None,
    max_expansion: float | None = None,
) -> Any:
    """Load a dataset's feature table, building it first if needed.

    Parameters
    ----------
    name, data_home, download_if_missing, mirror, manual_dir, allow_unverified, progress, max_expansion
        As for :func:`fetch`.
    return_X_y : bool
        If True, return ``(X, y, groups)``: features, labels and user ids (the
        ``groups`` of a :class:`~sklearn.model_selection.LeaveOneGroupOut`).
    as_frame : bool
        With ``return_X_y``: pandas objects (True) or numpy arrays (False).

    Returns
    -------
    DataFrame or tuple
        By default the whole table (``userid``, ``label``, then the features),
        with its provenance in ``frame.attrs["provenance"]``.
    """
    # The rows served are the rows whose hash was just checked: one read.
    _, frame = _fetch(
        name,
        data_home=data_home,
        download_if_missing=download_if_missing,
        mirror=mirror,
        manual_dir=manual_dir,
        allow_unverified=allow_unverified,
        progress=progress,
        force=False,
        max_expansion=max_expansion,
    )
    if not return_X_y:
        return frame
    X = frame.drop(columns=["userid", "label"])
    y = frame["label"]
    groups = frame["userid"]
    if as_frame:
        return X, y, groups
    return X.to_numpy(), y.to_numpy(), groups.to_numpy()


def provenance(name: str, *, data_home: Path | str | None = None) -> dict[str, Any]:
    """The provenance record of a built table (``sha256`` is the table's content hash)."""
    entry = get_entry(name, data_home)
    path = parquet_path(entry, data_home)
    record = read_provenance(path) if path.is_file() else None
    if record is None:
        message = f"dataset '{entry.name}' is not built in {path.parent}; run `mudata fetch {entry.name}` first"
        raise MissingFileError(message)
    return {**record, "sha256": record["table_sha256"], "path": str(path)}


__all__ = ["fetch", "load", "provenance"]
