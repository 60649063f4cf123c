"""A built table's provenance record: what was built, from which files, by which code, how.

The record a table carries in its Parquet footer: the fields that follow
from its entry and rows (:func:`served_provenance`, what :func:`mudata.load`
serves), the entry's fingerprint and recipe version (whether a cached table is
still this entry's), each raw file with its hashes and whether every byte read
from it was pinned, and the build record ``mudata verify`` needs to build it
again.
"""

from __future__ import annotations

import hashlib
import json
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mudata.publish.store import (
    table_fingerprint,
)
from mudata.publish.table_hash import KIND as TABLE_SHA256_KIND
from mudata.readers import (
    Sources,
)
from mudata.records.entry import DatasetEntry
from mudata.sources.paths import data_home as resolve_home
from mudata.sources.paths import (
    home_identity,
)
from mudata.version import __version__

if TYPE_CHECKING:
    from mudata.sources.pins import FetchedFile


# Bump a recipe's version whenever its output for the same input changes;
# tables built with another version are rebuilt.
RECIPE_VERSIONS = {"precomputed": 2, "study-window": 2, "study-segment": 2}
# Version 2: user ids are text; windows never cross a recording.


def entry_fingerprint(entry: DatasetEntry) -> str:
    """SHA-256 of the entry's content (not of where it is stored)."""
    content = entry.to_dict()
    content.pop("source", None)
    # What the study published of the users changes no byte of the table: a
    # table built before the entry said it is still this entry's.
    content.pop("users", None)
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()


def _file_record(fetched: FetchedFile, spec: Any, sources: Sources) -> dict[str, Any]:
    """Provenance of one file: verified only when every byte read from it was pinned."""
    # Here, not at the top: mudata.sources.download imports pooch's network stack.
    from mudata.sources.registered import listing_sha256

    reads = [r for (root, _), r in sources.reads.items() if root == fetched.root]
    unpinned = {r.name: r.sha256 for r in reads if not r.verified}
    record = {
        "name": fetched.name,
        "url": spec.url,
        "path": str(spec.path) if spec.path else None,
        "sha256": fetched.sha256,
        # What the build saw, and all a loaded table may claim: `mudata verify`
        # rebuilds from the raw files to check the table as it stands now.
        "verified_at_build": fetched.verified and not unpinned,
        "origin": fetched.origin,
        # "first-use": the hashes were taken from the user's files (mudata init);
        # they prove the files did not change since, not that they are the published ones.
        "hashes": spec.hashes,
        "members": fetched.members,
    }
    if spec.glob is not None:
        record["glob"] = spec.glob
    if fetched.extracted:
        # Said in so many words: an archive hash in the entry proves nothing of
        # files someone extracted from it, so none of them was checked.
        record["built_from"] = "unpinned extracted members"
    if unpinned:
        record["unpinned"] = unpinned
        record["listing_sha256"] = listing_sha256(
            n for n, (i, _) in sources.index.items() if sources.roots[i] == fetched.root
        )
    return record


def build_record(
    data_home: Path | str | None, manual_dir: Path | str | None, min_users: int
) -> dict[str, Any]:
    """Where and how a table was built: what ``mudata verify`` needs to build it again.

    ``home_id`` is the data home's identity (:func:`mudata.sources.paths.home_identity`):
    a table whose record names another home (copied in, or built by a version
    that kept no record) verifies as unverifiable, whatever its rows.
    """
    home = resolve_home(data_home)
    return {
        "home_id": home_identity(data_home, create=True),
        "data_home": str(home.resolve()),
        "manual_dir": str(Path(manual_dir).expanduser().resolve()) if manual_dir else None,
        "min_users": int(min_users),
    }


def served_provenance(
    entry: DatasetEntry, table: pd.DataFrame, drops: dict[str, Any]
) -> dict[str, Any]:
    """The fields of a table's provenance that follow from its entry and its rows.

    They are what :func:`mudata.load` serves besides the rows (``classes`` as
    ``target_names``; title, counts, licence and citation in ``DESCR``), so
    ``mudata verify`` compares each of them with a rebuild's.
    """
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
        "reader": entry.reader,
        "recipe": {**entry.recipe.as_dict(), "version": RECIPE_VERSIONS[entry.recipe.name]},
        "classes": entry.class_names,
        "counts": {
            "rows": len(table),
            "users": int(table["userid"].nunique()),
            "features": int(table.shape[1] - 2),
            "per_class": {c: int(counts.get(c, 0)) for c in entry.class_names},
            **drops,
        },
    }


def table_provenance(
    entry: DatasetEntry,
    fetched: list[FetchedFile],
    sources: Sources,
    table: pd.DataFrame,
    drops: dict[str, Any],
) -> dict[str, Any]:
    return {
        **served_provenance(entry, table, drops),
        "entry_sha256": entry_fingerprint(entry),
        "files": [
            _file_record(f, spec, sources) for f, spec in zip(fetched, entry.files, strict=True)
        ],
        "table_sha256": table_fingerprint(table),
        "table_sha256_kind": TABLE_SHA256_KIND,
        "mudata_version": __version__,
        "pandas_version": pd.__version__,
        "python_version": platform.python_version(),
        "built": datetime.now(UTC).isoformat(timespec="seconds"),
    }


__all__ = [
    "RECIPE_VERSIONS",
    "build_record",
    "entry_fingerprint",
    "served_provenance",
    "table_provenance",
]
