"""The user's files as init collects them: a zip archive cut short is named as one.

It was left out as "not a data format read here (.zip)", as if zip files were
not read at all, while a cut tar archive was named truncated or corrupt.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from mudata.cli import main


def _zip(path: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for user in (1, 2, 3):
            rows = "\n".join(f"{i},{i % 7},{i % 5},{i % 3},walk" for i in range(400))
            zf.writestr(f"data/u{user}.csv", "t,x,y,z,label\n" + rows + "\n")
    return buffer.getvalue()


@pytest.mark.parametrize("name", ["release.zip", "release.bin"])
def test_a_zip_cut_short_is_named_truncated(tmp_path: Path, name: str) -> None:
    whole = _zip(tmp_path)
    cut = tmp_path / name
    cut.write_bytes(whole[: len(whole) // 2])
    result = CliRunner().invoke(
        main, ["init", str(cut), "--name", "t", "-o", str(tmp_path / "t.toml")]
    )
    assert result.exit_code == 2, result.output
    assert f"{cut} is not a readable zip archive" in result.output
    assert "truncated or corrupt" in result.output
    assert not (tmp_path / "t.toml").exists()
