"""Download-and-verify stage: real downloads through Pooch from a local server.

Expected hashes are computed here with :mod:`hashlib` (or typed in from the
official releases), never by the code under test.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mudata.errors import (
    ChecksumError,
    DownloadError,
    MissingFileError,
    ParseError,
    StorageError,
    UnverifiedDataError,
)
from mudata.errors import (
    MudataUsageError as UsageError,
)
from mudata.files import sha256_file
from mudata.readers.sources import Sources
from mudata.records.entry import DatasetEntry
from mudata.registry.lookup import get_entry, parse_entry
from mudata.sources.download import fetch_sources
from mudata.sources.paths import raw_dir
from mudata.sources.pins import FetchedFile
from tests.conftest import PROJECT_ROOT

if TYPE_CHECKING:
    from tests.http_server import HTTPTestServer

# Provides the http_server fixture (a real server on 127.0.0.1).

# Nothing listens on the discard port: a test that reaches the network with it fails.
UNREACHABLE = "http://127.0.0.1:9"
README = b"user,label,x\n1,walk,0.5\n2,run,1.5\n"
READINGS = b"0.1 0.2 0.3\n" * 500
GESTURES_SHA256 = "4a6c5ac1d408f8405d456e0404b424b905ea49425c663fb08f0c3ab341efd32d"
# `unzip -p gestures-dataset.zip <member> | sha256sum`
GESTURES_MEMBERS = {
    "gestures-dataset/U01/01/01.txt": "56f0262758c93cab1aa1aa298b1d554d7b35f844c2236fd34f7f6598c826e5d9",
    "gestures-dataset/info.txt": "1129101e81d00130d9bcdc3eacf7ed7cd3e94d251e3be8bb8073e5f1f25fc3c4",
}
WISDM_ARCHIVE_SHA256 = "e573791269aab4a629721cf04b6031b7cbf8e14261cd2bc86e65887a2bc592d7"
WISDM_MEMBER = "WISDM_ar_v1.1/WISDM_ar_v1.1_transformed.arff"
WISDM_MEMBER_SHA256 = "b083abfe759dea1b8f5eae01f2bef135bbecb25246c8d1eb52afdbfadd3e883a"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def tar_gz_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


TOY_MEMBERS = {"toy/README.csv": README, "toy/data/readings.txt": READINGS}
TOY_ZIP = zip_bytes(TOY_MEMBERS)


def make_entry(*files: dict[str, Any], source: Path | str = "<memory>") -> DatasetEntry:
    data = {
        "name": "toy",
        "title": "Toy",
        "version": "1",
        "homepage": "https://example.invalid/toy",
        "licence": "CC0-1.0",
        "citation": "Nobody (2024). Toy.",
        "sampling_rate_hz": 20,
        "reader": "toy",
        "recipe": {"name": "precomputed"},
        "classes": [{"code": "walk", "name": "walk"}, {"code": "run", "name": "run"}],
        "files": list(files),
    }
    return parse_entry(data, source=source)


def toy_file(
    url: str, *, sha256: str | None = "default", members: bool = True, **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": "toy.zip", "url": url, **extra}
    if sha256 == "default":
        spec["sha256"] = sha(TOY_ZIP)
    elif sha256 is not None:
        spec["sha256"] = sha256
    if members:
        spec["members"] = [{"path": p, "sha256": sha(b)} for p, b in TOY_MEMBERS.items()]
    return spec


def files_in(folder: Path) -> list[str]:
    return sorted(os.listdir(folder)) if folder.exists() else []


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def served_toy(http_server: HTTPTestServer) -> HTTPTestServer:
    (http_server.root / "toy.zip").write_bytes(TOY_ZIP)
    return http_server


# ------------------------------------------------------------------ sha256_file


def test_sha256_of_matches_the_fips_value_and_streams_across_chunks(tmp_path: Path) -> None:
    small = tmp_path / "abc"
    small.write_bytes(b"abc")
    # FIPS 180-2 example
    assert sha256_file(small) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    big = tmp_path / "big"
    data = bytes(range(256)) * 9000  # 2.3 MB: several 1 MiB chunks and a partial one
    big.write_bytes(data)
    assert sha256_file(big) == sha(data)


# ------------------------------------------------------------------ downloads


def test_download_happy_path(served_toy: HTTPTestServer, home: Path) -> None:
    entry = make_entry(toy_file(served_toy.url + "/toy.zip"))
    [fetched] = fetch_sources(entry, data_home=home, delay=0, progress=False)
    assert fetched == FetchedFile(
        name="toy.zip",
        root=home / "toy" / "raw" / "toy.zip",
        sha256=sha(TOY_ZIP),
        verified=True,
        members={p: sha(b) for p, b in TOY_MEMBERS.items()},
        origin="download",
        url=served_toy.url + "/toy.zip",
    )
    assert fetched.root.read_bytes() == TOY_ZIP
    assert files_in(fetched.root.parent) == ["toy.zip"]  # no temporary file left over
    assert served_toy.count("/toy.zip") == 1
    sources = Sources([f.root for f in [fetched]])
    try:
        assert sources.read_bytes("toy/data/readings.txt") == READINGS
    finally:
        sources.close()


def test_an_unverifiable_second_file_is_refused_before_the_first_is_downloaded(
    served_toy: HTTPTestServer, home: Path
) -> None:
    (served_toy.root / "extra.zip").write_bytes(TOY_ZIP)
    unpinned = toy_file(served_toy.url + "/extra.zip", sha256=None, members=False)
    unpinned["name"] = "extra.zip"
    entry = make_entry(toy_file(served_toy.url + "/toy.zip"), unpinned)
    with pytest.raises(
        UnverifiedDataError, match=r"file 'extra\.zip' of dataset 'toy' cannot be verified"
    ):
        fetch_sources(entry, data_home=home, delay=0, progress=False)
    assert served_toy.requests == []  # not one byte downloaded
    assert files_in(raw_dir("toy", home)) == []
    # Accepted with allow_unverified: both are downloaded, the second one unverified.
    fetched = fetch_sources(entry, data_home=home, delay=0, progress=False, allow_unverified=True)
    assert [(f.name, f.verified, f.origin) for f in fetched] == [
        ("toy.zip", True, "download"),
        ("extra.zip", False, "download"),
    ]


def test_progress_bar_on_request(
    served_toy: HTTPTestServer, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = make_entry(toy_file(served_toy.url + "/toy.zip"))
    fetch_sources(entry, data_home=home, delay=0, progress=True)
    assert "100%" in capsys.readouterr().err


def test_second_call_uses_the_cache_without_network(served_toy: HTTPTestServer, home: Path) -> None:
    entry = make_entry(toy_file(served_toy.url + "/toy.zip"))
    first = fetch_sources(entry, data_home=home, delay=0)
    served_toy.status = 500  # any request from now on would fail
    second = fetch_sources(entry, data_home=home, delay=0)
    assert served_toy.count() == 1
    assert [f.origin for f in first + second] == ["download", "cache"]
    assert second[0].root == first[0].root
    assert second[0].sha256 == sha(TOY_ZIP)
    assert second[0].verified


def test_a_stale_cached_file_is_downloaded_again(served_toy: HTTPTestServer, home: Path) -> None:
    stale = raw_dir("toy", home) / "toy.zip"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"an older release")
    entry = make_entry(toy_file(served_toy.url + "/toy.zip"))
    [fetched] = fetch_sources(entry, data_home=home, delay=0)
    assert fetched.origin == "download"
    assert stale.read_bytes() == TOY_ZIP
    assert served_toy.count() == 1


def test_data_home_defaults_to_mudata_home(
    served_toy: HTTPTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MUDATA_HOME", str(tmp_path / "env-home"))
    [fetched] = fetch_sources(make_entry(toy_file(served_toy.url + "/toy.zip")), delay=0)
    assert fetched.root == tmp_path / "env-home" / "toy" / "raw" / "toy.zip"


def test_mirror_replaces_the_base_address(http_server: HTTPTestServer, home: Path) -> None:
    (http_server.root / "mirror").mkdir()
    (http_server.root / "mirror" / "toy.zip").write_bytes(TOY_ZIP)
    entry = make_entry(toy_file(UNREACHABLE + "/official/path/toy.zip"))
    [fetched] = fetch_sources(entry, data_home=home, mirror=http_server.url + "/mirror/", delay=0)
    assert fetched.url == http_server.url + "/mirror/toy.zip"
    assert fetched.sha256 == sha(TOY_ZIP) and fetched.verified
    assert http_server.requests == ["/mirror/toy.zip"]


def test_retries_after_server_errors(served_toy: HTTPTestServer, home: Path) -> None:
    served_toy.fail_first = 2
    entry = make_entry(toy_file(served_toy.url + "/toy.zip"))
    [fetched] = fetch_sources(entry, data_home=home, n_retries=3, delay=0)
    assert fetched.root.read_bytes() == TOY_ZIP
    assert served_toy.count("/toy.zip") == 3


def test_gives_up_after_the_last_retry(served_toy: HTTPTestServer, home: Path) -> None:
    served_toy.fail_first = 5
    url = served_toy.url + "/toy.zip"
    with pytest.raises(DownloadError) as caught:
        fetch_sources(make_entry(toy_file(url)), data_home=home, n_retries=1, delay=0)
    message = str(caught.value)
    assert url in message and "503" in message and "2 attempts" in message
    assert "--mirror" in message and "--manual-dir" in message
    assert served_toy.count() == 2
    assert files_in(raw_dir("toy", home)) == []


def _stderr_of_fetch(url: str, home: Path, n_retries: int) -> str:
    """What a user sees on stderr: a fresh process, logging set up as the CLI does."""
    script = (
        "import sys\n"
        "from mudata.cli_options import configure_logging\n"
        "from mudata.sources.download import fetch_sources\n"
        "from tests.mudata.sources.test_download import make_entry, toy_file\n"
        "configure_logging(0)\n"
        "try:\n"
        # The served archive's hash from here: zip_bytes stamps the time of day.
        f"    entry = make_entry(toy_file({url!r}, sha256={sha(TOY_ZIP)!r}))\n"
        f"    fetch_sources(entry, data_home={str(home)!r},\n"
        f"                  n_retries={n_retries}, delay=0, progress=False)\n"
        "except Exception as exc:\n"
        "    print(f'error: {exc}', file=sys.stderr)\n"
    )
    root = PROJECT_ROOT
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120
    )
    return done.stderr


def test_a_failing_download_logs_one_line_per_attempt_not_the_banner_again(
    served_toy: HTTPTestServer, home: Path
) -> None:
    url = served_toy.url + "/toy.zip"
    served_toy.fail_first = 99
    lines = _stderr_of_fetch(url, home, n_retries=3).splitlines()
    assert sum("Downloading data from" in line for line in lines) == 1
    retries = [line for line in lines if "failed (HTTP 503" in line]
    assert [f"attempt {n} of 4" in line for n, line in zip(range(2, 5), retries)] == [True] * 3
    assert len(retries) == 3
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and "after 4 attempts" in errors[0]
    assert len(lines) == 1 + 3 + 1, lines  # banner, three retries, the error
    assert served_toy.count("/toy.zip") == 4


def test_a_download_that_recovers_says_so_once_per_failure(
    served_toy: HTTPTestServer, home: Path
) -> None:
    served_toy.fail_first = 2
    lines = _stderr_of_fetch(served_toy.url + "/toy.zip", home, n_retries=3).splitlines()
    assert sum("Downloading data from" in line for line in lines) == 1
    assert sum("failed (HTTP 503" in line for line in lines) == 2
    assert not any(line.startswith("error:") for line in lines), lines
    assert (raw_dir("toy", home) / "toy.zip").read_bytes() == TOY_ZIP


def test_404_is_reported_and_not_retried(http_server: HTTPTestServer, home: Path) -> None:
    url = http_server.url + "/absent.zip"
    with pytest.raises(DownloadError, match="HTTP 404") as caught:
        fetch_sources(make_entry(toy_file(url)), data_home=home, n_retries=3, delay=0)
    assert url in str(caught.value)
    assert http_server.count() == 1
    assert files_in(raw_dir("toy", home)) == []


def test_wrong_hash_names_both_hashes_and_leaves_nothing(
    served_toy: HTTPTestServer, home: Path
) -> None:
    expected = sha(b"the file the registry describes")
    url = served_toy.url + "/toy.zip"
    with pytest.raises(ChecksumError) as caught:
        fetch_sources(make_entry(toy_file(url, sha256=expected)), data_home=home, delay=0)
    message = str(caught.value)
    assert expected in message and sha(TOY_ZIP) in message and url in message
    assert "sha256" in message
    assert files_in(raw_dir("toy", home)) == []  # neither toy.zip nor Pooch's temporary file
    assert served_toy.count() == 1  # a different file is not fetched again


def test_truncated_body_is_a_checksum_error(served_toy: HTTPTestServer, home: Path) -> None:
    # The server announces and sends only 100 bytes: the response looks complete.
    served_toy.truncate_to = 100
    with pytest.raises(ChecksumError) as caught:
        fetch_sources(make_entry(toy_file(served_toy.url + "/toy.zip")), data_home=home, delay=0)
    assert sha(TOY_ZIP[:100]) in str(caught.value)
    assert files_in(raw_dir("toy", home)) == []


def test_connection_dropped_mid_body_is_retried_then_fails_cleanly(
    served_toy: HTTPTestServer, home: Path
) -> None:
    served_toy.drop_after = 100  # full Content-Length announced, 100 bytes sent
    with pytest.raises(DownloadError) as caught:
        fetch_sources(
            make_entry(toy_file(served_toy.url + "/toy.zip")), data_home=home, n_retries=1, delay=0
        )
    assert served_toy.url + "/toy.zip" in str(caught.value)
    assert served_toy.count() == 2
    assert files_in(raw_dir("toy", home)) == []


def test_interrupted_download_then_good_retry(served_toy: HTTPTestServer, home: Path) -> None:
    served_toy.fail_first = 1
    served_toy.fail_status = 502
    [fetched] = fetch_sources(
        make_entry(toy_file(served_toy.url + "/toy.zip")), data_home=home, delay=0
    )
    assert fetched.root.read_bytes() == TOY_ZIP
    assert files_in(fetched.root.parent) == ["toy.zip"]


# ------------------------------------------------ members inside the archive


def test_member_hashes_verify_an_archive_without_its_own_hash(
    http_server: HTTPTestServer, home: Path
) -> None:
    archive = tar_gz_bytes(TOY_MEMBERS)
    (http_server.root / "toy.tar.gz").write_bytes(archive)
    spec = toy_file(http_server.url + "/toy.tar.gz", sha256=None, name="toy.tar.gz", archive="tar")
    [fetched] = fetch_sources(make_entry(spec), data_home=home, delay=0)
    assert fetched.verified
    assert fetched.sha256 == sha(archive)
    assert fetched.members == {p: sha(b) for p, b in TOY_MEMBERS.items()}


def test_missing_member_names_archive_and_member(served_toy: HTTPTestServer, home: Path) -> None:
    spec = toy_file(served_toy.url + "/toy.zip")
    spec["members"].append({"path": "toy/data/absent.txt"})
    with pytest.raises(MissingFileError) as caught:
        fetch_sources(make_entry(spec), data_home=home, delay=0)
    message = str(caught.value)
    assert "toy/data/absent.txt" in message and str(raw_dir("toy", home) / "toy.zip") in message
    # The archive matched its registry hash: the entry is wrong, not the download.
    assert files_in(raw_dir("toy", home)) == ["toy.zip"]


def test_wrong_member_hash_in_an_unhashed_download_removes_it_from_the_cache(
    served_toy: HTTPTestServer, home: Path
) -> None:
    spec = toy_file(served_toy.url + "/toy.zip", sha256=None)
    spec["members"][1]["sha256"] = sha(b"other readings")
    with pytest.raises(ChecksumError) as caught:
        fetch_sources(make_entry(spec), data_home=home, delay=0)
    message = str(caught.value)
    assert sha(b"other readings") in message and sha(READINGS) in message
    assert "toy/data/readings.txt" in message and "removed from the cache" in message
    assert files_in(raw_dir("toy", home)) == []


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
        # Flip a byte of the first member's compressed data: the zip's CRC catches it.
        pytest.param(lambda b: b[:60] + bytes([b[60] ^ 0xFF]) + b[61:], id="corrupt"),
    ],
)
def test_unreadable_archive_without_archive_hash(
    http_server: HTTPTestServer, home: Path, damage: Any
) -> None:
    (http_server.root / "toy.zip").write_bytes(damage(TOY_ZIP))
    spec = toy_file(http_server.url + "/toy.zip", sha256=None, archive="zip")
    with pytest.raises((ParseError, ChecksumError)) as caught:
        fetch_sources(make_entry(spec), data_home=home, delay=0)
    assert str(raw_dir("toy", home) / "toy.zip") in str(caught.value)
    assert files_in(raw_dir("toy", home)) == []


def test_truncated_tar_gz_is_a_parse_error(http_server: HTTPTestServer, home: Path) -> None:
    archive = tar_gz_bytes({"toy/big.bin": os.urandom(200_000)})
    (http_server.root / "toy.tar.gz").write_bytes(archive[: len(archive) // 2])
    spec = {
        "name": "toy.tar.gz",
        "url": http_server.url + "/toy.tar.gz",
        "archive": "tar",
        "members": [{"path": "toy/big.bin", "sha256": sha(b"x")}],
    }
    with pytest.raises(ParseError, match="truncated or corrupt"):
        fetch_sources(make_entry(spec), data_home=home, delay=0)
    assert files_in(raw_dir("toy", home)) == []


def test_data_home_that_is_a_file_is_a_storage_error_not_a_download_error(
    served_toy: HTTPTestServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    with pytest.raises(StorageError) as caught:
        fetch_sources(make_entry(toy_file(served_toy.url + "/toy.zip")), data_home=home, delay=0)
    message = str(caught.value)
    assert str(home / "toy" / "raw") in message and "writable folder" in message
    assert "NotADirectoryError" in message
    assert served_toy.count() == 0


def test_truncated_declared_archive_without_members_is_a_parse_error(
    http_server: HTTPTestServer, home: Path
) -> None:
    # Like har70.zip: no published hash, no listed member, only archive = "zip".
    (http_server.root / "toy.zip").write_bytes(TOY_ZIP[: len(TOY_ZIP) // 2])
    spec = toy_file(http_server.url + "/toy.zip", sha256=None, members=False, archive="zip")
    with pytest.raises(ParseError, match="not a readable zip archive.*truncated or corrupt"):
        fetch_sources(make_entry(spec), data_home=home, delay=0, allow_unverified=True)
    assert files_in(raw_dir("toy", home)) == []  # unverifiable and unreadable: not kept


def test_truncated_declared_archive_in_manual_dir_is_left_untouched(
    tmp_path: Path, home: Path
) -> None:
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "toy.zip").write_bytes(TOY_ZIP[:100])
    spec = toy_file(UNREACHABLE + "/toy.zip", sha256=None, members=False, archive="zip")
    with pytest.raises(ParseError, match=r"manual/toy.zip .* not a readable zip archive"):
        fetch_sources(make_entry(spec), manual_dir=manual, allow_unverified=True)
    assert (manual / "toy.zip").read_bytes() == TOY_ZIP[:100]


# ------------------------------------------------------------------ manual dir


def test_manual_dir_with_the_archive_is_used_in_place(tmp_path: Path, home: Path) -> None:
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "toy.zip").write_bytes(TOY_ZIP)
    [fetched] = fetch_sources(
        make_entry(toy_file(UNREACHABLE + "/toy.zip")), data_home=home, manual_dir=manual
    )
    assert fetched.root == manual / "toy.zip"
    assert (fetched.origin, fetched.sha256, fetched.verified) == ("manual", sha(TOY_ZIP), True)
    assert fetched.members == {p: sha(b) for p, b in TOY_MEMBERS.items()}
    assert (manual / "toy.zip").read_bytes() == TOY_ZIP
    assert not raw_dir("toy", home).exists()  # nothing copied


def test_manual_dir_members_found_by_bare_name(tmp_path: Path, home: Path) -> None:
    manual = tmp_path / "manual"
    (manual / "somewhere" / "else").mkdir(parents=True)
    (manual / "README.csv").write_bytes(README)
    (manual / "somewhere" / "else" / "readings.txt").write_bytes(READINGS)
    [fetched] = fetch_sources(
        make_entry(toy_file(UNREACHABLE + "/toy.zip")), data_home=home, manual_dir=manual
    )
    assert (fetched.root, fetched.sha256, fetched.verified) == (manual, None, True)
    assert fetched.members == {
        "toy/README.csv": sha(README),
        "toy/data/readings.txt": sha(READINGS),
    }
    sources = Sources([fetched.root])
    assert sources.read_bytes("toy/data/readings.txt") == READINGS


def test_manual_dir_pointing_at_the_extracted_top_folder(tmp_path: Path, home: Path) -> None:
    extracted = tmp_path / "downloads" / "toy"
    (extracted / "data").mkdir(parents=True)
    (extracted / "README.csv").write_bytes(README)
    (extracted / "data" / "readings.txt").write_bytes(READINGS)
    entry = make_entry(toy_file(UNREACHABLE + "/toy.zip"))
    [fetched] = fetch_sources(entry, data_home=home, manual_dir=extracted)
    # From the parent folder the members resolve by their full paths.
    assert fetched.root == tmp_path / "downloads"
    assert Sources([fetched.root]).find("toy/data/readings.txt") == "toy/data/readings.txt"


def test_manual_dir_wrong_member_is_left_untouched(tmp_path: Path, home: Path) -> None:
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "README.csv").write_bytes(README)
    wrong = manual / "readings.txt"
    wrong.write_bytes(b"edited by hand\n")
    before = wrong.stat().st_mtime_ns
    with pytest.raises(ChecksumError) as caught:
        fetch_sources(
            make_entry(toy_file(UNREACHABLE + "/toy.zip")), data_home=home, manual_dir=manual
        )
    message = str(caught.value)
    assert str(wrong) in message and "sha256" in message and "untouched" in message
    assert sha(READINGS) in message and sha(b"edited by hand\n") in message
    # The member named after its path, as the archive's own check words a file.
    assert (
        f"sha256 mismatch for {wrong}, member 'toy/data/readings.txt' of file 'toy.zip'" in message
    )
    assert wrong.read_bytes() == b"edited by hand\n" and wrong.stat().st_mtime_ns == before


def test_manual_dir_wrong_archive_is_left_untouched(tmp_path: Path, home: Path) -> None:
    manual = tmp_path / "manual"
    manual.mkdir()
    other = zip_bytes({"toy/README.csv": b"different\n"})
    (manual / "toy.zip").write_bytes(other)
    with pytest.raises(ChecksumError) as caught:
        fetch_sources(
            make_entry(toy_file(UNREACHABLE + "/toy.zip")), data_home=home, manual_dir=manual
        )
    assert sha(TOY_ZIP) in str(caught.value) and sha(other) in str(caught.value)
    assert f"sha256 mismatch for {manual / 'toy.zip'} (file 'toy.zip' of dataset" in str(
        caught.value
    )
    assert (manual / "toy.zip").read_bytes() == other


def test_manual_dir_missing_member_lists_what_is_accepted(tmp_path: Path, home: Path) -> None:
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "README.csv").write_bytes(README)
    with pytest.raises(MissingFileError) as caught:
        fetch_sources(
            make_entry(toy_file(UNREACHABLE + "/toy.zip")), data_home=home, manual_dir=manual
        )
    message = str(caught.value)
    assert "missing: toy/data/readings.txt" in message
    assert str(manual / "toy.zip") in message and str(manual) in message


def test_manual_dir_without_the_file_and_no_members(tmp_path: Path, home: Path) -> None:
    manual = tmp_path / "manual"
    manual.mkdir()
    with pytest.raises(MissingFileError) as caught:
        fetch_sources(
            make_entry(toy_file(UNREACHABLE + "/toy.zip", members=False)),
            data_home=home,
            manual_dir=manual,
        )
    message = str(caught.value)
    assert "'toy.zip'" in message and str(manual / "toy.zip") in message and sha(TOY_ZIP) in message


def test_manual_dir_ambiguous_bare_name(tmp_path: Path, home: Path) -> None:
    manual = tmp_path / "manual"
    for sub in ("a", "b"):
        (manual / sub).mkdir(parents=True)
        (manual / sub / "readings.txt").write_bytes(READINGS)
    (manual / "README.csv").write_bytes(README)
    with pytest.raises(UsageError, match="ambiguous") as caught:
        fetch_sources(
            make_entry(toy_file(UNREACHABLE + "/toy.zip")), data_home=home, manual_dir=manual
        )
    assert str(manual / "a" / "readings.txt") in str(caught.value)


def test_manual_dir_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        fetch_sources(make_entry(toy_file(UNREACHABLE + "/toy.zip")), manual_dir=tmp_path / "nope")


# ------------------------------------------------------- local registered path


def test_registered_relative_path_is_resolved_from_the_toml_folder(
    tmp_path: Path, home: Path
) -> None:
    (tmp_path / "reg" / "data").mkdir(parents=True)
    (tmp_path / "reg" / "data" / "toy.zip").write_bytes(TOY_ZIP)
    spec = toy_file("unused", members=False)
    del spec["url"]
    spec["path"] = "data/toy.zip"
    entry = make_entry(spec, source=tmp_path / "reg" / "toy.toml")
    [fetched] = fetch_sources(entry, data_home=home)
    assert (fetched.root, fetched.origin, fetched.verified) == (
        tmp_path / "reg" / "data" / "toy.zip",
        "local",
        True,
    )


def test_registered_folder_of_members(tmp_path: Path, home: Path) -> None:
    (tmp_path / "extracted" / "toy" / "data").mkdir(parents=True)
    (tmp_path / "extracted" / "toy" / "README.csv").write_bytes(README)
    (tmp_path / "extracted" / "toy" / "data" / "readings.txt").write_bytes(READINGS)
    spec = toy_file("unused")
    del spec["url"]
    spec["path"] = str(tmp_path / "extracted")
    [fetched] = fetch_sources(make_entry(spec), data_home=home)
    assert (fetched.root, fetched.origin, fetched.sha256) == (tmp_path / "extracted", "local", None)
    assert fetched.members == {p: sha(b) for p, b in TOY_MEMBERS.items()}


def test_unverified_second_file_is_refused_before_the_first_is_downloaded(
    served_toy: HTTPTestServer, home: Path
) -> None:
    first = toy_file(served_toy.url + "/toy.zip")
    second = {"name": "extra.csv", "url": served_toy.url + "/extra.csv"}
    with pytest.raises(UsageError, match="'extra.csv'"):
        fetch_sources(make_entry(first, second), data_home=home, delay=0)
    assert served_toy.count() == 0


def test_registered_path_that_does_not_exist(tmp_path: Path) -> None:
    entry = make_entry({"name": "toy.zip", "path": "data/toy.zip"}, source=tmp_path / "toy.toml")
    with pytest.raises(MissingFileError, match="does not exist"):
        fetch_sources(entry, allow_unverified=True)


# ------------------------------------------------------------ unverified files


def test_unverified_file_is_refused_before_any_request(
    served_toy: HTTPTestServer, home: Path
) -> None:
    entry = make_entry(toy_file(served_toy.url + "/toy.zip", sha256=None, members=False))
    with pytest.raises(UsageError, match="allow_unverified") as caught:
        fetch_sources(entry, data_home=home, delay=0)
    assert "'toy.zip'" in str(caught.value)
    assert served_toy.count() == 0


def test_unverified_file_allowed_with_a_warning(
    served_toy: HTTPTestServer, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = make_entry(toy_file(served_toy.url + "/toy.zip", sha256=None, members=False))
    with caplog.at_level(logging.WARNING, logger="mudata.sources.download"):
        [fetched] = fetch_sources(entry, data_home=home, delay=0, allow_unverified=True)
    assert (fetched.sha256, fetched.verified) == (sha(TOY_ZIP), False)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and sha(TOY_ZIP) in warnings[0].getMessage()


def test_partially_hashed_members_in_a_folder_are_unverified(tmp_path: Path, home: Path) -> None:
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "README.csv").write_bytes(README)
    (manual / "readings.txt").write_bytes(READINGS)
    spec = toy_file(UNREACHABLE + "/toy.zip")
    del spec["members"][0]["sha256"]
    with pytest.raises(UsageError):
        fetch_sources(make_entry(spec), data_home=home, manual_dir=manual)
    [fetched] = fetch_sources(
        make_entry(spec), data_home=home, manual_dir=manual, allow_unverified=True
    )
    assert not fetched.verified and fetched.members["toy/README.csv"] == sha(README)


# ------------------------------------------------------ official data files


def gestures_spec(url: str) -> dict[str, Any]:
    return {
        "name": "gestures-dataset.zip",
        "url": url,
        "sha256": GESTURES_SHA256,
        "archive": "zip",
        "members": [{"path": p, "sha256": h} for p, h in GESTURES_MEMBERS.items()],
    }


def test_official_gestures_archive_through_manual_dir(gestures_zip: Path, home: Path) -> None:
    entry = make_entry(gestures_spec(UNREACHABLE + "/gestures-dataset.zip"))
    [fetched] = fetch_sources(entry, data_home=home, manual_dir=gestures_zip.parent)
    assert (fetched.root, fetched.sha256, fetched.verified) == (gestures_zip, GESTURES_SHA256, True)
    assert fetched.members == GESTURES_MEMBERS


def test_official_gestures_archive_through_a_mirror(
    gestures_zip: Path, http_server: HTTPTestServer, home: Path
) -> None:
    (http_server.root / "gestures-dataset.zip").symlink_to(gestures_zip)
    entry = make_entry(gestures_spec(UNREACHABLE + "/uc?export=download"))
    [fetched] = fetch_sources(entry, data_home=home, mirror=http_server.url, delay=0)
    assert fetched.sha256 == GESTURES_SHA256 and fetched.origin == "download"
    assert fetched.root == raw_dir("toy", home) / "gestures-dataset.zip"
    sources = Sources([fetched.root])
    try:
        # unzip -Z1 gestures-dataset.zip | grep -c '^gestures-dataset/U[^/]*/[^/]*/[^/]*\.txt$'
        assert len(sources.names("gestures-dataset/U*/*/*.txt")) == 3251
    finally:
        sources.close()


def wisdm_spec(member_sha256: str = WISDM_MEMBER_SHA256) -> dict[str, Any]:
    return {
        "name": "WISDM_ar_v1.1.tar.gz",
        "url": UNREACHABLE + "/WISDM_ar_v1.1.tar.gz",
        "sha256": WISDM_ARCHIVE_SHA256,
        "size": 11404612,
        "archive": "tar",
        "members": [{"path": WISDM_MEMBER, "sha256": member_sha256, "size": 1203558}],
    }


def test_official_wisdm_member_through_manual_dir(wisdm_dir: Path, home: Path) -> None:
    [fetched] = fetch_sources(make_entry(wisdm_spec()), data_home=home, manual_dir=wisdm_dir)
    assert (fetched.root, fetched.sha256, fetched.verified) == (wisdm_dir, None, True)
    assert fetched.members == {WISDM_MEMBER: WISDM_MEMBER_SHA256}
    assert Sources([fetched.root]).find(WISDM_MEMBER) == "WISDM_ar_v1.1_transformed.arff"


def test_official_wisdm_member_with_a_wrong_registry_hash(wisdm_dir: Path, home: Path) -> None:
    wrong = "0" * 64
    with pytest.raises(ChecksumError) as caught:
        fetch_sources(make_entry(wisdm_spec(wrong)), data_home=home, manual_dir=wisdm_dir)
    message = str(caught.value)
    assert wrong in message and WISDM_MEMBER_SHA256 in message and "untouched" in message
    assert sha256_file(wisdm_dir / "WISDM_ar_v1.1_transformed.arff") == WISDM_MEMBER_SHA256


def test_builtin_wisdm_entry_accepts_the_official_member(wisdm_dir: Path, home: Path) -> None:
    [fetched] = fetch_sources(get_entry("wisdm"), data_home=home, manual_dir=wisdm_dir)
    assert fetched.verified and fetched.members[WISDM_MEMBER] == WISDM_MEMBER_SHA256


def test_killed_download_leaves_no_file_under_the_target_name(
    served_toy: HTTPTestServer, home: Path
) -> None:
    """SIGKILL mid-body: only Pooch's temporary file may remain, never ``toy.zip``."""
    served_toy.stall_after = 100
    script = (
        "import sys; from pathlib import Path; from tests.mudata.sources.test_download import make_entry, toy_file; "
        "from mudata.sources.download import fetch_sources; "
        "fetch_sources(make_entry(toy_file(sys.argv[1])), data_home=Path(sys.argv[2]), progress=False)"
    )
    root = PROJECT_ROOT
    child = subprocess.Popen(
        [sys.executable, "-c", script, served_toy.url + "/toy.zip", str(home)], cwd=root
    )
    try:
        assert served_toy.stalled.wait(timeout=20), "the child never started downloading"
        child.kill()
    finally:
        child.wait(timeout=20)
    target_dir = raw_dir("toy", home)
    leftovers = files_in(target_dir)
    # Pooch 1.9 streams into a NamedTemporaryFile ("tmp...") beside the target.
    assert len(leftovers) == 1 and leftovers[0].startswith("tmp"), leftovers
    # The next run downloads it whole; the leftover temporary file is never mistaken for it.
    served_toy.stall_after = None
    [fetched] = fetch_sources(
        make_entry(toy_file(served_toy.url + "/toy.zip")), data_home=home, delay=0
    )
    assert fetched.origin == "download" and fetched.root.read_bytes() == TOY_ZIP
