"""The six shared real releases go init -> register -> fetch -> evaluate (issue 28, item 9).

Each release of ``../shared/data/releases`` is extracted to a temporary folder
and driven as a new user drives it: ``mudata init`` plain first, then with
the options its own output names (at most two), the metadata filled in,
``mudata register``, ``mudata fetch`` and ``mueval evaluate --iterations 1``
(MM, naive Bayes). Every option added must be named by the attempt before it.

The table is checked against counts made here from the extracted files, with
numpy, pandas and scipy and none of mudata's readers: each file parsed by the
layout the releases' README describes (``../shared/data/releases/README.md``),
its samples grouped by user, class and recording (one per file), the windows
of the drafted length cut as the study's recipe does (``docs/datasets.md``,
"The windowing recipe": a 10-sample moving average, windows starting every
``w`` samples, the last start dropped, a window dropped when a tri-axial
channel is constant in it), then the user filter (5 windows of every class).
Classes are the release's documented ones, less those fewer than 2 users have
5 windows of even of 0.5 s (no window could keep 2 users with them). The
drafted channels are the README's signals, named exactly.

``pytest -s`` prints, per release, the init command, the attempts, each
step's time and what the plain draft got right.
"""

from __future__ import annotations

import math
import re
import tarfile
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.io
from click.testing import CliRunner

from mudata.cli import main as mudata_main
from mueval.cli.main import main as mueval_main
from tests.conftest import SHARED_DATA
from tests.release_shapes import SIGNAL_COLUMNS

RELEASES = SHARED_DATA / "releases"
pytestmark = pytest.mark.release

SMOOTHING = 10
MIN_PER_CLASS = 5


@dataclass
class Recording:
    """One data file as read here: its user, a label per sample, the channels' values."""

    user: str
    labels: np.ndarray
    values: np.ndarray  # samples x channels, in the order of the drafted channels


@dataclass
class Release:
    archive: str
    attempts: list[list[str]]  # init's options, attempt by attempt (the last one builds)
    channels: list[str]
    users: int  # in this copy, as the releases' README counts them
    triaxial: list[list[int]] = field(default_factory=list)  # channel positions of each sensor
    rate: float | None = None  # the documented sampling rate (Hz)


MOTIONSENSE = [
    f"{group}.{axis}"
    for group, axes in (
        ("attitude", ("roll", "pitch", "yaw")),
        ("gravity", "xyz"),
        ("rotationRate", "xyz"),
        ("userAcceleration", "xyz"),
    )
    for axis in axes
]
GEOTEC = ["x_acc", "y_acc", "z_acc", "x_gyro", "y_gyro", "z_gyro"]
THREES = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]

# The rates are the releases' own documentation: HMP's MANUAL.txt and the
# chest release's readme.md (checked below), UTD-MHAD's and MotionSense's in the
# releases' README (they ship none); GeoTec's is read from its timestamps.
SPECS = {
    "hmp": Release(
        "hmp",
        [[], ["--sampling-rate", "32", "--window", "2.5"]],
        ["c1", "c2", "c3"],
        16,
        THREES[:1],
        32,
    ),
    "chest": Release(
        "chest_accel_casale_p1-8",
        [[], ["--sampling-rate", "52"]],
        ["c2", "c3", "c4"],
        8,
        THREES[:1],
        52,
    ),
    "geotec": Release(
        "geotec_sp_sw_har_s01-s09", [[], ["--window", "1"]], GEOTEC, 9, THREES[:2], 100
    ),
    "wle": Release("wle_pml", [[]], SIGNAL_COLUMNS, 6),
    "utd": Release(
        "utd_mhad_inertial",
        [[], ["--sampling-rate", "50", "--window", "1"]],
        [f"c{i}" for i in range(1, 7)],
        8,
        THREES[:2],
        50,
    ),
    "motionsense": Release(
        "motionsense_sub1-4", [[], ["--sampling-rate", "50"]], MOTIONSENSE, 4, THREES, 50
    ),
}


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not RELEASES.is_dir():
        pytest.skip(f"the shared releases are not at {RELEASES}")
    root = tmp_path_factory.mktemp("releases")
    for name, spec in SPECS.items():
        archive = RELEASES / f"{spec.archive}.tar.gz"
        if not archive.is_file():
            pytest.skip(f"{archive} is absent")
        with tarfile.open(archive) as tar:
            tar.extractall(root / name, filter="data")
    return root


# --- the files, read here ----------------------------------------------------------------


def _hmp(root: Path) -> Iterator[Recording]:
    for path in sorted(root.glob("*/*.txt")):
        user = re.search(r"-([fm]\d+)\.txt$", path.name).group(1)
        values = pd.read_csv(path, sep=r"\s+", header=None).to_numpy(dtype=float)
        yield Recording(user, np.full(len(values), path.parent.name), values)


def _chest(root: Path) -> Iterator[Recording]:
    for path in sorted(root.rglob("datasets/*.csv")):
        table = pd.read_csv(path, header=None)  # seq, x, y, z, label
        labels = table[4].astype(int).astype(str).to_numpy()
        yield Recording(path.stem, labels, table[[1, 2, 3]].to_numpy(dtype=float))


def _geotec(root: Path) -> Iterator[Recording]:
    for path in sorted(root.glob("DATA/s*/s*_*_s[pw].csv")):
        table = pd.read_csv(path)
        user = path.name.split("_")[0]
        yield Recording(user, table["label"].to_numpy(str), table[GEOTEC].to_numpy(float))


def _utd(root: Path) -> Iterator[Recording]:
    for path in sorted(root.rglob("*_inertial.mat")):
        action, subject = re.match(r"a(\d+)_(s\d+)_t\d+_inertial\.mat$", path.name).groups()
        values = np.asarray(scipy.io.loadmat(path)["d_iner"], dtype=float)
        yield Recording(subject, np.full(len(values), action), values)


def _motionsense(root: Path) -> Iterator[Recording]:
    for path in sorted(root.glob("A_DeviceMotion_data/*_*/sub_*.csv")):
        activity = path.parent.name.split("_")[0]
        user = path.stem.removeprefix("sub_")
        table = pd.read_csv(path)
        yield Recording(user, np.full(len(table), activity), table[MOTIONSENSE].to_numpy(float))


READ: dict[str, Callable[[Path], Iterator[Recording]]] = {
    "hmp": _hmp,
    "chest": _chest,
    "geotec": _geotec,
    "utd": _utd,
    "motionsense": _motionsense,
}


def _documented_classes(name: str, root: Path, recordings: list[Recording]) -> set[str]:
    """The classes the release's documentation names (README.md of the releases)."""
    if name == "chest":  # the legend desc.txt: "--- 1: Working at Computer" ... 7
        (legend,) = root.rglob("desc.txt")
        return set(re.findall(r"--- (\d+): ", legend.read_text(encoding="utf-8")))
    seen = {str(label) for r in recordings for label in np.unique(r.labels)}
    if name == "hmp":  # 14 activity folders
        assert seen == {p.name for p in root.iterdir() if p.is_dir()} and len(seen) == 14
    counts = {"hmp": 14, "geotec": 5, "utd": 27, "motionsense": 6}
    assert len(seen) == counts[name], sorted(seen)
    return seen


# --- the recipe, counted here ------------------------------------------------------------


def _smoothed(values: np.ndarray) -> np.ndarray:
    """The 10-sample moving average: at 1-based i >= 10 the mean of i-9..i, before that
    of i..i+9 (docs/datasets.md)."""
    total = np.vstack([np.zeros((1, values.shape[1])), np.cumsum(values, axis=0)])
    trailing = (total[SMOOTHING:] - total[:-SMOOTHING]) / SMOOTHING  # mean ending at i
    head = trailing[: SMOOTHING - 1]  # the mean of i..i+9 is the one ending at i+9
    return np.vstack([head, trailing])


def _windows(values: np.ndarray, width: int, triaxial: list[list[int]]) -> int:
    """Windows of ``width`` one (user, class, recording) sequence gives, with every
    tri-axial correlation defined."""
    n = max(0, math.ceil(len(values) / width) - 1)
    if n == 0:
        return 0
    cut = _smoothed(values)[: n * width].reshape(n, width, values.shape[1])
    spread = np.ptp(cut, axis=1)  # windows x channels
    flat = spread <= 1e-9 * (1 + np.abs(cut).max(axis=1))
    undefined = np.zeros(n, dtype=bool)
    for sensor in triaxial:
        undefined |= flat[:, sensor].any(axis=1)
    return int(n - undefined.sum())


def _lengths(recordings: list[Recording], classes: set[str]) -> Iterator[tuple[str, str, int]]:
    for r in recordings:
        for label in classes & set(np.unique(r.labels).astype(str)):
            yield r.user, label, int((r.labels == label).sum())


def _few_users_classes(recordings: list[Recording], classes: set[str], rate: float) -> set[str]:
    """Classes fewer than 2 users have 5 windows of, even of 0.5 s (sample counts alone)."""
    width = max(2, round(0.5 * rate))
    per = pd.DataFrame(_lengths(recordings, classes), columns=["user", "label", "n"])
    per["windows"] = np.maximum(0, -(-per["n"] // width) - 1)
    table = per.groupby(["user", "label"])["windows"].sum().unstack(fill_value=0)
    table = table.reindex(columns=sorted(classes), fill_value=0)
    return {c for c in table.columns if int((table[c] >= MIN_PER_CLASS).sum()) < 2}


def _expected(recordings: list[Recording], classes: set[str], width: int, triaxial) -> pd.Series:
    """Rows per (user, class) of the built table: windows, then the user filter."""
    counts: dict[tuple[str, str], int] = {}
    for r in recordings:
        for label in classes & set(np.unique(r.labels).astype(str)):
            key = (r.user, label)
            counts[key] = counts.get(key, 0) + _windows(
                r.values[r.labels == label], width, triaxial
            )
    table = pd.Series(counts).unstack(fill_value=0).reindex(columns=sorted(classes), fill_value=0)
    kept = table[(table >= MIN_PER_CLASS).all(axis=1)]
    return kept.stack().rename("rows")


# --- the user's steps --------------------------------------------------------------------


def _invoke(program, args: list[str]):
    started = time.perf_counter()
    result = CliRunner().invoke(program, args, catch_exceptions=False)
    return result, time.perf_counter() - started


def _fill_in(toml: Path) -> None:
    """The user's edit: the three placeholders replaced, nothing else."""
    text = toml.read_text(encoding="utf-8")
    for key, value in (
        ("homepage", '"https://example.org/release"'),
        ("citation", '"The authors (2013). A release."'),
        ("licence", '"CC-BY-4.0"'),
    ):
        text, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M)
        assert n == 1, key
    toml.write_text(text, encoding="utf-8")


def _plain_verdict(result, toml: Path, spec: Release) -> str:
    """What the draft of plain ``init`` got right, in a few words."""
    if result.exit_code != 0:
        return "no draft: " + result.output.strip().splitlines()[-1][:90]
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    options = draft["reader_options"]
    chosen = options.get("channels", options.get("feature_cols"))
    right = ["channels" if chosen == spec.channels else "channels WRONG"]
    right.append(f"{len(draft['classes'])} classes")
    passing = re.search(r"user filter \(.*\): (\d+) kept", result.output)
    right.append(f"{passing.group(1)} users pass" if passing else "no filter preview")
    return ", ".join(right)


@pytest.mark.parametrize("name", list(SPECS))
def test_the_real_release_registers_fetches_and_evaluates(extracted, tmp_path, name):
    spec = SPECS[name]
    root = extracted / name
    home = str(tmp_path / "home")
    toml = tmp_path / f"{name}.toml"
    times: dict[str, float] = {}
    # init, plain first; each option added is one the previous attempt named
    output = ""
    plain = ""
    for attempt, options in enumerate(spec.attempts):
        previous = spec.attempts[attempt - 1] if attempt else []
        for option in options:
            if option.startswith("--") and option not in previous:
                assert option in output, (option, output)
        if "--window" in options and "--window" not in previous:
            window = options[options.index("--window") + 1]
            assert f"--window {window} " in output, output
        args = ["init", str(root), "--name", name, "-o", str(toml), "--force", *options]
        result, times[f"init {attempt + 1}"] = _invoke(mudata_main, args)
        output = result.output
        if attempt == 0:
            plain = _plain_verdict(result, toml, spec)
        if attempt < len(spec.attempts) - 1:  # the options were needed
            assert result.exit_code != 0 or "fewer than 2 users pass" in output, output
    assert result.exit_code == 0, output
    assert len([o for o in spec.attempts[-1] if o.startswith("--")]) <= 2
    if spec.rate in (32, 52):  # the rate given is the documented one
        docs = " ".join(
            p.read_text(encoding="utf-8")
            for p in root.rglob("*.*")
            if p.name.lower() in ("manual.txt", "readme.md")
        )
        assert f"{spec.rate:g} Hz" in docs or f"{spec.rate:g}Hz" in docs
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    options = draft["reader_options"]
    assert options.get("channels", options.get("feature_cols")) == spec.channels

    _fill_in(toml)
    result, times["register"] = _invoke(mudata_main, ["register", str(toml), "--data-home", home])
    assert result.exit_code == 0, result.output
    result, times["fetch"] = _invoke(mudata_main, ["fetch", name, "--data-home", home])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(Path(result.output.strip().splitlines()[-1]))
    evaluate = ["evaluate", "--dataset", name, "--data-home", home, "-s", "mm", "-c", "nb"]
    result, times["evaluate"] = _invoke(mueval_main, [*evaluate, "--iterations", "1"])
    assert result.exit_code == 0, result.output
    assert "MM (mixed): mean±SD over 1 iterations" in result.output
    assert "coverage (%)" in result.output

    built = table.groupby(["userid", "label"]).size().rename("rows")
    if name == "wle":  # a feature table: one row per labelled row of the training file
        (training,) = root.glob("pml-training.csv.gz")
        source = pd.read_csv(training, low_memory=False)
        expected = source.groupby(["user_name", "classe"]).size().rename("rows")
        assert len(source) == 19622 and set(source["classe"]) == set("ABCDE")
        assert source["user_name"].nunique() == spec.users
        assert list(table.columns[2:]) == spec.channels
    else:
        recordings = list(READ[name](root))
        assert len({r.user for r in recordings}) == spec.users
        classes = _documented_classes(name, root, recordings)
        classes -= _few_users_classes(recordings, classes, spec.rate)
        width = draft["recipe"]["window"]
        given = spec.attempts[-1]
        seconds = float(given[given.index("--window") + 1]) if "--window" in given else 3.0
        assert width == round(seconds * spec.rate)
        sensors = [[spec.channels.index(c) for c in s["channels"]] for s in draft["sensors"]]
        assert sensors == spec.triaxial
        assert all(s["features"] == "tri-axial" for s in draft["sensors"])
        expected = _expected(recordings, classes, width, spec.triaxial)
        assert set(table["label"]) == classes
    expected.index = expected.index.set_names(["userid", "label"])
    assert built.sort_index().to_dict() == expected.sort_index().to_dict()
    users = sorted(table["userid"].unique())
    print(
        f"\n{name}: mudata init {' '.join(spec.attempts[-1]) or '(plain)'}; "
        f"{len(spec.attempts)} attempt(s); plain draft: {plain}\n  "
        + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in times.items())
        + f"\n  {len(table)} rows, {len(users)} users, {table['label'].nunique()} classes"
    )
