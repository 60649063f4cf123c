"""The ``mudata`` command line, through click's runner: output and exit codes."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from mudata.cli import main


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_list_shows_the_study_datasets() -> None:
    result = run("list")
    assert result.exit_code == 0
    for name in ("wisdm", "har70", "opportunity", "gestures"):
        assert name in result.output
    listed = json.loads(run("list", "--json").output)
    assert {d["name"] for d in listed} >= {"wisdm", "har70", "opportunity", "gestures"}


def test_info_readable_and_json() -> None:
    result = run("info", "gestures")
    assert result.exit_code == 0
    assert "4a6c5ac1d408f8405d456e0404b424b905ea49425c663fb08f0c3ab341efd32d" in result.output
    assert "Costante" in result.output
    data = json.loads(run("info", "opportunity", "--json").output)
    assert len(data["files"][0]["members"]) == 20
    assert [c["name"] for c in data["classes"]] == ["Stand", "Walk", "Sit", "Lie"]


def test_unknown_dataset_is_a_usage_error_with_suggestion() -> None:
    result = run("info", "gesture")
    assert result.exit_code == 2
    assert "unknown dataset 'gesture'" in result.output
    assert "'gestures'" in result.output


def test_fetch_manual_dir_prints_the_table_path(gestures_zip: Path, tmp_path: Path) -> None:
    result = run(
        "fetch", "gestures", "--manual-dir", str(gestures_zip.parent), "--data-home", str(tmp_path)
    )
    assert result.exit_code == 0, result.output
    path = Path(result.stdout.strip().splitlines()[-1])
    assert path == tmp_path / "gestures" / "gestures.parquet" and path.is_file()
    assert "3200 rows, 8 users, 20 classes, 32 features" in result.stderr


def test_fetch_with_wrong_archive_is_a_runtime_error(tmp_path: Path) -> None:
    manual = tmp_path / "manual"
    manual.mkdir()
    fake = manual / "gestures-dataset.zip"
    with zipfile.ZipFile(fake, "w") as zf:
        zf.writestr("gestures-dataset/U01/01/01.txt", "1 2 3 0.1 0.2 0.3\n")
    before = fake.read_bytes()
    result = run(
        "fetch", "gestures", "--manual-dir", str(manual), "--data-home", str(tmp_path / "home")
    )
    assert result.exit_code == 1
    assert "4a6c5ac1d408f8405d456e0404b424b905ea49425c663fb08f0c3ab341efd32d" in result.output
    assert fake.read_bytes() == before  # the user's file is left alone
    assert not (tmp_path / "home" / "gestures" / "gestures.parquet").exists()


def test_fetch_unverified_file_needs_the_flag(tmp_path: Path) -> None:
    # The file is there (so the refusal is not a missing-file error); UCI publishes no hash.
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "har70.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
    result = run(
        "fetch", "har70", "--manual-dir", str(manual), "--data-home", str(tmp_path / "home")
    )
    assert result.exit_code == 2, result.output
    assert "file 'har70.zip' of dataset 'har70' cannot be verified" in result.output
    assert "--allow-unverified" in result.output


def test_manual_dir_must_exist(tmp_path: Path) -> None:
    result = run("fetch", "wisdm", "--manual-dir", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_help_explains_every_command() -> None:
    for command in ("list", "info", "fetch", "register"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "Usage:" in result.output
    assert "--manual-dir" in run("fetch", "--help").output


def test_copy_of_official_archive_works_under_another_folder(
    gestures_zip: Path, tmp_path: Path
) -> None:
    manual = tmp_path / "downloads"
    manual.mkdir()
    shutil.copy(gestures_zip, manual / gestures_zip.name)
    result = run(
        "fetch", "gestures", "--manual-dir", str(manual), "--data-home", str(tmp_path / "h")
    )
    assert result.exit_code == 0, result.output


def test_fetch_into_a_data_home_that_is_a_file_is_a_clean_error(
    gestures_zip: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    # --data-home is checked by click; $MUDATA_HOME reaches the writer as it is.
    result = CliRunner(env={"MUDATA_HOME": str(home)}).invoke(
        main, ["fetch", "gestures", "--manual-dir", str(gestures_zip.parent)]
    )
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert (
        "Error: cannot write the table of 'gestures' to " + str(home / "gestures") in result.output
    )
    assert "--data-home" in result.output
    assert home.read_text() == "not a folder"


@pytest.mark.parametrize(
    ("name", "needs_flag"),
    [("opportunity", False), ("har70", True), ("gestures", False), ("wisdm", False)],
)
def test_info_says_what_fetch_needs_to_verify(name: str, needs_flag: bool, tmp_path: Path) -> None:
    # Here, not at the top: pooch's network stack, for this test only.
    from mudata.errors import MissingFileError, cli_message
    from mudata.errors import MudataUsageError as UsageError
    from mudata.registry.lookup import get_entry
    from mudata.sources.download import fetch_sources

    result = run("info", name)
    assert result.exit_code == 0
    assert ("--allow-unverified" in result.output and "needs" in result.output) == needs_flag
    # What fetch does without the flag and without the files: refuse, or look for them.
    expected = UsageError if needs_flag else MissingFileError
    with pytest.raises(expected) as caught:
        fetch_sources(get_entry(name), data_home=tmp_path, download=False)
    # The API's message names its keyword; the command line's, the flag.
    assert ("allow_unverified=True" in str(caught.value)) == needs_flag
    assert ("--allow-unverified" in cli_message(caught.value)) == needs_flag


def test_info_of_an_entry_pinned_on_first_use_says_so(tmp_path: Path, monkeypatch) -> None:
    import tomli_w  # Here, not at the top: only this test writes an entry.

    registry = tmp_path / "registry"
    registry.mkdir()
    entry = {
        "name": "mine",
        "title": "Mine",
        "version": "1",
        "homepage": "https://example.org/mine",
        "licence": "CC0-1.0",
        "citation": "Me (2026). Mine.",
        "sampling_rate_hz": 20,
        "reader": "feature-table",
        "recipe": {"name": "precomputed"},
        "classes": [{"code": "a", "name": "a"}, {"code": "b", "name": "b"}],
        "files": [
            {
                "name": "data",
                "path": str(tmp_path / "data"),
                "hashes": "first-use",
                "members": [{"path": "x.csv", "sha256": "ab" * 32}],
            }
        ],
    }
    (registry / "mine.toml").write_text(tomli_w.dumps(entry), encoding="utf-8")
    monkeypatch.setenv("MUDATA_REGISTRY", str(registry))
    result = run("info", "mine")
    assert result.exit_code == 0, result.output
    assert "pinned on first use" in result.output
    assert "needs --allow-unverified" not in result.output


def test_fetch_says_the_users_kept_and_dropped_without_v(
    wisdm_dir: Path, tmp_path: Path, http_server, monkeypatch
) -> None:
    # Here, not at the top: the served entry is set up by the real-data tests' helper.
    from tests.mudata.building.test_pipeline_real import serve_wisdm

    name = serve_wisdm(wisdm_dir, tmp_path, http_server, monkeypatch)
    args = ("fetch", name, "--data-home", str(tmp_path / "home"), "--mirror", http_server.url)
    # DATASETS.md: the study keeps 16 of WISDM's 36 users, each with 5 rows of every class.
    line = "wisdm-mirror: 16 users kept, 20 dropped (fewer than 5 rows of some class)"
    first = CliRunner().invoke(main, [*args, "--no-progress"])
    assert first.exit_code == 0, first.output
    assert line in first.stderr.splitlines()
    assert line not in first.stdout  # stdout holds the table's path alone
    assert first.stdout.strip() == str(tmp_path / "home" / name / f"{name}.parquet")
    # Built already: the same line, from the table's provenance.
    again = CliRunner().invoke(main, list(args))
    assert again.exit_code == 0 and line in again.stderr.splitlines()
    assert http_server.count("/WISDM_ar_v1.1.tar.gz") == 1
