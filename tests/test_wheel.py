"""The wheel carries the registry and the schemas: install it into a fresh venv and use it."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: the build backend is already installed with the test extra,
    # and CI has no time to spare for a second download of it.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(PROJECT_ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("*.whl")
    return built


def test_wheel_contains_registry_and_schemas(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for dataset in ("wisdm", "har70", "opportunity", "gestures"):
        assert f"mudata/_data/registry/{dataset}.toml" in names
    assert "mudata/_data/schemas/registry.schema.json" in names
    # The report names this page (tests/test_docs.py checks that it does).
    assert "mueval/_data/docs/per-user-guarantees.md" in names
    assert any(n.startswith("mueval/") for n in names)


def test_wheel_in_fresh_venv_lists_and_fetches(
    wheel: Path, tmp_path: Path, gestures_zip: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # The dependencies come from the test environment (a .pth file points at its
    # site-packages); the project itself only from the wheel, installed for real.
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "deps-from-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--quiet", str(wheel)], check=True
    )

    mudata_cmd = env_dir / "bin" / "mudata"
    env = {
        "PATH": f"{env_dir / 'bin'}:/usr/bin:/bin",
        "MUDATA_HOME": str(tmp_path / "home"),
        "HOME": str(tmp_path),
    }
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import mudata, mudata._resources as r; print(mudata.__file__, r.builtin_registry_dir())",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    ).stdout
    assert str(PROJECT_ROOT / "src") not in where  # the installed copy, not the checkout
    assert "_data/registry" in where
    listed = subprocess.run(
        [str(mudata_cmd), "list"], check=True, capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert "gestures" in listed.stdout and "wisdm" in listed.stdout
    fetched = subprocess.run(
        [str(mudata_cmd), "fetch", "gestures", "--manual-dir", str(gestures_zip.parent)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert fetched.returncode == 0, fetched.stderr
    assert Path(fetched.stdout.strip()).is_file()


def test_sdist_carries_the_project_files(tmp_path: Path) -> None:
    """The files a packager or a contributor looks for travel with the source."""
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path)],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
    )
    (built,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(built) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for name in ("LICENSE", "CITATION.cff", "CHANGELOG.md", "CONTRIBUTING.md", "README.md"):
        assert name in names, name
