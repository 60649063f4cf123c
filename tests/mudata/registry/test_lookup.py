"""The registry: every built-in entry conforms; bad entries are named precisely."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from mudata._resources import builtin_registry_dir
from mudata.errors import RegistryError, UnknownDatasetError
from mudata.readers import available_readers, get_reader
from mudata.registry.lookup import get_entry, load_entry_file, load_registry, parse_entry

BUILTIN = sorted(p.stem for p in builtin_registry_dir().glob("*.toml"))


UNPINNED = {"har70", "mhealth", "pamap2", "harth", "motionsense"}


def test_the_four_study_datasets_are_registered() -> None:
    assert {"wisdm", "har70", "opportunity", "gestures"} <= set(BUILTIN)


@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_entry_conforms(name: str) -> None:
    entry = get_entry(name)
    assert entry.name == name
    assert callable(get_reader(entry.reader))
    assert len(entry.classes) >= 2
    for remote in entry.files:
        assert remote.url or remote.path
        # every file can be verified: a hash of its own, or of each member; the
        # entries whose publishers give no checksum stay unpinned until someone
        # with the real files pins them
        assert remote.sha256 or remote.members or name in UNPINNED, remote.name
    if entry.recipe.name == "study-window":
        assert entry.recipe.window and entry.sensors
        for sensor in entry.sensors:
            assert len(sensor.channels) == 3


def _minimal() -> dict:
    return {
        "name": "tiny",
        "title": "Tiny",
        "version": "1",
        "homepage": "https://example.org",
        "licence": "CC0-1.0",
        "citation": "Nobody (2026)",
        "sampling_rate_hz": 10,
        "reader": "feature-table",
        "recipe": {"name": "precomputed"},
        "classes": [{"code": "a", "name": "a"}, {"code": "b", "name": "b"}],
        "files": [{"name": "t.csv", "path": "t.csv", "sha256": "0" * 64}],
    }


def test_minimal_entry_parses_with_defaults() -> None:
    entry = parse_entry(_minimal())
    assert entry.min_per_class == 5
    assert [(c.code, c.name) for c in entry.classes] == [("a", "a"), ("b", "b")]


@pytest.mark.parametrize(
    ("change", "field_named"),
    [
        (lambda d: d.pop("licence"), "'licence' is a required property"),
        (lambda d: d["files"][0].update(sha256="xyz"), "files[0].sha256"),
        (lambda d: d.update(sampling_rate_hz=-1), "sampling_rate_hz"),
        (lambda d: d["recipe"].update(name="magic"), "recipe.name"),
        (lambda d: d.update(colour="blue"), "'colour' was unexpected"),
        (lambda d: d["files"][0].pop("path"), "files[0]"),
        (lambda d: d.update(name="Bad Name"), "field 'name'"),
    ],
)
def test_invalid_entry_names_file_and_field(change, field_named: str) -> None:
    data = _minimal()
    change(data)
    with pytest.raises(RegistryError) as info:
        parse_entry(data, source="registry/tiny.toml")
    assert "registry/tiny.toml" in str(info.value)
    assert field_named in str(info.value)


def test_duplicate_class_codes_rejected() -> None:
    data = _minimal()
    data["classes"][1]["code"] = "a"
    with pytest.raises(RegistryError, match="duplicated class codes"):
        parse_entry(data)


def test_window_recipe_needs_window_and_sensors() -> None:
    data = _minimal()
    data["recipe"] = {"name": "study-window"}
    with pytest.raises(RegistryError, match="recipe.window"):
        parse_entry(data)
    data["recipe"] = {"name": "study-window", "window": 10}
    with pytest.raises(RegistryError, match="sensors"):
        parse_entry(data)


def test_unparseable_toml_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.toml"
    bad.write_text('name = "broken\n', encoding="utf-8")
    with pytest.raises(RegistryError, match="broken.toml.*not valid TOML"):
        load_entry_file(bad)


def test_unknown_dataset_suggests_closest() -> None:
    with pytest.raises(UnknownDatasetError) as info:
        get_entry("wisdn")
    assert "'wisdm'" in str(info.value)
    assert "Known datasets" in str(info.value)


def test_mudata_registry_env_adds_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "extra"
    folder.mkdir()
    text = (builtin_registry_dir() / "gestures.toml").read_text(encoding="utf-8")
    (folder / "gestures2.toml").write_text(
        text.replace('name = "gestures"', 'name = "gestures2"'), encoding="utf-8"
    )
    monkeypatch.setenv("MUDATA_REGISTRY", str(folder))
    entries = load_registry()
    assert "gestures2" in entries and "gestures" in entries
    assert entries["gestures2"].source == folder / "gestures2.toml"


def test_file_must_be_named_after_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "extra"
    folder.mkdir()
    text = (builtin_registry_dir() / "gestures.toml").read_text(encoding="utf-8")
    (folder / "other.toml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("MUDATA_REGISTRY", str(folder))
    # Only that entry fails; it is skipped with a warning naming the file and the field.
    entries = load_registry()
    assert "other" not in entries and "wisdm" in entries
    assert "other.toml" in caplog.text and "field 'name'" in caplog.text
    with pytest.raises(RegistryError, match="must be named after the dataset"):
        get_entry("other")


def test_builtin_entries_are_plain_toml() -> None:
    for path in builtin_registry_dir().glob("*.toml"):
        assert tomllib.loads(path.read_text(encoding="utf-8"))["name"] == path.stem


def test_readers_table_lists_builtins() -> None:
    assert {"wisdm-arff", "har70-csv", "opportunity-dat", "gestures-txt"} <= set(
        available_readers()
    )


def test_non_utf8_entry_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "latin.toml"
    bad.write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(
        RegistryError, match=r"latin.toml: expected UTF-8 text .* byte 0xe9 at offset 11"
    ):
        load_entry_file(bad)


def test_unreadable_entry_is_a_registry_error(tmp_path: Path) -> None:
    folder = tmp_path / "folder.toml"
    folder.mkdir()  # a folder where a file is expected
    with pytest.raises(RegistryError, match="folder.toml cannot be read"):
        load_entry_file(folder)


def test_broken_entry_in_registry_path_is_a_warning_and_only_that_dataset_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from mudata.cli import main

    (tmp_path / "bad.toml").write_bytes(b"\xff\xfe")
    monkeypatch.setenv("MUDATA_REGISTRY", str(tmp_path))
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 0, result.output
    assert "bad.toml" in result.output and "UTF-8" in result.output
    assert "wisdm" in result.output  # the built-ins keep working
    failed = CliRunner().invoke(main, ["info", "bad"])
    assert failed.exit_code == 1 and "bad.toml" in failed.output and "UTF-8" in failed.output
    assert CliRunner().invoke(main, ["info", "wisdm"]).exit_code == 0


def test_a_reader_option_typo_is_an_error_naming_the_key() -> None:
    data = _minimal()
    data["reader_options"] = {"format": "csv", "user_column": "subject"}
    with pytest.raises(RegistryError) as info:
        parse_entry(data, source="tiny.toml")
    message = str(info.value)
    assert (
        "field 'reader_options.user_column' is not an option of reader 'feature-table'" in message
    )
    assert "did you mean 'user_col'?" in message and "tiny.toml" in message
    data["reader_options"] = {"format": "csv", "user_col": "subject"}
    assert parse_entry(data).reader_options["user_col"] == "subject"


@pytest.mark.parametrize("name", sorted(available_readers()))
def test_every_builtin_entry_uses_only_its_readers_options(name: str) -> None:
    from mudata.readers import READER_OPTIONS

    for entry in load_registry().values():
        if entry.reader == name:
            assert set(entry.reader_options) <= READER_OPTIONS[name], entry.name
