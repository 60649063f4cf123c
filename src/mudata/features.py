"""Feature recipes: raw samples (a :class:`SignalTable`) to one row per example.

Two recipes, named by ``entry.recipe.name`` (see ``docs/datasets.md``):

``study-window`` (HAR70+, OPPORTUNITY)
    For each user (ascending) and each kept class (registry order) -- and each
    recording, when the reader names recordings (a ``recording`` column) --, every sample
    of the class in file order is one sequence; it is smoothed with
    :func:`mudata.windowing.moving_average`, cut into windows of ``window``
    samples (last start dropped, :func:`mudata.windowing.window_count`) and
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

Everything is computed on flat arrays with a segment id per sample
(``np.bincount`` / ``np.maximum.reduceat``), so there is no Python loop per
window or per segment. Rows with any undefined feature are dropped and the
number dropped per reason is logged and stored in ``frame.attrs["dropped"]``.
"""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pandas as pd

from mudata.classes import match_classes, user_names, user_sort_key
from mudata.errors import ParseError, RegistryError
from mudata.readers.base import SignalTable
from mudata.registry import DatasetEntry
from mudata.windowing import moving_average, window_count

log = logging.getLogger(__name__)

FEATURE_NAMES: tuple[str, ...] = (
    "meanX", "meanY", "meanZ", "sdX", "sdY", "sdZ", "maxX", "maxY", "maxZ",
    "corXY", "corXZ", "corYZ", "meanMagnitude", "sdMagnitude", "auc", "meanDif",
)  # fmt: skip

REASON_MISSING = "missing value"
REASON_SHORT = "sequence shorter than the moving-average span needs"
REASON_CONSTANT = "constant channel (undefined correlation) or too few samples"


def feature_columns(n_sensors: int) -> list[str]:
    """Feature column names for ``n_sensors`` sensors, in table order."""
    suffixes = [""] + [str(i) for i in range(2, n_sensors + 1)]
    return [f"{name}{suffix}" for suffix in suffixes for name in FEATURE_NAMES]


# --------------------------------------------------------------------------
# Per-segment statistics over flat arrays
# --------------------------------------------------------------------------


def _segment_sum(values: np.ndarray, ids: np.ndarray, n_segments: int) -> np.ndarray:
    """Sum of ``values`` (shape (n,)) per segment id; empty segments give 0."""
    return np.bincount(ids, weights=values, minlength=n_segments)


def _segment_mean(values: np.ndarray, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean per segment, refined by one correction pass (as R's ``mean``)."""
    n_segments = counts.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = _segment_sum(values, ids, n_segments) / counts
        mean += _segment_sum(values - mean[ids], ids, n_segments) / counts
    return mean


def _segment_max(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Maximum per segment (NaN propagates); NaN for empty segments."""
    out = np.full(counts.shape[0], np.nan)
    nonempty = counts > 0
    if values.size:
        # reduceat needs strictly valid start indices: use the non-empty ones only.
        out[nonempty] = np.maximum.reduceat(values, starts[nonempty])
    return out


def _segment_min(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    out = np.full(counts.shape[0], np.nan)
    nonempty = counts > 0
    if values.size:
        out[nonempty] = np.minimum.reduceat(values, starts[nonempty])
    return out


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
    counts = np.asarray(counts, dtype=np.int64)
    n_segments = counts.shape[0]
    ids = np.repeat(np.arange(n_segments), counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    out = np.full((n_segments, 16), np.nan)

    with np.errstate(invalid="ignore", divide="ignore"):
        centred = np.empty_like(xyz)
        sumsq = np.empty((n_segments, 3))
        constant = np.empty((n_segments, 3), dtype=bool)
        for axis in range(3):
            column = xyz[:, axis]
            mean = _segment_mean(column, ids, counts)
            top = _segment_max(column, starts, counts)
            constant[:, axis] = top == _segment_min(column, starts, counts)
            # A constant channel's mean is its value, exactly.
            mean = np.where(constant[:, axis], top, mean)
            centred[:, axis] = column - mean[ids]
            sumsq[:, axis] = _segment_sum(centred[:, axis] ** 2, ids, n_segments)
            out[:, axis] = mean
            out[:, 3 + axis] = np.sqrt(sumsq[:, axis] / (counts - sd_ddof))
            out[:, 3 + axis][constant[:, axis] & (counts > sd_ddof)] = 0.0
            out[:, 6 + axis] = top
        out[:, 3:6][counts <= sd_ddof] = np.nan

        # Pearson correlation from centred sums, in np.corrcoef's order of operations.
        dof = np.maximum(counts - 1, 1)
        for k, (a, b) in enumerate(((0, 1), (0, 2), (1, 2))):
            cross = _segment_sum(centred[:, a] * centred[:, b], ids, n_segments) / dof
            r = cross / np.sqrt(sumsq[:, a] / dof) / np.sqrt(sumsq[:, b] / dof)
            r = np.clip(r, -1.0, 1.0)
            r[constant[:, a] | constant[:, b] | (counts < 2)] = np.nan
            out[:, 9 + k] = r

        magnitude = np.sqrt(xyz[:, 0] ** 2 + xyz[:, 1] ** 2 + xyz[:, 2] ** 2)
        m_mean = _segment_mean(magnitude, ids, counts)
        m_top = _segment_max(magnitude, starts, counts)
        m_constant = m_top == _segment_min(magnitude, starts, counts)
        m_mean = np.where(m_constant, m_top, m_mean)
        m_sumsq = _segment_sum((magnitude - m_mean[ids]) ** 2, ids, n_segments)
        out[:, 12] = m_mean
        out[:, 13] = np.sqrt(m_sumsq / (counts - sd_ddof))
        out[:, 13][m_constant & (counts > sd_ddof)] = 0.0
        out[:, 13][counts <= sd_ddof] = np.nan

        # Successive pairs (i, i+1) inside a segment: drop pairs across a boundary.
        same = ids[1:] == ids[:-1]
        pair_ids = ids[1:][same]
        n_pairs = np.maximum(counts - 1, 0)
        if auc == "sum":
            out[:, 14] = _segment_sum(magnitude, ids, n_segments)
        elif auc == "trapezoid":
            # np.trapezoid(m) with dx = 1: sum of (m[i+1] + m[i]) / 2.
            halves = (magnitude[1:] + magnitude[:-1])[same] / 2.0
            out[:, 14] = _segment_sum(halves, pair_ids, n_segments)
        else:
            message = f"unknown auc variant '{auc}'; expected 'sum' or 'trapezoid'"
            raise RegistryError(message)
        out[:, 14][counts == 0] = np.nan

        steps = (magnitude[1:] - magnitude[:-1])[same]
        net = _segment_sum(steps, pair_ids, n_segments)
        if meandif == "net":
            out[:, 15] = np.where(counts > 0, net, np.nan)
        elif meandif == "mean":
            out[:, 15] = np.where(n_pairs > 0, net / n_pairs, np.nan)
        else:
            message = f"unknown meanDif variant '{meandif}'; expected 'net' or 'mean'"
            raise RegistryError(message)
    return out


def _first_differences(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.diff`` inside each segment: (values of shape (n - s, c), new counts)."""
    ids = np.repeat(np.arange(counts.shape[0]), counts)
    same = ids[1:] == ids[:-1]
    diffs = (values[1:] - values[:-1])[same]
    return diffs, np.maximum(counts - 1, 0)


def _features_table(
    blocks: list[np.ndarray], counts: np.ndarray, entry: DatasetEntry
) -> np.ndarray:
    """Features of every sensor block (each (n, 3)) side by side: shape (s, 16*k)."""
    recipe = entry.recipe
    sensors = list(blocks)
    sensor_counts = [counts] * len(blocks)
    if recipe.second_sensor == "diff":
        diffs, diff_counts = _first_differences(blocks[0], counts)
        sensors.append(diffs)
        sensor_counts.append(diff_counts)
    parts = [
        sensor_features(block, c, sd_ddof=recipe.sd_ddof, auc=recipe.auc, meandif=recipe.meandif)
        for block, c in zip(sensors, sensor_counts, strict=True)
    ]
    return np.hstack(parts)


# --------------------------------------------------------------------------
# Input checks shared by both recipes
# --------------------------------------------------------------------------


def _sensor_channels(signals: SignalTable, entry: DatasetEntry) -> list[list[str]]:
    channels = [list(s.channels) for s in entry.sensors]
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

    Codes are matched by the one rule of :mod:`mudata.classes`.
    """
    return match_classes(labels, entry, check_seen=False).rank


def _user_codes(users: pd.Series | np.ndarray) -> np.ndarray:
    """Integer codes of user ids in the order of :func:`mudata.classes.user_sort_key`."""
    names = user_names(users)
    order = {name: i for i, name in enumerate(user_sort_key(pd.unique(names)))}
    return (
        np.array([order[n] for n in names], dtype=np.int64) if len(names) else np.zeros(0, np.int64)
    )


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
    dropped[REASON_CONSTANT] = int((undefined & ~explained).sum())
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
    frame = pd.DataFrame({"userid": userid[keep], "label": labels[keep]})
    frame = pd.concat([frame, pd.DataFrame(values[keep], columns=columns)], axis=1)
    frame.attrs["dropped"] = dropped
    return frame


# --------------------------------------------------------------------------
# Recipes
# --------------------------------------------------------------------------


def _sequences(frame: pd.DataFrame, entry: DatasetEntry) -> tuple[np.ndarray, np.ndarray]:
    """Rows of kept classes grouped into the recipe's sequences, and each sequence's bounds.

    A sequence is one (user, class, recording): users ascending, classes in the
    entry's order, recordings in file order, file order kept inside each.
    Without a ``recording`` column the whole table is one recording.
    """
    rank = _class_rank(frame["label"], entry)
    user_code = _user_codes(frame["userid"])
    # A reader that knows recordings names them: a window never spans two.
    recording = (
        frame["recording"].to_numpy(dtype=np.int64)
        if "recording" in frame.columns
        else np.zeros(len(frame), dtype=np.int64)
    )
    kept = np.flatnonzero(rank >= 0)
    order = kept[np.lexsort((recording[kept], rank[kept], user_code[kept]))]
    change = np.zeros(max(order.size - 1, 0), dtype=bool)
    for key in (user_code[order], rank[order], recording[order]):
        change |= key[1:] != key[:-1]
    bounds = np.concatenate([[0], np.flatnonzero(change) + 1, [order.size]])
    return order, bounds


def study_window(signals: SignalTable, entry: DatasetEntry) -> pd.DataFrame:
    """The ``study-window`` recipe; see the module docstring and ``docs/datasets.md``."""
    recipe = entry.recipe
    if recipe.window is None:
        message = f"dataset '{entry.name}': recipe 'study-window' needs 'window'"
        raise RegistryError(message)
    width = int(recipe.window)
    span = int(recipe.smoothing)
    channels = _sensor_channels(signals, entry)
    flat_channels = [c for group in channels for c in group]
    columns = feature_columns(len(channels) + (recipe.second_sensor == "diff"))
    frame = signals.frame

    users = frame["userid"].to_numpy()
    order, bounds = _sequences(frame, entry)
    if order.size == 0:
        return _empty_frame(columns)
    raw = frame[flat_channels].to_numpy(dtype=np.float64)
    label_values = frame["label"].to_numpy()
    pieces: list[np.ndarray] = []
    n_windows: list[int] = []
    raw_nan_flags: list[np.ndarray] = []
    short_flags: list[np.ndarray] = []
    first_rows: list[int] = []
    unused = 0
    for lo, hi in itertools.pairwise(bounds):
        rows = order[lo:hi]
        length = hi - lo
        count = window_count(length, width)
        unused += length - count * width
        if count == 0:
            continue
        sequence = raw[rows]
        smooth = moving_average(sequence, span)
        used = count * width
        pieces.append(smooth[:used])
        n_windows.append(count)
        first_rows.append(rows[0])
        # Reasons for undefined windows, per window.
        missing = np.isnan(sequence).any(axis=1)
        if missing.any():
            spread = moving_average(missing.astype(np.float64), span)
            touched = np.nan_to_num(spread, nan=0.0) > 0
            raw_nan_flags.append(touched[:used].reshape(count, width).any(axis=1))
        else:
            raw_nan_flags.append(np.zeros(count, dtype=bool))
        position = np.arange(used)
        edge = (position < span - 1) & (position + span - 1 >= length)
        short_flags.append(edge.reshape(count, width).any(axis=1))

    if not pieces:
        empty = _empty_frame(columns)
        empty.attrs["samples_unused"] = int(unused)
        return empty
    samples = np.concatenate(pieces, axis=0)
    per_group = np.asarray(n_windows)
    counts = np.full(int(per_group.sum()), width, dtype=np.int64)
    blocks = [samples[:, 3 * i : 3 * i + 3] for i in range(len(channels))]
    values = _features_table(blocks, counts, entry)
    first = np.repeat(np.asarray(first_rows), per_group)
    reasons = {
        REASON_MISSING: np.concatenate(raw_nan_flags),
        REASON_SHORT: np.concatenate(short_flags),
    }
    table = _finish(users[first], label_values[first], values, columns, reasons, entry, "windows")
    table.attrs["samples_unused"] = int(unused)
    if unused:
        log.info(
            "%s: %d samples after the last complete window of a sequence left out",
            entry.name,
            unused,
        )
    return table


def study_segment(signals: SignalTable, entry: DatasetEntry) -> pd.DataFrame:
    """The ``study-segment`` recipe: one feature row per segment, in table order."""
    recipe = entry.recipe
    channels = _sensor_channels(signals, entry)
    columns = feature_columns(len(channels) + (recipe.second_sensor == "diff"))
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
    blocks = [raw[:, 3 * i : 3 * i + 3] for i in range(len(channels))]
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
    return RECIPES[name](signals, entry)
