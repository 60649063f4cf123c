"""`mudata verify`: a cached table against a rebuild from its pinned raw files (real WISDM)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import mudata
from mudata.cli import main
from mudata.publish.store import PROVENANCE_KEY, read_provenance, table_fingerprint
from mudata.publish.table_hash import KIND, LEGACY_KIND, legacy_sha256
from mudata.sources.paths import home_identity
from tests.forge import relabel_keeping_row_hashes

TABLE = Path("wisdm") / "wisdm.parquet"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def built_home(wisdm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home holding the WISDM table built from the official file (built once)."""
    home = tmp_path_factory.mktemp("verify_home")
    mudata.fetch("wisdm", data_home=home, manual_dir=wisdm_dir)
    return home


@pytest.fixture
def home(built_home: Path, tmp_path: Path) -> Path:
    """A private copy of the built data home (its identity file included)."""
    copy = tmp_path / "home"
    shutil.copytree(built_home, copy)
    return copy


def rewrite(path: Path, edit, hash_rows=table_fingerprint) -> None:
    """What a forger does: change the rows, recompute table_sha256, keep the rest.

    ``hash_rows`` None keeps the recorded table_sha256 as it was.
    """
    arrow = pq.read_table(path)
    frame = arrow.to_pandas()
    metadata = dict(arrow.schema.metadata)
    provenance = json.loads(metadata[PROVENANCE_KEY])
    frame, provenance = edit(frame, provenance)
    if hash_rows is not None:
        provenance["table_sha256"] = hash_rows(frame)
    metadata[PROVENANCE_KEY] = json.dumps(provenance).encode("utf-8")
    forged = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(forged.replace_schema_metadata({**forged.schema.metadata, **metadata}), path)


def test_a_clean_table_verifies(home: Path) -> None:
    result = mudata.verify("wisdm", data_home=home)
    assert (result.status, result.exit_code) == ("verified", 0)
    assert result.cached_sha256 == result.rebuilt_sha256
    assert result.cached_sha256 == read_provenance(home / TABLE)["table_sha256"]

    cli = run("verify", "wisdm", "--data-home", str(home))
    assert cli.exit_code == 0, cli.output
    assert "wisdm: verified" in cli.output and result.cached_sha256 in cli.output


def test_a_forged_table_is_served_as_verified_at_build_and_verify_names_the_row(
    home: Path,
) -> None:
    path = home / TABLE
    original = pq.read_table(path).to_pandas()
    rows = [137, 1500]
    forged_labels = {}

    def relabel(frame, provenance):
        for row in rows:
            label = frame.at[row, "label"]
            forged_labels[row] = "Sitting" if label != "Sitting" else "Walking"
            frame.at[row, "label"] = forged_labels[row]
        return frame, provenance

    rewrite(path, relabel)

    # The table's own hash cannot tell: it is served, and claims only what the build saw.
    bunch = mudata.load("wisdm", data_home=home, download_if_missing=False)
    assert bunch.frame.at[rows[0], "label"] == forged_labels[rows[0]]
    assert bunch.provenance["files"][0]["verified_at_build"] is True
    assert "verified" not in bunch.provenance["files"][0]

    result = mudata.verify("wisdm", data_home=home)
    assert (result.status, result.exit_code) == ("differs", 1)
    where = result.first_difference
    assert where["row"] == rows[0] and where["columns"] == ["label"]
    assert where["userid"]["cached"] == str(original.at[rows[0], "userid"])
    assert where["label"] == {
        "cached": forged_labels[rows[0]],
        "rebuilt": original.at[rows[0], "label"],
    }
    assert result.rebuilt_sha256 == table_fingerprint(original)

    cli = run("verify", "wisdm", "--data-home", str(home))
    assert cli.exit_code == 1
    assert f"first differing row {rows[0]}" in cli.output
    assert f"user '{original.at[rows[0], 'userid']}'" in cli.output
    assert "differing column(s): label" in cli.output
    # verify writes nothing: the forged table is still there for the user to inspect
    assert pq.read_table(path).to_pandas().at[rows[0], "label"] == forged_labels[rows[0]]


def test_a_changed_feature_value_is_named_by_its_column(home: Path) -> None:
    def nudge(frame, provenance):
        frame.at[42, "YAVG"] = frame.at[42, "YAVG"] + 1e-9
        return frame, provenance

    rewrite(home / TABLE, nudge)
    result = mudata.verify("wisdm", data_home=home)
    assert result.status == "differs"
    assert (result.first_difference["row"], result.first_difference["columns"]) == (42, ["YAVG"])


def test_a_zero_turned_negative_is_named_by_its_column(home: Path) -> None:
    original = pq.read_table(home / TABLE).to_pandas()
    zero = int((original["X0"] == 0).to_numpy().argmax())
    assert original.at[zero, "X0"] == 0 and not np.signbit(original.at[zero, "X0"])

    def negate(frame, provenance):
        frame.at[zero, "X0"] = -0.0
        return frame, provenance

    rewrite(home / TABLE, negate)
    result = mudata.verify("wisdm", data_home=home)
    assert result.status == "differs"
    assert (result.first_difference["row"], result.first_difference["columns"]) == (zero, ["X0"])


def test_dropped_rows_are_a_difference(home: Path) -> None:
    def drop_last(frame, provenance):
        return frame.iloc[:-3].reset_index(drop=True), provenance

    rewrite(home / TABLE, drop_last)
    result = mudata.verify("wisdm", data_home=home)
    assert result.status == "differs"
    assert result.first_difference == {"kind": "rows", "cached": 2866, "rebuilt": 2869}


def test_without_a_build_record_from_this_home_the_table_is_unverifiable(
    home: Path, wisdm_dir: Path
) -> None:
    def forget(frame, provenance):
        provenance.pop("build")  # as a table written by an older mudata
        return frame, provenance

    rewrite(home / TABLE, forget)
    # Without the record, the folder of the raw files must be given.
    result = mudata.verify("wisdm", data_home=home, manual_dir=wisdm_dir)
    assert (result.status, result.exit_code) == ("unverifiable", 2)
    assert result.cached_sha256 == result.rebuilt_sha256  # the rows are right...
    assert "no build record from this data home" in result.message  # ...the record is missing
    cli = run("verify", "wisdm", "--data-home", str(home), "--manual-dir", str(wisdm_dir))
    assert cli.exit_code == 2 and "no build record from this data home" in cli.output


def test_a_table_copied_from_another_home_is_unverifiable(built_home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(built_home / "wisdm", other / "wisdm")
    assert home_identity(other, create=True) != home_identity(built_home)
    result = mudata.verify("wisdm", data_home=other)
    assert result.status == "unverifiable"
    assert result.cached_sha256 == result.rebuilt_sha256
    assert "no build record from this data home" in result.message


def test_raw_files_changed_since_the_build_make_it_unverifiable(
    wisdm_dir: Path, tmp_path: Path
) -> None:
    manual = tmp_path / "release"
    shutil.copytree(wisdm_dir, manual)
    home = tmp_path / "home"
    mudata.fetch("wisdm", data_home=home, manual_dir=manual)
    arff = manual / "WISDM_ar_v1.1_transformed.arff"
    arff.chmod(0o644)
    data = bytearray(arff.read_bytes())
    data[-10] = ord("9") if data[-10] != ord("9") else ord("8")
    arff.write_bytes(bytes(data))

    result = mudata.verify("wisdm", data_home=home)
    assert (result.status, result.exit_code) == ("unverifiable", 2)
    assert "sha256 mismatch" in result.message and str(arff) in result.message
    assert result.rebuilt_sha256 is None


def test_nothing_built_is_unverifiable(tmp_path: Path) -> None:
    cli = run("verify", "wisdm", "--data-home", str(tmp_path))
    assert cli.exit_code == 2
    assert "no cached table" in cli.output
    assert run("verify", "no-such-dataset", "--data-home", str(tmp_path)).exit_code == 2


def test_a_table_of_older_provenance_says_verified_at_build(home: Path) -> None:
    def old_names(frame, provenance):
        for record in provenance["files"]:
            record["verified"] = record.pop("verified_at_build")
        return frame, provenance

    rewrite(home / TABLE, old_names)
    record = mudata.provenance("wisdm", data_home=home)
    assert record["files"][0]["verified_at_build"] is True
    assert "verified" not in record["files"][0]


def walking_to_upstairs(frame, provenance):
    """200 Walking rows relabelled Upstairs, each row's pandas hash kept (tests/forge.py)."""
    rows = np.flatnonzero(frame["label"].to_numpy() == "Walking")[:200]
    forged, used = relabel_keeping_row_hashes(frame, rows, "Upstairs")
    assert len(used) >= 190
    return forged, provenance


def test_a_forgery_that_keeps_pandas_row_hashes_differs(home: Path) -> None:
    path = home / TABLE
    original = pq.read_table(path).to_pandas()
    forged, _ = walking_to_upstairs(original.copy(), {})
    # The old fingerprint, the one verify used to compare, cannot tell them apart...
    assert legacy_sha256(forged) == legacy_sha256(original)
    rewrite(path, walking_to_upstairs)

    result = mudata.verify("wisdm", data_home=home)
    assert (result.status, result.exit_code) == ("differs", 1)  # ...the current one can
    first = int(np.flatnonzero(forged["label"].to_numpy() != original["label"].to_numpy())[0])
    where = result.first_difference
    assert where["row"] == first
    assert where["columns"] == ["label", str(original.columns[-1])]
    assert where["label"] == {"cached": "Upstairs", "rebuilt": "Walking"}


def as_old_kind(frame, provenance):
    """A table written before table_sha256_kind: pandas' row hashes."""
    assert provenance.pop("table_sha256_kind") == KIND
    return frame, provenance


def test_a_table_of_the_old_hash_kind_is_read_and_verify_says_to_rebuild_it(
    home: Path, wisdm_dir: Path
) -> None:
    path = home / TABLE
    rewrite(path, as_old_kind, hash_rows=legacy_sha256)
    bunch = mudata.load("wisdm", data_home=home, download_if_missing=False)
    assert bunch.provenance["sha256"] == legacy_sha256(bunch.frame)

    result = mudata.verify("wisdm", data_home=home)
    assert (result.status, result.exit_code) == ("unverifiable", 2)
    assert result.cached_sha256 == result.rebuilt_sha256  # the rows are compared all the same
    assert f"of the old kind ({LEGACY_KIND}" in result.message
    assert "`mudata fetch wisdm --force`" in result.message
    cli = run("verify", "wisdm", "--data-home", str(home))
    assert cli.exit_code == 2 and "old kind" in cli.output

    # The rebuild it asks for writes the current kind, and then the table verifies.
    fetch = run(
        "fetch", "wisdm", "--data-home", str(home), "--manual-dir", str(wisdm_dir), "--force"
    )
    assert fetch.exit_code == 0, fetch.output
    assert read_provenance(path)["table_sha256_kind"] == KIND
    assert mudata.verify("wisdm", data_home=home).status == "verified"


def test_an_old_kind_table_may_lack_younger_fields_but_not_change_them(home: Path) -> None:
    def older(frame, provenance):
        as_old_kind(frame, provenance)
        del provenance["licence_path"]  # as if written before it was recorded
        return frame, provenance

    rewrite(home / TABLE, older, hash_rows=legacy_sha256)
    assert mudata.verify("wisdm", data_home=home).status == "unverifiable"
    rewrite(home / TABLE, lambda f, p: (f, {**p, "licence": "MIT"}), hash_rows=None)
    result = mudata.verify("wisdm", data_home=home)
    assert result.status == "differs"
    assert [d["field"] for d in result.first_difference["fields"]] == ["licence"]


def test_a_missing_field_is_a_difference_in_a_current_table(home: Path) -> None:
    def drop(frame, provenance):
        del provenance["citation"]
        return frame, provenance

    rewrite(home / TABLE, drop)
    result = mudata.verify("wisdm", data_home=home)
    assert result.status == "differs"
    assert "field 'citation' (cached missing" in result.message


def test_a_forged_table_of_the_old_kind_is_served_but_differs(home: Path) -> None:
    path = home / TABLE
    rewrite(path, as_old_kind, hash_rows=legacy_sha256)
    # The forger leaves the recorded hash alone: the forged rows still match it.
    rewrite(path, walking_to_upstairs, hash_rows=None)
    bunch = mudata.load("wisdm", data_home=home, download_if_missing=False)
    assert (bunch.frame["label"] == "Upstairs").sum() > 329  # served, forged rows and all
    result = mudata.verify("wisdm", data_home=home)
    assert (result.status, result.exit_code) == ("differs", 1)
    assert result.first_difference["label"]["rebuilt"] == "Walking"


def test_an_unknown_hash_kind_differs(home: Path) -> None:
    def future(frame, provenance):
        provenance["table_sha256_kind"] = "blake3/9"
        return frame, provenance

    rewrite(home / TABLE, future)
    result = mudata.verify("wisdm", data_home=home)
    assert result.status == "differs"
    assert "not one this mudata knows" in result.message


FORGED_FIELDS = {
    "licence": lambda p: p.update(licence="CC0-1.0"),
    "citation": lambda p: p.update(citation=p["citation"] + " (revised)"),
    "classes": lambda p: p.update(classes=[*p["classes"][1:], p["classes"][0]]),
    "counts": lambda p: p["counts"]["per_class"].update(Walking=1),
}


@pytest.mark.parametrize("field", list(FORGED_FIELDS))
def test_a_forged_provenance_field_load_serves_differs_naming_it(home: Path, field: str) -> None:
    def forge(frame, provenance):
        FORGED_FIELDS[field](provenance)
        return frame, provenance

    rewrite(home / TABLE, forge)
    served = mudata.load("wisdm", data_home=home, download_if_missing=False)
    result = mudata.verify("wisdm", data_home=home)
    assert (result.status, result.exit_code) == ("differs", 1)
    assert result.cached_sha256 == result.rebuilt_sha256  # the rows are right
    (difference,) = result.first_difference["fields"]
    assert difference["field"] == field
    assert difference["cached"] == served.provenance[field]
    assert difference["rebuilt"] != difference["cached"]
    cli = run("verify", "wisdm", "--data-home", str(home))
    assert cli.exit_code == 1 and f"field '{field}'" in cli.output


def test_a_renamed_feature_differs_by_its_columns(home: Path) -> None:
    def rename(frame, provenance):
        return frame.rename(columns={"YAVG": "YAVG2"}), provenance

    rewrite(home / TABLE, rename)
    result = mudata.verify("wisdm", data_home=home)
    assert result.status == "differs"
    assert result.first_difference["kind"] == "columns"
    assert "YAVG2" in result.first_difference["cached"]
