"""Publishing a dataset's windows of samples: Parquet with fixed-size list columns.

The file ``<name>.windows.parquet`` beside the feature table holds one row per
feature-table row, in the same order: ``userid`` and ``label`` (text), then one
column per channel, each a fixed-size list of ``window`` float32 values
(``pa.list_(pa.float32(), window)``), which pyarrow, polars (``Array``) and
Hugging Face ``datasets`` read as they are.

The provenance rules are the feature table's (:mod:`mudata.publish.store`): the
provenance sits in the file's own metadata under the same key and records
``table_sha256``, a SHA-256 of the rows of kind
:data:`~mudata.publish.table_hash.KIND`. The rows hashed are those of
:func:`flat_frame`: ``userid``, ``label``, then one float32 column per channel
and position, named ``<channel>[<t>]``, channel after channel; so a value
changed, moved between channels or positions, or a row moved changes the
hash. :func:`read_windows` checks it before serving the rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mudata.errors import CorruptTableError, StorageError, excerpt
from mudata.files import atomic_path
from mudata.publish.store import PROVENANCE_KEY, read_parquet_file
from mudata.publish.table_hash import KIND, table_sha256


@dataclass
class Windows:
    """A dataset's windows of samples, row ``i`` beside row ``i`` of its feature table.

    Attributes
    ----------
    X : ndarray of float32, shape (n, window, n_channels)
    y : ndarray of str, shape (n,)
        Class names.
    groups : ndarray of str, shape (n,)
        User ids.
    channels : list of str
        The channel of each position of the last axis.
    provenance : dict
        The record stored with the rows.
    """

    X: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    channels: list[str]
    provenance: dict[str, Any] = field(default_factory=dict)


def flat_frame(
    users: np.ndarray, labels: np.ndarray, X: np.ndarray, channels: list[str]
) -> pd.DataFrame:
    """The rows :func:`windows_sha256` hashes: ids, then ``<channel>[<t>]`` float32 columns.

    Parameters
    ----------
    users, labels : ndarray, shape (n,)
    X : ndarray of float32, shape (n, window, n_channels)
    channels : list of str, length n_channels
    """
    n, width, n_channels = X.shape
    # Channel-major: the columns of channel c are positions 0..window-1.
    flat = np.ascontiguousarray(X.transpose(0, 2, 1)).reshape(n, n_channels * width)
    names = [f"{channel}[{t}]" for channel in channels for t in range(width)]
    frame = pd.DataFrame(flat, columns=names, copy=False)
    frame.insert(0, "label", pd.Series(labels, dtype=object).astype(str).to_numpy(dtype=object))
    frame.insert(0, "userid", pd.Series(users, dtype=object).astype(str).to_numpy(dtype=object))
    return frame


def windows_sha256(
    users: np.ndarray, labels: np.ndarray, X: np.ndarray, channels: list[str]
) -> str:
    """``table_sha256`` of a windows file's rows (see the module docstring)."""
    return table_sha256(flat_frame(users, labels, X, channels))


def write_windows(path: Path, windows: Windows) -> Path:
    """Write ``windows`` to ``path`` atomically, with its provenance and ``table_sha256``.

    The hash is computed here from the rows written, and stored in the
    provenance with its kind; nothing is left under ``path`` if the write fails.

    Raises
    ------
    StorageError
        The folder cannot be written.
    """
    X = np.ascontiguousarray(windows.X, dtype=np.float32)
    n, width, n_channels = X.shape
    if len(windows.channels) != n_channels:
        message = f"{n_channels} channels in the windows, {len(windows.channels)} names"
        raise StorageError(message)
    provenance = dict(windows.provenance)
    provenance["windows"] = {
        **provenance.get("windows", {}),
        "length": width,
        "channels": list(windows.channels),
        "dtype": "float32",
    }
    provenance["table_sha256"] = windows_sha256(windows.groups, windows.y, X, windows.channels)
    provenance["table_sha256_kind"] = KIND
    columns = {
        "userid": pa.array([str(u) for u in windows.groups], pa.string()),
        "label": pa.array([str(v) for v in windows.y], pa.string()),
    }
    for c, channel in enumerate(windows.channels):
        values = pa.array(np.ascontiguousarray(X[:, :, c]).reshape(n * width), pa.float32())
        columns[channel] = pa.FixedSizeListArray.from_arrays(values, width)
    arrow = pa.table(columns)
    arrow = arrow.replace_schema_metadata(
        {PROVENANCE_KEY: json.dumps(provenance, sort_keys=True).encode("utf-8")}
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            pq.write_table(arrow, tmp)
    except OSError as exc:
        message = (
            f"cannot write the windows to {path}: expected a writable folder, got "
            f"{type(exc).__name__}: {exc}. Choose another data directory with "
            f"--data-home or $MUDATA_HOME."
        )
        raise StorageError(message) from None
    return path


def read_provenance(path: Path) -> dict[str, Any] | None:
    """The provenance of a windows file, or None when absent or unreadable."""
    try:
        raw = (pq.read_schema(path).metadata or {}).get(PROVENANCE_KEY)
        return json.loads(raw) if raw else None
    except (OSError, pa.ArrowInvalid, ValueError):
        return None


def read_windows(path: Path, *, verify: bool = True) -> Windows:
    """Read a windows file; with ``verify``, check its rows against ``table_sha256``.

    Raises
    ------
    CorruptTableError
        The file is not a windows file as :func:`write_windows` writes them
        (no provenance, another layout, a null, a list of another length), or
        its rows do not match the hash recorded.
    LimitError
        Its footer declares more than the expansion cap allows.
    """
    arrow, provenance = read_parquet_file(path, f"the cached windows {path}", lambda arrow: arrow)
    if not isinstance(provenance, dict) or not isinstance(provenance.get("windows"), dict):
        message = f"the cached windows {path} have no readable provenance; they are damaged"
        raise CorruptTableError(message)
    layout = provenance["windows"]
    channels, width = layout.get("channels"), layout.get("length")
    X = _values(arrow, path, channels, width)
    users = _text_column(arrow, "userid", path)
    labels = _text_column(arrow, "label", path)
    if verify:
        observed = windows_sha256(users, labels, X, channels)
        if observed != provenance.get("table_sha256"):
            message = (
                f"the cached windows {path} do not match the hash recorded when they were "
                f"built: expected table_sha256 {provenance.get('table_sha256')}, actual "
                f"{observed}; their bytes changed on disk"
            )
            raise CorruptTableError(message)
    return Windows(X, labels, users, list(channels), provenance)


def _text_column(arrow: pa.Table, name: str, path: Path) -> np.ndarray:
    column = arrow.column(name) if name in arrow.column_names else None
    if column is None or not pa.types.is_string(column.type) or column.null_count:
        message = f"the cached windows {path}: column '{name}' must be text without nulls"
        raise CorruptTableError(message)
    return np.asarray(column.to_pylist(), dtype=object)


def _values(arrow: pa.Table, path: Path, channels: Any, width: Any) -> np.ndarray:
    """The (n, window, n_channels) float32 values, after checking the file's layout."""
    named = isinstance(channels, list) and all(isinstance(c, str) for c in channels)
    expected = ["userid", "label", *channels] if named else None
    sized = isinstance(width, int) and not isinstance(width, bool) and width >= 1
    if expected is None or not sized or arrow.column_names != expected:
        message = (
            f"the cached windows {path}: expected the columns {expected} of {width} "
            f"samples each, found {excerpt(str(arrow.column_names), 200)}"
        )
        raise CorruptTableError(message)
    n = arrow.num_rows
    X = np.empty((n, width, len(channels)), dtype=np.float32)
    for c, channel in enumerate(channels):
        column = arrow.column(channel).combine_chunks()
        kind = pa.list_(pa.float32(), width)
        if column.type != kind or column.null_count or column.values.null_count:
            message = (
                f"the cached windows {path}: column '{channel}' must be {kind} without "
                f"nulls, found {column.type} with {column.null_count} null rows"
            )
            raise CorruptTableError(message)
        values = column.flatten().to_numpy(zero_copy_only=False)
        X[:, :, c] = values.reshape(n, width)
    return X


__all__ = [
    "PROVENANCE_KEY",
    "Windows",
    "flat_frame",
    "read_provenance",
    "read_windows",
    "windows_sha256",
    "write_windows",
]
