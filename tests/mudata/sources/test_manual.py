"""``--manual-dir`` holding the extracted members of a built-in release the registry
lists no member of (``motionsense``: no published hash at all; ``gestures``: the
archive's hash only).

The members are found by the reader's ``members`` glob, from the folder given,
from the folder above it (the archive's top folder given) or from a folder
below it. None of them can be checked against a hash, so they are read only
with ``allow_unverified``, and the provenance says the table was built from
unpinned extracted members. The windows of the motionsense test are counted
here from the CSV files' row counts and the recipe's window in
registry/motionsense.toml, not by the code under test.
"""

from __future__ import annotations

import csv
import tarfile
import tomllib
import zipfile
from collections import Counter
from pathlib import Path

import pytest

import mudata
from mudata.errors import (
    ChecksumError,
    MissingFileError,
    UnverifiedDataError,
)
from mudata.errors import (
    MudataUsageError as UsageError,
)
from mudata.files import sha256_file
from mudata.publish.store import load_table
from mudata.registry.lookup import get_entry, parse_entry
from mudata.sources.download import fetch_sources
from tests.conftest import PROJECT_ROOT, SHARED_DATA

RELEASE = SHARED_DATA / "releases" / "motionsense_sub1-4.tar.gz"
pytestmark = pytest.mark.release


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not RELEASE.is_file():
        pytest.skip(f"shared release not found at {RELEASE}")
    # One level down, so that "a folder above it" holds nothing else.
    folder = tmp_path_factory.mktemp("downloads") / "motionsense"
    with tarfile.open(RELEASE) as tf:
        tf.extractall(folder, filter="data")
    return folder


def expected_windows(folder: Path) -> dict[str, int]:
    """Windows per participant: each CSV is one recording of ``rows`` samples, cut into
    windows of ``w`` from sample 1 with no overlap, the last start dropped."""
    recipe = tomllib.loads((PROJECT_ROOT / "registry" / "motionsense.toml").read_text())["recipe"]
    w = recipe["window"]
    per_user: Counter[str] = Counter()
    for path in sorted(folder.glob("A_DeviceMotion_data/*/sub_*.csv")):
        with open(path, newline="") as fh:
            rows = sum(1 for _ in csv.reader(fh)) - 1  # one header line
        starts = (rows + w - 1) // w
        per_user[path.stem.removeprefix("sub_")] += max(0, starts - 1)
    return dict(per_user)


@pytest.mark.parametrize("where", ["parent", "top", "above"])
def test_motionsense_builds_from_its_extracted_members(
    extracted: Path, tmp_path: Path, where: str
) -> None:
    """From the folder holding ``A_DeviceMotion_data/``, from that folder itself, and from
    a folder two levels above it: 4 users, 6 classes, the windows the files give."""
    manual = {
        "parent": extracted,
        "top": extracted / "A_DeviceMotion_data",
        "above": extracted.parent,
    }[where]
    home = tmp_path / "home"
    path = mudata.fetch("motionsense", data_home=home, manual_dir=manual, allow_unverified=True)
    table, provenance = load_table(path)
    counts = table.groupby("userid").size().to_dict()
    assert {str(u): int(n) for u, n in counts.items()} == expected_windows(extracted)
    assert table["userid"].nunique() == 4
    assert sorted(table["label"].unique()) == sorted(
        ["downstairs", "upstairs", "walking", "jogging", "standing", "sitting"]
    )
    [record] = provenance["files"]
    assert record["built_from"] == "unpinned extracted members"
    assert record["verified_at_build"] is False
    csvs = sorted(extracted.glob("A_DeviceMotion_data/*/sub_*.csv"))
    assert record["unpinned"] == {p.relative_to(extracted).as_posix(): sha256_file(p) for p in csvs}


def test_unpinned_extracted_members_need_allow_unverified(extracted: Path, tmp_path: Path) -> None:
    with pytest.raises(UnverifiedDataError, match="60 extracted files") as caught:
        mudata.fetch("motionsense", data_home=tmp_path / "home", manual_dir=extracted)
    assert "records no sha256" in str(caught.value)
    assert not (tmp_path / "home" / "motionsense" / "motionsense.parquet").exists()


def test_a_pinned_archive_does_not_vouch_for_extracted_files(tmp_path: Path) -> None:
    """gestures pins its archive: files extracted from it are still unpinned."""
    manual = tmp_path / "manual"
    member = manual / "gestures-dataset" / "U01" / "01" / "01.txt"
    member.parent.mkdir(parents=True)
    member.write_text("1 2 3\n")
    entry = get_entry("gestures")
    with pytest.raises(
        UnverifiedDataError, match=f"pins the archive \\(sha256 {entry.files[0].sha256}"
    ):
        fetch_sources(entry, manual_dir=manual, data_home=tmp_path / "home")
    [fetched] = fetch_sources(
        entry, manual_dir=manual, data_home=tmp_path / "home", allow_unverified=True
    )
    assert (fetched.root, fetched.verified, fetched.extracted) == (manual, False, True)


def test_two_copies_below_the_folder_are_ambiguous(extracted: Path, tmp_path: Path) -> None:
    manual = tmp_path / "manual"
    for copy in ("a", "b"):
        target = manual / copy / "A_DeviceMotion_data" / "dws_1"
        target.mkdir(parents=True)
        (target / "sub_1.csv").write_bytes(
            (extracted / "A_DeviceMotion_data" / "dws_1" / "sub_1.csv").read_bytes()
        )
    with pytest.raises(UsageError, match="more than one folder") as caught:
        fetch_sources(get_entry("motionsense"), manual_dir=manual, allow_unverified=True)
    assert str(manual / "a") in str(caught.value) and str(manual / "b") in str(caught.value)


def test_no_matching_file_names_the_pattern(tmp_path: Path) -> None:
    manual = tmp_path / "manual"
    (manual / "A_DeviceMotion_data").mkdir(parents=True)
    (manual / "A_DeviceMotion_data" / "notes.txt").write_text("nothing here\n")
    with pytest.raises(MissingFileError, match=r"A_DeviceMotion_data/\*/sub_\*\.csv"):
        fetch_sources(get_entry("motionsense"), manual_dir=manual, allow_unverified=True)


def test_pinned_member_hashes_are_still_checked(extracted: Path, tmp_path: Path) -> None:
    """An entry that pins a member checks it, archive or not; a wrong pin is refused."""
    spec = tomllib.loads((PROJECT_ROOT / "registry" / "motionsense.toml").read_text())
    member = "A_DeviceMotion_data/dws_1/sub_1.csv"
    spec["files"][0]["members"] = [{"path": member, "sha256": "0" * 64}]
    with pytest.raises(ChecksumError, match="0{64}"):
        fetch_sources(parse_entry(spec), manual_dir=extracted, allow_unverified=True)


def test_the_archive_itself_is_still_preferred(extracted: Path, tmp_path: Path) -> None:
    """With the zip in the folder, the zip is read, not the files beside it."""
    manual = tmp_path / "manual"
    manual.mkdir()
    with zipfile.ZipFile(manual / "A_DeviceMotion_data.zip", "w") as zf:
        for p in sorted(extracted.glob("A_DeviceMotion_data/dws_1/*.csv")):
            zf.write(p, p.relative_to(extracted).as_posix())
    [fetched] = fetch_sources(get_entry("motionsense"), manual_dir=manual, allow_unverified=True)
    assert fetched.root == manual / "A_DeviceMotion_data.zip" and not fetched.extracted
