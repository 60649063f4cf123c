"""datapackage.json is a valid Data Package (checked by frictionless), with SPDX licences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from frictionless import validate

import mudata
from mudata.errors import StorageError
from mudata.sources.paths import table_dir
from tests.tiny_entry import write_tiny_entry

CUSTOM = '{ name = "LicenseRef-tiny-terms", title = "Research use only; cite the study", path = "https://example.org/tiny/terms" }'


def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, licence: str) -> Path:
    write_tiny_entry(tmp_path / "registry", licence=licence)
    monkeypatch.setenv("MUDATA_REGISTRY", str(tmp_path / "registry"))
    return mudata.fetch("tiny", data_home=tmp_path / "home").parent / "datapackage.json"


def errors_of(descriptor: Path) -> list[str]:
    report = validate(str(descriptor))
    return [f"{e.type}: {e.note}" for e in report.errors] + [
        f"{e.type}: {e.note}" for task in report.tasks for e in task.errors
    ]


@pytest.mark.parametrize(
    ("licence", "expected"),
    [
        (
            '"CC-BY-4.0"',
            {
                "name": "CC-BY-4.0",
                "title": "Creative Commons Attribution 4.0 International",
                "path": "https://spdx.org/licenses/CC-BY-4.0.html",
            },
        ),
        (
            CUSTOM,
            {
                "name": "LicenseRef-tiny-terms",
                "title": "Research use only; cite the study",
                "path": "https://example.org/tiny/terms",
            },
        ),
    ],
)
def test_descriptor_passes_frictionless_with_its_licence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, licence: str, expected: dict[str, str]
) -> None:
    descriptor = build(tmp_path, monkeypatch, licence)
    assert errors_of(descriptor) == []
    report = validate(str(descriptor))
    assert report.valid and report.tasks[0].stats["rows"] == 36  # the rows were read and checked
    data = json.loads(descriptor.read_text(encoding="utf-8"))
    assert data["licenses"] == [expected]
    assert all(source["path"] for source in data["sources"])


def test_frictionless_catches_a_descriptor_that_disagrees_with_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The validator reads the rows: a class list without 'down' must fail, so the
    # test above is not passing whatever the descriptor says.
    descriptor = build(tmp_path, monkeypatch, '"CC0-1.0"')
    data = json.loads(descriptor.read_text(encoding="utf-8"))
    data["resources"][0]["schema"]["fields"][1]["constraints"]["enum"] = ["up"]
    descriptor.write_text(json.dumps(data), encoding="utf-8")
    assert any(e.startswith("constraint-error") for e in errors_of(descriptor))
    data["resources"][0]["schema"]["fields"][1]["constraints"]["enum"] = ["up", "down"]
    data["licenses"] = [{"title": "no name"}]
    descriptor.write_text(json.dumps(data), encoding="utf-8")
    assert any("license requires" in e for e in errors_of(descriptor))


def test_a_failed_later_write_leaves_no_datapackage_of_a_missing_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # croissant.json, written after datapackage.json, cannot be written: a
    # folder holds its name (the rename onto it fails as on a full disk).
    write_tiny_entry(tmp_path / "registry")
    monkeypatch.setenv("MUDATA_REGISTRY", str(tmp_path / "registry"))
    folder = table_dir("tiny", tmp_path / "home")
    (folder / "croissant.json").mkdir(parents=True)
    with pytest.raises(StorageError, match="cannot write the table of 'tiny'"):
        mudata.fetch("tiny", data_home=tmp_path / "home")
    left = sorted(p.name for p in folder.iterdir() if not p.name.startswith(".lock"))
    assert left == [".spool", "croissant.json"]  # no datapackage.json, no table, no .part


def test_a_failed_rebuild_puts_the_old_datapackage_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    descriptor = build(tmp_path, monkeypatch, '"CC0-1.0"')
    folder = descriptor.parent
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    (folder / "croissant.json").unlink()
    (folder / "croissant.json").mkdir()
    (tmp_path / "registry" / "tiny.toml").write_text(
        (tmp_path / "registry" / "tiny.toml").read_text().replace("A tiny study", "Retitled"),
        encoding="utf-8",
    )
    with pytest.raises(StorageError):
        mudata.fetch("tiny", data_home=tmp_path / "home", force=True)
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert after["datapackage.json"] == before["datapackage.json"]
    assert after["tiny.parquet"] == before["tiny.parquet"]
    assert not [name for name in after if name.endswith(".part")]
