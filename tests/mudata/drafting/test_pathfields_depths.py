"""Users, labels and recordings read from paths whose files sit at several depths (issue 28, 6).

Path reasoning lined up the folders of every file from the file upwards, so
it gave up when one subject's files had a folder more than another's
(``subject03/walk/1_raw.csv`` beside ``subject04/1_raw.csv``) or when data sat
at the top beside data in folders; the older rules then took the series number
for the user. The folders every file has are now lined up from the top, and
the deeper ones are taken by ``**/`` in the template.

The releases are written here, with names, separators, rates and counts varied;
the users, classes and the files each template matches are counted from what
was written.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mudata.drafting.draft import draft_entry
from mudata.drafting.pathfields import read_paths
from mudata.drafting.records import Choices
from mudata.drafting.selection import compile_path_pattern


def _signal_csv(path: Path, rng: np.random.Generator, n: int, label: str | None) -> None:
    """``n`` samples of three drifting channels, with an activity column when ``label``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    values = np.round(np.cumsum(rng.normal(0, 1, (n, 3)), axis=0), 3)
    head = "x,y,z" + (",activity" if label else "")
    rows = [",".join(map(str, v)) + (f",{label}" if label else "") for v in values]
    path.write_text(head + "\n" + "\n".join(rows) + "\n")


@pytest.mark.parametrize(
    ("prefix", "sep", "series", "extra"),
    [
        ("subject", "_", 2, "walk"),
        ("S", "-", 3, "session1"),
        ("participant", " ", 2, "raw"),
    ],
)
def test_a_subject_folder_with_and_without_a_folder_below_is_the_user(
    tmp_path, prefix, sep, series, extra
):
    """subject03/walk/1_raw.csv beside subject04/1_raw.csv: the user is the subject folder,
    the leading number a recording, never the user."""
    rng = np.random.default_rng(len(prefix) + series)
    root = tmp_path / "release"
    users = [f"{prefix}{i:02d}" for i in (3, 4, 7)]
    for k, user in enumerate(users):
        below = Path(user) / extra if k % 2 == 0 else Path(user)  # two depths
        for s in range(1, series + 1):
            for label in ("walk", "sit"):  # one file per series and activity
                name = f"{s}{sep}raw{sep}data{sep}{label[0]}{k}.csv"
                _signal_csv(root / below / name, rng, 900, label)  # 5 windows of 3 s
    draft = draft_entry([root], "depths", output=tmp_path / "d.toml", sampling_rate_hz=50.0)
    pattern = draft.entry.reader_options["path_pattern"]
    regex = re.compile(pattern)
    members = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.csv"))
    assert len(members) == len(users) * series * 2
    users_read = {regex.search(m).group("user") for m in members}
    assert users_read == set(users)
    assert any(
        line.startswith("recording: a token of the file names (1") for line in draft.report
    ), draft.report
    assert any(line.startswith("user: the folder at level 1 from the top") for line in draft.report)
    assert sorted(draft.entry.class_names) == ["sit", "walk"]
    assert f"{len(users)} kept, 0 dropped" in "\n".join(draft.report)


@pytest.mark.parametrize("sep", ["_", "-"])
@pytest.mark.parametrize("top", [1, 2])
def test_files_at_the_top_beside_files_in_a_folder_read_their_names(tmp_path, sep, top):
    """s1_walk.txt at the top, more/s2_sit.txt below: the names hold user and label."""
    rng = np.random.default_rng(top)
    root = tmp_path / "release"
    written: dict[str, tuple[str, str]] = {}
    for u in range(1, 4):
        for label in ("walk", "sit", "stand"):
            place = "" if (u + len(label)) % (top + 1) else "more/"
            member = f"{place}s{u}{sep}{label}.txt"
            path = root / member
            path.parent.mkdir(parents=True, exist_ok=True)
            values = np.round(30 + np.cumsum(rng.normal(0, 1, (500, 3)), axis=0)).astype(int)
            np.savetxt(path, values, fmt="%d")
            written[member] = (f"s{u}", label)
    depths = {m.count("/") for m in written}
    assert depths == {0, 1}  # the variant holds both shapes
    reading = read_paths(sorted(written), need_user=True, need_label=True)
    assert reading is not None
    assert reading.template.startswith("**/")
    regex = re.compile(reading.pattern)
    for member, (user, label) in written.items():
        match = regex.search(member)
        assert (match.group("user"), match.group("label")) == (user, label), member
    draft = draft_entry([root], "top", output=tmp_path / "t.toml", sampling_rate_hz=32.0)
    assert set(draft.entry.class_names) == {"walk", "sit", "stand"}
    assert "3 kept, 0 dropped" in "\n".join(draft.report)


@pytest.mark.parametrize("deeper", ["x", "take2"])
def test_label_and_user_folders_above_an_optional_folder(tmp_path, deeper):
    members = [
        f"data/{label}/sub{u}/{extra}t{t}.csv"
        for label in ("walk", "sit")
        for u in (1, 2, 3)
        for t in (1, 2)
        for extra in ([""] if u == 2 else [f"{deeper}/"])
    ]
    reading = read_paths(members, need_user=True, need_label=True)
    assert reading is not None
    assert reading.template == "data/{label}/{user}/**/t{recording}.csv"
    regex = re.compile(compile_path_pattern(reading.template))
    assert reading.pattern == compile_path_pattern(reading.template)
    found = {(m.group("label"), m.group("user")) for m in map(regex.search, members)}
    assert found == {(a, f"sub{u}") for a in ("walk", "sit") for u in (1, 2, 3)}


def test_a_path_template_takes_any_folders_or_none_with_two_stars():
    regex = re.compile(compile_path_pattern("{user}/**/{label}.csv"))
    assert regex.search("u1/walk.csv").group("user") == "u1"
    assert regex.search("u1/a/b/walk.csv").group("user") == "u1"
    assert regex.search("u1/a/b/walk.txt") is None


def test_one_depth_keeps_the_template_it_had(tmp_path):
    """Files at one depth: folders still line up from the file, no ``**/``."""
    members = [
        f"rel/{label}/s{u}_r{t}.txt" for label in ("walk", "sit") for u in (1, 2) for t in (1, 2)
    ]
    reading = read_paths(members, need_user=True, need_label=True)
    assert reading is not None and "**" not in reading.template
    assert reading.template == "{label}/{user}_r{recording}.txt"  # a user keeps its id


def test_a_label_folder_above_files_at_two_depths(tmp_path):
    """The path is read only for what the columns lack: here the label, in its folder."""
    rng = np.random.default_rng(5)
    root = tmp_path / "release"
    for label in ("walk", "sit"):
        for u in (1, 2, 3):
            below = f"{label}/extra" if u == 3 else label
            path = root / below / f"rec{u}.csv"
            _signal_csv(path, rng, 900, None)  # 5 windows of 3 s
            text = path.read_text().splitlines()
            path.write_text(
                "\n".join([text[0] + ",who", *(f"{row},u{u}" for row in text[1:])]) + "\n"
            )
    draft = draft_entry(
        [root],
        "col",
        output=tmp_path / "c.toml",
        sampling_rate_hz=50.0,
        choices=Choices(user="who"),
    )
    assert set(draft.entry.class_names) == {"walk", "sit"}
    assert "3 kept, 0 dropped" in "\n".join(draft.report)
