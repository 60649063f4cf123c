"""Members by glob (issue 10, point 3): a folder's or archive's file list, pinned per file."""

from __future__ import annotations

import hashlib
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mudata
import mudata.building.cache
import mudata.building.pipeline
import mudata.publish.store
from mudata.building.options import BuildOptions
from mudata.errors import ChecksumError, MissingFileError
from mudata.errors import MudataUsageError as UsageError
from mudata.registry.lookup import load_entry_file


def write_users(folder: Path, users: list[str], rng: np.random.Generator) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for user in users:
        frame = pd.DataFrame(
            {
                "user": user,
                "act": ["a", "b"] * 5,
                "f1": rng.normal(size=10),
                "f2": rng.normal(size=10),
            }
        )
        frame.to_csv(folder / f"{user}.csv", index=False)


def entry_text(
    path: str, glob: str, pins: dict[str, str] | None = None, hashes: str = "first-use"
) -> str:
    members = "".join(
        f'\n[[files.members]]\npath = "{p}"\nsha256 = "{h}"\n' for p, h in (pins or {}).items()
    )
    files = f'[[files]]\nname = "data"\npath = "{path}"\nglob = "{glob}"\nhashes = "{hashes}"\n{members}'
    if pins is None:
        files = f'[[files]]\nname = "data"\npath = "{path}"\nmembers = "{glob}"\n'
    return (
        textwrap.dedent(
            """\
            name = "globbed"
            title = "Globbed"
            version = "1"
            homepage = "https://example.org"
            licence = "CC-BY-4.0"
            citation = "Own, 2026."
            sampling_rate_hz = 1
            reader = "feature-table"
            min_per_class = 2

            [reader_options]
            user_col = "user"
            label_col = "act"

            [recipe]
            name = "precomputed"

            [[classes]]
            code = "a"
            name = "A"

            [[classes]]
            code = "b"
            name = "B"
            """
        )
        + "\n"
        + files
    )


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_unpinned_glob_needs_allow_unverified_and_then_reads_its_files(tmp_path):
    write_users(tmp_path / "data" / "csv", ["u1", "u2", "u3"], np.random.default_rng(0))
    (tmp_path / "data" / "notes.txt").write_text("not a table\n", encoding="utf-8")
    toml = tmp_path / "globbed.toml"
    toml.write_text(entry_text("data", "*.csv"), encoding="utf-8")  # members = "*.csv"
    entry = load_entry_file(toml)
    assert entry.files[0].glob == "*.csv" and entry.files[0].members == ()
    with pytest.raises(
        UsageError, match="no sha256 for the files its glob finds.*allow_unverified=True"
    ):
        mudata.building.pipeline.build(entry, BuildOptions(data_home=tmp_path / "home"))
    path = mudata.building.pipeline.build(
        entry, BuildOptions(data_home=tmp_path / "home", allow_unverified=True)
    )
    record = mudata.publish.store.read_provenance(path)
    (file_record,) = record["files"]
    assert file_record["verified_at_build"] is False and file_record["glob"] == "*.csv"
    assert sorted(file_record["unpinned"]) == ["csv/u1.csv", "csv/u2.csv", "csv/u3.csv"]
    assert record["counts"]["users"] == 3
    # a file added under the unpinned glob is seen: the table is built again
    write_users(tmp_path / "data" / "csv", ["u4"], np.random.default_rng(9))
    assert not mudata.building.cache.is_built(entry, tmp_path / "home")
    path = mudata.building.pipeline.build(
        entry, BuildOptions(data_home=tmp_path / "home", allow_unverified=True)
    )
    assert mudata.publish.store.read_provenance(path)["counts"]["users"] == 4


def test_pinned_glob_is_verified_and_labelled_first_use(tmp_path):
    folder = tmp_path / "data"
    write_users(folder, ["u1", "u2"], np.random.default_rng(1))
    pins = {p.name: sha(p) for p in sorted(folder.glob("*.csv"))}
    toml = tmp_path / "globbed.toml"
    toml.write_text(entry_text("data", "*.csv", pins), encoding="utf-8")
    path = mudata.building.pipeline.build(
        load_entry_file(toml), BuildOptions(data_home=tmp_path / "home")
    )
    (file_record,) = mudata.publish.store.read_provenance(path)["files"]
    assert file_record["verified_at_build"] is True
    assert file_record["hashes"] == "first-use"
    assert file_record["members"] == pins


def test_a_changed_file_set_names_added_and_missing_files(tmp_path):
    folder = tmp_path / "data"
    write_users(folder, ["u1", "u2", "u3"], np.random.default_rng(2))
    pins = {p.name: sha(p) for p in sorted(folder.glob("*.csv"))}
    toml = tmp_path / "globbed.toml"
    toml.write_text(entry_text("data", "*.csv", pins), encoding="utf-8")
    (folder / "u3.csv").unlink()
    write_users(folder, ["u4"], np.random.default_rng(3))
    with pytest.raises(ChecksumError, match=r"added \['u4.csv'\]; missing \['u3.csv'\]") as info:
        mudata.building.pipeline.build(
            load_entry_file(toml), BuildOptions(data_home=tmp_path / "home", allow_unverified=True)
        )
    assert "--allow-unverified" not in str(info.value)  # it does not help here


def test_a_glob_over_an_archive_checks_the_same_file_set(tmp_path):
    folder = tmp_path / "src"
    write_users(folder, ["u1", "u2"], np.random.default_rng(4))
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in sorted(folder.glob("*.csv")):
            zf.write(p, f"release/{p.name}")
        zf.writestr("release/README", "read me")
    pins = {f"release/{p.name}": sha(p) for p in sorted(folder.glob("*.csv"))}
    toml = tmp_path / "globbed.toml"
    toml.write_text(entry_text("data.zip", "release/*.csv", pins), encoding="utf-8")
    path = mudata.building.pipeline.build(
        load_entry_file(toml), BuildOptions(data_home=tmp_path / "home")
    )
    assert mudata.publish.store.read_provenance(path)["files"][0]["verified_at_build"] is True
    extra = dict(pins, **{"release/u9.csv": "0" * 64})
    toml.write_text(entry_text("data.zip", "release/*.csv", extra), encoding="utf-8")
    with pytest.raises(ChecksumError, match=r"added none; missing \['release/u9.csv'\]"):
        mudata.building.pipeline.build(
            load_entry_file(toml), BuildOptions(data_home=tmp_path / "home", force=True)
        )


def test_a_glob_matching_nothing_says_so(tmp_path):
    write_users(tmp_path / "data", ["u1"], np.random.default_rng(5))
    toml = tmp_path / "globbed.toml"
    toml.write_text(entry_text("data", "*.parquet"), encoding="utf-8")
    with pytest.raises(MissingFileError, match=r"holds no file matching the glob '\*\.parquet'"):
        mudata.building.pipeline.build(
            load_entry_file(toml), BuildOptions(data_home=tmp_path / "home", allow_unverified=True)
        )
