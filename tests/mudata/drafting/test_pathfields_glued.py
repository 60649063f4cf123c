"""Users, labels and recordings glued into one token of the names (issue 28, 6).

Path tokens were split at ``-``, ``_`` and spaces only, so ``S01R01.txt``
(Daphnet) or ``a1t1.mat`` (USC-HAD) was one token and no user was found, and
a folder named as a user (``Subject1/``) was read as the label. A token of
several letter+digit runs is now split into one field per run, each weighed
by its prefix; a folder named by a user prefix and a number is the user.

The releases are written here with prefixes, separators, nesting and counts
varied; what each drafted template reads is compared with what was written.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from mudata.drafting.draft import draft_entry
from mudata.drafting.pathfields import read_paths


def _read(template_pattern: str, members: list[str], role: str) -> list[str]:
    regex = re.compile(template_pattern)
    found = [regex.search(m) for m in members]
    assert all(found), (template_pattern, members)
    return [m.group(role) for m in found if m]


@pytest.mark.parametrize(
    ("user", "recording", "users", "takes", "suffix"),
    [
        ("S", "R", (1, 2, 3, 9), (1, 2), ".txt"),
        ("sub", "trial", (3, 4, 5), (1, 2, 3), ".csv"),
        ("P", "T", (10, 11, 12, 13, 14), (1, 2), ".dat"),
    ],
)
def test_a_user_and_a_trial_glued_in_the_name(user, recording, users, takes, suffix):
    """S01R01.txt, sub3trial2.csv: the user run is the user, the trial run the recording,
    even when most users have a single trial (nearly one user per file)."""
    members = []
    for k, u in enumerate(users):
        # the first user has every trial, the others one or two: uneven, as published
        for t in takes[: len(takes) if k == 0 else 1 + k % len(takes)]:
            members.append(f"release/{user}{u:02d}{recording}{t:02d}{suffix}")
    reading = read_paths(members, need_user=True, need_label=False)
    assert reading is not None
    assert reading.template == f"{{user}}{recording}{{recording}}{suffix}"
    expected_users = [m.split("/")[1][: len(user) + 2] for m in members]
    assert _read(reading.pattern, members, "user") == expected_users
    expected_takes = [m.split("/")[1][len(user) + 2 + len(recording) :][:2] for m in members]
    assert _read(reading.pattern, members, "recording") == expected_takes


@pytest.mark.parametrize(
    ("folder", "label", "trial", "sep", "users", "classes", "takes"),
    [
        ("Subject", "a", "t", "", (1, 2, 3), (1, 2, 3, 12), (1, 2)),
        ("participant", "act", "rep", "", (7, 8), (1, 5), (1, 2, 3)),
        ("S", "a", "t", "_", (1, 2, 3, 4), (1, 2), (1, 4)),
        ("user", "class", "run", "-", (21, 22), (3, 4, 5), (1, 2)),
    ],
)
def test_a_user_folder_holding_label_and_trial_runs(
    folder, label, trial, sep, users, classes, takes
):
    """Subject1/a1t1.mat: the folder is the user (never the label), a1 the class, t1 the trial."""
    members = [
        f"USC/{folder}{u}/{label}{c}{sep}{trial}{t}.mat"
        for u in users
        for c in classes
        for t in takes
    ]
    reading = read_paths(members, need_user=True, need_label=True)
    assert reading is not None, members[:3]
    assert reading.template == f"{{user}}/{label}{{label}}{sep}{trial}{{recording}}.mat"
    assert reading.other is None  # no second reading takes the user folder as a label
    assert _read(reading.pattern, members, "user") == [m.split("/")[1] for m in members]
    assert _read(reading.pattern, members, "label") == [
        str(c) for _ in users for c in classes for _ in takes
    ]
    assert _read(reading.pattern, members, "recording") == [
        str(t) for _ in users for _ in classes for t in takes
    ]


def test_names_glued_differently_keep_their_tokens_whole():
    """S01R01 beside S01: the runs do not line up, so no token is split and the older
    rules speak (no reading is forced on names of different shapes)."""
    members = ["d/S01R01.txt", "d/S02.txt", "d/S03R02.txt"]
    reading = read_paths(members, need_user=True, need_label=False)
    assert reading is None or "R{recording}" not in reading.template


@pytest.mark.parametrize(("prefix", "n_users"), [("S", 3), ("subject", 4)])
def test_glued_names_draft_end_to_end(tmp_path, prefix, n_users):
    """Daphnet's shape (no header, the class code last): init drafts the user from S01 of
    S01R01.txt and the windows per user are counted from the rows written."""
    rng = np.random.default_rng(n_users)
    root = tmp_path / "release"
    root.mkdir()
    rows_per_user: dict[str, int] = {}
    for u in range(1, n_users + 1):
        for r in range(1, (3 if u == 1 else 2)):
            n = 1200
            codes = np.repeat([1, 2], n // 2)
            values = np.round(rng.normal(0, 1, (n, 6)).cumsum(axis=0), 3)
            lines = [" ".join([*map(str, v), str(c)]) for v, c in zip(values, codes, strict=True)]
            (root / f"{prefix}{u:02d}R{r:02d}.txt").write_text("\n".join(lines) + "\n")
            rows_per_user[f"{prefix}{u:02d}"] = rows_per_user.get(f"{prefix}{u:02d}", 0) + n
    draft = draft_entry([root], "glued", output=tmp_path / "d.toml", sampling_rate_hz=50.0)
    report = "\n".join(draft.report)
    assert "path pattern: '{user}R{recording}.txt'" in report
    for user, rows in rows_per_user.items():
        # 150-sample windows within each recording and class: 600 rows per class and file,
        # ceil(600 / 150) starts with the last dropped (docs/protocol.md), 3 per file
        per_class = (rows // 1200) * (-(-600 // 150) - 1)
        assert f"{user}: 1={per_class}, 2={per_class}" in report, report
