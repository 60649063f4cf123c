"""Small archives in the exact formats of the MHEALTH, PAMAP2, HARTH and MotionSense releases.

Each builder follows the layout the dataset's own documentation gives:

* MHEALTH (README.txt of the UCI archive): ``MHEALTHDATASET/mHealth_subjectN.log``,
  tab-separated, no header, 24 columns (23 signals, the label in column 24,
  0 for the null class), 50 Hz.
* PAMAP2 (readme of the UCI release): ``PAMAP2_Dataset/Protocol/subject10N.dat``
  and ``PAMAP2_Dataset/Optional/...``, space-separated, no header, 54 columns
  (timestamp in s, activityID, heart rate, 3 x 17 IMU columns), missing values
  written ``NaN``, 100 Hz.
* HARTH (README of ntnu-ai-lab/harth-ml-experiments and the UCI page):
  ``harth/S0NN.csv`` with the header
  ``timestamp,back_x,back_y,back_z,thigh_x,thigh_y,thigh_z,label``, 50 Hz.
* MotionSense (README of mmalekzadeh/motion-sense):
  ``A_DeviceMotion_data/<act>_<trial>/sub_<n>.csv``, a CSV whose first,
  unnamed column is the row index, then the 12 device-motion columns, 50 Hz;
  trials dws 1, 2, 11; ups 3, 4, 12; wlk 7, 8, 15; jog 9, 16; std 6, 14; sit 5, 13.

Each returns what it wrote, parsed, so that tests can check the reader's output.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd


def label_runs(rng: np.random.Generator, n: int, codes: Sequence[int], mean_run: int) -> np.ndarray:
    """Labels of a protocol: every code in turn, in a shuffled order, runs of about ``mean_run``.

    Unlike independent random runs, each code gets about ``n / len(codes)``
    samples, as each activity of a protocol does, and comes back apart in time.
    """
    labels = np.empty(n, dtype=np.int64)
    pos = 0
    while pos < n:
        for code in rng.permutation(np.asarray(codes)):
            run = int(mean_run * rng.uniform(0.8, 1.2))
            labels[pos : pos + run] = code
            pos += run
            if pos >= n:
                break
    return labels


def _signal(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """``k`` smooth, noisy channels of ``n`` samples (never constant)."""
    walk = np.cumsum(rng.normal(0.0, 0.05, size=(n, k)), axis=0)
    return walk + rng.normal(0.0, 0.2, size=(n, k)) + rng.normal(0.0, 1.0, size=(1, k))


# ------------------------------------------------------------------ MHEALTH

MHEALTH_CODES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)


def make_mhealth_zip(
    path: Path, users: Sequence[int], rng: np.random.Generator, n_samples: int = 20000
) -> dict[int, np.ndarray]:
    """``mhealth+dataset.zip``: one tab-separated .log per subject, and the README."""
    written = {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("MHEALTHDATASET/README.txt", "mHealth dataset\r\n")
        for user in users:
            table = np.empty((n_samples, 24))
            table[:, :23] = np.round(_signal(rng, n_samples, 23), 6)
            table[:, 23] = label_runs(rng, n_samples, MHEALTH_CODES, 500)
            frame = pd.DataFrame(table)
            frame[23] = frame[23].astype(int)
            text = frame.to_csv(sep="\t", header=False, index=False, float_format="%g")
            zf.writestr(f"MHEALTHDATASET/mHealth_subject{user}.log", text)
            written[user] = table
    return written


# ------------------------------------------------------------------ PAMAP2

PAMAP2_CODES = (0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 16, 17, 24)


def pamap2_table(rng: np.random.Generator, n_samples: int, missing: int = 0) -> np.ndarray:
    """54 columns: timestamp (s, 0.01 steps), activityID, heart rate (mostly NaN), 3 IMUs."""
    table = np.full((n_samples, 54), np.nan)
    table[:, 0] = np.round(5.64 + np.arange(n_samples) * 0.01, 2)
    table[:, 1] = label_runs(rng, n_samples, PAMAP2_CODES, 1000)
    table[::10, 2] = 100.0  # the ~9 Hz heart-rate monitor
    for start in (3, 20, 37):  # temperature, 2 accelerometers, gyro, magnetometer, orientation
        table[:, start] = 30.0
        table[:, start + 1 : start + 17] = np.round(_signal(rng, n_samples, 16), 6)
    if missing:
        # Wireless drops: the IMU columns are NaN for a few samples.
        rows = rng.choice(n_samples, size=missing, replace=False)
        table[rows, 4:7] = np.nan
    return table


def _pamap2_text(table: np.ndarray) -> str:
    frame = pd.DataFrame(table)
    frame[1] = frame[1].astype(int)
    frame[0] = frame[0].map("{:.2f}".format)
    return frame.to_csv(sep=" ", header=False, index=False, na_rep="NaN", float_format="%.6f")


def make_pamap2_zip(
    path: Path,
    users: Sequence[int],
    rng: np.random.Generator,
    n_samples: int = 30000,
    missing: int = 0,
) -> dict[int, np.ndarray]:
    """``PAMAP2_Dataset.zip``: Protocol and Optional sessions, one .dat per subject."""
    written = {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("PAMAP2_Dataset/readme.pdf", b"%PDF-1.4\n")
        for user in users:
            table = pamap2_table(rng, n_samples, missing)
            zf.writestr(f"PAMAP2_Dataset/Protocol/subject{user}.dat", _pamap2_text(table))
            written[user] = table
        # An optional session of the first subject: not a protocol activity, not read.
        optional = pamap2_table(rng, 500)
        optional[:, 1] = 9
        zf.writestr(f"PAMAP2_Dataset/Optional/subject{users[0]}.dat", _pamap2_text(optional))
    return written


# ------------------------------------------------------------------ HARTH

HARTH_HEADER = "timestamp,back_x,back_y,back_z,thigh_x,thigh_y,thigh_z,label"
HARTH_CODES = (1, 2, 3, 4, 5, 6, 7, 8, 13, 14, 130, 140)


def make_harth_zip(
    path: Path, users: Sequence[str], rng: np.random.Generator, n_samples: int = 15000
) -> dict[str, pd.DataFrame]:
    """``harth.zip``: ``harth/S0NN.csv`` per subject, millisecond date/times at 50 Hz."""
    written = {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for user in users:
            start = pd.Timestamp("2019-01-12 00:00:00.000")
            times = start + pd.to_timedelta(np.arange(n_samples) * 20, unit="ms")
            frame = pd.DataFrame({"timestamp": times.strftime("%Y-%m-%d %H:%M:%S.%f").str[:-3]})
            values = np.round(_signal(rng, n_samples, 6), 6)
            for i, name in enumerate(HARTH_HEADER.split(",")[1:7]):
                frame[name] = values[:, i]
            frame["label"] = label_runs(rng, n_samples, HARTH_CODES, 400)
            zf.writestr(f"harth/{user}.csv", frame.to_csv(index=False, float_format="%.6f"))
            written[user] = frame
    return written


# ------------------------------------------------------------------ MotionSense

MOTIONSENSE_TRIALS = {
    "dws": (1, 2, 11),
    "ups": (3, 4, 12),
    "wlk": (7, 8, 15),
    "jog": (9, 16),
    "std": (6, 14),
    "sit": (5, 13),
}
MOTIONSENSE_COLUMNS = (
    "attitude.roll", "attitude.pitch", "attitude.yaw",
    "gravity.x", "gravity.y", "gravity.z",
    "rotationRate.x", "rotationRate.y", "rotationRate.z",
    "userAcceleration.x", "userAcceleration.y", "userAcceleration.z",
)  # fmt: skip


def make_motionsense_zip(
    path: Path, users: Sequence[int], rng: np.random.Generator, n_samples: int = 800
) -> dict[tuple[str, int, int], pd.DataFrame]:
    """``A_DeviceMotion_data.zip``: one CSV per (activity, trial) folder and participant."""
    written = {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for activity, trials in MOTIONSENSE_TRIALS.items():
            for trial in trials:
                for user in users:
                    n = int(n_samples * rng.uniform(0.8, 1.2))
                    frame = pd.DataFrame(
                        np.round(_signal(rng, n, 12), 6), columns=list(MOTIONSENSE_COLUMNS)
                    )
                    # The first column is pandas' index, written with an empty header.
                    zf.writestr(
                        f"A_DeviceMotion_data/{activity}_{trial}/sub_{user}.csv", frame.to_csv()
                    )
                    written[(activity, trial, user)] = frame
    return written
