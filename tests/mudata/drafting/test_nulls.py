"""Classes that are not activities: init flags them, leaves them out, and checks without them.

Generated releases hold a class 0 ("unmarked data") of 63 % of the rows, named
in a README, in the labels themselves, or by its share alone; the real chest
accelerometer release holds a code 0 (712 rows) that its ``desc.txt`` legend
does not document. Expected windows and calibration sizes are computed here
from the generated segment lengths (``ceil(L / w) - 1`` windows of a sequence
of ``L`` samples, docs/datasets.md), not by the code under test.
"""

from __future__ import annotations

import math
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
from mudata.drafting.nulls import legend, null_classes
from tests.conftest import SHARED_DATA, extract_release

RATE = 50
WINDOW = 150  # 3 s at 50 Hz: init's default window
USERS = (1, 2, 3, 4)
#: Samples of each activity per user, one run each; class 0 fills 63 % of the rows.
ACTIVITY = {1: 1200, 2: 900, 3: 1500}


def _unmarked(activity: int) -> int:
    """Samples of class 0 for ``activity`` samples of the others: 63 % of all rows."""
    return round(activity * 63 / 37)


def unmarked_release(root: Path, *, label0: str = "0", readme: str | None = None) -> Path:
    """One CSV per user, ``timestamp,x,y,z,activity``: class 0 runs between the activities."""
    rng = np.random.default_rng(7)
    root.mkdir(parents=True)
    null_total = _unmarked(sum(ACTIVITY.values()))
    pieces = [null_total // 4] * 3 + [null_total - 3 * (null_total // 4)]
    for user in USERS:
        labels: list[str] = []
        for i, (code, n) in enumerate(ACTIVITY.items()):
            labels += [label0] * pieces[i] + [str(code)] * n
        labels += [label0] * pieces[3]
        signal = rng.normal(size=(len(labels), 3)).round(4)
        lines = ["timestamp,x,y,z,activity"]
        lines += [
            f"{1_600_000_000_000 + 20 * i},{x},{y},{z},{lab}"
            for i, ((x, y, z), lab) in enumerate(zip(signal, labels, strict=True))
        ]
        (root / f"subject_{user}.csv").write_text("\n".join(lines) + "\n")
    if readme is not None:
        (root / "README.txt").write_text(readme)
    return root


def init(files: Path, toml: Path, *args: str) -> str:
    result = CliRunner().invoke(
        mudata_main, ["init", str(files), "--name", "unmarked", "-o", str(toml), "--force", *args]
    )
    assert result.exit_code == 0, result.output
    return result.output


def windows(length: int, window: int = WINDOW) -> int:
    return max(0, math.ceil(length / window) - 1)


README = """A small release.
Labels are codified by numbers:
  0 = unmarked data
  1 = walking
  2 = standing
  3 = cycling
"""


@pytest.mark.parametrize(
    ("label0", "readme", "reason"),
    [
        ("0", README, "README.txt documents it as 'unmarked data'"),
        ("unmarked", None, "its name, 'unmarked', marks no activity"),
        ("0", None, "code 0 holds 63 % of the labelled rows"),
    ],
)
def test_unmarked_class_is_left_out_and_the_checks_run_without_it(
    tmp_path: Path, label0: str, readme: str | None, reason: str
) -> None:
    files = unmarked_release(tmp_path / "release", label0=label0, readme=readme)
    toml = tmp_path / "unmarked.toml"
    report = init(files, toml)
    assert f"(left out, not an activity: {reason}; --keep-class {label0} keeps it)" in report
    draft = tomllib.loads(toml.read_text())
    assert [str(c["code"]) for c in draft["classes"]] == ["1", "2", "3"]
    assert "# [[classes]]  # " in toml.read_text()  # shown, commented out
    # The window lines and calibration sizes count the activities only.
    for user in USERS:
        expected = ", ".join(f"{c}={windows(n)}" for c, n in ACTIVITY.items())
        assert f"  {user}: {expected}\n" in report
    per_user = sum(windows(n) for n in ACTIVITY.values())
    total = per_user * len(USERS)
    mm = math.floor(0.5 * (total - math.floor(0.6 * total)))
    ucm = per_user - math.floor(0.5 * per_user)
    assert f"  mm: {mm} (" in report and f"  ucm: {ucm} (" in report
    # fetch honours the draft: the rows of the unmarked class are dropped and counted.
    data = {
        **draft,
        "title": "t",
        "homepage": "https://example.org/x",
        "citation": "The authors (2026). A release.",
        "licence": "CC-BY-4.0",
    }
    toml.write_text(tomli_w.dumps(data))
    home = tmp_path / "home"
    for step in (["register", str(toml)], ["fetch", "unmarked"]):
        result = CliRunner().invoke(mudata_main, [*step, "--data-home", str(home)])
        assert result.exit_code == 0, result.output
    frame = mudata.load("unmarked", data_home=home).frame
    assert sorted(frame["label"].unique()) == ["1", "2", "3"]
    assert frame.groupby("userid").size().to_dict() == {str(u): per_user for u in USERS}
    record = mudata.provenance("unmarked", data_home=home)
    dropped = record["counts"]["rows_dropped_by_class_code"]
    assert dropped == {label0: _unmarked(sum(ACTIVITY.values())) * len(USERS)}


def test_keep_class_and_drop_class(tmp_path: Path) -> None:
    files = unmarked_release(tmp_path / "release", readme=README)
    toml = tmp_path / "unmarked.toml"
    report = init(files, toml, "--keep-class", "0", "--drop-class", "3")
    assert [c["code"] for c in tomllib.loads(toml.read_text())["classes"]] == [0, 1, 2]
    assert "3: 6000 (left out: --drop-class)" in report
    # The runs of class 0 are joined within a recording (one file per user).
    null = windows(_unmarked(sum(ACTIVITY.values())))
    assert f"  1: 0={null}, 1={windows(1200)}, 2={windows(900)}\n" in report


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--drop-class", "9"],
            "--drop-class '9': no class has this code; the classes the files hold: 0, 1, 2, 3",
        ),
        (["--keep-class", "2", "--drop-class", "2"], "class 2 is given to both"),
        (["--drop-class", "1", "--drop-class", "2"], "keeps fewer than 2 classes"),
    ],
)
def test_bad_class_options_name_the_codes(tmp_path: Path, args: list[str], message: str) -> None:
    files = unmarked_release(tmp_path / "release", readme=README)
    result = CliRunner().invoke(
        mudata_main, ["init", str(files), "--name", "x", "-o", str(tmp_path / "x.toml"), *args]
    )
    assert result.exit_code != 0 and message in result.output, result.output


def test_rules_on_counts_and_legends() -> None:
    counts = {"0": 100, "1": 500, "2": 400}
    assert null_classes(counts) == []  # a small code 0 with no legend is an activity
    named = null_classes({"walk": 5, "Transition": 3, "other": 1, "run": 4})
    assert [f.code for f in named] == ["Transition", "other"]
    docs = {"desc.txt": "Labels:\n--- 1: Walking\n--- 2: Standing\n"}
    assert legend(docs) == ({"1": "Walking", "2": "Standing"}, "desc.txt")
    assert [f.code for f in null_classes(counts, docs)] == ["0"]
    # A numbered list that names few of the codes is not their legend.
    steps = {"INSTALL.txt": "1: unpack\n2: run the script\n"}
    twelve = {str(i): 10 for i in range(1, 13)}
    assert null_classes(twelve, steps) == []
    # Codes written with leading zeros meet the legend's numbers.
    assert null_classes({"01": 5, "02": 5, "03": 5}, docs)[0].code == "03"


@pytest.mark.release
def test_chest_release_undocumented_zero(tmp_path: Path) -> None:
    """desc.txt documents the codes 1-7 only: the 712 rows of code 0 are left out."""
    release = SHARED_DATA / "releases" / "chest_accel_casale_p1-8.tar.gz"
    if not release.is_file():
        pytest.skip(f"shared release not found at {release}")
    with tarfile.open(release) as tf:
        tf.extractall(tmp_path / "x", filter="data")
        desc = next(n for n in tf.getnames() if n.endswith("desc.txt"))
    legend_text = (tmp_path / "x" / desc).read_text()
    assert re.search(r"\b1: Working at Computer", legend_text)
    assert not re.search(r"\b0\s*[:=]", legend_text)  # code 0 is not documented
    toml = tmp_path / "chest.toml"
    report = init(tmp_path / "x", toml, "--sampling-rate", "52")
    assert "0: 712 (left out, not an activity: the class legend of" in report
    assert [c["code"] for c in tomllib.loads(toml.read_text())["classes"]] == list(range(1, 8))


def _one_class(root: Path) -> Path:
    """The files of :func:`unmarked_release` with only the rows of class 1."""
    for csv in unmarked_release(root).glob("*.csv"):
        lines = csv.read_text().splitlines()
        csv.write_text("\n".join([lines[0], *(x for x in lines[1:] if x.endswith(",1"))]) + "\n")
    return root


@pytest.mark.parametrize("label", [(), ("--label", "activity")])
def test_files_of_one_class_say_so(tmp_path: Path, label: tuple[str, ...]) -> None:
    """No option turns one class into a dataset: init says what the files hold,
    where it advised --keep-class for a class nothing had left out."""
    files = _one_class(tmp_path / "release")
    result = CliRunner().invoke(
        mudata_main, ["init", str(files), "--name", "x", "-o", str(tmp_path / "x.toml"), *label]
    )
    assert result.exit_code != 0
    assert "the files hold one class" in result.output, result.output
    assert "--keep-class" not in result.output
    assert not (tmp_path / "x.toml").exists()


@pytest.mark.release
def test_chest_release_of_one_class_says_so(tmp_path: Path) -> None:
    """The chest release's own files, cut to the rows of activity 1."""
    extract_release("chest_accel_casale_p1-8", tmp_path / "x")
    data = next((tmp_path / "x").rglob("1.csv")).parent
    for csv in data.glob("*.csv"):
        rows = [x for x in csv.read_text().splitlines() if x.endswith(",1")]
        csv.write_text("\n".join(rows) + "\n")
    result = CliRunner().invoke(
        mudata_main,
        ["init", str(data), "--name", "c", "-o", str(tmp_path / "c.toml"), "--label", "c5"],
    )
    assert result.exit_code != 0
    assert "the files hold one class in column 'c5' (1)" in result.output, result.output
    assert "--keep-class" not in result.output
