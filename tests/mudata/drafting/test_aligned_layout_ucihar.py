"""``mudata init`` on a release of UCI-HAR's shape: feature tables whose labels and users
are in side files. The draft is registered and fetched as written (metadata filled in),
and the built table compared with the files read back by numpy alone."""

from __future__ import annotations

import shutil
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest
import tomli_w
from click.testing import CliRunner

import mudata
from mudata.cli import main as mudata_main
from tests.ucihar_release import ACTIVITIES, Release, write_release


def init(files: Path, tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    toml = tmp_path / "ucihar.toml"
    result = CliRunner().invoke(
        mudata_main, ["init", str(files), "--name", "ucihar", "-o", str(toml), "--force", *args]
    )
    return result.exit_code, result.output, toml


def register_and_fetch(toml: Path, tmp_path: Path):
    data = tomllib.loads(toml.read_text())
    data.update(
        title="t",
        homepage="https://example.org/x",
        citation="The authors (2013). A release.",
        licence="CC-BY-4.0",
    )
    toml.write_text(tomli_w.dumps(data))
    home = str(tmp_path / "home")
    for step in (["register", str(toml)], ["fetch", "ucihar"]):
        done = CliRunner().invoke(mudata_main, [*step, "--data-home", home])
        assert done.exit_code == 0, done.output
    return mudata.load("ucihar", data_home=home).frame


def check_built(frame, release: Release, splits=("test", "train")) -> None:
    users = sorted(u for s in splits for u in release.users[s])
    assert sorted(frame["userid"].astype(int).unique()) == users
    assert len(frame) == sum(release.rows[s] for s in splits)
    features = [c for c in frame.columns if c not in ("userid", "label")]
    assert len(features) == release.n_features
    assert "fBodyAcc-bandsEnergy()-1,8_2" in features
    expected = np.vstack([np.loadtxt(release.top / s / f"X_{s}.txt") for s in splits])
    np.testing.assert_array_equal(frame[features].to_numpy(), expected)
    # each user's rows per class, as the side files say
    for split in splits:
        for user in release.users[split]:
            rows = frame[frame["userid"].astype(int) == user]
            mine = release.labels[split][release.subjects[split] == user]
            assert len(rows) == mine.size


def test_init_drafts_the_published_shape_and_fetch_builds_it(tmp_path):
    release = write_release(tmp_path / "UCI HAR")
    code, output, toml = init(tmp_path / "UCI HAR", tmp_path)
    assert code == 0, output
    # Two tables are data; the pins cover the release's tree under the one glob
    # (not the __MACOSX copies a zip tool adds beside it).
    top = tmp_path / "UCI HAR" / "UCI HAR Dataset"
    tree = sum(1 for p in top.rglob("*") if p.is_file())
    assert tree > 2
    assert output.splitlines()[0] == (
        f"2 data file(s) in {tmp_path / 'UCI HAR'}; sha256 of {tree} file(s) pinned on first use "
        "(the data files and those read with them)"
    )
    assert "label: y_{split}.txt, by its name" in output
    assert "user: subject_{split}.txt, by its name" in output
    assert "column names: UCI HAR Dataset/features.txt" in output
    assert "Inertial Signals" in output and "raw windows" in output
    draft = toml.read_text()
    options = tomllib.loads(draft)["reader_options"]
    assert options["label_file"] == "y_{split}.txt"
    assert options["user_file"] == "subject_{split}.txt"
    assert options["feature_names_file"] == "UCI HAR Dataset/features.txt"
    assert options["label_names_file"] == "UCI HAR Dataset/activity_labels.txt"
    assert "Inertial Signals/) are another kind of data, not read" in draft
    assert "__MACOSX" not in draft
    classes = tomllib.loads(draft)["classes"]
    assert [c["name"] for c in classes] == list(ACTIVITIES)
    frame = register_and_fetch(toml, tmp_path)
    check_built(frame, release)
    assert set(frame["label"].astype(str)) == set(ACTIVITIES)


def test_init_drafts_the_zip_as_published(tmp_path):
    folder = tmp_path / "unzipped"
    release = write_release(folder)
    archive = tmp_path / "UCI HAR Dataset.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder).as_posix())
    code, output, toml = init(archive, tmp_path)
    assert code == 0, output
    assert output.splitlines()[0] == (
        f"2 data file(s) in {archive}; the archive's own sha256 pinned on first use"
    )
    release.top = folder / "UCI HAR Dataset"
    check_built(register_and_fetch(toml, tmp_path), release)


@pytest.mark.parametrize(
    ("variant", "splits"),
    [
        ({"line_end": "\r\n"}, ("test", "train")),
        ({"separator": "\t"}, ("test", "train")),
        ({"splits": ("train",)}, ("train",)),
        ({"label_name": "labels.txt", "user_name": "users.txt"}, ("test", "train")),
        ({"first_code": 0}, ("test", "train")),
    ],
    ids=["crlf", "tabs", "one-split", "labels-users", "0-based"],
)
def test_the_variants_are_drafted_without_help(tmp_path, variant, splits):
    release = write_release(tmp_path / "r", **variant)
    code, output, toml = init(tmp_path / "r", tmp_path)
    assert code == 0, output
    frame = register_and_fetch(toml, tmp_path)
    check_built(frame, release, splits)
    assert set(frame["label"].astype(str)) == set(ACTIVITIES)


def test_side_files_that_nothing_tells_apart_are_refused_with_the_option(tmp_path):
    release = write_release(
        tmp_path / "r", splits=("train",), label_name="a_{split}.txt", user_name="b_{split}.txt"
    )
    (release.top / "activity_labels.txt").unlink()
    code, output, _ = init(tmp_path / "r", tmp_path)
    assert code == 2, output
    assert "--label-file" in output and "--user-file" in output
    assert "a_{split}.txt" in output and "b_{split}.txt" in output
    code, output, toml = init(
        tmp_path / "r", tmp_path, "--label-file", "a_{split}.txt", "--user-file", "b_{split}.txt"
    )
    assert code == 0, output
    assert "label: a_{split}.txt (--label-file)" in output
    check_built(register_and_fetch(toml, tmp_path), release, ("train",))


def test_the_legend_tells_the_label_when_the_names_do_not(tmp_path):
    # 9 users: ids 7-9 are no code of the legend, so only the label's file is all codes
    release = write_release(
        tmp_path / "r",
        users=9,
        splits=("train",),
        label_name="a_{split}.txt",
        user_name="b_{split}.txt",
    )
    code, output, toml = init(tmp_path / "r", tmp_path)
    assert code == 0, output
    assert (
        "label: a_{split}.txt, its codes are those of UCI HAR Dataset/activity_labels.txt" in output
    )
    check_built(register_and_fetch(toml, tmp_path), release, ("train",))


def test_kind_signals_keeps_the_former_reading(tmp_path):
    write_release(tmp_path / "r", inertial=False)
    shutil.rmtree(tmp_path / "r" / "__MACOSX")
    _, output, _ = init(tmp_path / "r", tmp_path, "--kind", "signals", "--sampling-rate", "50")
    assert "feature tables with side files" not in output
