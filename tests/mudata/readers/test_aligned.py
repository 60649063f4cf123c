"""Feature tables whose labels and users are in side files, read from a release of
UCI-HAR's published shape (:mod:`tests.ucihar_release`), and each hostile file refused."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

from mudata.errors import MissingFileError, ParseError, RegistryError
from mudata.readers import READER_OPTIONS, get_reader
from mudata.readers.aligned import SIDE_OPTIONS, side_path, split_of
from mudata.readers.side_files import unique_names
from mudata.readers.sources import Sources
from mudata.registry.lookup import parse_entry
from tests.ucihar_release import ACTIVITIES, write_release

TOP = "UCI HAR Dataset"


def entry_of(**options):
    reader_options = {
        "format": "text",
        "header": False,
        "members": f"{TOP}/*/X_*.txt",
        "label_file": "y_{split}.txt",
        "user_file": "subject_{split}.txt",
        "feature_names_file": f"{TOP}/features.txt",
        "label_names_file": f"{TOP}/activity_labels.txt",
    }
    reader_options.update(options)
    data = {
        "name": "ucihar",
        "title": "t",
        "version": "1",
        "homepage": "https://example.org/x",
        "licence": "CC-BY-4.0",
        "citation": "c",
        "sampling_rate_hz": 50.0,
        "reader": "feature-table",
        "min_per_class": 1,
        "reader_options": {k: v for k, v in reader_options.items() if v is not None},
        "recipe": {"name": "precomputed"},
        "classes": [{"code": i, "name": a} for i, a in enumerate(ACTIVITIES, 1)],
        "files": [{"name": "x", "path": "x"}],
    }
    return parse_entry(data)


def read(root: Path, **options):
    return get_reader("feature-table")(entry_of(**options), Sources([root])).frame


def test_the_published_shape_reads_users_labels_names_and_values(tmp_path):
    release = write_release(tmp_path)
    frame = read(tmp_path)
    assert len(frame) == sum(release.rows.values()) == 240
    assert sorted(frame["userid"].unique(), key=int) == [str(u) for u in range(1, 7)]
    # test sorts before train; each table's rows in its own order
    test, train = frame.iloc[:120], frame.iloc[120:]
    assert list(test["userid"].astype(int)) == list(release.subjects["test"])
    assert list(train["label"]) == list(release.labels["train"])
    names = list(frame.columns[2:])
    assert names[:4] == [
        "tBodyAcc-mean()-X",
        "tBodyAcc-mean()-Y",
        "tBodyAcc-std()-Z",
        "tGravityAcc-max()-X",
    ]
    assert names[4:7] == [
        "fBodyAcc-bandsEnergy()-1,8",
        "fBodyAcc-bandsEnergy()-1,8_2",
        "fBodyAcc-bandsEnergy()-1,8_3",
    ]
    assert len(set(names)) == len(names) == 12
    expected = np.vstack([np.loadtxt(release.top / s / f"X_{s}.txt") for s in ("test", "train")])
    np.testing.assert_array_equal(frame[names].to_numpy(), expected)


@pytest.mark.parametrize(
    "variant",
    [
        {"line_end": "\r\n"},
        {"separator": "\t"},
        {"splits": ("train",)},
        {"first_code": 0},
        {"macosx": False, "inertial": False},
    ],
    ids=["crlf", "tabs", "one-split", "0-based", "bare"],
)
def test_the_variants_read_alike(tmp_path, variant):
    release = write_release(tmp_path, **variant)
    frame = read(tmp_path)
    assert len(frame) == sum(release.rows.values())
    codes = set(np.concatenate(list(release.labels.values())))
    assert set(frame["label"]) == codes
    splits = variant.get("splits", ("train", "test"))
    expected = np.vstack([np.loadtxt(release.top / s / f"X_{s}.txt") for s in sorted(splits)])
    np.testing.assert_array_equal(frame.iloc[:, 2:].to_numpy(), expected)


def test_side_files_without_the_split_in_their_names(tmp_path):
    write_release(tmp_path, label_name="labels.txt", user_name="users.txt")
    frame = read(tmp_path, label_file="labels.txt", user_file="users.txt")
    assert len(frame) == 240 and frame["userid"].nunique() == 6


def test_without_a_names_file_the_columns_are_numbered(tmp_path):
    write_release(tmp_path)
    frame = read(tmp_path, feature_names_file=None, label_names_file=None)
    assert list(frame.columns[2:5]) == ["c1", "c2", "c3"]


def test_a_user_in_two_splits_is_one_user_and_logged(tmp_path, caplog):
    release = write_release(tmp_path)
    path = release.top / "test" / "subject_test.txt"
    path.write_text(path.read_text().replace("4\n", "1\n"))
    with caplog.at_level(logging.WARNING, logger="mudata.readers.aligned"):
        frame = read(tmp_path)
    assert (frame["userid"] == "1").sum() == 80
    assert "have rows in more than one table" in caplog.text
    assert frame.attrs["users_in_several_tables"] == ["1"]


def _edit(path: Path, old: str, new: str, count: int = 1) -> None:
    path.write_bytes(path.read_bytes().replace(old.encode(), new.encode(), count))


@pytest.mark.parametrize(
    ("edit", "error", "words"),
    [
        (  # one line short
            lambda top: (top / "train/y_train.txt").write_bytes(
                b"".join((top / "train/y_train.txt").read_bytes().splitlines(True)[:-1])
            ),
            ParseError,
            ["y_train.txt: holds 119 line(s)", "X_train.txt, holds 120 row(s)"],
        ),
        (
            lambda top: _edit(top / "train/subject_train.txt", "1\n", "1 2\n"),
            ParseError,
            ["subject_train.txt, line 1: holds 2 fields", "user_file"],
        ),
        (
            lambda top: _edit(top / "train/y_train.txt", "1\n", "\n"),
            ParseError,
            ["y_train.txt, line 1: is blank"],
        ),
        (
            lambda top: _edit(top / "train/y_train.txt", "1\n", "1.5\n"),
            ParseError,
            ["y_train.txt, line 1: '1.5' is not a whole number"],
        ),
        (
            lambda top: _edit(top / "test/y_test.txt", "1\n", "7\n"),
            ParseError,
            ["y_test.txt, line 1: code 7 is not a class of", "activity_labels.txt"],
        ),
        (
            lambda top: _edit(top / "features.txt", "12 ", "12 a\n13 "),
            ParseError,
            ["features.txt: names 13 column(s), but", "X_test.txt holds 12"],
        ),
        (
            lambda top: _edit(top / "activity_labels.txt", "2 ", "1 "),
            ParseError,
            ["activity_labels.txt, line 2: code 1 is named twice"],
        ),
        (
            lambda top: (top / "test/subject_test.txt").unlink(),
            MissingFileError,
            ["X_test.txt: its users (user_file)", "subject_test.txt"],
        ),
    ],
    ids=["rows", "columns", "blank", "fraction", "legend", "names", "codes-twice", "missing"],
)
def test_a_hostile_or_careless_file_is_refused_naming_it(tmp_path, edit, error, words):
    release = write_release(tmp_path)
    edit(release.top)
    with pytest.raises(error) as caught:
        read(tmp_path)
    for word in words:
        assert word in str(caught.value)
    if isinstance(caught.value, ParseError):
        assert caught.value.reason is not None


def test_a_side_file_that_is_a_link_is_refused(tmp_path):
    release = write_release(tmp_path, inertial=False, macosx=False)
    y = release.top / "train" / "y_train.txt"
    (tmp_path / "elsewhere.txt").write_bytes(y.read_bytes())
    y.unlink()
    os.symlink(tmp_path / "elsewhere.txt", y)
    with pytest.raises(ParseError, match="y_train.txt"):
        read(tmp_path)


def test_an_enormous_side_file_is_refused_on_its_line_count(tmp_path):
    release = write_release(tmp_path, inertial=False)
    (release.top / "train" / "y_train.txt").write_bytes(b"1\n" * 2_000_000)
    with pytest.raises(ParseError, match="holds 2,000,000 line"):
        read(tmp_path)


def test_options_that_contradict_are_refused():
    with pytest.raises(RegistryError, match="unknown placeholder"):
        get_reader("feature-table")(entry_of(label_file="y_{fold}.txt"), Sources([]))
    with pytest.raises(RegistryError, match="both file and column"):
        get_reader("feature-table")(entry_of(label_col="c1"), Sources([]))
    with pytest.raises(RegistryError, match="neither label_file nor user_file"):
        get_reader("feature-table")(entry_of(label_file=None, user_file=None), Sources([]))


def test_the_split_and_the_side_paths():
    assert split_of(f"{TOP}/train/X_train.txt") == "train"
    assert split_of("a/X.txt") == "X"
    assert side_path("y_{split}.txt", f"{TOP}/test/X_test.txt") == f"{TOP}/test/y_test.txt"
    assert side_path("../labels/{split}.txt", "d/feat/X_a.txt") == "d/labels/a.txt"
    with pytest.raises(ParseError, match="outside the release"):
        side_path("../../y.txt", "d/X_a.txt")


def test_unique_names_are_deterministic():
    assert unique_names(["a", "a", "a"]) == ["a", "a_2", "a_3"]
    assert unique_names(["a", "a_2", "a"]) == ["a", "a_2", "a_3"]


def test_the_side_options_are_feature_table_options():
    assert READER_OPTIONS["feature-table"] >= SIDE_OPTIONS
    assert not SIDE_OPTIONS & READER_OPTIONS["long-signals"]
