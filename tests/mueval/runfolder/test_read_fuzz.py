"""Fuzzing mueval's readers: mutated run folders and tables raise only mueval's errors.

The inputs are the files of a real run folder (a real ``mueval evaluate`` on a small
table) and a real CSV table, mutated by Hypothesis: bytes flipped, cut short,
spliced. Whatever the mutation, :func:`read_run_folder` either returns a folder
that passed its checks or raises :class:`RunFolderError`, and :func:`load_file`
either returns a table or raises a :class:`MuevalError`; anything else (a
``KeyError`` from deep inside pandas, say) is a bug.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mueval.cli.main import main
from mueval.data.table import load_file
from mueval.errors import MuevalError
from mueval.runfolder import RunFolderError, read_run_folder
from tests.user_tables import make_frame

RUN_FILES = (
    "run.json",
    "summary.csv",
    "splits.parquet",
    "predictions.parquet",
    "diagnostics.parquet",
)


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, bytes]:
    """The bytes of every file of a real run folder, and of the table it was run on."""
    base = tmp_path_factory.mktemp("fuzz")
    table = base / "table.csv"
    make_frame(n_users=3, per_class=12).to_csv(table, index=False)
    run = base / "run"
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--data",
            str(table),
            "-s",
            "mm,ucm",
            "-c",
            "nb",
            "--iterations",
            "2",
            "--out",
            str(run),
            "--small-cal",
            "skip",
        ],
    )
    assert result.exit_code == 0, result.output
    out = {name: (run / name).read_bytes() for name in RUN_FILES}
    out["table.csv"] = table.read_bytes()
    make_frame(n_users=3, per_class=12).to_parquet(base / "table.parquet")
    out["table.parquet"] = (base / "table.parquet").read_bytes()
    return out


@st.composite
def mutations(draw):
    """A list of edits: (kind, relative position, bytes).

    Positions lean towards the end as well: a Parquet file keeps its schema and
    pandas metadata (JSON) in the footer, where damage reaches the most code.
    """
    edit = st.tuples(
        st.sampled_from(["flip", "cut", "insert", "overwrite"]),
        st.one_of(st.floats(0, 1), st.floats(0.8, 1)),
        st.binary(min_size=1, max_size=8),
    )
    return draw(st.lists(edit, min_size=1, max_size=4))


def _mutate(data: bytes, edits) -> bytes:
    buf = bytearray(data)
    for kind, where, payload in edits:
        pos = min(int(where * len(buf)), max(len(buf) - 1, 0))
        if kind == "flip" and buf:
            buf[pos] ^= payload[0] or 0xFF
        elif kind == "cut":
            del buf[pos:]
        elif kind == "insert":
            buf[pos:pos] = payload
        elif buf:
            buf[pos : pos + len(payload)] = payload
    return bytes(buf)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """One scratch folder for every example (each example rewrites what it uses)."""
    return tmp_path_factory.mktemp("examples")


def _run_folder(root: Path, sources: dict[str, bytes], name: str, content: bytes) -> Path:
    run = root / "run"
    if run.exists():
        shutil.rmtree(run)
    run.mkdir()
    for other in RUN_FILES:
        (run / other).write_bytes(content if other == name else sources[other])
    return run


@pytest.mark.parametrize("name", RUN_FILES)
@given(edits=mutations())
def test_a_mutated_run_folder_file_raises_only_run_folder_errors(
    folder, sources, name, edits
) -> None:
    run = _run_folder(folder, sources, name, _mutate(sources[name], edits))
    with contextlib.suppress(RunFolderError):
        read_run_folder(run)


@pytest.mark.parametrize("name", ["table.csv", "table.parquet"])
@given(edits=mutations())
def test_a_mutated_data_table_raises_only_mueval_errors(folder, sources, name, edits) -> None:
    path = folder / name
    path.write_bytes(_mutate(sources[name], edits))
    with contextlib.suppress(MuevalError):
        load_file(path, user_col="userid", label_col="label")
