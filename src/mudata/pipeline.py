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
from typing import Any

import pandas as pd

import mudata
from mudata.errors import EmptyResultError
from mudata.paths import table_dir
from mudata.readers import FeatureTable, Sources, get_reader
from mudata.registry import DatasetEntry
from mudata.store import read_provenance, write_table
from mudata.userfilter import filter_users

log = logging.getLogger(__name__)

# Bump a recipe's version whenever its output for the same input changes;
# tables built with another version are rebuilt.
RECIPE_VERSIONS = {"precomputed": 1, "study-window": 1, "study-segment": 1}


def entry_fingerprint(entry: DatasetEntry) -> str:
    """SHA-256 of the entry's content (not of where it is stored)."""
    content = entry.to_dict()
    content.pop("source", None)
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()


def table_fingerprint(table: pd.DataFrame) -> str:
    """SHA-256 over the table's values, column names and dtypes, order included."""
    digest = hashlib.sha256()
    digest.update(json.dumps([(str(c), str(t)) for c, t in table.dtypes.items()]).encode("utf-8"))
    digest.update(pd.util.hash_pandas_object(table, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def parquet_path(entry: DatasetEntry, data_home: Path | str | None = None) -> Path:
    """Where the built table of ``entry`` lives."""
    return table_dir(entry.name, data_home) / f"{entry.name}.parquet"


def is_built(entry: DatasetEntry, data_home: Path | str | None = None) -> bool:
    """True when the table exists and was built from this entry with the current recipe.

    Registered local files the entry records no hash for are hashed again: the
    table is out of date when one of them changed since it was built.
    """
    path = parquet_path(entry, data_home)
    if not path.is_file():
        return False
    provenance = read_provenance(path)
    if not (
        provenance
        and provenance.get("entry_sha256") == entry_fingerprint(entry)
        and provenance.get("recipe", {}).get("version") == RECIPE_VERSIONS[entry.recipe.name]
    ):
        return False
    from mudata.download import unpinned_local_changed  # imports pooch's network stack

    return not unpinned_local_changed(entry, provenance.get("files", []))


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
        log.info("%s: %d rows with missing feature values dropped", entry.name, int(incomplete.sum()))
        labelled = labelled.loc[~incomplete].reset_index(drop=True)
    if labelled.empty:
        message = f"{entry.name}: no row of a kept class {entry.class_names} was read"
        raise EmptyResultError(message)
    from mudata.validate import validate_table  # pandera is slow to import; only needed to build

    kept, report = filter_users(labelled, entry.class_names, entry.min_per_class, dataset=entry.name)
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
) -> Path:
    """Build (or find) the published table of ``entry``; return its Parquet path.

    A table already built from the same entry with the same recipe version is
    returned at once, without reading anything else.
    """
    target = parquet_path(entry, data_home)
    if not force and is_built(entry, data_home):
        log.info("%s: already built at %s", entry.name, target)
        return target
    from mudata.download import fetch_sources  # imports pooch's network stack

    fetched = fetch_sources(
        entry,
        data_home=data_home,
        mirror=mirror,
        manual_dir=Path(manual_dir) if manual_dir is not None else None,
        progress=progress,
        allow_unverified=allow_unverified,
    )
    sources = Sources([f.root for f in fetched])
    try:
        table, drops = build_table(entry, sources)
    finally:
        sources.close()
    counts = table.groupby("label", sort=False).size()
    provenance = {
        "dataset": entry.name,
        "title": entry.title,
        "dataset_version": entry.version,
        "homepage": entry.homepage,
        "licence": entry.licence,
        "citation": entry.citation,
        "entry_sha256": entry_fingerprint(entry),
        "reader": entry.reader,
        "recipe": {**entry.recipe.as_dict(), "version": RECIPE_VERSIONS[entry.recipe.name]},
        "files": [
            {
                "name": f.name,
                "url": spec.url,
                "path": str(spec.path) if spec.path else None,
                "sha256": f.sha256,
                "verified": f.verified,
                "members": f.members,
            }
            for f, spec in zip(fetched, entry.files, strict=True)
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
    path = write_table(table, target.parent, entry.name, provenance)
    log.info("%s: %d rows, %d users written to %s", entry.name, len(table), provenance["counts"]["users"], path)
    return path
