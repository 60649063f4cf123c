"""Publishing a feature table: Parquet with provenance, and a Frictionless datapackage.json.

Both files are written to a temporary name in the destination folder and then
renamed, so an interrupted run never leaves a half-written table under the
final name. The Parquet file is renamed last: a table counts as built only
when it exists (see :func:`read_provenance`).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mudata.errors import StorageError

PROVENANCE_KEY = b"mudata.provenance"


def _umask_mode() -> int:
    # mkstemp creates files readable by the owner only; published tables should
    # get the permissions any other new file would get.
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _atomic_write_bytes(path: Path, payload: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        os.chmod(tmp, _umask_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _frictionless_type(dtype: Any) -> str:
    if pd.api.types.is_integer_dtype(dtype):
        return "integer"
    if pd.api.types.is_float_dtype(dtype):
        return "number"
    return "string"


def datapackage(table: pd.DataFrame, parquet_name: str, provenance: dict[str, Any]) -> dict[str, Any]:
    """A Frictionless Data Package descriptor for the table.

    Parameters
    ----------
    table : DataFrame
        The published table.
    parquet_name : str
        The Parquet file's name, relative to the descriptor.
    provenance : dict
        What :func:`mudata.pipeline.build` recorded.
    """
    fields = [{"name": str(c), "type": _frictionless_type(t)} for c, t in table.dtypes.items()]
    fields[1]["constraints"] = {"enum": provenance["classes"]}
    return {
        "profile": "data-package",
        "name": provenance["dataset"],
        "title": provenance["title"],
        "version": provenance["dataset_version"],
        "homepage": provenance["homepage"],
        "licenses": [{"name": provenance["licence"], "title": provenance["licence"]}],
        "sources": [
            {"title": f["name"], "path": f.get("url") or f.get("path") or "", "sha256": f["sha256"]}
            for f in provenance["files"]
        ],
        "citation": provenance["citation"],
        "resources": [
            {
                "name": provenance["dataset"],
                "path": parquet_name,
                "format": "parquet",
                "mediatype": "application/vnd.apache.parquet",
                "profile": "tabular-data-resource",
                "schema": {"fields": fields, "primaryKey": []},
            }
        ],
        "mudata": provenance,
    }


def write_table(table: pd.DataFrame, folder: Path, name: str, provenance: dict[str, Any]) -> Path:
    """Write ``<folder>/<name>.parquet`` and ``<folder>/datapackage.json`` atomically.

    Returns
    -------
    Path
        The Parquet file.

    Raises
    ------
    StorageError
        When ``folder`` cannot be created or written; nothing is left under
        the final names.
    """
    try:
        return _write_table(table, folder, name, provenance)
    except OSError as exc:
        message = (
            f"cannot write the table of '{name}' to {folder}: expected a writable "
            f"folder, got {type(exc).__name__}: {exc}. Choose another data directory "
            f"with --data-home or $MUDATA_HOME."
        )
        raise StorageError(message) from None


def _write_table(table: pd.DataFrame, folder: Path, name: str, provenance: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    parquet_path = folder / f"{name}.parquet"
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    metadata = dict(arrow.schema.metadata or {})
    metadata[PROVENANCE_KEY] = json.dumps(provenance, sort_keys=True).encode("utf-8")
    arrow = arrow.replace_schema_metadata(metadata)

    descriptor = json.dumps(datapackage(table, parquet_path.name, provenance), indent=2).encode("utf-8")

    # Both files are complete under temporary names before either is renamed.
    fd, tmp = tempfile.mkstemp(prefix=f".{parquet_path.name}.", suffix=".part", dir=folder)
    os.close(fd)
    try:
        os.chmod(tmp, _umask_mode())
        pq.write_table(arrow, tmp)
        _atomic_write_bytes(folder / "datapackage.json", descriptor)
        os.replace(tmp, parquet_path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return parquet_path


def read_provenance(parquet_path: Path) -> dict[str, Any] | None:
    """The provenance stored in a table's Parquet metadata, or None if absent/unreadable."""
    try:
        metadata = pq.read_schema(parquet_path).metadata or {}
    except (OSError, pa.ArrowInvalid):
        return None
    raw = metadata.get(PROVENANCE_KEY)
    return json.loads(raw) if raw else None


def read_table(parquet_path: Path) -> pd.DataFrame:
    """Read a published table back."""
    return pd.read_parquet(parquet_path)
