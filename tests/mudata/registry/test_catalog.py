"""``mudata.list()``, ``mudata.info()`` and the commands ``mudata list`` and ``mudata info``.

Each says whether a table is built in the data home, what a fetch downloads
and how many users there are: the built table's count, else the registry's
published one, else unknown. The expected values come from the registry's
TOML files and the study's counts (DATASETS.md), not from the code under test.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
from mudata._resources import builtin_registry_dir
from mudata.cli import main
from mudata.errors import RegistryError, UnknownDatasetError
from mudata.registry.lookup import parse_entry
from tests.mudata.registry.test_lookup import _minimal
from tests.tiny_entry import write_tiny_entry

#: DATASETS.md: users kept by the study's filter; WISDM has 36 in all.
STUDY_USERS = {"wisdm": 16, "har70": 16, "opportunity": 4, "gestures": 8}


def _toml(name: str) -> dict:
    return tomllib.loads((builtin_registry_dir() / f"{name}.toml").read_text(encoding="utf-8"))


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def wisdm_home(wisdm_dir: Path, tmp_path: Path) -> Path:
    """A data home with the WISDM table built from the official member."""
    home = tmp_path / "home"
    mudata.fetch("wisdm", data_home=home, manual_dir=wisdm_dir, progress=False)
    return home


def test_list_before_anything_is_built(tmp_path: Path) -> None:
    table = mudata.list(data_home=tmp_path)
    assert list(table["name"]) == sorted(p.stem for p in builtin_registry_dir().glob("*.toml"))
    assert not table["built"].any()
    row = table.set_index("name").loc["wisdm"]
    assert row["download_bytes"] == sum(f["size"] for f in _toml("wisdm")["files"])
    assert row["path"] == str(tmp_path / "wisdm" / "wisdm.parquet")
    for name, users in STUDY_USERS.items():
        assert table.set_index("name").loc[name, "users"] == users
        assert table.set_index("name").loc[name, "users_from"] == "registry"
    unknown = [n for n in table["name"] if "users" not in _toml(n)]
    assert unknown, "every built-in entry gives its users: pick another unknown case"
    assert table.set_index("name").loc[unknown, "users"].isna().all()
    assert table.set_index("name").loc[unknown, "users_from"].isna().all()
    # A remote file without a recorded size: the download is unknown, not 0.
    sizeless = [
        n for n in table["name"] if any("url" in f and "size" not in f for f in _toml(n)["files"])
    ]
    assert sizeless and table.set_index("name").loc[sizeless, "download_bytes"].isna().all()


def test_list_and_info_once_wisdm_is_built(wisdm_home: Path) -> None:
    row = mudata.list(data_home=wisdm_home).set_index("name").loc["wisdm"]
    assert bool(row["built"]) and row["users"] == 16 and row["users_from"] == "table"
    info = mudata.info("wisdm", data_home=wisdm_home)
    assert info.built and info.users == 16 and info.users_from == "table"
    assert info.users_dropped == 36 - 16 and info.rows == 2869
    assert info.path == wisdm_home / "wisdm" / "wisdm.parquet" and info.path.is_file()
    assert info.entry.name == "wisdm"
    other = mudata.info("gestures", data_home=wisdm_home)
    assert not other.built and other.users_from == "registry" and other.rows is None


def test_a_local_entry_downloads_nothing_and_its_users_are_unknown_until_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tiny_entry(tmp_path / "reg")
    monkeypatch.setenv("MUDATA_REGISTRY", str(tmp_path / "reg"))
    before = mudata.info("tiny", data_home=tmp_path / "home")
    assert (before.built, before.download_bytes, before.users, before.users_from) == (
        False,
        0,
        None,
        None,
    )
    mudata.fetch("tiny", data_home=tmp_path / "home", progress=False)
    after = mudata.info("tiny", data_home=tmp_path / "home")
    # tiny_entry: three users, six rows of each class each, all kept.
    assert (after.built, after.users, after.users_from, after.users_dropped) == (
        True,
        3,
        "table",
        0,
    )


def test_info_of_an_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(UnknownDatasetError, match="wisdm"):
        mudata.info("wisdn")


def test_the_registry_users_key_is_checked() -> None:
    assert parse_entry({**_minimal(), "users": 12}).users == 12
    assert parse_entry(_minimal()).users is None
    with pytest.raises(RegistryError, match="users"):
        parse_entry({**_minimal(), "users": 0})
    with pytest.raises(RegistryError, match="users"):
        parse_entry({**_minimal(), "users": "many"})


def test_mudata_list_shows_built_download_and_users(wisdm_home: Path) -> None:
    result = _cli("list", "--data-home", str(wisdm_home))
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line.split() for line in result.output.splitlines()}
    assert lines["name"][:4] == ["name", "built", "download", "users"]
    assert lines["wisdm"][1:5] == ["yes", "10.9", "MiB", "16"]  # 11,404,612 bytes
    assert lines["gestures"][1] == "no" and "8 (registry)" in " ".join(lines["gestures"])
    unknown = next(n for n in sorted(lines) if n != "name" and "users" not in _toml(n))
    assert "unknown" in lines[unknown]
    listed = {
        d["name"]: d
        for d in json.loads(_cli("list", "--json", "--data-home", str(wisdm_home)).output)
    }
    assert listed["wisdm"]["built"] is True and listed["wisdm"]["users"] == 16
    assert listed["wisdm"]["download_bytes"] == 11404612
    assert listed["gestures"]["users_from"] == "registry"
    csv = _cli("list", "--table", "csv", "--data-home", str(wisdm_home)).output
    assert csv.splitlines()[0] == "name,built,download,users,title,licence"


def test_mudata_info_shows_built_download_and_users(wisdm_home: Path, tmp_path: Path) -> None:
    built = _cli("info", "wisdm", "--data-home", str(wisdm_home))
    assert built.exit_code == 0, built.output
    assert f"built:     yes, {wisdm_home / 'wisdm' / 'wisdm.parquet'}" in built.output
    assert "download:  10.9 MiB (11,404,612 bytes)" in built.output
    assert "users:     16 kept by the filter, 20 dropped (the built table)" in built.output
    fresh = _cli("info", "wisdm", "--data-home", str(tmp_path / "empty")).output
    assert "built:     no (`mudata fetch wisdm` builds it at" in fresh
    assert "users:     16 kept by the filter (the registry's count; not built here)" in fresh
    data = json.loads(_cli("info", "wisdm", "--json", "--data-home", str(wisdm_home)).output)
    assert data["users"] == 16 and data["status"]["built"] is True
    assert data["status"]["users_dropped"] == 20 and data["status"]["rows"] == 2869


def test_list_is_a_frame_of_the_documented_types(tmp_path: Path) -> None:
    table = mudata.list(data_home=tmp_path)
    assert list(table.columns) == [
        "name",
        "title",
        "licence",
        "built",
        "download_bytes",
        "users",
        "users_from",
        "path",
    ]
    assert table["built"].dtype == bool
    assert table["users"].dtype == pd.Int64Dtype() and table["download_bytes"].dtype == "Int64"
