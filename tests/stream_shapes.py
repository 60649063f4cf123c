"""Files holding several streams interleaved, keyed by columns, as releases write them.

Each stream (a device, a sensor type) samples at its own rate with a jittered
clock; the rows are written in the order a phone's logger receives them: each
stream delivers its samples in bursts, so time goes back across the rows of a
file but never inside one stream. The rows each stream got are returned too,
so that tests count what the files hold independently of the reader.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Stream:
    """One stream: its key values (column to value), rate and channel offset."""

    key: dict[str, object]
    rate_hz: float
    level: float = 0.0


@dataclass
class Written:
    """What a file holds: per user, per stream name, the (time in s, label, xyz) of each sample."""

    samples: dict[str, dict[str, list[tuple[float, object, np.ndarray]]]] = field(
        default_factory=dict
    )


def stream_label(stream: Stream) -> str:
    return ",".join(f"{k}={v}" for k, v in stream.key.items())


def write_multiplexed(
    path: Path,
    *,
    users: list[str],
    streams: list[Stream],
    classes: list[object],
    seconds: float,
    rng: np.random.Generator,
    header: list[str],
    time_col: str = "timestamp",
    time_unit: float = 1e3,
    user_col: str | None = "user",
    label_col: str = "label",
    channels: tuple[str, str, str] = ("x", "y", "z"),
    index_col: str | None = None,
    clock_col: str | None = None,
    epoch: float = 0.0,
    burst: int = 7,
    jitter: float = 0.05,
    gap: float = 1.0,
    written: Written | None = None,
    separator: str = ",",
) -> Written:
    """Write one CSV file holding ``streams`` of ``users``, each class for ``seconds``.

    ``header`` orders the columns: the role columns named here, the
    channels, and the streams' key columns. Time is written in units of
    ``1 / time_unit`` seconds (1e3: milliseconds) from ``epoch``, as whole
    numbers; ``clock_col`` is a second clock (nanoseconds since the stream
    started, as HHAR's ``Creation_Time``), ``index_col`` a row counter.
    Classes follow each other with ``gap`` seconds between them; a stream's
    sample times are its rate's grid plus a jitter of up to ``jitter`` steps.
    Rows are written in bursts of ``burst`` samples of one stream, the bursts
    ordered by the time of their last sample. ``separator`` separates the fields.
    """
    written = written if written is not None else Written()
    lines = [separator.join(header)]
    counter = 0
    for u, user in enumerate(users):
        bursts: list[tuple[float, int, list[dict[str, str]]]] = []
        per_user = written.samples.setdefault(user, {})
        for s, stream in enumerate(streams):
            got = per_user.setdefault(stream_label(stream), [])
            step = 1.0 / stream.rate_hz
            rows: list[tuple[float, dict[str, str]]] = []
            start = 100.0 * u
            for label in classes:
                n = int(seconds * stream.rate_hz)
                times = start + np.arange(n) * step + rng.uniform(0, jitter * step, n)
                start = float(times[-1]) + gap
                xyz = rng.normal(stream.level, 1.0, size=(n, 3)).round(4)
                for t, v in zip(times, xyz, strict=True):
                    stamp = round((epoch + t) * time_unit)
                    got.append((stamp / time_unit - epoch, label, v))
                    row = {str(k): str(value) for k, value in stream.key.items()}
                    row.update({time_col: str(stamp), label_col: str(label)})
                    row.update({c: f"{a:g}" for c, a in zip(channels, v, strict=True)})
                    if user_col:
                        row[user_col] = user
                    if clock_col:
                        row[clock_col] = str(round(t * 1e9) + 7_000_000 * s)
                    rows.append((stamp, row))
            for b in range(0, len(rows), burst):
                chunk = rows[b : b + burst]
                bursts.append((chunk[-1][0], s, [r for _, r in chunk]))
        bursts.sort(key=lambda item: (item[0], item[1]))
        for _, _, chunk_rows in bursts:
            for row in chunk_rows:
                if index_col:
                    row[index_col] = str(counter)
                counter += 1
                lines.append(separator.join(row[c] for c in header))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written


def write_shared_clock(
    path: Path,
    *,
    user: str,
    keys: list[dict[str, object]],
    rate_hz: float,
    classes: list[object],
    seconds: float,
    rng: np.random.Generator,
    header: list[str],
    separator: str = ",",
    time_col: str = "timestamp",
    user_col: str = "user",
    label_col: str = "label",
    channels: tuple[str, str, str] = ("x", "y", "z"),
) -> dict[object, int]:
    """One file of streams sharing one clock: at each timestamp (ms), one row per stream.

    The clock ticks at ``rate_hz`` with a jitter of up to a tenth of a step,
    ``seconds`` of each class in turn; every stream (``keys``: its key
    columns' values) writes a row at every tick, in the order of ``keys``.
    So time repeats on ``1 - 1 / len(keys)`` of the rows, but never inside a
    stream. Returns the samples each stream holds per class.
    """
    step = 1e3 / rate_hz
    n = int(seconds * rate_hz)
    lines = [separator.join(header)]
    per_class: dict[object, int] = {}
    start = 0.0
    for label in classes:
        ticks = np.round(start + np.arange(n) * step + rng.uniform(0, 0.1 * step, n))
        start = float(ticks[-1]) + step
        per_class[label] = n
        for tick in ticks:
            for level, key in enumerate(keys):
                xyz = rng.normal(level, 1.0, 3).round(4)
                row = {str(k): str(v) for k, v in key.items()}
                row.update({time_col: str(int(tick)), label_col: str(label), user_col: user})
                row.update({c: f"{a:g}" for c, a in zip(channels, xyz, strict=True)})
                lines.append(separator.join(row[c] for c in header))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return per_class


def kept_samples(written: Written, reference: str, user: str) -> list[tuple[float, object]]:
    """A second implementation: the (time, label) of the ``reference`` samples aligning keeps.

    A sample of the slowest stream is kept where every other stream of the user
    has a sample at or before its time and one at or after it, and both carry
    its label (among samples sharing one time, the first counts). Python's
    bisect over each stream's times, sample by sample.
    """
    streams = written.samples[user]
    times_of = {name: [x[0] for x in samples] for name, samples in streams.items()}
    kept = []
    for t, label, _ in streams[reference]:
        ok = True
        for name, samples in streams.items():
            if name == reference:
                continue
            times = times_of[name]
            if t < times[0] or t > times[-1]:
                ok = False
                break
            last = times[bisect.bisect_right(times, t) - 1]  # the latest time at or before t
            first = times[bisect.bisect_left(times, t)]  # the earliest at or after t
            prev = samples[bisect.bisect_left(times, last)]  # first sample of that time
            nxt = samples[bisect.bisect_left(times, first)]
            if prev[1] != label or nxt[1] != label:
                ok = False
                break
        if ok:
            kept.append((t, label))
    return kept
