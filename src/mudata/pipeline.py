"""The pipeline: download, read, featurize, label, filter, validate, store.

Data flows forward through one stage per module; this module only wires them
and records what each did in the table's provenance.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

import mudata
from mudata.errors import (
    ChecksumError,
    CorruptTableError,
    EmptyResultError,
    LimitError,
    ParseError,
)
from mudata.paths import dataset_lock, sweep_stale, table_dir
from mudata.readers import FeatureTable, Sources, get_reader
from mudata.registry import DatasetEntry
from mudata.store import load_table, read_provenance, table_fingerprint, write_table
from mudata.userfilter import filter_users

if TYPE_CHECKING:
    from mudata.download import FetchedFile

log = logging.getLogger(__name__)

# Bump a recipe's version whenever its output for the same input changes;
# tables built with another version are rebuilt.
RECIPE_VERSIONS = {"precomputed": 1, "study-window": 1, "study-segment": 1}


def entry_fingerprint(entry: DatasetEntry) -> str:
    """SHA-256 of the entry's content (not of where it is stored)."""
    content = entry.to_dict()
    content.pop("source", None)
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()


def parquet_path(entry: DatasetEntry, data_home: Path | str | None = None) -> Path:
    """Where the built table of ``entry`` lives."""
    return table_dir(entry.name, data_home) / f"{entry.name}.parquet"


def is_built(entry: DatasetEntry, data_home: Path | str | None = None) -> bool:
    """True when the table exists and was built from this entry with the current recipe.

    Registered local files the entry records no hash for are hashed again: the
    table is out of date when one of them changed since it was built. The rows
    themselves are checked by :func:`current_table`, not here.
    """
    path = parquet_path(entry, data_home)
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
    from mudata.download import unpinned_local_changed  # imports pooch's network stack

    return not unpinned_local_changed(entry, provenance.get("files", []))


def current_table(entry: DatasetEntry, data_home: Path | str | None = None) -> pd.DataFrame | None:
    """The built table, checked against its ``table_sha256``; None when it must be (re)built.

    A table whose rows no longer match the hash recorded at build time is not
    served: a warning says so and None is returned, so that the caller rebuilds
    it from the verified raw files.
    """
    if not is_built(entry, data_home):
        return None
    path = parquet_path(entry, data_home)
    try:
        frame, provenance = load_table(path)
    except CorruptTableError as exc:
        log.warning("%s; rebuilding it from the verified raw files", exc)
        return None
    frame.attrs["provenance"] = provenance
    return frame


def _label_rows(raw: pd.DataFrame, entry: DatasetEntry) -> tuple[pd.DataFrame, dict[str, int]]:
    """Map raw class codes to names; drop (and count) rows of classes not kept."""
    codes = raw["label"].astype(str)
    names = codes.map(entry.class_map)
    dropped = codes[names.isna()].value_counts().to_dict()
    for code, n in dropped.items():
        log.info("%s: %d rows of class code %r dropped (not a kept class)", entry.name, n, code)
    table = raw.loc[names.notna()].copy()
    table["label"] = names[names.notna()].astype(str)
    return table.reset_index(drop=True), {str(k): int(v) for k, v in dropped.items()}


def build_table(entry: DatasetEntry, sources: Sources) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read and preprocess a release into the validated feature table.

    Returns
    -------
    (DataFrame, dict)
        The table and a record of the drops made on the way.
    """
    raw = get_reader(entry.reader)(entry, sources)
    if isinstance(raw, FeatureTable):
        features = raw.frame
        if entry.recipe.name != "precomputed":
            message = f"{entry.name}: reader '{entry.reader}' gives features, but the recipe is '{entry.recipe.name}'"
            raise EmptyResultError(message)
    else:
        from mudata.features import featurize  # numpy-heavy; only for signal readers

        features = featurize(raw, entry)
    windows_dropped = {str(k): int(v) for k, v in features.attrs.get("dropped", {}).items()}
    n_read = len(features)
    labelled, dropped_codes = _label_rows(features, entry)
    labelled["userid"] = labelled["userid"].astype("int64")
    feature_columns = [c for c in labelled.columns if c not in ("userid", "label")]
    labelled[feature_columns] = labelled[feature_columns].astype("float64")
    incomplete = labelled[feature_columns].isna().any(axis=1)
    if incomplete.any():
        # Readers of precomputed tables may carry missing values; the study keeps none.
        log.info(
            "%s: %d rows with missing feature values dropped", entry.name, int(incomplete.sum())
        )
        labelled = labelled.loc[~incomplete].reset_index(drop=True)
    if labelled.empty:
        message = f"{entry.name}: no row of a kept class {entry.class_names} was read"
        raise EmptyResultError(message)
    from mudata.validate import validate_table  # pandera is slow to import; only needed to build

    kept, report = filter_users(
        labelled, entry.class_names, entry.min_per_class, dataset=entry.name
    )
    validated = validate_table(kept, entry.class_names, entry.min_per_class, dataset=entry.name)
    drops = {
        "rows_read": n_read,
        "windows_dropped": windows_dropped,
        "rows_dropped_by_class_code": dropped_codes,
        "rows_dropped_missing_values": int(incomplete.sum()),
        "users_dropped": {str(k): v for k, v in report.dropped.items()},
    }
    return validated, drops


def build(
    entry: DatasetEntry,
    *,
    data_home: Path | str | None = None,
    mirror: str | None = None,
    manual_dir: Path | str | None = None,
    allow_unverified: bool = False,
    progress: bool | None = None,
    force: bool = False,
    download: bool = True,
    max_expansion: float | None = None,
) -> Path:
    """Build (or find) the published table of ``entry``; return its Parquet path.

    A table already built from the same entry with the same recipe version,
    whose rows still match their recorded hash, is returned without reading
    anything else. See :func:`build_frame` for the parameters.
    """
    path, _ = build_frame(
        entry,
        data_home=data_home,
        mirror=mirror,
        manual_dir=manual_dir,
        allow_unverified=allow_unverified,
        progress=progress,
        force=force,
        download=download,
        max_expansion=max_expansion,
    )
    return path


def build_frame(
    entry: DatasetEntry,
    *,
    data_home: Path | str | None = None,
    mirror: str | None = None,
    manual_dir: Path | str | None = None,
    allow_unverified: bool = False,
    progress: bool | None = None,
    force: bool = False,
    download: bool = True,
    max_expansion: float | None = None,
) -> tuple[Path, pd.DataFrame]:
    """Build (or find) the table of ``entry``; return its path and its checked rows.

    Parameters
    ----------
    download : bool
        When False, a raw file missing from the cache is a
        :class:`~mudata.errors.MissingFileError` instead of a download.
    max_expansion : float, optional
        Expansion cap of archives (see :func:`mudata.archive.max_expansion`).
    Others
        As for :func:`mudata.fetch`.
    """
    target = parquet_path(entry, data_home)
    if not force and (frame := current_table(entry, data_home)) is not None:
        log.info("%s: already built at %s", entry.name, target)
        return target, frame
    from mudata.download import fetch_sources  # imports pooch's network stack

    with dataset_lock(entry.name, data_home):
        if not force and (frame := current_table(entry, data_home)) is not None:
            return target, frame  # built by another process while this one waited
        sweep_stale(target.parent, f".{target.name}.*.part")
        sweep_stale(target.parent, ".datapackage.json.*.part")
        fetched = fetch_sources(
            entry,
            data_home=data_home,
            mirror=mirror,
            manual_dir=Path(manual_dir) if manual_dir is not None else None,
            progress=progress,
            allow_unverified=allow_unverified,
            download=download,
            max_expansion=max_expansion,
        )
        sources = Sources(
            [f.root for f in fetched], [f.pins for f in fetched], max_expansion=max_expansion
        )
        try:
            table, drops = build_table(entry, sources)
        except (ParseError, LimitError, ChecksumError) as exc:
            _discard_unhashed_cache(entry, fetched, exc)
            raise
        finally:
            sources.close()
        provenance = _provenance(entry, fetched, sources, table, drops)
        path = write_table(table, target.parent, entry.name, provenance)
    log.info(
        "%s: %d rows, %d users written to %s",
        entry.name,
        len(table),
        provenance["counts"]["users"],
        path,
    )
    frame, record = load_table(path)
    frame.attrs["provenance"] = record
    return path, frame


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


def _file_record(fetched: FetchedFile, spec: Any, sources: Sources) -> dict[str, Any]:
    """Provenance of one file: verified only when every byte read from it was pinned."""
    from mudata.download import listing_sha256

    reads = [r for (root, _), r in sources.reads.items() if root == fetched.root]
    unpinned = {r.name: r.sha256 for r in reads if not r.verified}
    record = {
        "name": fetched.name,
        "url": spec.url,
        "path": str(spec.path) if spec.path else None,
        "sha256": fetched.sha256,
        "verified": fetched.verified and not unpinned,
        "members": fetched.members,
    }
    if unpinned:
        record["unpinned"] = unpinned
        record["listing_sha256"] = listing_sha256(
            n for n, (i, _) in sources.index.items() if sources.roots[i] == fetched.root
        )
    return record


def _provenance(
    entry: DatasetEntry,
    fetched: list[FetchedFile],
    sources: Sources,
    table: pd.DataFrame,
    drops: dict[str, Any],
) -> dict[str, Any]:
    counts = table.groupby("label", sort=False).size()
    return {
        "dataset": entry.name,
        "title": entry.title,
        "dataset_version": entry.version,
        "homepage": entry.homepage,
        "licence": entry.licence,
        "licence_title": entry.licence_title,
        "licence_path": entry.licence_path,
        "citation": entry.citation,
        "entry_sha256": entry_fingerprint(entry),
        "reader": entry.reader,
        "recipe": {**entry.recipe.as_dict(), "version": RECIPE_VERSIONS[entry.recipe.name]},
        "files": [
            _file_record(f, spec, sources) for f, spec in zip(fetched, entry.files, strict=True)
        ],
        "classes": entry.class_names,
        "counts": {
            "rows": len(table),
            "users": int(table["userid"].nunique()),
            "features": int(table.shape[1] - 2),
            "per_class": {c: int(counts.get(c, 0)) for c in entry.class_names},
            **drops,
        },
        "table_sha256": table_fingerprint(table),
        "mudata_version": mudata.__version__,
        "pandas_version": pd.__version__,
        "python_version": platform.python_version(),
        "built": datetime.now(UTC).isoformat(timespec="seconds"),
    }
