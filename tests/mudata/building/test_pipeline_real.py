"""The pipeline on the official files of ../shared/data: counts, provenance, caching, mirror."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import mudata
from mudata._resources import builtin_registry_dir
from mudata.errors import MissingFileError
from mudata.publish.store import PROVENANCE_KEY, write_table

WISDM_ARFF_SHA256 = "b083abfe759dea1b8f5eae01f2bef135bbecb25246c8d1eb52afdbfadd3e883a"
GESTURES_SHA256 = "4a6c5ac1d408f8405d456e0404b424b905ea49425c663fb08f0c3ab341efd32d"

# DATASETS.md, Table 1 of the study.
WISDM_CLASS_COUNTS = {
    "Downstairs": 300,
    "Jogging": 833,
    "Sitting": 241,
    "Standing": 176,
    "Upstairs": 329,
    "Walking": 990,
}
WISDM_FEATURES = [f"{axis}{i}" for axis in "XYZ" for i in range(10)] + [
    "YAVG",
    "ZAVG",
    "XABSOLDEV",
    "YABSOLDEV",
    "ZABSOLDEV",
    "XSTANDDEV",
    "YSTANDDEV",
    "ZSTANDDEV",
    "RESULTANT",
]


def test_wisdm_from_manual_dir_matches_the_study(wisdm_dir: Path, tmp_path: Path) -> None:
    frame = mudata.load("wisdm", data_home=tmp_path, manual_dir=wisdm_dir).frame
    assert len(frame) == 2869
    assert frame["userid"].nunique() == 16
    assert list(frame.columns) == ["userid", "label", *WISDM_FEATURES]
    assert frame["label"].value_counts().to_dict() == WISDM_CLASS_COUNTS
    # users 6 and 24 have 4 and 3 "Standing" rows: the rule, not a list, drops them
    assert not {"6", "24"} & set(frame["userid"])
    # file order is kept: the first rows are user 33's, as in the ARFF
    assert frame["userid"].iloc[0] == "33"  # user ids are text

    record = frame.attrs["provenance"]
    assert (
        record["files"][0]["members"]["WISDM_ar_v1.1/WISDM_ar_v1.1_transformed.arff"]
        == WISDM_ARFF_SHA256
    )
    assert record["counts"]["rows_read"] == 5418
    assert record["counts"]["users_dropped"]["24"].startswith("fewer than 5 rows")
    assert record["recipe"]["name"] == "precomputed"
    assert "Kwapisz" in record["citation"]


def test_gestures_from_manual_dir_matches_the_study(gestures_zip: Path, tmp_path: Path) -> None:
    X, y, groups = mudata.load(
        "gestures", data_home=tmp_path, manual_dir=gestures_zip.parent, return_X_y=True
    )
    assert X.shape == (3200, 32)
    assert groups.nunique() == 8 and sorted(groups.unique(), key=int) == [
        str(u) for u in range(1, 9)
    ]
    assert sorted(y.unique(), key=lambda s: int(s[1:])) == [f"n{i}" for i in range(1, 21)]
    assert (y.value_counts() == 160).all()
    # ordered by user, gesture, repetition
    assert list(y.iloc[:21]) == ["n1"] * 20 + ["n2"]
    Xn, yn, gn = mudata.load("gestures", data_home=tmp_path, return_X_y=True, as_frame=False)
    assert Xn.shape == (3200, 32) and yn.shape == (3200,) and gn.shape == (3200,)


def test_provenance_is_in_parquet_and_datapackage(gestures_zip: Path, tmp_path: Path) -> None:
    path = mudata.fetch("gestures", data_home=tmp_path, manual_dir=gestures_zip.parent)
    metadata = pq.read_schema(path).metadata
    record = json.loads(metadata[PROVENANCE_KEY])
    assert record["files"][0]["sha256"] == GESTURES_SHA256
    assert record["files"][0]["verified_at_build"] is True
    assert record["counts"]["rows"] == 3200
    package = json.loads((path.parent / "datapackage.json").read_text(encoding="utf-8"))
    assert package["resources"][0]["path"] == path.name
    assert package["licenses"] == [
        {
            "name": "LicenseRef-Smartwatch-Gestures-research-only",
            "title": "Research or academic use only; cite Costante et al. (2014)",
            "path": "https://tev.fbk.eu/resources/smartwatch",
        }
    ]
    assert (record["licence"], record["licence_title"]) == (
        package["licenses"][0]["name"],
        package["licenses"][0]["title"],
    )
    fields = [f["name"] for f in package["resources"][0]["schema"]["fields"]]
    assert fields == list(pd.read_parquet(path).columns)
    assert mudata.provenance("gestures", data_home=tmp_path)["sha256"] == record["table_sha256"]


def test_second_fetch_returns_at_once_without_sources(gestures_zip: Path, tmp_path: Path) -> None:
    path = mudata.fetch("gestures", data_home=tmp_path, manual_dir=gestures_zip.parent)
    before = path.stat().st_mtime_ns
    # No manual dir and no network: only an already-built table can answer.
    again = mudata.fetch("gestures", data_home=tmp_path, download_if_missing=False)
    assert again == path and path.stat().st_mtime_ns == before


def test_not_built_and_no_download_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError, match="not built.*download_if_missing=False"):
        mudata.load("wisdm", data_home=tmp_path, download_if_missing=False)


def test_gestures_through_a_local_mirror(gestures_zip: Path, tmp_path: Path, http_server) -> None:
    shutil.copy(gestures_zip, http_server.root / gestures_zip.name)
    path = mudata.fetch("gestures", data_home=tmp_path, mirror=http_server.url, progress=False)
    assert http_server.count(f"/{gestures_zip.name}") == 1
    assert len(pd.read_parquet(path)) == 3200
    record = mudata.provenance("gestures", data_home=tmp_path)
    assert record["files"][0]["sha256"] == GESTURES_SHA256


def serve_wisdm(wisdm_dir: Path, tmp_path: Path, http_server, monkeypatch) -> str:
    """Serve the official WISDM member from ``http_server`` under an entry ``wisdm-mirror``.

    The official archive is not kept here: the server holds a tarball of the
    official member, and the entry (registered through ``$MUDATA_REGISTRY``) pins
    that tarball's hash while the member keeps its official one.
    """
    tarball = http_server.root / "WISDM_ar_v1.1.tar.gz"
    with tarfile.open(tarball, "w:gz") as tf:
        tf.add(
            wisdm_dir / "WISDM_ar_v1.1_transformed.arff",
            arcname="WISDM_ar_v1.1/WISDM_ar_v1.1_transformed.arff",
        )
    archive_hash = hashlib.sha256(tarball.read_bytes()).hexdigest()
    official = (builtin_registry_dir() / "wisdm.toml").read_text(encoding="utf-8")
    assert WISDM_ARFF_SHA256 in official
    text = official.replace('name = "wisdm"', 'name = "wisdm-mirror"').replace(
        "e573791269aab4a629721cf04b6031b7cbf8e14261cd2bc86e65887a2bc592d7", archive_hash
    )
    registry = tmp_path / "registry-extra"
    registry.mkdir()
    (registry / "wisdm-mirror.toml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("MUDATA_REGISTRY", str(registry))
    return "wisdm-mirror"


def test_wisdm_through_a_local_mirror(
    wisdm_dir: Path, tmp_path: Path, http_server, monkeypatch
) -> None:
    name = serve_wisdm(wisdm_dir, tmp_path, http_server, monkeypatch)
    frame = mudata.load(
        name, data_home=tmp_path / "home", mirror=http_server.url + "/", progress=False
    ).frame
    assert len(frame) == 2869 and frame["userid"].nunique() == 16
    assert frame["label"].value_counts().to_dict() == WISDM_CLASS_COUNTS


def test_failed_write_leaves_no_table(tmp_path: Path) -> None:
    # A column pyarrow cannot store: the write fails inside pyarrow, after the
    # temporary file was created.
    table = pd.DataFrame({"userid": [1, 2], "label": ["a", "b"], "f": [object(), object()]})
    provenance = {
        "dataset": "x",
        "title": "x",
        "dataset_version": "1",
        "homepage": "",
        "licence": "CC0-1.0",
        "files": [],
        "citation": "",
        "classes": ["a", "b"],
    }
    with pytest.raises(Exception):  # noqa: B017 - pyarrow's own error type
        write_table(table, tmp_path, "x", provenance)
    assert not (tmp_path / "x.parquet").exists()
    assert not list(tmp_path.glob("*.part"))
    assert not (tmp_path / "datapackage.json").exists()
