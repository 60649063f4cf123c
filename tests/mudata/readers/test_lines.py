"""Preambles and line shapes, read as published (issue 28, item 2).

Each file is written here byte for byte in one shape seen in public releases:
comment blocks (``#``, ``%``, ``//``) of different lengths per file, the
header on the last comment line, ARFF-like marker lines, a ``;`` terminator
before CRLF, values padded with spaces, a byte-order mark. Each goes through
``mudata init`` (which must find the options and state them in the draft),
``mudata register`` and ``mudata fetch``; the built windows are counted
against what the files were built with.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import mudata
from mudata.cli import main
from mudata.drafting.shapes import text_shape
from mudata.errors import ParseError, RegistryError
from mudata.readers.lines import LineOptions, checked_line_options, prepare_lines
from mudata.readers.long_stream import stream_long_signals
from mudata.readers.sources import Sources
from mudata.readers.tabular import read_long_signals
from mudata.registry.lookup import parse_entry

RATE = 50
ROWS = 400  # per class and file: 2 windows of 3 s at 50 Hz
USERS = ("s1", "s2")
CLASSES = (1, 2)


def _rows(rng: np.random.Generator, user: int):
    """(time in s, x, y, z, label) per sample of one file, two classes of ROWS samples."""
    for k, label in enumerate(CLASSES):
        xyz = rng.normal(0, 1, size=(ROWS, 3)) + label
        for i in range(ROWS):
            t = 1_700_000_000 + user * 10_000 + (k * ROWS + i) / RATE
            yield t, *xyz[i].round(3), label


def _write(folder: Path, lines_of) -> Path:
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for number, user in enumerate(USERS, 1):
        (folder / f"rec_{user}.csv").write_bytes(lines_of(number, list(_rows(rng, number))))
    return folder


def _hash_header(number, rows):
    preamble = [f"# device: phone {number}", "# app: recorder 2.1"] + ["# note"] * number
    lines = [*preamble, "#timestamp(ns),x,y,z,label"]
    lines += [f"{round(t * 1e9)},{x},{y},{z},{label}" for t, x, y, z, label in rows]
    return ("\r\n".join(lines) + "\r\n").encode()


def _percent_semicolons(number, rows):
    lines = [
        "% Accelerometer export",
        f"% Subject {number}",
        "% TimeStamp; Sample No; X-Axis; Y-Axis; Z-Axis; Activity;",
    ]
    lines += [
        f"{t:.2f}; {i}; {x:6.3f}; {y:6.3f}; {z:6.3f};{label};"
        for i, (t, x, y, z, label) in enumerate(rows)
    ]
    return ("\r\n".join(lines) + "\r\n").encode()


def _markers(number, rows):
    lines = ["@relation accel", "@attribute x numeric", "@attribute y numeric"]
    lines += ["@attribute z numeric", "@attribute class {1,2}", "", "@data"]
    lines += [f"{x},{y},{z},{label}" for _, x, y, z, label in rows]
    return ("\n".join(lines) + "\n").encode()


def _slashes_padded_bom(number, rows):
    lines = ["// exported by the logger", "// units: g", "t [s],x,y,z,label"]
    lines += [
        f"{t - 1_700_000_000:.2f},  {x:7.3f},{y:7.3f}, {z:7.3f},{label}"
        for t, x, y, z, label in rows
    ]
    return ("\ufeff" + "\r\n".join(lines) + "\r\n").encode()


def _percent_whitespace(number, rows):
    lines = [f"% recording {number}", "% x y z label"]
    lines += [f"{x:8.3f} {y:8.3f} {z:8.3f} {label}" for _, x, y, z, label in rows]
    return ("\n".join(lines) + "\n").encode()


def _terminated(number, rows):
    lines = ["x;y;z;label;"] + [f"{x};{y};{z};{label};" for _, x, y, z, label in rows]
    return ("\r\n".join(lines) + "\r\n").encode()


SHAPES = {
    # shape: (writer, init options, expected reader options, channels, sampling rate note)
    "hash-header": (
        _hash_header,
        [],
        {"comment": "#", "header_line": "last-comment", "time_col": "timestamp(ns)"},
        ["x", "y", "z"],
        "(2e+07, in ns, by the column's name)",
    ),
    "percent-semicolons": (
        _percent_semicolons,
        [],
        {
            "comment": "%",
            "header_line": "last-comment",
            "line_end": ";",
            "separator": ";",
            "time_col": "TimeStamp",
            "label_col": "Activity",
        },
        ["X-Axis", "Y-Axis", "Z-Axis"],
        "epoch seconds",
    ),
    "arff-markers": (
        _markers,
        ["--sampling-rate", str(RATE)],
        {"skip_lines": 7, "header": False, "label_col": "c4"},
        ["c1", "c2", "c3"],
        "as given",
    ),
    "slashes-padded-bom": (
        _slashes_padded_bom,
        [],
        {"comment": "//", "time_col": "t [s]"},
        ["x", "y", "z"],
        "(0.02, in s, by the column's name)",
    ),
    "percent-whitespace": (
        _percent_whitespace,
        ["--sampling-rate", str(RATE), "--kind", "signals"],
        {"format": "text", "comment": "%", "header_line": "last-comment", "label_col": "label"},
        ["x", "y", "z"],
        "as given",
    ),
    "terminated": (
        _terminated,
        ["--sampling-rate", str(RATE), "--kind", "signals"],  # i.i.d. values, no time
        {"line_end": ";", "separator": ";"},
        ["x", "y", "z"],
        "as given",
    ),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_init_reads_the_shape_as_published_and_the_draft_builds(tmp_path, shape):
    writer, args, expected, channels, rate_note = SHAPES[shape]
    files = _write(tmp_path / "data", writer)
    toml = tmp_path / "shape.toml"
    runner = CliRunner()
    init = runner.invoke(
        main,
        ["init", str(files), "--name", "shape", "-o", str(toml), "--min-per-class", "1", *args],
    )
    assert init.exit_code == 0, init.output
    text = toml.read_text(encoding="utf-8")
    options = tomllib.loads(text)["reader_options"]
    assert {k: options.get(k) for k in expected} == expected
    assert options["channels"] == channels
    assert rate_note in next(line for line in init.output.splitlines() if "sampling rate" in line)
    for key in ("comment", "header_line", "line_end", "skip_lines"):
        if key in expected:  # stated in the draft, with the evidence
            line = next(line for line in text.splitlines() if line.startswith(f"{key} = "))
            assert "  # " in line, line
            assert f"{key} = " in init.output
    home = str(tmp_path / "home")
    registered = runner.invoke(main, ["register", str(toml), "--data-home", home, "--draft-ok"])
    assert registered.exit_code == 0, registered.output
    fetched = runner.invoke(main, ["fetch", "shape", "--data-home", home])
    assert fetched.exit_code == 0, fetched.output
    frame = mudata.load("shape", data_home=home).frame
    windows = ROWS // (3 * RATE)
    counts = frame.groupby(["userid", "label"]).size()
    assert sorted(frame["userid"].unique()) == ["s1", "s2"]
    assert (counts == windows).all() and len(counts) == len(USERS) * len(CLASSES), counts
    # the channels are the values written (mean about the label), not a counter or a time
    assert frame["meanX"].between(0.5, 2.5).all(), frame["meanX"]


def test_a_header_whose_first_column_is_named_by_a_comment_mark_stays_a_header():
    shape = text_shape("#,x,y,z\n1,2,3,4\n5,6,7,8\n9,1,2,3\n")
    assert (shape.header, shape.fields, shape.comment) == (True, ["#", "x", "y", "z"], None)
    # a label column of words on every line does not make the first line a header
    shape = text_shape("1,2,3,walk\n4,5,6,walk\n7,8,9,sit\n1,1,1,sit\n")
    assert not shape.header


def test_prepare_lines_by_line_number_and_its_errors():
    text = "title\r\nx,y\r\n1,2\r\n3,4\r\n"
    assert prepare_lines(text, "m", LineOptions(header_line=2)) == "x,y\n1,2\r\n3,4\r\n"
    assert prepare_lines(text, "m", LineOptions(skip_lines=2)) == "1,2\r\n3,4\r\n"
    # a comment line inside the data goes too; the header keeps no spaces around the separator
    text = "%a; b\n1;2\n% pause\n3;4\n"
    options = LineOptions(comment="%", header_line="last-comment")
    assert prepare_lines(text, "m", options, ";") == "a;b\n1;2\n3;4\n"
    assert prepare_lines("1;2; \n3;4;", "m", LineOptions(line_end=";")) == "1;2\n3;4"
    with pytest.raises(ParseError, match=r"m: reader_options.header_line is 9, but the file has 4"):
        prepare_lines("a\nb\nc\nd\n", "m", LineOptions(header_line=9))
    with pytest.raises(ParseError, match=r"no line starting with '#' comes before the data"):
        prepare_lines("x,y\n1,2\n", "m", LineOptions(comment="#", header_line="last-comment"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"skip_lines": -1}, "'reader_options.skip_lines': -1 is not a whole number"),
        ({"skip_lines": True}, "'reader_options.skip_lines': True is not a whole number"),
        ({"comment": ""}, "'reader_options.comment': '' is not a mark"),
        ({"line_end": "\n"}, "'reader_options.line_end': '\\\\n' is not a mark"),
        ({"header_line": 0}, "'reader_options.header_line': 0 is not a line number"),
        ({"header_line": "last-comment"}, "needs reader_options.comment"),
        ({"header_line": 2, "header": False}, "names a header line, but header = false"),
    ],
)
def test_bad_line_options_are_refused_naming_the_field(options, message):
    with pytest.raises(RegistryError, match=message):
        checked_line_options(options, "invalid registry entry 'x'")


def test_the_schema_refuses_a_bad_line_option_at_register(tmp_path):
    files = _write(tmp_path / "data", _terminated)
    toml = tmp_path / "shape.toml"
    runner = CliRunner()
    args = ["init", str(files), "--name", "shape", "-o", str(toml), "--sampling-rate", "50"]
    args += ["--kind", "signals"]
    assert runner.invoke(main, args).exit_code == 0
    text = toml.read_text(encoding="utf-8").replace('line_end = ";"', "line_end = 5")
    toml.write_text(text, encoding="utf-8")
    home = str(tmp_path / "home")
    result = runner.invoke(main, ["register", str(toml), "--data-home", home, "--draft-ok"])
    assert result.exit_code != 0 and "reader_options.line_end" in result.output, result.output


@pytest.mark.parametrize("shape", ["hash-header", "terminated", "percent-semicolons"])
def test_a_stream_of_a_shaped_file_is_the_whole_read(tmp_path, shape):
    """long-signals in chunks: a member with a preamble is read whole, one with a
    terminator alone in blocks of lines; the table is the whole reader's either way."""
    writer, args, *_ = SHAPES[shape]
    files = _write(tmp_path / "data", writer)
    toml = tmp_path / "shape.toml"
    init = CliRunner().invoke(main, ["init", str(files), "--name", "shape", "-o", str(toml), *args])
    assert init.exit_code == 0, init.output
    entry = parse_entry(tomllib.loads(toml.read_text(encoding="utf-8")), source=toml)
    whole = read_long_signals(entry, Sources([files])).frame
    chunks = [c.frame for c in stream_long_signals(entry, Sources([files]), chunk_bytes=4096)]
    # a whole read gives one chunk per file; blocks of 4 KiB give more
    assert len(chunks) > (2 if shape == "terminated" else 1)
    assert len(whole) == len(USERS) * len(CLASSES) * ROWS
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole)
