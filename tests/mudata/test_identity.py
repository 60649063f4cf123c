"""Our ``mudata`` is told apart from scverse's ``mudata`` (same import name)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import mudata
from mudata._identity import MARKER, check_ours, wrong_mudata_message

SCVERSE_LIKE_INIT = '''"""Multimodal omics data (a stand-in for scverse's package)."""
__version__ = "0.3.1"
class MuData:
    pass
'''


def test_ours_has_the_marker() -> None:
    assert getattr(mudata, MARKER) == "mudata-mueval"
    assert check_ours() is mudata


def test_another_mudata_is_refused_with_a_clear_message() -> None:
    other = types.ModuleType("mudata")
    other.__file__ = "/site-packages/mudata/__init__.py"
    other.__version__ = "0.3.1"
    with pytest.raises(ImportError) as caught:
        check_ours(other)
    text = str(caught.value)
    assert "/site-packages/mudata/__init__.py" in text and "0.3.1" in text
    assert "scverse" in text and MARKER in text and "mudata-mueval" in text
    assert text == wrong_mudata_message(other)


def test_the_cli_refuses_to_run_over_another_packages_init(tmp_path: Path) -> None:
    # Both distributions installed in one environment share the folder `mudata/`:
    # scverse's __init__.py beside our submodules. Our CLI must say so, not fail later.
    package = tmp_path / "site" / "mudata"
    shutil.copytree(
        Path(mudata.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__")
    )
    (package / "__init__.py").write_text(SCVERSE_LIKE_INIT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    result = subprocess.run(
        [sys.executable, "-c", "import mudata.cli"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: the 'mudata' package imported from")
    assert str(package / "__init__.py") in last and "scverse" in last
