"""Shared test configuration: Hypothesis profile, paths to the official data, isolation."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The real HTTP server on 127.0.0.1 (fixture ``http_server``) for download tests.
pytest_plugins = ["tests.http_server"]

# Run by the MAPIE 0.8.6 side environment, not importable here (--doctest-modules
# would import it to look for examples).
collect_ignore = ["reference/runner_mapie086.py"]

settings.register_profile(
    "ci", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
WISDM_DIR = SHARED_DATA / "wisdm"
GESTURES_ZIP = SHARED_DATA / "gestures" / "gestures-dataset.zip"
RELEASES = SHARED_DATA / "releases"


def extract_release(name: str, into: Path) -> Path:
    """The shared release ``name`` (``releases/<name>.tar.gz``, as published),
    unpacked into ``into`` for a test to alter; the test is skipped without it."""
    archive = RELEASES / f"{name}.tar.gz"
    if not archive.is_file():
        pytest.skip(f"shared release not found at {archive}")
    with tarfile.open(archive) as tf:
        tf.extractall(into, filter="data")
    return into


@pytest.fixture(autouse=True)
def _isolated_mudata_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never read or write the user's real data folder or registry from a test."""
    home = tmp_path_factory.mktemp("mudata_home")
    monkeypatch.setenv("MUDATA_HOME", str(home))
    monkeypatch.delenv("MUDATA_REGISTRY", raising=False)


@pytest.fixture(scope="session")
def wisdm_dir() -> Path:
    """The official WISDM transformed ARFF's folder (read-only)."""
    if not (WISDM_DIR / "WISDM_ar_v1.1_transformed.arff").is_file():
        pytest.skip(f"official WISDM file not found in {WISDM_DIR}")
    return WISDM_DIR


@pytest.fixture(scope="session")
def gestures_zip() -> Path:
    """The official Smartwatch Gestures archive (read-only)."""
    if not GESTURES_ZIP.is_file():
        pytest.skip(f"official gestures archive not found at {GESTURES_ZIP}")
    return GESTURES_ZIP
