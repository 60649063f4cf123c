"""``mudata.load`` in scikit-learn's shape: a Bunch, or ``(X, y, groups)``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import LeaveOneGroupOut
from sklearn.utils import Bunch

import mudata
from tests.tiny_entry import TINY_USERS, tiny_rows, write_tiny_entry


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny dataset, registered through MUDATA_REGISTRY; returns the data home."""
    write_tiny_entry(tmp_path / "registry")
    monkeypatch.setenv("MUDATA_REGISTRY", str(tmp_path / "registry"))
    return tmp_path / "home"


def test_load_returns_a_bunch_with_every_field(tiny: Path) -> None:
    bunch = mudata.load("tiny", data_home=tiny)
    assert isinstance(bunch, Bunch)
    assert set(bunch) == {
        "data",
        "target",
        "groups",
        "frame",
        "feature_names",
        "target_names",
        "provenance",
        "DESCR",
    }
    rows = tiny_rows()
    assert bunch.feature_names == ["f1", "f2"]
    # Registry order of the classes, not alphabetical, not order of appearance by chance.
    assert bunch.target_names == ["up", "down"]
    assert isinstance(bunch.data, pd.DataFrame) and bunch.data.shape == (36, 2)
    np.testing.assert_array_equal(bunch.data.to_numpy(), rows[["f1", "f2"]].to_numpy())
    assert bunch.target.tolist() == rows["what"].tolist()
    # user ids are the users' names, as text
    assert bunch.groups.tolist() == rows["who"].astype(str).tolist()
    assert list(bunch.frame.columns) == ["userid", "label", "f1", "f2"]
    assert bunch.frame.attrs["provenance"]["table_sha256"] == bunch.provenance["sha256"]
    # The same record as mudata.provenance gives for the built table.
    assert bunch.provenance == mudata.provenance("tiny", data_home=tiny)


def test_descr_names_title_counts_licence_and_citation(tiny: Path) -> None:
    descr = mudata.load("tiny", data_home=tiny).DESCR
    assert descr.startswith("A tiny study (tiny, version 1)\n")
    assert "36 rows, 3 users, 2 classes, 2 features." in descr
    assert "Licence: CC0-1.0" in descr
    assert "Someone (2026). A tiny study." in descr


def test_as_frame_false_gives_arrays_and_no_frame(tiny: Path) -> None:
    bunch = mudata.load("tiny", data_home=tiny, as_frame=False)
    assert bunch.frame is None
    assert isinstance(bunch.data, np.ndarray) and bunch.data.dtype == np.float64
    assert bunch.data.shape == (36, 2)
    assert bunch.target.shape == bunch.groups.shape == (36,)
    assert set(bunch.groups.tolist()) == {str(u) for u in TINY_USERS}


@pytest.mark.parametrize("as_frame", [True, False])
def test_return_x_y_is_data_target_groups(tiny: Path, as_frame: bool) -> None:
    X, y, groups = mudata.load("tiny", data_home=tiny, return_X_y=True, as_frame=as_frame)
    bunch = mudata.load("tiny", data_home=tiny, as_frame=as_frame)
    np.testing.assert_array_equal(np.asarray(X), np.asarray(bunch.data))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(bunch.target))
    np.testing.assert_array_equal(np.asarray(groups), np.asarray(bunch.groups))
    # groups are what a leave-one-user-out splitter needs: one fold per user.
    assert LeaveOneGroupOut().get_n_splits(X, y, groups) == len(TINY_USERS)
