"""The sources stage's view of an entry: one ReleaseFile per file, in registry order."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mudata.records.entry import DatasetEntry, RemoteFile
from mudata.registry.lookup import parse_entry
from mudata.sources.release import ReleaseFile, reader_members, release_files


def _entry(
    files: list[dict[str, Any]],
    options: dict[str, Any] | None = None,
    source: Path | str = "<memory>",
) -> DatasetEntry:
    data = {
        "name": "toy",
        "title": "Toy",
        "version": "1",
        "homepage": "https://example.invalid/toy",
        "licence": "CC0-1.0",
        "citation": "Nobody (2024). Toy.",
        "sampling_rate_hz": 20,
        "reader": "long-signals",
        "reader_options": options or {},
        "recipe": {"name": "study-window", "window": 10, "smoothing": 1},
        "sensors": [{"name": "acc", "channels": ["x", "y", "z"]}],
        "classes": [{"code": "walk", "name": "walk"}, {"code": "run", "name": "run"}],
        "files": files,
    }
    return parse_entry(data, source=source)


def test_one_record_per_file_in_registry_order(tmp_path: Path) -> None:
    toml = tmp_path / "toy.toml"
    entry = _entry(
        [{"name": "b.zip", "path": "b.zip"}, {"name": "a.zip", "path": "a.zip"}],
        {"members": "**/*.csv"},
        source=toml,
    )
    files = release_files(entry)
    assert [f.remote for f in files] == list(entry.files)
    assert {f.dataset for f in files} == {"toy"}
    assert {f.source for f in files} == {toml}
    assert {f.member_glob for f in files} == {"**/*.csv"}
    # Two files: extracted members cannot be told apart, so neither is the only one.
    assert [f.only_file for f in files] == [False, False]
    # A relative path is read from the folder of the entry's TOML file.
    assert files[0].base == tmp_path


def test_the_only_file_and_no_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    [file] = release_files(_entry([{"name": "a.zip", "path": "a.zip"}]))
    assert file.only_file
    assert file.member_glob is None
    monkeypatch.chdir(tmp_path)
    # An entry made in memory has no TOML file: a relative path is the current folder's.
    assert ReleaseFile(file.remote, "toy").base == tmp_path


@pytest.mark.parametrize(
    ("options", "glob"),
    [
        ({"members": "data/*.txt"}, "data/*.txt"),
        ({"member": "one.csv"}, "one.csv"),
        ({"members": ""}, None),  # empty: the reader's own default applies
        ({"members": ["a", "b"]}, None),  # not text: the reader refuses it, not the sources
        ({}, None),
    ],
)
def test_reader_members(options: dict[str, Any], glob: str | None) -> None:
    entry = _entry([{"name": "a.zip", "path": "a.zip"}])
    entry = replace(entry, reader_options=options)
    assert reader_members(entry) == glob


def test_label_names_file_and_dataset_with_line_breaks_escaped() -> None:
    file = ReleaseFile(RemoteFile(name="evil\nname.zip"), "toy")
    assert "\n" not in file.label
    assert file.label.startswith("file ")
    assert file.label.endswith(" of dataset 'toy'")
    assert "evil" in file.label and "name.zip" in file.label
