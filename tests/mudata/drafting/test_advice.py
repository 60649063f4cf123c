"""``mudata init`` tells the option to give, never a reader's or the registry's field (issue 28, 6).

Each release below is written by the test in a shape that makes a reader or
the registry refuse the draft; init's output must name the init option that
fixes it, and no entry field (``reader_options.``, ``field '``) may reach it.
"""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
import mudata.readers
from mudata.cli import main
from mudata.drafting.advice import as_advice, plain_detail
from mudata.drafting.draft import draft_entry
from mudata.drafting.records import Choices
from mudata.errors import (
    REASON_CODES,
    EmptyResultError,
    MudataUsageError,
    ParseError,
    Reason,
    RegistryError,
)
from tests.conftest import extract_release

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
    ("reason", "option"),
    [
        (Reason("missing", "user_col"), "--user"),
        (Reason("taken", "label_col"), "--label"),
        (Reason("missing", "channels"), "--channels"),
        (Reason("absent", "sensors"), "--channels"),
        (Reason("invalid", "path_pattern"), "--path-pattern"),
        (Reason("no-match", "streams.select"), "--stream"),
        (Reason("goes-back", "recording_col"), "--recording"),
        (Reason("not-numeric", "feature_cols"), "--features"),
        (Reason("unreadable", "members"), "--exclude"),
        (Reason("invalid", "separator"), "--exclude"),
        (Reason("empty", "recipe.window"), "--window"),
    ],
)
def test_the_reason_chooses_the_option_not_the_words(reason, option):
    """The message below names every option's words; only the reason may choose."""
    misleading = "channels user_col label_col goes back no complete window path_pattern streams"
    for error in (ParseError(misleading, reason=reason), RegistryError(misleading, reason=reason)):
        advice = str(as_advice(error))
        assert option in advice.splitlines()[0], advice
        assert len(advice.splitlines()) <= 2  # the reader's words as a second line at most
        _assert_no_internal_words(advice)


def test_an_error_without_a_reason_is_advised_by_its_field_only():
    """A third-party reader's or the schema's error: its field, else the general line."""
    schema = RegistryError(
        "invalid registry entry 'x': field 'sensors': recipe 'study-window' needs a sensor"
    )
    assert "--channels" in str(as_advice(schema)).splitlines()[0]
    prose = ParseError("a.csv: no stream matches the user_col; time goes back")
    first = str(as_advice(prose)).splitlines()[0]
    assert first.endswith("or leave the file out with --exclude GLOB")  # the general line
    assert "--stream" not in first and "--recording" not in first


def test_a_reason_survives_pickling_and_refuses_unknown_codes():
    error = pickle.loads(pickle.dumps(ParseError("m", reason=Reason("blank", "user_col"))))
    assert error.reason == Reason("blank", "user_col")
    assert ParseError("m").reason is None
    with pytest.raises(ValueError, match="unknown reason code"):
        Reason("typo", "user_col")


#: The readers init drafts entries for: every refusal of theirs carries a reason.
DRAFTED_READERS = (
    "__init__", "_text", "aligned", "annotations", "column_values", "decode", "intervals",
    "lines", "long_options", "long_stream", "matlab", "members", "roles", "side_files",
    "sources", "stream_clocks", "stream_options", "streams", "tabular", "time_columns", "times",
)  # fmt: skip


def _refusals(module: str) -> list[ast.Call]:
    path = Path(mudata.readers.__file__).parent / f"{module}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("ParseError", "RegistryError")
    ]


@pytest.mark.parametrize("module", DRAFTED_READERS)
def test_every_refusal_of_a_drafted_reader_carries_its_reason(module):
    calls = _refusals(module)
    assert calls, module  # the walk finds the raise sites
    bare = [node.lineno for node in calls if not any(k.arg == "reason" for k in node.keywords)]
    assert bare == [], f"readers/{module}.py: ParseError/RegistryError without reason= at {bare}"
    codes = [
        k.value.args[0].value
        for node in calls
        for k in node.keywords
        if k.arg == "reason"
        and isinstance(k.value, ast.Call)
        and isinstance(k.value.args[0], ast.Constant)
    ]
    assert set(codes) <= set(REASON_CODES)


#: Beyond the readers, the build steps a draft is checked through: (module, errors).
DRAFTED_STEPS = (
    ("records/classes.py", ("ParseError", "RegistryError")),
    ("building/userfilter.py", ("EmptyResultError",)),
)


@pytest.mark.parametrize(("module", "errors"), DRAFTED_STEPS)
def test_every_refusal_of_a_drafted_build_step_carries_its_reason(module, errors):
    path = Path(mudata.__file__).parent / module
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in errors
    ]
    assert calls, module
    bare = [node.lineno for node in calls if not any(k.arg == "reason" for k in node.keywords)]
    assert bare == [], f"{module}: {errors} without reason= at {bare}"


def test_too_few_users_are_advised_the_filter_options_not_the_columns():
    """The user filter's refusal reaches init's advice as --min-per-class and --window."""
    from mudata.building.userfilter import filter_users

    table = pd.DataFrame({"userid": ["a"] * 3 + ["b"] * 3, "label": ["x", "y", "x"] * 2})
    with pytest.raises(EmptyResultError) as caught:
        filter_users(table, ["x", "y"], 5, min_users=2, dataset="t")
    assert caught.value.reason == Reason("empty", "min_per_class")
    advice = str(as_advice(caught.value))
    assert "--min-per-class" in advice and "--window" in advice
    assert "--user" not in advice.splitlines()[0]


def test_the_readers_refusals_reach_the_advice_with_their_reason(tmp_path):
    """Triggered, not only read: a time that goes back, the label column as a feature."""
    folder = _signals(tmp_path / "release", np.random.default_rng(3))
    with pytest.raises(MudataUsageError) as caught:
        draft_entry([folder], "mine", output=tmp_path / "m.toml", choices=Choices(time="ax"))
    assert caught.value.__cause__.reason == Reason("goes-back", "recording_col")
    features = _features(tmp_path / "table", np.random.default_rng(4))
    with pytest.raises(MudataUsageError) as caught:
        choose = Choices(user="f1", features=("activity",))
        draft_entry([features], "t", output=tmp_path / "t.toml", kind="features", choices=choose)
    assert caught.value.__cause__.reason == Reason("taken", "feature_cols")  # the label


def test_the_detail_keeps_the_readers_words_in_options():
    detail = plain_detail("a.csv: name it as reader_options.recording_col, or in path_pattern")
    assert detail == "a.csv: name it as --recording, or in --path-pattern"
    assert len(plain_detail("x " * 1000)) <= 300


@pytest.mark.release
@pytest.mark.parametrize(("how", "row"), [("cut", 4), ("cut", 299), ("footer", 1351)])
def test_a_row_without_its_time_is_not_sent_to_name_the_time_column(
    tmp_path: Path, how: str, row: int
) -> None:
    """GeoTec's first file with a line cut to its first field, or a footer line:
    init found the time column and then advised naming it with --time COL."""
    extract_release("geotec_sp_sw_har_s01-s09", tmp_path / "x")
    first = next((tmp_path / "x").rglob("s01_01_sp.csv"))
    lines = first.read_text().splitlines(keepends=True)
    if how == "cut":
        lines[row + 1] = lines[row + 1].split(",")[0] + "\n"
    else:
        lines.append("END\n")
    first.write_text("".join(lines))
    result = CliRunner().invoke(
        main, ["init", str(tmp_path / "x"), "--name", "g", "-o", str(tmp_path / "g.toml")]
    )
    assert result.exit_code != 0
    assert "a row has no time (a line cut short, or a stray line such as a footer?)" in (
        result.output
    ), result.output
    assert f"time column 'timestamp' is blank at row {row})" in result.output
    assert "--time COL" not in result.output
