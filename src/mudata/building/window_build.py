"""A dataset's windows of samples, row for row beside its feature table.

For a ``study-window`` dataset, :func:`build_windows` reads the verified raw
files again, cuts the recipe's windows (:func:`mudata.building.features.study_window_samples`),
keeps the rows the feature table keeps (undefined features, missing values, the
user filter) and stores the samples of each (:mod:`mudata.publish.window_store`).
Window ``i`` is row ``i`` of the feature table: the feature rows computed beside
the windows must hash to the feature table's ``table_sha256``, or nothing is
written (:class:`~mudata.errors.StorageError`). The file records that hash as
``features_table_sha256``; a windows file whose feature table changed since is
built again.

The values are the samples the features are computed from: each channel after
the recipe's moving average (``smoothing``), over the window's positions.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mudata.building.labelled import kept_signals, name_labels
from mudata.building.options import MIN_USERS, BuildOptions
from mudata.building.pipeline import build_frame, open_sources
from mudata.building.userfilter import filter_users
from mudata.errors import CorruptTableError, MudataUsageError, StorageError
from mudata.publish.store import table_fingerprint
from mudata.publish.window_store import Windows, read_provenance, read_windows, write_windows
from mudata.records.classes import user_names
from mudata.records.entry import DatasetEntry
from mudata.sources.paths import folder_lock, table_dir
from mudata.version import __version__

log = logging.getLogger(__name__)

#: What the values of a windows file are, in its provenance.
SAMPLES = "the recipe's moving average of each channel over the window's positions"


def windows_path(entry: DatasetEntry, data_home: Path | str | None = None) -> Path:
    """Where the windows of ``entry`` live: beside its feature table."""
    return table_dir(entry.name, data_home) / f"{entry.name}.windows.parquet"


def check_windowed(entry: DatasetEntry) -> None:
    """Raise a usage error naming why ``entry`` has no windows of samples.

    Raises
    ------
    MudataUsageError
        The recipe is not ``study-window``: a precomputed table has no samples,
        a segment recipe cuts no windows of one length.
    """
    recipe = entry.recipe.name
    if recipe == "study-window":
        return
    why = {
        "precomputed": "its table is published as features, with no samples to cut windows from",
        "study-segment": "its rows are whole segments of different lengths, not windows of one length",
    }.get(recipe, "only recipe 'study-window' cuts windows of one length")
    hint = (
        " (its rows are those of 'motionsense' on participants 1-4)" if entry.name == "demo" else ""
    )
    message = (
        f"dataset '{entry.name}' has no windows of samples: its recipe is '{recipe}' and {why}. "
        f"Windows exist for the datasets of recipe 'study-window'{hint}; without --windows "
        f"its feature table loads as usual."
    )
    raise MudataUsageError(message)


def build_windows(entry: DatasetEntry, options: BuildOptions | None = None) -> tuple[Path, Windows]:
    """Build (or find) the windows of ``entry``; return their path and the checked rows.

    Parameters
    ----------
    entry : DatasetEntry
        With recipe ``study-window``.
    options : BuildOptions, optional
        As for :func:`mudata.building.pipeline.build_frame`; the feature table
        is built first when needed.

    Returns
    -------
    (Path, Windows)
        The file ``<name>.windows.parquet`` and its rows, checked against
        their ``table_sha256``.

    Raises
    ------
    MudataUsageError
        The recipe cuts no windows (:func:`check_windowed`).
    StorageError
        The feature rows computed beside the windows are not the feature
        table's (nothing is written), or the file cannot be written.
    """
    check_windowed(entry)
    options = BuildOptions() if options is None else options
    _, table = build_frame(entry, options, read_back=True)
    assert table is not None  # read_back=True always reads the rows
    features = table.attrs["provenance"]
    target = windows_path(entry, options.data_home)
    if not options.force and (cached := _current(target, features)) is not None:
        return target, cached
    with folder_lock(target.parent):
        if not options.force and (cached := _current(target, features)) is not None:
            return target, cached
        windows = _cut(entry, features, options, target.parent)
        write_windows(target, windows)
    log.info("%s: %d windows written to %s", entry.name, len(windows.y), target)
    return target, read_windows(target)


def _current(target: Path, features: dict[str, Any]) -> Windows | None:
    """The cached windows when they are those of the feature table as it is; else None."""
    if not target.is_file():
        return None
    recorded = read_provenance(target)
    if not recorded or recorded.get("features_table_sha256") != features["table_sha256"]:
        return None
    try:
        return read_windows(target)
    except CorruptTableError as exc:
        log.warning("%s; building them again from the verified raw files", exc)
        return None


def _cut(
    entry: DatasetEntry, features: dict[str, Any], options: BuildOptions, folder: Path
) -> Windows:
    """Read the raw files again and cut the windows of the feature table's rows.

    ``folder`` is the dataset's folder of the data home, where the members are spooled.
    """
    # Here, not at the top: numpy-heavy code.
    from mudata.building.features import study_window_samples

    _, sources = open_sources(entry, options, spool_in=folder)
    try:
        signals = kept_signals(entry, sources)
    finally:
        sources.close()
    rows, X = study_window_samples(signals, entry)
    del signals
    rows = name_labels(rows, entry)
    rows["userid"] = user_names(rows["userid"])
    # The feature table's own stages after the recipe: missing values (none from
    # this recipe, checked all the same), then the user filter.
    numbers = [c for c in rows.columns if c not in ("userid", "label")]
    complete = ~rows[numbers].isna().any(axis=1).to_numpy()
    rows, X = rows.loc[complete].reset_index(drop=True), X[complete]
    min_users = int(features.get("build", {}).get("min_users", MIN_USERS))
    _, report = filter_users(
        rows, entry.class_names, entry.min_per_class, dataset=entry.name, min_users=min_users
    )
    users_kept = rows["userid"].astype(str).isin(report.kept).to_numpy()
    rows, X = rows.loc[users_kept].reset_index(drop=True), X[users_kept]
    observed = table_fingerprint(rows)
    if observed != features["table_sha256"]:
        message = (
            f"dataset '{entry.name}': the feature rows computed beside its windows hash to "
            f"{observed}, but its feature table records table_sha256 {features['table_sha256']}; "
            "the windows would not line up with the table's rows, so none are written. "
            f"`mudata verify {entry.name}` checks the table against its raw files."
        )
        raise StorageError(message)
    channels = [c for sensor in entry.sensors for c in sensor.channels]
    provenance = {
        key: value
        for key, value in features.items()
        if key not in ("table_sha256", "table_sha256_kind", "built", "mudata_version")
    }
    provenance.update(
        {
            "features_table_sha256": features["table_sha256"],
            "windows": {"samples": SAMPLES, "smoothing": int(entry.recipe.smoothing)},
            "mudata_version": __version__,
            "built": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )
    return Windows(
        X=X,
        y=rows["label"].to_numpy(dtype=object),
        groups=rows["userid"].astype(str).to_numpy(dtype=object),
        channels=channels,
        provenance=provenance,
    )


__all__ = ["build_windows", "check_windowed", "windows_path"]
