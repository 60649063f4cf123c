"""The feature recipes: raw samples (a :class:`SignalTable`) to one row per example.

Two recipes, named by ``entry.recipe.name`` (see ``docs/datasets.md``):

``study-window`` (HAR70+, OPPORTUNITY)
    For each user (ascending) and each kept class (registry order) -- and each
    recording, when the reader names recordings (a ``recording`` column) --, every sample
    of the class in file order is one sequence; it is smoothed with
    :func:`mudata.building.windowing.moving_average`, cut into windows of ``window``
    samples (last start dropped, :func:`mudata.building.windowing.window_count`) and
    each window gives 16 features per sensor.
``study-segment`` (Smartwatch Gestures)
    One row per segment (one file), 16 features per sensor; with
    ``second_sensor = "diff"`` the first differences of the first sensor are
    a further sensor.

The features of each window or segment are :mod:`mudata.building.feature_maths`
(16 per tri-axial sensor, 5 per channel of any other); this module cuts the
windows and segments, lays their samples out for those formulas, and assembles
the table; :mod:`mudata.building.study_windows` feeds ``study-window`` chunk by chunk.
Rows with any undefined feature are dropped and the
number dropped per reason is logged and stored in ``frame.attrs["dropped"]``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from mudata.building.feature_maths import (
    REASON_CONSTANT,
    REASON_MISSING,
    REASON_OVERFLOW,
    REASON_SHORT,
    Regular,
    block_features,
    feature_options,
    features_table,
    sensor_columns,
    tri_axial_features,
)
from mudata.building.windowing import running_means, window_count
from mudata.errors import ParseError, RegistryError
from mudata.readers.base import SignalTable
from mudata.records.classes import match_classes, user_names, user_sort_key
from mudata.records.entry import DatasetEntry, Recipe

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------
# Per-segment statistics: two layouts of the samples, one set of formulas
# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# Input checks shared by both recipes
# --------------------------------------------------------------------------


def sensor_channels(signals: SignalTable, entry: DatasetEntry) -> list[list[str]]:
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


def class_rank(labels: pd.Series, entry: DatasetEntry) -> np.ndarray:
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


def empty_frame(columns: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(
        {"userid": pd.Series([], dtype="int64"), "label": pd.Series([], dtype="int64")}
    )
    for column in columns:
        frame[column] = pd.Series([], dtype="float64")
    return frame


def finish_frame(
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


def combined_key(keys: list[np.ndarray]) -> np.ndarray | None:
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
    rank = class_rank(frame["label"], entry)
    kept = np.flatnonzero(rank >= 0)
    keys = [_user_codes(frame["userid"])[kept], rank[kept]]
    if "recording" in frame.columns:
        # A reader that knows recordings names them: a window never spans two.
        keys.append(frame["recording"].to_numpy(dtype=np.int64)[kept])
    key = combined_key(keys)
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

    The running means (:func:`mudata.building.windowing.running_means`) are taken over
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


def missing_flags(
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
    return np.asarray(touched.any(axis=0))


def window_features(
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
    options = feature_options(recipe)
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
        parts.append(block_features(axes, triple, Regular(width, n_windows), **options))
        if number == 0 and recipe.second_sensor == "diff":
            diffs = [a[1:] - a[:-1] for a in axes]
            differences.append(tri_axial_features(diffs, Regular(width - 1, n_windows), **options))
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
    channels = sensor_channels(signals, entry)
    columns = sensor_columns(entry.sensors, recipe.second_sensor)
    frame = signals.frame

    order, bounds = _sequences(frame, entry)
    if order.size == 0:
        return empty_frame(columns), None
    counts = window_count(np.diff(bounds), width)
    unused = int((np.diff(bounds) - counts * width).sum())
    n_windows = int(counts.sum())
    if n_windows == 0:
        empty = empty_frame(columns)
        empty.attrs["samples_unused"] = unused
        return empty, None
    index, short = _window_index(bounds, counts, width, span)

    parts, ordered_nan = window_features(
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
        REASON_MISSING: missing_flags(ordered_nan, index, short, span),
        REASON_SHORT: np.asarray(short.any(axis=0)),
    }
    users = frame["userid"].to_numpy()[first]
    labels = frame["label"].to_numpy()[first]
    values = np.hstack(parts)
    # finish_frame keeps the rows without an undefined feature (and overwrites values).
    keep = ~np.isnan(values).any(axis=1)
    table = finish_frame(users, labels, values, columns, reasons, entry, "windows")
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
    channels = sensor_channels(signals, entry)
    columns = sensor_columns(entry.sensors, recipe.second_sensor)
    frame = signals.frame
    rank = class_rank(frame["label"], entry)
    keep = rank >= 0
    segment = frame["segment"].to_numpy()[keep]
    if segment.size == 0:
        return empty_frame(columns)
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
    values = features_table(blocks, counts, entry)
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
    return finish_frame(
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


__all__ = [
    "RECIPES",
    "class_rank",
    "combined_key",
    "empty_frame",
    "featurize",
    "finish_frame",
    "missing_flags",
    "sensor_channels",
    "study_segment",
    "study_window",
    "study_window_samples",
    "window_features",
]
