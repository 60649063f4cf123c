"""The wheel carries the registry and the schemas: install it into a fresh venv and use it."""

from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from mueval.names import CLASSIFIER_NAMES, CLASSIFIERS, STRATEGY_NAMES
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
    # The report names this page (tests/project/test_docs.py checks that it does).
    assert "mueval/_data/docs/per-user-guarantees.md" in names
    assert any(n.startswith("mueval/") for n in names)


def test_wheel_carries_the_demo_table_its_notice_and_entry(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    for name in ("registry/demo.toml", "embedded/demo.LICENSE", "embedded/README.md"):
        assert f"mudata/_data/{name}" in names, name
    # The bytes the entry pins, at the path it names from the registry's folder.
    entry = tomllib.loads(archive.read("mudata/_data/registry/demo.toml").decode("utf-8"))
    (remote,) = entry["files"]
    inside = posixpath.normpath(posixpath.join("mudata/_data/registry", remote["path"]))
    assert inside == "mudata/_data/embedded/demo.parquet"
    assert hashlib.sha256(archive.read(inside)).hexdigest() == remote["sha256"]


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed for real; returns its folder."""
    env_dir = tmp_path_factory.mktemp("venv")
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
    return env_dir


def test_wheel_in_fresh_venv_lists_and_fetches(
    installed: Path, tmp_path: Path, gestures_zip: Path
) -> None:
    env_dir = installed
    python = env_dir / "bin" / "python"
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


#: The evaluate of the README in short: one classifier, one iteration.
QUICK = ("evaluate", "--dataset", "demo", "--classifier", "nb", "--iterations", "1")


def _offline(env_dir: Path, home: Path) -> tuple[list[str], dict[str, str]]:
    """A command prefix and environment without network: a network namespace of
    its own when ``unshare`` may make one, else proxies on a closed port."""
    env = {
        "PATH": f"{env_dir / 'bin'}:/usr/bin:/bin",
        "MUDATA_HOME": str(home),
        "HOME": str(home.parent),
        # Anything that would still try the network fails at once.
        **dict.fromkeys(
            ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"), "http://127.0.0.1:9"
        ),
    }
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return [unshare, "-rn"], env
    return [], env


def _check_demo_run(done: subprocess.CompletedProcess, home: Path) -> None:
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^demo: \d+ rows, 4 users, 6 classes", done.stdout, re.M), done.stdout[:500]
    for code in ("mm", "udm", "uim", "ucm"):  # the default strategies
        assert f"{STRATEGY_NAMES[code]}: mean" in done.stdout, code
    # Built into the empty data home from the file inside the installed package.
    assert (home / "demo" / "demo.parquet").is_file()


def test_installed_mueval_evaluates_demo_offline(installed: Path, tmp_path: Path) -> None:
    """The README's first command in short (one classifier, one iteration), in the default run."""
    home = tmp_path / "home"
    prefix, env = _offline(installed, home)
    done = subprocess.run(
        [*prefix, str(installed / "bin" / "mueval"), *QUICK],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    _check_demo_run(done, home)


def readme_first_command() -> list[str]:
    """The ``mueval evaluate`` of the README's first command (under "Two commands"),
    which docs/quickstart.md repeats word for word; ``.ci/readme-commands 1`` runs
    the whole line, set-up included, in a new environment."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)
    assert len(blocks) == 2, "README.md: 'Two commands' should hold two bash blocks"
    first = blocks[0].strip()
    quickstart = (PROJECT_ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    assert first in quickstart, "docs/quickstart.md does not repeat the README's first command"
    steps = [shlex.split(step) for step in first.split("&&")]
    evaluate = [step for step in steps if step[:2] == ["mueval", "evaluate"]]
    assert len(evaluate) == 1, first
    assert steps[-1][:2] == ["mueval", "report"], "the first command ends with the report"
    return evaluate[0]


@pytest.mark.slow
def test_readme_first_command_runs_offline(installed: Path, tmp_path: Path) -> None:
    """The command as written: every strategy and classifier, 20 iterations (about a minute)."""
    command = readme_first_command()
    assert command[:2] == ["mueval", "evaluate"]
    home = tmp_path / "home"
    prefix, env = _offline(installed, home)
    done = subprocess.run(
        [*prefix, str(installed / "bin" / command[0]), *command[1:]],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    _check_demo_run(done, home)
    header = next(line for line in done.stdout.splitlines() if line.startswith("metric"))
    assert header.split()[1:] == [w for c in CLASSIFIERS for w in CLASSIFIER_NAMES[c].split()]


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
    for name in (
        "LICENSE",
        "CITATION.cff",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "README.md",
        "embedded/demo.parquet",
        "embedded/demo.LICENSE",
        "scripts/build_demo.py",
    ):
        assert name in names, name
