"""Build (once) and find the side environment of the reference runner.

The reference runner (``runner_mapie086.py``) needs the study's own library
versions, which cannot live beside this project's: a separate virtual
environment is made with the standard ``venv`` module and filled from the
package index. It is cached, keyed by the pinned requirements, under
``$MUEVAL_REFERENCE_VENV`` or ``~/.cache/mueval/``; a second call returns at once.

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

#: The study's versions (MAPIE 0.8.6, scikit-learn 1.5.2) and a NumPy of its time.
REQUIREMENTS: tuple[str, ...] = ("mapie==0.8.6", "scikit-learn==1.5.2", "numpy==1.26.4")

RUNNER = Path(__file__).with_name("runner_mapie086.py")


class SideVenvError(RuntimeError):
    """The side environment could not be built (e.g. no package index)."""


def venv_dir() -> Path:
    """Where the side environment lives for the pinned requirements."""
    key = hashlib.sha256(" ".join(REQUIREMENTS).encode()).hexdigest()[:12]
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
            *REQUIREMENTS,
        ],
    ]
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            message = f"building the reference environment in {folder} failed:\n{tail}"
            raise SideVenvError(message)
    done.write_text(" ".join(REQUIREMENTS) + "\n")
    return _python(folder)


if __name__ == "__main__":
    print(ensure())
