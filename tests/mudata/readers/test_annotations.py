"""Labels from an annotation table of intervals (issue 28, item 3).

Each release is written byte for byte here (:mod:`tests.annotated_releases`,
modelled on UCI HAPT) and goes through ``mudata init`` (with no option, or the
one init's own output names), ``mudata register`` and ``mudata fetch``. The
built table's windows per user and class are counted here from the intervals
the generator wrote, with the study's rule written out (starts every ``w``
samples, the last start dropped), not with mudata's code; so are the
unlabelled samples. The hostile side: overlapping intervals, an end before its
start, negative or non-integer indices, an interval past the signal's end,
and keys of no recording.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tarfile
import tempfile
import tomllib
import zipfile
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mudata
from mudata.building.labelled import build_table
from mudata.cli import main
from mudata.drafting.draft import draft_entry
from mudata.errors import MissingFileError, MudataError, ParseError, RegistryError
from mudata.readers.annotations import read_annotated_signals
from mudata.readers.sources import Sources
from mudata.registry.lookup import parse_entry
from tests.annotated_releases import CLASSES, RATE, Release, write_release

WINDOW = 3 * RATE  # init's default window, 3 s

#: shape -> (options init's output names, the labels table the draft must hold, channels)
SHAPES = {
    "hapt": (
        ["--sampling-rate", str(RATE)],
        {
            "file": "RawData/labels.txt",
            "format": "text",
            "header": False,
            "columns": {"experiment": 1, "user": 2, "label": 3, "start": 4, "end": 5},
            "key": ["experiment", "user"],
            "start": "start",
            "end": "end",
            "label": "label",
            "unit": "sample",
        },
        ["acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z"],
    ),
    "hapt-header": (
        ["--sampling-rate", str(RATE)],
        {
            "file": "RawData/labels.txt",
            "format": "text",
            "header": True,
            "key": ["experiment", "user"],
            "start": "start",
            "end": "end",
            "label": "activity",
            "unit": "sample",
        },
        ["acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z"],
    ),
    "seconds-csv": (
        [],
        {
            "file": "annotations.csv",
            "format": "csv",
            "header": True,
            "columns": {"user": "subject"},
            "key": ["user", "run"],
            "start": "t_start",
            "end": "t_end",
            "label": "label",
            "unit": "s",
        },
        ["ax", "ay", "az", "gx", "gy", "gz"],
    ),
    "ms-column-key": (
        [],
        {
            "file": "events.csv",
            "format": "csv",
            "header": True,
            "key": ["user", "session"],
            "start": "begin_ms",
            "end": "end_ms",
            "label": "class",
            "unit": "ms",
        },
        ["ax", "ay", "az", "gx", "gy", "gz"],
    ),
    "whitespace-time": (
        [],
        {
            "file": "intervals.txt",
            "format": "text",
            "header": True,
            "columns": {"user": "subject"},
            "key": ["user", "experiment"],
            "start": "from",
            "end": "to",
            "label": "activity",
            "unit": "s",
        },
        ["x", "y", "z", "gx", "gy", "gz"],
    ),
}


def _windows(length: int, window: int) -> int:
    """The study's windows of a sequence: starts 1, 1+w, ... up to its length, the last dropped."""
    starts = len(range(0, length, window))
    return max(starts - 1, 0)


def _expected(release: Release) -> Counter:
    """Windows per (user as a number, class code), from the intervals as written."""
    counts: Counter = Counter()
    for interval in release.intervals:
        counts[(int(interval.user), interval.label)] += _windows(interval.hi - interval.lo, WINDOW)
    return counts


def _fill(toml: Path) -> Path:
    """The draft with its metadata filled in, as the user does before registering."""
    lines = []
    for line in toml.read_text(encoding="utf-8").splitlines():
        if line.startswith("homepage = "):
            line = 'homepage = "https://archive.ics.uci.edu/dataset/341"'
        elif line.startswith("citation = "):
            line = 'citation = "Reyes-Ortiz, Oneto, Sama, Parra, Anguita (2016)"'
        elif line.startswith("licence = "):
            line = 'licence = "CC-BY-4.0"'
        lines.append(line)
    filled = toml.with_name("filled.toml")
    filled.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return filled


def _init(runner: CliRunner, root: Path, toml: Path, args: list[str]):
    return runner.invoke(main, ["init", str(root), "--name", "annotated", "-o", str(toml), *args])


@pytest.mark.parametrize("shape", list(SHAPES))
def test_init_drafts_the_labels_table_and_the_build_counts_every_window(tmp_path, shape):
    args, labels, channels = SHAPES[shape]
    release = write_release(tmp_path / shape, shape=shape)
    runner = CliRunner()
    toml = tmp_path / "annotated.toml"
    if args:  # plain init first: its error names the one option to give
        plain = _init(runner, release.root, toml, [])
        assert plain.exit_code != 0 and "--sampling-rate" in plain.output, plain.output
    init = _init(runner, release.root, toml, args)
    assert init.exit_code == 0, init.output
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    assert draft["reader"] == "annotated-signals"
    assert draft["reader_options"]["labels"] == labels
    assert draft["reader_options"]["channels"] == channels
    # the annotation table is pinned with the data, not left out as documentation
    pinned = [m["path"] for f in draft["files"] for m in f.get("members", [])]
    pinned += [f["name"] for f in draft["files"] if "sha256" in f]
    assert any(p.endswith(release.labels_file.rsplit("/", 1)[-1]) for p in pinned), pinned
    assert f"labels: the annotation table {release.labels_file}" in init.output
    assert f"  {release.labels_file}:" not in init.output  # not among the files left out
    # unlabelled samples, counted from the generator's intervals
    assert f"unlabelled: {release.unlabelled:,} samples" in init.output, init.output
    if shape.startswith("hapt"):  # activity_labels.txt names the classes
        assert [c["name"] for c in draft["classes"]] == list(CLASSES.values())
    home = str(tmp_path / "home")
    registered = runner.invoke(main, ["register", str(_fill(toml)), "--data-home", home])
    assert registered.exit_code == 0, registered.output
    fetched = runner.invoke(main, ["fetch", "annotated", "--data-home", home])
    assert fetched.exit_code == 0, fetched.output
    bunch = mudata.load("annotated", data_home=home)
    frame = bunch.frame
    codes = {c["name"]: c["code"] for c in draft["classes"]}
    built = Counter(
        (int(u), int(codes[label]))
        for u, label in zip(frame["userid"], frame["label"], strict=True)
    )
    assert built == _expected(release)
    assert sorted({int(u) for u in frame["userid"]}) == [1, 2, 3]
    unlabelled = bunch.provenance["counts"]["rows_unlabelled"]
    assert sum(unlabelled.values()) == release.unlabelled
    assert len(unlabelled) == len(release.lengths)  # every recording has a gap


def test_the_reader_labels_exactly_the_samples_of_each_interval(tmp_path):
    """Rows per class and user, and every label, against the intervals written: the
    first and last sample of each interval are in it, the ones beside it are not."""
    release = write_release(tmp_path / "hapt", shape="hapt", experiments=4, seed=3)
    draft = draft_entry(
        [release.root], "hapt", output=tmp_path / "hapt.toml", sampling_rate_hz=RATE
    )
    frame = read_annotated_signals(draft.entry, Sources([release.root])).frame
    rows: Counter = Counter()
    for interval in release.intervals:
        rows[(int(interval.user), interval.label)] += interval.hi - interval.lo
    assert Counter(zip(frame["userid"].astype(int), frame["label"], strict=True)) == rows
    assert frame["recording"].nunique() == len(release.intervals)
    # the acc_x values of the first interval are lines lo+1 .. hi of its file
    first = release.intervals[0]
    path = release.root / "RawData" / f"acc_exp{first.experiment:02d}_user{int(first.user):02d}.txt"
    lines = path.read_text().splitlines()
    expected = [float(line.split()[0]) for line in lines[first.lo : first.hi]]
    got = frame.loc[frame["recording"] == 0, "acc_x"].tolist()
    assert got == expected


def _entry_and_root(tmp_path: Path, shape: str = "hapt", experiments: int = 2, **kwargs):
    release = write_release(tmp_path / shape, shape=shape, experiments=experiments, **kwargs)
    args = {"sampling_rate_hz": RATE} if shape.startswith("hapt") else {}
    draft = draft_entry([release.root], shape, output=tmp_path / f"{shape}.toml", **args)
    return draft.entry, release


def _append(release: Release, *lines: str) -> int:
    """Append lines to the annotation table; the line number of the first."""
    path = release.root / release.labels_file
    text = path.read_text()
    path.write_text(text + "".join(f"{line}\n" for line in lines))
    return text.count("\n") + 1


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1 1 2 600 500", r"line {n}: the interval ends \(500\) before it starts \(600\)"),
        ("1 1 2 -5 20", r"line {n}: start '-5' is negative"),
        ("1 1 2 10.5 20", r"line {n}: start '10.5' is not a whole sample index"),
        ("1 1 2 10 2e1x", r"line {n}: end '2e1x' is not a number"),
        ("1 1 2 0 20", r"line {n}: start 0 is before the first sample, index 1"),
        ("1 1 2 10", r"line {n}: 4 field\(s\), 5 expected"),
    ],
)
def test_a_bad_interval_is_an_error_naming_the_file_and_line(tmp_path, line, message):
    entry, release = _entry_and_root(tmp_path)
    number = _append(release, line)
    pattern = f"RawData/labels.txt, {message.format(n=number)}"
    with pytest.raises(ParseError, match=pattern):
        read_annotated_signals(entry, Sources([release.root]))


def test_an_interval_past_the_last_sample_is_an_error(tmp_path):
    entry, release = _entry_and_root(tmp_path)
    length = release.lengths[1]
    number = _append(release, f"1 1 2 {length - 10} {length + 1}")
    message = (
        rf"RawData/labels.txt, line {number}: the interval \[{length - 10}, {length + 1}\] ends "
        rf"after the last sample of RawData/acc_exp01_user01.txt \(experiment=1, user=1\), "
        rf"which holds {length:,} samples \(index 1 to {length:,}\)"
    )
    with pytest.raises(ParseError, match=message):
        read_annotated_signals(entry, Sources([release.root]))


def test_overlapping_intervals_are_an_error_naming_both(tmp_path):
    entry, release = _entry_and_root(tmp_path)
    first = release.intervals[0]  # 1-based inclusive [lo+1, hi] on its line
    number = _append(release, f"{first.experiment} {first.user} 4 {first.hi} {first.hi + 30}")
    with pytest.raises(ParseError) as caught:
        read_annotated_signals(entry, Sources([release.root]))
    text = str(caught.value)
    assert f"RawData/labels.txt: the intervals of line {first.line}" in text, text
    assert f"and line {number} ([{first.hi}, {first.hi + 30}], class 4) overlap" in text, text
    assert "in the recording {'experiment': '1', 'user': '1'}" in text, text
    # one sample later the intervals only touch: no overlap for closed sample intervals
    entry, release = _entry_and_root(tmp_path / "touching")
    first = release.intervals[0]
    gap_end = release.intervals[1].lo  # the next interval starts at lo + 1 (1-based)
    _append(release, f"{first.experiment} {first.user} 4 {first.hi + 1} {gap_end}")
    frame = read_annotated_signals(entry, Sources([release.root])).frame
    assert len(frame) == sum(i.hi - i.lo for i in release.intervals) + gap_end - first.hi


def test_time_intervals_are_half_open_and_overlap_only_inside(tmp_path):
    entry, release = _entry_and_root(tmp_path, "seconds-csv")
    first = release.intervals[0]
    end = first.hi / RATE
    # starting where the first one ends is no overlap
    _append(release, f"{first.user},{first.experiment},4,{end:.2f},{end + 0.1:.2f}")
    frame = read_annotated_signals(entry, Sources([release.root])).frame
    assert len(frame) == sum(i.hi - i.lo for i in release.intervals) + 5
    number = _append(release, f"{first.user},{first.experiment},4,{end - 0.02:.2f},{end:.2f}")
    with pytest.raises(ParseError, match=rf"line {first.line} .* and line {number} .* overlap"):
        read_annotated_signals(entry, Sources([release.root]))


def test_an_interval_past_the_time_of_the_last_sample_is_an_error(tmp_path):
    entry, release = _entry_and_root(tmp_path, "seconds-csv")
    last = release.lengths[1] / RATE
    number = _append(release, f"1,1,2,{last + 5:.2f},{last + 9:.2f}")
    with pytest.raises(
        ParseError, match=rf"annotations.csv, line {number}: .* ends after the last"
    ):
        read_annotated_signals(entry, Sources([release.root]))


def test_an_interval_of_an_unknown_experiment_is_counted_and_warned(tmp_path, caplog):
    """A release may publish the labels of recordings it leaves out: a warning, not an error;
    a table none of whose keys is a recording is an error."""
    entry, release = _entry_and_root(tmp_path)
    number = _append(release, "99 1 2 10 200", "98 1 2 10 200")
    with caplog.at_level(logging.WARNING, logger="mudata.readers.annotations"):
        frame = read_annotated_signals(entry, Sources([release.root])).frame
    assert frame.attrs["unmatched_intervals"] == [number, number + 1]
    assert "2 interval(s) of RawData/labels.txt match no recording" in caplog.text
    assert f"line {number}, {{'experiment': '99', 'user': '1'}}" in caplog.text
    assert len(frame) == sum(i.hi - i.lo for i in release.intervals)
    (release.root / release.labels_file).write_text("99 1 2 10 200\n")
    with pytest.raises(ParseError, match=r"no interval matches a recording by its key"):
        read_annotated_signals(entry, Sources([release.root]))


def test_init_reports_the_intervals_of_no_recording(tmp_path):
    release = write_release(tmp_path / "hapt", extra_lines=["77 1 2 10 200"])
    draft = draft_entry([release.root], "h", output=tmp_path / "h.toml", sampling_rate_hz=RATE)
    line = len(release.intervals) + 1
    assert any(
        r.startswith("intervals of no recording: 1 line(s)") and f"lines {line})" in r
        for r in draft.report
    ), draft.report


def test_sensor_files_of_different_lengths_are_refused(tmp_path):
    entry, release = _entry_and_root(tmp_path)
    gyro = release.root / "RawData" / "gyro_exp02_user01.txt"
    gyro.write_text("".join(gyro.read_text().splitlines(keepends=True)[:-3]))
    with pytest.raises(ParseError, match=r"hold different numbers of samples"):
        read_annotated_signals(entry, Sources([release.root]))


def test_init_reads_the_release_from_its_archive(tmp_path):
    release = write_release(tmp_path / "UCI HAR Dataset", experiments=4)
    archive = tmp_path / "hapt.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(release.root, arcname="HAPT")
    draft = draft_entry([archive], "hapt", output=tmp_path / "h.toml", sampling_rate_hz=RATE)
    options = draft.entry.reader_options
    assert options["labels"]["file"] == "HAPT/RawData/labels.txt"
    assert options["path_pattern"].startswith("(?:^|/)HAPT/RawData/(?P<sensor>")
    assert f"unlabelled: {release.unlabelled:,} samples" in "\n".join(draft.report)


def test_an_archive_whose_table_no_glob_selects_with_the_data_is_read_whole(tmp_path):
    """rec/*.dat and intervals.txt beside README.txt: no one glob; the archive is pinned
    whole, the reader's members select the data and the table is read from it."""
    release = write_release(tmp_path / "w", shape="whitespace-time", experiments=4)
    archive = tmp_path / "w.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(release.root.rglob("*")):
            zf.write(path, f"w/{path.relative_to(release.root).as_posix()}")
    draft = draft_entry([archive], "w", output=tmp_path / "w.toml")
    assert "glob" not in tomllib.loads(draft.toml)["files"][0]
    assert draft.entry.reader_options["members"] == "*.dat"
    assert f"unlabelled: {release.unlabelled:,} samples" in "\n".join(draft.report)


def test_a_csv_table_with_a_byte_order_mark_crlf_and_quotes_reads_the_same(tmp_path):
    entry, release = _entry_and_root(tmp_path, "seconds-csv")
    plain = read_annotated_signals(entry, Sources([release.root])).frame
    path = release.root / release.labels_file
    lines = path.read_text().splitlines()
    quoted = [lines[0]] + [",".join(f'"{f}"' for f in line.split(",")) for line in lines[1:]]
    path.write_bytes(("\ufeff" + "\r\n".join(quoted) + "\r\n").encode())
    pd.testing.assert_frame_equal(
        read_annotated_signals(entry, Sources([release.root])).frame, plain
    )


def _labels_entry(labels: object) -> dict:
    return {
        "name": "x",
        "title": "x",
        "version": "1",
        "homepage": "https://example.org",
        "licence": "CC-BY-4.0",
        "citation": "x",
        "sampling_rate_hz": RATE,
        "reader": "annotated-signals",
        "reader_options": {
            "channels": ["x", "y", "z"],
            "path_pattern": "(?P<user>\\d+)",
            "labels": labels,
        },
        "recipe": {"name": "study-window", "window": 150},
        "sensors": [{"name": "a", "channels": ["x", "y", "z"]}],
        "classes": [{"code": 1, "name": "a"}, {"code": 2, "name": "b"}],
        "files": [{"name": "f", "path": "f.txt"}],
    }


GOOD = {"file": "l.txt", "key": ["user"], "start": "s", "end": "e", "label": "c"}


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({**GOOD, "unit": "minutes"}, r"'reader_options.labels.unit': 'minutes' is not one of"),
        ({**GOOD, "key": []}, r"'reader_options.labels.key': expected at least one field"),
        ({**GOOD, "end": "s"}, r"key, start, end and label name one column each"),
        ({**GOOD, "first": 2}, r"'reader_options.labels.first': the index of the first sample"),
        ({**GOOD, "unit": "s", "first": 0}, r"labels.first': only for unit = 'sample'"),
        ({**GOOD, "header": False}, r"needs the column number of \['user', 's', 'e', 'c'\]"),
        ({**GOOD, "colums": {}}, r"'reader_options.labels.colums': not a key of labels"),
        ({k: v for k, v in GOOD.items() if k != "label"}, r"labels.label': missing"),
        ({**GOOD, "unit": "s"}, r"are times of the signals' time column: name it"),
    ],
)
def test_a_bad_labels_option_is_refused_naming_the_field(labels, message):
    from mudata.readers.annotations import annotated_options

    try:
        entry = parse_entry(_labels_entry(labels))
    except RegistryError as exc:  # the schema refused it first
        assert "labels" in str(exc), exc
        return
    with pytest.raises(RegistryError, match=message):
        annotated_options(entry)


def test_the_schema_refuses_a_labels_table_of_the_wrong_shape():
    with pytest.raises(RegistryError, match=r"reader_options.labels"):
        parse_entry(_labels_entry({**GOOD, "unit": 5}))
    with pytest.raises(RegistryError, match=r"reader_options.labels"):
        parse_entry(_labels_entry("labels.txt"))


def test_a_table_of_class_names_alone_is_not_an_annotation(tmp_path):
    """activity_labels.txt (code, name) has no interval: it never becomes the labels table."""
    release = write_release(tmp_path / "hapt", experiments=2)
    (release.root / release.labels_file).unlink()
    result = CliRunner().invoke(
        main, ["init", str(release.root), "--name", "h", "-o", str(tmp_path / "h.toml")]
    )
    assert result.exit_code != 0
    assert "no label column" in result.output, result.output


def test_a_sheet_describing_the_subjects_is_no_annotation_table(tmp_path):
    """subjects.csv (subject, age, height, weight): its subject ids are the paths' users and
    age <= height on every row, but each subject has one row: it stays left out."""
    from mudata.drafting.selection import select

    root = tmp_path / "release"
    root.mkdir()
    for user in range(1, 7):
        lines = ["x,y,z,label"] + [f"{i % 7},{i % 5},{i % 3},{1 + i // 50}" for i in range(100)]
        (root / f"rec_s{user}.csv").write_text("\n".join(lines) + "\n")
    sheet = ["subject,age,height,weight"]
    sheet += [f"{u},{20 + 3 * u},{160 + 2 * u},{55 + 4 * u}" for u in range(1, 7)]
    (root / "subjects.csv").write_text("\n".join(sheet) + "\n")
    selection = select(sorted(p.name for p in root.iterdir()), lambda n: (root / n).read_bytes())
    assert selection.annotation is None
    assert "subjects.csv" in selection.left_out
    # the same ids as intervals, two per subject, are one
    intervals = ["subject,activity,start,end"]
    intervals += [f"{u},{k},{1 + 50 * (k - 1)},{50 * k}" for u in range(1, 7) for k in (1, 2)]
    (root / "subjects.csv").write_text("\n".join(intervals) + "\n")
    selection = select(sorted(p.name for p in root.iterdir()), lambda n: (root / n).read_bytes())
    assert selection.annotation is not None and selection.annotation.keys == ["user"]


def test_a_subset_of_the_recordings_drafts_and_builds_with_the_rest_reported(tmp_path):
    """The labels of the whole release beside the files of some experiments (a partial
    download): the table is still found, its other lines reported, the rest built."""
    release = write_release(tmp_path / "hapt", experiments=6)
    for path in (release.root / "RawData").glob("*_exp0[56]_*.txt"):
        path.unlink()
    draft = draft_entry([release.root], "h", output=tmp_path / "h.toml", sampling_rate_hz=RATE)
    assert draft.entry.reader_options["labels"]["key"] == ["experiment", "user"]
    lines = [w.line for w in release.intervals if w.experiment > 4]
    report = "\n".join(draft.report)
    assert f"intervals of no recording: {len(lines)} line(s)" in report, report
    kept = [w for w in release.intervals if w.experiment <= 4]
    unlabelled = sum(release.lengths[e] for e in range(1, 5)) - sum(w.hi - w.lo for w in kept)
    assert f"unlabelled: {unlabelled:,} samples" in report


@pytest.fixture(scope="module")
def small_release(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("fuzz")
    release = write_release(root / "hapt", experiments=4, seed=5)
    draft = draft_entry([release.root], "h", output=root / "h.toml", sampling_rate_hz=RATE)
    built, _ = build_table(draft.entry, Sources([release.root]))  # undamaged, it builds
    assert built["userid"].nunique() == 2
    return draft.entry, release


mutation = st.tuples(
    st.sampled_from(["flip", "insert", "delete", "truncate", "set"]),
    st.floats(min_value=0, max_value=1, allow_nan=False),
    st.integers(min_value=0, max_value=255),
)


def _mutate(data: bytes, mutations) -> bytes:
    out = bytearray(data)
    for op, where, value in mutations:
        if not out:
            break
        at = min(int(where * len(out)), len(out) - 1)
        if op == "flip":
            out[at] ^= 1 << (value % 8)
        elif op == "insert":
            out[at:at] = bytes([value]) * (1 + value % 5)
        elif op == "delete":
            del out[at : at + 1 + value % 7]
        elif op == "truncate":
            del out[at:]
        else:
            out[at] = value
    return bytes(out)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    which=st.sampled_from(["RawData/labels.txt", "RawData/gyro_exp02_user01.txt"]),
    mutations=st.lists(mutation, min_size=1, max_size=4),
)
def test_a_damaged_table_or_signal_file_fails_only_with_mudata_s_errors(
    small_release, tmp_path, which, mutations
):
    """Whatever the damage to the annotation table or a signal file, the build ends with a
    table or with one of mudata's errors, never with another exception."""
    entry, release = small_release
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        copy = Path(folder) / "hapt"
        shutil.copytree(release.root, copy)
        target = copy / which
        target.write_bytes(_mutate(target.read_bytes(), mutations))
        sources = Sources([copy])
        try:
            build_table(entry, sources)
        except MudataError:
            pass
        finally:
            sources.close()


def test_a_labels_file_outside_the_release_is_not_read(tmp_path):
    entry, release = _entry_and_root(tmp_path)
    (tmp_path / "secret.txt").write_text("1 1 2 1 10\n")
    options = {**entry.reader_options}
    options["labels"] = {**options["labels"], "file": "../secret.txt"}
    outside = dataclasses.replace(entry, reader_options=options)
    with pytest.raises(MissingFileError, match=r"file '\.\./secret\.txt' not found"):
        read_annotated_signals(outside, Sources([release.root]))


def test_zero_based_indices_are_read_as_such(tmp_path):
    """A table counting samples from 0 (an interval starts at 0): init drafts first = 0 and
    the reader labels the same samples as the 1-based table does."""
    entry, release = _entry_and_root(tmp_path)
    path = release.root / release.labels_file
    rows = [line.split() for line in path.read_text().splitlines()]
    first = rows[0]
    rows[0] = [*first[:3], "1", first[4]]  # the first interval from the first sample on
    path.write_text("".join(f"{' '.join(r)}\n" for r in rows))
    one_based = read_annotated_signals(entry, Sources([release.root])).frame
    zero = [[*r[:3], str(int(r[3]) - 1), str(int(r[4]) - 1)] for r in rows]
    path.write_text("".join(f"{' '.join(r)}\n" for r in zero))
    draft = draft_entry([release.root], "z", output=tmp_path / "z.toml", sampling_rate_hz=RATE)
    assert draft.entry.reader_options["labels"]["first"] == 0
    assert "0-based: an interval starts at 0" in "\n".join(draft.report)
    zero_based = read_annotated_signals(draft.entry, Sources([release.root])).frame
    pd.testing.assert_frame_equal(zero_based, one_based)


def test_time_that_goes_back_inside_a_session_is_an_error_naming_the_row(tmp_path):
    entry, release = _entry_and_root(tmp_path, "ms-column-key")
    path = release.root / "user_01.csv"
    lines = path.read_text().splitlines()
    lines[10], lines[11] = lines[11], lines[10]  # rows 9 and 10 (line 11 and 12)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        ParseError, match=r"user_01.csv, row 10 \(line 12\): time column 'timestamp_ms' goes back"
    ):
        read_annotated_signals(entry, Sources([release.root]))
