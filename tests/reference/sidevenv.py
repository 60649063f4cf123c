"""Build (once) and find the side environment of the reference runner.

The reference runner (``runner_mapie086.py``) needs the study's own library
versions, which cannot live beside this project's: a separate virtual
environment is made with the standard ``venv`` module and filled from the
package index, from the committed lock ``tests/reference/requirements.txt``
(every package pinned, installed with ``--no-deps``). It is cached, keyed by
the lock's content, under ``$MUEVAL_REFERENCE_VENV`` or ``~/.cache/mueval/``;
a second call returns at once.

Run as a script (``python tests/reference/sidevenv.py``) it builds the
environment and prints its interpreter, which is how ``.ci/run`` prepares it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path


class SideVenvError(RuntimeError):
    """The side environment could not be built (e.g. no package index)."""


#: The lock: the study's versions (MAPIE 0.8.6, scikit-learn 1.5.2), a NumPy and
#: a SciPy of their time, and every package they need, each pinned.
LOCK = Path(__file__).with_name("requirements.txt")

RUNNER = Path(__file__).with_name("runner_mapie086.py")


def requirements() -> tuple[str, ...]:
    """The pinned requirements of :data:`LOCK`, one ``name==version`` each.

    Raises
    ------
    SideVenvError
        When a line of the lock is not an exact pin.
    """
    pins = []
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not (sep and name.strip() and version.strip()) or any(c in line for c in "<>~!*;"):
            message = f"{LOCK}: {line!r} is not an exact pin (name==version)"
            raise SideVenvError(message)
        pins.append(line)
    return tuple(pins)


def venv_dir() -> Path:
    """Where the side environment lives for the pinned requirements."""
    key = hashlib.sha256(" ".join(requirements()).encode()).hexdigest()[:12]
    root = os.environ.get("MUEVAL_REFERENCE_VENV")
    base = Path(root) if root else Path.home() / ".cache" / "mueval"
    return base / f"reference-venv-{key}"


def _python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure() -> Path:
    """Return the side environment's interpreter, building the environment if needed.

    Raises
    ------
    SideVenvError
        When ``venv`` or ``pip`` fails; the message holds pip's last lines.
    """
    folder = venv_dir()
    done = folder / ".complete"
    if done.is_file():
        return _python(folder)
    # The marker file is written last: a folder without it is an interrupted
    # build, removed and made again.
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        [sys.executable, "-m", "venv", str(folder)],
        [
            str(_python(folder)),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            *requirements(),
        ],
        # Nothing beyond the lock: pip check fails on a dependency the lock lacks.
        [str(_python(folder)), "-m", "pip", "check"],
    ]
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            message = f"building the reference environment in {folder} failed:\n{tail}"
            raise SideVenvError(message)
    done.write_text(" ".join(requirements()) + "\n")
    return _python(folder)


if __name__ == "__main__":
    print(ensure())
