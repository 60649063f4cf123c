"""Real releases register as they are published (issue 16, point 8).

For each of five shapes of public releases, and a newcomer's own small
dataset, the files are built in exactly that shape (``tests/release_shapes.py``)
and go ``mudata init`` (with at most the options naming what init cannot
guess, and ``--window`` where the window report asks for it) -> the user's
edit (metadata filled in, unwanted classes deleted) -> ``mudata register`` ->
``mudata fetch`` -> ``mueval evaluate`` (one iteration). Each step is timed;
``pytest -s`` prints the times.

No drafted channel or feature may be a counter, a time, a window id or a
near-empty column: each test names the exact signal columns expected.
"""

from __future__ import annotations

import re
import time
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomli_w
from click.testing import CliRunner

import mudata
from mudata.cli import main as mudata_main
from mueval.cli.main import main as mueval_main
from tests import release_shapes as shapes


def _step(times: dict[str, float], name: str, program, args: list[str]):
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(program, args, catch_exceptions=False)
    times[name] = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    # Nothing pandas says about dtypes may reach the user's terminal.
    assert not [w for w in caught if "DtypeWarning" in type(w.message).__name__], caught
    assert "DtypeWarning" not in result.output
    return result


def fill_in(toml: Path, drop_classes: tuple[str, ...] = ()) -> dict:
    """The user's edit: the metadata filled in, unwanted classes deleted; nothing else."""
    data = tomllib.loads(toml.read_text(encoding="utf-8"))
    data["title"] = f"{data['name']} (test)"
    data["homepage"] = "https://example.org/a-release"
    data["citation"] = "The authors (2026). A release. Zenodo."
    data["licence"] = "CC-BY-4.0"
    data["classes"] = [c for c in data["classes"] if str(c["code"]) not in drop_classes]
    toml.write_text(tomli_w.dumps(data), encoding="utf-8")
    return data


def walk(
    tmp_path: Path,
    files: Path,
    name: str,
    init_args: list[str],
    strategy: str,
    drop_classes: tuple[str, ...] = (),
) -> tuple[dict, str, dict[str, float]]:
    """init -> edit -> register -> fetch -> evaluate; the draft, init's report and the step times."""
    times: dict[str, float] = {}
    home = str(tmp_path / "home")
    toml = tmp_path / f"{name}.toml"
    init = _step(
        times,
        "init",
        mudata_main,
        ["init", str(files), "--name", name, "-o", str(toml), "--force", *init_args],
    )
    draft = tomllib.loads(toml.read_text(encoding="utf-8"))
    fill_in(toml, drop_classes)
    _step(times, "register", mudata_main, ["register", str(toml), "--data-home", home])
    _step(times, "fetch", mudata_main, ["fetch", name, "--data-home", home])
    evaluated = _step(
        times,
        "evaluate",
        mueval_main,
        [
            *("evaluate", "--dataset", name, "--data-home", home, "-s", strategy, "-c", "nb"),
            *("--iterations", "1", "--out", str(tmp_path / "run")),
        ],
    )
    assert "coverage (%)" in evaluated.output
    print(f"\n{name}: mudata init {' '.join(init_args)}")
    print("  " + ", ".join(f"{step} {seconds:.2f} s" for step, seconds in times.items()))
    return draft, init.output, times


def signals_of(draft: dict) -> list[str]:
    options = draft["reader_options"]
    return list(options.get("channels", options.get("feature_cols", [])))


def test_activity_folders_with_readme_and_manual(tmp_path):
    files = shapes.documented_activity_folders(tmp_path / "ADL", np.random.default_rng(1))
    draft, report, _ = walk(tmp_path, files, "adl-docs", ["--sampling-rate", "32"], "mm")
    assert "  README.txt: documentation by its name (README.txt)" in report
    assert "  MANUAL.txt: documentation by its name (MANUAL.txt)" in report
    (spec,) = draft["files"]
    assert spec["glob"] == "*/*.txt" == draft["reader_options"]["members"]
    assert len(spec["members"]) == 24
    assert signals_of(draft) == ["c1", "c2", "c3"]


def test_numbered_participants_with_a_row_counter_and_label_zero(tmp_path):
    files = shapes.numbered_participants(tmp_path / "accel", np.random.default_rng(2))
    written = (files / "2.csv").read_text()
    assert "\n1e+05," in written and "\n1.0001e+05," in written and "\n1.0000e+05," in written
    draft, report, _ = walk(tmp_path, files, "seq-counter", ["--sampling-rate", "52"], "mm")
    # seq (c1) is a counter, z (c4) a channel; c5 the label
    assert signals_of(draft) == ["c2", "c3", "c4"]
    assert draft["reader_options"]["label_col"] == "c5"
    assert "c1: a row counter (the row number within the rounding of its 5 significant" in report
    # class 0 gives no user 5 windows: no table could keep 2 users with it
    assert "(left out: fewer than 2 users have 5 windows of it, even of 0.5 s (no user)" in report
    assert [c["code"] for c in draft["classes"]] == [1, 2, 3]
    table = mudata.load("seq-counter", data_home=tmp_path / "home").frame
    assert sorted(table["label"].unique()) == ["1", "2", "3"]


def test_phone_and_watch_files_with_repeated_milliseconds_and_metadata(tmp_path):
    files = shapes.phone_watch_executions(tmp_path / "release", np.random.default_rng(3))
    draft, report, _ = walk(tmp_path, files, "phone-watch", [], "mm")
    assert "  README.md: documentation by its name (README.md)" in report
    assert "  .zenodo.json: metadata (.zenodo.json)" in report
    assert "  DATA/executions_info.csv: its columns (subject, execution, activity" in report
    assert draft["files"][0]["glob"] == "DATA/*/*.csv"
    assert signals_of(draft) == ["x", "y", "z"]
    assert draft["reader_options"]["time_col"] == "timestamp"
    assert draft["sampling_rate_hz"] == 50.0
    repeats = re.search(r"repeated times: (\d+) samples", report)
    assert repeats and int(repeats.group(1)) == 24 * 11  # every 97th sample of 24 files
    record = mudata.provenance("phone-watch", data_home=tmp_path / "home")
    assert sum(record["counts"]["time_repeats"].values()) == 24 * 11


def test_gzipped_weight_lifting_table_with_leaks_and_empty_columns(tmp_path):
    path = shapes.weight_lifting_gz(tmp_path / "pml-training.csv.gz", np.random.default_rng(4))
    draft, report, _ = walk(tmp_path, path, "weight-lifting", [], "udm")
    assert draft["reader"] == "feature-table"
    assert signals_of(draft) == shapes.SIGNAL_COLUMNS
    options = draft["reader_options"]
    assert (options["user_col"], options["label_col"]) == ("user_name", "classe")
    assert "probable label leak: column 'Unnamed: 0' alone tells the classes apart" in report
    assert "A: 1 to 100" not in report and "A: 1 to 600" in report
    assert "new_window: a text flag (values no, yes)" in report
    assert "num_window: a window or segment counter" in report
    assert "kurtosis_roll_belt: 100 % of its cells are empty" in report
    table = mudata.load("weight-lifting", data_home=tmp_path / "home").frame
    assert sorted(table["userid"].unique()) == sorted(shapes.USER_NAMES)


def test_matlab_trials_with_the_user_in_the_middle_of_the_name(tmp_path):
    files = shapes.inertial_mat_files(tmp_path / "Inertial", np.random.default_rng(5))
    pattern = "a{label}_s{user}_t{recording}_inertial.mat"
    first = CliRunner().invoke(
        mudata_main,
        [
            *("init", str(files), "--name", "mat-trials", "-o", str(tmp_path / "first.toml")),
            *("--path-pattern", pattern, "--sampling-rate", "50"),
        ],
    )
    assert first.exit_code == 0, first.output
    proposed = re.search(r"--window ([\d.]+) is the longest window", first.output)
    assert proposed, first.output  # 3 s windows leave one window per trial
    draft, _, _ = walk(
        tmp_path,
        files,
        "mat-trials",
        ["--path-pattern", pattern, "--sampling-rate", "50", "--window", proposed.group(1)],
        "mm",
    )
    assert draft["reader_options"]["format"] == "mat"
    assert "(?P<user>" in draft["reader_options"]["path_pattern"]
    # the draft shows the template and the regex it was compiled to
    first_draft = (tmp_path / "first.toml").read_text(encoding="utf-8")
    assert f"# from --path-pattern '{pattern}'" in first_draft
    assert signals_of(draft) == ["c1", "c2", "c3", "c4", "c5", "c6"]
    table = mudata.load("mat-trials", data_home=tmp_path / "home").frame
    assert sorted(table["userid"].unique()) == ["1", "2", "3", "4"]


def test_newcomer_dataset_with_one_repeated_millisecond(tmp_path):
    path = shapes.newcomer_csv(tmp_path / "mine" / "recordings.csv", np.random.default_rng(6))
    first = CliRunner().invoke(
        mudata_main,
        ["init", str(path), "--name", "newcomer", "-o", str(tmp_path / "first.toml")],
    )
    assert first.exit_code == 0, first.output
    assert "repeated times: 1 samples share the time of the previous one" in first.output
    udm = re.search(r"udm: (\d+) .* too small; --window ([\d.]+) would reach it", first.output)
    assert udm and int(udm.group(1)) < 20, first.output
    draft, report, _ = walk(tmp_path, path, "newcomer", ["--window", udm.group(2)], "udm")
    assert re.search(r"udm: \d+ \(20 % of the user's windows\) ok", report)
    assert signals_of(draft) == ["acc_x", "acc_y", "acc_z"]
    assert draft["reader_options"]["time_col"] == "timestamp"


def test_register_refuses_an_unfilled_draft_naming_each_field(tmp_path):
    path = shapes.newcomer_csv(tmp_path / "mine" / "recordings.csv", np.random.default_rng(7))
    toml = tmp_path / "draft.toml"
    runner = CliRunner()
    assert (
        runner.invoke(mudata_main, ["init", str(path), "--name", "dr", "-o", str(toml)]).exit_code
        == 0
    )
    refused = runner.invoke(
        mudata_main, ["register", str(toml), "--data-home", str(tmp_path / "h")]
    )
    assert refused.exit_code == 2
    for field in ("'homepage'", "'citation'", "'licence'", "'licence.title'"):
        assert field in refused.output
    assert "--draft-ok" in refused.output
    accepted = runner.invoke(
        mudata_main, ["register", str(toml), "--data-home", str(tmp_path / "h"), "--draft-ok"]
    )
    assert accepted.exit_code == 0, accepted.output


def test_a_pinned_file_changed_since_init_says_how_to_pin_it_again(tmp_path):
    files = shapes.phone_watch_executions(tmp_path / "release", np.random.default_rng(8))
    toml = tmp_path / "pw.toml"
    runner = CliRunner()
    assert (
        runner.invoke(mudata_main, ["init", str(files), "--name", "pw", "-o", str(toml)]).exit_code
        == 0
    )
    home = str(tmp_path / "h")
    assert (
        runner.invoke(
            mudata_main, ["register", str(toml), "--data-home", home, "--draft-ok"]
        ).exit_code
        == 0
    )
    changed = files / "DATA" / "s02" / "s02_01_sp.csv"
    changed.write_text(changed.read_text().replace("walking", "running", 1))
    failed = runner.invoke(mudata_main, ["fetch", "pw", "--data-home", home])
    assert failed.exit_code == 1
    assert "changed since `mudata init` pinned it" in failed.output
    assert "mudata register --replace" in failed.output
    assert "official" not in failed.output


@pytest.mark.parametrize(
    "option, value, shown",
    [
        ("--label", "klass", "label"),
        ("--channels", "x,y,nope", "channels"),
        ("--time", "9", "time"),
    ],
)
def test_an_option_naming_no_column_lists_the_columns(tmp_path, option, value, shown):
    path = shapes.newcomer_csv(tmp_path / "mine" / "recordings.csv", np.random.default_rng(9))
    result = CliRunner().invoke(
        mudata_main,
        ["init", str(path), "--name", "x", "-o", str(tmp_path / "x.toml"), option, value],
    )
    assert result.exit_code == 2, result.output
    assert f"--{shown}" in result.output
    assert "columns: user, activity, timestamp, acc_x, acc_y, acc_z" in result.output


def test_no_dtype_warning_reaches_the_terminal(tmp_path):
    """A column that turns to text after pandas' first chunk of rows (262,144) makes
    pandas warn when it reads in chunks; init and the readers read the file at once."""
    rng = np.random.default_rng(10)
    n = 300_000
    note = np.arange(n).astype(str).astype(object)
    note[280_000:] = "checked"
    frame = pd.DataFrame(
        {
            "user": np.repeat(["u1", "u2", "u3"], n // 3),
            "label": np.tile(["a", "b"], n // 2),
            "f1": rng.normal(size=n).round(2),
            "f2": rng.normal(size=n).round(2),
            "note": note,
        }
    )
    path = tmp_path / "features.csv"
    frame.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pd.read_csv(path)
    assert any("mixed types" in str(w.message) for w in caught)  # pandas' own default warns
    times: dict[str, float] = {}
    home = str(tmp_path / "home")
    args = ["init", str(path), "--name", "mixed", "-o", str(tmp_path / "mixed.toml")]
    init = _step(times, "init", mudata_main, args)
    assert "note: 20000 of its cells are text, not numbers (e.g. 'checked')" in init.output
    toml = str(tmp_path / "mixed.toml")
    _step(times, "register", mudata_main, ["register", toml, "--data-home", home, "--draft-ok"])
    _step(times, "fetch", mudata_main, ["fetch", "mixed", "--data-home", home])


def test_include_features_and_named_roles(tmp_path):
    rng = np.random.default_rng(11)
    release = shapes.phone_watch_executions(tmp_path / "release", rng)
    runner = CliRunner()
    phone = tmp_path / "phone.toml"
    args = ["init", str(release), "--name", "phone", "-o", str(phone), "--include", "*_sp.csv"]
    result = runner.invoke(mudata_main, args)
    assert result.exit_code == 0, result.output
    draft = tomllib.loads(phone.read_text(encoding="utf-8"))
    assert draft["files"][0]["glob"] == "DATA/s0*_sp.csv"
    assert len(draft["files"][0]["members"]) == 12
    assert "  DATA/s01/s01_01_sw.csv: not matched by --include" in result.output

    path = shapes.weight_lifting_gz(tmp_path / "pml.csv.gz", rng, per_cell=20)
    chosen = tmp_path / "chosen.toml"
    result = runner.invoke(
        mudata_main,
        [
            "init",
            str(path),
            "--name",
            "chosen",
            "-o",
            str(chosen),
            "--features",
            "roll_belt,pitch_belt,yaw_belt",
            "--user",
            "2",
            "--label",
            "classe",
        ],
    )
    assert result.exit_code == 0, result.output
    options = tomllib.loads(chosen.read_text(encoding="utf-8"))["reader_options"]
    assert options["feature_cols"] == ["roll_belt", "pitch_belt", "yaw_belt"]
    assert options["user_col"] == "user_name"  # column 2, by its number

    mine = shapes.newcomer_csv(tmp_path / "mine" / "rec.csv", rng)
    frame = pd.read_csv(mine)
    frame["session"] = np.repeat(np.arange(len(frame) // 3000), 3000)
    frame["stamp"] = frame.pop("timestamp")
    frame.to_csv(mine, index=False)
    named = tmp_path / "named.toml"
    result = runner.invoke(
        mudata_main,
        [
            "init",
            str(mine),
            "--name",
            "named",
            "-o",
            str(named),
            "--time",
            "stamp",
            "--recording",
            "session",
            "--channels",
            "acc_x,acc_y,acc_z",
        ],
    )
    assert result.exit_code == 0, result.output
    options = tomllib.loads(named.read_text(encoding="utf-8"))["reader_options"]
    assert (options["time_col"], options["recording_col"]) == ("stamp", "session")
    assert options["channels"] == ["acc_x", "acc_y", "acc_z"]


def test_a_pinned_single_file_changed_since_init_says_so_too(tmp_path):
    path = shapes.newcomer_csv(tmp_path / "mine" / "rec.csv", np.random.default_rng(12))
    toml, home = tmp_path / "one.toml", str(tmp_path / "h")
    runner = CliRunner()
    assert (
        runner.invoke(mudata_main, ["init", str(path), "--name", "one", "-o", str(toml)]).exit_code
        == 0
    )
    registered = runner.invoke(
        mudata_main, ["register", str(toml), "--data-home", home, "--draft-ok"]
    )
    assert registered.exit_code == 0
    path.write_text(path.read_text().replace("walk", "stroll", 1))
    failed = runner.invoke(mudata_main, ["fetch", "one", "--data-home", home])
    assert failed.exit_code == 1
    assert "it changed since `mudata init` pinned it" in failed.output
