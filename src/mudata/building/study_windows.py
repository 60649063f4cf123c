"""The ``study-window`` recipe over chunks: :class:`StudyWindows`, the same rows bit for bit.

What a table read in chunks (a :class:`~mudata.readers.stream.SignalStream`)
needs to give :func:`mudata.building.features.study_window`'s rows in bounded
memory: the state kept per (user, class, recording) sequence between chunks,
the windows cut as soon as they are known not to be a sequence's last, and
their features spooled to disk until the table's order is known.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from mudata.building.feature_maths import REASON_MISSING, REASON_SHORT, sensor_columns
from mudata.building.features import (
    class_rank,
    combined_key,
    empty_frame,
    finish_frame,
    missing_flags,
    sensor_channels,
    window_features,
)
from mudata.building.windowing import window_count
from mudata.errors import RegistryError, StorageError
from mudata.readers.base import SignalTable
from mudata.readers.spool import Spool
from mudata.records.classes import user_names, user_sort_key
from mudata.records.entry import DatasetEntry, Recipe

log = logging.getLogger(__name__)


class _Sequence:
    """What the windower keeps of one (user, class, recording) between chunks.

    ``buffer`` holds the raw samples from position ``start`` (0-based, in the
    sequence) to the last one seen: the samples of the windows not cut yet and
    the ``span - 1`` before them, which their first moving averages need.
    """

    __slots__ = ("buffer", "cut", "label", "length", "name", "rank", "recording", "start", "user")

    def __init__(self, user: object, label: object, name: str, rank: int, recording: int) -> None:
        self.user, self.label, self.name = user, label, name
        self.rank, self.recording = rank, recording
        self.buffer: list[np.ndarray] = []
        self.start = 0  # sequence position of the buffer's first sample
        self.length = 0  # samples seen so far
        self.cut = 0  # windows cut so far


def _window_block(
    buffers: list[np.ndarray],
    starts: np.ndarray,
    firsts: np.ndarray,
    counts: np.ndarray,
    lengths: np.ndarray,
    groups: list[list[int]],
    tri_axial: Sequence[bool],
    width: int,
    span: int,
    recipe: Recipe,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features of windows ``firsts[q] .. firsts[q] + counts[q] - 1`` of each sequence ``q``.

    ``buffers[q]`` (shape (m, c), all channels) holds sequence ``q``'s samples
    from position ``starts[q]``; ``lengths[q]`` is its length, or a length past
    which no window of the block needs a forward mean. The smoothed value of a
    position is the running mean :func:`study_window` takes for it, computed
    from the same samples, hence with the same bits.

    Returns
    -------
    values : ndarray, shape (n_windows, number of feature columns)
    missing, short : ndarray of bool, shape (n_windows,)
    """
    laid = np.concatenate(buffers)
    bounds = np.concatenate([[0], np.cumsum([b.shape[0] for b in buffers])])
    used = counts * width
    sequence = np.repeat(np.arange(counts.size), used)
    within = np.arange(int(used.sum())) - np.repeat(np.cumsum(used) - used, used)
    position = firsts[sequence] * width + within  # position in the sequence
    backward = position >= span - 1
    index = bounds[:-1][sequence] + position - starts[sequence] - np.where(backward, span - 1, 0)
    short = ~backward & (position + span - 1 >= lengths[sequence])
    index = np.ascontiguousarray(index.reshape(-1, width).T)
    short = np.ascontiguousarray(short.reshape(-1, width).T)

    parts, laid_nan = window_features(
        ((np.ascontiguousarray(laid[:, column]) for column in group) for group in groups),
        tri_axial,
        recipe,
        index,
        short,
    )
    missing = missing_flags(laid_nan, index, short, span)
    return np.hstack(parts), missing, np.asarray(short.any(axis=0))


class StudyWindows:
    """The ``study-window`` recipe fed chunk by chunk: :func:`study_window`'s rows, bit for bit.

    Each (user, class, recording) sequence keeps, between chunks, the samples
    of its windows not cut yet and the ``span - 1`` samples before them; a
    window is cut as soon as a later sample shows that it is not the
    sequence's last start (which the recipe drops) and the samples seen rule
    out a sequence too short for the smoothing. The features of the windows
    cut wait on disk (a :class:`~mudata.readers.spool.Spool`) until
    :meth:`finish` puts them in the table's order: memory is bounded by a
    chunk, that state per sequence, a few bytes per window, and the table
    :meth:`finish` returns.

    Parameters
    ----------
    entry : DatasetEntry
        With recipe ``study-window``.
    spool_dir : Path, optional
        Where the features wait (in a private folder made there, removed by
        :meth:`finish` or :meth:`close`); default the system's temporary folder.

    Notes
    -----
    ``windows = StudyWindows(entry)``, then ``windows.add(chunk)`` for each
    chunk (a :class:`SignalTable`, in file order), then ``windows.finish()``,
    which returns what ``featurize(whole table, entry)`` returns. A caller
    that stops before :meth:`finish` calls :meth:`close`.
    """

    def __init__(self, entry: DatasetEntry, *, spool_dir: Path | None = None) -> None:
        recipe = entry.recipe
        if recipe.name != "study-window" or recipe.window is None:
            message = (
                f"dataset '{entry.name}': StudyWindows needs recipe 'study-window' with 'window'"
            )
            raise RegistryError(message)
        self.entry = entry
        self.width = int(recipe.window)
        self.span = int(recipe.smoothing)
        self.groups: list[list[str]] | None = None
        self.dtypes: tuple[np.dtype, np.dtype] | None = None
        self.sequences: dict[tuple[str, int, int], _Sequence] = {}
        # Per part of windows cut: owners, numbers, missing and short flags; the
        # features themselves (float64, row after row) are in the spool.
        self.rows: list[tuple[np.ndarray, ...]] = []
        self.spool = Spool(f"the feature rows of '{entry.name}'", spool_dir)
        self.n_features = 0
        self.samples = 0

    def close(self) -> None:
        """Remove the features waiting on disk (done by :meth:`finish` too)."""
        self.spool.close()

    def add(self, chunk: SignalTable) -> None:
        """Take the next rows, in file order; cut every window they complete."""
        frame = chunk.frame
        if self.groups is None:
            self.groups = sensor_channels(chunk, self.entry)
            # A pandas text dtype is not numpy's: its values go as objects, as the
            # whole table's .to_numpy() gives them.
            self.dtypes = tuple(  # type: ignore[assignment]
                d if isinstance(d, np.dtype) else np.dtype(object)
                for d in (frame["userid"].dtype, frame["label"].dtype)
            )
        rank = class_rank(frame["label"], self.entry)
        kept = np.flatnonzero(rank >= 0)
        if kept.size == 0:
            return
        self.samples += kept.size
        users = frame["userid"].to_numpy()[kept]
        codes, uniques = pd.factorize(pd.Series(users), use_na_sentinel=False)
        # Ids that differ but name one user (1 and "1") are one sequence, as in study_window.
        by_name, names = pd.factorize(user_names(uniques))
        codes = by_name[codes]
        recording = (
            frame["recording"].to_numpy(dtype=np.int64)[kept]
            if "recording" in frame.columns
            else np.zeros(kept.size, dtype=np.int64)
        )
        kept_rank = rank[kept]
        keys = [codes.astype(np.int64), kept_rank, recording]
        key = combined_key(keys)
        order = np.argsort(key, kind="stable") if key is not None else np.lexsort(keys[::-1])
        change = np.zeros(max(order.size - 1, 0), dtype=bool)
        for part in keys:
            change |= part[order][1:] != part[order][:-1]
        bounds = np.concatenate([[0], np.flatnonzero(change) + 1, [order.size]])
        channels = [c for group in self.groups for c in group]
        values = frame[channels].to_numpy(dtype=np.float64)[kept[order]]
        labels = frame["label"].to_numpy()[kept]
        touched = []
        for lo, hi in itertools.pairwise(bounds):
            row = order[lo]
            name = str(names[codes[row]])
            ident = (name, int(kept_rank[row]), int(recording[row]))
            sequence = self.sequences.get(ident)
            if sequence is None:
                sequence = _Sequence(users[row], labels[row], *ident)
                self.sequences[ident] = sequence
            sequence.buffer.append(values[lo:hi])
            sequence.length += hi - lo
            touched.append(sequence)
        # Windows whose every smoothed sample is known (a sequence of 2 * span - 2
        # samples or more has no undefined forward mean), and not the last start.
        ready = [s for s in touched if s.length >= 2 * self.span - 2]
        with np.errstate(over="ignore", invalid="ignore"):
            self._cut(ready, ended=False)

    def _column_groups(self) -> list[list[int]]:
        """Each sensor's channels as column numbers of the buffers."""
        groups, first = [], 0
        for group in self.groups or []:
            groups.append(list(range(first, first + len(group))))
            first += len(group)
        return groups

    def _cut(self, sequences: list[_Sequence], *, ended: bool) -> None:
        counts = np.array(
            [max(int(window_count(s.length, self.width)) - s.cut, 0) for s in sequences],
            dtype=np.int64,
        )
        cutting = [s for s, n in zip(sequences, counts, strict=True) if n > 0]
        for s in sequences:
            s.buffer = [np.concatenate(s.buffer)] if len(s.buffer) > 1 else s.buffer
        if cutting:
            counts = counts[counts > 0]
            values, missing, short = _window_block(
                [s.buffer[0] for s in cutting],
                np.array([s.start for s in cutting], dtype=np.int64),
                np.array([s.cut for s in cutting], dtype=np.int64),
                counts,
                np.array([s.length for s in cutting], dtype=np.int64),
                self._column_groups(),
                [s.tri_axial for s in self.entry.sensors],
                self.width,
                self.span,
                self.entry.recipe,
            )
            which = np.repeat(np.arange(len(cutting)), counts)
            number = np.concatenate(
                [np.arange(s.cut, s.cut + n) for s, n in zip(cutting, counts, strict=True)]
            )
            self.rows.append((np.array(cutting, dtype=object)[which], number, missing, short))
            self.n_features = values.shape[1]
            # Spool.write takes any bytes-like (it writes it and takes its len): the
            # array's own buffer, not a copy of it.
            view = np.ascontiguousarray(values, dtype=np.float64).data.cast("B")
            self.spool.write(cast("bytes", view))
            for s, n in zip(cutting, counts, strict=True):
                s.cut += int(n)
        if ended:
            return
        for s in cutting:
            # Keep the samples from the next window's first backward mean on.
            keep_from = max(s.cut * self.width - self.span + 1, 0)
            s.buffer = [s.buffer[0][keep_from - s.start :]]
            s.start = keep_from

    def finish(self) -> pd.DataFrame:
        """Cut the windows left once every sequence is complete; return the table.

        Returns
        -------
        pandas.DataFrame
            What :func:`featurize` returns for all the chunks as one table, with
            the same ``attrs`` (``dropped``, ``samples_unused``).
        """
        try:
            return self._finish()
        finally:
            self.close()

    def _finish(self) -> pd.DataFrame:
        columns = sensor_columns(self.entry.sensors, self.entry.recipe.second_sensor)
        if self.samples == 0:
            return empty_frame(columns)
        sequences = list(self.sequences.values())
        with np.errstate(over="ignore", invalid="ignore"):
            self._cut(sequences, ended=True)
        lengths = np.array([s.length for s in sequences], dtype=np.int64)
        unused = int((lengths - window_count(lengths, self.width) * self.width).sum())
        if not self.rows:
            empty = empty_frame(columns)
            empty.attrs["samples_unused"] = unused
            return empty
        owners, number, missing, short = (
            np.concatenate([part[k] for part in self.rows]) for k in range(4)
        )
        names = user_sort_key({s.name for s in sequences})
        user_rank = {name: i for i, name in enumerate(names)}
        order = np.lexsort(
            (
                number,
                np.array([s.recording for s in owners], dtype=np.int64),
                np.array([s.rank for s in owners], dtype=np.int64),
                np.array([user_rank[s.name] for s in owners], dtype=np.int64),
            )
        )
        owners = owners[order]
        values = self._sorted_features(order)
        user_dtype, label_dtype = self.dtypes or (np.dtype(object), np.dtype(object))
        users = np.array([s.user for s in owners], dtype=object).astype(user_dtype)
        labels = np.array([s.label for s in owners], dtype=object).astype(label_dtype)
        reasons = {REASON_MISSING: missing[order], REASON_SHORT: short[order]}
        with np.errstate(over="ignore", invalid="ignore"):
            table = finish_frame(users, labels, values, columns, reasons, self.entry, "windows")
        table.attrs["samples_unused"] = unused
        if unused:
            log.info(
                "%s: %d samples after the last complete window of a sequence left out",
                self.entry.name,
                unused,
            )
        return table

    def _sorted_features(self, order: np.ndarray, block_rows: int = 16_384) -> np.ndarray:
        """The features from the spool, row ``order[i]`` (in the order cut) as row ``i``.

        Read back in the order written, a block at a time, each row straight
        to its sorted place: the features are held once.
        """
        where = np.empty_like(order)
        where[order] = np.arange(order.size)
        values = np.empty((order.size, self.n_features))
        row_bytes = 8 * self.n_features
        spooled = self.spool.reader()
        for first in range(0, order.size, block_rows):
            n = min(block_rows, order.size - first)
            block = spooled.read(n * row_bytes)
            if len(block) != n * row_bytes:
                message = (
                    f"{self.spool.what}: {len(block):,} bytes read back from "
                    f"{self.spool.parent}, {n * row_bytes:,} were written"
                )
                raise StorageError(message)
            values[where[first : first + n]] = np.frombuffer(block, dtype=np.float64).reshape(
                n, self.n_features
            )
        return values


__all__ = ["StudyWindows"]
