"""``mudata init``, step 3b: the drafted channels grouped into sensors, from their names.

A sensor may have any number of channels (its arity). The names say which
channels belong together, tried in this order:

1. **Axes.** Three names equal but for ``x``, ``y``, ``z`` at one place
   (``acc_x acc_y acc_z``, ``x_gyro y_gyro z_gyro``, ``accX``, ``X-Axis``), or
   for ``roll``, ``pitch``, ``yaw``, are one tri-axial sensor: the study's 16
   features.
2. **Numbered channels.** Names equal but for a number at the end
   (``channel1`` .. ``channel8``, ``emg1``, ``ch_1``, ``EMG 3``), two or more of
   them, are one sensor of that many channels: per-channel features. Numbers
   say nothing about axes, so three numbered channels are not made tri-axial.
3. **Any other channel** (``temp``, ``ecg``) is a sensor of its own, with one
   channel: per-channel features.

Without a header line the columns have no names (``c1``, ``c2``, ...); their
values say which belong together (:func:`scale_runs`). The axes of one sensor
share its unit and range, and so do the sensors of one kind side by side (two
accelerometers); a sensor of another kind (a gyroscope in rad/s beside an
accelerometer in m/s^2, a thermometer, an ECG) changes the scale. The columns
are cut into runs of adjacent columns whose standard deviations lie within a
factor :data:`SCALE_BREAK` of their neighbours' (a column left out between
two also cuts), and

* a run of a multiple of three columns is read in threes, from its first
  column, as x, y, z: the study's 16 features;
* any other run (a lone temperature, 2 ECG leads, a 4-value orientation, 8
  EMG channels) is one sensor of per-channel features: its columns are not
  cut into triples out of step with the sensors.

Without the values (``table`` not given) a multiple of three is read in
threes and any other count as one sensor of per-channel features, so that
no channel is dropped. Every group is reported with its reason (the scales
that made it), and the draft states each sensor's ``features``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mudata.readers.stream_options import stream_channel
from mudata.records.entry import PER_CHANNEL, TRI_AXIAL

__all__ = [
    "SCALE_BREAK",
    "SensorGroup",
    "group_channels",
    "report_lines",
    "scale_runs",
    "stream_sensors",
]

#: Adjacent headerless columns whose standard deviations differ by more than this
#: factor belong to different sensors (m/s^2 beside rad/s, a thermometer beside
#: an accelerometer); the axes of one sensor rarely differ so much over a recording.
SCALE_BREAK = 3.0
#: Rows the scales are estimated from, spread evenly over the first file.
_SCALE_ROWS = 100_000

#: Names of the three axes, as a name may spell them (each set in x, y, z order).
AXIS_SETS: tuple[tuple[str, str, str], ...] = (("x", "y", "z"), ("roll", "pitch", "yaw"))
# A number at the end of a name, after its stem (which may be empty).
_NUMBERED = re.compile(r"^(?P<stem>.*?)(?P<number>\d+)$", re.DOTALL)
_EDGES = " _-.:/"


@dataclass(frozen=True)
class SensorGroup:
    """A drafted sensor: name, channels in order, ``features`` and why it was grouped so."""

    name: str
    channels: tuple[str, ...]
    features: str
    why: str

    def as_entry(self) -> dict[str, object]:
        """The ``[[sensors]]`` table of the draft."""
        return {"name": self.name, "channels": list(self.channels), "features": self.features}

    def line(self) -> str:
        """One line of init's report."""
        shown = list(self.channels)
        listed = ", ".join(shown) if len(shown) <= 4 else f"{shown[0]} .. {shown[-1]}"
        return f"{self.name}: {listed} ({self.why})"


def _spelled(word: str, like: str) -> str:
    """``word`` in the case of ``like`` (``X`` -> ``Y``, ``Roll`` -> ``Pitch``)."""
    if like.isupper():
        return word.upper()
    if like[:1].isupper():
        return word.capitalize()
    return word


def _stem_name(stem: str) -> str:
    """A sensor name from what the channels share: separators at its ends removed."""
    name = stem.strip(_EDGES)
    return re.sub(r"[ _\-.:/]{2,}", "_", name)


def _axis_triple(
    name: str, free: set[str]
) -> tuple[tuple[str, str, str], str, tuple[str, str, str]] | None:
    """The three channels (``name`` and two of ``free``) that differ only by their axis,
    what they share and the axis names; the last place in ``name`` that gives three wins
    (``acc_x_1``)."""
    for axes in AXIS_SETS:
        first = axes[0]
        places = [m.start() for m in re.finditer(re.escape(first), name, re.IGNORECASE)]
        for place in reversed(places):
            like = name[place : place + len(first)]
            before, after = name[:place], name[place + len(first) :]
            triple = tuple(before + _spelled(axis, like) + after for axis in axes)
            if all(t in free for t in triple[1:]):
                return triple, before + " " + after, axes  # type: ignore[return-value]
    return None


def _unique(name: str, taken: set[str], fallback: str) -> str:
    name = name or fallback
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name}_{k}", k + 1
    taken.add(candidate)
    return candidate


def _spreads(table: pd.DataFrame, channels: list[str]) -> dict[str, float]:
    step = max(1, len(table) // _SCALE_ROWS)
    values = table[channels].iloc[::step].apply(pd.to_numeric, errors="coerce")
    spread = values.std(skipna=True)
    return {c: float(spread[c]) for c in channels}


def scale_runs(
    channels: list[str], table: pd.DataFrame
) -> tuple[list[list[str]], dict[str, float], dict[str, str]]:
    """The runs of adjacent ``channels`` of one scale, their standard deviations, and
    why each run after the first begins (keyed by its first channel).

    A run ends where the next channel is not the next column of ``table`` (a
    column left out between them), or where the two standard deviations differ
    by more than :data:`SCALE_BREAK` (or one of them is not positive).
    """
    spreads = _spreads(table, channels)
    place = {str(c): i for i, c in enumerate(table.columns)}
    runs: list[list[str]] = []
    cuts: dict[str, str] = {}
    for channel in channels:
        if runs:
            last = runs[-1][-1]
            a, b = spreads[last], spreads[channel]
            ratio = max(a, b) / min(a, b) if min(a, b) > 0 else np.inf
            if place[channel] != place[last] + 1:
                cuts[channel] = f"a column left out before {channel}"
            elif not ratio <= SCALE_BREAK:
                cuts[channel] = f"sd {_sd(a)} to {_sd(b)} from {last} to {channel}"
            else:
                runs[-1].append(channel)
                continue
        runs.append([channel])
    return runs, spreads, cuts


def _sd(value: float) -> str:
    return f"{value:.3g}"


def _side(cut: str, spread: float) -> str:
    """A neighbour of a run, as its reason says: a column left out, or its scale."""
    return cut if cut.startswith("a column") else f"sd {_sd(spread)}"


def _by_scale(channels: list[str], table: pd.DataFrame) -> list[SensorGroup]:
    """Sensors of the headerless ``channels``, from the runs of one scale (module docstring)."""
    runs, spreads, cuts = scale_runs(channels, table)
    if len(runs) == 1 and len(channels) % 3:
        # One scale, not in threes: the rule without values, said with the evidence.
        return _without_header(channels)
    groups: list[SensorGroup] = []
    for k, run in enumerate(runs):
        low, high = min(spreads[c] for c in run), max(spreads[c] for c in run)
        scale = (
            f"sd {_sd(low)}" if low == high or len(run) == 1 else f"sd {_sd(low)} to {_sd(high)}"
        )
        # What is either side: the neighbours' scales, or the column left out between.
        sides = []
        if k:
            sides.append(_side(cuts[run[0]], spreads[runs[k - 1][-1]]))
        if k + 1 < len(runs):
            following = runs[k + 1][0]
            sides.append(_side(cuts[following], spreads[following]))
        beside = f", beside {' and '.join(sides)}" if sides else ""
        span = run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}"
        if len(run) % 3 == 0:
            why = (
                f"no header line: {span}, {len(run)} adjacent columns of one scale ({scale}"
                f"{beside}), read in threes as x, y, z; the study's 16 features"
            )
            for i in range(0, len(run), 3):
                triple = tuple(run[i : i + 3])
                groups.append(SensorGroup(f"sensor{len(groups) + 1}", triple, TRI_AXIAL, why))
            continue
        what = (
            "a column of its own scale"
            if len(run) == 1
            else f"{len(run)} adjacent columns of one scale, not a multiple of three"
        )
        why = f"no header line: {span}, {what} ({scale}{beside}): per-channel features"
        groups.append(SensorGroup(f"sensor{len(groups) + 1}", tuple(run), PER_CHANNEL, why))
    return groups


def _without_header(channels: list[str]) -> list[SensorGroup]:
    if len(channels) % 3 == 0:
        why = "no header line: columns in threes read as x, y, z; the study's 16 features"
        return [
            SensorGroup(f"sensor{i // 3 + 1}", tuple(channels[i : i + 3]), TRI_AXIAL, why)
            for i in range(0, len(channels), 3)
        ]
    why = (
        f"no header line, and {len(channels)} columns are not a multiple of three: "
        f"per-channel features"
    )
    return [SensorGroup("sensor1", tuple(channels), PER_CHANNEL, why)]


def group_channels(
    channels: list[str], header: bool, table: pd.DataFrame | None = None
) -> list[SensorGroup]:
    """The sensors the channel names (or, without names, their values) propose, in the
    order of their first channel.

    Parameters
    ----------
    channels : list of str
        The drafted channels, in table order (every one ends in one sensor).
    header : bool
        Whether the names come from a header line (else ``c1``, ``c2``, ...).
    table : DataFrame, optional
        A file holding the channels, as read: without a header, their scales
        group them (:func:`scale_runs`); without it, threes.

    Returns
    -------
    list of SensorGroup
        Each with the reason it was grouped so (see the module docstring).
    """
    if not header:
        usable = table is not None and len(table) > 1 and all(c in table for c in channels)
        return (
            _by_scale(channels, table)
            if usable and table is not None
            else _without_header(channels)
        )
    free = set(channels)
    found: list[tuple[int, str, tuple[str, ...], str, str]] = []
    position = {c: i for i, c in enumerate(channels)}
    for channel in channels:
        if channel not in free:
            continue
        match = _axis_triple(channel, free - {channel})
        if match is None:
            continue
        triple, stem, axes = match
        free -= set(triple)
        why = f"tri-axial: {', '.join(axes)} in the names; the study's 16 features"
        found.append((position[channel], stem, triple, TRI_AXIAL, why))
    numbered: dict[str, list[str]] = {}
    for channel in channels:
        numbered_match = _NUMBERED.match(channel) if channel in free else None
        if numbered_match:
            numbered.setdefault(numbered_match.group("stem"), []).append(channel)
    for stem, members in numbered.items():
        if len(members) < 2:
            continue
        free -= set(members)
        why = f"{len(members)} channels numbered alike: per-channel features"
        found.append((position[members[0]], stem, tuple(members), PER_CHANNEL, why))
    for channel in channels:
        if channel in free:
            why = "1 channel, grouped with none by its name: per-channel features"
            found.append((position[channel], channel, (channel,), PER_CHANNEL, why))
    taken: set[str] = set()
    groups = []
    for number, (_, stem, grouped, features, why) in enumerate(sorted(found), start=1):
        name = _unique(_stem_name(stem), taken, f"sensor{number}")
        groups.append(SensorGroup(name, grouped, features, why))
    return groups


def _slug(text: str) -> str:
    """``text`` as a sensor name: lower case ASCII letters, digits and ``_``."""
    return re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_")


def stream_sensors(groups: list[SensorGroup], streams: list[str]) -> list[SensorGroup]:
    """The sensors of aligned streams: each group of the columns, once per stream, named after it.

    The columns are grouped once, by their own names (:func:`group_channels`),
    so that ``emg1 [Sensor ID=1]`` is numbered like ``emg1``; each stream then
    has its own copy of every group, on its channels
    (:func:`mudata.readers.stream_options.stream_channel`), named after the stream
    (``Sensor Type=0`` -> ``sensor_type_0``), after the group's own name when a
    stream has several (``acc_sensor_type_0``, ``gyr_sensor_type_0``).

    Parameters
    ----------
    groups : list of SensorGroup
        :func:`group_channels` of the columns, before the streams are aligned.
    streams : list of str
        The names of the streams kept (``"Sensor ID=1,Sensor Type=0"``), in order.
    """
    taken: set[str] = set()
    sensors: list[SensorGroup] = []
    for stream in streams:
        for group in groups:
            own = _slug(stream) if len(groups) == 1 else f"{_slug(group.name)}_{_slug(stream)}"
            name = _unique(own.strip("_"), taken, f"sensor{len(sensors) + 1}")
            channels = tuple(stream_channel(c, stream) for c in group.channels)
            sensors.append(SensorGroup(name, channels, group.features, group.why))
    return sensors


def report_lines(groups: list[SensorGroup]) -> list[str]:
    """What init prints (and writes in the draft) about the sensors it grouped."""
    tri = sum(g.features == TRI_AXIAL for g in groups)
    lines = [
        f"sensors: {len(groups)} from {sum(len(g.channels) for g in groups)} channels "
        f"({tri} tri-axial, {len(groups) - tri} per-channel: mean, sd, max, auc and meanDif "
        f"of each channel); edit [[sensors]] to regroup them"
    ]
    return lines + [f"  {g.line()}" for g in groups]


__all__ = ["AXIS_SETS", "SensorGroup", "group_channels", "report_lines", "stream_sensors"]
