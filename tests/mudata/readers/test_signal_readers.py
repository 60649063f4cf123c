"""Tests of the signal readers (HAR70+, OPPORTUNITY, gestures) and the generic tabular readers.

Archives are built in the official formats by tests/official_formats.py.
"""

from __future__ import annotations

import zipfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mudata.building.feature_maths import feature_columns
from mudata.building.features import featurize
from mudata.errors import MissingFileError, ParseError, RegistryError
from mudata.readers import get_reader, har70
from mudata.readers.base import FeatureTable, SignalTable
from mudata.readers.gestures import read_gestures
from mudata.readers.har70 import read_har70
from mudata.readers.opportunity import read_opportunity
from mudata.readers.sources import Sources
from mudata.readers.tabular import read_feature_table, read_long_signals
from mudata.registry.lookup import load_entry_file
from tests.conftest import GESTURES_ZIP, PROJECT_ROOT
from tests.official_formats import (
    HAR70_CHANNELS,
    HAR70_HEADER,
    OPPORTUNITY_CHANNELS,
    OPPORTUNITY_DIR,
    gestures_entry,
    gestures_txt_bytes,
    har70_csv_bytes,
    har70_entry,
    make_gestures_zip,
    make_har70_frame,
    make_har70_zip,
    make_opportunity_zip,
    opportunity_dat_bytes,
    opportunity_entry,
)


def with_options(entry, **options):
    return type(entry)(**{**entry.__dict__, "reader_options": {**entry.reader_options, **options}})


def assert_signal_contract(table: SignalTable, channels) -> None:
    frame = table.frame
    assert list(frame.columns) == ["userid", "label", "segment", *channels]
    assert frame["userid"].dtype == np.int64 and frame["segment"].dtype == np.int64
    for column in channels:
        assert frame[column].dtype == np.float64


# --------------------------------------------------------------------------
# HAR70+
# --------------------------------------------------------------------------


@pytest.mark.parametrize("crlf", [False, True])
def test_har70_reads_every_subject_in_user_order(tmp_path, crlf):
    path = tmp_path / "har70.zip"
    written = make_har70_zip(path, users=(517, 501, 509), n_samples=(300, 200, 250), crlf=crlf)
    table = read_har70(har70_entry(), Sources([path]))
    assert_signal_contract(table, HAR70_CHANNELS)
    frame = table.frame
    assert frame["userid"].tolist() == [501] * 200 + [509] * 250 + [517] * 300
    assert frame["segment"].tolist() == [0] * 200 + [1] * 250 + [2] * 300
    for user, original in written.items():
        part = frame[frame["userid"] == user]
        np.testing.assert_array_equal(part["label"].to_numpy(), original["label"].to_numpy())
        np.testing.assert_allclose(
            part[list(HAR70_CHANNELS)].to_numpy(),
            original[list(HAR70_CHANNELS)].to_numpy(),
            rtol=0,
            atol=5e-7,
        )
    assert frame["label"].dtype == np.int64


def test_har70_is_registered_under_its_reader_name():
    assert get_reader("har70-csv") is read_har70
    assert get_reader("opportunity-dat") is read_opportunity
    assert get_reader("gestures-txt") is read_gestures
    assert get_reader("feature-table") is read_feature_table
    assert get_reader("long-signals") is read_long_signals


def test_har70_ignores_macos_shadows_and_honours_the_member_glob(tmp_path):
    path = tmp_path / "har70.zip"
    extra = {
        "__MACOSX/har70plus/._501.csv": b"\x00\x05\x16\x07",
        "other/999.csv": b"not, a, subject\n",
    }
    make_har70_zip(path, users=(501,), n_samples=50, extra_members=extra)
    table = read_har70(with_options(har70_entry(), members="har70plus/*.csv"), Sources([path]))
    assert table.frame["userid"].unique().tolist() == [501]


@pytest.mark.parametrize("stem", ["\u00b2", "9" * 5000])
def test_har70_subject_files_named_by_no_number_are_refused(tmp_path, stem):
    # "²" is a digit to str.isdigit, but int() refuses it, and 5,000 digits too.
    path = tmp_path / "har70.zip"
    make_har70_zip(path, users=(501,), n_samples=50, extra_members={f"har70plus/{stem}.csv": b""})
    with pytest.raises(ParseError, match="named by the subject number"):
        read_har70(har70_entry(), Sources([path]))


def set_field(lines: list[str], line: int, field: int, value: str) -> None:
    fields = lines[line].split(",")
    fields[field] = value
    lines[line] = ",".join(fields)


def broken_har70(tmp_path, edit) -> Sources:
    frame = make_har70_frame(np.random.default_rng(0), 20)
    lines = har70_csv_bytes(frame).decode().splitlines()
    edit(lines)
    path = tmp_path / "har70.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("har70plus/501.csv", "\n".join(lines) + "\n")
    return Sources([path])


@pytest.mark.parametrize(
    "edit,expected",
    [
        (
            lambda lines: lines.__setitem__(5, lines[5] + ",0.5"),
            r"har70plus/501\.csv, line 6: expected 8 .* found 9",
        ),
        (
            lambda lines: lines.__setitem__(7, lines[7].rsplit(",", 2)[0]),
            r"501\.csv, line 8: expected 8 .* found 6",
        ),
        (
            lambda lines: set_field(lines, 9, 1, "abc"),
            r"501\.csv, line 10: column 'back_x' is not a number: 'abc'",
        ),
        (lambda lines: set_field(lines, 4, 3, ""), r"501\.csv, line 5: column 'back_z' is empty"),
        (
            lambda lines: set_field(lines, 3, 7, "6.5"),
            r"501\.csv, line 4: label must be an integer code",
        ),
        (
            lambda lines: lines.__setitem__(0, HAR70_HEADER.replace("thigh_y", "thigh_w")),
            r"501\.csv: header lacks columns \['thigh_y'\]; found \['timestamp'",
        ),
    ],
    ids=[
        "too-many-fields",
        "too-few-fields",
        "non-numeric",
        "empty-field",
        "fractional-label",
        "bad-header",
    ],
)
def test_har70_malformed_rows_name_file_and_line(tmp_path, edit, expected):
    with pytest.raises(ParseError, match=expected):
        read_har70(har70_entry(), broken_har70(tmp_path, edit))


# Values and line ends on which two CSV parsers could disagree.
TRICKY_VALUES = [
    "1.5", " 1.5", "1.5\t", "-0", "+.5", "5.", "1e-320", "1e400", "-inf", "nan", "NA", "",
    "NAN", "Infinity", "0x10", "1,5", '"2.5"', "1.0000000000000002", "7", "3.0", "\x00", "abc",
]  # fmt: skip
TRICKY_ENDS = ["\n", "\r\n", "\r", "\n\n", "\n   \n"]


def outcome(data: bytes) -> tuple:
    """What the HAR70+ subject parser makes of ``data``: its columns, or its error."""
    try:
        columns = har70._read_subject(data, "501.csv", list(HAR70_CHANNELS), "label")
    except ParseError as exc:
        return ("error", str(exc))
    return ("table", {k: v.tobytes() for k, v in columns.items()}, sorted(columns))


def tricky_file(cells: list[tuple[int, str]], ends: list[str], seed: int) -> bytes:
    lines = har70_csv_bytes(make_har70_frame(np.random.default_rng(seed), 6)).decode().splitlines()
    for field, value in cells:
        set_field(lines, 1 + seed % 6, field, value)
    return (lines[0] + "\n" + "".join(a + b for a, b in zip(lines[1:], ends, strict=True))).encode()


def strict_outcome(data: bytes) -> tuple:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(har70, "_parse_arrow", lambda data, wanted: None)
        return outcome(data)


@pytest.mark.parametrize("value", TRICKY_VALUES)
@pytest.mark.parametrize("field", [1, 7])
def test_har70_arrow_parser_agrees_with_the_strict_parser_on_each_value(value, field):
    # Arrow's reader, or the strict path it hands over to, must give exactly what
    # the strict path alone gives: the same bits or the same error.
    data = tricky_file([(field, value)], ["\n"] * 6, seed=3)
    assert outcome(data) == strict_outcome(data)


@given(
    cells=st.lists(
        st.tuples(st.integers(0, 7), st.sampled_from(TRICKY_VALUES)), min_size=0, max_size=3
    ),
    ends=st.lists(st.sampled_from(TRICKY_ENDS), min_size=6, max_size=6),
    seed=st.integers(0, 2**16),
)
def test_har70_arrow_parser_agrees_with_the_strict_parser(cells, ends, seed):
    data = tricky_file(cells, ends, seed)
    assert outcome(data) == strict_outcome(data)


def test_har70_plain_file_is_read_by_arrow():
    data = har70_csv_bytes(make_har70_frame(np.random.default_rng(1), 30))
    names = HAR70_HEADER.split(",")
    assert har70._plain(data, names, "utf-8")
    parsed = har70._parse_arrow(data, [*HAR70_CHANNELS, "label"])
    assert parsed is not None and len(parsed["label"]) == 30
    assert not har70._plain(data.replace(b"\n", b"\r", 1), names, "utf-8")
    assert not har70._plain(data, names, "latin-1")


def test_har70_line_numbers_count_blank_lines(tmp_path):
    def edit(lines):
        lines.insert(3, "")  # a blank line 4, then the bad row is line 8
        set_field(lines, 7, 1, "x")

    with pytest.raises(ParseError, match=r"line 8: column 'back_x'"):
        read_har70(har70_entry(), broken_har70(tmp_path, edit))


def test_har70_accepts_a_trailing_blank_line_and_a_bom(tmp_path):
    frame = make_har70_frame(np.random.default_rng(0), 10)
    path = tmp_path / "har70.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(
            "har70plus/501.csv", b"\xef\xbb\xbf" + har70_csv_bytes(frame, crlf=True) + b"\r\n"
        )
    assert len(read_har70(har70_entry(), Sources([path])).frame) == 10


def test_har70_bad_stem_and_no_files(tmp_path):
    path = tmp_path / "har70.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("har70plus/subject1.csv", HAR70_HEADER + "\n")
    with pytest.raises(ParseError, match="subject1"):
        read_har70(har70_entry(), Sources([path]))
    with pytest.raises(MissingFileError, match=r"\*\.txt"):
        read_har70(with_options(har70_entry(), members="*.txt"), Sources([path]))


# --------------------------------------------------------------------------
# OPPORTUNITY
# --------------------------------------------------------------------------


def test_opportunity_concatenates_adl_runs_in_order_and_keeps_nan(tmp_path):
    path = tmp_path / "opportunity.zip"
    written = make_opportunity_zip(path, users=(2, 1), n_rows=60, n_bursts=3)
    table = read_opportunity(opportunity_entry(), Sources([path]))
    channels = list(OPPORTUNITY_CHANNELS)
    assert_signal_contract(table, channels)
    frame = table.frame
    assert len(frame) == 2 * 5 * 60  # the Drill runs are not read
    expected_order = [(u, r) for u in (1, 2) for r in (1, 2, 3, 4, 5)]
    assert frame["segment"].tolist() == list(np.repeat(np.arange(10), 60))
    want = np.vstack([written[key] for key in expected_order])
    np.testing.assert_array_equal(frame["userid"].to_numpy(), np.repeat([1, 2], 300))
    np.testing.assert_array_equal(frame["label"].to_numpy(), want[:, 243].astype(np.int64))
    columns = [OPPORTUNITY_CHANNELS[c] - 1 for c in channels]
    np.testing.assert_array_equal(frame[channels].to_numpy(), want[:, columns])  # NaN == NaN here
    assert frame[channels].isna().to_numpy().any()


def test_opportunity_wrong_column_count_names_file_and_line(tmp_path):
    rng = np.random.default_rng(0)
    good = opportunity_dat_bytes(np.zeros((5, 250))).decode().splitlines()
    good[3] = good[3] + " 7"  # 251 fields on line 4
    path = tmp_path / "opportunity.zip"
    make_opportunity_zip(
        path,
        users=(1,),
        rng=rng,
        runs=(1,),
        n_rows=20,
        extra_members={f"{OPPORTUNITY_DIR}/S2-ADL1.dat": ("\n".join(good) + "\n").encode()},
    )
    with pytest.raises(ParseError, match=r"S2-ADL1\.dat, line 4: expected 250 .* found 251"):
        read_opportunity(opportunity_entry(), Sources([path]))


def test_opportunity_missing_label_is_an_error(tmp_path):
    table = np.zeros((4, 250))
    table[2, 243] = np.nan
    path = tmp_path / "opportunity.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{OPPORTUNITY_DIR}/S1-ADL1.dat", opportunity_dat_bytes(table))
    with pytest.raises(ParseError, match=r"S1-ADL1\.dat, line 3: label column 244"):
        read_opportunity(opportunity_entry(), Sources([path]))


def test_opportunity_column_options_are_checked(tmp_path):
    path = tmp_path / "opportunity.zip"
    make_opportunity_zip(path, users=(1,), runs=(1,), n_rows=10)
    # a wrong option is a fault of the registry entry, named as such
    with pytest.raises(
        RegistryError, match=r"reader_options\.columns\.a': column 251 is outside 1\.\.250"
    ):
        read_opportunity(with_options(opportunity_entry(), columns={"a": 251}), Sources([path]))


# --------------------------------------------------------------------------
# Smartwatch gestures
# --------------------------------------------------------------------------


def test_gestures_order_segments_and_extras(tmp_path):
    path = tmp_path / "gestures-dataset.zip"
    written = make_gestures_zip(path, users=2, gestures=3, repetitions=4, extras={(2, 1): [5, 21]})
    entry = with_options(gestures_entry(), repetitions=4)
    table = read_gestures(entry, Sources([path]))
    assert_signal_contract(table, ["x", "y", "z"])
    keys = [(u, g, r) for u in (1, 2) for g in (1, 2, 3) for r in (1, 2, 3, 4)]
    frame = table.frame
    assert frame["segment"].nunique() == len(keys) == 24
    want = np.vstack([written[k] for k in keys])
    np.testing.assert_allclose(frame[["x", "y", "z"]].to_numpy(), want[:, 3:], rtol=0, atol=0)
    lengths = [len(written[k]) for k in keys]
    np.testing.assert_array_equal(
        frame["userid"].to_numpy(), np.repeat([k[0] for k in keys], lengths)
    )
    np.testing.assert_array_equal(
        frame["label"].to_numpy(), np.repeat([k[1] for k in keys], lengths)
    )
    # with more repetitions allowed, the extras come in
    more = read_gestures(with_options(gestures_entry(), repetitions=30), Sources([path]))
    assert more.frame["segment"].nunique() == 26


def test_gestures_bad_line_names_the_file(tmp_path):
    path = tmp_path / "gestures-dataset.zip"
    make_gestures_zip(path, users=1, gestures=2, repetitions=2)
    lines = gestures_txt_bytes(np.ones((6, 6))).decode().splitlines()
    lines[2] = "1 2 3 4 5"
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("gestures-dataset/U02/01/01.txt", "\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=r"U02/01/01\.txt, line 3: expected 6 .* found 5"):
        read_gestures(gestures_entry(), Sources([path]))


def test_gestures_real_archive_counts():
    if not GESTURES_ZIP.is_file():
        pytest.skip(f"official gestures archive not found at {GESTURES_ZIP}")
    frame = read_gestures(gestures_entry(), Sources([GESTURES_ZIP])).frame
    assert frame["segment"].nunique() == 3200
    assert sorted(frame["userid"].unique()) == list(range(1, 9))
    assert sorted(frame["label"].unique()) == list(range(1, 21))
    # U01/01/01.txt starts with "... 1.532289 -0.919373 10.113108"
    np.testing.assert_array_equal(
        frame[["x", "y", "z"]].iloc[0].to_numpy(), [1.532289, -0.919373, 10.113108]
    )
    per_file = frame.groupby("segment").size()
    assert per_file.min() >= 10 and per_file.max() <= 51


# --------------------------------------------------------------------------
# Generic tabular readers
# --------------------------------------------------------------------------


def tabular_entry(reader: str, **options):
    entry = har70_entry()
    return type(entry)(**{**entry.__dict__, "reader": reader, "reader_options": options})


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_feature_table_reads_named_columns(tmp_path, fmt):
    frame = pd.DataFrame(
        {
            "who": [3, 3, 1],
            "act": ["a", "b", "a"],
            "f1": [0.5, 1.5, 2.5],
            "f2": [1, 2, 3],
            "note": ["x", "y", "z"],
        }
    )
    path = tmp_path / f"features.{fmt}"
    frame.to_csv(path, index=False) if fmt == "csv" else frame.to_parquet(path)
    entry = tabular_entry("feature-table", format=fmt, user_col="who", label_col="act")
    table = read_feature_table(entry, Sources([path]))
    assert isinstance(table, FeatureTable)
    assert list(table.frame.columns) == ["userid", "label", "f1", "f2"]  # 'note' is not numeric
    assert table.frame["userid"].tolist() == ["3", "3", "1"]  # user ids are text
    assert table.frame["f2"].tolist() == [1.0, 2.0, 3.0]
    chosen = read_feature_table(
        tabular_entry(
            "feature-table", format=fmt, user_col="who", label_col="act", feature_cols=["f2"]
        ),
        Sources([path]),
    )
    assert list(chosen.frame.columns) == ["userid", "label", "f2"]


def test_feature_table_missing_columns_are_named(tmp_path):
    path = tmp_path / "features.csv"
    pd.DataFrame({"user": [1], "label": ["a"], "f1": [0.1]}).to_csv(path, index=False)
    entry = tabular_entry(
        "feature-table",
        format="csv",
        user_col="subject",
        label_col="label",
        feature_cols=["f1", "f9"],
    )
    with pytest.raises(
        ParseError,
        match=r"features\.csv: missing column\(s\) \['subject', 'f9'\]; "
        r"columns found: \['user', 'label', 'f1'\]",
    ):
        read_feature_table(entry, Sources([path]))


def test_feature_table_text_user_ids_are_kept_as_written(tmp_path):
    path = tmp_path / "features.csv"
    pd.DataFrame({"user": ["S01", "f1", 7], "label": ["a"] * 3, "f1": [0.1] * 3}).to_csv(
        path, index=False
    )
    table = read_feature_table(
        tabular_entry("feature-table", user_col="user", label_col="label"), Sources([path])
    )
    assert table.frame["userid"].tolist() == ["S01", "f1", "7"]


def test_feature_table_blank_user_is_an_error(tmp_path):
    path = tmp_path / "features.csv"
    path.write_text("user,label,f1\nu1,a,0.1\n,a,0.2\n", encoding="utf-8")
    with pytest.raises(ParseError, match="features.csv: user column 'user' is blank at row 1"):
        read_feature_table(
            tabular_entry("feature-table", user_col="user", label_col="label"), Sources([path])
        )


def test_long_signals_keeps_file_order_and_numbers_recordings(tmp_path):
    rows = pd.DataFrame(
        {
            "subject": [2, 1, 2, 1, 1],
            "t": [0.0, 0.0, 1.0, 1.0, 2.0],
            "activity": [1, 3, 1, 3, 1],
            "back_x": [1.0, 2.0, 3.0, 4.0, 5.0],
            "back_y": 0.0,
            "back_z": 0.0,
            "thigh_x": 0.0,
            "thigh_y": 0.0,
            "thigh_z": [np.nan, 1, 2, 3, 4],
        }
    )
    path = tmp_path / "long.parquet"
    rows.to_parquet(path)
    entry = tabular_entry(
        "long-signals",
        format="parquet",
        user_col="subject",
        label_col="activity",
        time_col="t",
        channels=list(HAR70_CHANNELS),
    )
    frame = read_long_signals(entry, Sources([path])).frame
    assert list(frame.columns) == ["userid", "label", "segment", "recording", *HAR70_CHANNELS]
    assert frame["back_x"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]  # file order
    assert frame["userid"].tolist() == ["2", "1", "2", "1", "1"]
    assert frame["recording"].tolist() == [0, 1, 0, 1, 1]  # one recording per (file, user)
    assert np.isnan(frame["thigh_z"].iloc[0])


def test_long_signals_channel_checks(tmp_path):
    path = tmp_path / "long.csv"
    pd.DataFrame({"u": [1], "y": [1], "back_x": [0.0]}).to_csv(path, index=False)
    entry = tabular_entry("long-signals", user_col="u", label_col="y", channels=["back_x"])
    with pytest.raises(RegistryError, match=r"sensor channels \['back_y'"):
        read_long_signals(entry, Sources([path]))
    entry = tabular_entry("long-signals", user_col="u", label_col="y")
    with pytest.raises(
        ParseError,
        match=r"long\.csv: missing column\(s\) \['back_y'.*columns found: \['u', 'y', 'back_x'\]",
    ):
        read_long_signals(entry, Sources([path]))


# --------------------------------------------------------------------------
# The built-in registry entries drive these readers
# --------------------------------------------------------------------------


def builtin_entry(name: str):
    return load_entry_file(PROJECT_ROOT / "registry" / f"{name}.toml")


def test_builtin_har70_entry_reads_and_featurizes(tmp_path):
    path = tmp_path / "har70.zip"
    make_har70_zip(path, users=(502, 501), n_samples=1200)
    entry = builtin_entry("har70")
    table = get_reader(entry.reader)(entry, Sources([path]))
    assert table.frame["userid"].unique().tolist() == [501, 502]
    features = featurize(table, entry)
    assert list(features.columns[2:]) == feature_columns(2)
    assert len(features) > 0


def test_builtin_opportunity_entry_lists_runs_in_order(tmp_path):
    path = tmp_path / "opportunity.zip"
    written = make_opportunity_zip(path, users=(1, 2, 3, 4), n_rows=30)
    entry = builtin_entry("opportunity")
    table = get_reader(entry.reader)(entry, Sources([path]))
    want = np.vstack([written[(u, r)] for u in (1, 2, 3, 4) for r in (1, 2, 3, 4, 5)])
    np.testing.assert_array_equal(table.frame["label"].to_numpy(), want[:, 243].astype(np.int64))
    np.testing.assert_array_equal(table.frame["back_x"].to_numpy(), want[:, 37])
    np.testing.assert_array_equal(table.frame["shoe_z"].to_numpy(), want[:, 126])
    # a run missing from the archive is an error, not a silent gap
    partial = tmp_path / "partial.zip"
    make_opportunity_zip(partial, users=(1, 2, 3, 4), runs=(1, 2, 3, 4), n_rows=5)
    with pytest.raises(MissingFileError, match=r"S1-ADL5\.dat"):
        get_reader(entry.reader)(entry, Sources([partial]))


def test_builtin_gestures_entry_on_a_small_archive(tmp_path):
    path = tmp_path / "gestures-dataset.zip"
    make_gestures_zip(path, users=2, gestures=2, repetitions=21)
    entry = builtin_entry("gestures")
    table = get_reader(entry.reader)(entry, Sources([path]))
    assert table.frame["segment"].nunique() == 2 * 2 * 20  # repetition 21 left out
    assert featurize(table, entry).shape == (80, 34)


def test_har70_infinite_label_is_not_an_integer_code(tmp_path):
    with pytest.raises(
        ParseError, match=r"501\.csv, line 4: label must be an integer code, found inf"
    ):
        read_har70(
            har70_entry(), broken_har70(tmp_path, lambda lines: set_field(lines, 3, 7, "inf"))
        )
