"""Two rules of ``mudata init`` that the shared real releases needed, on generated variants.

* A class that fewer than 2 users have 5 windows of, even of 0.5 s, keeps every
  table under the 2 users the build needs, whatever the window (HMP: two of its
  14 activities were recorded by one volunteer only, so the filter kept one
  user). The draft leaves such a class out, says why, and ``--keep-class``
  keeps it; a class every user has in short recordings is a matter of the
  window, and stays.
* Of two tables of equally many files, the one with a label column is the data
  and the other an unlabelled test table (WLE's ``pml-training.csv`` beside
  ``pml-testing.csv``): the first sorted file used to win the tie.

The variants change names, rates, counts, separators and which file sorts first;
expected users, classes and rows are counted here from what was written.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mudata.cli import main as mudata_main
from mudata.drafting.draft import draft_entry
from mudata.drafting.records import Choices


def write_activity_folders(
    root: Path,
    rng: np.random.Generator,
    users: list[str],
    seconds: dict[str, dict[str, float]],
    rate: float,
) -> None:
    """One folder per activity, one whitespace file per (activity, user), the user at the
    end of the name; ``seconds[activity][user]`` long (no file when absent). As HMP
    names them: the folder capitalised, the activity in lower case in the file name."""
    for level, (activity, per_user) in enumerate(seconds.items()):
        (root / activity).mkdir(parents=True)
        for user in users:
            if user not in per_user:
                continue
            n = round(per_user[user] * rate)
            values = np.round(30 + 4 * level + np.cumsum(rng.normal(0, 1, (n, 3)), axis=0))
            path = root / activity / f"Recording-{activity.lower()}-{user}.txt"
            np.savetxt(path, values.astype(int), fmt="%d")


VARIANTS = [
    # rate, users, activities every user has, activities of one user only, of no user
    (32.0, ["f1", "f2", "m1"], ["Walk", "Drink_glass"], ["Eat_soup"], []),
    (50.0, ["s01", "s02", "s03", "s04"], ["Run", "Sit", "Stand"], ["Swim", "Row"], []),
    (20.0, ["p7", "p9"], ["Aa", "Bb"], [], ["Cc"]),
]


@pytest.mark.parametrize(("rate", "users", "common", "solo", "none"), VARIANTS)
def test_a_class_of_fewer_than_two_users_is_left_out(tmp_path, rate, users, common, solo, none):
    rng = np.random.default_rng(len(users))
    seconds = {a: dict.fromkeys(users, 30.0) for a in common}
    seconds |= {a: {users[0]: 30.0} for a in solo}
    seconds |= {a: {users[-1]: 0.5} for a in none}  # too short for 5 windows of 0.5 s
    write_activity_folders(tmp_path / "rel", rng, users, seconds, rate)
    draft = draft_entry(
        [tmp_path / "rel"], "reach", output=tmp_path / "reach.toml", sampling_rate_hz=rate
    )
    report = "\n".join(draft.report)
    assert sorted(draft.entry.class_names) == sorted(common)
    for activity in solo:
        assert (
            f"{activity}: {round(30 * rate)} (left out: fewer than 2 users have 5 windows of it, "
            f"even of 0.5 s (only {users[0]}): no window lets 2 users pass the filter with it; "
            f"--keep-class {activity} keeps it)"
        ) in report
    for activity in none:
        assert f" {activity}: {round(0.5 * rate)} (left out: fewer than 2 users" in report
        assert "(no user): no window lets 2 users pass" in report
    width = round(3 * rate)
    per_user = len(common) * (math.ceil(round(30 * rate) / width) - 1)
    assert (
        f"user filter (at least 5 windows of every class): {len(users)} kept, 0 dropped" in report
    )
    # the toml keeps the class, commented out, with the reason
    for activity in [*solo, *none]:
        assert f'# code = "{activity}"' in draft.toml
    # the build agrees: every user, the common classes, the windows counted here
    toml = tmp_path / "reach.toml"
    text = draft.toml
    for key, value in (
        ("homepage", '"https://example.org/x"'),
        ("citation", '"Them (2026)."'),
        ("licence", '"CC0-1.0"'),
    ):
        text = "\n".join(
            f"{key} = {value}" if line.startswith(f"{key} = ") else line
            for line in text.splitlines()
        )
    toml.write_text(text, encoding="utf-8")
    home = str(tmp_path / "home")
    runner = CliRunner()
    done = runner.invoke(mudata_main, ["register", str(toml), "--data-home", home])
    assert done.exit_code == 0, done.output
    done = runner.invoke(mudata_main, ["fetch", "reach", "--data-home", home])
    assert done.exit_code == 0, done.output
    table = pd.read_parquet(done.output.strip().splitlines()[-1])
    assert table.groupby("userid").size().to_dict() == dict.fromkeys(users, per_user)
    assert set(table["label"]) == set(common)


def test_keep_class_keeps_it_and_the_filter_then_says_the_build_fails(tmp_path):
    users = ["u1", "u2", "u3"]
    seconds = {"Walk": dict.fromkeys(users, 20.0), "Sit": dict.fromkeys(users, 20.0)}
    seconds["Cook"] = {"u2": 20.0}
    write_activity_folders(tmp_path / "rel", np.random.default_rng(5), users, seconds, 25.0)
    draft = draft_entry(
        [tmp_path / "rel"],
        "kept",
        output=tmp_path / "kept.toml",
        sampling_rate_hz=25.0,
        choices=Choices(keep_class=("Cook",)),
    )
    report = "\n".join(draft.report)
    assert "Cook" in draft.entry.class_names
    assert "left out" not in report.split("classes (rows", 1)[1].split("windows of", 1)[0]
    assert "user filter (at least 5 windows of every class): 1 kept, 2 dropped" in report
    assert "fewer than 2 users pass: `mudata fetch` would fail" in report


def test_a_class_of_short_recordings_is_the_window_s_matter_not_left_out(tmp_path):
    """Every user has it, in 2 s recordings: 3 s windows give none, 1.5 s windows enough."""
    users = ["a1", "a2", "a3"]
    seconds = {"Walk": dict.fromkeys(users, 30.0), "Turn": dict.fromkeys(users, 20.0)}
    rel = tmp_path / "rel"
    write_activity_folders(rel, np.random.default_rng(6), users, seconds, 40.0)
    for user in users:  # the turns cut into ten 2 s recordings
        path = rel / "Turn" / f"Recording-turn-{user}.txt"
        lines = path.read_text().splitlines()
        path.unlink()
        for k in range(10):
            chunk = "\n".join(lines[k * 80 : (k + 1) * 80]) + "\n"
            (rel / "Turn" / f"Recording{k}-turn-{user}.txt").write_text(chunk)
    draft = draft_entry([rel], "short", output=tmp_path / "short.toml", sampling_rate_hz=40.0)
    report = "\n".join(draft.report)
    assert sorted(draft.entry.class_names) == ["Turn", "Walk"]
    assert "left out" not in report.split("classes (rows", 1)[1].split("windows of", 1)[0]
    assert "--window 1.5 is the longest window" in report


def _feature_rows(rng: np.random.Generator, users: list[str], labels: list[str], n: int):
    rows = []
    for user in users:
        for rank, label in enumerate(labels):
            for _ in range(n):
                rows.append([user, label, *np.round(rng.normal(rank, 1, 4), 4)])
    return rows


@pytest.mark.parametrize(
    ("train", "test", "label", "sep"),
    [
        ("pml-training.csv", "pml-testing.csv", "classe", ","),
        ("train.csv", "test.csv", "activity", ","),  # the labelled one sorts second
        ("a_labelled.tsv", "b_unlabelled.tsv", "label", "\t"),  # the unlabelled one second
    ],
)
def test_of_two_tables_the_labelled_one_is_the_data(tmp_path, train, test, label, sep):
    rng = np.random.default_rng(len(train))
    users, labels = ["ana", "ben", "cho"], ["A", "B", "C"]
    features = ["f_roll", "f_pitch", "f_yaw", "f_total"]
    rows = _feature_rows(rng, users, labels, 7)
    pd.DataFrame(rows, columns=["subject", label, *features]).to_csv(
        tmp_path / train, sep=sep, index=False
    )
    unlabelled = pd.DataFrame(rows[:20], columns=["subject", "problem_id", *features])
    unlabelled["problem_id"] = range(1, 21)
    unlabelled.to_csv(tmp_path / test, sep=sep, index=False)
    draft = draft_entry([tmp_path], "pair", output=tmp_path / "pair.toml")
    report = "\n".join(draft.report)
    assert f"  {test}: its columns (subject, problem_id, f_roll" in report
    assert f"lack the label column {label!r} of 1 of the 2 tables: an unlabelled (test) table?" in (
        report
    )
    data = tomllib.loads(draft.toml)
    (spec,) = data["files"]
    assert spec["glob"] == train and [m["path"] for m in spec["members"]] == [train]
    assert data["reader_options"]["label_col"] == label
    assert data["reader_options"]["feature_cols"] == features
    assert sorted(draft.entry.class_names) == labels


def test_two_labelled_tables_of_other_columns_stay_a_tie_of_shapes(tmp_path):
    """Both have a label column: no reading is preferred, the first sorted file wins as before."""
    rng = np.random.default_rng(9)
    rows = _feature_rows(rng, ["x1", "x2"], ["up", "down"], 6)
    pd.DataFrame(rows, columns=["subject", "label", "a", "b", "c", "d"]).to_csv(
        tmp_path / "one.csv", index=False
    )
    pd.DataFrame(rows, columns=["subject", "label", "p", "q", "r", "s"]).to_csv(
        tmp_path / "two.csv", index=False
    )
    draft = draft_entry([tmp_path], "tie", output=tmp_path / "tie.toml")
    assert any(
        "two.csv: its columns" in line and "a metadata sheet?" in line for line in draft.report
    )


@pytest.mark.parametrize(
    ("folders", "tokens", "folder_role"),
    [
        (["run", "sit", "stand"], ["s01", "s02", "s03"], "label"),  # run/run_s01.txt
        (["a01", "a02"], ["p1", "p2", "p3"], "label"),  # a01/a01_p1.txt
        (["SA01", "SA02", "SA03"], ["D01", "D02"], "user"),  # SA01/D01_SA01_R01.txt
    ],
)
def test_a_folder_repeated_in_the_file_names_is_one_field(tmp_path, folders, tokens, folder_role):
    """The token that repeats the folder is the folder again: it takes no role of its own
    (a words folder repeated in the names used to make the folder the user)."""
    rng = np.random.default_rng(len(folders))
    root = tmp_path / "rel"
    for folder in folders:
        (root / folder).mkdir(parents=True)
        for token in tokens:
            for trial in ("R01", "R02"):
                name = (
                    f"{token}_{folder}_{trial}.txt"
                    if folder_role == "user"
                    else f"{folder}_{token}_{trial}.txt"
                )
                values = np.round(30 + np.cumsum(rng.normal(0, 1, (800, 3)), axis=0))
                np.savetxt(root / folder / name, values.astype(int), fmt="%d")
    draft = draft_entry([root], "copy", output=tmp_path / "copy.toml", sampling_rate_hz=50.0)
    other = "user" if folder_role == "label" else "label"
    folder_note = f"{folder_role}: the folder holding each file ({folders[0]}"
    assert any(line.startswith(folder_note) for line in draft.report), draft.report
    assert any(
        line.startswith(f"{other}: a token of the file names ({tokens[0]}") for line in draft.report
    ), draft.report
    assert any(
        line.startswith("recording: a token of the file names (R01, R02") for line in draft.report
    )
    users = len(tokens) if folder_role == "label" else len(folders)
    classes = len(folders) if folder_role == "label" else len(tokens)
    assert len(draft.entry.class_names) == classes
    # 800 samples a file: 5 windows of 3 s, 10 of each class per user
    assert f"user filter (at least 5 windows of every class): {users} kept, 0 dropped" in (
        draft.report
    )
