"""A cached fetch reads no row unless the file changed; a read never writes (issue 31, item 6).

Rows hashed are counted by :func:`mudata.publish.table_hash.rows_hashed`, which the
real hash increments: nothing here replaces it.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
import mudata.publish.table_hash
from mudata.cli import main
from mudata.publish.store import read_provenance, stamp_path, unchanged_since_written
from mudata.publish.table_hash import rows_hashed, table_sha256
from tests.tiny_entry import write_tiny_entry


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny dataset registered and built once; returns its Parquet file."""
    write_tiny_entry(tmp_path / "registry")
    monkeypatch.setenv("MUDATA_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("MUDATA_HOME", str(tmp_path / "home"))
    return mudata.fetch("tiny")


def _rows(path: Path) -> int:
    record = read_provenance(path)
    assert record is not None
    return int(record["counts"]["rows"])


def _hashed_by(call) -> int:
    before = rows_hashed()
    call()
    return rows_hashed() - before


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every entry of the folder (hidden ones too): bytes and mtime_ns; the folder's own mtime."""
    found = {
        p.name: (p.read_bytes() if p.is_file() else b"<folder>", p.stat().st_mtime_ns)
        for p in folder.iterdir()
    }
    found["."] = (b"", folder.stat().st_mtime_ns)
    return found


def test_the_counter_counts_the_rows_of_a_real_hash() -> None:
    table = pd.DataFrame({"userid": ["a"] * 70_000, "label": ["x"] * 70_000, "f": 1.0})
    assert _hashed_by(lambda: table_sha256(table)) == 70_000  # one block and a part


def test_a_cached_fetch_hashes_no_row(tiny: Path) -> None:
    rows = _rows(tiny)
    assert rows > 0
    assert _hashed_by(lambda: mudata.fetch("tiny")) == 0
    assert mudata.fetch("tiny") == tiny
    assert _hashed_by(lambda: mudata.load("tiny")) == rows  # a load still checks its rows


def test_fetch_verify_hashes_the_rows_every_time(tiny: Path) -> None:
    rows = _rows(tiny)
    for _ in range(2):
        assert _hashed_by(lambda: mudata.fetch("tiny", verify=True)) == rows
    result = CliRunner().invoke(main, ["fetch", "tiny", "--verify"])
    assert result.exit_code == 0, result.output
    before = rows_hashed()
    assert CliRunner().invoke(main, ["fetch", "tiny", "--verify"]).exit_code == 0
    assert rows_hashed() - before == rows
    before = rows_hashed()
    assert CliRunner().invoke(main, ["fetch", "tiny"]).exit_code == 0
    assert rows_hashed() == before


def test_a_touched_file_is_hashed_again_then_restamped(tiny: Path) -> None:
    rows, content = _rows(tiny), tiny.read_bytes()
    status = tiny.stat()
    os.utime(tiny, ns=(status.st_atime_ns, status.st_mtime_ns + 5_000_000_000))
    assert not unchanged_since_written(tiny, read_provenance(tiny) or {})
    assert _hashed_by(lambda: mudata.fetch("tiny")) == rows
    assert tiny.read_bytes() == content  # the rows matched: served, not rebuilt
    assert unchanged_since_written(tiny, read_provenance(tiny) or {})
    assert _hashed_by(lambda: mudata.fetch("tiny")) == 0


def test_a_missing_or_foreign_stamp_means_the_rows_are_hashed(tiny: Path) -> None:
    rows, stamp = _rows(tiny), stamp_path(tiny)
    record = json.loads(stamp.read_text())
    assert record["bytes"] == tiny.stat().st_size
    assert record["table_sha256"] == (read_provenance(tiny) or {})["table_sha256"]
    stamp.unlink()  # a table written before stamps existed
    assert _hashed_by(lambda: mudata.fetch("tiny")) == rows
    assert stamp.is_file()
    stamp.write_text(json.dumps({**record, "table_sha256": "0" * 64}))  # another table's
    assert _hashed_by(lambda: mudata.fetch("tiny")) == rows
    stamp.write_text("x" * 10_000)  # not a stamp
    assert _hashed_by(lambda: mudata.fetch("tiny")) == rows
    assert _hashed_by(lambda: mudata.fetch("tiny")) == 0


def _forge_a_value(path: Path, frame: pd.DataFrame) -> None:
    """Change one feature value of the rows in place, keeping the file's size.

    The 8 bytes of a value of ``f1`` (random normals: every value is distinct)
    are replaced wherever they are stored (its data page, and its statistics
    if it is the minimum or maximum) by those of another number.
    """
    data = path.read_bytes()
    value = struct.pack("<d", float(frame["f1"].iloc[5]))
    assert value in data, "the value is stored as it is (no compression hides it)"
    path.write_bytes(data.replace(value, struct.pack("<d", 123.25)))


@pytest.mark.parametrize("restore_mtime", [False, True])
def test_a_tampered_table_is_refused_and_rebuilt(
    tiny: Path, restore_mtime: bool, caplog: pytest.LogCaptureFixture
) -> None:
    original = mudata.load("tiny").frame
    status = tiny.stat()
    _forge_a_value(tiny, original)
    if restore_mtime:  # as `touch -d`: the size and mtime are as stamped; ctime is not
        os.utime(tiny, ns=(status.st_atime_ns, status.st_mtime_ns))
        assert (tiny.stat().st_size, tiny.stat().st_mtime_ns) == (
            status.st_size,
            status.st_mtime_ns,
        )
    provenance = read_provenance(tiny)
    assert provenance is not None and not unchanged_since_written(tiny, provenance)
    with caplog.at_level(logging.WARNING, logger="mudata"):
        assert mudata.fetch("tiny") == tiny
    assert "does not match the hash recorded" in caplog.text
    assert "rebuilding it from the verified raw files" in caplog.text
    pd.testing.assert_frame_equal(mudata.load("tiny").frame, original)
    assert _hashed_by(lambda: mudata.fetch("tiny")) == 0


def test_a_read_of_a_damaged_datapackage_writes_nothing(tiny: Path) -> None:
    folder = tiny.parent
    (folder / "datapackage.json").write_text('{"mudata": {"table_sha256": "forged"}}')
    (folder / "croissant.json").unlink()
    (folder / f".{tiny.name}.k1ll3d.part").write_bytes(b"half a table")  # a killed run's
    before = _snapshot(folder)
    bunch = mudata.load("tiny")
    mudata.load("tiny", return_X_y=True)
    assert _snapshot(folder) == before
    assert len(bunch.frame) == _rows(tiny)
    mudata.fetch("tiny")  # a fetch repairs
    package = json.loads((folder / "datapackage.json").read_text())
    assert package["mudata"]["table_sha256"] == bunch.provenance["table_sha256"]
    assert package["resources"][0]["path"] == tiny.name
    assert (folder / "croissant.json").is_file()
    assert not (folder / f".{tiny.name}.k1ll3d.part").exists()
    assert _hashed_by(lambda: mudata.fetch("tiny")) == 0


def test_verify_repairs_the_descriptor_of_a_table_that_verifies(tiny: Path) -> None:
    descriptor = tiny.parent / "datapackage.json"
    good = descriptor.read_bytes()
    descriptor.write_text("not json")
    result = mudata.verify("tiny")
    assert result.status == "verified", result.message
    assert json.loads(descriptor.read_bytes()) == json.loads(good)  # written again from the table
