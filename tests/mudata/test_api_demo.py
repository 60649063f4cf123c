"""The embedded ``demo`` dataset: the pinned file, built offline, and rebuilt from its release.

The wheel side (the file in the wheel, the README's first command on the
installed entry point) is in ``tests/project/test_wheel.py``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mudata
from mudata.errors import ChecksumError
from mudata.registry.lookup import get_entry
from tests.conftest import PROJECT_ROOT, SHARED_DATA

RELEASE = SHARED_DATA / "releases" / "motionsense_sub1-4.tar.gz"
EMBEDDED = PROJECT_ROOT / "embedded"


def _embedded_file() -> Path:
    entry = get_entry("demo")
    (remote,) = entry.files
    assert entry.source is not None and remote.path is not None
    return entry.source.parent / remote.path


def test_the_entry_pins_the_embedded_file_and_needs_no_network() -> None:
    entry = get_entry("demo")
    (remote,) = entry.files
    assert remote.url is None  # nothing to download, ever
    path = _embedded_file()
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == remote.sha256
    assert len(data) == remote.size
    assert len(data) < 1_000_000  # the one data file allowed this large
    # The build record beside the file names the same hash.
    assert remote.sha256 in (EMBEDDED / "README.md").read_text(encoding="utf-8")


def test_the_licence_and_citation_are_those_of_motionsense() -> None:
    demo, source = get_entry("demo"), get_entry("motionsense")
    assert (demo.licence, demo.citation, demo.homepage) == (
        source.licence,
        source.citation,
        source.homepage,
    )
    notice = (EMBEDDED / "demo.LICENSE").read_text(encoding="utf-8")
    # MIT asks for the copyright and permission notice in every copy.
    assert "MIT License" in notice
    assert "Copyright (c) 2018 Mohammad Malekzadeh" in notice
    assert "The above copyright notice and this permission notice" in notice


def test_load_builds_demo_in_an_empty_home_without_downloading(tmp_path: Path) -> None:
    home = tmp_path / "empty-home"
    bunch = mudata.load("demo", data_home=home, download_if_missing=False)
    stored = pq.read_table(_embedded_file()).to_pandas()
    assert list(bunch.frame.columns) == list(stored.columns)
    assert bunch.frame["userid"].tolist() == stored["userid"].tolist()
    assert bunch.frame["label"].tolist() == stored["label"].tolist()
    np.testing.assert_array_equal(
        bunch.data.to_numpy(), stored[bunch.feature_names].to_numpy(dtype="float64")
    )
    (record,) = bunch.provenance["files"]
    assert (record["origin"], record["verified_at_build"]) == ("local", True)
    assert record["sha256"] == get_entry("demo").files[0].sha256
    assert (home / "demo" / "demo.parquet").is_file()
    assert "MIT" in bunch.DESCR and "Malekzadeh" in bunch.DESCR
    # Built once: the second load reads the table of the data home.
    assert mudata.load("demo", data_home=home).provenance["built"] == bunch.provenance["built"]


def test_a_changed_embedded_file_is_refused(tmp_path: Path, monkeypatch) -> None:
    """The pin is checked at each build: a copy of the entry on altered bytes fails."""
    entry_text = (PROJECT_ROOT / "registry" / "demo.toml").read_text(encoding="utf-8")
    folder = tmp_path / "registry"
    (tmp_path / "embedded").mkdir()
    folder.mkdir()
    data = bytearray(_embedded_file().read_bytes())
    data[len(data) // 2] ^= 1
    (tmp_path / "embedded" / "demo.parquet").write_bytes(bytes(data))
    (folder / "demo.toml").write_text(entry_text, encoding="utf-8")
    monkeypatch.setenv("MUDATA_REGISTRY", str(folder))
    with pytest.raises(ChecksumError, match="sha256 mismatch"):
        mudata.load("demo", data_home=tmp_path / "home")


def _build_script() -> ModuleType:
    path = PROJECT_ROOT / "scripts" / "build_demo.py"
    spec = importlib.util.spec_from_file_location("build_demo", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.release
def test_the_embedded_table_is_what_mudata_builds_from_the_release() -> None:
    if not RELEASE.is_file():
        pytest.skip(f"the MotionSense release is not at {RELEASE}")
    rebuilt = _build_script().build(RELEASE)
    assert pq.read_table(pa.BufferReader(rebuilt)).equals(pq.read_table(_embedded_file()))
    # Parquet's bytes name the writer's version: byte for byte under the recorded one.
    recorded = re.search(
        r"written with pyarrow (\S+?)\)", (EMBEDDED / "README.md").read_text(encoding="utf-8")
    )
    assert recorded is not None
    if pa.__version__ == recorded.group(1):
        assert rebuilt == _embedded_file().read_bytes()
