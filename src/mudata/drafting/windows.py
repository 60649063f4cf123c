"""``mudata init``, step 4a: windows counted before the user chooses a window.

The study-window recipe cuts each (user, class, recording) sequence into
windows of ``w`` samples and drops the last start
(:func:`mudata.building.windowing.window_count`). From the samples the reader gives,
this module counts, for a window length, the windows of each user and class,
the users the filter keeps (at least ``min_per_class`` windows of every class),
and the calibration set each built-in strategy of ``mueval`` would give.

Calibration sizes follow the splits of ``docs/protocol.md`` (section
"Splits"): ``train_test_split`` with ``train_size=f`` keeps ``floor(f * n)``
rows in the first part. With ``n`` the windows of one user and ``N`` those of
all kept users:

* MM: ``rest = N - floor(0.6 N)``, calibration ``floor(0.5 rest)``;
* UDM: the same inside each user's ``n``;
* UIM: the other users' ``N - n``, calibration ``M - floor(0.6 M)``;
* UCM: the user's ``n``, calibration ``n - floor(0.5 n)``;
* UAM: ``rest = n - floor(0.5 n)`` after adaptation, calibration ``floor(0.5 rest)``;
* UXC: the other users' windows, all of them (cross-conformal folds).

A split conformal set needs at least ``max(1/alpha, 1/(1 - alpha))``
calibration rows (20 at the protocol's alpha = 0.05), as MAPIE and mueval
require. ``mueval`` is not imported: mudata stays below it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mudata.building.windowing import window_count
from mudata.records.classes import code_text

#: The protocol's default miscoverage (docs/protocol.md, "Constants").
DEFAULT_ALPHA = 0.05


def _first(f: float, n: int) -> int:
    return math.floor(f * n)


#: Strategy -> (calibration size from (user's windows n, all kept users' windows N), what it is).
CALIBRATION: dict[str, tuple[Callable[[int, int], int], str]] = {
    "mm": (lambda n, N: _first(0.5, N - _first(0.6, N)), "20 % of all windows"),
    "udm": (lambda n, N: _first(0.5, n - _first(0.6, n)), "20 % of the user's windows"),
    "uim": (lambda n, N: (N - n) - _first(0.6, N - n), "40 % of the other users' windows"),
    "ucm": (lambda n, N: n - _first(0.5, n), "50 % of the user's windows"),
    "uam": (lambda n, N: _first(0.5, n - _first(0.5, n)), "25 % of the user's windows"),
    "uxc": (lambda n, N: N - n, "the other users' windows"),
}


def needed(alpha: float = DEFAULT_ALPHA) -> int:
    """Smallest calibration set a split conformal set accepts: ``max(1/alpha, 1/(1-alpha))``."""
    return math.ceil(max(1 / alpha, 1 / (1 - alpha)) - 1e-9)


def label_texts(labels: pd.Series) -> np.ndarray:
    """Each raw label as the registry names codes (:func:`mudata.records.classes.code_text`: 1.0 is "1")."""
    codes, uniques = pd.factorize(labels)
    texts = np.array([code_text(u) for u in uniques] + [code_text(None)], dtype=object)
    return texts[codes]  # code -1 (missing) picks the last text, the blank name


def sequence_lengths(frame: pd.DataFrame) -> pd.DataFrame:
    """Samples per (user, label, recording) sequence of a reader's signal table.

    Parameters
    ----------
    frame : DataFrame
        ``userid``, ``label`` and, when the reader names recordings, ``recording``;
        optionally ``missing`` (bool): the row has a missing value in a channel,
        with ``frame.attrs["smoothing"]`` the recipe's moving-average span
        (1 when absent), over which a missing value spreads.

    Returns
    -------
    DataFrame
        ``userid``, ``label`` (as text), ``length``; with ``missing``, also
        ``gaps``: the places in each sequence (0-based) of its rows with a
        missing value, and ``span``, the smoothing span (see :func:`kept_windows`).
    """
    keys = ["userid", "label"] + (["recording"] if "recording" in frame.columns else [])
    labelled = frame.assign(label=label_texts(frame["label"]))
    grouped = labelled.groupby(keys, sort=False)
    ids = grouped.ngroup().to_numpy()
    counted = ids >= 0  # a row with a missing key (-1) is in no sequence, as groupby drops it
    n_groups = int(ids.max()) + 1 if counted.any() else 0
    # The sequences and their keys from one numbering, so gaps and lengths line up.
    order = np.flatnonzero(counted)[np.argsort(ids[counted], kind="stable")]
    firsts = order[np.searchsorted(ids[order], np.arange(n_groups))]
    result = labelled.iloc[firsts][["userid", "label"]].reset_index(drop=True)
    result["length"] = np.bincount(ids[counted], minlength=n_groups)
    if "missing" in frame.columns:
        place = grouped.cumcount().to_numpy()
        missing = frame["missing"].to_numpy(dtype=bool) & counted
        gaps: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(result)
        seqs, places = ids[missing], place[missing]
        order = np.argsort(seqs, kind="stable")
        found, starts = np.unique(seqs[order], return_index=True)
        # No missing value in any sequence: np.split would still give one empty chunk.
        chunks = np.split(places[order], starts[1:]) if found.size else []
        for seq, chunk in zip(found, chunks, strict=True):
            gaps[int(seq)] = chunk.astype(np.int64)
        result["gaps"] = pd.Series(gaps, dtype=object)
        result["span"] = int(frame.attrs.get("smoothing", 1))
    return result


def label_segments(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run of one label inside one recording, in file order: ``label``, ``length``."""
    labels = label_texts(frame["label"])
    change = np.ones(len(frame), dtype=bool)
    change[1:] = labels[1:] != labels[:-1]
    if "recording" in frame.columns:
        recording = frame["recording"].to_numpy()
        change[1:] |= recording[1:] != recording[:-1]
    starts = np.flatnonzero(change)
    lengths = np.diff(np.append(starts, len(frame)))
    return pd.DataFrame({"label": labels[starts], "length": lengths})


def windows_per_user_class(lengths: pd.DataFrame, window: int) -> pd.DataFrame:
    """Windows of ``window`` samples per user (rows) and class (columns), those the build
    keeps: a window holding a row with a missing value (``gaps``) is not counted."""
    counts = lengths.assign(windows=kept_windows(lengths, window))
    return counts.pivot_table(
        index="userid", columns="label", values="windows", aggfunc="sum", fill_value=0
    )


def kept_windows(lengths: pd.DataFrame, window: int) -> np.ndarray:
    """Windows of ``window`` samples of each sequence of ``lengths`` the build keeps.

    The recipe cuts windows ``[k w, (k + 1) w)`` for ``k`` below
    :func:`mudata.building.windowing.window_count` of the smoothed samples. The
    moving average of ``span`` samples (:func:`mudata.building.windowing.moving_average`)
    spreads a missing sample at ``p`` to the means at ``p .. p + span - 1``,
    and the forward means of the first ``span - 1`` places to ``p <= 2 span - 3``;
    a window holding such a mean gets undefined features and the build drops it
    (``gaps``: the missing samples' places).
    """
    made = np.asarray(window_count(lengths["length"].to_numpy(), window), dtype=np.int64)
    if "gaps" not in lengths.columns:
        return made
    lost = np.zeros(len(made), dtype=np.int64)
    for row, (places, n, span) in enumerate(
        zip(lengths["gaps"], made, lengths["span"], strict=True)
    ):
        if not len(places) or not n:
            continue
        first = places // window
        last = np.minimum((places + span - 1) // window, n - 1)
        inside = first < n
        # Each gap hits windows first..last: marked at once through a difference array.
        marks = np.zeros(n + 1, dtype=np.int64)
        np.add.at(marks, first[inside], 1)
        np.add.at(marks, last[inside] + 1, -1)
        hit = np.cumsum(marks[:n]) > 0
        hit[0] |= bool(np.any(places <= 2 * span - 3))
        lost[row] = int(hit.sum())
    return made - lost


def kept_users(table: pd.DataFrame, min_per_class: int) -> list[str]:
    """Users with at least ``min_per_class`` windows of every class (a class a user
    has no row of, missing from the table, counts as none; with no class, none is kept)."""
    if table.shape[1] == 0:
        return []
    least = table.fillna(0).min(axis=1)
    return [str(u) for u, count in least.items() if int(count) >= min_per_class]


def calibration_sizes(table: pd.DataFrame, users: list[str]) -> dict[str, int]:
    """The smallest calibration set of each strategy over ``users`` (see the module docstring)."""
    per_user = table.loc[users].sum(axis=1) if users else pd.Series(dtype=int)
    total = int(per_user.sum())
    return {
        name: min((size(int(n), total) for n in per_user), default=0)
        for name, (size, _) in CALIBRATION.items()
    }


def longest_window(
    lengths: pd.DataFrame, rate: float, test: Callable[[pd.DataFrame], bool], upto: int
) -> float | None:
    """The longest window in seconds (a multiple of 0.5 s, at most ``upto`` samples) passing ``test``."""
    for seconds in np.arange(math.floor(2 * upto / rate) / 2, 0.49, -0.5):
        samples = max(2, round(seconds * rate))
        if samples <= upto and test(windows_per_user_class(lengths, samples)):
            return float(seconds)
    return None


@dataclass
class WindowReport:
    """What the window of ``window`` samples gives, as report lines, and a better window if any."""

    lines: list[str]
    proposed_seconds: float | None = None


def _blocking(
    lengths: pd.DataFrame, rate: float, classes: list[str], min_per_class: int
) -> list[str]:
    """Classes that give no user ``min_per_class`` windows even at 0.5 s."""
    shortest = windows_per_user_class(lengths, max(2, round(0.5 * rate)))
    shortest = shortest.reindex(columns=classes, fill_value=0)
    return [c for c in classes if int(shortest[c].max()) < min_per_class]


def classes_of_too_few_users(
    frame: pd.DataFrame, rate: float, classes: list[str], min_per_class: int
) -> dict[str, list[str]]:
    """Classes that fewer than 2 users have ``min_per_class`` windows of, even of 0.5 s.

    A longer window never gives a sequence more windows
    (:func:`mudata.building.windowing.window_count` does not grow with the window), so
    such a class keeps every table under the 2 users the build needs, whatever
    the window: each kept user must have it. ``frame`` is the reader's signal
    table as the build names users and classes (``userid``, ``label``,
    ``recording``); ``classes`` are class names as there.

    Returns
    -------
    dict
        Class name -> the users (at most one) who have enough windows of it.
    """
    lengths = sequence_lengths(frame)
    shortest = windows_per_user_class(lengths, max(2, round(0.5 * rate)))
    shortest = shortest.reindex(columns=classes, fill_value=0)
    enough = shortest >= min_per_class
    return {
        c: [str(u) for u in shortest.index[enough[c]]] for c in classes if int(enough[c].sum()) < 2
    }


def _calibration_lines(
    lengths: pd.DataFrame,
    table: pd.DataFrame,
    window: int,
    rate: float,
    min_per_class: int,
    alpha: float,
) -> list[str]:
    need = needed(alpha)
    users = kept_users(table, min_per_class)
    lines = [
        f"calibration sets at alpha = {alpha:g} (at least {need} windows needed), "
        f"smallest over the {len(users)} users kept:"
    ]
    for name, size in calibration_sizes(table, users).items():
        verdict = "ok" if size >= need else "too small"
        hint = ""
        if size < need and users:

            def enough(t: pd.DataFrame, name: str = name) -> bool:
                kept = kept_users(t, min_per_class)
                return len(kept) >= 2 and calibration_sizes(t, kept)[name] >= need

            better = longest_window(lengths, rate, enough, window)
            hint = f"; --window {better:g} would reach it" if better else ""
        lines.append(f"  {name}: {size} ({CALIBRATION[name][1]}) {verdict}{hint}")
    return lines


def window_report(
    frame: pd.DataFrame,
    window: int,
    rate: float,
    classes: list[str],
    min_per_class: int,
    alpha: float = DEFAULT_ALPHA,
    *,
    built: pd.DataFrame | None = None,
    missing: list[str] | None = None,
) -> WindowReport:
    """Count the windows of ``window`` samples and say what each strategy would get.

    Parameters
    ----------
    frame : DataFrame
        The reader's signal table (``userid``, ``label``, ``recording``).
    window : int
        Samples per window.
    rate : float
        Sampling rate in Hz, to speak in seconds.
    classes : list of str
        Class codes kept, as text.
    min_per_class : int
        The user filter's minimum windows per user and class.
    alpha : float
        Miscoverage the calibration check uses.
    built : DataFrame, optional
        The feature rows the build makes of ``frame`` at ``window`` (``userid``,
        ``label``): the windows per user and class are counted on them, so
        that the report says what ``mudata fetch`` will build (windows dropped
        for an undefined feature included). Other windows are counted from
        the sequence lengths, less the windows holding a sample with a
        missing value (``frame``'s ``missing``), as the build drops them.
    missing : list of str, optional
        The channels with missing values, named in the report's count of
        the windows they cost.

    Returns
    -------
    WindowReport
        ``proposed_seconds``: when fewer than 2 users pass the filter, the
        longest window letting as many users pass as any window does (at
        least 2).
    """
    lengths = sequence_lengths(frame)
    lengths = lengths[lengths["label"].isin(classes)]
    table = windows_per_user_class(lengths, window).reindex(columns=classes, fill_value=0)
    if built is not None:
        rows = built.groupby(["userid", "label"], sort=False).size().unstack(fill_value=0)
        users = list(dict.fromkeys([*table.index, *rows.index]))
        table = rows.reindex(index=users, columns=classes, fill_value=0).astype(int)
    lines = [f"windows of {window} samples ({window / rate:g} s) per user and class:"]
    lines += [
        f"  {u}: " + ", ".join(f"{c}={int(row[c])}" for c in classes) for u, row in table.iterrows()
    ]
    segments = label_segments(frame)
    brief = segments[segments["label"].isin(classes) & (segments["length"] < window)]
    if len(brief):
        lines.append(
            f"{len(brief)} of {int(segments['label'].isin(classes).sum())} label segments "
            f"(runs of one class in a recording) are shorter than one window "
            f"({window / rate:g} s; median {np.median(brief['length']) / rate:.2g} s); "
            f"windows join the segments of a class within a recording"
        )
    if "gaps" in lengths.columns:
        made = int(np.sum(window_count(lengths["length"].to_numpy(), window)))
        lost = made - int(kept_windows(lengths, window).sum())
        if lost:
            named = missing or []
            columns = ", ".join(named[:6]) or "the channels"
            columns += f" and {len(named) - 6} more" if len(named) > 6 else ""
            lines.append(
                f"{lost} of {made} windows dropped for missing values in columns {columns} "
                f"(a window holding one missing value has undefined features)"
            )
    short = lengths[lengths["length"] <= window]
    if len(short):
        lines.append(
            f"{len(short)} of {len(lengths)} recordings (user, class, recording) are not longer "
            f"than one window ({window / rate:g} s): they give no window"
        )
    proposed = None
    if len(kept_users(table, min_per_class)) < 2:
        blocking = _blocking(lengths, rate, classes, min_per_class)
        if blocking:
            lines.append(
                f"  class(es) {', '.join(blocking)} give no user {min_per_class} windows, even "
                f"of 0.5 s: delete them from [[classes]] if they are not activities you want "
                f"(or lower min_per_class); the counts below leave them out"
            )
            classes = [c for c in classes if c not in blocking]
            lengths = lengths[lengths["label"].isin(classes)]
            table = table[classes]
        if len(kept_users(table, min_per_class)) < 2:
            # As many users as the shortest window keeps (at least 2), with the longest window.
            shortest = windows_per_user_class(lengths, max(2, round(0.5 * rate)))
            reachable = max(2, len(kept_users(shortest, min_per_class)))
            proposed = longest_window(
                lengths, rate, lambda t: len(kept_users(t, min_per_class)) >= reachable, window
            )
            lines.append(
                f"  fewer than 2 users have {min_per_class} windows of every class: "
                + (
                    f"--window {proposed:g} is the longest window (in steps of 0.5 s) that "
                    f"keeps {reachable} users, as many as any window keeps"
                    if proposed
                    else "no window of 0.5 s or more does; lower min_per_class"
                )
            )
    else:
        proposed = _more_users(lines, lengths, table, window, rate, min_per_class)
    lines += _calibration_lines(lengths, table, window, rate, min_per_class, alpha)
    return WindowReport(lines, proposed)


#: A shorter window is advised when it keeps more users than the window given ...
MORE_USERS = 1
#: ... and at least this many times as many.
MORE_USERS_RATIO = 1.5


def _more_users(
    lines: list[str],
    lengths: pd.DataFrame,
    table: pd.DataFrame,
    window: int,
    rate: float,
    min_per_class: int,
) -> float | None:
    """A shorter window, when it keeps clearly more users than ``window`` (2 or more pass).

    Short recordings (HMP's 2-4 s) give a 3 s window few windows: the filter
    may keep 2 users where 1 s keeps most of them. The longest window keeping
    as many users as any window does is advised, with both counts, when it
    keeps :data:`MORE_USERS` more and :data:`MORE_USERS_RATIO` times as many
    (HMP: 2 users at 3 s, 3 at 2 s).
    """
    now = len(kept_users(table, min_per_class))
    shortest = windows_per_user_class(lengths, max(2, round(0.5 * rate)))
    shortest = shortest.reindex(columns=table.columns, fill_value=0)
    reachable = len(kept_users(shortest, min_per_class))
    if reachable < now + MORE_USERS or reachable < MORE_USERS_RATIO * now:
        return None
    columns = list(table.columns)
    better = longest_window(
        lengths,
        rate,
        lambda t: (
            len(kept_users(t.reindex(columns=columns, fill_value=0), min_per_class)) >= reachable
        ),
        window - 1,
    )
    if better is None:
        return None
    lines.append(
        f"  {now} of {len(table)} users have {min_per_class} windows of every class at "
        f"{window / rate:g} s; --window {better:g} keeps {reachable}, the longest window "
        f"(in steps of 0.5 s) that keeps as many as any window keeps"
    )
    return better


__all__ = [
    "CALIBRATION",
    "DEFAULT_ALPHA",
    "MORE_USERS",
    "MORE_USERS_RATIO",
    "WindowReport",
    "calibration_sizes",
    "classes_of_too_few_users",
    "kept_users",
    "label_segments",
    "label_texts",
    "longest_window",
    "needed",
    "sequence_lengths",
    "window_report",
    "windows_per_user_class",
]
