"""Check a cached table against a rebuild from its pinned raw files (``mudata verify``).

A cached table carries its own content hash (``table_sha256``), which catches
damage but not a forgery: whoever rewrites the rows can rewrite the hash
beside them. This module builds the table again, in memory, from the raw files
the registry entry pins (each hashed again as it is read), and compares the
rebuilt rows with the cached ones. Builds are deterministic, so the comparison
is exact: the content hashes are equal or the table differs, and then the
first differing row is named.

The rows are compared by :func:`mudata.publish.store.table_fingerprint` (SHA-256
over a canonical encoding, :mod:`mudata.publish.table_hash`), whatever kind of hash
the cached table records; then the fields of its provenance that
:func:`mudata.load` serves (:func:`mudata.building.provenance.served_provenance`).

Three outcomes (see :class:`Verification`): ``verified`` (exit code 0 in the
CLI), ``differs`` (1) and ``unverifiable`` (2: no table, raw files missing or
unpinned, an entry changed since the build, a table hashed with the old kind
of ``table_sha256``, or a table without a build record from this data home).
Neither the cached table nor the raw files are changed, and nothing is
downloaded. A table that verifies has the files beside it repaired
(:func:`mudata.publish.store.repair_descriptors`: ``datapackage.json`` and
``croissant.json`` when they disagree with it, and its stamp), as ``mudata
fetch`` does once it has hashed the rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from mudata.building.cache import parquet_path
from mudata.building.labelled import build_table
from mudata.building.options import MIN_USERS
from mudata.building.provenance import (
    RECIPE_VERSIONS,
    entry_fingerprint,
    served_provenance,
)
from mudata.errors import (
    CorruptTableError,
    MissingFileError,
    MudataError,
    UnverifiedDataError,
    ValidationError,
    excerpt,
)
from mudata.publish.store import (
    fingerprint_kind,
    read_unchecked,
    recorded_fingerprint,
    repair_if_current,
    table_fingerprint,
)
from mudata.publish.table_hash import KIND, LEGACY_KIND
from mudata.readers import Sources
from mudata.records.entry import DatasetEntry
from mudata.sources.download import fetch_sources
from mudata.sources.paths import dataset_lock, home_identity

Status = Literal["verified", "differs", "unverifiable"]

#: Exit code of ``mudata verify`` for each outcome.
EXIT_CODES: dict[str, int] = {"verified": 0, "differs": 1, "unverifiable": 2}


@dataclass(frozen=True)
class Verification:
    """What :func:`verify_table` found.

    Attributes
    ----------
    dataset : str
        The registry name.
    status : {"verified", "differs", "unverifiable"}
        ``verified``: the cached rows equal a rebuild from the pinned raw files
        and the table was built in this data home; ``differs``: they do not
        (``first_difference`` says where); ``unverifiable``: no rebuild could
        be compared, or the table has no build record from this data home.
    message : str
        One paragraph for a person: the outcome and why.
    path : Path
        The cached table.
    cached_sha256, rebuilt_sha256 : str or None
        Content hashes (:func:`mudata.publish.store.table_fingerprint`) of the cached
        rows as read now, and of the rebuilt rows.
    first_difference : dict, optional
        For ``differs``: what :func:`first_difference` returns (for tables of
        the same shape, ``row`` (0-based index), ``userid`` and ``label``
        (cached and rebuilt), ``columns`` (every column that differs in that
        row)); or, when the rows are equal but a field of the provenance that
        :func:`mudata.load` serves is not, ``{"kind": "provenance", "fields":
        [...]}`` (see :func:`provenance_differences`).
    """

    dataset: str
    status: Status
    message: str
    path: Path
    cached_sha256: str | None = None
    rebuilt_sha256: str | None = None
    first_difference: dict[str, Any] | None = field(default=None)

    @property
    def exit_code(self) -> int:
        """0 verified, 1 differs, 2 unverifiable."""
        return EXIT_CODES[self.status]


def verify_table(
    entry: DatasetEntry,
    *,
    data_home: Path | str | None = None,
    manual_dir: Path | str | None = None,
    max_expansion: float | None = None,
) -> Verification:
    """Rebuild ``entry``'s table from its pinned raw files and compare it with the cached one.

    Parameters
    ----------
    entry : DatasetEntry
        The registry entry: its hashes are what the raw files are checked against.
    data_home : path-like, optional
        The data directory holding the cached table and the downloaded raw files.
    manual_dir : path-like, optional
        Where the raw files are, for a table built with ``--manual-dir``;
        default: the folder its build record names.
    max_expansion : float, optional
        Expansion cap of archives, as for :func:`mudata.fetch`.

    Returns
    -------
    Verification
    """
    path = parquet_path(entry, data_home)
    with dataset_lock(entry.name, data_home):
        if not path.is_file():
            message = (
                f"{entry.name}: no cached table at {path}; nothing to verify "
                f"(`mudata fetch {entry.name}` builds it)"
            )
            return Verification(entry.name, "unverifiable", message, path)
        try:
            cached, provenance = read_unchecked(path)
        except CorruptTableError as exc:
            return Verification(entry.name, "differs", f"{entry.name}: {exc}", path)
        try:
            cached_sha = table_fingerprint(cached)
        except ValidationError as exc:
            message = f"{entry.name}: the cached table {path} is not a table mudata writes: {exc}"
            return Verification(entry.name, "differs", message, path)
        build = (provenance or {}).get("build")
        build = build if isinstance(build, dict) else {}
        stale = _stale(entry, provenance)
        if stale:
            message = f"{entry.name}: {path} {stale}; run `mudata fetch {entry.name} --force`"
            return Verification(entry.name, "unverifiable", message, path, cached_sha)
        try:
            rebuilt, drops = _rebuild(
                entry, data_home, manual_dir or build.get("manual_dir"), build, max_expansion
            )
        except UnverifiedDataError as exc:
            # Said in verify's terms: the fetch's remedy (accept unverified
            # bytes) is what verify exists to refuse.
            message = (
                f"{entry.name}: {exc.subject} has no sha256 in the registry, and the table "
                f"is checked against pinned raw files only: the cached table cannot be checked"
            )
            return Verification(entry.name, "unverifiable", message, path, cached_sha)
        except MudataError as exc:
            message = (
                f"{entry.name}: cannot rebuild the table from pinned raw files, so the cached "
                f"table cannot be checked: {exc}"
            )
            return Verification(entry.name, "unverifiable", message, path, cached_sha)
    served = served_provenance(entry, rebuilt, drops)
    result = _compare(entry, path, (cached, provenance), (rebuilt, served), build, data_home)
    if result.status == "verified" and provenance is not None:
        with dataset_lock(entry.name, data_home):
            # Only the table just compared may be described: not one written since.
            repair_if_current(path, cached, provenance)
    return result


def _stale(entry: DatasetEntry, provenance: dict[str, Any] | None) -> str | None:
    """Why the cached table is not the build of this entry, or None."""
    if provenance is None:
        return "has no readable provenance"
    if provenance.get("entry_sha256") != entry_fingerprint(entry):
        return "was built from another version of the registry entry"
    recipe = provenance.get("recipe")
    if not isinstance(recipe, dict) or recipe.get("version") != RECIPE_VERSIONS[entry.recipe.name]:
        return "was built with another version of the recipe"
    return None


def _rebuild(
    entry: DatasetEntry,
    data_home: Path | str | None,
    manual_dir: Path | str | None,
    build: dict[str, Any],
    max_expansion: float | None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The table built again from the raw files, and its drop counts (as :func:`build_table`).

    Pinned bytes only: no download, nothing written.
    """
    if manual_dir is not None and not Path(manual_dir).is_dir():
        message = f"the raw files were taken from {manual_dir}, which is no longer a folder"
        raise MissingFileError(message)
    fetched = fetch_sources(
        entry,
        data_home=data_home,
        manual_dir=manual_dir,
        progress=False,
        allow_unverified=False,
        max_expansion=max_expansion,
        download=False,
    )
    sources = Sources(
        [f.root for f in fetched], [f.pins for f in fetched], max_expansion=max_expansion
    )
    min_users = build.get("min_users", MIN_USERS)
    try:
        return build_table(
            entry, sources, min_users=min_users if isinstance(min_users, int) else MIN_USERS
        )
    finally:
        sources.close()


def _compare(
    entry: DatasetEntry,
    path: Path,
    cached: tuple[pd.DataFrame, dict[str, Any] | None],
    rebuilt: tuple[pd.DataFrame, dict[str, Any]],
    build: dict[str, Any],
    data_home: Path | str | None,
) -> Verification:
    """The outcome, from the rows and provenance of the cached table and of the rebuild.

    In this order: the rows (by :func:`table_fingerprint`, whatever kind of
    hash the cached table records), the fields of the provenance that
    :func:`mudata.load` serves, the recorded ``table_sha256`` and its kind,
    the build record.
    """
    (cached_rows, provenance), (rebuilt_rows, served) = cached, rebuilt
    provenance = provenance or {}
    cached_sha, rebuilt_sha = table_fingerprint(cached_rows), table_fingerprint(rebuilt_rows)
    hashes: dict[str, Any] = {"cached_sha256": cached_sha, "rebuilt_sha256": rebuilt_sha}
    again = f"Rebuild it with `mudata fetch {entry.name} --force`."
    if cached_sha != rebuilt_sha:
        where = first_difference(cached_rows, rebuilt_rows)
        message = (
            f"{entry.name}: the cached table {path} DIFFERS from a rebuild from its pinned "
            f"raw files (content sha256 {cached_sha}, rebuilt {rebuilt_sha}): "
            f"{describe_difference(where)}. {again}"
        )
        return Verification(entry.name, "differs", message, path, **hashes, first_difference=where)
    kind = fingerprint_kind(provenance)
    # A table of the old kind was written by an older mudata: a field it lacks
    # may be younger than it (it is reported unverifiable below all the same).
    fields = provenance_differences(provenance, served, missing_ok=kind == LEGACY_KIND)
    if fields:
        where = {"kind": "provenance", "fields": fields}
        message = (
            f"{entry.name}: the rows of {path} equal a rebuild, but {describe_difference(where)}. "
            f"{again}"
        )
        return Verification(entry.name, "differs", message, path, **hashes, first_difference=where)
    recorded = provenance.get("table_sha256")
    try:
        own = recorded_fingerprint(cached_rows, provenance)
    except CorruptTableError as exc:
        own = f"none ({exc})"
    if recorded != own:
        message = (
            f"{entry.name}: the rows of {path} equal a rebuild, but its provenance records "
            f"table_sha256 {excerpt(recorded, 80)} (kind {excerpt(kind, 60)}), not their hash "
            f"of that kind, {excerpt(own, 200)}; the provenance differs. {again}"
        )
        return Verification(entry.name, "differs", message, path, **hashes)
    if kind == LEGACY_KIND:
        message = (
            f"{entry.name}: the rows of {path} equal a rebuild from the pinned raw files, but "
            f"its table_sha256 is of the old kind ({LEGACY_KIND}: pandas' 64-bit row hashes, "
            f"which a forger can match), so the table is not verified. `mudata fetch "
            f"{entry.name} --force` rebuilds it with the current hash ({KIND})."
        )
        return Verification(entry.name, "unverifiable", message, path, **hashes)
    here = home_identity(data_home)
    if not build.get("home_id") or build.get("home_id") != here:
        message = (
            f"{entry.name}: the rows of {path} equal a rebuild from the pinned raw files, "
            f"but its provenance has no build record from this data home (home id "
            f"{excerpt(build.get('home_id'), 40)}, this home {here}): it was copied in or "
            f"built by an older mudata, so the rest of its provenance is unchecked. "
            f"`mudata fetch {entry.name} --force` builds it here."
        )
        return Verification(entry.name, "unverifiable", message, path, **hashes)
    message = (
        f"{entry.name}: verified: the cached table {path} equals a rebuild from its pinned "
        f"raw files, hashed again now (content sha256 {cached_sha}, {len(cached_rows)} rows), "
        f"and so do the classes, licence, citation and counts it serves"
    )
    return Verification(entry.name, "verified", message, path, **hashes)


def provenance_differences(
    provenance: dict[str, Any], served: dict[str, Any], *, missing_ok: bool = False
) -> list[dict[str, Any]]:
    """The served fields (:func:`mudata.building.provenance.served_provenance`) a provenance does not match.

    Parameters
    ----------
    provenance : dict
        The cached table's.
    served : dict
        The rebuild's.
    missing_ok : bool, default False
        A field the provenance lacks is no difference (a table written by an
        older mudata, before the field was recorded).

    Returns
    -------
    list of dict
        One ``{"field", "cached", "rebuilt"}`` per differing field, in the
        order of ``served``; a missing field has ``"missing": True`` and
        ``cached`` None.
    """
    # As the provenance is stored: JSON (tuples become lists, keys text).
    expected = json.loads(json.dumps(served))
    found = []
    for name, value in expected.items():
        if name not in provenance:
            if not missing_ok:
                found.append({"field": name, "cached": None, "rebuilt": value, "missing": True})
        elif provenance[name] != value:
            found.append({"field": name, "cached": provenance[name], "rebuilt": value})
    return found


def first_difference(cached: pd.DataFrame, rebuilt: pd.DataFrame) -> dict[str, Any]:
    """Where two tables first differ: shape, columns and dtypes, else the first row.

    Returns
    -------
    dict
        ``kind`` ("columns", "dtypes", "rows" or "values"); for "values",
        ``row`` (0-based), ``userid`` and ``label`` as ``{"cached": ...,
        "rebuilt": ...}``, and ``columns``, the columns that differ in that row.
    """
    if list(cached.columns) != list(rebuilt.columns):
        return {
            "kind": "columns",
            "cached": [str(c) for c in cached.columns],
            "rebuilt": [str(c) for c in rebuilt.columns],
        }
    dtypes = [str(c) for c in cached.columns if str(cached[c].dtype) != str(rebuilt[c].dtype)]
    n = min(len(cached), len(rebuilt))
    unequal = np.zeros(n, dtype=bool)
    per_column = {}
    for column in cached.columns:
        a = cached[column].iloc[:n].reset_index(drop=True)
        b = rebuilt[column].iloc[:n].reset_index(drop=True)
        differs = ~((a == b) | (a.isna() & b.isna())).to_numpy(dtype=bool)
        if a.dtype.kind == "f" and b.dtype.kind == "f":
            # -0.0 == 0.0, but the table hash tells them apart: so does this.
            differs |= np.signbit(a.to_numpy()) != np.signbit(b.to_numpy())
            differs &= ~(a.isna() & b.isna()).to_numpy(dtype=bool)
        per_column[column] = differs
        unequal |= differs
    if not unequal.any():
        if len(cached) != len(rebuilt):
            return {"kind": "rows", "cached": len(cached), "rebuilt": len(rebuilt)}
        return {"kind": "dtypes", "columns": dtypes}
    row = int(np.flatnonzero(unequal)[0])
    return {
        "kind": "values",
        "row": row,
        "userid": {
            "cached": str(cached["userid"].iloc[row]),
            "rebuilt": str(rebuilt["userid"].iloc[row]),
        },
        "label": {
            "cached": str(cached["label"].iloc[row]),
            "rebuilt": str(rebuilt["label"].iloc[row]),
        },
        "columns": [str(c) for c, d in per_column.items() if d[row]],
    }


def describe_difference(where: dict[str, Any]) -> str:
    """One clause for a person, from :func:`first_difference`'s record."""
    kind = where["kind"]
    if kind == "columns":
        return f"the columns differ (cached {excerpt(where['cached'])}, rebuilt {excerpt(where['rebuilt'])})"
    if kind == "rows":
        return f"the cached table has {where['cached']} rows, the rebuild {where['rebuilt']} (the shared rows agree)"
    if kind == "dtypes":
        return f"the column types differ: {', '.join(where['columns'])}"
    if kind == "provenance":
        return "its provenance differs in " + "; ".join(
            f"field '{d['field']}' (cached "
            f"{'missing' if d.get('missing') else excerpt(d['cached'], 80)}, rebuilt "
            f"{excerpt(d['rebuilt'], 80)})"
            for d in where["fields"]
        )
    user, label = where["userid"], where["label"]
    who = f"user {excerpt(user['cached'], 60)}"
    if user["cached"] != user["rebuilt"]:
        who += f" (rebuilt: {excerpt(user['rebuilt'], 60)})"
    what = f"label {excerpt(label['cached'], 60)}"
    if label["cached"] != label["rebuilt"]:
        what += f", rebuilt {excerpt(label['rebuilt'], 60)}"
    columns = where["columns"]
    shown = ", ".join(columns[:5]) + (f" and {len(columns) - 5} more" if len(columns) > 5 else "")
    return f"first differing row {where['row']} ({who}, {what}); differing column(s): {shown}"


__all__ = [
    "EXIT_CODES",
    "Verification",
    "describe_difference",
    "first_difference",
    "provenance_differences",
    "verify_table",
]
