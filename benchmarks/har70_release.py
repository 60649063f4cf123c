"""Synthetic HAR70+ releases for the benchmarks: the official format, written fast.

Shared by ``featurize.py`` (one archive of HAR70+'s size) and
``featurize_large.py`` (folders of one or more GB). A subject file is the
header ``timestamp,back_x,...,thigh_z,label`` and one line per 50 Hz sample:
6-decimal random-walk values and activities in runs of 10 s to 5 min (the
five kept classes and the stairs, codes 4 and 5, which the recipe drops).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

import numpy as np

CHANNELS = ("back_x", "back_y", "back_z", "thigh_x", "thigh_y", "thigh_z")
HEADER = (",".join(("timestamp", *CHANNELS, "label")) + "\n").encode()
RATE_HZ = 50
HOUR = 3600 * RATE_HZ
DAY = 24 * HOUR
START_MS = 1616596923839  # 2021-03-24 14:42:03.839, as the release's first sample


def har70_entry(*, path: str = "har70"):
    """The HAR70+ entry's reader, sensors, classes and recipe (window 150, span 10; no pins)."""
    # Here, not at the top: featurize_large.py's parent process never imports mudata.
    from mudata.records.entry import ClassSpec, DatasetEntry, Recipe, RemoteFile, Sensor

    kept = [(1, "walking"), (3, "shuffling"), (6, "standing"), (7, "sitting"), (8, "lying")]
    return DatasetEntry(
        name="har70",
        title="HAR70+ (benchmark)",
        version="bench",
        homepage="https://example.invalid",
        licence="CC BY 4.0",
        citation="benchmark",
        sampling_rate_hz=float(RATE_HZ),
        reader="har70-csv",
        recipe=Recipe(name="study-window", window=150, smoothing=10),
        classes=tuple(ClassSpec(c, n) for c, n in kept),
        files=(RemoteFile(name="har70", path=path),),
        sensors=(Sensor("back", CHANNELS[:3]), Sensor("thigh", CHANNELS[3:])),
        reader_options={"members": "*.csv"},
    )


def activity_labels(rng: np.random.Generator, n: int) -> np.ndarray:
    """Activity codes of ``n`` samples, in runs of 500 to 15,000 samples (10 s to 5 min)."""
    labels = np.empty(n, dtype=np.int64)
    pos = 0
    while pos < n:
        run = int(rng.integers(500, 15000))
        labels[pos : pos + run] = rng.choice(
            [1, 3, 4, 5, 6, 7, 8], p=[0.3, 0.05, 0.02, 0.02, 0.2, 0.2, 0.21]
        )
        pos += run
    return labels


def csv_lines(rng: np.random.Generator, n: int, start_ms: int = START_MS) -> bytes:
    """``n`` samples as the release's CSV lines (no header), written by Arrow."""
    # Here, not at the top: the child processes of featurize_large.py never write data.
    import pyarrow as pa
    import pyarrow.csv as pacsv

    stamps = np.datetime64(start_ms, "ms") + np.arange(n) * np.timedelta64(1000 // RATE_HZ, "ms")
    columns = {"timestamp": pa.array(stamps)}
    for channel in CHANNELS:
        walk = np.cumsum(rng.normal(0, 0.01, n)) + rng.normal(0, 0.05, n)
        columns[channel] = pa.array(np.round(walk, 6))
    columns["label"] = pa.array(activity_labels(rng, n))
    sink = pa.BufferOutputStream()
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    pacsv.write_csv(pa.table(columns), sink, options)
    return sink.getvalue().to_pybytes()


def write_subject(fh: IO[bytes], n: int, hours: list[bytes], rng: np.random.Generator) -> None:
    """Write a subject file of ``n`` samples: the header, then hours drawn from ``hours``."""
    fh.write(HEADER)
    whole, rest = divmod(n, HOUR)
    for _ in range(whole):
        fh.write(hours[int(rng.integers(len(hours)))])
    if rest:
        block = hours[int(rng.integers(len(hours)))]
        cut = 0
        for _ in range(rest):
            cut = block.index(b"\n", cut) + 1
        fh.write(block[:cut])


def write_release(folder: Path, size_bytes: float, rng: np.random.Generator) -> tuple[int, int]:
    """Write 24 h subject files into ``folder`` up to about ``size_bytes``: (users, samples).

    A day is a sequence of hours drawn from six distinct synthetic ones, so
    that writing gigabytes is not the slow part; the last subject's
    recording is cut short to reach the size. A release of less than two
    days is two subjects of half of it each: a table needs two users.
    """
    hours = [csv_lines(rng, HOUR, START_MS + k * 3_600_000) for k in range(6)]
    line_bytes = sum(map(len, hours)) / (6 * HOUR)
    samples_left = int(size_bytes / line_bytes)
    per_user = min(DAY, -(-samples_left // 2))
    users = samples = 0
    while samples_left > 0:
        n = min(per_user, samples_left)
        with open(folder / f"{501 + users}.csv", "wb") as fh:
            write_subject(fh, n, hours, rng)
        users += 1
        samples += n
        samples_left -= n
    return users, samples
