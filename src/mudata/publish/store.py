"""Publishing a feature table: Parquet with provenance, a Frictionless datapackage.json
and a Croissant croissant.json (see :mod:`mudata.publish.croissant`).

Both files are written with :mod:`mudata.files` (a temporary name in the
destination folder, then a rename), so an interrupted run never leaves a
half-written table under the final name. The Parquet file is renamed last: a table counts as built only
when it exists (see :func:`read_provenance`).

How the two can never disagree: the Parquet file is the authority. Its
provenance (in its own metadata, so it cannot be separated from the rows)
records ``table_sha256``, a SHA-256 of the rows (:mod:`mudata.publish.table_hash`; its
kind is ``table_sha256_kind``); ``datapackage.json`` embeds the
same provenance, hence the same hash. :func:`load_table` checks the rows
against that hash before serving them (:class:`CorruptTableError` on a
mismatch). A read never writes: :func:`repair_descriptors`, called by
``mudata fetch`` and ``mudata verify`` once the rows matched their hash,
rewrites ``datapackage.json`` (and ``croissant.json``) from the Parquet file
when they disagree with it (a run killed between the two renames, a
descriptor edited by hand).

The stamp (``.<name>.parquet.stamp``, :func:`write_stamp`) lets a cached
``fetch`` skip hashing the rows: written after the Parquet file is in place,
it records the file's size, ``mtime_ns`` and ``ctime_ns`` and its
``table_sha256``. :func:`unchanged_since_written` compares them with the file
as it stands and with the hash in its footer, without reading a row. It
catches accidental change (a file rewritten, cut, restored from a backup), not
a forgery: whoever can write the table can write the stamp beside it, and
only hashing the rows (``mudata fetch --verify``, :func:`load_table`) or a
rebuild (``mudata verify``) checks them. See docs/trust.md.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mudata.bounds.parquet import check_parquet
from mudata.errors import (
    CorruptTableError,
    MudataError,
    ParseError,
    StorageError,
    ValidationError,
    excerpt,
)
from mudata.files import atomic_path, atomic_write, open_regular, read_regular, sha256_file
from mudata.publish.croissant import croissant
from mudata.publish.table_hash import KIND, LEGACY_KIND, legacy_sha256, table_sha256

log = logging.getLogger(__name__)

_T = TypeVar("_T")

PROVENANCE_KEY = b"mudata.provenance"
DESCRIPTOR = "datapackage.json"
CROISSANT = "croissant.json"
#: Bytes a stamp may hold: four numbers and a hash; anything longer is not one.
_STAMP_BYTES = 4096


def table_fingerprint(table: pd.DataFrame) -> str:
    """The table's ``table_sha256``: SHA-256 over a canonical encoding of its rows.

    Column names, order and types are hashed with the values; the encoding is
    described in :mod:`mudata.publish.table_hash`. A table built by this mudata
    records it with ``table_sha256_kind`` :data:`~mudata.publish.table_hash.KIND`.
    """
    return table_sha256(table)


def fingerprint_kind(provenance: dict[str, Any]) -> str:
    """The kind of hash ``provenance["table_sha256"]`` is.

    Tables written before the kind was recorded carry
    :data:`~mudata.publish.table_hash.LEGACY_KIND` (pandas' 64-bit row hashes).
    """
    kind = provenance.get("table_sha256_kind", LEGACY_KIND)
    return kind if isinstance(kind, str) else repr(kind)


def recorded_fingerprint(table: pd.DataFrame, provenance: dict[str, Any]) -> str:
    """The rows' hash of the kind their provenance records (to compare with ``table_sha256``).

    Raises
    ------
    CorruptTableError
        The kind is none this mudata knows, or the rows cannot be hashed.
    """
    kind = fingerprint_kind(provenance)
    try:
        if kind == KIND:
            return table_sha256(table)
        if kind == LEGACY_KIND:
            return legacy_sha256(table)
    except ValidationError as exc:
        raise CorruptTableError(f"its rows cannot be hashed: {exc}") from None
    message = (
        f"its table_sha256_kind is {excerpt(kind, 60)}, not one this mudata knows "
        f"({KIND}, or {LEGACY_KIND} for older tables)"
    )
    raise CorruptTableError(message)


def _frictionless_type(dtype: Any) -> str:
    if pd.api.types.is_integer_dtype(dtype):
        return "integer"
    if pd.api.types.is_float_dtype(dtype):
        return "number"
    return "string"


def datapackage(
    table: pd.DataFrame, parquet_name: str, provenance: dict[str, Any]
) -> dict[str, Any]:
    """A Frictionless Data Package descriptor for the table.

    Parameters
    ----------
    table : DataFrame
        The published table.
    parquet_name : str
        The Parquet file's name, relative to the descriptor.
    provenance : dict
        What :func:`mudata.building.pipeline.build` recorded.
    """
    fields: list[dict[str, Any]] = [
        {"name": str(c), "type": _frictionless_type(t)} for c, t in table.dtypes.items()
    ]
    fields[1]["constraints"] = {"enum": provenance["classes"]}
    return {
        "profile": "data-package",
        "name": provenance["dataset"],
        "title": provenance["title"],
        "version": provenance["dataset_version"],
        "homepage": provenance["homepage"],
        "licenses": [_licence(provenance)],
        "sources": [_source(f) for f in provenance["files"]],
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


def _licence(provenance: dict[str, Any]) -> dict[str, str]:
    """The Data Package licence: the SPDX (or LicenseRef-) id as name, with its title and path."""
    licence = {
        "name": provenance["licence"],
        # Provenance written before titles were recorded: the id is the best title known.
        "title": provenance.get("licence_title") or provenance["licence"],
    }
    if provenance.get("licence_path"):
        licence["path"] = provenance["licence_path"]
    return licence


def _source(record: dict[str, Any]) -> dict[str, Any]:
    """A Data Package source for one release file (no empty ``path``)."""
    source = {"title": record["name"], "sha256": record["sha256"]}
    where = record.get("url") or record.get("path")
    if where:
        source["path"] = where
    return source


def write_table(table: pd.DataFrame, folder: Path, name: str, provenance: dict[str, Any]) -> Path:
    """Write ``<folder>/<name>.parquet`` and ``<folder>/datapackage.json`` atomically.

    ``croissant.json`` is written with them, and the stamp (:func:`write_stamp`)
    once the Parquet file is in place.

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

    descriptor = _descriptor_bytes(table, parquet_path.name, provenance)

    # The descriptors are complete before the Parquet file is renamed, and it is
    # renamed last: a table counts as built only once it exists. A write that
    # fails on the way (a full disk) puts back what the descriptors held, so no
    # datapackage.json describes a table that is not there.
    placed: dict[Path, bytes | None] = {}
    try:
        with atomic_path(parquet_path) as tmp:
            pq.write_table(arrow, tmp)
            _place(folder / DESCRIPTOR, descriptor, placed)
            croissant_bytes = _croissant_bytes(table, parquet_path.name, tmp, provenance)
            _place(folder / CROISSANT, croissant_bytes, placed)
    except BaseException:
        _put_back(placed)
        raise
    # After the rename, which may change the file's ctime. Without a stamp (a
    # full disk now) the table is whole all the same: the next fetch hashes it.
    write_stamp(parquet_path, provenance["table_sha256"])
    return parquet_path


def stamp_path(parquet_path: Path) -> Path:
    """Where the stamp of the table ``parquet_path`` is kept (module docstring)."""
    return parquet_path.with_name(f".{parquet_path.name}.stamp")


def _file_stamp(parquet_path: Path) -> dict[str, int]:
    """What the stamp records of the file as it stands now (of the file a link points to)."""
    status = parquet_path.stat()
    return {"bytes": status.st_size, "mtime_ns": status.st_mtime_ns, "ctime_ns": status.st_ctime_ns}


def write_stamp(parquet_path: Path, table_sha256: str) -> None:
    """Record the table file's size and times with its ``table_sha256`` (module docstring).

    Call only when the rows are known to match ``table_sha256``: just written,
    or just hashed. A stamp that cannot be written is logged and left out;
    the next fetch then hashes the rows.
    """
    path = stamp_path(parquet_path)
    try:
        record = {**_file_stamp(parquet_path), "table_sha256": table_sha256}
        atomic_write(path, json.dumps(record, sort_keys=True) + "\n")
    except OSError as exc:
        log.warning("could not write %s (the next fetch hashes the rows again): %s", path, exc)


def unchanged_since_written(parquet_path: Path, provenance: dict[str, Any]) -> bool:
    """True when the file's size and times are those its stamp records, and so is its hash.

    ``provenance`` is what the file's footer holds (:func:`read_provenance`);
    its ``table_sha256`` must equal the stamp's. No row is read. A missing,
    unreadable or foreign stamp, or a table of the old hash kind, is False: the
    rows are then hashed.
    """
    if fingerprint_kind(provenance) != KIND:
        return False
    try:
        with open_regular(stamp_path(parquet_path), "table stamp", StorageError) as fh:
            raw = fh.read(_STAMP_BYTES + 1)
        recorded = json.loads(raw) if len(raw) <= _STAMP_BYTES else None
        current = _file_stamp(parquet_path)
    except (MudataError, OSError, ValueError):
        return False
    if not isinstance(recorded, dict):
        return False
    return recorded == {**current, "table_sha256": provenance.get("table_sha256")}


def _place(path: Path, content: bytes, placed: dict[Path, bytes | None]) -> None:
    """Write ``path`` atomically; remember what it held (None: no regular file) in ``placed``."""
    previous = None
    if path.is_file() and not path.is_symlink():
        with contextlib.suppress(OSError):
            previous = path.read_bytes()
    atomic_write(path, content)
    placed[path] = previous


def _put_back(placed: dict[Path, bytes | None]) -> None:
    """Undo :func:`_place`: the old bytes back, or the file removed where there was none."""
    for path, previous in placed.items():
        try:
            if previous is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, previous)
        except OSError:
            # No room to put the old bytes back: no descriptor rather than a false
            # one (loading the old table writes it again from the table itself).
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)


def _croissant_bytes(
    table: pd.DataFrame, parquet_name: str, parquet_file: Path, provenance: dict[str, Any]
) -> bytes:
    """``croissant.json``: it names the SHA-256 of the Parquet file's bytes as written."""
    document = croissant(table, parquet_name, sha256_file(parquet_file), provenance)
    return json.dumps(document, indent=2).encode("utf-8")


def read_provenance(parquet_path: Path) -> dict[str, Any] | None:
    """The provenance stored in a table's Parquet metadata, or None if absent/unreadable."""
    try:
        metadata = pq.read_schema(parquet_path).metadata or {}
    except (OSError, pa.ArrowInvalid):
        return None
    raw = metadata.get(PROVENANCE_KEY)
    try:
        return _current_names(json.loads(raw)) if raw else None
    except ValueError:  # a damaged byte in the metadata (JSON or UTF-8): unreadable
        return None


def _descriptor_bytes(table: pd.DataFrame, parquet_name: str, provenance: dict[str, Any]) -> bytes:
    return json.dumps(datapackage(table, parquet_name, provenance), indent=2).encode("utf-8")


def read_unchecked(parquet_path: Path) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """The rows of a published table and its provenance (None if absent), unchecked.

    Provenance written before ``verified_at_build`` was its name (``verified``)
    is given under the new name: a file's flag says what the build saw, and a
    loaded table never claims more.

    Raises
    ------
    CorruptTableError
        The file cannot be read as Parquet.
    LimitError
        Its footer declares more rows than the expansion cap allows
        (:func:`mudata.bounds.parquet.check_parquet`).
    """
    frame, provenance = read_parquet_file(
        parquet_path, f"the cached table {parquet_path}", lambda arrow: arrow.to_pandas()
    )
    return frame, _current_names(provenance)


def read_parquet_file(path: Path, what: str, convert: Callable[[pa.Table], _T]) -> tuple[_T, Any]:
    """Read a Parquet file mudata wrote (a table, windows): any failure means it is damaged.

    The file is checked against its footer first, as any Parquet input: a
    damaged or replaced file must not fill the memory.

    Parameters
    ----------
    path : Path
    what : str
        The file as messages name it (``the cached table <path>``).
    convert : callable
        Applied to the Arrow table as it is read (``to_pandas``), its failure
        reported as the read's.

    Returns
    -------
    converted : object
        ``convert`` of the Arrow table.
    provenance : object
        The JSON under :data:`PROVENANCE_KEY`, or None if absent or unreadable.

    Raises
    ------
    CorruptTableError
        The file cannot be read as Parquet.
    LimitError
        Its footer declares more than the expansion cap allows.
    """
    with contextlib.suppress(ParseError):  # an unreadable footer is reported below
        check_parquet(path, what)
    try:
        arrow = pq.read_table(path)
        converted = convert(arrow)
    except Exception as exc:
        # A flipped byte in pandas' schema metadata surfaces as TypeError, KeyError,
        # JSON errors and more, depending on pandas' version: all mean "damaged".
        message = f"{what} cannot be read ({type(exc).__name__}: {str(exc)[:200]}); it is damaged"
        raise CorruptTableError(message) from None
    raw = (arrow.schema.metadata or {}).get(PROVENANCE_KEY)
    try:
        provenance = json.loads(raw) if raw else None
    except ValueError:
        provenance = None
    return converted, provenance


def _current_names(provenance: Any) -> dict[str, Any] | None:
    """``files[].verified`` of older tables under its name of now, ``verified_at_build``."""
    if not isinstance(provenance, dict):
        return None
    files = provenance.get("files")
    for record in files if isinstance(files, list) else []:
        if isinstance(record, dict) and "verified" in record:
            record.setdefault("verified_at_build", record.pop("verified"))
    return provenance


def load_table(parquet_path: Path, *, verify: bool = True) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read a published table and its provenance, checked against each other.

    The rows and the provenance come from one read of the file, so they
    belong together; with ``verify`` the rows are hashed and compared with
    the provenance's ``table_sha256``. This catches damage (a flipped byte, a
    cut file), not a forgery: whoever rewrites the rows can rewrite the hash
    beside them. :func:`mudata.verify` rebuilds the table to check that.

    A read: no file is written, not even a ``datapackage.json`` that
    disagrees with the table (:func:`repair_descriptors` is for the commands
    that write, ``fetch`` and ``verify``).

    Raises
    ------
    CorruptTableError
        The file cannot be read as Parquet, has no provenance, or its rows do
        not match ``table_sha256``.
    """
    frame, provenance = read_unchecked(parquet_path)
    if provenance is None or "table_sha256" not in provenance:
        message = f"the cached table {parquet_path} has no readable provenance; it is damaged"
        raise CorruptTableError(message)
    if verify:
        try:
            observed = recorded_fingerprint(frame, provenance)
        except CorruptTableError as exc:
            raise CorruptTableError(f"the cached table {parquet_path}: {exc}") from None
        if observed != provenance["table_sha256"]:
            message = (
                f"the cached table {parquet_path} does not match the hash recorded when it "
                f"was built: expected table_sha256 {provenance['table_sha256']}, actual "
                f"{observed}; its bytes changed on disk"
            )
            raise CorruptTableError(message)
        if fingerprint_kind(provenance) == LEGACY_KIND:
            # Still served: for damage, the old hash is as good; only `verify` needs more.
            log.info(
                "%s: its table_sha256 is of the old kind (%s); `mudata verify` does not rely "
                "on it, and `mudata fetch --force` writes the current one (%s)",
                parquet_path,
                LEGACY_KIND,
                KIND,
            )
    return frame, provenance


def descriptors_agree(parquet_path: Path, provenance: dict[str, Any]) -> bool:
    """True when ``datapackage.json`` records the table's ``table_sha256`` and ``croissant.json`` exists.

    Reads the descriptor only (not the rows): what a cached fetch checks
    before it serves the table without repairing anything.
    """
    try:
        recorded = (
            json.loads(read_regular(parquet_path.parent / DESCRIPTOR, "datapackage"))
            .get("mudata", {})
            .get("table_sha256")
        )
    except (MudataError, OSError, ValueError, AttributeError):
        return False  # missing, not a regular file, or not ours
    croissant_path = parquet_path.parent / CROISSANT
    return recorded == provenance["table_sha256"] and (
        croissant_path.exists() or croissant_path.is_symlink()
    )


def read_stamped(parquet_path: Path, *, check: bool = True) -> tuple[dict[str, Any] | None, bool]:
    """The table's provenance (:func:`read_provenance`), and whether it is served as written.

    Served as written: with ``check``, the file is unchanged since its stamp
    (:func:`unchanged_since_written`) and ``datapackage.json`` records its
    ``table_sha256`` (:func:`descriptors_agree`). No row is read. Without
    ``check`` (a fetch that hashes the rows all the same), False.
    """
    provenance = read_provenance(parquet_path)
    if provenance is None or not check or "table_sha256" not in provenance:
        return provenance, False
    as_written = unchanged_since_written(parquet_path, provenance) and descriptors_agree(
        parquet_path, provenance
    )
    return provenance, as_written


def repair_descriptors(parquet_path: Path, frame: pd.DataFrame, provenance: dict[str, Any]) -> None:
    """Make the files beside a table agree with it, once its rows matched their hash.

    ``datapackage.json`` is rewritten from the Parquet file when it does not
    record the table's ``table_sha256`` (``croissant.json`` with it), and
    ``croissant.json`` is written when it is missing (a table built before
    mudata wrote one). The stamp is written afresh, so that the next fetch
    need not hash the rows again. For ``fetch`` and ``verify`` only: a read
    (:func:`load_table`) never writes.

    Parameters
    ----------
    parquet_path : Path
        The table.
    frame, provenance : DataFrame, dict
        Its rows and provenance, as :func:`load_table` returned them (rows checked).
    """
    write_stamp(parquet_path, provenance["table_sha256"])
    path = parquet_path.parent / DESCRIPTOR
    try:
        recorded = (
            json.loads(read_regular(path, "datapackage")).get("mudata", {}).get("table_sha256")
        )
    except (MudataError, OSError, ValueError, AttributeError):
        recorded = None  # missing, not a regular file, or not ours: rewritten below
    croissant_path = parquet_path.parent / CROISSANT
    if recorded == provenance["table_sha256"]:
        if not croissant_path.exists() and not croissant_path.is_symlink():
            _rewrite_croissant(parquet_path, frame, provenance)
        return
    log.warning(
        "%s does not describe %s (an interrupted write, or an edit); rewriting it from the table",
        path,
        parquet_path.name,
    )
    try:
        atomic_write(path, _descriptor_bytes(frame, parquet_path.name, provenance))
    except OSError as exc:
        log.warning("could not rewrite %s: %s", path, exc)
    _rewrite_croissant(parquet_path, frame, provenance)


def _rewrite_croissant(parquet_path: Path, frame: pd.DataFrame, provenance: dict[str, Any]) -> None:
    path = parquet_path.parent / CROISSANT
    try:
        atomic_write(path, _croissant_bytes(frame, parquet_path.name, parquet_path, provenance))
    except (OSError, MudataError) as exc:
        log.warning("could not write %s: %s", path, exc)


def repair_if_current(parquet_path: Path, frame: pd.DataFrame, provenance: dict[str, Any]) -> None:
    """:func:`repair_descriptors`, when the file still holds the table whose rows were checked.

    Another process may have written a new table since ``frame`` was read:
    only the rows just checked may be described. Call it holding the
    dataset's lock.
    """
    now = read_provenance(parquet_path)
    if now is not None and now.get("table_sha256") == provenance["table_sha256"]:
        repair_descriptors(parquet_path, frame, provenance)


def read_table(parquet_path: Path, *, verify: bool = True) -> pd.DataFrame:
    """Read a published table back (checked, see :func:`load_table`)."""
    return load_table(parquet_path, verify=verify)[0]


__all__ = [
    "CROISSANT",
    "DESCRIPTOR",
    "PROVENANCE_KEY",
    "datapackage",
    "descriptors_agree",
    "fingerprint_kind",
    "load_table",
    "read_parquet_file",
    "read_provenance",
    "read_stamped",
    "read_table",
    "read_unchecked",
    "recorded_fingerprint",
    "repair_descriptors",
    "repair_if_current",
    "stamp_path",
    "table_fingerprint",
    "unchanged_since_written",
    "write_stamp",
    "write_table",
]
