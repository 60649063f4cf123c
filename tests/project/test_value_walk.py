"""The walks of ``scripts/value_walk.py`` as the code runs: a dataset's name and entry
reach few modules, and a threshold's alpha fewer still.

They hold the layout's word on how far a value travels: a change that hands the
entry to another module (where a part of it would do) fails here, with the
modules named.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from tests.conftest import PROJECT_ROOT


def _value_walk() -> ModuleType:
    path = Path(PROJECT_ROOT) / "scripts" / "value_walk.py"
    spec = importlib.util.spec_from_file_location("value_walk", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dataset_name_and_entry_reach_few_modules(tmp_path: Path) -> None:
    walks = _value_walk().fetch_walks(str(tmp_path))
    build = walks["fetch, building"]["takes"]
    # The sources stage reads the entry at its door and in its one view of it;
    # its folders are named by the dataset. Every check takes a ReleaseFile.
    assert {m for m in build if m.startswith("mudata/sources/")} == {
        "mudata/sources/download",
        "mudata/sources/release",
        "mudata/sources/paths",
    }
    for label in ("fetch, cached", "fetch, cached, verify=True"):
        cached = walks[label]["takes"]
        assert len(cached) <= 10, sorted(cached)
        # A cached table is answered without the readers, the build or the downloads.
        assert not {m for m in cached if m.startswith(("mudata/readers/", "mudata/publish/"))}
        assert not cached & {"mudata/building/labelled", "mudata/sources/download"}


def test_alpha_is_held_by_few_modules_on_its_way_to_the_threshold() -> None:
    found = _value_walk().alpha_walk_found()
    # Past the threshold, the per-user verdicts test coverage against 1 - alpha.
    verdicts = ("mueval/guarantees/", "mueval/metrics/diagnostics", "mueval/metrics/frame_checks")
    to_threshold = {m for m in found["takes"] if not m.startswith(verdicts)}
    assert to_threshold == {
        "mueval/api/evaluating",
        "mueval/conformal/sets",
        "mueval/conformal/thresholds",
        "mueval/metrics/array_checks",
    }
    # Between them, one settings object carries it unopened.
    assert "mueval/conformal/settings" in found["carries"]
