"""mudata.files: a file is absent, the old version, or complete; never a leftover."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from mudata.files import atomic_path, atomic_write
from tests.conftest import PROJECT_ROOT


def test_writes_bytes_and_text(tmp_path: Path) -> None:
    assert atomic_write(tmp_path / "a.bin", b"\x00\x01").read_bytes() == b"\x00\x01"
    assert atomic_write(tmp_path / "b.txt", "é\n").read_bytes() == "é\n".encode()
    assert atomic_write(tmp_path / "c.txt", "é", encoding="latin-1").read_bytes() == b"\xe9"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.txt", "c.txt"]


def test_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old")
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]


@pytest.mark.parametrize("error", [RuntimeError("writer failed"), KeyboardInterrupt()])
def test_a_failure_keeps_the_old_file_and_removes_the_temporary(
    tmp_path: Path, error: BaseException
) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old")
    with pytest.raises(type(error)), atomic_path(target) as tmp:
        tmp.write_text("half writ")
        assert (
            tmp.parent == tmp_path and tmp.name.startswith(".t.txt.") and tmp.name.endswith(".part")
        )
        raise error
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]


def test_a_missing_folder_is_an_oserror_and_nothing_is_created(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "no" / "t.txt", "x")
    assert list(tmp_path.iterdir()) == []


def test_permissions_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        path = atomic_write(tmp_path / "t.txt", "x")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o640  # not mkstemp's 0o600


def test_mudata_writes_files_only_through_the_helper() -> None:
    # Any other way of creating a file in src/mudata would bypass the helper.
    pattern = re.compile(
        r"mkstemp|os\.replace|shutil\.move|\.write_text\(|\.write_bytes\(|open\([^)]*[\"'][wax]"
    )
    allowed = {
        "files.py",  # the helper itself
        # Pooch hands the downloader its own temporary file, which Pooch then
        # checks and renames (remote.py explains it): writing it is Pooch's atomic write.
        "remote.py",
    }
    offenders = [
        f"{path.relative_to(PROJECT_ROOT)}:{n}: {line.strip()}"
        for path in sorted((PROJECT_ROOT / "src" / "mudata").rglob("*.py"))
        if path.name not in allowed
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
