"""The Python API: ``fetch`` a dataset's table, ``load`` it, read its ``provenance``, ``verify`` it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mudata._identity import check_ours
from mudata.building.audit import Verification, verify_table
from mudata.building.cache import parquet_path
from mudata.building.options import BuildOptions
from mudata.building.pipeline import build_frame
from mudata.building.window_build import build_windows, check_windowed
from mudata.errors import MissingFileError
from mudata.publish.store import read_provenance
from mudata.publish.window_store import read_provenance as read_window_provenance
from mudata.registry.lookup import get_entry

if TYPE_CHECKING:
    from sklearn.utils import Bunch

check_ours()  # `mudata` may resolve to scverse's package (same import name)


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
    windows: bool = False,
    verify: bool = False,
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
        given), raise :class:`~mudata.errors.MissingFileError` instead of
        downloading; an entry whose files are all local paths (``demo``, a
        registered folder) is built all the same, since that downloads nothing.
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
    windows : bool
        Build the windows of samples beside the feature table too (datasets
        of recipe ``study-window`` only; see :func:`load`) and return their path.
    verify : bool
        Hash the rows of a table built before even when its file is unchanged
        since it was written.

    Returns
    -------
    Path
        ``<data_home>/<name>/<name>.parquet``. A table built before is served
        without reading its rows when its file's size and times are those
        recorded when it was written, with the hash its footer holds; when
        they changed, or with ``verify``, its rows are hashed and compared
        with that hash (a damaged table is rebuilt from the verified raw
        files, with a warning) and ``datapackage.json`` is repaired if it
        disagrees. A table built now is not read back into memory. With
        ``windows``, ``<data_home>/<name>/<name>.windows.parquet``.
    """
    options = BuildOptions(
        data_home=data_home,
        mirror=mirror,
        manual_dir=manual_dir,
        allow_unverified=allow_unverified,
        progress=progress,
        force=force,
        download=download_if_missing,
        max_expansion=max_expansion,
        min_users=min_users,
        verify=verify,
    )
    if windows:
        return _fetch(name, options, windows=True)[0]
    # Only the path is returned: a table just built is not read back into memory.
    return _fetch(name, options, read_back=False)[0]


def _fetch(
    name: str, options: BuildOptions, *, windows: bool = False, read_back: bool = True
) -> tuple[Path, Any]:
    """The table (or the windows) of ``name``, built as ``options`` say: its path and rows."""
    entry = get_entry(name, options.data_home)
    if windows:
        check_windowed(entry)  # before anything is downloaded or built
    # A table that exists but is out of date or damaged is rebuilt from the
    # cached raw files without downloading (or a clear error names the missing one).
    # An entry whose every file is a local path (the embedded ``demo``, a
    # registered folder) builds without a download, so it builds here too.
    target = parquet_path(entry, options.data_home)
    if (
        not options.download
        and options.manual_dir is None
        and any(remote.path is None for remote in entry.files)
        and not target.exists()
    ):
        message = (
            f"dataset '{entry.name}' is not built in {target.parent} and download_if_missing=False"
        )
        raise MissingFileError(message)
    if windows:
        return build_windows(entry, options)
    return build_frame(entry, options, read_back=read_back)


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
    windows: bool = False,
) -> Bunch | tuple[Any, Any, Any]:
    """Load a dataset's feature table, or its windows of samples, building them if needed.

    The shape of scikit-learn's dataset loaders (``fetch_openml``, ``load_iris``),
    with ``groups`` added: the user ids, for
    :class:`~sklearn.model_selection.LeaveOneGroupOut` and the like.

    Parameters
    ----------
    name, data_home, download_if_missing, mirror, manual_dir, allow_unverified, progress, max_expansion
        As for :func:`fetch`.
    return_X_y : bool
        If True, return ``(data, target, groups)`` instead of a Bunch.
    as_frame : bool
        If True (the default, unlike scikit-learn: the table is a DataFrame
        already), ``data`` is a DataFrame and ``target`` and ``groups`` are
        Series. If False they are numpy arrays (``data`` of float64, shape
        ``(n_rows, n_features)``; ``target`` and ``groups`` of shape
        ``(n_rows,)``) and ``frame`` is None, as in scikit-learn.
    windows : bool
        If True, ``data`` is the windows of samples instead of the features:
        a float32 array of shape ``(n_rows, window, n_channels)``, whose row
        ``i`` is row ``i`` of the feature table (same users, classes, user
        filter and order). Its values are the samples the features are
        computed from: each channel of ``entry.sensors`` after the recipe's
        moving average. ``channel_names`` names the last axis and ``frame``
        is None. Only datasets of recipe ``study-window`` have windows; any
        other is a :class:`~mudata.errors.MudataUsageError` that says why.
        The file, ``<name>.windows.parquet`` beside the table, holds one
        fixed-size list column per channel, with the table's provenance and
        a ``table_sha256`` of its own, checked at each load.

    Returns
    -------
    Bunch or tuple
        A :class:`sklearn.utils.Bunch` with

        - ``data``: the features, shape ``(n_rows, n_features)``;
        - ``target``: the class name of each row, shape ``(n_rows,)``;
        - ``groups``: the user id of each row, shape ``(n_rows,)``;
        - ``frame``: the whole table (``userid``, ``label``, then the
          features), with the provenance in ``frame.attrs["provenance"]``;
          None when ``as_frame`` is False;
        - ``feature_names``: the feature columns, in order;
        - ``target_names``: the kept class names, in the registry's order;
        - ``provenance``: the table's provenance record (see :func:`provenance`);
        - ``DESCR``: a text description: title, counts, licence, citation.

        With ``return_X_y``, the tuple ``(data, target, groups)``.

    Examples
    --------
    It downloads the release the first time (the README's quick start shows
    ``--manual-dir`` for files you have), so it is shown, not run::

        bunch = load("wisdm")
        bunch.frame.columns[:2].tolist()          # ['userid', 'label']
        X, y, groups = load("wisdm", return_X_y=True)
    """
    options = BuildOptions(
        data_home=data_home,
        mirror=mirror,
        manual_dir=manual_dir,
        allow_unverified=allow_unverified,
        progress=progress,
        download=download_if_missing,
        max_expansion=max_expansion,
    )
    if windows:
        return _load_windows(name, options, return_X_y=return_X_y, as_frame=as_frame)
    # The rows served are the rows whose hash was just checked: one read.
    path, frame = _fetch(name, options)
    record = _public_record(frame.attrs["provenance"], path)
    feature_names = [str(c) for c in frame.columns if c not in ("userid", "label")]
    data: Any = frame[feature_names]
    target: Any = frame["label"]
    groups: Any = frame["userid"]
    if not as_frame:
        data, target, groups = data.to_numpy(dtype=float), target.to_numpy(), groups.to_numpy()
    if return_X_y:
        return data, target, groups
    # Here, not at the top: scikit-learn is slow to import; only needed here.
    from sklearn.utils import Bunch

    return Bunch(
        data=data,
        target=target,
        groups=groups,
        frame=frame if as_frame else None,
        feature_names=feature_names,
        target_names=list(record["classes"]),
        provenance=record,
        DESCR=describe(record),
    )


def _load_windows(
    name: str, options: BuildOptions, *, return_X_y: bool, as_frame: bool
) -> Bunch | tuple[Any, Any, Any]:
    """:func:`load` with ``windows=True``: the checked rows of the windows file."""
    path, rows = _fetch(name, options, windows=True)
    record = _public_record(rows.provenance, path)
    target: Any = rows.y
    groups: Any = rows.groups
    if as_frame:
        # Here, not at the top: pandas is imported by the build already.
        import pandas as pd

        target, groups = pd.Series(target, name="label"), pd.Series(groups, name="userid")
    if return_X_y:
        return rows.X, target, groups
    # Here, not at the top: scikit-learn is slow to import; only needed here.
    from sklearn.utils import Bunch

    return Bunch(
        data=rows.X,
        target=target,
        groups=groups,
        frame=None,
        channel_names=list(rows.channels),
        target_names=list(record["classes"]),
        provenance=record,
        DESCR=describe(record),
    )


def window_layout(path: Path) -> dict[str, Any]:
    """``length`` and ``channels`` of the windows file at ``path`` (from its provenance)."""
    record = read_window_provenance(path) or {}
    return dict(record.get("windows", {}))


def describe(record: dict[str, Any]) -> str:
    """The ``DESCR`` text of a table, from its provenance record."""
    counts = record["counts"]
    licence = record["licence"]
    title = record.get("licence_title")
    lines = [
        f"{record['title']} ({record['dataset']}, version {record['dataset_version']})",
        "",
        (
            f"{counts['rows']} rows, {counts['users']} users, {len(record['classes'])} classes, "
            f"{counts['features']} features."
        ),
        f"Classes: {', '.join(record['classes'])}.",
        f"Homepage: {record['homepage']}",
        f"Licence: {licence}" + (f" ({title})" if title and title != licence else ""),
        f"Table SHA-256: {record['table_sha256']}",
        "",
        "Citation:",
        record["citation"],
    ]
    return "\n".join(lines) + "\n"


def provenance(name: str, *, data_home: Path | str | None = None) -> dict[str, Any]:
    """The provenance record of a built table (``sha256`` is the table's content hash).

    Parameters
    ----------
    name : str
        A registered dataset, built already (:func:`fetch`).
    data_home : str or Path, optional
        As for :func:`fetch`.

    Returns
    -------
    dict
        The record the table carries: source files with their hashes and
        whether each was verified, reader, recipe, counts, licence, citation,
        package versions; ``sha256`` the table's content hash, ``path`` its file.

    Raises
    ------
    mudata.errors.MissingFileError
        The table is not built.
    """
    entry = get_entry(name, data_home)
    path = parquet_path(entry, data_home)
    record = read_provenance(path) if path.is_file() else None
    if record is None:
        message = f"dataset '{entry.name}' is not built in {path.parent}; run `mudata fetch {entry.name}` first"
        raise MissingFileError(message)
    return _public_record(record, path)


def _public_record(record: dict[str, Any], path: Path) -> dict[str, Any]:
    # ``sha256`` is the name callers know for the table's content hash.
    return {**record, "sha256": record["table_sha256"], "path": str(path)}


def verify(
    name: str,
    *,
    data_home: Path | str | None = None,
    manual_dir: Path | str | None = None,
    max_expansion: float | None = None,
) -> Verification:
    """Rebuild a cached table from its pinned raw files and compare it with the cache.

    ``files[].verified_at_build`` in a table's provenance says what the build
    saw; the table can have been rewritten since (its ``table_sha256`` with
    it). This reads the raw files again, checks each byte against the registry
    entry's hashes, builds the table in memory (nothing is downloaded, and
    the table is not rewritten) and compares the rows exactly (builds are
    deterministic), then the provenance fields :func:`load` serves (classes
    and their order, licence, citation, counts, ...). A table that verifies
    has a ``datapackage.json`` that disagrees with it repaired, as
    :func:`fetch` does.

    Parameters
    ----------
    name : str
        A registry name.
    data_home : path-like, optional
        As for :func:`fetch`.
    manual_dir : path-like, optional
        The folder holding the raw files of a table built with ``manual_dir``;
        default: the one its build record names.
    max_expansion : float, optional
        As for :func:`fetch`.

    Returns
    -------
    Verification
        ``status`` is "verified", "differs" (``first_difference`` names the
        first differing row: index, user, label, columns; or the differing
        provenance fields) or "unverifiable" (no table; raw files missing,
        changed or unpinned; an entry changed since the build; a
        ``table_sha256`` of the old kind; or no build record from this data
        home);
        ``exit_code`` is 0, 1 or 2, as ``mudata verify`` exits.

    Examples
    --------
    It needs a built table (``mudata fetch wisdm``), so it is shown, not run::

        result = verify("wisdm")
        result.status, result.exit_code          # ('verified', 0)
    """
    entry = get_entry(name, data_home)
    return verify_table(
        entry, data_home=data_home, manual_dir=manual_dir, max_expansion=max_expansion
    )


__all__ = ["Verification", "describe", "fetch", "load", "provenance", "verify"]
