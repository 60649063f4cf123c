"""``mudata init`` (issue 10, point 1): a complete entry drafted from files a user has."""

from __future__ import annotations

import hashlib
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

import mudata
from mudata.cli import main
from mudata.drafting.draft import draft_entry
from mudata.registry.lookup import load_entry_file


def hmp_folder(root: Path, rng: np.random.Generator, users=("f1", "f2", "m1"), n=400) -> Path:
    """The HMP layout: one folder per activity, the volunteer at the end of each file name,
    whitespace-separated integers without a header or a time column."""
    for activity in ("Walk", "Climb_stairs"):
        (root / activity).mkdir(parents=True, exist_ok=True)
        for user in users:
            for trial in (1, 2):
                values = rng.integers(0, 64, size=(n, 3))
                name = (
                    f"Accelerometer-2011-03-2{trial}-10-21-{trial}0-{activity.lower()}-{user}.txt"
                )
                np.savetxt(root / activity / name, values, fmt="%d")
    return root


def invoke(*args: str) -> object:
    return CliRunner().invoke(main, list(args))


def test_init_drafts_a_path_pattern_entry_that_registers_and_fetches(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hmp_folder(tmp_path / "recordings", np.random.default_rng(0))
    result = invoke("init", "recordings", "--name", "hmp-own", "--sampling-rate", "32")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "hmp-own.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    options = data["reader_options"]
    assert data["reader"] == "long-signals" and options["format"] == "text"
    assert options["header"] is False and options["columns"] == {"c1": 1, "c2": 2, "c3": 3}
    assert "(?P<label>" in options["path_pattern"] and "(?P<user>" in options["path_pattern"]
    assert [c["code"] for c in data["classes"]] == ["Climb_stairs", "Walk"]
    assert "# 2400 rows" in text  # counts of every class, in the draft
    (spec,) = data["files"]
    assert spec["hashes"] == "first-use" and spec["glob"] == "*.txt"
    assert len(spec["members"]) == 12
    first = spec["members"][0]
    digest = hashlib.sha256((tmp_path / "recordings" / first["path"]).read_bytes()).hexdigest()
    assert first["sha256"] == digest
    assert "pinned on first use" in text
    assert "users" in result.output and "user: the id at the end of each file name" in result.output

    home = tmp_path / "home"
    assert invoke("register", "hmp-own.toml", "--data-home", str(home), "--draft-ok").exit_code == 0
    fetched = invoke("fetch", "hmp-own", "--data-home", str(home))
    assert fetched.exit_code == 0, fetched.output
    record = mudata.provenance("hmp-own", data_home=home)
    assert (
        record["files"][0]["verified_at_build"] is True
        and record["files"][0]["hashes"] == "first-use"
    )
    frame = mudata.load("hmp-own", data_home=home).frame
    assert sorted(frame["userid"].unique()) == ["f1", "f2", "m1"]


def test_init_reads_a_long_csv_with_text_times_and_estimates_the_rate(tmp_path):
    rng = np.random.default_rng(1)
    start = pd.Timestamp("2019-01-12 09:59:50")
    parts = []
    for user in ("S01", "S02"):
        times = start + pd.to_timedelta(np.arange(3000) * 20, unit="ms")
        parts.append(
            pd.DataFrame(
                {
                    "timestamp": times.strftime("%Y-%m-%d %H:%M:%S.%f").str[:-3],
                    "subject": user,
                    "ax": np.cumsum(rng.normal(size=3000)),
                    "ay": np.cumsum(rng.normal(size=3000)),
                    "az": np.cumsum(rng.normal(size=3000)),
                    "activity": np.repeat([1, 2, 6], 1000),
                }
            )
        )
    pd.concat(parts).to_csv(tmp_path / "all.csv", index=False)
    draft = draft_entry([tmp_path / "all.csv"], "long-own", output=tmp_path / "long-own.toml")
    options = draft.entry.reader_options
    assert (options["user_col"], options["label_col"], options["time_col"]) == (
        "subject",
        "activity",
        "timestamp",
    )
    assert options["channels"] == ["ax", "ay", "az"]
    assert draft.entry.sampling_rate_hz == 50.0
    assert draft.entry.recipe.window == 150
    assert [c.code for c in draft.entry.classes] == [1, 2, 6]
    assert (
        draft.entry.files[0].sha256
        == hashlib.sha256((tmp_path / "all.csv").read_bytes()).hexdigest()
    )
    assert any("from the median step of 'timestamp'" in line for line in draft.report)
    assert "user filter (at least 5 windows of every class): 2 kept, 0 dropped" in draft.report


def test_init_recognises_a_feature_table_and_previews_the_user_filter(tmp_path):
    rng = np.random.default_rng(2)
    users = ["u1"] * 20 + ["u2"] * 20 + ["u3"] * 7
    labels = ["a", "b"] * 10 + ["a", "b"] * 10 + ["a"] * 6 + ["b"]
    frame = pd.DataFrame(
        {"user": users, "label": labels, **{f"f{i}": rng.normal(size=47) for i in range(12)}}
    )
    frame.to_parquet(tmp_path / "features.parquet")
    draft = draft_entry(
        [tmp_path / "features.parquet"], "feat-own", output=tmp_path / "feat-own.toml"
    )
    assert draft.entry.reader == "feature-table" and draft.entry.recipe.name == "precomputed"
    assert draft.entry.reader_options["feature_cols"] == [f"f{i}" for i in range(12)]
    assert "user filter (at least 5 rows of every class): 2 kept, 1 dropped" in draft.report
    assert "  dropped u3: fewer than 5 rows of b: 1" in draft.report


def test_init_pins_an_archive_by_its_own_hash(tmp_path):
    hmp_folder(tmp_path / "src", np.random.default_rng(3))
    archive = tmp_path / "hmp.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted((tmp_path / "src").rglob("*.txt")):
            zf.write(path, "HMP_Dataset/" + path.relative_to(tmp_path / "src").as_posix())
        zf.writestr("HMP_Dataset/README.txt", "")  # documentation: left out, and said so
        zf.writestr("HMP_Dataset/MANUAL.pdf", "%PDF")
    draft = draft_entry([archive], "hmp-zip", output=tmp_path / "hmp-zip.toml", sampling_rate_hz=32)
    assert "  HMP_Dataset/README.txt: documentation by its name (README.txt)" in draft.report
    assert any(line.startswith("  HMP_Dataset/MANUAL.pdf: ") for line in draft.report)
    (spec,) = draft.entry.files
    assert spec.sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert spec.hashes == "first-use" and spec.path == "hmp.zip"
    (tmp_path / "hmp-zip.toml").write_text(draft.toml, encoding="utf-8")
    assert load_entry_file(tmp_path / "hmp-zip.toml").files[0].glob == "HMP_Dataset/*/*.txt"


def test_init_without_time_needs_a_sampling_rate(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hmp_folder(tmp_path / "recordings", np.random.default_rng(4))
    result = invoke("init", "recordings", "--name", "hmp-own")
    assert result.exit_code == 2
    assert (
        "no time column to estimate the sampling rate from; give it with --sampling-rate"
        in result.output
    )
    assert not (tmp_path / "hmp-own.toml").exists()


def test_init_on_official_motionsense_and_mhealth_layouts(tmp_path):
    from tests.official_formats_more import make_mhealth_zip, make_motionsense_zip

    make_motionsense_zip(tmp_path / "ms.zip", (1, 2, 3), np.random.default_rng(5))
    draft = draft_entry(
        [tmp_path / "ms.zip"], "ms", output=tmp_path / "ms.toml", sampling_rate_hz=50
    )
    assert (
        "(?P<label>[A-Za-z]+)[-_](?P<recording>\\d+)/" in draft.entry.reader_options["path_pattern"]
    )
    assert [c.code for c in draft.entry.classes] == ["dws", "jog", "sit", "std", "ups", "wlk"]
    assert "user filter (at least 5 windows of every class): 3 kept, 0 dropped" in draft.report

    make_mhealth_zip(tmp_path / "mh.zip", (1, 2), np.random.default_rng(6), n_samples=3000)
    draft = draft_entry(
        [tmp_path / "mh.zip"], "mh", output=tmp_path / "mh.toml", sampling_rate_hz=50
    )
    options = draft.entry.reader_options
    assert options["label_col"] == "c24" and options["columns"]["c24"] == 24
    assert "c24" not in options["channels"]
    assert any(line.startswith("label: column 24 (c24), whole numbers") for line in draft.report)
