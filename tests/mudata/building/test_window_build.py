"""Windows of samples beside the feature table (issue 29, item 5).

Window ``i`` must be row ``i``: each test recomputes features from the windows
(means, maxima, SDs) and compares them with the table's columns, row by row, and
the real-release test recomputes the windows themselves from the release's CSV
with a moving average written here.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import datasets as hf_datasets
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import mudata
import mudata.building.pipeline
from mudata.building.options import BuildOptions
from mudata.building.window_build import build_windows, windows_path
from mudata.cli import main as mudata_main
from mudata.errors import CorruptTableError, MudataUsageError
from mudata.publish.window_store import PROVENANCE_KEY, read_windows
from mudata.registry.lookup import get_entry, load_registry
from tests.motionsense_release import member_bytes, release_zip
from tests.official_formats import make_har70_zip, make_opportunity_zip, opportunity_entry
from tests.official_formats_more import (
    make_harth_zip,
    make_mhealth_zip,
    make_motionsense_zip,
    make_pamap2_zip,
)

SOURCE = {"allow_unverified": True, "progress": False}


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> dict:
    """Features and windows of participants 1-3 of the real MotionSense release."""
    root = tmp_path_factory.mktemp("motionsense")
    manual = root / "release"
    release_zip(manual)
    options = {"data_home": root / "home", "manual_dir": manual, **SOURCE}
    return {
        "options": options,
        "features": mudata.load("motionsense", **options),
        "windows": mudata.load("motionsense", windows=True, **options),
    }


def _sensor_suffixes(n_sensors: int) -> list[str]:
    return [""] + [str(i) for i in range(2, n_sensors + 1)]


def check_rows_line_up(frame: pd.DataFrame, X: np.ndarray, n_sensors: int) -> None:
    """Row i's means, maxima and SDs, recomputed from window i, are the table's row i."""
    assert X.dtype == np.float32 and X.ndim == 3 and X.shape[0] == len(frame)
    assert X.shape[2] == 3 * n_sensors
    wide = X.astype(np.float64)
    for k, suffix in enumerate(_sensor_suffixes(n_sensors)):
        for a, axis in enumerate("XYZ"):
            channel = wide[:, :, 3 * k + a]
            scale = np.abs(channel).max() + 1.0
            np.testing.assert_allclose(
                channel.mean(axis=1), frame[f"mean{axis}{suffix}"], rtol=1e-5, atol=1e-6 * scale
            )
            np.testing.assert_allclose(
                channel.std(axis=1, ddof=1),
                frame[f"sd{axis}{suffix}"],
                rtol=1e-4,
                atol=1e-6 * scale,
            )
            # Rounding to float32 keeps the order: the maximum is exact.
            np.testing.assert_array_equal(
                X[:, :, 3 * k + a].max(axis=1), frame[f"max{axis}{suffix}"].to_numpy(np.float32)
            )


def test_window_i_is_row_i_on_the_real_release(real) -> None:
    features, windows = real["features"], real["windows"]
    assert windows.data.shape == (len(features.frame), 150, 6)
    assert windows.channel_names == [
        c for s in get_entry("motionsense").sensors for c in s.channels
    ]
    assert windows.groups.tolist() == features.groups.tolist()
    assert windows.target.tolist() == features.target.tolist()
    assert windows.target_names == features.target_names
    check_rows_line_up(features.frame, windows.data, 2)
    # The provenance ties the windows to this very table.
    assert windows.provenance["features_table_sha256"] == features.provenance["sha256"]
    assert windows.provenance["sha256"] != features.provenance["sha256"]
    X, y, groups = mudata.load("motionsense", windows=True, return_X_y=True, **real["options"])
    np.testing.assert_array_equal(X, windows.data)
    assert y.tolist() == features.target.tolist() and groups.tolist() == features.groups.tolist()
    arrays = mudata.load("motionsense", windows=True, as_frame=False, **real["options"])
    assert isinstance(arrays.target, np.ndarray) and isinstance(arrays.groups, np.ndarray)
    assert arrays.frame is None and arrays.target.tolist() == y.tolist()


def test_the_windows_are_the_moving_average_of_the_release_samples(real) -> None:
    """A second implementation: the recipe's smoothing of one CSV of the release, by hand."""
    recipe = get_entry("motionsense").recipe
    span, width = int(recipe.smoothing), int(recipe.window)
    raw = pd.read_csv(io.BytesIO(member_bytes("A_DeviceMotion_data/dws_1/sub_1.csv")))
    channels = real["windows"].channel_names
    values = raw[channels].to_numpy(dtype=np.float64)
    # Position i takes the mean of the span samples ending at i, or, for the first
    # span - 1 positions, of the span samples starting at i.
    smoothed = np.empty_like(values)
    for i in range(len(values)):
        lo = i - span + 1 if i >= span - 1 else i
        smoothed[i] = values[lo : lo + span].mean(axis=0)
    rows = np.flatnonzero(
        (real["windows"].groups == "1").to_numpy()
        & (real["windows"].target == "downstairs").to_numpy()
    )
    n_windows = len(values) // width - (len(values) % width == 0)  # the last start is dropped
    assert len(rows) == n_windows > 5
    for k, row in enumerate(rows):
        np.testing.assert_allclose(
            real["windows"].data[row], smoothed[k * width : (k + 1) * width], rtol=1e-6, atol=1e-7
        )


def test_the_file_has_fixed_size_list_columns_and_the_table_provenance(real) -> None:
    entry = get_entry("motionsense")
    path = windows_path(entry, real["options"]["data_home"])
    schema = pq.read_schema(path)
    assert schema.names == ["userid", "label", *real["windows"].channel_names]
    for name in real["windows"].channel_names:
        assert schema.field(name).type == pa.list_(pa.float32(), 150)
    record = json.loads(schema.metadata[PROVENANCE_KEY])
    features = real["features"].provenance
    assert record["table_sha256_kind"] == features["table_sha256_kind"]
    for key in ("dataset", "licence", "citation", "classes", "files", "entry_sha256", "recipe"):
        assert record[key] == features[key], key
    assert record["windows"]["length"] == 150 and record["windows"]["dtype"] == "float32"
    # Plain pyarrow reads a channel as a (n, 150) block of the same values.
    column = pq.read_table(path).column(real["windows"].channel_names[0]).combine_chunks()
    np.testing.assert_array_equal(
        column.flatten().to_numpy().reshape(-1, 150), real["windows"].data[:, :, 0]
    )


def test_polars_reads_the_windows_file_as_fixed_size_arrays(real) -> None:
    """Another Parquet reader than mudata's (polars, as dataframe users read the
    file) sees each channel as an array of the window's length, with the values
    and the row order ``mudata.load`` gives."""
    entry = get_entry("motionsense")
    frame = pl.read_parquet(windows_path(entry, real["options"]["data_home"]))
    windows = real["windows"]
    assert frame.columns == ["userid", "label", *windows.channel_names]
    for c, name in enumerate(windows.channel_names):
        assert frame.schema[name] == pl.Array(pl.Float32, 150)
        np.testing.assert_array_equal(frame[name].to_numpy(), windows.data[:, :, c])
    assert frame["userid"].cast(pl.String).to_list() == [str(g) for g in windows.groups]


def test_hugging_face_datasets_reads_the_windows_file_offline(real, tmp_path, monkeypatch) -> None:
    """Hugging Face ``datasets`` loads the file as a local Parquet dataset, offline,
    each channel a float32 list of the window's length, the rows in mudata's order."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    entry = get_entry("motionsense")
    path = windows_path(entry, real["options"]["data_home"])
    dataset = hf_datasets.Dataset.from_parquet(str(path), cache_dir=str(tmp_path / "cache"))
    windows = real["windows"]
    for c, name in enumerate(windows.channel_names):
        feature = dataset.features[name]
        assert (feature.feature.dtype, feature.length) == ("float32", 150)
        values = np.asarray(dataset.with_format("numpy")[name])
        np.testing.assert_array_equal(values, windows.data[:, :, c])
    assert [str(u) for u in dataset["userid"]] == [str(g) for g in windows.groups]


def test_mudata_fetch_windows_prints_the_windows_path(real) -> None:
    options = real["options"]
    result = CliRunner().invoke(
        mudata_main,
        ["fetch", "motionsense", "--windows", "--data-home", str(options["data_home"]),
         "--manual-dir", str(options["manual_dir"]), "--allow-unverified"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    path = windows_path(get_entry("motionsense"), options["data_home"])
    assert result.stdout.strip().splitlines()[-1] == str(path)
    assert "150 samples x 6 channels" in result.stderr


def test_damaged_windows_are_refused_then_built_again(real, tmp_path, caplog) -> None:
    path = windows_path(get_entry("motionsense"), real["options"]["data_home"])
    original = path.read_bytes()
    arrow = pq.read_table(path)
    name = real["windows"].channel_names[2]
    column = arrow.column(name).combine_chunks()
    values = column.flatten().to_numpy().copy()
    values[1234] += 0.5
    changed = pa.FixedSizeListArray.from_arrays(pa.array(values, pa.float32()), 150)
    arrow = arrow.set_column(arrow.schema.get_field_index(name), name, changed)
    try:
        pq.write_table(arrow, path)  # the metadata (and its hash) are kept
        with pytest.raises(CorruptTableError, match="do not match the hash"):
            read_windows(path)
        rebuilt = mudata.load("motionsense", windows=True, **real["options"])
        np.testing.assert_array_equal(rebuilt.data, real["windows"].data)
        assert "building them again" in caplog.text
    finally:
        path.write_bytes(original)


def _written(path: Path, record: dict, table: pa.Table) -> Path:
    pq.write_table(table.replace_schema_metadata({PROVENANCE_KEY: json.dumps(record)}), path)
    return path


def test_a_windows_file_of_another_layout_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.windows.parquet"
    table = pa.table({"userid": ["1"], "label": ["x"], "a": pa.array([[1.0, 2.0]])})
    record = {"windows": {"length": 4, "channels": ["a"]}, "table_sha256": "0"}
    with pytest.raises(CorruptTableError, match="must be fixed_size_list<item: float>\\[4\\]"):
        read_windows(_written(path, record, table))
    for layout in ({"length": -1, "channels": ["a"]}, {"length": 2, "channels": [1]}, {}):
        with pytest.raises(CorruptTableError, match="expected the columns"):
            read_windows(_written(path, {"windows": layout}, table))
    with pytest.raises(CorruptTableError, match="no readable provenance"):
        read_windows(_written(path, {"table_sha256": "0"}, table))
    fixed = pa.FixedSizeListArray.from_arrays(pa.array([1.0, None], pa.float32()), 2)
    table = pa.table({"userid": ["1"], "label": ["x"], "a": fixed})
    with pytest.raises(CorruptTableError, match="without nulls"):
        read_windows(_written(path, {"windows": {"length": 2, "channels": ["a"]}}, table))
    # Bytes that are not Parquet: damaged, as a cached feature table is said to be.
    path.write_bytes(b"PAR1 not a footer")
    with pytest.raises(CorruptTableError, match=r"the cached windows .* cannot be read .*damaged"):
        read_windows(path)


NOT_WINDOWED = sorted(e.name for e in load_registry().values() if e.recipe.name != "study-window")


@pytest.mark.parametrize("name", NOT_WINDOWED)
def test_builtins_without_windows_say_why(name: str, tmp_path: Path) -> None:
    recipe = get_entry(name).recipe.name
    with pytest.raises(MudataUsageError, match=f"recipe is '{recipe}'"):
        mudata.load(name, windows=True, data_home=tmp_path)
    assert not any(tmp_path.iterdir())  # refused before anything was fetched or built
    result = CliRunner().invoke(
        mudata_main, ["fetch", name, "--windows", "--data-home", str(tmp_path)]
    )
    assert result.exit_code == 2 and "has no windows of samples" in result.output


def _forge(name: str, folder: Path) -> tuple[object, int]:
    """A small archive of ``name`` in its official format; the entry and its sensor count."""
    rng = np.random.default_rng(29)
    folder.mkdir(parents=True)
    if name == "opportunity":
        # The built-in pins each member's hash: a forged archive is this same entry unpinned.
        entry = opportunity_entry()
        (remote,) = entry.files
        target = folder / remote.name
        make_opportunity_zip(target, rng=rng, n_rows=3000)
        entry = dataclasses.replace(entry, files=(dataclasses.replace(remote, path=str(target)),))
        return entry, len(entry.sensors)
    entry = get_entry(name)
    target = folder / entry.files[0].name
    if name == "har70":
        make_har70_zip(target, rng=rng, n_samples=20000)
    elif name == "harth":
        make_harth_zip(target, ("S006", "S008", "S029"), rng)
    elif name == "mhealth":
        make_mhealth_zip(target, (1, 2, 10), rng)
    elif name == "motionsense":
        make_motionsense_zip(target, (1, 2), rng)
    elif name == "pamap2":
        # The pipeline test's release: missing samples drop some windows.
        make_pamap2_zip(
            target, (101, 102, 105), np.random.default_rng(2), n_samples=40000, missing=3
        )
    return entry, len(entry.sensors)


WINDOWED = sorted(e.name for e in load_registry().values() if e.recipe.name == "study-window")


def test_every_study_window_builtin_is_covered_below() -> None:
    assert WINDOWED == ["har70", "harth", "mhealth", "motionsense", "opportunity", "pamap2"]


#: Releases large enough for every class of every user take more than 10 s to build.
SLOW = {"mhealth", "opportunity", "pamap2"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in WINDOWED]
)
def test_every_study_window_builtin_lines_up_with_its_table(name: str, tmp_path: Path) -> None:
    entry, n_sensors = _forge(name, tmp_path / "release")
    options = {"data_home": tmp_path / "home", "manual_dir": tmp_path / "release", **SOURCE}
    path, windows = build_windows(entry, BuildOptions(**options))
    # The feature table, as load serves it (build_windows built it first).
    table = mudata.building.pipeline.build_frame(entry, BuildOptions(**options))[1]
    assert path == windows_path(entry, tmp_path / "home")
    assert windows.groups.tolist() == table["userid"].astype(str).tolist()
    assert windows.y.tolist() == table["label"].astype(str).tolist()
    assert windows.X.shape[1] == entry.recipe.window
    check_rows_line_up(table, windows.X, n_sensors)
