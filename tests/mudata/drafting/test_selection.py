"""Which files are data (issue 16, point 1), the glob selecting them, and path templates."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import zipfile

import numpy as np
import pandas as pd
import pytest

from mudata.drafting.draft import draft_entry
from mudata.drafting.selection import compile_path_pattern, data_glob, select
from mudata.errors import MudataUsageError as UsageError
from mudata.readers.sources import Sources
from mudata.readers.tabular import read_long_signals

HEADS = {
    "DATA/s01/s01_01_sp.csv": b"timestamp,x,y,z\n1,2,3,4\n",
    "DATA/s02/s02_01_sp.csv": b"timestamp,x,y,z\n1,2,3,4\n",
    "DATA/executions_info.csv": b"subject,execution,activity\ns01,1,walk\n",
    "README.md": b"# readme",
    ".zenodo.json": b"{}",
    "CITATION.cff": b"cff-version: 1.2.0",
    "docs/manual.pdf": b"%PDF",
    "paper/figures.pdf": b"%PDF",
}


def test_documentation_and_metadata_sheets_are_left_out_with_the_reason():
    selection = select(list(HEADS), HEADS.__getitem__)
    assert selection.members == ["DATA/s01/s01_01_sp.csv", "DATA/s02/s02_01_sp.csv"]
    assert selection.glob == "DATA/*/*.csv"
    assert selection.left_out["README.md"] == "documentation by its name (README.md)"
    assert selection.left_out[".zenodo.json"] == "metadata (.zenodo.json)"
    assert selection.left_out["CITATION.cff"].startswith("documentation")
    assert selection.left_out["paper/figures.pdf"] == "documentation or metadata (.pdf file)"
    assert selection.left_out["docs/manual.pdf"] == "documentation by its name (manual.pdf)"
    assert "a metadata sheet?" in selection.left_out["DATA/executions_info.csv"]


def test_include_and_exclude_override_the_rules():
    only_s01 = select(list(HEADS), HEADS.__getitem__, include=("*s01_*.csv",))
    assert only_s01.members == ["DATA/s01/s01_01_sp.csv"]
    assert only_s01.left_out["DATA/s02/s02_01_sp.csv"] == "not matched by --include"
    without = select(list(HEADS), HEADS.__getitem__, exclude=("s02_*",))
    assert without.left_out["DATA/s02/s02_01_sp.csv"] == "--exclude s02_*"
    with pytest.raises(UsageError, match="no data file found"):
        select(["README.md"], HEADS.__getitem__)


def test_a_glob_that_cannot_separate_the_files_says_which_are_in_the_way():
    assert data_glob(["1.csv", "2.csv"], ["README.md"], ".csv") == "*.csv"
    with pytest.raises(UsageError, match=r"without also selecting '1b.csv'; repair"):
        data_glob(["1.csv", "1a.csv"], ["1b.csv"], ".csv")
    # With the reason it was left out, which is what to repair.
    with pytest.raises(UsageError, match=r"selecting '1b.csv' \(left out: empty\); repair"):
        data_glob(["1.csv", "1a.csv"], ["1b.csv"], ".csv", reasons={"1b.csv": "empty"})


def test_templates_compile_to_anchored_patterns():
    pattern = compile_path_pattern("a{label}_s{user}_t{recording}_*.mat")
    match = re.search(pattern, "Inertial/a10_s3_t4_inertial.mat")
    assert match and match.groupdict() == {"label": "10", "user": "3", "recording": "4"}
    assert compile_path_pattern(r"(?P<user>\d+)\.csv$") == r"(?P<user>\d+)\.csv$"
    with pytest.raises(UsageError, match=r"unknown field\(s\) \['device'\]"):
        compile_path_pattern("{user}_{device}.csv")
    with pytest.raises(UsageError, match="neither a regular expression"):
        compile_path_pattern("plain.csv")


def _frame(user: str, rng: np.random.Generator) -> pd.DataFrame:
    n = 1200
    return pd.DataFrame(
        {
            "user": user,
            "activity": np.repeat(["walk", "rest"], n // 2),
            # random walks: successive samples alike, as raw signals are
            "acc_x": np.cumsum(rng.normal(size=n)).round(3),
            "acc_y": np.cumsum(rng.normal(size=n)).round(3),
            "acc_z": np.cumsum(rng.normal(size=n)).round(3),
        }
    )


def test_semicolon_files_with_decimal_commas_and_compressed_members_are_drafted(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "semi"
    folder.mkdir()
    for user in ("u1", "u2"):
        _frame(user, rng).to_csv(folder / f"{user}.csv", sep=";", decimal=",", index=False)
    draft = draft_entry([folder], "semi", output=tmp_path / "semi.toml", sampling_rate_hz=50)
    options = draft.entry.reader_options
    assert (options["separator"], options["decimal"]) == (";", ",")
    assert options["channels"] == ["acc_x", "acc_y", "acc_z"]
    archive = tmp_path / "release.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("release/README.txt", "about")
        for user in ("u1", "u2"):
            text = _frame(user, rng).to_csv(sep="\t", index=False).encode()
            zf.writestr(f"release/{user}.tsv.gz", gzip.compress(text))
    draft = draft_entry([archive], "tabs", output=tmp_path / "tabs.toml", sampling_rate_hz=50)
    options = draft.entry.reader_options
    assert options["members"] == "*.tsv.gz" and options["separator"] == "\t"
    assert "  release/README.txt: documentation by its name (README.txt)" in draft.report


def test_a_user_id_ends_the_name_of_a_compressed_file(tmp_path):
    rng = np.random.default_rng(2)
    folder = tmp_path / "gz"
    folder.mkdir()
    for user in ("p1", "p2"):
        text = _frame(user, rng).drop(columns="user").to_csv(index=False).encode()
        (folder / f"watch_{user}.csv.gz").write_bytes(gzip.compress(text))
    draft = draft_entry([folder], "gz", output=tmp_path / "gz.toml", sampling_rate_hz=50)
    assert "user: the id at the end of each file name (e.g. 'p1'; 2 users)" in draft.report
    assert draft.entry.reader_options["members"] == "*.csv.gz"


COMPRESSED = {
    "data/p1.csv": None,
    "data/p2.csv.gz": gzip.compress,
    "data/p3.csv.bz2": bz2.compress,
    "data/p4.csv.xz": lzma.compress,
}


def test_compressions_of_one_format_are_one_format(tmp_path):
    heads = dict.fromkeys(COMPRESSED, b"user,x,y,z\n1,2,3,4\n")
    heads["data/extra.parquet"] = b"PAR1"
    selection = select(list(heads), heads.__getitem__)
    assert selection.members == sorted(COMPRESSED)
    assert selection.glob == "*.csv*"
    assert selection.left_out == {
        "data/extra.parquet": "another format (.parquet) than the data files (.csv)"
    }
    # --include keeps what it matches, beside a parquet file or not...
    chosen = select(list(heads), heads.__getitem__, include=("*.csv*",))
    assert chosen.members == sorted(COMPRESSED)
    assert chosen.left_out == {"data/extra.parquet": "not matched by --include"}
    # ...but one dataset is read in one format.
    with pytest.raises(UsageError, match=r"several formats \(\.csv \(4 file\(s\)\), \.parquet"):
        select(list(heads), heads.__getitem__, include=("*.csv*", "*.parquet"))


def test_include_overrides_the_column_rule(tmp_path):
    with_sheet = select(list(HEADS), HEADS.__getitem__, include=("*.csv",))
    assert "DATA/executions_info.csv" in with_sheet.members


def test_a_release_of_several_compressions_is_drafted_and_read_whole(tmp_path):
    rng = np.random.default_rng(3)
    folder = tmp_path / "mixed"
    (folder / "data").mkdir(parents=True)
    for i, (name, compress) in enumerate(COMPRESSED.items()):
        text = _frame(f"p{i + 1}", rng).to_csv(index=False).encode()
        (folder / name).write_bytes(text if compress is None else compress(text))
    draft = draft_entry([folder], "mixed", output=tmp_path / "mixed.toml", sampling_rate_hz=50)
    assert draft.entry.reader_options["members"] == "*.csv*"
    assert "another format" not in "\n".join(draft.report)
    sources = Sources([folder])
    table = read_long_signals(draft.entry, sources).frame
    assert sorted(table["userid"].unique()) == ["p1", "p2", "p3", "p4"]
    assert len(table) == 4 * 1200


def test_an_empty_data_file_among_its_like_is_named_as_one():
    """Left out as "its columns ((empty)) differ ...: a metadata sheet?", and the
    glob's refusal did not say why the file was in the way."""
    heads = {f"datasets/{i}.csv": b"t,x,y,z,label\n1,2,3,4,1\n" for i in range(1, 5)}
    heads["datasets/2.csv"] = b""
    with pytest.raises(UsageError) as caught:
        select(list(heads), heads.__getitem__)
    message = str(caught.value)
    assert "'datasets/2.csv' (left out: no header line, where 3 of the 4 tables have one" in message
    assert "an empty or damaged file?); repair those files" in message


def test_data_files_no_glob_can_match_together_are_named():
    """A copy 2.CSV beside 2.csv: the message listed no file ("selecting []")."""
    with pytest.raises(UsageError) as caught:
        data_glob(["d/1.csv", "d/2.CSV", "d/2.csv"], ["d/README.md"], ".csv")
    message = str(caught.value)
    assert "no glob matches every data file: ['d/2.CSV'] do not end in '.csv'" in message
