"""init's preview says what ``mudata fetch`` builds, and users and labels are read from
paths by reasoning, on generated shapes and on the six shared releases.

For each release the windows per user and class that init prints, and the users
its filter keeps, are compared with the table ``mudata fetch`` builds from the
draft (metadata filled in, nothing else changed). The generated shapes are
those that misled init: class folders ``a01``..``a19`` (the leading zero took
another path through the preview), subject folders ``03/`` holding
``1_raw_data_...`` and ``2_raw_data_...`` series, and ``SA01/`` folders
whose files carry the subject again and a trial token ``_R01``.
"""

from __future__ import annotations

import re
import tarfile
import tomllib
from pathlib import Path

import numpy as np
import pytest
import tomli_w
from click.testing import CliRunner

import mudata
from mudata.cli import main as mudata_main
from mudata.drafting.pathfields import hint
from tests.conftest import SHARED_DATA
from tests.mudata.drafting.test_columns_releases import EXPECTED


def preview(report: str) -> dict[str, dict[str, int]]:
    """The windows per user and class init printed."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"windows of \d+ samples", line))
    table = {}
    for line in lines[start + 1 :]:
        match = re.fullmatch(r"  (\S+): (.*)", line)
        if not match or "=" not in match.group(2):
            break
        table[match.group(1)] = {
            c: int(n) for c, n in (cell.rsplit("=", 1) for cell in match.group(2).split(", "))
        }
    return table


def kept(report: str) -> list[str]:
    return re.search(r"^  kept: (.*)$", report, re.MULTILINE).group(1).split(", ")


#: The drafts as init wrote them (comments included), by dataset name.
drafts: dict[str, str] = {}


def init_and_fetch(files: Path, name: str, tmp_path: Path, args: list[str]) -> tuple[str, dict]:
    """init -> metadata filled in -> register -> fetch; init's report and the built table's
    windows per (user, class)."""
    toml = tmp_path / f"{name}.toml"
    result = CliRunner().invoke(
        mudata_main, ["init", str(files), "--name", name, "-o", str(toml), "--force", *args]
    )
    assert result.exit_code == 0, result.output
    drafts[name] = toml.read_text()
    data = tomllib.loads(drafts[name])
    data.update(
        title="t",
        homepage="https://example.org/x",
        citation="The authors (2026). A release.",
        licence="CC-BY-4.0",
    )
    toml.write_text(tomli_w.dumps(data))
    home = str(tmp_path / "home")
    for step in (["register", str(toml)], ["fetch", name]):
        done = CliRunner().invoke(mudata_main, [*step, "--data-home", home])
        assert done.exit_code == 0, done.output
    frame = mudata.load(name, data_home=home).frame
    built: dict[str, dict[str, int]] = {}
    for (user, label), n in frame.groupby(["userid", "label"]).size().items():
        built.setdefault(str(user), {})[str(label)] = int(n)
    return result.output, built


def assert_preview_is_the_build(report: str, built: dict[str, dict[str, int]]) -> None:
    assert sorted(kept(report)) == sorted(built)
    if "windows of " not in report:
        return  # a feature table: no window
    shown = preview(report)
    for user, per_class in built.items():
        assert {c: n for c, n in shown[user].items() if n} == per_class, user


# ----------------------------------------------------------------- generated shapes


def _csv(rows: np.ndarray) -> str:
    return "\n".join(",".join(str(v) for v in row) for row in rows) + "\n"


def class_folders(root: Path, rng: np.random.Generator) -> Path:
    """a01..a12/p1..p2/s01..s02.txt: 125 rows of 9 columns, 25 Hz (5 s segments), as the
    Daily and Sports Activities release (a01..a19/p1..p8/s01..s60), smaller."""
    for a in range(1, 13):
        for p in range(1, 3):
            folder = root / f"a{a:02d}" / f"p{p}"
            folder.mkdir(parents=True)
            for s in range(1, 3):
                (folder / f"s{s:02d}.txt").write_text(_csv(rng.normal(size=(125, 9)).round(3)))
    return root


def subject_series(root: Path, rng: np.random.Generator) -> Path:
    """03/, 07/, 12/ each holding 1_raw_data_<time>.txt and 2_raw_data_<time>.txt, with a
    class column and a time in ms (200 Hz): the series number takes the values 1, 2 in
    every folder."""
    for k, user in enumerate((3, 7, 12)):
        folder = root / f"{user:02d}"
        folder.mkdir(parents=True)
        for series in (1, 2):
            lines = ["time\tchannel1\tchannel2\tchannel3\tclass"]
            lines += [
                f"{5 * t}\t{x:.5f}\t{y:.5f}\t{z:.5f}\t{1 + t // 4000}"
                for t, (x, y, z) in enumerate(rng.normal(size=(12000, 3)))
            ]
            stamp = f"{10 + k}-{series:02d}_2{series}.03.16"
            (folder / f"{series}_raw_data_{stamp}.txt").write_text("\n".join(lines) + "\n")
    return root


def subject_trials(root: Path, rng: np.random.Generator) -> Path:
    """SA01/D01_SA01_R01.txt: the subject folder again in the name, activity and trial tokens."""
    for user in ("SA01", "SA02", "SE01"):
        (root / user).mkdir(parents=True)
        for activity in ("D01", "D02", "F01"):
            for trial in (1, 2, 3):
                rows = rng.integers(-300, 300, size=(1400, 3))
                (root / user / f"{activity}_{user}_R{trial:02d}.txt").write_text(_csv(rows))
    return root


def test_class_folders_with_leading_zeros(tmp_path: Path) -> None:
    files = class_folders(tmp_path / "dsa", np.random.default_rng(1))
    args = ["--sampling-rate", "25", "--min-per-class", "2"]
    report, built = init_and_fetch(files, "dsa", tmp_path, args)
    assert "label: the folder 1 level(s) above each file's folder (a01..a12, 12 values)" in report
    assert "user: the folder holding each file (p1, p2, 2 values)" in report
    assert "recording: a token of the file names (s01, s02, 2 values)" in report
    assert "path pattern: 'a{label}/{user}/s{recording}.txt'" in report
    assert "--path-pattern 'a{label}/p{recording}/{user}.txt' takes it" in report
    assert (
        "# read from the paths as 'a{label}/{user}/s{recording}.txt'; another reading, user "
        "from a token of the file names (s01, s02, 2 values): 'a{label}/p{recording}/{user}.txt'"
    ) in drafts["dsa"]
    # 2 files of 125 rows per (user, class), each giving ceil(125 / 75) - 1 = 1 window
    assert built == {f"p{u}": {str(a): 2 for a in range(1, 13)} for u in (1, 2)}
    assert_preview_is_the_build(report, built)


def test_subject_folders_with_series_numbers(tmp_path: Path) -> None:
    files = subject_series(tmp_path / "emg", np.random.default_rng(2))
    report, built = init_and_fetch(files, "emg", tmp_path, [])
    assert "user: the folder holding each file (03..12, 3 values)" in report
    assert "not the user: a token of the file names (1, 2, 2 values)" in report
    assert sorted(built) == ["03", "07", "12"]  # ids stay text
    assert_preview_is_the_build(report, built)


def test_subject_folders_named_again_in_the_files_with_trials(tmp_path: Path) -> None:
    files = subject_trials(tmp_path / "sis", np.random.default_rng(3))
    report, built = init_and_fetch(files, "sis", tmp_path, ["--sampling-rate", "200"])
    assert "its name reappears inside the file names" in report
    assert "recording: a token of the file names (R01..R03, 3 values)" in report
    assert "path pattern: '{user}/{label}_*_R{recording}.txt'" in report
    # 3 trials of 1400 rows per (user, class): ceil(1400 / 600) - 1 = 2 windows each
    assert built == {u: dict.fromkeys(("D01", "D02", "F01"), 6) for u in ("SA01", "SA02", "SE01")}
    assert_preview_is_the_build(report, built)


@pytest.mark.parametrize(
    ("members", "need", "expected"),
    [
        (["x/a1_s2_t3_inertial.mat"], ("label", "user"), "a{label}_{user}_t3_inertial.mat"),
        (["x/Walk/recording-f1.txt"], ("user",), "recording-{user}.txt"),
        (["data/run.csv"], ("user", "label"), "{label}/{user}.csv"),
        (["Walk/rec.txt"], ("label", "user"), "{label}/{user}.txt"),
        (["x/subject7_walking.dat"], ("label", "user"), "{user}_{label}.dat"),
    ],
)
def test_hints_are_built_from_the_files_and_match_them(
    members: list[str], need: tuple[str, ...], expected: str
) -> None:
    from mudata.drafting.selection import compile_path_pattern

    made = hint(members, need)
    assert made == expected
    assert re.search(compile_path_pattern(made), members[0])


# ----------------------------------------------------------------- shared releases


RELEASES = SHARED_DATA / "releases"


def _args(options: dict) -> list[str]:
    args = []
    if "sampling_rate_hz" in options:
        args += ["--sampling-rate", str(options["sampling_rate_hz"])]
    choices = options.get("choices")
    if choices is not None:
        for glob in choices.include:
            args += ["--include", glob]
        if choices.path_pattern:
            args += ["--path-pattern", choices.path_pattern]
    return args


@pytest.mark.release
@pytest.mark.parametrize("name", list(EXPECTED))
def test_preview_equals_fetch_on_the_shared_release(tmp_path: Path, name: str) -> None:
    archive = RELEASES / f"{name}.tar.gz"
    if not archive.is_file():
        pytest.skip(f"{archive} is absent")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower())
    # Every user kept (--min-per-class 0), so that every user's windows are compared,
    # at the default window even where it leaves few users their windows.
    args = [*_args(EXPECTED[name][0]), "--min-per-class", "0"]
    report, built = init_and_fetch(tmp_path / "x", slug, tmp_path, args)
    assert_preview_is_the_build(report, built)


def test_a_feature_table_takes_its_user_from_the_path(tmp_path: Path) -> None:
    """One feature file per user, the user only in the file name: drafted and built."""
    rng = np.random.default_rng(4)
    folder = tmp_path / "feat"
    folder.mkdir()
    expected = {}
    for user in ("s1", "s2", "s3"):
        labels = rng.choice(["walk", "run", "sit"], size=120)
        lines = ["mean_x,mean_y,sd_x,sd_y,activity"]
        lines += [
            ",".join(map(str, row.round(4))) + f",{label}"
            for row, label in zip(rng.normal(size=(120, 4)), labels, strict=True)
        ]
        (folder / f"features_{user}.csv").write_text("\n".join(lines) + "\n")
        expected[user] = {str(c): int((labels == c).sum()) for c in np.unique(labels)}
    report, built = init_and_fetch(folder, "feat", tmp_path, [])
    assert "layout: a feature table" in report
    assert "user: the id at the end of each file name (e.g. 's1'; 3 users)" in report
    assert built == expected
    assert_preview_is_the_build(report, built)


def test_a_role_given_twice_names_the_two_options(tmp_path: Path) -> None:
    files = subject_trials(tmp_path / "sis", np.random.default_rng(3))
    result = CliRunner().invoke(
        mudata_main,
        [
            *("init", str(files), "--name", "sis", "-o", str(tmp_path / "sis.toml")),
            *("--sampling-rate", "200", "--user", "c1", "--path-pattern", "{user}/{label}_*"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "--user 'c1' and the {user} field of --path-pattern" in result.output
    assert "reader_options" not in result.output


@pytest.mark.parametrize("suffix", [".txt", ".dat"])
def test_the_hint_of_a_missing_user_is_made_from_the_files(tmp_path: Path, suffix: str) -> None:
    rng = np.random.default_rng(5)
    for activity in ("Walk", "Run"):
        (tmp_path / "d" / activity).mkdir(parents=True)
        rows = rng.normal(size=(300, 3)).round(3)
        text = "\n".join(" ".join(map(str, row)) for row in rows) + "\n"
        (tmp_path / "d" / activity / f"rec{suffix}").write_text(text)
    result = CliRunner().invoke(
        mudata_main,
        ["init", str(tmp_path / "d"), "--name", "d", "-o", str(tmp_path / "d.toml")],
    )
    assert result.exit_code != 0
    assert (
        f"Name it with --user COL, or say where it sits in the paths, as in --path-pattern '{{label}}/{{user}}{suffix}'"
        in result.output
    )
    assert ".csv" not in result.output


def test_a_long_class_name_is_not_copied_into_every_row() -> None:
    """numpy's fixed-width text made each of the rows as wide as the longest class
    name: one 100,000-character label took 22 GB and 53 s in init on a GeoTec
    subset. The rows hold the names themselves."""
    import tracemalloc

    import pandas as pd

    from mudata.drafting.preview import as_built
    from tests.entries import entry

    long = "L" * 100_000
    made = entry("long-signals", {}, [("walk", "walk"), (long, long)])
    frame = pd.DataFrame(
        {
            "userid": [1] * 2_000,
            "label": ["walk"] * 1_999 + [long],
            "ax": 0.0,
            "ay": 0.0,
            "az": 0.0,
        }
    )
    tracemalloc.start()
    try:
        built = as_built(frame, made)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert built["label"].tolist() == ["walk"] * 1_999 + [long]
    # 2,000 rows x 100,000 characters x 4 bytes would be 800 MB.
    assert peak < 50 * 2**20, peak


@pytest.mark.parametrize(
    ("flag", "column", "role"), [("--recording", "x", "recording"), ("--user", "t", "user")]
)
def test_a_user_or_recording_column_new_every_few_rows_is_named(
    tmp_path, flag, column, role
) -> None:
    """A signal or a time given as the recording (or user) column leaves each row its own
    recording: init said to shorten the window (and before, stopped on int(NaN))."""
    rng = np.random.default_rng(0)
    for user in ("u1", "u2", "u3"):
        xyz = np.cumsum(rng.normal(size=(600, 3)), axis=0)  # signals: each row near the last
        labels = ["walk"] * 300 + ["sit"] * 300
        rows = [
            f"{i / 50:.3f},{x:.5f},{y:.5f},{z:.5f},{lab}"
            for i, ((x, y, z), lab) in enumerate(zip(xyz, labels, strict=True))
        ]
        folder = tmp_path / "data" / user
        folder.mkdir(parents=True)
        (folder / "rec.csv").write_text("t,x,y,z,label\n" + "\n".join(rows) + "\n")
    args = ["init", str(tmp_path / "data"), "--name", "own", "-o", str(tmp_path / "own.toml")]
    plain = CliRunner().invoke(mudata_main, [*args, "--window", "1"])
    assert plain.exit_code == 0, plain.output
    result = CliRunner().invoke(mudata_main, [*args, "--force", "--window", "1", flag, column])
    assert result.exit_code != 0
    assert f"the {role} column '{column}' takes" in result.output, result.output
    assert f"name the column that holds a {role}'s id with --{role} COL" in result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
