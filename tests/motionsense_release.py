"""A small MotionSense release, cut from the real bytes of the shared release file.

``../shared/data/releases/motionsense_sub1-4.tar.gz`` holds the members of the
official ``A_DeviceMotion_data.zip`` for participants 1-4. :func:`release_zip`
packs the members of the chosen participants and trials back into a zip of that
name, which the built-in ``motionsense`` entry reads from ``manual_dir`` (it
pins no hash: ``allow_unverified``). The samples are the release's, byte for byte.
"""

from __future__ import annotations

import re
import tarfile
import zipfile
from collections.abc import Collection
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

RELEASE = SHARED_DATA / "releases" / "motionsense_sub1-4.tar.gz"
#: One trial of each of the six activities.
ONE_TRIAL_EACH = ("dws_1", "ups_3", "wlk_7", "jog_9", "std_6", "sit_5")
MEMBER = re.compile(r"A_DeviceMotion_data/(?P<trial>[a-z]+_\d+)/sub_(?P<user>\d+)\.csv")


def release_zip(
    folder: Path, users: Collection[int] = (1, 2, 3), trials: Collection[str] = ONE_TRIAL_EACH
) -> Path:
    """Write ``folder/A_DeviceMotion_data.zip`` with the release's members of ``users`` and ``trials``."""
    if not RELEASE.is_file():
        pytest.skip(f"the MotionSense release is not at {RELEASE}")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "A_DeviceMotion_data.zip"
    with tarfile.open(RELEASE, "r:gz") as tar, zipfile.ZipFile(target, "w") as out:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            match = MEMBER.fullmatch(member.name)
            if not member.isfile() or match is None:
                continue
            if int(match["user"]) in users and match["trial"] in trials:
                handle = tar.extractfile(member)
                assert handle is not None  # a regular file always has one
                out.writestr(member.name, handle.read())
    return target


def member_bytes(name: str) -> bytes:
    """The bytes of one member of the release (``A_DeviceMotion_data/dws_1/sub_1.csv``)."""
    with tarfile.open(RELEASE, "r:gz") as tar:
        handle = tar.extractfile(name)
        assert handle is not None
        return handle.read()
