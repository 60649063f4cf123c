"""The per-window maths: the study's features of one window (or segment) of samples.

What the recipes of :mod:`mudata.building.features` compute for each window, and
nothing of how windows are cut. The 16 features of a tri-axial sensor, in
column order, with the sensor's suffix (``""`` for the first, ``"2"`` for the
second, ...)::

    meanX meanY meanZ sdX sdY sdZ maxX maxY maxZ corXY corXZ corYZ
    meanMagnitude sdMagnitude auc meanDif

``sd`` uses ``recipe.sd_ddof``; ``auc`` is the sum of the magnitude
(``"sum"``) or its trapezoidal area over the sample index (``"trapezoid"``);
``meanDif`` is the sum of the successive differences of the magnitude
(``"net"``) or their mean (``"mean"``).

A sensor that is not tri-axial (``features = "per-channel"``) gives five
features of each channel ``c`` on its own, named after the channel::

    mean_c sd_c max_c auc_c meanDif_c

One set of formulas serves two layouts of the samples: segments of any
length in flat arrays with a segment id per sample (``np.bincount`` /
``np.maximum.reduceat``; ``study-segment``), and windows of one length as the
columns of (window, n_windows) arrays (``study-window``). Both sum in sample
order, so they give the same bits, and neither has a Python loop per window
or per segment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np

from mudata.errors import RegistryError
from mudata.records.entry import DatasetEntry, Recipe, Sensor

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


class FeatureOptions(TypedDict):
    """The recipe's choices the formulas take: ``sd_ddof``, ``auc`` and ``meandif``."""

    sd_ddof: int
    auc: str
    meandif: str


def feature_options(recipe: Recipe) -> FeatureOptions:
    """The keywords :func:`sensor_features` and :func:`channel_features` take from ``recipe``."""
    return {"sd_ddof": recipe.sd_ddof, "auc": recipe.auc, "meandif": recipe.meandif}


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


class Ragged:
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


class Regular:
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


Layout = Ragged | Regular


def _mean_max(
    values: np.ndarray, layout: Layout
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


def tri_axial_features(
    axes: list[np.ndarray], layout: Layout, *, sd_ddof: int, auc: str, meandif: str
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


def _magnitude_path(magnitude: np.ndarray, layout: Layout, *, auc: str, meandif: str) -> np.ndarray:
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
    channels: list[np.ndarray], layout: Layout, *, sd_ddof: int, auc: str, meandif: str
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
    layout = Ragged(np.asarray(counts, dtype=np.int64))
    columns = [values[:, i] for i in range(values.shape[1])]
    return _channel_features(columns, layout, sd_ddof=sd_ddof, auc=auc, meandif=meandif)


def block_features(
    axes: list[np.ndarray],
    tri_axial: bool,
    layout: Layout,
    *,
    sd_ddof: int,
    auc: str,
    meandif: str,
) -> np.ndarray:
    """One sensor's feature block: the 16 tri-axial features, or the per-channel ones."""
    compute = tri_axial_features if tri_axial else _channel_features
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
    layout = Ragged(np.asarray(counts, dtype=np.int64))
    axes = [xyz[:, axis] for axis in range(3)]
    return tri_axial_features(axes, layout, sd_ddof=sd_ddof, auc=auc, meandif=meandif)


def _first_differences(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.diff`` inside each segment: (values of shape (n - s, c), new counts)."""
    ids = np.repeat(np.arange(counts.shape[0]), counts)
    same = ids[1:] == ids[:-1]
    diffs = (values[1:] - values[:-1])[same]
    return diffs, np.maximum(counts - 1, 0)


def features_table(blocks: list[np.ndarray], counts: np.ndarray, entry: DatasetEntry) -> np.ndarray:
    """Features of every sensor block (each (n, arity)) side by side, in column order."""
    recipe = entry.recipe
    options = feature_options(recipe)
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


__all__ = [
    "CHANNEL_FEATURE_NAMES",
    "FEATURE_NAMES",
    "REASON_CONSTANT",
    "REASON_MISSING",
    "REASON_OVERFLOW",
    "REASON_SHORT",
    "FeatureOptions",
    "Ragged",
    "Regular",
    "block_features",
    "channel_columns",
    "channel_features",
    "feature_columns",
    "feature_options",
    "features_table",
    "sensor_columns",
    "sensor_features",
    "tri_axial_features",
]
