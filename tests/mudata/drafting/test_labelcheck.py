"""A signal column taken as the label is refused before the build, with the label to give.

``--label ax`` used to end in "give a shorter --window" and a list of thousands
of classes: every sample its own class, no window of one class. init now sees
a class per sample (a label that changes at nearly every row, nearly as many
classes as rows, or fractional numbers) and names the columns that hold a
label's runs, or the path template that takes the label from the file names.

The releases are written here with names, separators, rates and counts varied.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from mudata.cli import main
from mudata.drafting.labelcheck import label_candidates, per_sample_label


def _release(
    root: Path,
    rng: np.random.Generator,
    *,
    sep: str,
    rate: float,
    users: int,
    label_column: str | None,
    integers: bool = False,
) -> Path:
    root.mkdir()
    for u in range(1, users + 1):
        for activity in ("walking", "sitting", "lying"):
            n = 400
            values = rng.normal(0, 40 if integers else 1, size=(n, 3))
            values = values.round(0 if integers else 3)
            times = np.arange(n) / rate
            head = ["t", "acc_x", "acc_y", "acc_z"] + ([label_column] if label_column else [])
            rows = [
                sep.join(
                    [f"{t:.4f}", *(f"{v:g}" for v in row)] + ([activity] if label_column else [])
                )
                for t, row in zip(times, values, strict=True)
            ]
            (root / f"u{u}_{activity}.csv").write_text(sep.join(head) + "\n" + "\n".join(rows))
    return root


def _init(tmp_path: Path, folder: Path, *options: str) -> tuple[int, str]:
    args = ["init", str(folder), "--name", "x", "-o", str(tmp_path / "x.toml"), *options]
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("sep", "rate", "users", "label_column", "integers"),
    [
        (",", 50.0, 3, "activity", False),
        (";", 32.0, 2, "Behaviour", True),
        ("\t", 100.0, 4, "class", False),
    ],
)
def test_a_signal_given_as_the_label_names_the_label_column(
    tmp_path, sep, rate, users, label_column, integers
):
    folder = _release(
        tmp_path / "rel",
        np.random.default_rng(users),
        sep=sep,
        rate=rate,
        users=users,
        label_column=label_column,
        integers=integers,
    )
    code, output = _init(tmp_path, folder, "--label", "acc_y")
    assert code != 0
    assert "'acc_y'" in output and "a class per sample" in output
    assert f"--label COL; columns that hold a label's runs: {label_column!r}" in output
    assert "--window" not in output  # the window is not what is wrong
    assert not (tmp_path / "x.toml").exists()
    # The option it names builds: the draft with that label has the 3 activities.
    code, output = _init(tmp_path, folder, "--label", label_column)
    assert code == 0, output
    drafted = tomllib.loads((tmp_path / "x.toml").read_text(encoding="utf-8"))
    assert sorted(c["name"] for c in drafted["classes"]) == ["lying", "sitting", "walking"]


@pytest.mark.parametrize("sep", ["_", "-"])
def test_with_no_label_column_the_path_template_is_named(tmp_path, sep):
    folder = _release(
        tmp_path / "rel", np.random.default_rng(7), sep=",", rate=50.0, users=3, label_column=None
    )
    for path in folder.iterdir():
        path.rename(path.with_name(path.name.replace("_", sep)))
    code, output = _init(tmp_path, folder, "--label", "acc_x")
    assert code != 0
    assert "a class per sample" in output
    assert f"--path-pattern '{{user}}{sep}{{label}}.csv'" in output


def test_the_check_on_frames():
    rng = np.random.default_rng(1)
    n = 300
    held = np.repeat(["walk", "sit", "stand"], n // 3)
    frame = pd.DataFrame({"userid": "1", "label": held})
    assert per_sample_label(frame, "activity") is None
    codes = np.repeat([1, 2, 3], n // 3)
    assert per_sample_label(pd.DataFrame({"userid": "1", "label": codes}), "a") is None
    ints = rng.integers(-60, 60, n)  # an integer signal: changes at nearly every row
    why = per_sample_label(pd.DataFrame({"userid": "1", "label": ints}), "ax")
    assert why is not None and "changes value at" in why
    floats = rng.normal(size=n)
    why = per_sample_label(pd.DataFrame({"userid": "1", "label": floats}), "ax")
    assert why is not None and "fractional numbers" in why
    # A counter-like label: one value per row, never repeated, in every recording.
    frame = pd.DataFrame(
        {"userid": "1", "recording": np.repeat([1, 2], n // 2), "label": np.arange(n)}
    )
    assert "changes value" in per_sample_label(frame, "id")
    # Recordings switch classes at their edges only: a label, though each recording is short.
    frame = pd.DataFrame(
        {
            "userid": "1",
            "recording": np.repeat(np.arange(30), 10),
            "label": np.repeat(np.arange(30) % 3, 10),
        }
    )
    assert per_sample_label(frame, "a") is None


def test_candidates_are_the_columns_held_over_runs():
    n = 200
    table = pd.DataFrame(
        {
            "x": np.random.default_rng(2).normal(size=n),
            "device": 7,  # one number throughout: an id, not a label
            "activity": "walk",  # one text throughout: a file of one activity
            "phase": np.repeat([1, 2], n // 2),
            "noise": np.random.default_rng(3).integers(0, 50, n),
        }
    )
    assert label_candidates(table, {"x"}) == ["activity", "phase"]
