"""The pipeline: download, read, featurize, label, filter, validate, store.

Data flows forward through one stage per module; this module only wires them
and records what each did in the table's provenance.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mudata.classes import log_dropped, log_folded, match_classes, user_names
from mudata.entry import DatasetEntry
from mudata.errors import (
    ChecksumError,
    CorruptTableError,
    EmptyResultError,
    LimitError,
    ParseError,
)
from mudata.errors import (
    MudataUsageError as UsageError,
)
from mudata.paths import data_home as resolve_home
from mudata.paths import dataset_lock, home_identity, sweep_stale, sweep_when_idle, table_dir
from mudata.readers import (
    FeatureTable,
    SignalStream,
    SignalTable,
    Sources,
    get_reader,
    get_stream_reader,
)
from mudata.readers.stream import coalesced
from mudata.store import (
    descriptors_agree,
    load_table,
    read_provenance,
    repair_descriptors,
    stamp_path,
    table_fingerprint,
    unchanged_since_written,
    write_table,
)
from mudata.table_hash import KIND as TABLE_SHA256_KIND
from mudata.userfilter import filter_users
from mudata.version import __version__

if TYPE_CHECKING:
    from mudata.download import FetchedFile

log = logging.getLogger(__name__)


def _temporary_files(target: Path) -> tuple[str, ...]:
    """Name patterns of the temporary files a build writes beside the table ``target``."""
    return (
        f".{target.name}.*.part",
        ".datapackage.json.*.part",
        ".croissant.json.*.part",
        f".{stamp_path(target).name}.*.part",
    )


def _spool_dir(entry: DatasetEntry, data_home: Path | str | None) -> Path | None:
    """Where a build spools members: ``<data home>/<name>/.spool``, emptied first.

    On the data home's disk, not ``$TMPDIR`` (often a small memory-backed
    /tmp), since a release may be larger than memory. Called under the
    dataset's lock, so whatever is there was left by a killed run. None (the
    system's temporary folder) when the data home cannot hold it: read-only,
    or the name taken by a link or a file.
    """
    folder = table_dir(entry.name, data_home) / SPOOL_FOLDER
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


# Bump a recipe's version whenever its output for the same input changes;
# tables built with another version are rebuilt.
RECIPE_VERSIONS = {"precomputed": 2, "study-window": 2, "study-segment": 2}
# Version 2: user ids are text; windows never cross a recording.

#: Fewest users a table may hold: a multi-user evaluation needs two at least.
MIN_USERS = 2


def entry_fingerprint(entry: DatasetEntry) -> str:
    """SHA-256 of the entry's content (not of where it is stored)."""
    content = entry.to_dict()
    content.pop("source", None)
    # What the study published of the users changes no byte of the table: a
    # table built before the entry said it is still this entry's.
    content.pop("users", None)
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
    # Here, not at the top: imports pooch's network stack.
    from mudata.download import unpinned_local_changed

    return not unpinned_local_changed(entry, provenance.get("files", []))


def current_table(entry: DatasetEntry, data_home: Path | str | None = None) -> pd.DataFrame | None:
    """The built table, checked against its ``table_sha256``; None when it must be (re)built.

    A table whose rows no longer match the hash recorded at build time is not
    served: a warning says so and None is returned, so that the caller rebuilds
    it from the verified raw files. A read: nothing is written.
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


def current_path(
    entry: DatasetEntry, data_home: Path | str | None = None, *, verify: bool = False
) -> dict[str, Any] | None:
    """The provenance of the built table, for a fetch; None when it must be (re)built.

    The fast path of ``mudata fetch``: when the file's size and times are
    those its stamp recorded with the hash its footer holds
    (:func:`mudata.store.unchanged_since_written`) and ``datapackage.json``
    agrees, no row is read. Otherwise, or with ``verify``, the rows are hashed
    as :func:`current_table` does; a table that passes has its descriptors and
    its stamp repaired (:func:`mudata.store.repair_descriptors`), one that
    fails is not served (a warning, and None).
    """
    path = parquet_path(entry, data_home)
    if not path.is_file():
        return None
    provenance = read_provenance(path)
    if not _up_to_date(entry, provenance):
        return None
    assert provenance is not None  # _up_to_date refuses None
    if (
        not verify
        and unchanged_since_written(path, provenance)
        and descriptors_agree(path, provenance)
    ):
        return provenance
    try:
        frame, provenance = load_table(path)
    except CorruptTableError as exc:
        log.warning("%s; rebuilding it from the verified raw files", exc)
        return None
    with dataset_lock(entry.name, data_home):
        # Another process may have written a new table since it was read: only
        # the rows just checked may be described.
        now = read_provenance(path)
        if now is not None and now.get("table_sha256") == provenance["table_sha256"]:
            repair_descriptors(path, frame, provenance)
    return provenance


def _label_raw(
    raw: FeatureTable | SignalTable, entry: DatasetEntry
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Keep the raw rows of kept classes (one rule: :mod:`mudata.classes`); count the others.

    Rows are dropped here, before any feature is computed, so that every
    sample of a class not kept is counted (per label) in the log and the
    provenance, whatever the recipe.
    """
    frame = raw.frame
    matched = match_classes(frame["label"], entry, where=f"reader '{entry.reader}'")
    log_folded(entry.name, matched.folded)
    log_dropped(entry.name, matched.dropped, len(frame), "rows read")
    keep = matched.rank >= 0
    kept = frame.loc[keep].reset_index(drop=True)
    if isinstance(raw, FeatureTable):
        kept["label"] = matched.names[keep].astype(str)
    return kept, matched.dropped


def _name_labels(features: pd.DataFrame, entry: DatasetEntry) -> pd.DataFrame:
    """Feature rows of a signal recipe carry raw codes: give them their class names."""
    matched = match_classes(features["label"], entry, check_seen=False)
    features = features.copy(deep=False)  # copy-on-write: only the label column is new
    features["label"] = matched.names.astype(str)
    return features


def _to_features(
    raw: FeatureTable | SignalTable, kept: pd.DataFrame, entry: DatasetEntry, counts: dict[str, Any]
) -> pd.DataFrame:
    """Feature rows of the kept raw rows; what the recipe left out is added to ``counts``."""
    if isinstance(raw, FeatureTable):
        if entry.recipe.name != "precomputed":
            message = f"{entry.name}: reader '{entry.reader}' gives features, but the recipe is '{entry.recipe.name}'"
            raise EmptyResultError(message)
        counts["feature_rows"] = len(kept)
        return kept
    # Here, not at the top: numpy-heavy; only for signal readers.
    from mudata.features import featurize

    return _window_counts(featurize(SignalTable(kept), entry), len(kept), entry, counts)


def _window_counts(
    features: pd.DataFrame, n_kept: int, entry: DatasetEntry, counts: dict[str, Any]
) -> pd.DataFrame:
    """Add what the signal recipe left out of ``n_kept`` samples to ``counts``; name the labels."""
    counts["samples_outside_windows"] = int(features.attrs.get("samples_unused", 0))
    counts["samples_in_features"] = n_kept - counts["samples_outside_windows"]
    counts["windows_dropped"] = {
        str(k): int(v) for k, v in features.attrs.get("dropped", {}).items()
    }
    counts["feature_rows"] = len(features) + sum(counts["windows_dropped"].values())
    return _name_labels(features, entry) if len(features) else features


def _stream_features(
    entry: DatasetEntry, stream: SignalStream, spool_dir: Path | None = None
) -> tuple[pd.DataFrame, dict[str, Any], int]:
    """:func:`_label_raw` and :func:`_to_features` of a table read in chunks.

    Each chunk is labelled, counted and windowed as it comes; what the whole
    path counts over the table is added up over the chunks, and a kept class
    never seen is the same error once every chunk has been read.

    Returns
    -------
    (DataFrame, dict, int)
        The feature rows (labels named), the counts, and the samples of kept classes.
    """
    # Here, not at the top: numpy-heavy; only for signal readers.
    from mudata.features import StudyWindows

    windows = StudyWindows(entry, spool_dir=spool_dir)
    rows_read = n_kept = 0
    dropped: Counter[str] = Counter()
    labels = []
    try:
        for chunk in coalesced(stream):
            frame = chunk.frame
            matched = match_classes(frame["label"], entry, check_seen=False)
            dropped.update(matched.dropped)
            labels.append(frame["label"].drop_duplicates())
            rows_read += len(frame)
            n_kept += int((matched.rank >= 0).sum())
            windows.add(chunk)
        seen = pd.concat(labels, ignore_index=True) if labels else pd.Series([], dtype="int64")
        labelled = match_classes(seen.drop_duplicates(), entry, where=f"reader '{entry.reader}'")
        log_folded(entry.name, labelled.folded)
        dropped_codes = {k: int(v) for k, v in sorted(dropped.items()) if v}
        log_dropped(entry.name, dropped_codes, rows_read, "rows read")
        counts: dict[str, Any] = {
            "rows_read": rows_read,
            "rows_dropped_by_class_code": dropped_codes,
        }
        if stream.attrs.get("time_repeats"):
            counts["time_repeats"] = dict(stream.attrs["time_repeats"])
        if stream.attrs.get("streams"):
            # Per file: each stream's rows and step, the timestamps aligning dropped.
            counts["streams"] = dict(stream.attrs["streams"])
        finished = windows.finish()
    finally:
        windows.close()  # the features cut wait on disk: removed however the build ends
    features = _window_counts(finished, n_kept, entry, counts)
    return features, counts, n_kept


def labelled_features(
    entry: DatasetEntry,
    sources: Sources,
    *,
    raw: FeatureTable | SignalTable | None = None,
    stream: SignalStream | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Every stage before the user filter: read, label, featurize, drop missing values.

    Parameters
    ----------
    entry : DatasetEntry
        The registry entry.
    sources : Sources
        Its verified files.
    raw : FeatureTable or SignalTable, optional
        What the entry's reader already gave for these sources (``mudata
        init`` reads the files once for its counts and its preview).
    stream : SignalStream, optional
        The same table in chunks. By default, an entry with the
        ``study-window`` recipe whose reader has a stream reader
        (:func:`mudata.readers.get_stream_reader`) is read and windowed in
        chunks, in bounded memory; the table is the same, bit for bit.

    Returns
    -------
    (DataFrame, dict)
        ``userid`` (text), ``label`` (class names), then float64 features;
        and the counts of rows read and dropped so far, by reason.
    """
    if raw is None and stream is None and entry.recipe.name == "study-window":
        stream_reader = get_stream_reader(entry.reader)
        stream = stream_reader(entry, sources) if stream_reader is not None else None
    if stream is not None:
        features, counts, n_kept = _stream_features(entry, stream, sources.spool_dir)
    else:
        if raw is None:
            raw = get_reader(entry.reader)(entry, sources)
        kept, dropped_codes = _label_raw(raw, entry)
        counts = {"rows_read": len(raw.frame), "rows_dropped_by_class_code": dropped_codes}
        if raw.frame.attrs.get("time_repeats"):
            # Samples sharing the time of the previous one, by file: kept in file order.
            counts["time_repeats"] = dict(raw.frame.attrs["time_repeats"])
        if raw.frame.attrs.get("streams"):
            counts["streams"] = dict(raw.frame.attrs["streams"])
        if raw.frame.attrs.get("unlabelled"):
            # Samples outside every interval of an annotation table, by recording: dropped.
            counts["rows_unlabelled"] = dict(raw.frame.attrs["unlabelled"])
        features, n_kept = _to_features(raw, kept, entry, counts), len(kept)
    if features.empty:
        raise EmptyResultError(_nothing_left(entry, n_kept, counts))
    # Copy-on-write: the columns replaced are copied, the features stay shared
    # (a table's features built in chunks are not held twice here).
    labelled = features.copy(deep=False)
    del features
    labelled["userid"] = user_names(labelled["userid"])
    feature_columns = [c for c in labelled.columns if c not in ("userid", "label")]
    if any(labelled[c].dtype != "float64" for c in feature_columns):
        labelled[feature_columns] = labelled[feature_columns].astype("float64")
    incomplete = labelled[feature_columns].isna().any(axis=1)
    if incomplete.any():
        # Readers of precomputed tables may carry missing values; the study keeps none.
        log.info(
            "%s: %d rows with missing feature values dropped", entry.name, int(incomplete.sum())
        )
        labelled = labelled.loc[~incomplete].reset_index(drop=True)
    counts["rows_dropped_missing_values"] = int(incomplete.sum())
    if labelled.empty:
        raise EmptyResultError(_nothing_left(entry, n_kept, counts))
    return labelled, counts


def _nothing_left(entry: DatasetEntry, n_kept: int, counts: dict[str, Any]) -> str:
    """Why no feature row is left: nothing of a kept class read, or all of it dropped."""
    if not n_kept:
        return f"{entry.name}: no row of a kept class {entry.class_names} was read"
    windows = {k: v for k, v in counts.get("windows_dropped", {}).items() if v}
    why = [f"{n:,} windows dropped: {reason}" for reason, n in windows.items()]
    if counts.get("rows_dropped_missing_values"):
        why.append(f"{counts['rows_dropped_missing_values']:,} rows with missing feature values")
    return (
        f"{entry.name}: {n_kept:,} rows of the kept classes {entry.class_names} were read, "
        f"but none is left as a feature row ({'; '.join(why) or 'no complete window'})"
    )


def build_table(
    entry: DatasetEntry, sources: Sources, *, min_users: int = MIN_USERS
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read and preprocess a release into the validated feature table.

    Parameters
    ----------
    entry : DatasetEntry
        The registry entry.
    sources : Sources
        Its verified files.
    min_users : int
        Fewest users the table may keep after the user filter.

    Returns
    -------
    (DataFrame, dict)
        The table and a record of every row dropped on the way, by reason
        (see :func:`row_balance`).
    """
    labelled, counts = labelled_features(entry, sources)
    # Here, not at the top: pandera is slow to import; only needed to build.
    from mudata.validate import validate_table

    kept_rows, report = filter_users(
        labelled, entry.class_names, entry.min_per_class, dataset=entry.name, min_users=min_users
    )
    del labelled  # the rows of users dropped are let go before the checks
    validated = validate_table(
        kept_rows, entry.class_names, entry.min_per_class, dataset=entry.name
    )
    counts["users_dropped"] = dict(report.dropped)
    counts["rows_dropped_by_user_filter"] = dict(report.rows_dropped)
    return validated, counts


def row_balance(counts: dict[str, Any]) -> dict[str, int]:
    """Both sides of the two balances a table's ``counts`` must satisfy.

    Raw rows: ``rows_read`` = rows dropped by class code + samples left
    outside every window + rows (samples) that went into feature rows.
    Feature rows: ``feature_rows`` = rows dropped for an undefined feature
    + rows with missing values + rows of users dropped by the filter +
    ``rows``.

    Returns
    -------
    dict
        ``raw_in``, ``raw_out``, ``features_in``, ``features_out``.
    """
    used = counts.get("samples_in_features", counts.get("feature_rows", 0))
    return {
        "raw_in": int(counts["rows_read"]),
        "raw_out": int(
            sum(counts["rows_dropped_by_class_code"].values())
            + counts.get("samples_outside_windows", 0)
            + used
        ),
        "features_in": int(counts["feature_rows"]),
        "features_out": int(
            sum(counts.get("windows_dropped", {}).values())
            + counts["rows_dropped_missing_values"]
            + sum(counts["rows_dropped_by_user_filter"].values())
            + counts["rows"]
        ),
    }


def build(entry: DatasetEntry, **options: Any) -> Path:
    """Build (or find) the published table of ``entry``; return its Parquet path.

    A table already built from the same entry with the same recipe version,
    unchanged since it was written (see :func:`current_path`), is returned
    without reading its rows. ``options`` are the keyword arguments of
    :func:`build_frame`.
    """
    return build_frame(entry, **options, read_back=False)[0]


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
    min_users: int = MIN_USERS,
    read_back: bool = True,
    verify: bool = False,
) -> tuple[Path, pd.DataFrame | None]:
    """Build (or find) the table of ``entry``; return its path and its checked rows.

    Parameters
    ----------
    download : bool
        When False, a raw file missing from the cache is a
        :class:`~mudata.errors.MissingFileError` instead of a download.
    max_expansion : float, optional
        Expansion cap of archives (see :func:`mudata.archive.max_expansion`).
    min_users : int
        Fewest users the table may keep after the user filter (at least 2);
        fewer is an :class:`~mudata.errors.EmptyResultError` listing the users
        dropped and why. A built table with fewer users is built again, so
        that the error says why.
    read_back : bool
        When True (a load), the rows of a table already built are read and
        hashed, and nothing is written unless the table must be built. When
        False (a fetch), None stands for the rows: a table just built is not
        read back, and one already built is checked by :func:`current_path`
        (no row read when its file is unchanged since it was written), its
        descriptors repaired and the leftovers of killed runs removed.
    verify : bool
        With ``read_back=False``: hash the rows of a table already built even
        when its file is unchanged (``mudata fetch --verify``).
    Others
        As for :func:`mudata.fetch`.
    """
    target = parquet_path(entry, data_home)
    if min_users < MIN_USERS:
        message = f"min_users must be at least {MIN_USERS}, got {min_users}"
        raise UsageError(message, cli={"min_users must": "--min-users must"})
    if not force and (found := _cached(entry, data_home, read_back, verify)) is not None:
        frame, record = found
        if _users(frame, record) < min_users:
            return build_frame(
                entry, data_home=data_home, mirror=mirror, manual_dir=manual_dir,
                allow_unverified=allow_unverified, progress=progress, force=True,
                download=download, max_expansion=max_expansion, min_users=min_users,
                read_back=read_back, verify=verify,
            )  # fmt: skip
        log.info(
            "%s: cached table %s, its raw files verified at build time (%s); "
            "`mudata verify %s` rebuilds it from them and compares",
            entry.name,
            target,
            record.get("built", "time not recorded"),
            entry.name,
        )
        if not read_back:  # a fetch writes; a load (a read) leaves the folder as it is
            sweep_when_idle(entry.name, data_home, _temporary_files(target))
        return target, frame
    # Here, not at the top: imports pooch's network stack.
    from mudata.download import fetch_sources

    with dataset_lock(entry.name, data_home):
        if not force and (found := _cached(entry, data_home, read_back, verify)) is not None:
            return target, found[0]  # built by another process while this one waited
        for pattern in _temporary_files(target):
            sweep_stale(target.parent, pattern)
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
            [f.root for f in fetched],
            [f.pins for f in fetched],
            max_expansion=max_expansion,
            spool_dir=_spool_dir(entry, data_home),
        )
        try:
            table, drops = build_table(entry, sources, min_users=min_users)
        except (ParseError, LimitError, ChecksumError) as exc:
            _discard_unhashed_cache(entry, fetched, exc)
            raise
        finally:
            sources.close()
        provenance = _provenance(entry, fetched, sources, table, drops)
        provenance["build"] = build_record(data_home, manual_dir, min_users)
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


def _cached(
    entry: DatasetEntry, data_home: Path | str | None, read_back: bool, verify: bool
) -> tuple[pd.DataFrame | None, dict[str, Any]] | None:
    """The built table's rows (None for a fetch) and provenance; None when it must be built."""
    if read_back:
        frame = current_table(entry, data_home)
        return None if frame is None else (frame, frame.attrs["provenance"])
    record = current_path(entry, data_home, verify=verify)
    return None if record is None else (None, record)


def _users(frame: pd.DataFrame | None, record: dict[str, Any]) -> int:
    """Users of a cached table: counted in its rows when read, else as its provenance records."""
    if frame is not None:
        return int(frame["userid"].nunique())
    users = (
        record.get("counts", {}).get("users") if isinstance(record.get("counts"), dict) else None
    )
    # A record without a count (not one mudata wrote) counts as too few: it is rebuilt.
    return users if isinstance(users, int) and not isinstance(users, bool) else 0


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
    # Here, not at the top: mudata.download imports pooch's network stack.
    from mudata.download import listing_sha256

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

    ``home_id`` is the data home's identity (:func:`mudata.paths.home_identity`):
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


def _provenance(
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


def kept_signals(entry: DatasetEntry, sources: Sources) -> SignalTable:
    """The raw samples of the kept classes, read whole (not in chunks), in file order.

    What :func:`labelled_features` windows for a signal reader, given to the
    stages that need the samples themselves (:mod:`mudata.window_build`).
    """
    raw = get_reader(entry.reader)(entry, sources)
    if not isinstance(raw, SignalTable):
        message = f"{entry.name}: reader '{entry.reader}' gives features, not samples"
        raise EmptyResultError(message)
    return SignalTable(_label_raw(raw, entry)[0])


def name_labels(features: pd.DataFrame, entry: DatasetEntry) -> pd.DataFrame:
    """Feature rows of a signal recipe with their class names instead of raw codes."""
    return _name_labels(features, entry) if len(features) else features


def spool_dir(entry: DatasetEntry, data_home: Path | str | None) -> Path | None:
    """Where a build spools members (see :func:`_spool_dir`); call it under the dataset's lock."""
    return _spool_dir(entry, data_home)
