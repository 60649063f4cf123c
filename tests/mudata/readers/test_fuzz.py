"""Property-based fuzzing of every reader on mutated archives and mutated texts.

Each reader gets a small valid release (built here in its official format),
then Hypothesis flips, inserts, deletes and truncates bytes, either in the
archive itself (zip and tar.gz) or in the text of a member before it is
packed. Whatever the damage, the reader (and the rest of the preprocessing:
featurize, label, filter, validate) may only fail with one of mudata's own
errors; a ``zlib.error``, ``UnicodeDecodeError``, ``IndexError`` or any other
escaping exception fails the test. Example counts are kept small so that the
suite stays fast; raise them with ``MUDATA_FUZZ_EXAMPLES=500`` for a longer run.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudata.building.labelled import build_table
from mudata.errors import MudataError
from mudata.readers import get_reader
from mudata.readers.sources import Sources
from mudata.records.entry import DatasetEntry
from mudata.registry.lookup import get_entry, parse_entry
from tests import official_formats as of
from tests.conftest import WISDM_DIR

WISDM_MEMBER = "WISDM_ar_v1.1/WISDM_ar_v1.1_transformed.arff"


def _wisdm_text() -> bytes:
    """The official header and 40 data rows (or a stand-in when the file is absent)."""
    path = WISDM_DIR / "WISDM_ar_v1.1_transformed.arff"
    if not path.is_file():
        pytest.skip("official WISDM file not available")
    lines = path.read_bytes().split(b"\n")
    start = next(i for i, line in enumerate(lines) if line.strip().lower() == b"@data")
    return b"\n".join(lines[: start + 41]) + b"\n"


def _members_of(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def _feature_table_entry() -> DatasetEntry:
    return parse_entry(_tabular("feature-table", {"user_col": "user", "label_col": "label"}))


def _long_signals_entry() -> DatasetEntry:
    data = _tabular("long-signals", {"user_col": "user", "label_col": "label", "time_col": "t"})
    data["recipe"] = {"name": "study-window", "window": 4}
    data["sensors"] = [{"name": "acc", "channels": ["x", "y", "z"]}]
    return parse_entry(data)


def _tabular(reader: str, options: dict) -> dict:
    return {
        "name": "toy", "title": "Toy", "version": "1", "homepage": "h", "licence": "CC0-1.0",
        "citation": "c", "sampling_rate_hz": 20, "reader": reader, "reader_options": options,
        "recipe": {"name": "precomputed"}, "min_per_class": 1,
        "classes": [{"code": "walk", "name": "walk"}, {"code": "run", "name": "run"}],
        "files": [{"name": "toy.zip", "path": "/toy.zip"}],
    }  # fmt: skip


def _tabular_members(seed: int = 0) -> dict[str, bytes]:
    rng = np.random.default_rng(seed)
    lines = ["user,label,t,x,y,z"]
    for user in (1, 2):
        for t in range(24):
            label = "walk" if t % 12 < 6 else "run"
            lines.append(f"{user},{label},{t}," + ",".join(f"{v:.4f}" for v in rng.normal(size=3)))
    return {"toy/a.csv": ("\n".join(lines) + "\n").encode()}


def _release(name: str, folder: Path) -> tuple[DatasetEntry, dict[str, bytes]]:
    """A reader's entry and the members of a small valid release."""
    rng = np.random.default_rng(1)
    if name == "wisdm":
        return get_entry("wisdm"), {WISDM_MEMBER: _wisdm_text()}
    if name == "har70":
        of.make_har70_zip(folder / "r.zip", (501, 502), rng, n_samples=700, mean_run=120)
        return of.har70_entry(window=20), _members_of(folder / "r.zip")
    if name == "opportunity":
        of.make_opportunity_zip(folder / "r.zip", (1,), rng, runs=(1, 2), n_rows=40, drill=False)
        return of.opportunity_entry(window=6), _members_of(folder / "r.zip")
    if name == "gestures":
        of.make_gestures_zip(
            folder / "r.zip", users=2, gestures=2, repetitions=3, rng=rng, lengths=(5, 9)
        )
        return of.gestures_entry(), _members_of(folder / "r.zip")
    if name == "feature-table":
        return _feature_table_entry(), _tabular_members()
    return _long_signals_entry(), _tabular_members()


EXAMPLES = int(os.environ.get("MUDATA_FUZZ_EXAMPLES", "12"))
READERS = ["wisdm", "har70", "opportunity", "gestures", "feature-table", "long-signals"]

mutation = st.tuples(
    st.sampled_from(["flip", "insert", "delete", "truncate", "set"]),
    st.floats(min_value=0, max_value=1, allow_nan=False),
    st.integers(min_value=0, max_value=255),
)


def mutate(data: bytes, mutations: list[tuple[str, float, int]]) -> bytes:
    out = bytearray(data)
    for op, where, value in mutations:
        if not out:
            break
        at = min(int(where * len(out)), len(out) - 1)
        if op == "flip":
            out[at] ^= 1 << (value % 8)
        elif op == "insert":
            out[at:at] = bytes([value]) * (1 + value % 5)
        elif op == "delete":
            del out[at : at + 1 + value % 7]
        elif op == "truncate":
            del out[at:]
        else:
            out[at] = value
    return bytes(out)


def pack(members: dict[str, bytes], kind: str) -> bytes:
    buffer = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in members.items():
                zf.writestr(name, data)
    else:
        with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def only_our_errors(entry: DatasetEntry, payload: bytes) -> None:
    """Run the reader and the whole preprocessing; only MudataError may escape."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "release"
        path.write_bytes(payload)
        sources = Sources([path])
        try:
            build_table(entry, sources)
        except MudataError:
            pass
        finally:
            sources.close()


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[DatasetEntry, dict]]:
    folder = tmp_path_factory.mktemp("releases")
    return {name: _release(name, folder) for name in READERS}


def _check_valid_release_builds(entry: DatasetEntry, members: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "release"
        path.write_bytes(pack(members, "zip"))
        sources = Sources([path])
        try:
            assert len(get_reader(entry.reader)(entry, sources).frame) > 0
        finally:
            sources.close()


@pytest.mark.parametrize("reader", READERS)
def test_the_unmutated_releases_build(releases, reader: str) -> None:
    """The fuzzing starts from releases the readers accept: the damage is what fails."""
    _check_valid_release_builds(*releases[reader])


def _fuzz(reader: str, releases, kind: str, where: str, mutations) -> None:
    entry, members = releases[reader]
    if where == "archive":
        payload = mutate(pack(members, kind), mutations)
    else:
        name = max(members, key=lambda n: len(members[n]))  # the data, not a readme
        payload = pack({**members, name: mutate(members[name], mutations)}, kind)
    only_our_errors(entry, payload)


def _property(kind: str, where: str) -> Callable:
    @settings(max_examples=EXAMPLES, deadline=None)
    @given(reader=st.sampled_from(READERS), mutations=st.lists(mutation, min_size=1, max_size=4))
    def check(releases, reader: str, mutations) -> None:
        _fuzz(reader, releases, kind, where, mutations)

    return check


test_mutated_zip_archives = _property("zip", "archive")
test_mutated_tar_gz_archives = _property("tar", "archive")
test_mutated_member_texts = _property("zip", "text")


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=st.binary(max_size=400), reader=st.sampled_from(READERS))
def test_arbitrary_bytes_as_the_data_member(releases, text: bytes, reader: str) -> None:
    entry, members = releases[reader]
    name = max(members, key=lambda n: len(members[n]))
    only_our_errors(entry, pack({**members, name: text}, "zip"))
