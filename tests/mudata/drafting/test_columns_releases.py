"""``mudata init``'s column detectors on the six real releases of ../shared/data/releases.

Each release is extracted to a temporary folder and drafted as published
(only the options naming what its files cannot say: a sampling rate, a path
pattern, which of two tables is the training one). The expected channels are
those the releases' documentation names (README.md of the releases folder):
no counter, clock or index among them. The detectors are then run on every
data file of each release: a channel of the draft is a signal in every file.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mudata.drafting.columns import non_signal_reason
from mudata.drafting.draft import draft_entry
from mudata.drafting.records import Choices
from mudata.readers.matlab import read_mat
from tests.conftest import SHARED_DATA
from tests.release_shapes import SIGNAL_COLUMNS

RELEASES = SHARED_DATA / "releases"
pytestmark = pytest.mark.release

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
#: release -> (draft options, channels or features expected, columns left out and why)
EXPECTED = {
    "hmp": ({"sampling_rate_hz": 32}, ["c1", "c2", "c3"], {}),
    "chest_accel_casale_p1-8": (
        {"sampling_rate_hz": 52},
        ["c2", "c3", "c4"],
        {"c1": "a row counter (the row number within the rounding of its 5 significant digits"},
    ),
    "geotec_sp_sw_har_s01-s09": (
        {},
        ["x_acc", "y_acc", "z_acc", "x_gyro", "y_gyro", "z_gyro"],
        {},
    ),
    "wle_pml": (
        {"choices": Choices(include=("pml-training.csv.gz",))},
        SIGNAL_COLUMNS,  # the 52 raw signals of the four sensors, in file order
        {
            "Unnamed: 0": "an index column by its name",
            "raw_timestamp_part_2": "time, by its name",
            "num_window": "a window or segment counter",
        },
    ),
    "utd_mhad_inertial": (
        {
            "sampling_rate_hz": 50,
            "choices": Choices(path_pattern="a{label}_s{user}_t{recording}_inertial.mat"),
        },
        ["c1", "c2", "c3", "c4", "c5", "c6"],
        {},
    ),
    "motionsense_sub1-4": (
        {"sampling_rate_hz": 50},
        MOTIONSENSE,
        {"Unnamed: 0": "an index column by its name"},
    ),
}


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not RELEASES.is_dir():
        pytest.skip(f"the shared releases are not at {RELEASES}")
    root = tmp_path_factory.mktemp("releases")
    for name in EXPECTED:
        archive = RELEASES / f"{name}.tar.gz"
        if not archive.is_file():
            pytest.skip(f"{archive} is absent")
        with tarfile.open(archive) as tar:
            tar.extractall(root / name, filter="data")
    return root


def _draft(extracted: Path, name: str, tmp_path: Path):
    options, _, _ = EXPECTED[name]
    return draft_entry([extracted / name], name, output=tmp_path / f"{name}.toml", **options)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_init_drafts_only_signals_as_channels_on_the_real_release(extracted, tmp_path, name):
    draft = _draft(extracted, name, tmp_path)
    options = draft.entry.reader_options
    _, expected, left_out = EXPECTED[name]
    chosen = options.get("channels", options.get("feature_cols"))
    assert chosen == expected
    for column, why in left_out.items():
        line = f"  {column}: {why}"
        assert any(r.startswith(line) for r in draft.report), (line, draft.report)
    if name == "chest_accel_casale_p1-8":
        assert "c1" not in chosen and options["label_col"] == "c5"
    if name == "wle_pml":  # the epoch seconds are the time, though it cannot order the rows
        assert "time: column 'raw_timestamp_part_1', time, by its name" in "\n".join(draft.report)


def _tables(extracted: Path, name: str):
    """Every data file of a release, parsed as the draft reads it (columns named as there)."""
    root = extracted / name
    if name == "hmp":
        for path in sorted(root.rglob("*.txt")):
            if path.parent != root:
                table = pd.read_csv(path, sep=r"\s+", header=None)
                yield path, table.set_axis([f"c{i + 1}" for i in table.columns], axis=1)
    elif name == "chest_accel_casale_p1-8":
        for path in sorted(root.rglob("datasets/*.csv")):
            table = pd.read_csv(path, header=None)
            yield path, table.set_axis([f"c{i + 1}" for i in table.columns], axis=1)
    elif name == "utd_mhad_inertial":
        for path in sorted(root.rglob("*.mat")):
            table = read_mat(path.read_bytes(), path.name)
            yield path, table.set_axis([f"c{i + 1}" for i in table.columns], axis=1)
    elif name == "geotec_sp_sw_har_s01-s09":
        for path in sorted(root.rglob("DATA/s*/s*_*.csv")):
            yield path, pd.read_csv(path)
    elif name == "motionsense_sub1-4":
        for path in sorted(root.rglob("sub_*.csv")):
            yield path, pd.read_csv(path)


@pytest.mark.parametrize("name", [n for n in EXPECTED if n != "wle_pml"])
def test_the_detectors_call_every_channel_a_signal_in_every_file(extracted, name):
    """No file of a release makes a channel look like a counter, a clock or an index,
    and the counter of the chest release is one in each of its files."""
    _, channels, left_out = EXPECTED[name]
    files = 0
    for path, table in _tables(extracted, name):
        files += 1
        for column in channels:
            values = table[column]
            if np.ptp(values.to_numpy(dtype=float)) == 0:
                continue  # a sensor that did not move in a short recording
            assert non_signal_reason(column, values) is None, (path, column)
        for column, why in left_out.items():
            assert non_signal_reason(column, table[column]).startswith(why), (path, column)
    assert files >= 8
