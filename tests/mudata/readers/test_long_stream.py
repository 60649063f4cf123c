"""The long-signals reader in chunks (:mod:`mudata.readers.long_stream`) against the whole read.

:func:`mudata.readers.tabular.read_long_signals` is the reference: every release
here is read both ways, and the chunks laid end to end must be its table bit for
bit (dtypes, ids, labels, segment and recording numbers, channel bits, the
``time_repeats`` counter), or raise its error, whatever the chunk size.
Releases are written in the shape of real ones: a README and a codebook beside
the data, a row counter, repeated timestamps, users split across files and
interleaved inside one, gzip members, CRLF line ends, a BOM, and a label column
that reads as numbers for the first thousand rows and as text after.
"""

from __future__ import annotations

import datetime
import gzip
import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudata.building.labelled import labelled_features
from mudata.building.options import BuildOptions
from mudata.building.pipeline import build_frame
from mudata.building.userfilter import filter_users
from mudata.building.validate import validate_table
from mudata.errors import LimitError, ParseError
from mudata.publish.store import table_fingerprint
from mudata.readers import get_stream_reader
from mudata.readers.long_stream import stream_long_signals
from mudata.readers.sources import Sources
from mudata.readers.spool import Spool
from mudata.readers.tabular import read_long_signals
from mudata.records.entry import RemoteFile
from tests.entries import entry
from tests.mudata.building.test_study_windows import assert_same_rows

CLASSES = [(1, "sitting"), (2, "standing"), ("walk", "walking"), ("run", "running")]
OPTIONS = {
    "format": "csv",
    "members": "data/*.csv*",
    "user_col": "subject",
    "label_col": "activity",
    "time_col": "timestamp",
    "recording_col": "trial",
}
# Blocks of one byte take tens of seconds: .ci/run runs that size with -m slow.
SIZES = [pytest.param(1, marks=pytest.mark.slow), 300, 4096, 10**9]


def signals(
    rng: np.random.Generator, n: int, users: list[str], *, text_after: int | None
) -> pd.DataFrame:
    """``n`` samples of ``users`` interleaved in runs, with repeated times and a counter.

    The label is a number (1, 2) up to row ``text_after`` and a word after it,
    so that a block read alone types it otherwise than the whole file.
    """
    run = rng.integers(1, 40, size=n)
    starts = np.cumsum(run)
    starts = starts[starts < n]
    lengths = np.diff([0, *starts, n])
    user = np.repeat(rng.choice(users, size=lengths.size), lengths)
    labels = np.repeat(rng.choice([1, 2], size=lengths.size), lengths).astype(object)
    if text_after is not None:
        labels[text_after:] = np.where(labels[text_after:] == 1, "walk", "run")
    trial = np.repeat(rng.integers(1, 3, size=lengths.size), lengths)
    frame = pd.DataFrame({"row": np.arange(n), "subject": user, "trial": trial})
    frame["activity"] = labels
    # Each (user, trial) has its own clock, 20 ms a step, a tenth of the steps repeated.
    steps = np.where(rng.random(n) < 0.1, 0, 20)
    key = frame["subject"] + "/" + frame["trial"].astype(str)
    frame.insert(1, "timestamp", 1_600_000_000_000 + steps.cumsum())
    frame["timestamp"] = frame.groupby(key)["timestamp"].cummax()
    values = rng.normal(size=(n, 3)).round(6)
    values[rng.random((n, 3)) < 0.003] = np.nan
    for i, axis in enumerate(("ax", "ay", "az")):
        frame[axis] = values[:, i]
    return frame


def csv_bytes(frame: pd.DataFrame, *, crlf: bool = False, bom: bool = False) -> bytes:
    text = frame.to_csv(index=False, lineterminator="\r\n" if crlf else "\n")
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode()


def write_release(root: Path, seed: int = 0, *, n: int = 600) -> Path:
    """A release folder: README, codebook, and three data files of three shapes."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "README.txt").write_text("Wrist accelerometer, 50 Hz.\nSee codebook.csv.\n")
    (root / "codebook.csv").write_text("code,activity\n1,sitting\n2,standing\nwalk,walking\n")
    data = root / "data"
    data.mkdir(exist_ok=True)
    (data / "part1.csv").write_bytes(
        csv_bytes(signals(rng, n, ["P01", "P02"], text_after=n - 100), crlf=True, bom=True)
    )
    with gzip.open(data / "part2.csv.gz", "wb") as fh:
        fh.write(csv_bytes(signals(rng, n, ["P02", "P03", "007"], text_after=None)))
    (data / "part3.csv").write_bytes(csv_bytes(signals(rng, n // 3, ["P04"], text_after=0)))
    return root


def long_entry(classes=CLASSES, **options: object):
    return entry("long-signals", {**OPTIONS, **options}, classes)


def streamed(entry_, sources: Sources, size: int) -> tuple[pd.DataFrame, dict]:
    stream = stream_long_signals(entry_, sources, chunk_bytes=size)
    chunks = [c.frame for c in stream]
    assert all(len(c) for c in chunks)
    return pd.concat(chunks, ignore_index=True), stream.attrs


def assert_same_table(got: pd.DataFrame, attrs: dict, want: pd.DataFrame) -> None:
    """The same columns, dtypes and values; channels compared as bits (NaN too)."""
    assert list(got.columns) == list(want.columns)
    assert list(got.dtypes) == list(want.dtypes)
    for column in ("userid", "label", "segment", "recording"):
        assert got[column].tolist() == want[column].tolist(), column
        assert [type(v) for v in got[column]] == [type(v) for v in want[column]], column
    channels = [c for c in want.columns if c not in ("userid", "label", "segment", "recording")]
    np.testing.assert_array_equal(
        got[channels].to_numpy(np.float64).view(np.int64),
        want[channels].to_numpy(np.float64).view(np.int64),
    )
    assert attrs["time_repeats"] == want.attrs["time_repeats"]


# --------------------------------------------------------------------------
# The same table
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return write_release(tmp_path_factory.mktemp("release"), n=600)


@pytest.mark.parametrize("size", SIZES)
def test_every_chunk_size_gives_the_whole_table(release, size):
    entry_ = long_entry()
    want = read_long_signals(entry_, Sources([release])).frame
    # What makes the release hard is there: a label typed as text only in the
    # last 100 rows of part1.csv, ids mixing letters and digits, repeats.
    # part1.csv's codes 1 and 2 are text ("1"), part2.csv's numbers.
    assert want["label"].map(type).value_counts().to_dict() == {str: 600 + 200, int: 600}
    assert sum(want.attrs["time_repeats"].values()) > 100
    got, attrs = streamed(entry_, Sources([release]), size)
    assert_same_table(got, attrs, want)


VARIANTS = {
    "recordings are users": {"recording_col": None, "time_order": "file"},
    "segments from a column": {"segment_col": "trial", "recording_col": None, "time_order": "file"},
    "no time column": {"time_col": None},
    "a counter as a channel": {"channels": ["ax", "ay", "az", "row"]},
}


@pytest.mark.parametrize("variant", list(VARIANTS), ids=list(VARIANTS))
@pytest.mark.parametrize("size", [97, 10**9])
def test_other_options_give_the_whole_table(release, variant, size):
    options = {**OPTIONS, **VARIANTS[variant]}
    entry_ = entry("long-signals", {k: v for k, v in options.items() if v is not None}, CLASSES)
    want = read_long_signals(entry_, Sources([release])).frame
    got, attrs = streamed(entry_, Sources([release]), size)
    assert_same_table(got, attrs, want)


def test_text_without_header_and_ids_from_paths(tmp_path):
    rng = np.random.default_rng(5)
    for user in ("f1", "m2"):
        for label in ("walk", "run"):
            folder = tmp_path / label
            folder.mkdir(exist_ok=True)
            values = rng.normal(size=(120, 3))
            text = "\n".join("  ".join(f"{v:.5f}" for v in row) for row in values)
            (folder / f"{user}_t1.txt").write_text(text + "\n\n")
    entry_ = entry(
        "long-signals",
        {
            "format": "text",
            "members": "*.txt",
            "header": False,
            "columns": {"ax": 1, "ay": 2, "az": 3},
            "path_pattern": r"(?P<label>[a-z]+)/(?P<user>[a-z]+\d+)_t(?P<recording>\d+)\.txt$",
        },
        [("walk", "walking"), ("run", "running")],
    )
    want = read_long_signals(entry_, Sources([tmp_path])).frame
    for size in (1, 100, 10**9):
        got, attrs = streamed(entry_, Sources([tmp_path]), size)
        assert_same_table(got, attrs, want)


@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 300),
    text_after=st.one_of(st.none(), st.integers(0, 300)),
    size=st.integers(1, 3000),
    crlf=st.booleans(),
)
@settings(max_examples=25, deadline=None)
def test_any_cut_gives_the_whole_table(tmp_path_factory, seed, n, text_after, size, crlf):
    root = tmp_path_factory.mktemp("cut")
    frame = signals(np.random.default_rng(seed), n, ["1", "A", "02"], text_after=text_after)
    (root / "data").mkdir()
    (root / "data" / "s.csv").write_bytes(csv_bytes(frame, crlf=crlf))
    entry_ = long_entry()
    want = read_long_signals(entry_, Sources([root])).frame
    got, attrs = streamed(entry_, Sources([root]), size)
    assert_same_table(got, attrs, want)


def test_long_signals_is_built_through_its_stream_reader():
    assert get_stream_reader("long-signals") is stream_long_signals


# --------------------------------------------------------------------------
# The same errors
# --------------------------------------------------------------------------


def edited(root: Path, edit) -> Path:
    """A one-file release whose CSV lines went through ``edit`` (a list of lines, changed in place)."""
    frame = signals(np.random.default_rng(9), 400, ["P01", "P02"], text_after=None)
    lines = csv_bytes(frame).decode().splitlines()
    edit(lines)
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "s.csv").write_bytes(
        ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    )
    return root


def set_field(lines: list[str], line: int, column: str, value: str) -> None:
    names = lines[0].split(",")
    fields = lines[line].split(",")
    fields[names.index(column)] = value
    lines[line] = ",".join(fields)


def _several(lines):
    # A bad channel early and a blank user late: the whole reader checks users first.
    set_field(lines, 20, "ay", "oops")
    set_field(lines, 390, "subject", " ")


def _back_then_channel(lines):
    # A time going back late, a bad channel early: time is checked before channels.
    set_field(lines, 30, "az", "x")
    names = lines[0].split(",")
    before = int(lines[350].split(",")[names.index("timestamp")])
    trial, subject = (lines[350].split(",")[names.index(c)] for c in ("trial", "subject"))
    for i in range(351, 400):
        fields = lines[i].split(",")
        if fields[names.index("trial")] == trial and fields[names.index("subject")] == subject:
            set_field(lines, i, "timestamp", str(before - 1000))
            break


EDITS = {
    "blank user late": lambda lines: set_field(lines, 380, "subject", ""),
    "ids that merge": lambda lines: set_field(lines, 300, "subject", " P01"),
    "user before channel": _several,
    "time back before channel": _back_then_channel,
    "time not a time": lambda lines: set_field(lines, 250, "timestamp", "soon"),
    "blank time": lambda lines: set_field(lines, 350, "timestamp", ""),
    "channel not a number": lambda lines: set_field(lines, 333, "az", "1,5"),
    "too many fields": lambda lines: lines.__setitem__(200, lines[200] + ",9"),
    "one more field on a first data line": lambda lines: lines.__setitem__(1, lines[1] + ",9"),
    "missing column": lambda lines: lines.__setitem__(0, lines[0].replace("ax", "a_x")),
    "bad UTF-8 late": lambda lines: lines.__setitem__(390, lines[390] + "\udcff"),
    "empty file": lambda lines: lines.clear(),
}


# Blocks of one byte cost seconds per case: .ci/run runs them with -m slow.
@pytest.mark.parametrize("size", [pytest.param(1, marks=pytest.mark.slow), 333, 10**9])
@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_errors_are_the_whole_read_s(tmp_path, edit, size):
    root = edited(tmp_path, EDITS[edit])
    entry_ = long_entry()
    with pytest.raises((ParseError, LimitError)) as whole:
        read_long_signals(entry_, Sources([root]))
    with pytest.raises(type(whole.value)) as chunked:
        streamed(entry_, Sources([root]), size)
    assert str(chunked.value) == str(whole.value), size


def test_time_going_back_names_the_first_recording_s_row_and_counts_recordings(tmp_path):
    def edit(lines):
        # Two recordings go back; the whole reader names the one seen first in the file.
        names = lines[0].split(",")
        col = names.index("timestamp")
        for row in (370, 120):
            fields = lines[row].split(",")
            fields[col] = str(int(fields[col]) - 10**6)
            lines[row] = ",".join(fields)

    root = edited(tmp_path, edit)
    entry_ = long_entry()
    with pytest.raises(ParseError, match="goes back") as whole:
        read_long_signals(entry_, Sources([root]))
    for size in (1, 2000, 10**9):
        with pytest.raises(ParseError) as chunked:
            streamed(entry_, Sources([root]), size)
        assert str(chunked.value) == str(whole.value)


def test_a_member_s_column_error_comes_before_an_earlier_member_s_value_error(tmp_path):
    root = write_release(tmp_path, n=600)
    frame = signals(np.random.default_rng(1), 600, ["P01"], text_after=None)
    frame.loc[500, "subject"] = ""
    (root / "data" / "part1.csv").write_bytes(csv_bytes(frame))
    (root / "data" / "part3.csv").write_bytes(b"row,subject\n1,P09\n")
    entry_ = long_entry()
    with pytest.raises(ParseError, match="part3.csv: missing column") as whole:
        read_long_signals(entry_, Sources([root]))
    with pytest.raises(ParseError) as chunked:
        streamed(entry_, Sources([root]), 100)
    assert str(chunked.value) == str(whole.value)


# --------------------------------------------------------------------------
# Dated times, UTC offsets and long lines: the same outcome
# --------------------------------------------------------------------------

#: How :func:`dated` writes the times; the ``-then-`` modes and the daylight-saving
#: changes switch at a given row.
TIME_MODES = (
    "naive",
    "utc",
    "offset",
    "dst-forward",
    "dst-back",
    "aware-then-naive",
    "naive-then-aware",
)


def dated(frame: pd.DataFrame, mode: str, at: int) -> pd.DataFrame:
    """``frame`` with its times (ms since 1970, UTC) written as ISO text, switching at row ``at``.

    ``dst-back`` is a return from summer time: the written hour goes back
    while the instants go on, so only a reading in UTC keeps time forward.
    """
    instants = pd.to_datetime(frame["timestamp"], unit="ms", utc=True)
    hours = {"offset": (5.5, 5.5), "dst-forward": (1, 2), "dst-back": (2, 1)}
    text = []
    for row, instant in enumerate(instants):
        after = row >= at
        naive = instant.tz_convert(None).isoformat(timespec="milliseconds")
        if mode == "naive" or ((mode == "aware-then-naive") == after and "-then-" in mode):
            text.append(naive)
        elif mode in hours:
            zone = datetime.timezone(datetime.timedelta(hours=hours[mode][after]))
            text.append(instant.tz_convert(zone).isoformat(timespec="milliseconds"))
        else:
            text.append(naive + "Z")
    out = frame.copy()
    out["timestamp"] = text
    return out


def padded(frame: pd.DataFrame, row: int, zeros: int) -> pd.DataFrame:
    """``frame`` whose counter at ``row`` is written with ``zeros`` leading zeros (a long line)."""
    out = frame.copy()
    out["row"] = out["row"].astype(str)
    out.loc[row, "row"] = "0" * zeros + out.loc[row, "row"]
    return out


def outcome(read):
    """What ``read()`` gives, or the error it raises."""
    try:
        return read()
    except (ParseError, LimitError) as exc:
        return exc


@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 300),
    mode=st.sampled_from(TIME_MODES),
    at=st.integers(0, 300),
    size=st.integers(1, 3000),
    cut_at_change=st.booleans(),
    long_row=st.integers(0, 299),
    zeros=st.sampled_from([0, 0, 500, 4000]),
)
@settings(max_examples=40, deadline=None)
def test_any_cut_of_dated_times_gives_the_whole_outcome(
    tmp_path_factory, seed, n, mode, at, size, cut_at_change, long_row, zeros
):
    root = tmp_path_factory.mktemp("dated")
    plain = signals(np.random.default_rng(seed), n, ["1", "A"], text_after=None)
    frame = padded(dated(plain, mode, at), long_row % n, zeros)
    data = csv_bytes(frame)
    if cut_at_change and 0 < at < n:
        # The first block ends exactly before the row where the offset changes.
        size = len(b"".join(data.splitlines(keepends=True)[: at + 1]))
    (root / "data").mkdir()
    (root / "data" / "s.csv").write_bytes(data)
    entry_ = long_entry()
    whole = outcome(lambda: read_long_signals(entry_, Sources([root])).frame)
    got = outcome(lambda: streamed(entry_, Sources([root]), size))
    if "-then-" in mode and 0 < at < n:
        # Offsets beside naive times: refused, naming the first row that differs.
        assert isinstance(whole, ParseError)
        assert str(whole).startswith(f"data/s.csv: time column 'timestamp', row {at}: ")
        assert "UTC offset" in str(whole)
        assert type(got) is ParseError and str(got) == str(whole)
        return
    # Otherwise the table of the same release with its times as numbers.
    (root / "data" / "s.csv").write_bytes(csv_bytes(padded(plain, long_row % n, zeros)))
    assert isinstance(whole, pd.DataFrame), whole
    want = read_long_signals(entry_, Sources([root])).frame
    assert whole.attrs["time_repeats"] == want.attrs["time_repeats"]
    assert isinstance(got, tuple), got
    assert_same_table(*got, whole)


def test_a_daylight_saving_change_at_a_block_edge_reads_as_the_whole_file(tmp_path):
    frame = dated(signals(np.random.default_rng(3), 400, ["P01"], text_after=None), "dst-back", 200)
    data = csv_bytes(frame)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "s.csv").write_bytes(data)
    edge = len(b"".join(data.splitlines(keepends=True)[:201]))
    assert data[edge:].split(b",")[1].endswith(b"+01:00")
    assert data[:edge].split(b"\n")[-2].split(b",")[1].endswith(b"+02:00")
    entry_ = long_entry()
    want = read_long_signals(entry_, Sources([tmp_path])).frame
    assert len(want) == 400
    for size in (edge, edge - 1, edge + 1, 10**9):
        assert_same_table(*streamed(entry_, Sources([tmp_path]), size), want)


@pytest.mark.parametrize("size", [333, 10**9])
def test_a_mix_of_offsets_and_naive_times_is_one_error_in_both_reads(tmp_path, size):
    frame = dated(signals(np.random.default_rng(4), 400, ["P01"], text_after=None), "utc", 0)
    frame.loc[250, "timestamp"] = frame.loc[250, "timestamp"].rstrip("Z")
    frame["ax"] = frame["ax"].astype(object)
    frame.loc[300, "ax"] = "x"  # a channel error comes after the time's
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "s.csv").write_bytes(csv_bytes(frame))
    entry_ = long_entry()
    with pytest.raises(ParseError) as whole:
        read_long_signals(entry_, Sources([tmp_path]))
    message = str(whole.value)
    assert message.startswith("data/s.csv: time column 'timestamp', row 250: ")
    assert f"({frame.loc[0, 'timestamp']!r}) has one" in message
    with pytest.raises(ParseError) as chunked:
        streamed(entry_, Sources([tmp_path]), size)
    assert str(chunked.value) == message
    # A time that is no date/time at all, even later in the file, is the error given.
    frame.loc[390, "timestamp"] = "soon"
    (tmp_path / "data" / "s.csv").write_bytes(csv_bytes(frame))
    with pytest.raises(ParseError, match=r"row 390: 'soon' is neither") as whole:
        read_long_signals(entry_, Sources([tmp_path]))
    with pytest.raises(ParseError) as chunked:
        streamed(entry_, Sources([tmp_path]), size)
    assert str(chunked.value) == str(whole.value)


def test_a_line_is_capped_as_the_whole_read_caps_a_member(tmp_path):
    frame = padded(signals(np.random.default_rng(6), 200, ["P01"], text_after=None), 100, 5000)
    data = csv_bytes(frame)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "s.csv").write_bytes(data)
    entry_ = long_entry()
    # Under the cap of a member read whole: read both ways, in blocks far shorter than the line.
    sources = Sources([tmp_path], max_read=len(data))
    want = read_long_signals(entry_, sources).frame
    assert_same_table(*streamed(entry_, Sources([tmp_path], max_read=len(data)), 300), want)
    # Under the line: the whole read refuses the file, the stream the line.
    with pytest.raises(LimitError, match="more than the cap on a member read whole, 4,000"):
        read_long_signals(entry_, Sources([tmp_path], max_read=4000))
    with pytest.raises(LimitError, match=r"s\.csv'?: a line runs past 4,000 bytes"):
        streamed(entry_, Sources([tmp_path], max_read=4000), 300)


@pytest.mark.slow
def test_a_line_of_70_mb_reads_both_ways(tmp_path):
    # Past the 64 MiB a stream once stopped at, under the 256 MiB of a member read whole.
    frame = padded(signals(np.random.default_rng(7), 50, ["P01"], text_after=None), 20, 70 * 10**6)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "s.csv").write_bytes(csv_bytes(frame))
    entry_ = long_entry()
    want = read_long_signals(entry_, Sources([tmp_path])).frame
    assert_same_table(*streamed(entry_, Sources([tmp_path]), 1 << 22), want)


# --------------------------------------------------------------------------
# Members read whole
# --------------------------------------------------------------------------


def test_a_file_with_quotes_is_read_whole_and_said_so(tmp_path, caplog):
    frame = signals(np.random.default_rng(2), 300, ["P01", "P,2"], text_after=100)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "q.csv").write_bytes(csv_bytes(frame))
    assert b'"P,2"' in (tmp_path / "data" / "q.csv").read_bytes()
    entry_ = long_entry()
    want = read_long_signals(entry_, Sources([tmp_path])).frame
    with caplog.at_level(logging.INFO, logger="mudata.readers.long_stream"):
        got, attrs = streamed(entry_, Sources([tmp_path]), 50)
    assert_same_table(got, attrs, want)
    assert "q.csv: read whole, not in parts: it holds quotes" in caplog.text
    with pytest.raises(LimitError, match=r"q\.csv: must be read whole, since it holds quotes"):
        streamed(entry_, Sources([tmp_path], max_read=1000), 50)


def test_a_malformed_line_of_a_file_over_the_read_cap_is_named_in_its_part(tmp_path):
    root = edited(tmp_path, EDITS["too many fields"])
    entry_ = long_entry()
    with pytest.raises(ParseError) as whole:
        read_long_signals(entry_, Sources([root]))
    with pytest.raises(ParseError) as chunked:
        streamed(entry_, Sources([root], max_read=5000), 4096)
    assert str(chunked.value).startswith(str(whole.value).split("line")[0])
    assert "in the part of the file after its line" in str(chunked.value)


def test_a_file_over_the_read_cap_is_read_in_parts(tmp_path):
    root = write_release(tmp_path, n=900)
    entry_ = long_entry()
    want = read_long_signals(entry_, Sources([root])).frame
    with pytest.raises(LimitError):
        read_long_signals(entry_, Sources([root], max_read=20_000))
    got, attrs = streamed(entry_, Sources([root], max_read=20_000), 4096)
    assert_same_table(got, attrs, want)


# --------------------------------------------------------------------------
# Through the pipeline
# --------------------------------------------------------------------------


@pytest.mark.parametrize("size", [997, 10**9])
def test_pipeline_counts_and_rows_are_the_whole_path_s(release, size):
    entry_ = long_entry()
    sources = Sources([release])
    want, want_counts = labelled_features(entry_, sources, raw=read_long_signals(entry_, sources))
    got, counts = labelled_features(
        entry_, sources, stream=stream_long_signals(entry_, sources, chunk_bytes=size)
    )
    assert counts == want_counts
    assert counts["time_repeats"]
    assert_same_rows(got, want)


def test_published_table_hash_is_the_whole_path_s(tmp_path):
    raw = write_release(tmp_path / "raw", seed=3, n=3000)
    # Two classes kept: the words of part1.csv and part3.csv are rows dropped by code.
    entry_ = replace(
        long_entry(CLASSES[:2]), files=(RemoteFile("data", path=str(raw), glob="**/*"),)
    )
    _, frame = build_frame(entry_, BuildOptions(data_home=tmp_path / "home", allow_unverified=True))
    sources = Sources([raw])
    labelled, counts = labelled_features(entry_, sources, raw=read_long_signals(entry_, sources))
    kept, _ = filter_users(labelled, entry_.class_names, entry_.min_per_class, dataset=entry_.name)
    whole = validate_table(kept, entry_.class_names, entry_.min_per_class, dataset=entry_.name)
    assert frame.attrs["provenance"]["table_sha256"] == table_fingerprint(whole)
    assert frame.attrs["provenance"]["counts"]["time_repeats"] == counts["time_repeats"]


def test_a_build_spools_in_the_data_home_and_sweeps_what_a_killed_run_left(tmp_path, monkeypatch):
    raw = write_release(tmp_path / "raw", seed=5)
    # Two classes kept: the words of part1.csv and part3.csv are rows dropped by code.
    entry_ = replace(
        long_entry(CLASSES[:2]), files=(RemoteFile("data", path=str(raw), glob="**/*"),)
    )
    parents = []
    made = Spool.__init__

    def record(self, what, folder=None):
        parents.append(folder)
        made(self, what, folder)

    monkeypatch.setattr(Spool, "__init__", record)
    spool = tmp_path / "home" / "own" / ".spool"
    spool.mkdir(parents=True)
    (spool / "mudata-spool-0123456789abcdef").mkdir()  # a killed run's
    build_frame(entry_, BuildOptions(data_home=tmp_path / "home", allow_unverified=True))
    assert parents and set(parents) == {spool}  # part2.csv.gz, decompressed
    assert spool.stat().st_mode & 0o777 == 0o700
    assert list(spool.iterdir()) == []


def test_a_link_planted_as_a_spool_is_removed_itself_and_the_log_says_so(tmp_path, caplog):
    raw = write_release(tmp_path / "raw", seed=6)
    entry_ = replace(
        long_entry(CLASSES[:2]), files=(RemoteFile("data", path=str(raw), glob="**/*"),)
    )
    spool = tmp_path / "home" / "own" / ".spool"
    spool.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the build's")
    (spool / "mudata-spool-planted").symlink_to(elsewhere, target_is_directory=True)
    (spool / "mudata-spool-0123456789abcdef").mkdir()  # a killed run's
    with caplog.at_level(logging.INFO, logger="mudata.building.pipeline"):
        build_frame(entry_, BuildOptions(data_home=tmp_path / "home", allow_unverified=True))
    assert list(spool.iterdir()) == []
    assert (elsewhere / "keep.txt").read_text() == "not the build's"
    link, stale = spool / "mudata-spool-planted", spool / "mudata-spool-0123456789abcdef"
    assert f"removed {link}, a link under a spool's name (what it points to is left alone)" in (
        caplog.text
    )
    assert f"removed {stale}, a spool left by an interrupted run" in caplog.text
    assert f"removed {link}, a spool" not in caplog.text
