"""Errors on the command line name flags, never Python keywords.

A message raised by the Python API is written for Python (``pass
allow_unverified=True``); the error carries how the command line says the
same (``cli=``, :func:`mudata.errors.cli_message`), and both front ends
print it that way. Each test below walks one error path of ``mudata`` or
``mueval`` that reaches the command line and checks the flag is named and no
``keyword=value`` of Python's is.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import mudata
from mudata.cli import main as mudata_main
from mudata.errors import MudataUsageError, cli_message
from mueval.cli.main import main as mueval_main
from mueval.errors import DataError, UsageError
from tests.tiny_entry import write_tiny_entry
from tests.user_tables import make_frame

#: A Python keyword argument as a message would spell it: ``allow_unverified=True``,
#: ``all_pairs=True``, ``user_folds=3``; or a bare ``=True`` / ``=False`` / ``=None``.
PYTHON_KEYWORD = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+=|=(?:True|False|None)\b")


def _assert_cli_words(result, exit_code: int, flag: str) -> None:
    """The command failed with ``exit_code``, naming ``flag`` and no Python keyword."""
    assert result.exit_code == exit_code, result.output
    said = " ".join(result.output.split())
    assert flag in said, said
    assert not PYTHON_KEYWORD.search(said), said


def _csv(tmp_path: Path, **extra) -> Path:
    frame = make_frame(n_users=3)
    for column, values in extra.items():
        frame[column] = values(frame)
    path = tmp_path / "mine.csv"
    frame.to_csv(path, index=False)
    return path


def test_the_pattern_catches_what_it_is_for() -> None:
    for text in ("pass allow_unverified=True", "give all_pairs=True", "user_folds=3", "x=None"):
        assert PYTHON_KEYWORD.search(text), text
    for text in ("--allow-unverified", "at alpha=0.05", "--user-folds must", "k=5"):
        assert not PYTHON_KEYWORD.search(text), text


def test_mudata_fetch_of_an_unpinned_release_names_the_flag(tmp_path: Path) -> None:
    # har70's registry entry records no sha256: refused before any download.
    result = CliRunner().invoke(mudata_main, ["fetch", "har70", "--data-home", str(tmp_path)])
    _assert_cli_words(result, 2, "pass --allow-unverified to use it anyway")
    # The Python API says its own keyword.
    with pytest.raises(MudataUsageError, match="pass allow_unverified=True to use it"):
        mudata.fetch("har70", data_home=tmp_path)


@pytest.mark.parametrize("command", ["evaluate", "curve"])
def test_mueval_on_an_unpinned_release_names_the_flag(tmp_path: Path, command: str) -> None:
    args = [command, "--dataset", "har70", "--data-home", str(tmp_path)]
    if command == "evaluate":
        args += ["--strategy", "ucm"]
    result = CliRunner().invoke(mueval_main, args)
    # mueval wraps mudata's error in its own: the words come along.
    _assert_cli_words(result, 2, "pass --allow-unverified to use it anyway")


def test_more_user_folds_than_users_names_the_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        mueval_main,
        [
            "evaluate",
            "--data",
            str(_csv(tmp_path)),
            "-s",
            "uim",
            "-c",
            "nb",
            "--iterations",
            "1",
            "--jobs",
            "1",
            "--user-folds",
            "7",
        ],
    )
    _assert_cli_words(result, 2, "--user-folds must be from 2 to the number of users (3)")


def test_mondrian_against_a_cohort_condition_names_both_flags(tmp_path: Path) -> None:
    data = _csv(tmp_path, band=lambda f: f["userid"] % 2)
    result = CliRunner().invoke(
        mueval_main,
        [
            "evaluate",
            "--data",
            str(data),
            "-s",
            "mm",
            "-c",
            "nb",
            "--iterations",
            "1",
            "--mondrian",
            "--condition",
            "cohort:band",
        ],
    )
    _assert_cli_words(result, 2, "--mondrian (one threshold per class) and --condition")
    assert "give --condition 'class+cohort:band' for both" in " ".join(result.output.split())


def test_compare_without_a_shared_strategy_names_all_pairs(tmp_path: Path) -> None:
    data = _csv(tmp_path)
    for name, strategy in (("a", "mm"), ("b", "udm")):
        made = CliRunner().invoke(
            mueval_main,
            [
                "evaluate",
                "--data",
                str(data),
                "-s",
                strategy,
                "-c",
                "nb",
                "--iterations",
                "2",
                "--jobs",
                "1",
                "--no-progress",
                "--out",
                str(tmp_path / name),
            ],
        )
        assert made.exit_code == 0, made.output
    result = CliRunner().invoke(mueval_main, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    _assert_cli_words(result, 1, "give --all-pairs to compare different strategies")


@pytest.mark.parametrize(
    ("main", "args", "flag"),
    [
        (mueval_main, ["evaluate", "--jobs", "0"], "'--jobs'"),
        (mudata_main, ["fetch", "wisdm", "--min-users", "1"], "'--min-users'"),
    ],
)
def test_values_the_options_refuse_name_the_option(main, args, flag) -> None:
    _assert_cli_words(CliRunner().invoke(main, args), 2, flag)


def test_the_words_survive_pickling_and_wrapping() -> None:
    inner = MudataUsageError("pass allow_unverified=True", cli={"allow_unverified=True": "--x"})
    copy = pickle.loads(pickle.dumps(inner))
    assert cli_message(copy) == "pass --x" and str(copy) == "pass allow_unverified=True"
    try:
        try:
            raise inner
        except MudataUsageError as exc:
            raise UsageError(f"cannot load: {exc}") from exc
    except UsageError as outer:
        assert cli_message(outer) == "cannot load: pass --x"
    own = DataError("give all_pairs=True", cli={"all_pairs=True": "--all-pairs"})
    assert cli_message(pickle.loads(pickle.dumps(own))) == "give --all-pairs"
    assert cli_message(ValueError("plain x=None")) == "plain x=None"


def _unpinned_tiny(tmp_path: Path, http_server, monkeypatch) -> str:
    """The tiny entry with its CSV served by ``http_server`` and no sha256 recorded."""
    toml = write_tiny_entry(http_server.root)
    text = re.sub(
        r'path = ".*"\nsha256 = ".*"\n',
        'url = "https://example.org/features.csv"\n',
        toml.read_text(),
    )
    assert "sha256" not in text
    registry = tmp_path / "registry"
    registry.mkdir()
    (registry / "tiny.toml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("MUDATA_REGISTRY", str(registry))
    return "tiny"


def test_fetch_and_verify_of_an_unpinned_file_name_no_keyword(
    tmp_path: Path, http_server, monkeypatch
) -> None:
    name = _unpinned_tiny(tmp_path, http_server, monkeypatch)
    home = ["--data-home", str(tmp_path / "home"), "--mirror", http_server.url]
    refused = CliRunner().invoke(mudata_main, ["fetch", name, *home, "--no-progress"])
    _assert_cli_words(refused, 2, "pass --allow-unverified to use it anyway")
    built = CliRunner().invoke(
        mudata_main, ["fetch", name, *home, "--allow-unverified", "--no-progress"]
    )
    assert built.exit_code == 0, built.output
    # verify checks pinned bytes only: it says so, and offers no flag of fetch's.
    checked = CliRunner().invoke(
        mudata_main, ["verify", name, "--data-home", str(tmp_path / "home")]
    )
    _assert_cli_words(checked, 2, "has no sha256 in the registry")
    assert "allow-unverified" not in checked.output and "cannot be checked" in checked.output
    result = mudata.verify(name, data_home=tmp_path / "home")
    assert result.status == "unverifiable" and "allow_unverified" not in result.message
