"""Files named by sensor, activity and place (issue 28, 6): the activity is the label.

RealWorld names its files ``acc_walking_chest.csv`` and
``Gyroscope_walking_chest.csv``: two text tokens tied as the label, and the
sensor token won, so the classes were ``acc`` and ``Gyroscope``. A token whose
values name sensors (or places a device was worn) is now neither label nor
user, and since each sensor's file would become rows of its own, init stops
and names the ``--include`` reading one sensor. The releases are written here
with sensor words, separators, places and counts varied.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path, PurePosixPath

import numpy as np
import pytest

from mudata.drafting.draft import draft_entry
from mudata.drafting.records import Choices
from mudata.errors import MudataUsageError as UsageError

CASES = [
    (("acc", "Gyroscope"), ("walking", "running", "sitting"), ("chest", "waist"), "_", 3),
    (("accelerometer", "gyroscope", "magnetometer"), ("walk", "jog"), ("wrist",), "-", 2),
    (("ACC", "GYR"), ("stairs", "lying", "standing", "cycling"), ("thigh", "head", "shin"), "_", 2),
]


def _write(root: Path, sensors, activities, places, sep, n_users) -> list[str]:
    rng = np.random.default_rng(len(activities) + n_users)
    members = []
    for p in range(1, n_users + 1):
        for a in activities:
            for sensor in sensors:
                folder = root / f"proband{p}" / "data" / f"{sensor}{sep}{a}{sep}csv"
                folder.mkdir(parents=True, exist_ok=True)
                for place in places:
                    path = folder / f"{sensor}{sep}{a}{sep}{place}.csv"
                    rows = [
                        f"{i + 1},{1435993498145 + 20 * i},"
                        + ",".join(
                            f"{v:.5f}"
                            for v in np.sin(i * 0.03 * len(a) + np.arange(3))
                            + rng.normal(0, 0.1, 3)
                        )
                        for i in range(1000)
                    ]
                    path.write_text("id,attr_time,attr_x,attr_y,attr_z\n" + "\n".join(rows) + "\n")
                    members.append(path.relative_to(root).as_posix())
    return members


@pytest.mark.parametrize(("sensors", "activities", "places", "sep", "n_users"), CASES)
def test_files_per_sensor_refuse_with_the_include_of_each(
    tmp_path, sensors, activities, places, sep, n_users
):
    """init stops, naming each sensor's --include, and each glob takes that sensor's files."""
    root = tmp_path / "release"
    members = _write(root, sensors, activities, places, sep, n_users)
    with pytest.raises(UsageError, match="the paths name a sensor") as caught:
        draft_entry([root], "rw", output=tmp_path / "d.toml")
    globs = re.findall(r"--include '([^']+)'", str(caught.value))
    assert len(globs) == len(sensors)
    for sensor in sensors:
        glob = next(g for g in globs if sensor in g)
        taken = {m for m in members if fnmatch.fnmatchcase(PurePosixPath(m).name, glob)}
        assert taken == {m for m in members if PurePosixPath(m).name.startswith(sensor + sep)}


@pytest.mark.parametrize(("sensors", "activities", "places", "sep", "n_users"), CASES)
def test_one_sensor_included_gives_the_activities_as_classes(
    tmp_path, sensors, activities, places, sep, n_users
):
    """With the --include init named, the classes are the activities, the users the probands."""
    root = tmp_path / "release"
    _write(root, sensors, activities, places, sep, n_users)
    with pytest.raises(UsageError) as caught:
        draft_entry([root], "rw", output=tmp_path / "d.toml")
    glob = re.findall(r"--include '([^']+)'", str(caught.value))[0]
    draft = draft_entry([root], "rw", output=tmp_path / "d.toml", choices=Choices(include=(glob,)))
    assert sorted(draft.entry.class_names) == sorted(activities)
    report = "\n".join(draft.report)
    assert f"{n_users} kept, 0 dropped" in report
    assert not any(s in draft.entry.class_names for s in sensors)
    if len(places) > 1:
        assert "placement: a token of the file names" in report
