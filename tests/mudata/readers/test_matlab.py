"""MATLAB files whose samples sit inside a struct (``save(name, 'data')`` of a struct).

USC-HAD's shape, as some releases publish it: each trial a ``.mat`` file
holding one struct (``data``) whose fields are text (subject, activity,
sensor location) and one numeric array of samples (``sensor_readings``).
Generated here with other struct and field names, nesting, column counts and
text fields: the reader lists the fields, takes a dotted path
(``variable = "data.sensor_readings"``), and finds the one numeric 2-D array
of a struct by itself, as at the top level; init then drafts from it.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from scipy.io import savemat

from mudata.drafting.draft import draft_entry
from mudata.drafting.records import Choices
from mudata.errors import LimitError, ParseError
from mudata.readers.matlab import mat_struct_fields, read_mat


def mat_bytes(content: dict, compress: bool = True) -> bytes:
    out = io.BytesIO()
    savemat(out, content, do_compression=compress)
    return out.getvalue()


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize(
    ("struct", "field", "columns"),
    [("data", "sensor_readings", 6), ("trial", "acc", 3), ("record", "samples", 8)],
)
def test_the_one_array_of_a_struct_is_found_and_named_by_its_path(struct, field, columns, compress):
    rng = np.random.default_rng(columns)
    readings = rng.normal(size=(50 + columns, columns))
    content = {
        struct: {
            "subject": "3",
            "activity": "Walking Forward",
            field: readings,
            "activity_number": "4",
        }
    }
    data = mat_bytes(content, compress)
    found = read_mat(data, "a1t1.mat")
    assert found.shape == readings.shape and np.allclose(found.to_numpy(), readings)
    named = read_mat(data, "a1t1.mat", f"{struct}.{field}")
    assert np.allclose(named.to_numpy(), readings)
    fields = mat_struct_fields(data, "a1t1.mat")
    assert list(fields) == [f"{struct}.{k}" for k in content[struct]]


def test_nested_structs_are_searched_and_scalars_are_no_sample_array():
    readings = np.arange(40.0).reshape(10, 4)
    data = mat_bytes({"s": {"meta": {"rate": 100.0}, "imu": {"raw": readings}, "n": 7.0}})
    assert np.allclose(read_mat(data, "x.mat").to_numpy(), readings)
    assert np.allclose(read_mat(data, "x.mat", "s.imu.raw").to_numpy(), readings)


def test_two_arrays_in_a_struct_are_listed_with_the_option_to_give():
    data = mat_bytes({"data": {"acc": np.ones((5, 3)), "gyro": np.zeros((5, 3)), "who": "u1"}})
    with pytest.raises(ParseError) as caught:
        read_mat(data, "t.mat")
    message = str(caught.value)
    assert "data.acc (5x3 float64)" in message and "data.gyro (5x3 float64)" in message
    assert "data.who (text)" in message and "variable = 'data.acc'" in message
    assert read_mat(data, "t.mat", "data.gyro").shape == (5, 3)


@pytest.mark.parametrize("name", ["data.who", "data.mag", "gyro"])
def test_a_path_to_no_numeric_array_names_the_fields(name):
    data = mat_bytes({"data": {"acc": np.ones((5, 3)), "who": "u1"}})
    with pytest.raises(ParseError, match=rf"no numeric 2-D variable '{name}'.*data\.acc"):
        read_mat(data, "t.mat", name)


def test_top_level_arrays_are_read_as_before():
    data = mat_bytes({"acc": np.ones((5, 3)), "data": {"gyro": np.zeros((5, 3))}})
    assert read_mat(data, "t.mat").iloc[0, 0] == 1.0  # the top-level array, as before
    assert read_mat(data, "t.mat", "data.gyro").iloc[0, 0] == 0.0


def test_a_struct_inflating_past_the_cap_is_refused_before_it_is_read():
    # 80 MB of zeros in a file of 80 KB: past the cap's floor of 64 MB.
    data = mat_bytes({"data": {"big": np.zeros((10_000, 1000))}})
    assert len(data) < 200_000
    with pytest.raises(LimitError, match="inflate past"):
        read_mat(data, "bomb.mat", ratio=10)
    assert read_mat(data, "bomb.mat", ratio=1e4).shape == (10_000, 1000)


def test_init_drafts_a_release_of_structs(tmp_path: Path):
    """Subjects' folders of trials, a struct per file: drafted, read, counted."""
    rng = np.random.default_rng(5)
    rows = {}
    for subject in (1, 2, 3):
        folder = tmp_path / "release" / f"Subject{subject}"
        folder.mkdir(parents=True)
        for activity in (1, 2):
            for trial in (1, 2):
                n = 400 + 10 * subject + trial
                rows[(subject, activity)] = rows.get((subject, activity), 0) + n
                readings = rng.normal(size=(n, 6))
                savemat(
                    folder / f"a{activity}t{trial}.mat",
                    {"data": {"title": "a release", "sensor_readings": readings}},
                )
    choices = Choices(path_pattern="Subject{user}/a{label}t{recording}.mat")
    draft = draft_entry(
        [tmp_path / "release"],
        "structs",
        output=tmp_path / "s.toml",
        sampling_rate_hz=100,
        choices=choices,
    )
    assert draft.entry.reader_options["format"] == "mat"
    assert len(draft.entry.reader_options.get("channels", [])) == 6
    text = "\n".join(draft.report)
    for activity in (1, 2):
        assert f"{activity}: {sum(n for (s, a), n in rows.items() if a == activity)}" in text


@pytest.mark.parametrize("data", [b"", b"MATLAB", b"\x00" * 10], ids=["empty", "6-bytes", "nuls"])
def test_an_empty_or_cut_mat_file_is_a_parse_error_naming_it(data: bytes) -> None:
    """scipy's MatReadError is no ValueError: an empty .mat file was an internal error."""
    from mudata.readers.matlab import mat_directory

    with pytest.raises(ParseError, match=r"^a1_s2_t1_inertial.mat: cannot be read as a MATLAB"):
        mat_directory(data, "a1_s2_t1_inertial.mat")
