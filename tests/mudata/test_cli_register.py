"""Datasets of one's own: a TOML entry and no code (long signals, feature tables), and plug-in readers."""

from __future__ import annotations

import hashlib
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
from mudata.cli import main
from mudata.errors import ChecksumError
from mudata.readers import get_reader

HEADER = """\
name = "{name}"
title = "A study of one's own"
version = "1"
homepage = "https://example.org/own"
licence = "CC0-1.0"
citation = "Someone (2026)"
sampling_rate_hz = 50
reader = "{reader}"
min_per_class = 5
"""


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_long_signals(
    folder: Path, users: list[int], n_per_class: int, rng: np.random.Generator
) -> None:
    folder.mkdir(parents=True)
    for user in users:
        parts = []
        for label in ("walk", "sit"):
            parts.append(
                pd.DataFrame(
                    {
                        "subject": user,
                        "activity": label,
                        "ax": rng.normal(size=n_per_class),
                        "ay": rng.normal(size=n_per_class),
                        "az": rng.normal(size=n_per_class),
                    }
                )
            )
        frame = pd.concat(parts, ignore_index=True)
        frame.insert(1, "t", np.arange(len(frame)) / 50.0)
        frame.to_csv(folder / f"s{user}.csv", index=False)


def long_signals_toml(folder: Path, users: list[int], name: str = "own-signals") -> str:
    members = "".join(
        f'\n[[files.members]]\npath = "s{u}.csv"\nsha256 = "{sha(folder / f"s{u}.csv")}"\n'
        for u in users
    )
    return HEADER.format(name=name, reader="long-signals") + textwrap.dedent(
        f"""
        [reader_options]
        format = "csv"
        members = "*.csv"
        user_col = "subject"
        label_col = "activity"
        time_col = "t"
        channels = ["ax", "ay", "az"]

        [recipe]
        name = "study-window"
        window = 50

        [[files]]
        name = "recordings"
        path = "{folder.name}"
        {members}
        [[sensors]]
        name = "wrist"
        channels = ["ax", "ay", "az"]

        [[classes]]
        code = "walk"
        name = "walking"

        [[classes]]
        code = "sit"
        name = "sitting"
        """
    )


def test_long_signals_entry_registers_fetches_and_windows(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    users = [1, 2, 3]
    write_long_signals(tmp_path / "recordings", users, 260, rng)
    entry_file = tmp_path / "own-signals.toml"
    entry_file.write_text(long_signals_toml(tmp_path / "recordings", users), encoding="utf-8")
    home = tmp_path / "home"

    runner = CliRunner()
    registered = runner.invoke(main, ["register", str(entry_file), "--data-home", str(home)])
    assert registered.exit_code == 0, registered.output
    assert (home / "registry" / "own-signals.toml").is_file()
    again = runner.invoke(main, ["register", str(entry_file), "--data-home", str(home)])
    assert again.exit_code == 2 and "--replace" in again.output

    fetched = runner.invoke(main, ["fetch", "own-signals", "--data-home", str(home)])
    assert fetched.exit_code == 0, fetched.output
    frame = mudata.load("own-signals", data_home=home).frame
    # 260 samples a class: starts 1, 51, ..., 251 (6), the last dropped -> 5 windows
    assert len(frame) == 3 * 2 * 5
    assert frame.groupby(["userid", "label"], sort=False).size().tolist() == [5] * 6
    assert list(frame["label"].iloc[:10]) == ["walking"] * 5 + ["sitting"] * 5
    assert frame.shape[1] == 2 + 16
    # the first window's mean of x is the mean of the smoothed first 50 samples
    raw = pd.read_csv(tmp_path / "recordings" / "s1.csv")
    x = raw["ax"].to_numpy()[:260]
    smooth = np.array(
        [x[i - 9 : i + 1].mean() if i >= 9 else x[i : i + 10].mean() for i in range(260)]
    )
    assert frame["meanX"].iloc[0] == pytest.approx(smooth[:50].mean(), abs=1e-12)


def test_registered_file_with_wrong_hash_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    write_long_signals(tmp_path / "recordings", [1], 260, rng)
    entry_file = tmp_path / "own-signals.toml"
    entry_file.write_text(long_signals_toml(tmp_path / "recordings", [1]), encoding="utf-8")
    CliRunner().invoke(main, ["register", str(entry_file), "--data-home", str(tmp_path / "home")])
    with open(tmp_path / "recordings" / "s1.csv", "a", encoding="utf-8") as fh:
        fh.write("1,99.0,walk,0,0,0\n")
    with pytest.raises(ChecksumError, match="s1.csv"):
        mudata.fetch("own-signals", data_home=tmp_path / "home")


def test_feature_table_entry(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    rows = pd.DataFrame(
        {
            "who": np.repeat([10, 20], 12),
            "what": np.tile(["up"] * 6 + ["down"] * 6, 2),
            "f1": rng.normal(size=24),
            "f2": rng.normal(size=24),
        }
    )
    table = tmp_path / "features.csv"
    rows.to_csv(table, index=False)
    text = HEADER.format(name="own-features", reader="feature-table") + textwrap.dedent(
        f"""
        [reader_options]
        format = "csv"
        user_col = "who"
        label_col = "what"

        [recipe]
        name = "precomputed"

        [[files]]
        name = "features.csv"
        path = "features.csv"
        sha256 = "{sha(table)}"

        [[classes]]
        code = "down"
        name = "down"

        [[classes]]
        code = "up"
        name = "up"
        """
    )
    (tmp_path / "own-features.toml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["register", str(tmp_path / "own-features.toml"), "--data-home", str(tmp_path / "h")]
    )
    assert result.exit_code == 0, result.output
    X, y, groups = mudata.load("own-features", data_home=tmp_path / "h", return_X_y=True)
    assert list(X.columns) == ["f1", "f2"]
    np.testing.assert_array_equal(X.to_numpy(), rows[["f1", "f2"]].to_numpy())
    assert (
        y.tolist() == rows["what"].tolist() and groups.tolist() == rows["who"].astype(str).tolist()
    )


def test_register_rejects_unknown_reader(tmp_path: Path) -> None:
    text = HEADER.format(name="odd", reader="no-such-reader") + textwrap.dedent(
        """
        [recipe]
        name = "precomputed"

        [[files]]
        name = "x.csv"
        path = "x.csv"

        [[classes]]
        code = "a"
        name = "a"

        [[classes]]
        code = "b"
        name = "b"
        """
    )
    (tmp_path / "odd.toml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["register", str(tmp_path / "odd.toml"), "--data-home", str(tmp_path / "h")]
    )
    assert result.exit_code == 2
    assert "unknown reader 'no-such-reader'" in result.output
    assert not (tmp_path / "h" / "registry" / "odd.toml").exists()


def test_register_reports_schema_errors_with_field(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('name = "bad"\ntitle = "x"\n', encoding="utf-8")
    result = CliRunner().invoke(
        main, ["register", str(tmp_path / "bad.toml"), "--data-home", str(tmp_path / "h")]
    )
    assert result.exit_code == 1
    assert "bad.toml" in result.output and "'licence' is a required property" in result.output


def test_plugin_reader_through_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader from another installed distribution, found by its entry point."""
    site = tmp_path / "site"
    (site / "myplug-0.1.dist-info").mkdir(parents=True)
    (site / "myplug-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: myplug\nVersion: 0.1\n"
    )
    (site / "myplug-0.1.dist-info" / "entry_points.txt").write_text(
        "[mudata.readers]\nmy-format = myplug:read_my_format\n"
    )
    (site / "myplug.py").write_text(
        "from mudata.readers.base import FeatureTable\n"
        "import pandas as pd\n"
        "def read_my_format(entry, sources):\n"
        "    return FeatureTable(pd.DataFrame({'userid': [1], 'label': ['a'], 'f': [0.0]}))\n"
    )
    monkeypatch.syspath_prepend(str(site))
    reader = get_reader("my-format")
    assert reader.__module__ == "myplug"
    assert reader(None, None).frame["f"].tolist() == [0.0]


def _feature_entry(tmp_path: Path, files_block: str) -> Path:
    """An entry for a 2-user, 2-class feature table ``features.csv`` beside it."""
    rows = pd.DataFrame(
        {
            "who": np.repeat([10, 20], 12),
            "what": np.tile(["up"] * 6 + ["down"] * 6, 2),
            "f1": np.arange(24, dtype=float),
        }
    )
    table = tmp_path / "own" / "features.csv"
    table.parent.mkdir()
    rows.to_csv(table, index=False)
    text = (
        HEADER.format(name="lit", reader="feature-table")
        + files_block.format(sha=sha(table))
        + textwrap.dedent(
            """
        [reader_options]
        user_col = "who"
        label_col = "what"

        [recipe]
        name = "precomputed"

        [[classes]]
        code = "down"
        name = "down"

        [[classes]]
        code = "up"
        name = "up"
        """
        )
    )
    path = tmp_path / "own" / "lit.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_register_makes_a_literal_string_path_absolute(tmp_path: Path) -> None:
    toml = _feature_entry(
        tmp_path, "\n[[files]]\nname = 'features.csv'\npath = 'features.csv'\nsha256 = '{sha}'\n"
    )
    result = CliRunner().invoke(main, ["register", str(toml), "--data-home", str(tmp_path / "h")])
    assert result.exit_code == 0, result.output
    installed = tomllib.loads(
        (tmp_path / "h" / "registry" / "lit.toml").read_text(encoding="utf-8")
    )
    assert installed["files"][0]["path"] == (tmp_path / "own" / "features.csv").resolve().as_posix()
    frame = mudata.load("lit", data_home=tmp_path / "h").frame
    assert len(frame) == 24


def test_register_makes_a_path_in_an_inline_table_absolute(tmp_path: Path) -> None:
    # The entry is parsed and written back with a TOML library, so any TOML
    # form of the same document is handled (a line-based rewrite missed this one).
    toml = _feature_entry(
        tmp_path, '\nfiles = [{{name = "features.csv", path = "features.csv", sha256 = "{sha}"}}]\n'
    )
    original = toml.read_bytes()
    result = CliRunner().invoke(main, ["register", str(toml), "--data-home", str(tmp_path / "h")])
    assert result.exit_code == 0, result.output
    installed_file = tmp_path / "h" / "registry" / "lit.toml"
    installed = tomllib.loads(installed_file.read_text(encoding="utf-8"))
    assert installed["files"] == [
        {
            "name": "features.csv",
            "path": (tmp_path / "own" / "features.csv").resolve().as_posix(),
            "sha256": sha(tmp_path / "own" / "features.csv"),
        }
    ]
    # Everything else is the same document; the user's file is untouched.
    source = tomllib.loads(original.decode("utf-8"))
    assert {k: v for k, v in installed.items() if k != "files"} == {
        k: v for k, v in source.items() if k != "files"
    }
    assert toml.read_bytes() == original
    assert [p.name for p in installed_file.parent.iterdir()] == [
        "lit.toml"
    ]  # no temporary file left
    assert len(mudata.load("lit", data_home=tmp_path / "h").frame) == 24


def test_register_keeps_absolute_and_member_paths_and_multiline_strings(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    write_long_signals(tmp_path / "recordings", [1], 60, rng)
    text = long_signals_toml(tmp_path / "recordings", [1]).replace(
        'citation = "Someone (2026)"',
        'citation = """\nSomeone, "Quoted" (2026).\nSecond line.\n"""',
    )
    (tmp_path / "own-signals.toml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["register", str(tmp_path / "own-signals.toml"), "--data-home", str(tmp_path / "h")]
    )
    assert result.exit_code == 0, result.output
    installed = tomllib.loads(
        (tmp_path / "h" / "registry" / "own-signals.toml").read_text(encoding="utf-8")
    )
    assert installed["files"][0]["path"] == (tmp_path / "recordings").resolve().as_posix()
    assert installed["files"][0]["members"][0]["path"] == "s1.csv"  # inside the release: unchanged
    assert installed["citation"] == 'Someone, "Quoted" (2026).\nSecond line.\n'


def test_register_into_a_data_home_that_is_a_file(tmp_path: Path) -> None:
    toml = _feature_entry(
        tmp_path, '\n[[files]]\nname = "features.csv"\npath = "features.csv"\nsha256 = "{sha}"\n'
    )
    home = tmp_path / "home"
    home.write_text("not a folder")
    result = CliRunner(env={"MUDATA_HOME": str(home)}).invoke(main, ["register", str(toml)])
    assert result.exit_code == 1, result.output
    assert (
        f"Error: cannot install 'lit' in {home / 'registry'}: expected a writable folder"
        in result.output
    )


def test_unhashed_local_file_edited_after_a_build_is_rebuilt(tmp_path: Path) -> None:
    # No sha256 in the entry: nothing in it changes when the user edits the file,
    # so the built table must be compared with the file itself.
    toml = _feature_entry(tmp_path, '\n[[files]]\nname = "features.csv"\npath = "features.csv"\n')
    home = tmp_path / "h"
    assert (
        CliRunner().invoke(main, ["register", str(toml), "--data-home", str(home)]).exit_code == 0
    )
    first = mudata.load("lit", data_home=home, allow_unverified=True).frame
    assert first["f1"].sum() == sum(range(24))  # 0 + 1 + ... + 23 = 276
    table = tmp_path / "own" / "features.csv"
    edited = pd.read_csv(table)
    edited["f1"] = 1.0
    edited.to_csv(table, index=False)
    second = mudata.load("lit", data_home=home, allow_unverified=True).frame
    assert second["f1"].sum() == 24.0
    # Unchanged since: the table is returned as built (same build time).
    third = mudata.load("lit", data_home=home, allow_unverified=True).frame
    assert third.attrs["provenance"]["built"] == second.attrs["provenance"]["built"]
    assert third.attrs["provenance"]["files"][0]["sha256"] == sha(table)


def test_feature_column_with_a_stray_text_value_is_named_when_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    toml = _feature_entry(tmp_path, '\n[[files]]\nname = "features.csv"\npath = "features.csv"\n')
    table = tmp_path / "own" / "features.csv"
    frame = pd.read_csv(table)
    frame["f2"] = ["1.5"] * 23 + ["1,5"]  # one decimal comma: the column reads as text
    frame.to_csv(table, index=False)
    assert (
        CliRunner()
        .invoke(main, ["register", str(toml), "--data-home", str(tmp_path / "h")])
        .exit_code
        == 0
    )
    with caplog.at_level("WARNING", logger="mudata.readers.tabular"):
        built = mudata.load("lit", data_home=tmp_path / "h", allow_unverified=True).frame
    assert list(built.columns) == ["userid", "label", "f1"]
    assert "non-numeric column(s) ['f2'] left out" in caplog.text


def test_registering_a_builtin_name_says_it_takes_its_place(tmp_path: Path) -> None:
    from mudata._resources import builtin_registry_dir

    text = (builtin_registry_dir() / "gestures.toml").read_text(encoding="utf-8")
    (tmp_path / "gestures.toml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["register", str(tmp_path / "gestures.toml"), "--data-home", str(tmp_path / "h")]
    )
    assert result.exit_code == 0, result.output
    assert "takes the place of the built-in 'gestures'" in result.stderr
    other = (
        (tmp_path / "gestures.toml")
        .read_text(encoding="utf-8")
        .replace('name = "gestures"', 'name = "gestures-b"')
    )
    (tmp_path / "gestures-b.toml").write_text(other, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["register", str(tmp_path / "gestures-b.toml"), "--data-home", str(tmp_path / "h")]
    )
    assert result.exit_code == 0 and "takes the place" not in result.stderr
