"""Releases whose labels are intervals in an annotation table, written byte for byte here.

The model is UCI HAPT ("Smartphone-Based Recognition of Human Activities and
Postural Transitions"): ``RawData/acc_exp01_user01.txt`` and
``gyro_exp01_user01.txt`` (three space-separated columns, no header, 50 Hz,
written by MATLAB as ``%.16e``), ``RawData/labels.txt`` with lines
``experiment user activity start end`` (1-based inclusive sample indices,
samples before, between and after the intervals unlabelled) and
``activity_labels.txt``. Each user did two experiments, as in HAPT.

:func:`write_release` writes that shape and its variants (intervals in
seconds or milliseconds of a time column, a header line or none, a key that is
a column of the signal files, CSV or whitespace), and returns the intervals it
wrote, so that tests count the rows and windows independently of the reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

RATE = 50
CLASSES = {1: "WALKING", 2: "SITTING", 3: "STANDING", 4: "LAYING"}


@dataclass(frozen=True)
class Written:
    """One interval as written: its recording, user, class, and its samples (0-based, [lo, hi))."""

    experiment: int
    user: str
    label: int
    lo: int
    hi: int
    line: int


@dataclass
class Release:
    """A written release: its folder, the intervals, the samples per recording."""

    root: Path
    intervals: list[Written] = field(default_factory=list)
    lengths: dict[int, int] = field(default_factory=dict)
    labels_file: str = ""

    @property
    def unlabelled(self) -> int:
        return sum(self.lengths.values()) - sum(w.hi - w.lo for w in self.intervals)


def _matlab(value: float) -> str:
    """``%.16e`` as MATLAB writes it: a three-digit exponent (``1.0208333333333333e+000``)."""
    mantissa, exponent = f"{value:.16e}".split("e")
    return f"{mantissa}e{exponent[0]}{int(exponent[1:]):03d}"


def _plan(rng: np.random.Generator, experiments: int) -> tuple[dict[int, int], list[tuple]]:
    """Per experiment: its length and its intervals (experiment, user, class, lo, hi)."""
    lengths, plan = {}, []
    for experiment in range(1, experiments + 1):
        user = (experiment + 1) // 2  # two experiments per user, as HAPT's volunteers did
        position = int(rng.integers(150, 260))  # unlabelled lead-in
        order = [*CLASSES, *CLASSES]
        rng.shuffle(order)
        for label in order:
            size = int(rng.integers(330, 520))
            plan.append((experiment, user, label, position, position + size))
            position += size + int(rng.integers(20, 160))  # an unlabelled transition
        lengths[experiment] = position + int(rng.integers(50, 200))
    return lengths, plan


def _signals(rng: np.random.Generator, length: int, plan: list[tuple]) -> np.ndarray:
    """Accelerometer and gyroscope samples (g, rad/s), their mean depending on the class."""
    values = rng.normal(0, 0.05, size=(length, 6))
    values[:, 0] += 1.0
    for _, _, label, lo, hi in plan:
        values[lo:hi, :3] += 0.2 * label
        values[lo:hi, 3:] += 0.1 * np.sin(np.arange(hi - lo)[:, None] / (3 + label))
    return values


def write_release(
    folder: Path,
    *,
    shape: str = "hapt",
    experiments: int = 6,
    seed: int = 0,
    extra_lines: list[str] | None = None,
) -> Release:
    """Write one shape of an annotated release into ``folder`` (created).

    Shapes
    ------
    ``hapt``
        As published: ``RawData/{acc,gyro}_expNN_userNN.txt``, whitespace, no
        header; ``RawData/labels.txt`` of sample indices, no header.
    ``hapt-header``
        As ``hapt``, the labels with a header line ``experiment user activity start end``.
    ``seconds-csv``
        ``data/subjectNN/run_E.csv`` with a header ``time_s,ax,ay,az,gx,gy,gz``
        (seconds from the start of the run), labels ``annotations.csv`` with a
        header ``subject,run,label,t_start,t_end`` in seconds, half-open.
    ``ms-column-key``
        One file per user ``user_NN.csv`` (``;``-separated), a column
        ``session`` telling its experiments apart and ``timestamp_ms``; labels
        ``events.csv`` (``user,session,begin_ms,end_ms,class``) in milliseconds:
        the key ``session`` is a column of the signals.
    ``whitespace-time``
        ``rec/sNN_eE.dat`` whitespace with a header ``t x y z gx gy gz``,
        labels ``intervals.txt`` whitespace with a header, in seconds.
    """
    rng = np.random.default_rng(seed)
    lengths, plan = _plan(rng, experiments)
    release = Release(folder, lengths=lengths)
    folder.mkdir(parents=True)
    (folder / "README.txt").write_text("Annotated release written by the tests.\n")
    label_lines: list[str] = []
    for experiment, length in lengths.items():
        mine = [p for p in plan if p[0] == experiment]
        user = mine[0][1]
        values = _signals(rng, length, mine)
        times = np.arange(length) / RATE
        if shape in ("hapt", "hapt-header"):
            raw = folder / "RawData"
            raw.mkdir(exist_ok=True)
            for sensor, cols in (("acc", slice(0, 3)), ("gyro", slice(3, 6))):
                text = "".join(" ".join(map(_matlab, row)) + "\n" for row in values[:, cols])
                (raw / f"{sensor}_exp{experiment:02d}_user{user:02d}.txt").write_text(text)
        elif shape == "seconds-csv":
            sub = folder / "data" / f"subject{user:02d}"
            sub.mkdir(parents=True, exist_ok=True)
            lines = ["time_s,ax,ay,az,gx,gy,gz"]
            lines += [
                f"{t:.2f}," + ",".join(f"{v:.5f}" for v in row)
                for t, row in zip(times, values, strict=True)
            ]
            (sub / f"run_{experiment}.csv").write_text("\n".join(lines) + "\n")
        elif shape == "ms-column-key":
            path = folder / f"user_{user:02d}.csv"
            if not path.exists():
                path.write_text("timestamp_ms;session;ax;ay;az;gx;gy;gz\n")
            with path.open("a") as fh:
                for t, row in zip(times, values, strict=True):
                    fh.write(
                        f"{round(t * 1000)};{experiment};"
                        + ";".join(f"{v:.4f}" for v in row)
                        + "\n"
                    )
        elif shape == "whitespace-time":
            rec = folder / "rec"
            rec.mkdir(exist_ok=True)
            lines = ["t x y z gx gy gz"]
            lines += [
                f"{t:.2f} " + " ".join(f"{v:.5f}" for v in row)
                for t, row in zip(times, values, strict=True)
            ]
            (rec / f"s{user:02d}_e{experiment}.dat").write_text("\n".join(lines) + "\n")
        else:
            raise ValueError(shape)
    header = {
        "hapt": None,
        "hapt-header": "experiment user activity start end",
        "seconds-csv": "subject,run,label,t_start,t_end",
        "ms-column-key": "user,session,begin_ms,end_ms,class",
        "whitespace-time": "subject experiment activity from to",
    }[shape]
    if header:
        label_lines.append(header)
    for experiment, user, label, lo, hi in plan:
        if shape in ("hapt", "hapt-header"):
            line = f"{experiment} {user} {label} {lo + 1} {hi}"  # 1-based, inclusive
        elif shape == "seconds-csv":
            line = f"{user},{experiment},{label},{lo / RATE:.2f},{hi / RATE:.2f}"
        elif shape == "ms-column-key":
            line = f"{user},{experiment},{lo * 20},{hi * 20},{label}"
        else:
            line = f"{user:02d} {experiment} {label} {lo / RATE:.2f} {hi / RATE:.2f}"
        label_lines.append(line)
        release.intervals.append(Written(experiment, str(user), label, lo, hi, len(label_lines)))
    label_lines += extra_lines or []
    name = {
        "hapt": "RawData/labels.txt",
        "hapt-header": "RawData/labels.txt",
        "seconds-csv": "annotations.csv",
        "ms-column-key": "events.csv",
        "whitespace-time": "intervals.txt",
    }[shape]
    (folder / name).write_text("\n".join(label_lines) + "\n")
    release.labels_file = name
    if shape in ("hapt", "hapt-header"):
        (folder / "activity_labels.txt").write_text(
            "".join(f"{code} {name:<18}\n" for code, name in CLASSES.items())
        )
    return release
