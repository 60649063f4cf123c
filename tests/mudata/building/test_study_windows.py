"""The chunked path (stream readers + StudyWindows) against the whole-table path.

The whole path (a reader's whole table, then :func:`mudata.building.features.featurize`)
is the reference: every table here is built both ways, and the two must be
equal bit for bit, whatever the chunk boundaries.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mudata.building.features import featurize
from mudata.building.labelled import labelled_features
from mudata.building.options import BuildOptions
from mudata.building.pipeline import build_frame
from mudata.building.study_windows import StudyWindows
from mudata.building.userfilter import filter_users
from mudata.building.validate import validate_table
from mudata.building.windowing import DIRECT_MAX_SPAN, running_means
from mudata.errors import LimitError, ParseError, RegistryError
from mudata.publish.store import table_fingerprint
from mudata.readers import get_stream_reader
from mudata.readers.base import SignalTable
from mudata.readers.har70 import read_har70, stream_har70
from mudata.readers.sources import Sources
from mudata.readers.stream import SignalStream, coalesced, line_blocks
from mudata.records.entry import Recipe, RemoteFile
from tests.official_formats import (
    HAR70_CHANNELS,
    har70_csv_bytes,
    har70_entry,
    make_har70_frame,
    make_har70_zip,
)

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def assert_same_bits(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Same columns, dtypes, ids and the same bits in every feature (NaN and -0.0 too)."""
    assert list(got.columns) == list(want.columns)
    assert_same_rows(got, want)
    assert got.attrs == want.attrs


def assert_same_rows(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Same dtypes, ids and labels, and the same bits in every feature (NaN and -0.0 too)."""
    assert list(got.dtypes) == list(want.dtypes)
    assert got["userid"].tolist() == want["userid"].tolist()
    assert got["label"].tolist() == want["label"].tolist()
    features = [c for c in want.columns if c not in ("userid", "label")]
    np.testing.assert_array_equal(
        got[features].to_numpy(np.float64).view(np.int64),
        want[features].to_numpy(np.float64).view(np.int64),
    )


def interleaved_signals(
    rng: np.random.Generator, n: int, *, recordings: bool, max_run: int = 60
) -> pd.DataFrame:
    """Samples of several users and classes interleaved row by row, with every complication.

    Users and classes change in short runs (so that many sequences are open at
    once and short sequences occur), a few samples are missing, one stretch is
    constant, a few samples are too large for the sums of squares, and codes
    4 and 5 are classes the entry does not keep.
    """
    run = rng.integers(1, max_run, size=n)
    starts = np.cumsum(run)
    starts = starts[starts < n]
    users = np.repeat(
        rng.choice([503, 501, 502, 510], size=starts.size + 1), np.diff([0, *starts, n])
    )
    labels = np.repeat(
        rng.choice([1, 3, 4, 5, 6, 7, 8], size=starts.size + 1), np.diff([0, *starts, n])
    )
    values = np.cumsum(rng.normal(0, 0.1, size=(n, 6)), axis=0) + rng.normal(0, 1, size=6)
    values[rng.random((n, 6)) < 0.002] = np.nan
    values[n // 3 : n // 3 + 40, 1] = 0.25
    values[rng.random((n, 6)) < 0.0005] = 1e200
    frame = pd.DataFrame(values, columns=list(HAR70_CHANNELS))
    frame.insert(0, "userid", users)
    frame.insert(1, "label", labels)
    frame.insert(2, "segment", 0)
    if recordings:
        frame["recording"] = np.repeat(
            rng.integers(0, 3, size=starts.size + 1), np.diff([0, *starts, n])
        )
    return frame


def chunked(frame: pd.DataFrame, entry, cuts) -> pd.DataFrame:
    windows = StudyWindows(entry)
    for part in np.split(np.arange(len(frame)), cuts):
        windows.add(SignalTable(frame.iloc[part]))
    return windows.finish()


# --------------------------------------------------------------------------
# StudyWindows against study_window
# --------------------------------------------------------------------------


@given(
    seed=st.integers(0, 2**32 - 1),
    window=st.integers(1, 40),
    span=st.sampled_from([1, 2, 3, 10, 25, DIRECT_MAX_SPAN, DIRECT_MAX_SPAN + 1]),
    chunks=st.integers(0, 60),
    recordings=st.booleans(),
    diff=st.booleans(),
    max_run=st.sampled_from([8, 60, 1500]),
)
@settings(max_examples=40)
def test_chunked_windows_equal_whole_table_bit_for_bit(
    seed, window, span, chunks, recordings, diff, max_run
):
    rng = np.random.default_rng(seed)
    frame = interleaved_signals(rng, 1500, recordings=recordings, max_run=max_run)
    entry = har70_entry(
        window=window, smoothing=span, **({"second_sensor": "diff"} if diff else {})
    )
    cuts = np.sort(rng.choice(np.arange(1, len(frame)), size=chunks, replace=False))
    want = featurize(SignalTable(frame), entry)
    assert_same_bits(chunked(frame, entry, cuts), want)


def test_found_example_a_missing_sample_then_a_huge_one_above_the_direct_span():
    # Found by the test above: in the second chunk's buffer every nonzero sample
    # of back_y is coarser than 2**-53, and it holds a missing sample and 1e200.
    test_chunked_windows_equal_whole_table_bit_for_bit.hypothesis.inner_test(
        seed=22,
        window=2,
        span=DIRECT_MAX_SPAN + 1,
        chunks=1,
        recordings=False,
        diff=False,
        max_run=1500,
    )


@pytest.mark.parametrize(
    "span,hole", [(DIRECT_MAX_SPAN + 1, np.nan), (300, 0.0), (DIRECT_MAX_SPAN + 44, np.inf)]
)
def test_exact_means_of_a_coarse_range_with_a_zero_digit_are_exact(span, hole):
    # A sequence whose first samples are small (below 1) and the rest coarse (near
    # 5): the whole table's exact means see the small ones, the buffer kept after
    # the first chunk does not. A missing, zero or infinite sample in that buffer,
    # then a huge one, and windows after both have left the moving average.
    rng = np.random.default_rng(11)
    n = 1400
    values = np.abs(rng.normal(0, 0.05, size=(n, 6))) + 0.3
    values[400:] += 5.0
    values[800, 1] = hole
    values[820, 1] = 1e200
    frame = pd.DataFrame(values, columns=list(HAR70_CHANNELS))
    frame.insert(0, "userid", 501)
    frame.insert(1, "label", 6)
    frame.insert(2, "segment", 0)
    entry = har70_entry(window=4, smoothing=span)
    want = featurize(SignalTable(frame), entry)
    assert len(want) > 40  # the windows after the huge sample are kept
    assert_same_bits(chunked(frame, entry, [1000]), want)
    # The smoothed samples of the chunk's range are the exact rational means.
    column = np.ascontiguousarray(values[700:, 1])
    means = running_means(column, span)
    for j in (0, 99, 120, 121, 300, means.size - 1):
        window = column[j : j + span]
        exact = (
            float(sum(Fraction(x) for x in window) / span) if np.isfinite(window).all() else np.nan
        )
        assert means[j] == exact or (np.isnan(exact) and np.isnan(means[j]))


def test_features_wait_on_disk_and_are_removed_however_the_build_ends(tmp_path):
    # Window 2: about one feature row per two samples, megabytes of features on disk.
    frame = interleaved_signals(np.random.default_rng(5), 200_000, recordings=True, max_run=1500)
    entry = har70_entry(window=2, smoothing=1)
    spool = tmp_path / "spool"
    parts = np.array_split(np.arange(len(frame)), 4)
    windows = StudyWindows(entry, spool_dir=spool)
    windows.add(SignalTable(frame.iloc[parts[0]]))
    assert list(spool.glob("mudata-spool-*"))  # the features cut so far are on disk
    for part in parts[1:]:
        windows.add(SignalTable(frame.iloc[part]))
    assert_same_bits(windows.finish(), featurize(SignalTable(frame), entry))
    assert not list(spool.iterdir())

    def failing():
        for part in parts[:3]:
            yield SignalTable(frame.iloc[part])
        assert list(spool.glob("mudata-spool-*"))
        raise ParseError("a damaged line")

    with pytest.raises(ParseError, match="a damaged line"):
        labelled_features(entry, Sources([], spool_dir=spool), stream=SignalStream(failing()))
    assert not list(spool.iterdir())


# The two longer cases take half a minute each: .ci/run runs them with -m slow.
@pytest.mark.parametrize(
    "window,span",
    [
        (5, 3),
        pytest.param(4, 9, marks=pytest.mark.slow),
        pytest.param(7, DIRECT_MAX_SPAN + 2, marks=pytest.mark.slow),
    ],
)
def test_every_chunk_size_gives_the_same_rows(window, span):
    # Long runs, so that sequences are long enough for a span above
    # DIRECT_MAX_SPAN, and windows straddle every chunk boundary.
    rng = np.random.default_rng(window)
    n, run = (2400, 600) if span > DIRECT_MAX_SPAN else (1200, 150)
    frame = pd.DataFrame(
        np.cumsum(rng.normal(0, 0.1, size=(n, 6)), axis=0), columns=list(HAR70_CHANNELS)
    )
    frame.insert(0, "userid", np.repeat([502, 501], n // 2))
    frame.insert(1, "label", np.tile(np.repeat([1, 6, 7, 3], run // 2), 4)[:n])
    frame.insert(2, "segment", 0)
    frame.loc[700, "back_y"] = np.nan
    entry = har70_entry(window=window, smoothing=span)
    want = featurize(SignalTable(frame), entry)
    assert len(want) > 20 and want.attrs["dropped"]
    for size in (1, 2, 3, 5, 8, 13, 21, 149, 150, 151, 599, 600, 601):
        assert_same_bits(chunked(frame, entry, np.arange(size, n, size)), want)


def test_chunks_of_one_user_class_interleaved_with_others_join_up():
    # A sequence whose samples arrive in many chunks, apart, with others in between.
    rng = np.random.default_rng(7)
    frame = interleaved_signals(rng, 2000, recordings=False)
    entry = har70_entry(window=10, smoothing=4)
    want = featurize(SignalTable(frame), entry)
    assert_same_bits(chunked(frame, entry, np.arange(1, len(frame))), want)


def test_ids_that_would_name_one_user_are_the_whole_table_s_error():
    frame = interleaved_signals(np.random.default_rng(2), 900, recordings=False)
    # The text and the number would both be user "7".
    frame["userid"] = pd.Series(["7" if i % 3 == 0 else 7 for i in range(900)], dtype=object)
    entry = har70_entry(window=10, smoothing=4)
    with pytest.raises(ParseError, match="would both become user '7'"):
        featurize(SignalTable(frame), entry)
    with pytest.raises(ParseError, match="would both become user '7'"):
        chunked(frame, entry, [100, 101, 450])


def test_nothing_kept_and_no_complete_window_are_the_whole_table_s_empty_results():
    frame = interleaved_signals(np.random.default_rng(1), 200, recordings=False)
    for labels, window in (([4, 5], 10), ([1], 10_000)):
        frame["label"] = np.resize(labels, len(frame))
        entry = har70_entry(window=window, smoothing=3)
        want = featurize(SignalTable(frame), entry)
        got = chunked(frame, entry, [50, 120])
        assert got.empty and want.empty
        assert list(got.columns) == list(want.columns)
        assert got.attrs == want.attrs


def test_study_windows_refuses_another_recipe_and_missing_channels():
    entry = har70_entry()
    with pytest.raises(RegistryError, match="study-window"):
        StudyWindows(replace(entry, recipe=Recipe("study-segment")))
    frame = interleaved_signals(np.random.default_rng(1), 50, recordings=False)
    with pytest.raises(RegistryError, match="thigh_z"):
        StudyWindows(entry).add(SignalTable(frame.drop(columns="thigh_z")))


# --------------------------------------------------------------------------
# line_blocks and stream_har70 against read_har70
# --------------------------------------------------------------------------


@given(data=st.binary(max_size=200).map(lambda b: b.replace(b"\r", b"\n")), size=st.integers(1, 50))
def test_line_blocks_lay_end_to_end_and_end_at_line_ends(data, size):
    blocks = list(line_blocks(io.BytesIO(data), size))
    assert b"".join(blocks) == data
    assert all(b.endswith(b"\n") for b in blocks[:-1])
    assert all(b for b in blocks)


def test_line_blocks_refuse_a_line_without_end_before_gathering_it() -> None:
    # An expansion bomb of zeros, or a binary file, has no line break: it is
    # refused once the pending line passes max_line, not gathered into memory.
    data = b"back_x,label\n" + b"0" * 5000
    blocks = line_blocks(io.BytesIO(data), 100, max_line=1000, what="member 'x.csv'")
    assert next(blocks) == b"back_x,label\n"
    with pytest.raises(
        LimitError,
        match=r"member 'x.csv': a line runs past 1,000 bytes without a line break \(from byte 13\)",
    ):
        next(blocks)
    # A line of exactly max_line bytes, and one that ends, are accepted.
    assert b"".join(line_blocks(io.BytesIO(b"1" * 999 + b"\n"), 100, max_line=1000)) == (
        b"1" * 999 + b"\n"
    )


def test_stream_har70_in_another_encoding_keeps_the_whole_read_cap(tmp_path, monkeypatch):
    sources = har70_release(tmp_path)
    entry = har70_entry()
    entry = replace(entry, reader_options={**entry.reader_options, "encoding": "latin-1"})
    monkeypatch.setenv("MUDATA_MAX_READ_BYTES", "1000")
    with pytest.raises(LimitError, match=r"holds more than the cap on a member read whole, 1,000"):
        list(stream_har70(entry, sources))


def har70_release(tmp_path, *, crlf=False, bom=False, blank=False):
    folder = tmp_path / "har70plus"
    folder.mkdir()
    rng = np.random.default_rng(11)
    for user, n in ((503, 150), (501, 220), (502, 0)):
        data = har70_csv_bytes(make_har70_frame(rng, n, mean_run=60), crlf=crlf)
        if blank:
            data = data.replace(b"\n", b"\n\n", 3) + (b"\r\n" if crlf else b"\n")
        (folder / f"{user}.csv").write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return Sources([tmp_path])


@pytest.mark.parametrize("shape", [{}, {"crlf": True, "bom": True}, {"blank": True}])
def test_stream_har70_chunks_are_read_har70_s_table(tmp_path, shape):
    sources = har70_release(tmp_path, **shape)
    entry = har70_entry()
    want = read_har70(entry, sources).frame
    for size in (1, 7, 60, 61, 62, 1000, 10**9):
        chunks = [c.frame for c in stream_har70(entry, sources, chunk_bytes=size)]
        got = pd.concat(chunks, ignore_index=True)
        pd.testing.assert_frame_equal(got, want, check_exact=True)


def har70_with(tmp_path, text: bytes) -> Sources:
    path = tmp_path / "har70.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("har70plus/501.csv", text)
    return Sources([path])


def broken_lines(edit) -> bytes:
    lines = har70_csv_bytes(make_har70_frame(np.random.default_rng(0), 40)).decode().splitlines()
    edit(lines)
    return ("\n".join(lines) + "\n").encode("utf-8", errors="surrogateescape")


def set_field(lines, line, field, value):
    fields = lines[line].split(",")
    fields[field] = value
    lines[line] = ",".join(fields)


@pytest.mark.parametrize(
    "edit",
    [
        lambda lines: lines.__setitem__(25, lines[25] + ",0.5"),
        lambda lines: set_field(lines, 30, 1, "abc"),
        lambda lines: set_field(lines, 22, 3, ""),
        lambda lines: set_field(lines, 33, 7, "6.5"),
        lambda lines: (lines.insert(10, ""), set_field(lines, 28, 2, "x")),
        lambda lines: set_field(lines, 27, 4, "1.5\udce9"),  # a byte that is not UTF-8
        lambda lines: set_field(lines, 26, 5, '"2.5"'),  # quotes: the strict parser reads it
    ],
    ids=["fields", "non-numeric", "empty", "fractional", "after-blank", "encoding", "quoted"],
)
def test_stream_har70_errors_name_the_file_s_line_and_offset(tmp_path, edit):
    sources = har70_with(tmp_path, broken_lines(edit))
    entry = har70_entry()
    try:
        read_har70(entry, sources)
        whole = None
    except ParseError as exc:
        whole = str(exc)
    for size in (1, 100, 700, 1500, 10**6):
        try:
            for _ in stream_har70(entry, sources, chunk_bytes=size):
                pass
            streamed = None
        except ParseError as exc:
            streamed = str(exc)
        # The field-count error says how far it counted: to the end of the part read.
        assert (streamed or "").partition(" (")[0] == (whole or "").partition(" (")[0], size
    if whole is None:  # the quoted value is a number to both parsers
        assert len(read_har70(entry, sources).frame) == 40


@pytest.mark.parametrize("text", [b"", b"\n\n", b"timestamp,back_x\n"])
def test_stream_har70_empty_or_headless_file_is_read_har70_s_error(tmp_path, text):
    entry = har70_entry()
    sources = har70_with(tmp_path, text)
    with pytest.raises(ParseError, match="header lacks columns") as whole:
        read_har70(entry, sources)
    with pytest.raises(ParseError) as streamed:
        list(stream_har70(entry, sources, chunk_bytes=3))
    assert str(streamed.value) == str(whole.value)


# --------------------------------------------------------------------------
# The pipeline: counts and the published table
# --------------------------------------------------------------------------


def test_har70_is_built_through_its_stream_reader():
    assert get_stream_reader("har70-csv") is stream_har70
    assert get_stream_reader("gestures-txt") is None


@pytest.mark.parametrize("size", [997, 10**9])
def test_pipeline_counts_and_rows_are_the_whole_path_s(tmp_path, size):
    path = tmp_path / "har70.zip"
    make_har70_zip(
        path, users=(503, 501, 502), n_samples=(3000, 2000, 2500), rng=np.random.default_rng(3),
        codes=(1, 3, 4, 5, 6, 7, 8), mean_run=120,
    )  # fmt: skip
    entry = har70_entry(smoothing=10)
    sources = Sources([path])
    want, want_counts = labelled_features(entry, sources, raw=read_har70(entry, sources))
    got, counts = labelled_features(
        entry, sources, stream=stream_har70(entry, sources, chunk_bytes=size)
    )
    assert_same_bits(got, want)
    assert counts == want_counts
    assert counts["rows_dropped_by_class_code"]  # codes 4 and 5 are not kept


def test_pipeline_stream_names_a_class_never_seen_as_the_whole_path_does(tmp_path):
    path = tmp_path / "har70.zip"
    make_har70_zip(path, users=(501, 502), n_samples=800, codes=(1, 6, 7, 8))
    entry = har70_entry()
    sources = Sources([path])
    with pytest.raises(RegistryError) as whole:
        labelled_features(entry, sources, raw=read_har70(entry, sources))
    with pytest.raises(RegistryError) as streamed:
        labelled_features(entry, sources, stream=stream_har70(entry, sources, chunk_bytes=500))
    assert str(streamed.value) == str(whole.value)
    assert "shuffling" in str(whole.value)


def test_published_table_hash_is_the_whole_path_s(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    make_har70_zip(
        raw / "har70.zip", users=(503, 501, 502), n_samples=(6000, 5000, 5500),
        rng=np.random.default_rng(4), mean_run=100,
    )  # fmt: skip
    entry = replace(
        har70_entry(), min_per_class=1, files=(RemoteFile("har70", path=str(raw / "har70.zip")),)
    )
    _, frame = build_frame(entry, BuildOptions(data_home=tmp_path / "home", allow_unverified=True))
    sources = Sources([raw / "har70.zip"])
    labelled, _ = labelled_features(entry, sources, raw=read_har70(entry, sources))
    kept, _ = filter_users(labelled, entry.class_names, entry.min_per_class, dataset=entry.name)
    whole = validate_table(kept, entry.class_names, entry.min_per_class, dataset=entry.name)
    assert frame.attrs["provenance"]["table_sha256"] == table_fingerprint(whole)


@given(sizes=st.lists(st.integers(0, 7), max_size=30), min_rows=st.integers(1, 12))
def test_coalesced_joins_small_chunks_in_order(sizes, min_rows):
    # A release of many tiny files gives many tiny chunks: they are joined,
    # in order, into chunks of at least min_rows rows (all but the last).
    start = np.cumsum([0, *sizes])
    chunks = [
        SignalTable(pd.DataFrame({"userid": ["u"] * n, "back_x": np.arange(a, a + n, dtype=float)}))
        for a, n in zip(start, sizes, strict=False)
    ]
    joined = [c.frame for c in coalesced(chunks, min_rows)]
    assert all(len(f) >= min_rows for f in joined[:-1])  # fewer than 256 chunks here
    got = np.concatenate([f["back_x"].to_numpy() for f in joined]) if joined else np.array([])
    np.testing.assert_array_equal(got, np.arange(sum(sizes), dtype=float))
    assert all(f.index.equals(pd.RangeIndex(len(f))) for f in joined)
