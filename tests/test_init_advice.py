"""``mudata init`` tells the option to give, never a reader's or the registry's field (issue 28, 6).

Each release below is written by the test in a shape that makes a reader or
the registry refuse the draft; init's output must name the init option that
fixes it, and no entry field (``reader_options.``, ``field '``) may reach it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mudata.cli import main
from mudata.drafting.advice import as_advice, plain_detail
from mudata.errors import ParseError, RegistryError

#: Words of an entry's fields that a user of init must never be shown.
INTERNAL = ("reader_options", "field '", "_col", "path_pattern", "feature_cols")


def _signals(root: Path, rng: np.random.Generator, users=(1, 2, 3), n=300) -> Path:
    """One file per user and activity: a time column in seconds and three channels."""
    root.mkdir()
    for user in users:
        for activity in ("walk", "sit"):
            values = rng.normal(size=(n, 3)).round(3)
            times = np.arange(n) * 0.02
            rows = [f"{t:.2f},{a},{b},{c}" for t, (a, b, c) in zip(times, values, strict=True)]
            text = "time,ax,ay,az\n" + "\n".join(rows) + "\n"
            (root / f"s{user}_{activity}.csv").write_text(text)
    return root


def _features(root: Path, rng: np.random.Generator, n=200) -> Path:
    """A feature table with no user column, in a file name that holds no user."""
    root.mkdir()
    rows = [
        f"{a:.3f},{b:.3f},{['walk', 'sit'][i % 2]}"
        for i, (a, b) in enumerate(rng.normal(size=(n, 2)))
    ]
    (root / "features.csv").write_text("f1,f2,activity\n" + "\n".join(rows) + "\n")
    return root


def _init(tmp_path: Path, folder: Path, *options: str) -> tuple[int, str]:
    args = ["init", str(folder), "--name", "mine", "-o", str(tmp_path / "mine.toml"), *options]
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def _assert_no_internal_words(output: str) -> None:
    leaked = [word for word in INTERNAL if word in output]
    assert leaked == [], output


@pytest.mark.parametrize(
    ("shape", "options", "option_named"),
    [
        # The time column given as a channel: the registry refuses the channels field.
        ("signals", ("--channels", "time"), "--channels"),
        # A window longer than every recording: the build makes no feature row.
        ("signals", ("--window", "100"), "--window"),
        # A channel given as the time: it goes back inside a recording.
        ("signals", ("--time", "ax"), "--recording"),
        # A text column given as a feature of a feature table.
        (
            "features",
            ("--user", "f1", "--kind", "features", "--features", "activity"),
            "--features",
        ),
        # Neither a user column nor a user in the file name.
        ("features", (), "--user"),
    ],
)
def test_a_refused_draft_names_the_option_to_give(tmp_path, shape, options, option_named):
    rng = np.random.default_rng(28)
    make = _signals if shape == "signals" else _features
    folder = make(tmp_path / "release", rng)
    code, output = _init(tmp_path, folder, *options)
    assert code != 0
    assert "mudata init:" in output
    assert option_named in output
    assert "Traceback" not in output
    _assert_no_internal_words(output)
    assert not (tmp_path / "mine.toml").exists()  # nothing half-written


def test_a_file_of_no_signal_column_names_channels_and_kind(tmp_path):
    folder = tmp_path / "release"
    folder.mkdir()
    rows = "\n".join(f"{i * 0.02:.2f},1,walk" for i in range(200))
    (folder / "s1_walk.csv").write_text("time,user,activity\n" + rows + "\n")
    code, output = _init(tmp_path, folder)
    assert code != 0
    assert "--channels" in output and "--kind features" in output
    assert "{}" not in output  # the empty "left out" mapping it printed before
    for column in ("'time'", "'user'", "'activity'"):
        assert column in output
    _assert_no_internal_words(output)


@pytest.mark.parametrize(
    ("error", "option"),
    [
        (
            RegistryError("dataset 'x': reader 'feature-table' needs reader_options.user_col"),
            "--user",
        ),
        (
            RegistryError("dataset 'x': reader 'feature-table' needs reader_options.label_col"),
            "--label",
        ),
        (
            RegistryError(
                "invalid registry entry 'x': field 'sensors': recipe 'study-window' needs at least one sensor"
            ),
            "--channels",
        ),
        (
            RegistryError(
                "invalid registry entry 'x': field 'reader_options.path_pattern': no {user} group"
            ),
            "--path-pattern",
        ),
        (ParseError("a.csv: no stream matches reader_options.streams.select 'k=1'"), "--stream"),
    ],
)
def test_each_kind_of_message_becomes_its_option(error, option):
    """The messages the issue quotes, as the registry and readers word them."""
    advice = str(as_advice(error))
    assert option in advice.splitlines()[0]
    assert len(advice.splitlines()) <= 2  # the reader's words as a second line at most
    _assert_no_internal_words(advice)


def test_the_detail_keeps_the_readers_words_in_options():
    detail = plain_detail("a.csv: name it as reader_options.recording_col, or in path_pattern")
    assert detail == "a.csv: name it as --recording, or in --path-pattern"
    assert len(plain_detail("x " * 1000)) <= 300
