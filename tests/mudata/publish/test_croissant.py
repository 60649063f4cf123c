"""croissant.json beside datapackage.json: valid for mlcroissant, and the same rows as mudata.load."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import mlcroissant as mlc
import pandas as pd
import pytest

import mudata
from mudata.publish.croissant import CONFORMS_TO, croissant, croissant_type

NAME = "wisdm"


@pytest.fixture(scope="module")
def built(wisdm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home holding the WISDM table built from the official file."""
    home = tmp_path_factory.mktemp("croissant_home")
    mudata.fetch(NAME, data_home=home, manual_dir=wisdm_dir)
    return home


def test_the_descriptor_is_valid_and_gives_the_rows_of_mudata_load(built: Path) -> None:
    path = built / NAME / "croissant.json"
    dataset = mlc.Dataset(jsonld=path)
    issues = dataset.metadata.issues
    assert not issues.errors and not issues.warnings, issues.report()

    records = pd.DataFrame(list(dataset.records(record_set=NAME)))
    records.columns = [unquote(c.removeprefix(f"{NAME}/")) for c in records.columns]
    frame = mudata.load(NAME, data_home=built, download_if_missing=False).frame
    for column in ("userid", "label"):  # mlcroissant gives text as bytes
        records[column] = records[column].map(bytes.decode).astype(frame[column].dtype)
    pd.testing.assert_frame_equal(records, frame.reset_index(drop=True), check_dtype=True)


def test_the_descriptor_names_the_file_hash_licence_citation_and_fields(built: Path) -> None:
    folder = built / NAME
    document = json.loads((folder / "croissant.json").read_text(encoding="utf-8"))
    record = mudata.provenance(NAME, data_home=built)
    frame = mudata.load(NAME, data_home=built, download_if_missing=False).frame
    assert document["conformsTo"] == CONFORMS_TO
    (distribution,) = document["distribution"]
    assert distribution["contentUrl"] == f"{NAME}.parquet"
    assert (
        distribution["sha256"]
        == hashlib.sha256((folder / f"{NAME}.parquet").read_bytes()).hexdigest()
    )
    assert document["citeAs"] == record["citation"].strip()
    assert document["license"] == record["licence_path"]  # a LicenseRef- licence: its terms
    assert document["url"] == record["homepage"]
    (record_set,) = document["recordSet"]
    assert [(f["name"], f["dataType"]) for f in record_set["field"]] == [
        (str(c), croissant_type(t)) for c, t in frame.dtypes.items()
    ]
    assert {f["dataType"] for f in record_set["field"]} == {"sc:Text", "sc:Float"}
    assert record_set["field"][1]["name"] == "label"
    assert all(c in record_set["field"][1]["description"] for c in record["classes"])


def test_a_table_without_one_gets_it_on_fetch_without_mlcroissant(built: Path) -> None:
    folder = built / NAME
    before = (folder / "croissant.json").read_bytes()
    (folder / "croissant.json").unlink()
    script = (
        "import sys, mudata\n"
        f"mudata.fetch({NAME!r}, data_home={str(built)!r}, download_if_missing=False)\n"
        "assert 'mlcroissant' not in sys.modules, 'mlcroissant imported at run time'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
    assert (folder / "croissant.json").read_bytes() == before


def test_spdx_licences_become_their_spdx_address() -> None:
    table = pd.DataFrame({"userid": ["1"], "label": ["a"], "f": [1.0]})
    provenance = {
        "dataset": "toy",
        "title": "Toy",
        "homepage": "https://example.org",
        "licence": "CC-BY-4.0",
        "citation": "Someone (2020).\n",
        "dataset_version": "2",
        "classes": ["a"],
        "recipe": {"name": "precomputed", "version": 2},
        "counts": {"rows": 1, "users": 1},
        "built": "2026-01-02T03:04:05+00:00",
    }
    document = croissant(table, "toy.parquet", "0" * 64, provenance)
    assert document["license"] == "https://spdx.org/licenses/CC-BY-4.0.html"
    assert (document["version"], document["datePublished"]) == ("2.0.0", "2026-01-02")
    assert [f["dataType"] for f in document["recordSet"][0]["field"]] == [
        "sc:Text",
        "sc:Text",
        "sc:Float",
    ]


def _toy_provenance() -> dict[str, object]:
    return {
        "dataset": "toy",
        "title": "Toy",
        "homepage": "https://example.org",
        "licence": "CC-BY-4.0",
        "citation": "Someone (2020).",
        "dataset_version": "1",
        "classes": ["a"],
        "counts": {"rows": 2, "users": 1},
        "built": "2026-01-02T03:04:05+00:00",
    }


def _descriptor_records(folder: Path, table: pd.DataFrame) -> tuple[dict, list[dict]]:
    """Write ``table`` and its descriptor in ``folder``; validate and read it with mlcroissant."""
    table.to_parquet(folder / "toy.parquet", index=False)
    sha = hashlib.sha256((folder / "toy.parquet").read_bytes()).hexdigest()
    document = croissant(table, "toy.parquet", sha, _toy_provenance())
    (folder / "croissant.json").write_text(json.dumps(document), encoding="utf-8")
    dataset = mlc.Dataset(jsonld=folder / "croissant.json")
    issues = dataset.metadata.issues
    assert not issues.errors and not issues.warnings, issues.report()
    return document, list(dataset.records(record_set="toy"))


HOSTILE = [
    "acc x",
    "a/b",
    "a#b",
    "a?b",
    'say "hi"',
    "it's",
    "é√",
    "😀",
    "1st",
    "..",
    "a.b",
    "tab\there",
    "a%20b",
]


@pytest.mark.parametrize("column", HOSTILE)
def test_a_hostile_column_name_gives_a_valid_descriptor(column: str, tmp_path: Path) -> None:
    table = pd.DataFrame({"userid": ["1", "1"], "label": ["a", "a"], column: [1.5, 2.5]})
    document, records = _descriptor_records(tmp_path, table)
    (field,) = [f for f in document["recordSet"][0]["field"] if f["name"] == column]
    assert " " not in field["@id"] and field["@id"].count("/") == 1
    assert [r[field["@id"]] for r in records] == [1.5, 2.5]


def test_names_alike_but_for_punctuation_keep_apart(tmp_path: Path) -> None:
    # Each pair would share a slug (or a decoded form) if the ids were made carelessly.
    alike = ["acc x", "acc_x", "acc-x", "acc%20x", "acc.x", "a/b", "a%2Fb", "A b", "a b"]
    values = {name: [float(i), float(i) + 0.5] for i, name in enumerate(alike)}
    table = pd.DataFrame({"userid": ["1", "1"], "label": ["a", "a"], **values})
    document, records = _descriptor_records(tmp_path, table)
    fields = document["recordSet"][0]["field"]
    assert len({f["@id"] for f in fields}) == len(fields)
    assert [f["name"] for f in fields] == list(table.columns)
    by_name = {f["name"]: f["@id"] for f in fields}
    for name, column in values.items():
        assert [r[by_name[name]] for r in records] == column


def test_a_table_without_a_recipe_gets_a_descriptor(tmp_path: Path) -> None:
    table = pd.DataFrame({"userid": ["1", "1"], "label": ["a", "a"], "f": [1.0, 2.0]})
    document, _ = _descriptor_records(tmp_path, table)
    assert "Recipe" not in document["description"]
