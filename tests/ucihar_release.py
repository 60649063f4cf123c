"""A small release in the shape UCI-HAR is published in, and its variants, for tests.

The UCI "Human Activity Recognition Using Smartphones" release (folder
``UCI HAR Dataset/``) holds, per split ``train`` and ``test``: ``X_<split>.txt``
(561 features a row, no header, each value in scientific notation with three
exponent digits, a space before a positive value, two at a line's start),
``y_<split>.txt`` (the activity code, 1-6, one a line) and
``subject_<split>.txt`` (the user, one a line; no user in both splits), and
``Inertial Signals/`` with 9 files of 128 raw values a row. Beside them:
``features.txt`` (``N name`` a line, 84 names repeated), ``activity_labels.txt``
(``1 WALKING`` ... ``6 LAYING``), ``README.txt`` and ``features_info.txt``;
the zip adds ``__MACOSX/`` resource forks. No copy of it is here and nothing
is downloaded: :func:`write_release` writes one of a few users and rows, in
that shape exactly, with the variants tests need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "ACTIVITIES",
    "INERTIAL",
    "Release",
    "feature_name_lines",
    "number",
    "row_line",
    "write_release",
]

ACTIVITIES = (
    "WALKING",
    "WALKING_UPSTAIRS",
    "WALKING_DOWNSTAIRS",
    "SITTING",
    "STANDING",
    "LAYING",
)
INERTIAL = tuple(
    f"{kind}_{axis}" for kind in ("body_acc", "body_gyro", "total_acc") for axis in "xyz"
)


def number(value: float) -> str:
    """A value as UCI-HAR writes it: ``2.8858451e-001``, ``-2.0294171e-002``, a space before
    a positive one (C's ``%e`` with 7 decimals and a three-digit exponent)."""
    mantissa, exponent = f"{value:.7e}".split("e")
    sign = "-" if exponent[0] == "-" else "+"
    text = f"{mantissa}e{sign}{int(exponent[1:]):03d}"
    return text if text.startswith("-") else f" {text}"


def feature_name_lines(n: int) -> list[str]:
    """``n`` lines ``N name`` as in features.txt: names with ``( ) , -`` and some repeated
    (each ``bandsEnergy`` name three times, as its X, Y and Z blocks name them)."""
    names = []
    bases = ["tBodyAcc-mean()-X", "tBodyAcc-mean()-Y", "tBodyAcc-std()-Z", "tGravityAcc-max()-X"]
    bands = ["fBodyAcc-bandsEnergy()-1,8", "fBodyAcc-bandsEnergy()-9,16"]
    while len(names) < n:
        names += bases[: n - len(names)]
        for band in bands:
            names += [band] * min(3, n - len(names))
    return [f"{i} {name}" for i, name in enumerate(names[:n], 1)]


def row_line(values: np.ndarray, separator: str = " ") -> str:
    """One row as UCI-HAR writes it: each value after a space, a positive one after two
    (``"  2.8858451e-001 -2.0294171e-002"``); with ``separator="\t"``, a tab before each."""
    if separator == " ":
        return "".join(" " + number(v) for v in values)
    return "".join(separator + number(v).strip() for v in values)


@dataclass
class Release:
    """What :func:`write_release` wrote: the folder and the truth of each split."""

    root: Path
    top: Path
    users: dict[str, list[int]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    labels: dict[str, np.ndarray] = field(default_factory=dict)
    subjects: dict[str, np.ndarray] = field(default_factory=dict)
    n_features: int = 0


def write_release(
    root: Path,
    *,
    users: int = 6,
    rows_per_user: int = 40,
    n_features: int = 12,
    splits: tuple[str, ...] = ("train", "test"),
    line_end: str = "\n",
    separator: str = " ",
    label_name: str = "y_{split}.txt",
    user_name: str = "subject_{split}.txt",
    first_code: int = 1,
    inertial: bool = True,
    macosx: bool = True,
    seed: int = 0,
) -> Release:
    """Write a release of UCI-HAR's shape under ``root/UCI HAR Dataset``.

    Parameters
    ----------
    users, rows_per_user : int
        Users in all (split between the splits, none in two) and rows of each.
    n_features : int
        Columns of the X tables and lines of features.txt (561 in the release).
    splits : tuple of str
        The split folders (``("train",)`` for a single split).
    line_end : str
        ``"\\n"`` as published, ``"\\r\\n"`` for a copy through Windows.
    separator : str
        Between values: ``" "`` as published (with the sign's space), ``"\\t"`` for tabs.
    label_name, user_name : str
        The side files' names, ``{split}`` filled in (``labels.txt``, ``users.txt``).
    first_code : int
        The first activity code: 1 as published, 0 for 0-based codes.
    inertial, macosx : bool
        Write ``Inertial Signals/`` and the ``__MACOSX/`` junk.
    """
    rng = np.random.default_rng(seed)
    top = root / "UCI HAR Dataset"
    top.mkdir(parents=True, exist_ok=True)
    release = Release(root, top, n_features=n_features)

    def write(path: Path, lines: list[str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes("".join(line + line_end for line in lines).encode("ascii"))

    codes = [first_code + i for i in range(len(ACTIVITIES))]
    write(top / "features.txt", feature_name_lines(n_features))
    write(top / "activity_labels.txt", [f"{c} {a}" for c, a in zip(codes, ACTIVITIES, strict=True)])
    write(top / "README.txt", ["Human Activity Recognition Using Smartphones Dataset", "v1.0"])
    write(top / "features_info.txt", ["Feature Selection", "=================", "tBodyAcc-XYZ"])
    ids = list(range(1, users + 1))
    share = np.array_split(np.array(ids), len(splits))
    for split, people in zip(splits, share, strict=True):
        folder = top / split
        subjects = np.repeat(people, rows_per_user)  # grouped by user, as published
        labels = np.array(
            [codes[(i // 5) % len(codes)] for i in range(subjects.size)], dtype=np.int64
        )
        values = rng.uniform(-1, 1, size=(subjects.size, n_features))
        lines = [row_line(row, separator) for row in values]
        write(folder / f"X_{split}.txt", lines)
        write(folder / label_name.replace("{split}", split), [str(c) for c in labels])
        write(folder / user_name.replace("{split}", split), [str(u) for u in subjects])
        if inertial:
            for signal in INERTIAL:
                raw = rng.uniform(-1, 1, size=(subjects.size, 128))
                write(
                    folder / "Inertial Signals" / f"{signal}_{split}.txt",
                    [row_line(row, separator) for row in raw],
                )
        release.users[split] = [int(p) for p in people]
        release.rows[split] = int(subjects.size)
        release.labels[split] = labels
        release.subjects[split] = subjects
    if macosx:
        junk = root / "__MACOSX" / "UCI HAR Dataset" / "train"
        junk.mkdir(parents=True, exist_ok=True)
        (junk / "._X_train.txt").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ")
        (root / "__MACOSX" / "UCI HAR Dataset" / "._features.txt").write_bytes(b"\x00\x05\x16\x07")
    return release
