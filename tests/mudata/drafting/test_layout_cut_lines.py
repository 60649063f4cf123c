"""A line cut short in the first file does not change init's layout.

Without a time column, init tells raw signals from a feature table by the
lag-1 correlation of successive rows. One line cut to its first field leaves
an empty cell in every column, which made every column's correlation NaN: the
MotionSense release, one line cut, was drafted as a feature table at 1 Hz
(its draft built 1,751 rows of raw samples as examples). The correlation is
now taken over the pairs of successive values that are both numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result

from mudata.cli import main as mudata_main
from mudata.drafting.layout import _lag1
from tests.conftest import extract_release


def test_lag1_skips_the_pairs_with_a_missing_value() -> None:
    i = np.arange(500)
    smooth = pd.DataFrame({"x": np.sin(i / 20), "y": np.cos(i / 30)})
    expected = _lag1(smooth, ["x", "y"])
    assert expected > 0.99
    cut = smooth.copy()
    cut.loc[[7, 300], ["x", "y"]] = np.nan
    assert _lag1(cut, ["x", "y"]) == pytest.approx(expected, abs=1e-3)
    noise = pd.DataFrame(np.random.default_rng(0).normal(size=(500, 2)), columns=["x", "y"])
    noise.loc[7] = np.nan
    assert abs(_lag1(noise, ["x", "y"])) < 0.15


def _signals_release(root: Path, sep: str, cut: int) -> Path:
    """Three users' smooth signals, two activities, ``user,activity,x,y,z``;
    line ``cut`` of the first user's file cut to its first field."""
    root.mkdir()
    i = np.arange(600)
    for user in (1, 2, 3):
        frame = pd.DataFrame(
            {
                "user": user,
                "activity": np.repeat(["walk", "sit"], 300),
                "x": np.sin(i / (10 + user)),
                "y": np.cos(i / 15),
                "z": np.sin(i / 40) * 2,
            }
        )
        lines = frame.to_csv(sep=sep, index=False, float_format="%.5f").splitlines()
        if user == 1:
            lines[cut] = lines[cut].split(sep)[0]
        (root / f"u{user}.csv").write_text("\n".join(lines) + "\n")
    return root


@pytest.mark.parametrize("cut", [2, 150, 599])
@pytest.mark.parametrize("sep", [",", ";", "\t"], ids=["comma", "semicolon", "tab"])
def test_signals_with_a_line_cut_short_stay_signals(tmp_path: Path, sep: str, cut: int) -> None:
    release = _signals_release(tmp_path / "release", sep, cut)
    toml = tmp_path / "s.toml"
    args = ["--label", "activity", "--user", "user", "--sampling-rate", "50"]
    result = CliRunner().invoke(
        mudata_main, ["init", str(release), "--name", "s", "-o", str(toml), *args]
    )
    assert result.exit_code == 0, result.output
    assert "layout: raw signals (lag-1 correlation of successive rows" in result.output


def init_motionsense_with(tmp_path: Path, line: int, edit: Callable[[str], str]) -> Result:
    """``mudata init`` (at 50 Hz) of the MotionSense release with line ``line``
    of ``sub_1.csv`` in ``dws_1``, the file init reads first, edited."""
    extract_release("motionsense_sub1-4", tmp_path / "x")
    data = next((tmp_path / "x").rglob("A_DeviceMotion_data"))
    first = data / "dws_1" / "sub_1.csv"
    lines = first.read_text().splitlines(keepends=True)
    lines[line] = edit(lines[line].rstrip("\n")) + "\n"
    first.write_text("".join(lines))
    out = tmp_path / "m.toml"
    args = ["init", str(data), "--name", "ms", "-o", str(out), "--sampling-rate", "50"]
    return CliRunner().invoke(mudata_main, args)


@pytest.mark.release
@pytest.mark.parametrize("line", [3, 500, 1700])
def test_motionsense_with_a_line_cut_short_is_drafted_as_signals(tmp_path: Path, line: int) -> None:
    result = init_motionsense_with(tmp_path, line, lambda text: text.split(",")[0])
    assert result.exit_code == 0, result.output
    assert "layout: raw signals" in result.output
    assert "not used by a feature table" not in result.output


def test_files_of_one_counter_column_are_told_what_is_missing(tmp_path: Path) -> None:
    """One column, a row counter: every column had another role, and the search
    for a label column among none ended in an internal IndexError."""
    for user in (1, 2, 3):
        (tmp_path / f"u{user}.txt").write_text("\n".join(map(str, range(501))) + "\n")
    result = CliRunner().invoke(
        mudata_main, ["init", str(tmp_path), "--name", "o", "-o", str(tmp_path / "o.toml")]
    )
    assert result.exit_code != 0
    assert "internal error" not in result.output
    assert "no label column" in result.output and "Columns of u1.txt: ['c1']" in result.output
