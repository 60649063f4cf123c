"""Build small archives in the exact formats of the official releases.

The real HAR70+ and OPPORTUNITY releases are too large to keep with the tests,
so these functions write tiny stand-ins byte-compatible with them (same member
paths, header, separators, number formatting, line ends). Each returns what it
wrote, parsed, so that tests can compare a reader's output with the truth.
They are shared by the reader, feature, download and pipeline tests.

Also here: :func:`har70_entry`, :func:`opportunity_entry` and
:func:`gestures_entry`, registry entries built in code that follow
``DATASETS.md`` (the built-in TOML files are the canonical ones).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from mudata.records.entry import ClassSpec, DatasetEntry, Recipe, RemoteFile, Sensor

HAR70_HEADER = "timestamp,back_x,back_y,back_z,thigh_x,thigh_y,thigh_z,label"
HAR70_CHANNELS = ("back_x", "back_y", "back_z", "thigh_x", "thigh_y", "thigh_z")
HAR70_CODES = (1, 3, 4, 5, 6, 7, 8)


def label_runs(rng: np.random.Generator, n: int, codes: Sequence[int], mean_run: int) -> np.ndarray:
    """A label sequence of ``n`` samples made of runs of random codes.

    Run lengths are geometric with mean ``mean_run``, so classes come back
    several times, apart in time, as in real recordings.
    """
    labels = np.empty(n, dtype=np.int64)
    pos = 0
    while pos < n:
        run = int(rng.geometric(1.0 / mean_run))
        labels[pos : pos + run] = rng.choice(codes)
        pos += run
    return labels


def make_har70_frame(
    rng: np.random.Generator,
    n_samples: int,
    codes: Sequence[int] = HAR70_CODES,
    mean_run: int = 400,
) -> pd.DataFrame:
    """One subject's recording as the release holds it (values rounded to 6 decimals)."""
    start = pd.Timestamp("2021-03-24 14:42:03.839")
    times = start + pd.to_timedelta(np.arange(n_samples) * 20, unit="ms")
    frame = pd.DataFrame({"timestamp": times.strftime("%Y-%m-%d %H:%M:%S.%f").str[:-3]})
    base = rng.normal(0.0, 0.3, size=(1, 6)) + np.array([[-1.0, 0.0, 0.1, -1.0, 0.0, 0.0]])
    walk = np.cumsum(rng.normal(0.0, 0.02, size=(n_samples, 6)), axis=0)
    values = np.round(base + walk + rng.normal(0.0, 0.05, size=(n_samples, 6)), 6)
    for i, name in enumerate(HAR70_CHANNELS):
        frame[name] = values[:, i]
    frame["label"] = label_runs(rng, n_samples, codes, mean_run)
    return frame


def har70_csv_bytes(frame: pd.DataFrame, *, crlf: bool = False) -> bytes:
    """The CSV text of a subject frame: header, ``%.6f`` values, integer labels."""
    body = frame.to_csv(index=False, float_format="%.6f", lineterminator="\r\n" if crlf else "\n")
    return body.encode("utf-8")


def make_har70_zip(
    path: Path,
    users: Sequence[int] = (501, 502, 503),
    rng: np.random.Generator | None = None,
    *,
    n_samples: int | Sequence[int] = 3000,
    codes: Sequence[int] = HAR70_CODES,
    mean_run: int = 400,
    folder: str = "har70plus",
    crlf: bool = False,
    extra_members: dict[str, bytes] | None = None,
) -> dict[int, pd.DataFrame]:
    """Write ``har70.zip``: ``<folder>/<user>.csv`` per user, in the order given.

    Parameters
    ----------
    path : Path
        The zip file to write.
    users : sequence of int
        Subject numbers (file stems); written in this order, so a reader must sort.
    rng : numpy Generator
        Source of the signals and labels (default seed 0).
    n_samples : int or sequence of int
        Samples per user (one value for all, or one per user).
    codes, mean_run
        Label codes drawn for the runs and their mean length.
    folder : str
        Top folder inside the archive (the release uses ``har70plus``).
    crlf : bool
        Write CRLF line ends.
    extra_members : dict, optional
        Further members (name to bytes), e.g. a malformed file.

    Returns
    -------
    dict of int to DataFrame
        Each user's frame as written (header columns).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    sizes = [n_samples] * len(users) if isinstance(n_samples, int) else list(n_samples)
    written = {}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for user, size in zip(users, sizes, strict=True):
            frame = make_har70_frame(rng, size, codes, mean_run)
            zf.writestr(f"{folder}/{user}.csv", har70_csv_bytes(frame, crlf=crlf))
            written[int(user)] = frame
        for name, data in (extra_members or {}).items():
            zf.writestr(name, data)
    return written


OPPORTUNITY_COLUMNS = 250
OPPORTUNITY_LABEL = 244
OPPORTUNITY_CHANNELS = {
    "back_x": 38,
    "back_y": 39,
    "back_z": 40,
    "shoe_x": 125,
    "shoe_y": 126,
    "shoe_z": 127,
}
OPPORTUNITY_DIR = "OpportunityUCIDataset/dataset"


def opportunity_dat_bytes(table: np.ndarray) -> bytes:
    """A ``.dat`` recording: space-separated, integers without decimals, ``NaN`` for missing."""
    finite = table[np.isfinite(table)]
    if np.array_equal(finite, np.round(finite)):
        # The usual case (readings are integers): one format string per row.
        # Adding 0.0 turns -0.0 into 0.0, which str(int(v)) would also print as 0.
        buffer = io.BytesIO()
        np.savetxt(buffer, table + 0.0, fmt="%.0f", delimiter=" ")
        return buffer.getvalue().replace(b"nan", b"NaN")
    lines = []
    for row in table:
        lines.append(
            " ".join(
                "NaN" if np.isnan(v) else (str(int(v)) if float(v).is_integer() else repr(float(v)))
                for v in row
            )
        )
    return ("\n".join(lines) + "\n").encode("ascii")


def make_opportunity_table(
    rng: np.random.Generator,
    n_rows: int,
    *,
    codes: Sequence[int] = (0, 1, 2, 4, 5),
    mean_run: int = 60,
    n_bursts: int = 2,
) -> np.ndarray:
    """One run as the release holds it: shape (n_rows, 250), 1-based column k at index k-1.

    Column 1 is the time in ms (33 ms steps), sensor columns hold integer
    readings (milli-g) with ``n_bursts`` bursts of NaN, columns 244-250 the labels
    (244 = Locomotion, the others 0 or random gesture codes).
    """
    table = np.round(rng.normal(0.0, 500.0, size=(n_rows, OPPORTUNITY_COLUMNS)))
    table[:, 0] = np.arange(n_rows) * 33
    # Missing values come in bursts (a sensor drops out for a while), as in the release.
    for _ in range(n_bursts):
        start = int(rng.integers(0, n_rows))
        stop = start + int(rng.integers(5, 30))
        columns = 1 + rng.choice(242, size=int(rng.integers(1, 40)), replace=False)
        table[start:stop, columns[:, None].T] = np.nan
    table[:, 243:] = 0
    table[:, OPPORTUNITY_LABEL - 1] = label_runs(rng, n_rows, codes, mean_run)
    table[:, 244] = rng.choice([0, 101, 102, 104, 105], size=n_rows)
    return table


def make_opportunity_zip(
    path: Path,
    users: Sequence[int] = (1, 2),
    rng: np.random.Generator | None = None,
    *,
    runs: Sequence[int] = (1, 2, 3, 4, 5),
    n_rows: int = 400,
    drill: bool = True,
    n_bursts: int = 2,
    extra_members: dict[str, bytes] | None = None,
) -> dict[tuple[int, int], np.ndarray]:
    """Write an OPPORTUNITY-like archive ``OpportunityUCIDataset/dataset/S<u>-ADL<r>.dat``.

    Runs are written in a scrambled order (ADL5 first) so that a reader must
    order them itself; a ``S<u>-Drill.dat`` (ignored by the study) and the
    release's ``column_names.txt`` are added.

    Returns
    -------
    dict of (user, run) to ndarray, shape (n_rows, 250)
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    written = {}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            f"{OPPORTUNITY_DIR}/column_names.txt", "Column: 1 MILLISEC\nColumn: 244 Locomotion\n"
        )
        for user in users:
            for run in sorted(runs, reverse=True):
                table = make_opportunity_table(rng, n_rows, n_bursts=n_bursts)
                zf.writestr(f"{OPPORTUNITY_DIR}/S{user}-ADL{run}.dat", opportunity_dat_bytes(table))
                written[(int(user), int(run))] = table
            if drill:
                drill_table = make_opportunity_table(rng, 50)
                zf.writestr(
                    f"{OPPORTUNITY_DIR}/S{user}-Drill.dat", opportunity_dat_bytes(drill_table)
                )
        for name, data in (extra_members or {}).items():
            zf.writestr(name, data)
    return written


def gestures_txt_bytes(table: np.ndarray) -> bytes:
    """A gesture file: 3 integer columns then x, y, z with 6 decimals, space-separated."""
    lines = [f"{int(a)} {int(b)} {int(c)} {x:.6f} {y:.6f} {z:.6f}" for a, b, c, x, y, z in table]
    return ("\n".join(lines) + "\n").encode("ascii")


def make_gestures_zip(
    path: Path,
    users: int = 8,
    gestures: int = 20,
    repetitions: int = 20,
    rng: np.random.Generator | None = None,
    *,
    extras: dict[tuple[int, int], Sequence[int]] | None = None,
    lengths: tuple[int, int] = (10, 51),
) -> dict[tuple[int, int, int], np.ndarray]:
    """Write ``gestures-dataset.zip`` with ``U<uu>/<gg>/<rr>.txt`` members.

    Parameters
    ----------
    users, gestures, repetitions : int
        Counts (numbered from 1, two digits).
    extras : dict, optional
        Extra repetition numbers per (user, gesture), e.g. ``{(2, 1): [21, 22]}``,
        like the 51 extras of the release.
    lengths : (int, int)
        Inclusive range of rows per file.

    Returns
    -------
    dict of (user, gesture, repetition) to ndarray, shape (rows, 6)
        Values as written (x, y, z rounded to 6 decimals).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    written = {}
    plan = [
        (u, g, r)
        for u in range(1, users + 1)
        for g in range(1, gestures + 1)
        for r in range(1, repetitions + 1)
    ]
    for (u, g), reps in (extras or {}).items():
        plan += [(u, g, r) for r in reps]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("gestures-dataset/info.txt", "Smartwatch gestures dataset\n")
        zf.writestr("gestures-dataset/gestures.png", b"\x89PNG\r\n\x1a\n")
        for u, g, r in plan:
            rows = int(rng.integers(lengths[0], lengths[1] + 1))
            stamp = 1384186054309 + np.arange(rows) * 20
            acc = np.round(rng.normal([0.0, 0.0, 9.8], 3.0, size=(rows, 3)), 6)
            table = np.column_stack(
                [stamp, 789520000000 + np.arange(rows), 1453000000 + np.arange(rows), acc]
            )
            zf.writestr(f"gestures-dataset/U{u:02d}/{g:02d}/{r:02d}.txt", gestures_txt_bytes(table))
            written[(u, g, r)] = table
    return written


def _entry(name: str, reader: str, recipe: Recipe, classes, sensors, options) -> DatasetEntry:
    return DatasetEntry(
        name=name,
        title=name,
        version="test",
        homepage="https://example.invalid",
        licence="test",
        citation="test",
        sampling_rate_hz=50.0,
        reader=reader,
        recipe=recipe,
        classes=tuple(ClassSpec(code, label) for code, label in classes),
        files=(RemoteFile(name=f"{name}.zip", path=f"{name}.zip"),),
        sensors=tuple(Sensor(n, tuple(c)) for n, c in sensors),
        reader_options=dict(options),
    )


def har70_entry(**recipe_changes) -> DatasetEntry:
    """HAR70+ as ``DATASETS.md`` states it (window 150, 5 kept classes, back then thigh)."""
    recipe = Recipe(**{"name": "study-window", "window": 150, **recipe_changes})
    classes = [(1, "walking"), (3, "shuffling"), (6, "standing"), (7, "sitting"), (8, "lying")]
    sensors = [("back", HAR70_CHANNELS[:3]), ("thigh", HAR70_CHANNELS[3:])]
    return _entry("har70", "har70-csv", recipe, classes, sensors, {"members": "*.csv"})


def opportunity_entry(**recipe_changes) -> DatasetEntry:
    """OPPORTUNITY as ``DATASETS.md`` states it (window 120, Stand/Walk/Sit/Lie)."""
    recipe = Recipe(**{"name": "study-window", "window": 120, **recipe_changes})
    classes = [(1, "Stand"), (2, "Walk"), (4, "Sit"), (5, "Lie")]
    channels = list(OPPORTUNITY_CHANNELS)
    sensors = [("back", channels[:3]), ("shoe", channels[3:])]
    options = {
        "members": f"{OPPORTUNITY_DIR}/S*-ADL*.dat",
        "label_column": OPPORTUNITY_LABEL,
        "columns": dict(OPPORTUNITY_CHANNELS),
    }
    return _entry("opportunity", "opportunity-dat", recipe, classes, sensors, options)


def gestures_entry() -> DatasetEntry:
    """Smartwatch Gestures as ``DATASETS.md`` states it (segments, n1..n20, diff sensor)."""
    recipe = Recipe(
        name="study-segment", sd_ddof=0, auc="trapezoid", meandif="mean", second_sensor="diff"
    )
    classes = [(g, f"n{g}") for g in range(1, 21)]
    return _entry(
        "gestures",
        "gestures-txt",
        recipe,
        classes,
        [("watch", ("x", "y", "z"))],
        {"members": "gestures-dataset/U*/*/*.txt", "repetitions": 20},
    )
