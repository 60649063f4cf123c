"""The stages from raw rows to the feature table: read, label, featurize, drop, filter, validate.

:func:`labelled_features` reads an entry's verified files (in chunks when its
reader streams), keeps the rows of kept classes (one rule:
:mod:`mudata.records.classes`), computes the recipe's features and drops rows
with missing values, counting every row dropped by reason;
:func:`build_table` adds the user filter and the schema's checks. Nothing here
reads the cache or writes a file.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mudata.building.options import MIN_USERS
from mudata.building.userfilter import filter_users
from mudata.errors import (
    EmptyResultError,
)
from mudata.readers import (
    FeatureTable,
    SignalStream,
    SignalTable,
    Sources,
    get_reader,
    get_stream_reader,
)
from mudata.readers.stream import coalesced
from mudata.records.classes import log_dropped, log_folded, match_classes, user_names
from mudata.records.entry import DatasetEntry

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


def _label_raw(
    raw: FeatureTable | SignalTable, entry: DatasetEntry
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Keep the raw rows of kept classes (one rule: :mod:`mudata.records.classes`); count the others.

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
    from mudata.building.features import featurize

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
    from mudata.building.study_windows import StudyWindows

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
    from mudata.building.validate import validate_table

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


def kept_signals(entry: DatasetEntry, sources: Sources) -> SignalTable:
    """The raw samples of the kept classes, read whole (not in chunks), in file order.

    What :func:`labelled_features` windows for a signal reader, given to the
    stages that need the samples themselves (:mod:`mudata.building.window_build`).
    """
    raw = get_reader(entry.reader)(entry, sources)
    if not isinstance(raw, SignalTable):
        message = f"{entry.name}: reader '{entry.reader}' gives features, not samples"
        raise EmptyResultError(message)
    return SignalTable(_label_raw(raw, entry)[0])


def name_labels(features: pd.DataFrame, entry: DatasetEntry) -> pd.DataFrame:
    """Feature rows of a signal recipe with their class names instead of raw codes."""
    return _name_labels(features, entry) if len(features) else features


__all__ = ["build_table", "kept_signals", "labelled_features", "name_labels", "row_balance"]
