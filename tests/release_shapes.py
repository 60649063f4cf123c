"""Files in the shapes real releases are published in, scaled down (issue 16).

Each builder writes, into a folder, files laid out and formatted as one kind
of public release is, documentation and metadata included, with fewer users
and rows so that a test builds them in a second or two. The signals are
random walks around a level that depends on the class, so that a classifier
has something to learn, while no single column separates the classes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd


def _walk(rng: np.random.Generator, n: int, channels: int, level: float) -> np.ndarray:
    drift = np.cumsum(rng.normal(0, 0.05, size=(n, channels)), axis=0)
    return level + drift + rng.normal(0, 1.0, size=(n, channels))


def documented_activity_folders(root: Path, rng: np.random.Generator) -> Path:
    """One folder per activity, one whitespace text file per recording, the
    volunteer at the end of the file name; README.txt and MANUAL.txt at the top."""
    root.mkdir(parents=True)
    (root / "README.txt").write_text("Dataset for ADL recognition with wrist-worn accelerometer\n")
    (root / "MANUAL.txt").write_text("Each file holds one recording: x y z, 0..63, 32 Hz\n")
    for level, activity in enumerate(("Brush_teeth", "Climb_stairs", "Walk")):
        (root / activity).mkdir()
        for user in ("f1", "f2", "m1", "m2"):
            for trial in (1, 2):
                values = np.clip(np.round(30 + 3 * _walk(rng, 600, 3, 0.8 * level)), 0, 63)
                name = f"Accelerometer-2011-04-1{trial}-13-28-18-{activity.lower()}-{user}.txt"
                np.savetxt(root / activity / name, values.astype(int), fmt="%d")
    return root


def _r_number(value: int) -> str:
    """A row number as R wrote the chest release's counter: exact up to 99999, then with
    5 significant digits (1e+05, 1.0001e+05, ...; 100005 is written 1.0000e+05 there)."""
    if value == 100_005:
        return "1.0000e+05"
    return str(value) if value < 100_000 else f"{value:.5g}"


def numbered_participants(root: Path, rng: np.random.Generator) -> Path:
    """``1.csv`` ... ``4.csv``, no header, columns ``seq,x,y,z,label``: ``seq``
    counts rows (with 5 significant digits past 99,999, so flat ten rows at a
    time), and an undocumented label 0."""
    root.mkdir(parents=True)
    for participant in range(1, 5):
        parts, labels = [], []
        for label in (1, 2, 3, 0, 1, 2, 3):
            n = 120 if label == 0 else 1000
            parts.append(1900 + 25 * _walk(rng, n, 3, 0.8 * label))
            labels += [label] * n
        values = np.round(np.concatenate(parts))
        start = 99_990 - 3000 * (participant == 1)  # the 1e+05 row falls in every file
        lines = [
            f"{_r_number(start + i)},{x:.0f},{y:.0f},{z:.0f},{label}"
            for i, ((x, y, z), label) in enumerate(zip(values, labels, strict=True))
        ]
        (root / f"{participant}.csv").write_text("\n".join(lines) + "\n")
    return root


def phone_watch_executions(root: Path, rng: np.random.Generator) -> Path:
    """``DATA/sNN/sNN_EE_{sp,sw}.csv`` per subject, execution and device, with a
    header and epoch-millisecond timestamps that repeat; README.md,
    .zenodo.json and DATA/executions_info.csv (other columns) beside them."""
    (root / "DATA").mkdir(parents=True)
    (root / "README.md").write_text("# Smartphone and smartwatch recordings\n")
    (root / ".zenodo.json").write_text(json.dumps({"title": "phone and watch", "creators": []}))
    info = []
    start = 1_600_000_000_000
    for subject in (1, 2, 3):
        folder = root / "DATA" / f"s{subject:02d}"
        folder.mkdir()
        for execution, activity in enumerate(("walking", "sitting", "walking", "sitting"), 1):
            info.append((f"s{subject:02d}", execution, activity, 20))
            for device in ("sp", "sw"):
                n = 1000
                times = start + np.round(np.arange(n) * 20.0).astype(np.int64)
                times[1::97] = times[0:-1:97]  # two samples in the same millisecond
                start += n * 20 + 5000
                values = _walk(rng, n, 3, 1.0 * (activity == "walking"))
                frame = pd.DataFrame(
                    {
                        "timestamp": times,
                        "x": values[:, 0].round(4),
                        "y": values[:, 1].round(4),
                        "z": values[:, 2].round(4),
                        "activity": activity,
                    }
                )
                frame.to_csv(folder / f"s{subject:02d}_{execution:02d}_{device}.csv", index=False)
    pd.DataFrame(info, columns=["subject", "execution", "activity", "duration_s"]).to_csv(
        root / "DATA" / "executions_info.csv", index=False
    )
    return root


SENSORS = ("belt", "arm", "dumbbell", "forearm")
SIGNALS = (
    "roll_{s}", "pitch_{s}", "yaw_{s}", "total_accel_{s}",
    "gyros_{s}_x", "gyros_{s}_y", "gyros_{s}_z", "accel_{s}_x", "accel_{s}_y", "accel_{s}_z",
    "magnet_{s}_x", "magnet_{s}_y", "magnet_{s}_z",
)  # fmt: skip
SUMMARIES = (
    "kurtosis_roll_{s}", "kurtosis_picth_{s}", "kurtosis_yaw_{s}", "skewness_roll_{s}",
    "skewness_pitch_{s}", "skewness_yaw_{s}", "max_roll_{s}", "max_picth_{s}", "max_yaw_{s}",
    "min_roll_{s}", "min_pitch_{s}", "min_yaw_{s}", "amplitude_roll_{s}", "amplitude_pitch_{s}",
    "amplitude_yaw_{s}", "var_total_accel_{s}", "avg_roll_{s}", "stddev_roll_{s}", "var_roll_{s}",
    "avg_pitch_{s}", "stddev_pitch_{s}", "var_pitch_{s}", "avg_yaw_{s}", "stddev_yaw_{s}",
    "var_yaw_{s}",
)  # fmt: skip
SIGNAL_COLUMNS = [c.format(s=s) for s in SENSORS for c in SIGNALS]
SUMMARY_COLUMNS = [c.format(s=s) for s in SENSORS for c in SUMMARIES]
USER_NAMES = ("adelmo", "carlitos", "charles", "eurico", "jeremy", "pedro")


def weight_lifting_gz(path: Path, rng: np.random.Generator, per_cell: int = 100) -> Path:
    """One gzipped, quoted CSV of 160 columns: an unnamed row number (the file is
    sorted by class), text user names, epoch-second times, a window counter,
    100 summary columns over 90 % empty with ``#DIV/0!`` cells, classes A-E in ``classe``."""
    rows = []
    second = 1_322_489_600
    window = 0
    for label_rank, label in enumerate("ABCDE"):
        for user in USER_NAMES:
            values = _walk(rng, per_cell, len(SIGNAL_COLUMNS), 0.5 * label_rank)
            for i in range(per_cell):
                if i % 20 == 0:
                    window += 1
                new_window = "yes" if i % 20 == 19 else "no"
                second += i % 40 == 0
                summary = [
                    ("#DIV/0!" if j % 3 == 0 else f"{rng.normal():.4f}")
                    if new_window == "yes"
                    else ""
                    for j in range(len(SUMMARY_COLUMNS))
                ]
                rows.append(
                    [user, second, 120_000 + 1000 * i, "28/11/2011 14:13", new_window, window]
                    + [f"{v:.3f}" for v in values[i]]
                    + summary
                    + [label]
                )
    header = ["user_name", "raw_timestamp_part_1", "raw_timestamp_part_2", "cvtd_timestamp"]
    header += ["new_window", "num_window", *SIGNAL_COLUMNS, *SUMMARY_COLUMNS, "classe"]
    lines = ['"",' + ",".join(f'"{h}"' for h in header)]
    for number, row in enumerate(rows, start=1):
        lines.append(",".join([f'"{number}"', *(f'"{v}"' for v in row)]))
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def inertial_mat_files(root: Path, rng: np.random.Generator) -> Path:
    """``a{action}_s{subject}_t{trial}_inertial.mat``: an N x 6 matrix (acc xyz,
    gyro xyz) at 50 Hz, about 4 s per trial, no time column."""
    from scipy.io import savemat

    root.mkdir(parents=True)
    for action in range(1, 5):
        for subject in range(1, 5):
            for trial in range(1, 5):
                n = int(rng.integers(195, 215))
                matrix = _walk(rng, n, 6, 0.7 * action)
                savemat(root / f"a{action}_s{subject}_t{trial}_inertial.mat", {"d_iner": matrix})
    return root


def newcomer_csv(path: Path, rng: np.random.Generator) -> Path:
    """A newcomer's own recordings: 3 users x 2 activities x 2 minutes at 50 Hz in
    one CSV, epoch-millisecond times with one repeated millisecond."""
    parts = []
    start = 1_700_000_000_000
    for user in ("ana", "ben", "cleo"):
        for level, activity in enumerate(("walk", "rest")):
            n = 6000
            times = start + np.arange(n) * 20
            start += n * 20 + 60_000
            values = _walk(rng, n, 3, 1.0 * level)
            parts.append(
                pd.DataFrame(
                    {
                        "user": user,
                        "activity": activity,
                        "timestamp": times,
                        "acc_x": values[:, 0].round(4),
                        "acc_y": values[:, 1].round(4),
                        "acc_z": values[:, 2].round(4),
                    }
                )
            )
    frame = pd.concat(parts, ignore_index=True)
    frame.loc[9001, "timestamp"] = frame.loc[9000, "timestamp"]  # one repeated millisecond
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    return path


#: Channel names of a release of ``n`` EMG electrodes, as releases spell them.
EMG_NAMES = {
    "channel": lambda n: [f"channel{i}" for i in range(1, n + 1)],
    "emg": lambda n: [f"emg{i}" for i in range(1, n + 1)],
    "ch_": lambda n: [f"ch_{i}" for i in range(1, n + 1)],
}


def emg_gesture_series(
    root: Path,
    rng: np.random.Generator,
    channels: list[str],
    *,
    subjects: int = 4,
    series: int = 2,
    per_gesture: int = 700,
    header: bool = True,
) -> tuple[Path, dict[tuple[str, int, int], int]]:
    """The shape of UCI "EMG data for gestures": a folder per subject (``01/`` ..),
    one tab-separated file per series (``1_raw_data_13-12_22.03.16.txt``), columns
    ``time channel1 .. channel8 class``, time in milliseconds at 1000 Hz, and
    class 0 ("unmarked") between the gestures 1 to 3. The channels are given:
    any number and any names (an accelerometer's ``acc_x acc_y acc_z`` among them).

    Returns the root and, per (subject, class, series), the samples written (for
    the tests to count the windows independently).
    """
    root.mkdir(parents=True)
    counts: dict[tuple[str, int, int], int] = {}
    for subject in range(1, subjects + 1):
        folder = root / f"{subject:02d}"
        folder.mkdir()
        for number in range(1, series + 1):
            parts, labels = [], []
            for gesture in (1, 2, 3):
                for code, n in ((0, 400), (gesture, per_gesture + 37 * number + 11 * subject)):
                    # EMG is signed and small; its spread, not its level, tells gestures apart.
                    noise = rng.normal(0, 1e-5 * (1 + code), size=(n, len(channels)))
                    parts.append(np.round(noise + 2e-6 * code, 8))
                    labels += [code] * n
                    key = (f"{subject:02d}", code, number)
                    counts[key] = counts.get(key, 0) + n
            values = np.concatenate(parts)
            frame = pd.DataFrame(values, columns=channels)
            frame.insert(0, "time", np.arange(1, len(frame) + 1))
            frame["class"] = labels
            name = f"{number}_raw_data_1{number}-1{subject}_22.03.16.txt"
            frame.to_csv(folder / name, sep="\t", index=False, header=header)
    return root, counts
