"""Feature recipes: raw samples (a :class:`SignalTable`) to one row per example.

Two recipes, named by ``entry.recipe.name`` (see ``docs/datasets.md``):

``study-window`` (HAR70+, OPPORTUNITY)
    For each user (ascending) and each kept class (registry order) -- and each
    recording, when the reader names recordings (a ``recording`` column) --, every sample
    of the class in file order is one sequence; it is smoothed with
    :func:`mudata.build.windowing.moving_average`, cut into windows of ``window``
    samples (last start dropped, :func:`mudata.build.windowing.window_count`) and
    each window gives 16 features per sensor.
``study-segment`` (Smartwatch Gestures)
    One row per segment (one file), 16 features per sensor; with
    ``second_sensor = "diff"`` the first differences of the first sensor are
    a further sensor.

The 16 features of a tri-axial sensor, in column order, with the sensor's
suffix (``""`` for the first, ``"2"`` for the second, ...)::

    meanX meanY meanZ sdX sdY sdZ maxX maxY maxZ corXY corXZ corYZ
    meanMagnitude sdMagnitude auc meanDif

``sd`` uses ``recipe.sd_ddof``; ``auc`` is the sum of the magnitude
(``"sum"``) or its trapezoidal area over the sample index (``"trapezoid"``);
``meanDif`` is the sum of the successive differences of the magnitude
(``"net"``) or their mean (``"mean"``).

A sensor that is not tri-axial (``features = "per-channel"``: 1, 2, 4 or any
number of channels, such as 8 EMG electrodes or a temperature) gives five
features of each channel ``c`` on its own, named after the channel::

    mean_c sd_c max_c auc_c meanDif_c

They are the study's features of a one-axis sensor: ``mean``, ``sd`` and
``max`` are the per-axis ones, and ``auc`` and ``meanDif`` the magnitude's,
the magnitude of one axis being ``|c|`` (with the recipe's ``auc`` and
``meanDif`` variants). The cross-axis correlations have no one-axis form, and
``meanMagnitude``/``sdMagnitude`` would only restate ``auc``. A sensor's
columns go feature by feature, its channels in order within each (as
``meanX meanY meanZ``); tri-axial sensors are numbered among themselves, so
that their columns keep the names they had (``meanX``, then ``meanX2``).

One set of formulas serves two layouts of the samples: segments of any
length in flat arrays with a segment id per sample (``np.bincount`` /
``np.maximum.reduceat``; ``study-segment``), and windows of one length as the
columns of (window, n_windows) arrays (``study-window``). Both sum in sample
order, so they give the same bits, and neither has a Python loop per window
or per segment. Rows with any undefined feature are dropped and the
number dropped per reason is logged and stored in ``frame.attrs["dropped"]``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from mudata.build.windowing import running_means, window_count
from mudata.errors import ParseError, RegistryError, StorageError
from mudata.readers.base import SignalTable
from mudata.readers.spool import Spool
from mudata.records.classes import match_classes, user_names, user_sort_key
from mudata.records.entry import DatasetEntry, Recipe, Sensor

log = logging.getLogger(__name__)

FEATURE_NAMES: tuple[str, ...] = (
    "meanX", "meanY", "meanZ", "sdX", "sdY", "sdZ", "maxX", "maxY", "maxZ",
    "corXY", "corXZ", "corYZ", "meanMagnitude", "sdMagnitude", "auc", "meanDif",
)  # fmt: skip

#: The features of each channel of a ``per-channel`` sensor, in column order.
CHANNEL_FEATURE_NAMES: tuple[str, ...] = ("mean", "sd", "max", "auc", "meanDif")

REASON_MISSING = "missing value"
REASON_SHORT = "sequence shorter than the moving-average span needs"
REASON_CONSTANT = "constant channel (undefined correlation) or too few samples"
REASON_OVERFLOW = "samples too large for float64 (a sum or square overflows)"


def feature_columns(n_sensors: int) -> list[str]:
    """Feature column names for ``n_sensors`` tri-axial sensors, in table order."""
    suffixes = [""] + [str(i) for i in range(2, n_sensors + 1)]
    return [f"{name}{suffix}" for suffix in suffixes for name in FEATURE_NAMES]


def channel_columns(channels: Sequence[str]) -> list[str]:
    """Feature column names of a ``per-channel`` sensor of ``channels``, in table order."""
    return [f"{name}_{channel}" for name in CHANNEL_FEATURE_NAMES for channel in channels]


def sensor_columns(sensors: Sequence[Sensor], second_sensor: str | None = None) -> list[str]:
    """Feature column names of an entry's ``sensors``, in table order.

    Tri-axial sensors (and the differences sensor of ``second_sensor = "diff"``,
    which comes last) are numbered among themselves: :func:`feature_columns`'s
    names. A per-channel sensor's columns are :func:`channel_columns`.
    """
    columns: list[str] = []
    tri_axial = 0

    def numbered() -> list[str]:
        suffix = "" if tri_axial == 1 else str(tri_axial)
        return [f"{name}{suffix}" for name in FEATURE_NAMES]

    for sensor in sensors:
        if sensor.tri_axial:
            tri_axial += 1
            columns += numbered()
        else:
            columns += channel_columns(sensor.channels)
    if second_sensor == "diff":
        tri_axial += 1
        columns += numbered()
    return columns


# --------------------------------------------------------------------------
# Per-segment statistics: two layouts of the samples, one set of formulas
# --------------------------------------------------------------------------


class _Ragged:
    """Segments of any lengths, one after the other in flat arrays of shape (n,).

    Sums are ``np.bincount`` (sequential, in sample order), maxima
    ``np.maximum.reduceat``; empty segments give NaN features.
    """

    def __init__(self, counts: np.ndarray) -> None:
        self.counts = counts
        self.n = counts.shape[0]
        self.ids = np.repeat(np.arange(self.n), counts)
        self.starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        # Successive pairs (i, i+1) inside a segment: drop pairs across a boundary.
        self._same = self.ids[1:] == self.ids[:-1]
        self._pair_ids = self.ids[1:][self._same]

    def sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.ids, weights=values, minlength=self.n)

    def pair_sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self._pair_ids, weights=values, minlength=self.n)

    def _reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        out = np.full(self.n, np.nan)
        nonempty = self.counts > 0
        if values.size:
            # reduceat needs strictly valid start indices: use the non-empty ones only.
            out[nonempty] = ufunc.reduceat(values, self.starts[nonempty])
        return out

    def max(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.maximum, values)

    def min(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.minimum, values)

    def spread(self, per_segment: np.ndarray) -> np.ndarray:
        return per_segment[self.ids]

    def pairs(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return values[1:][self._same], values[:-1][self._same]


class _Regular:
    """Segments of one length ``width``: column ``k`` of (width, n) arrays is segment ``k``.

    Sums add the rows one after the other, from 0: the same sequential order,
    hence the same bits, as ``np.bincount`` over the flat samples, with one
    vectorised step per row instead of a pass over an id per sample.
    """

    def __init__(self, width: int, n: int) -> None:
        self.counts = np.full(n, width, dtype=np.int64)
        self.n = n

    def sum(self, values: np.ndarray) -> np.ndarray:
        total = np.zeros(self.n)
        for row in values:
            total += row
        return total

    pair_sum = sum

    def max(self, values: np.ndarray) -> np.ndarray:
        return values.max(axis=0) if values.shape[0] else np.full(self.n, np.nan)

    def min(self, values: np.ndarray) -> np.ndarray:
        return values.min(axis=0) if values.shape[0] else np.full(self.n, np.nan)

    def spread(self, per_segment: np.ndarray) -> np.ndarray:
        return per_segment[np.newaxis, :]

    def pairs(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return values[1:], values[:-1]


_Layout = _Ragged | _Regular


def _mean_max(
    values: np.ndarray, layout: _Layout
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per segment: mean, maximum, whether constant, and the sum of squared deviations.

    The mean is refined by one correction pass (as R's ``mean``); a constant
    segment's mean is its value, exactly.
    """
    counts = layout.counts
    mean = layout.sum(values) / counts
    mean += layout.sum(values - layout.spread(mean)) / counts
    top = layout.max(values)
    constant = top == layout.min(values)
    mean = np.where(constant, top, mean)
    centred = values - layout.spread(mean)
    return mean, top, constant, centred


def _sensor_features(
    axes: list[np.ndarray], layout: _Layout, *, sd_ddof: int, auc: str, meandif: str
) -> np.ndarray:
    """:func:`sensor_features` of the three ``axes``, laid out as ``layout`` says."""
    counts = layout.counts
    out = np.full((layout.n, 16), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        centred = []
        sumsq = np.empty((layout.n, 3))
        constant = np.empty((layout.n, 3), dtype=bool)
        for axis, column in enumerate(axes):
            mean, top, constant[:, axis], deviations = _mean_max(column, layout)
            centred.append(deviations)
            sumsq[:, axis] = layout.sum(deviations**2)
            out[:, axis] = mean
            out[:, 3 + axis] = np.sqrt(sumsq[:, axis] / (counts - sd_ddof))
            out[:, 3 + axis][constant[:, axis] & (counts > sd_ddof)] = 0.0
            out[:, 6 + axis] = top
        out[:, 3:6][counts <= sd_ddof] = np.nan

        # Pearson correlation from centred sums, in np.corrcoef's order of operations.
        dof = np.maximum(counts - 1, 1)
        for k, (a, b) in enumerate(((0, 1), (0, 2), (1, 2))):
            cross = layout.sum(centred[a] * centred[b]) / dof
            r = cross / np.sqrt(sumsq[:, a] / dof) / np.sqrt(sumsq[:, b] / dof)
            r = np.clip(r, -1.0, 1.0)
            r[constant[:, a] | constant[:, b] | (counts < 2)] = np.nan
            out[:, 9 + k] = r
        del centred

        x, y, z = axes
        magnitude = np.sqrt(x**2 + y**2 + z**2)
        m_mean, _, m_constant, m_centred = _mean_max(magnitude, layout)
        out[:, 12] = m_mean
        out[:, 13] = np.sqrt(layout.sum(m_centred**2) / (counts - sd_ddof))
        out[:, 13][m_constant & (counts > sd_ddof)] = 0.0
        out[:, 13][counts <= sd_ddof] = np.nan
        out[:, 14:] = _magnitude_path(magnitude, layout, auc=auc, meandif=meandif)
    return out


def _magnitude_path(
    magnitude: np.ndarray, layout: _Layout, *, auc: str, meandif: str
) -> np.ndarray:
    """``auc`` and ``meanDif`` per segment: shape (s, 2)."""
    counts = layout.counts
    out = np.empty((layout.n, 2))
    following, preceding = layout.pairs(magnitude)
    if auc == "sum":
        out[:, 0] = layout.sum(magnitude)
    elif auc == "trapezoid":
        # np.trapezoid(m) with dx = 1: sum of (m[i+1] + m[i]) / 2.
        out[:, 0] = layout.pair_sum((following + preceding) / 2.0)
    else:
        message = f"unknown auc variant '{auc}'; expected 'sum' or 'trapezoid'"
        raise RegistryError(message)
    out[:, 0][counts == 0] = np.nan
    net = layout.pair_sum(following - preceding)
    if meandif == "net":
        out[:, 1] = np.where(counts > 0, net, np.nan)
    elif meandif == "mean":
        n_pairs = np.maximum(counts - 1, 0)
        out[:, 1] = np.where(n_pairs > 0, net / n_pairs, np.nan)
    else:
        message = f"unknown meanDif variant '{meandif}'; expected 'net' or 'mean'"
        raise RegistryError(message)
    return out


def _channel_features(
    channels: list[np.ndarray], layout: _Layout, *, sd_ddof: int, auc: str, meandif: str
) -> np.ndarray:
    """:func:`channel_features` of each of ``channels``, laid out as ``layout`` says."""
    counts = layout.counts
    k = len(channels)
    out = np.full((layout.n, 5 * k), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        for i, column in enumerate(channels):
            # The per-axis features of the tri-axial code, with its rules for a
            # constant channel and too few samples.
            mean, top, constant, deviations = _mean_max(column, layout)
            out[:, i] = mean
            sd = np.sqrt(layout.sum(deviations**2) / (counts - sd_ddof))
            sd[constant & (counts > sd_ddof)] = 0.0
            sd[counts <= sd_ddof] = np.nan
            out[:, k + i] = sd
            out[:, 2 * k + i] = top
            # The magnitude of one axis is its absolute value.
            path = _magnitude_path(np.abs(column), layout, auc=auc, meandif=meandif)
            out[:, 3 * k + i] = path[:, 0]
            out[:, 4 * k + i] = path[:, 1]
    return out


def channel_features(
    values: np.ndarray,
    counts: np.ndarray,
    *,
    sd_ddof: int = 1,
    auc: str = "sum",
    meandif: str = "net",
) -> np.ndarray:
    """The per-channel features of a sensor of any arity, for consecutive segments.

    Parameters
    ----------
    values : ndarray, shape (n, k)
        Samples of all segments, one after the other; one column per channel.
    counts : ndarray of int, shape (s,)
        Length of each segment (``counts.sum() == n``); 0 gives NaN features.
    sd_ddof, auc, meandif
        As for :func:`sensor_features`; ``auc`` and ``meanDif`` are taken over
        ``|c|``, the magnitude of a one-axis sensor.

    Returns
    -------
    ndarray, shape (s, 5 * k)
        :data:`CHANNEL_FEATURE_NAMES` in turn, each for the ``k`` channels in
        order (:func:`channel_columns`). A constant channel has ``sd`` 0, not
        an undefined feature: no correlation is taken.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, np.newaxis]
    layout = _Ragged(np.asarray(counts, dtype=np.int64))
    columns = [values[:, i] for i in range(values.shape[1])]
    return _channel_features(columns, layout, sd_ddof=sd_ddof, auc=auc, meandif=meandif)


def _features_of(
    axes: list[np.ndarray],
    tri_axial: bool,
    layout: _Layout,
    *,
    sd_ddof: int,
    auc: str,
    meandif: str,
) -> np.ndarray:
    """One sensor's feature block: the 16 tri-axial features, or the per-channel ones."""
    compute = _sensor_features if tri_axial else _channel_features
    return compute(axes, layout, sd_ddof=sd_ddof, auc=auc, meandif=meandif)


def sensor_features(
    xyz: np.ndarray,
    counts: np.ndarray,
    *,
    sd_ddof: int = 1,
    auc: str = "sum",
    meandif: str = "net",
) -> np.ndarray:
    """The 16 features of a tri-axial sensor for consecutive segments.

    Parameters
    ----------
    xyz : ndarray, shape (n, 3)
        Samples of all segments, one after the other.
    counts : ndarray of int, shape (s,)
        Length of each segment (``counts.sum() == n``); 0 is allowed and gives
        NaN features.
    sd_ddof : {0, 1}
        Delta degrees of freedom of the standard deviations.
    auc : {"sum", "trapezoid"}
        Sum of the magnitude, or its trapezoidal area over the sample index.
    meandif : {"net", "mean"}
        Sum of the successive differences of the magnitude, or their mean.

    Returns
    -------
    ndarray, shape (s, 16)
        Columns in :data:`FEATURE_NAMES` order. Undefined values are NaN: a
        correlation with a constant channel (max == min, detected exactly so
        that rounding in the mean cannot fake a correlation), any value computed
        from a NaN sample, an SD from fewer than ``sd_ddof + 1`` samples.
    """
    xyz = np.asarray(xyz, dtype=np.float64)
    layout = _Ragged(np.asarray(counts, dtype=np.int64))
    axes = [xyz[:, axis] for axis in range(3)]
    return _sensor_features(axes, layout, sd_ddof=sd_ddof, auc=auc, meandif=meandif)


def _first_differences(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.diff`` inside each segment: (values of shape (n - s, c), new counts)."""
    ids = np.repeat(np.arange(counts.shape[0]), counts)
    same = ids[1:] == ids[:-1]
    diffs = (values[1:] - values[:-1])[same]
    return diffs, np.maximum(counts - 1, 0)


def _features_table(
    blocks: list[np.ndarray], counts: np.ndarray, entry: DatasetEntry
) -> np.ndarray:
    """Features of every sensor block (each (n, arity)) side by side, in column order."""
    recipe = entry.recipe
    options = {"sd_ddof": recipe.sd_ddof, "auc": recipe.auc, "meandif": recipe.meandif}
    parts = [
        sensor_features(block, counts, **options)
        if sensor.tri_axial
        else channel_features(block, counts, **options)
        for block, sensor in zip(blocks, entry.sensors, strict=True)
    ]
    if recipe.second_sensor == "diff":
        diffs, diff_counts = _first_differences(blocks[0], counts)
        parts.append(sensor_features(diffs, diff_counts, **options))
    return np.hstack(parts)


# --------------------------------------------------------------------------
# Input checks shared by both recipes
# --------------------------------------------------------------------------


def _sensor_channels(signals: SignalTable, entry: DatasetEntry) -> list[list[str]]:
    channels = [list(s.channels) for s in entry.sensors]
    if entry.recipe.second_sensor == "diff" and not (entry.sensors and entry.sensors[0].tri_axial):
        message = (
            f"dataset '{entry.name}': recipe.second_sensor = 'diff' takes the differences "
            f"of a tri-axial first sensor; the first sensor is "
            f"{entry.sensors[0].features if entry.sensors else '(none)'}"
        )
        raise RegistryError(message)
    found = list(signals.frame.columns)
    missing = [c for group in channels for c in group if c not in found]
    if not channels or missing:
        message = (
            f"dataset '{entry.name}': the signal table lacks the sensor channels "
            f"{missing or '(no sensors in the entry)'} named in the registry; columns found: {found}"
        )
        raise RegistryError(message)
    return channels


def _class_rank(labels: pd.Series, entry: DatasetEntry) -> np.ndarray:
    """Position of each row's class in ``entry.classes``; -1 for classes not kept.

    Codes are matched by the one rule of :mod:`mudata.records.classes`, once per
    distinct label (of the column's own type), then spread over the rows.
    """
    codes, uniques = pd.factorize(labels, use_na_sentinel=False)
    distinct = pd.Series(uniques, dtype=labels.dtype)
    return match_classes(distinct, entry, check_seen=False).rank[codes]


def _user_codes(users: pd.Series | np.ndarray) -> np.ndarray:
    """Integer codes of user ids in the order of :func:`mudata.records.classes.user_sort_key`."""
    # Name and rank the distinct ids only, then spread the ranks over the rows.
    codes, uniques = pd.factorize(pd.Series(users), use_na_sentinel=False)
    names = user_names(uniques)
    order = {name: i for i, name in enumerate(user_sort_key(pd.unique(names)))}
    ranks = np.array([order[n] for n in names], dtype=np.int64)
    return ranks[codes] if len(codes) else np.zeros(0, np.int64)


def _empty_frame(columns: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(
        {"userid": pd.Series([], dtype="int64"), "label": pd.Series([], dtype="int64")}
    )
    for column in columns:
        frame[column] = pd.Series([], dtype="float64")
    return frame


def _finish(
    userid: np.ndarray,
    labels: np.ndarray,
    values: np.ndarray,
    columns: list[str],
    reasons: dict[str, np.ndarray],
    entry: DatasetEntry,
    what: str,
) -> pd.DataFrame:
    """Assemble the output, dropping rows with an undefined feature (logged)."""
    undefined = np.isnan(values).any(axis=1)
    dropped: dict[str, int] = {}
    explained = np.zeros_like(undefined)
    for reason, flags in reasons.items():
        hit = undefined & flags & ~explained
        dropped[reason] = int(hit.sum())
        explained |= hit
    # A feature that is infinite, from finite samples, comes from a sum or a square
    # past float64's range (samples near 1e154 or more), not from a constant channel.
    overflow = undefined & ~explained & np.isinf(values).any(axis=1)
    dropped[REASON_OVERFLOW] = int(overflow.sum())
    dropped[REASON_CONSTANT] = int((undefined & ~explained & ~overflow).sum())
    dropped = {k: v for k, v in dropped.items() if v}
    if dropped:
        detail = ", ".join(f"{n} for {reason}" for reason, n in dropped.items())
        log.info(
            "%s: dropped %d of %d %s with an undefined feature: %s",
            entry.name,
            int(undefined.sum()),
            len(undefined),
            what,
            detail,
        )
    keep = ~undefined
    # The features are one block, never copied: the rows kept are moved up in
    # place; the id columns are put before it without copying it.
    frame = pd.DataFrame(_compact(values, keep), columns=columns, copy=False)
    frame.insert(0, "label", labels[keep])
    frame.insert(0, "userid", userid[keep])
    frame.attrs["dropped"] = dropped
    return frame


def _compact(values: np.ndarray, keep: np.ndarray, block: int = 8192) -> np.ndarray:
    """The rows of ``values`` where ``keep`` holds, moved up in place; a view of them.

    ``values[keep]`` would be a second copy of every feature; here a block of
    rows at a time is copied. A row only ever moves up, so a block is read
    before any later row is written over.

    Parameters
    ----------
    values : ndarray, shape (n, k)
        Overwritten.
    keep : ndarray of bool, shape (n,)

    Returns
    -------
    ndarray, shape (keep.sum(), k)
        The first rows of ``values``.
    """
    if keep.all():
        return values
    written = 0
    for first in range(0, keep.size, block):
        rows = values[first : first + block][keep[first : first + block]]
        values[written : written + rows.shape[0]] = rows
        written += rows.shape[0]
    return values[:written]


# --------------------------------------------------------------------------
# Recipes
# --------------------------------------------------------------------------


def _combined_key(keys: list[np.ndarray]) -> np.ndarray | None:
    """One int64 key ordered as ``keys`` are, first key major; None if it might overflow."""
    key = np.zeros(keys[0].size, dtype=np.int64)
    size = 1
    for part in keys:
        low = int(part.min()) if part.size else 0
        radix = int(part.max()) - low + 1 if part.size else 1
        size *= radix
        if size >= 2**62:
            return None
        key = key * radix + (part - low)
    return key


def _sequences(frame: pd.DataFrame, entry: DatasetEntry) -> tuple[np.ndarray, np.ndarray]:
    """Rows of kept classes grouped into the recipe's sequences, and each sequence's bounds.

    A sequence is one (user, class, recording): users ascending, classes in the
    entry's order, recordings in file order, file order kept inside each.
    Without a ``recording`` column the whole table is one recording.
    """
    rank = _class_rank(frame["label"], entry)
    kept = np.flatnonzero(rank >= 0)
    keys = [_user_codes(frame["userid"])[kept], rank[kept]]
    if "recording" in frame.columns:
        # A reader that knows recordings names them: a window never spans two.
        keys.append(frame["recording"].to_numpy(dtype=np.int64)[kept])
    key = _combined_key(keys)
    if key is not None:
        # One stable sort of one key (fast on the long runs of real recordings).
        order = np.argsort(key, kind="stable")
        keys = [key[order]]
    else:
        order = np.lexsort(keys[::-1])
        keys = [part[order] for part in keys]
    order = kept[order]
    change = np.zeros(max(order.size - 1, 0), dtype=bool)
    for part in keys:
        change |= part[1:] != part[:-1]
    bounds = np.concatenate([[0], np.flatnonzero(change) + 1, [order.size]])
    return order, bounds


def _window_index(
    bounds: np.ndarray, counts: np.ndarray, width: int, span: int
) -> tuple[np.ndarray, np.ndarray]:
    """Where each windowed sample's smoothed value is among the running means.

    The running means (:func:`mudata.build.windowing.running_means`) are taken over
    all sequences laid end to end; position ``i`` (0-based) of the sequence
    starting at ``b`` takes mean ``b + i - span + 1`` (backward) once
    ``i >= span - 1``, else mean ``b + i`` (forward), which is undefined
    (``short``) when it would run past the end of the sequence.

    Returns
    -------
    index, short : ndarray, shape (width, n_windows)
        Column ``k`` holds the samples of window ``k``, in sequence order.
    """
    lengths = np.diff(bounds)
    used = counts * width
    sequence = np.repeat(np.arange(lengths.size), used)
    position = np.arange(int(used.sum())) - np.repeat(np.cumsum(used) - used, used)
    backward = position >= span - 1
    index = bounds[:-1][sequence] + position - np.where(backward, span - 1, 0)
    short = ~backward & (position + span - 1 >= lengths[sequence])
    return (
        np.ascontiguousarray(index.reshape(-1, width).T),
        np.ascontiguousarray(short.reshape(-1, width).T),
    )


def _gather(means: np.ndarray, index: np.ndarray, short: np.ndarray) -> np.ndarray:
    """``means[index]`` with NaN where ``short``: one window per column."""
    if means.size == 0:  # every sequence is shorter than the span
        return np.full(index.shape, np.nan)
    values = np.take(means, index, mode="clip")
    values[short] = np.nan
    return values


def _missing_flags(
    ordered_nan: np.ndarray | None, index: np.ndarray, short: np.ndarray, span: int
) -> np.ndarray:
    """Per window: whether a smoothed sample of it averages over a missing raw sample."""
    n_windows = index.shape[1]
    if ordered_nan is None or ordered_nan.size < span:
        return np.zeros(n_windows, dtype=bool)
    reached = np.concatenate([[0], np.cumsum(ordered_nan, dtype=np.int64)])
    in_mean = reached[span:] - reached[:-span]  # missing samples in each running mean
    touched = np.take(in_mean, index, mode="clip") > 0
    touched[short] = False
    return touched.any(axis=0)


def _window_features(
    sensors: Iterable[Iterable[np.ndarray]],
    tri_axial: Sequence[bool],
    recipe: Recipe,
    index: np.ndarray,
    short: np.ndarray,
    samples: list[np.ndarray] | None = None,
) -> tuple[list[np.ndarray], np.ndarray | None]:
    """The features of each sensor's windows, and where a sample is missing.

    Parameters
    ----------
    sensors : iterable of iterable of ndarray
        Each sensor's axes, every sample of the sequences laid end to end;
        consumed once, an axis at a time.
    tri_axial : sequence of bool
        Per sensor: the 16 tri-axial features, or the per-channel ones.
    recipe : Recipe
        Its ``smoothing`` span, ``second_sensor`` and feature options.
    index, short : ndarray, shape (window, n_windows)
        From :func:`_window_index`: the sample behind each window position, and
        whether its smoothing runs short of the sequence.
    samples : list, optional
        When given, each channel's smoothed windows, the very values its
        features are computed from, are appended to it as float32 arrays of
        shape (window, n_windows), in channel order.

    Returns
    -------
    parts : list of ndarray
        One (n_windows, 16) block per tri-axial sensor, (n_windows, 5 * arity)
        per other sensor; the differences sensor of ``second_sensor = "diff"``
        comes last.
    nan : ndarray of bool or None
        Where any axis is NaN, over the laid samples (None when none is).
    """
    width, n_windows = index.shape
    span = int(recipe.smoothing)
    options = {"sd_ddof": recipe.sd_ddof, "auc": recipe.auc, "meandif": recipe.meandif}
    any_nan: np.ndarray | None = None
    parts, differences = [], []
    for number, (group, triple) in enumerate(zip(sensors, tri_axial, strict=True)):
        axes = []
        for ordered in group:
            nan = np.isnan(ordered)
            if nan.any():
                any_nan = nan if any_nan is None else any_nan | nan
            axes.append(_gather(running_means(ordered, span), index, short))
            if samples is not None:
                samples.append(axes[-1].astype(np.float32))
        parts.append(_features_of(axes, triple, _Regular(width, n_windows), **options))
        if number == 0 and recipe.second_sensor == "diff":
            diffs = [a[1:] - a[:-1] for a in axes]
            differences.append(_sensor_features(diffs, _Regular(width - 1, n_windows), **options))
    return parts + differences, any_nan


def study_window(signals: SignalTable, entry: DatasetEntry) -> pd.DataFrame:
    """The ``study-window`` recipe; see the module docstring and ``docs/datasets.md``.

    Each channel is gathered once into sequence order, smoothed over all
    sequences at once and gathered once more into a (window, n_windows)
    array, on which every feature is one vectorised pass: no Python loop per
    window or per sequence, no copy of the whole table.
    """
    return _study_window(signals, entry, None)[0]


def study_window_samples(
    signals: SignalTable, entry: DatasetEntry
) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`study_window`'s rows and, beside them, the samples of each window.

    Parameters
    ----------
    signals : SignalTable
        As for :func:`featurize`.
    entry : DatasetEntry
        With recipe ``study-window``.

    Returns
    -------
    table : DataFrame
        What :func:`featurize` returns for ``signals``, bit for bit.
    windows : ndarray of float32, shape (len(table), window, n_channels)
        ``windows[i]`` holds the samples row ``i``'s features are computed
        from: the recipe's moving average of each channel (the channels of
        ``entry.sensors``, in order) over the window's positions. The rows
        dropped for an undefined feature are dropped here too.
    """
    if entry.recipe.name != "study-window":
        message = (
            f"dataset '{entry.name}': windows of samples need recipe 'study-window', "
            f"not '{entry.recipe.name}'"
        )
        raise RegistryError(message)
    samples: list[np.ndarray] = []
    with np.errstate(over="ignore", invalid="ignore"):
        table, keep = _study_window(signals, entry, samples)
    n_channels = sum(len(s.channels) for s in entry.sensors)
    if keep is None:
        return table, np.zeros((0, int(entry.recipe.window or 0), n_channels), np.float32)
    # (window, n_windows) per channel -> (n_windows, window, channel), kept rows only.
    windows = np.stack([s[:, keep] for s in samples], axis=-1).transpose(1, 0, 2)
    return table, np.ascontiguousarray(windows)


def _study_window(
    signals: SignalTable, entry: DatasetEntry, samples: list[np.ndarray] | None
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """:func:`study_window`, and which windows it kept (None: no window was cut)."""
    recipe = entry.recipe
    if recipe.window is None:
        message = f"dataset '{entry.name}': recipe 'study-window' needs 'window'"
        raise RegistryError(message)
    width = int(recipe.window)
    span = int(recipe.smoothing)
    channels = _sensor_channels(signals, entry)
    columns = sensor_columns(entry.sensors, recipe.second_sensor)
    frame = signals.frame

    order, bounds = _sequences(frame, entry)
    if order.size == 0:
        return _empty_frame(columns), None
    counts = window_count(np.diff(bounds), width)
    unused = int((np.diff(bounds) - counts * width).sum())
    n_windows = int(counts.sum())
    if n_windows == 0:
        empty = _empty_frame(columns)
        empty.attrs["samples_unused"] = unused
        return empty, None
    index, short = _window_index(bounds, counts, width, span)

    parts, ordered_nan = _window_features(
        # Generators: one channel's reordered copy is alive at a time, as before.
        ((frame[c].to_numpy(dtype=np.float64)[order] for c in group) for group in channels),
        [s.tri_axial for s in entry.sensors],
        recipe,
        index,
        short,
        samples,
    )

    first = np.repeat(order[bounds[:-1]], counts)
    reasons = {
        REASON_MISSING: _missing_flags(ordered_nan, index, short, span),
        REASON_SHORT: short.any(axis=0),
    }
    users = frame["userid"].to_numpy()[first]
    labels = frame["label"].to_numpy()[first]
    values = np.hstack(parts)
    # _finish keeps the rows without an undefined feature (and overwrites values).
    keep = ~np.isnan(values).any(axis=1)
    table = _finish(users, labels, values, columns, reasons, entry, "windows")
    table.attrs["samples_unused"] = unused
    if unused:
        log.info(
            "%s: %d samples after the last complete window of a sequence left out",
            entry.name,
            unused,
        )
    return table, keep


def study_segment(signals: SignalTable, entry: DatasetEntry) -> pd.DataFrame:
    """The ``study-segment`` recipe: one feature row per segment, in table order."""
    recipe = entry.recipe
    channels = _sensor_channels(signals, entry)
    columns = sensor_columns(entry.sensors, recipe.second_sensor)
    frame = signals.frame
    rank = _class_rank(frame["label"], entry)
    keep = rank >= 0
    segment = frame["segment"].to_numpy()[keep]
    if segment.size == 0:
        return _empty_frame(columns)
    starts = np.concatenate([[0], np.flatnonzero(segment[1:] != segment[:-1]) + 1])
    if starts.size != pd.unique(segment).size:
        message = (
            f"dataset '{entry.name}': segment ids must label contiguous runs of rows, "
            f"but {starts.size} runs carry only {pd.unique(segment).size} distinct ids"
        )
        raise ParseError(message)
    counts = np.diff(np.concatenate([starts, [segment.size]]))
    raw = frame.loc[keep, [c for group in channels for c in group]].to_numpy(dtype=np.float64)
    edges = np.cumsum([0, *(len(group) for group in channels)])
    blocks = [raw[:, lo:hi] for lo, hi in itertools.pairwise(edges)]
    values = _features_table(blocks, counts, entry)
    users = frame["userid"].to_numpy()[keep][starts]
    labels = frame["label"].to_numpy()[keep][starts]
    segment_missing = (
        np.bincount(
            np.repeat(np.arange(counts.size), counts),
            weights=np.isnan(raw).any(axis=1),
            minlength=counts.size,
        )
        > 0
    )
    return _finish(
        users, labels, values, columns, {REASON_MISSING: segment_missing}, entry, "segments"
    )


RECIPES = {"study-window": study_window, "study-segment": study_segment}


def featurize(signals: SignalTable, entry: DatasetEntry) -> pd.DataFrame:
    """Turn raw samples into feature rows with the entry's recipe.

    Parameters
    ----------
    signals : SignalTable
        ``userid``, ``label`` (raw code), ``segment`` and the channels named by
        ``entry.sensors``, rows in recording order.
    entry : DatasetEntry
        Gives the recipe, the kept classes (and their order) and the sensors.

    Returns
    -------
    pandas.DataFrame
        ``userid``, ``label`` (raw code), then :func:`feature_columns`; rows of
        classes not kept are left out. ``frame.attrs["dropped"]`` maps each
        reason to the number of rows dropped for it.

    Raises
    ------
    RegistryError
        When the recipe is unknown or the sensors' channels are not in the table.
    """
    name = entry.recipe.name
    if name not in RECIPES:
        message = (
            f"dataset '{entry.name}': recipe '{name}' does not featurize signals; "
            f"signal recipes are {sorted(RECIPES)}"
        )
        raise RegistryError(message)
    # numpy's overflow and invalid-value warnings stay quiet: the windows they
    # concern get an undefined feature, are dropped and counted with their reason.
    with np.errstate(over="ignore", invalid="ignore"):
        return RECIPES[name](signals, entry)


# --------------------------------------------------------------------------
# study-window over chunks: the same rows, bit for bit, in bounded memory
# --------------------------------------------------------------------------


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

    parts, laid_nan = _window_features(
        ((np.ascontiguousarray(laid[:, column]) for column in group) for group in groups),
        tri_axial,
        recipe,
        index,
        short,
    )
    missing = _missing_flags(laid_nan, index, short, span)
    return np.hstack(parts), missing, short.any(axis=0)


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
            self.groups = _sensor_channels(chunk, self.entry)
            # A pandas text dtype is not numpy's: its values go as objects, as the
            # whole table's .to_numpy() gives them.
            self.dtypes = tuple(  # type: ignore[assignment]
                d if isinstance(d, np.dtype) else np.dtype(object)
                for d in (frame["userid"].dtype, frame["label"].dtype)
            )
        rank = _class_rank(frame["label"], self.entry)
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
        key = _combined_key(keys)
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
            self.spool.write(memoryview(np.ascontiguousarray(values, dtype=np.float64)).cast("B"))
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
            return _empty_frame(columns)
        sequences = list(self.sequences.values())
        with np.errstate(over="ignore", invalid="ignore"):
            self._cut(sequences, ended=True)
        lengths = np.array([s.length for s in sequences], dtype=np.int64)
        unused = int((lengths - window_count(lengths, self.width) * self.width).sum())
        if not self.rows:
            empty = _empty_frame(columns)
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
            table = _finish(users, labels, values, columns, reasons, self.entry, "windows")
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


__all__ = [
    "CHANNEL_FEATURE_NAMES",
    "FEATURE_NAMES",
    "REASON_CONSTANT",
    "REASON_MISSING",
    "REASON_OVERFLOW",
    "REASON_SHORT",
    "RECIPES",
    "StudyWindows",
    "_class_rank",
    "channel_columns",
    "channel_features",
    "feature_columns",
    "featurize",
    "sensor_columns",
    "sensor_features",
    "study_segment",
    "study_window",
    "study_window_samples",
]
