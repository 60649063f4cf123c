"""mudata.cli_options: shared fetch options, global options anywhere, one error-to-exit-code map."""

from __future__ import annotations

import logging
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mudata.cli import MudataGroup, main
from mudata.cli_options import ErrorMappingGroup, data_home_option, fetch_options, verbose_option
from mudata.errors import ChecksumError, MudataUsageError, UnknownDatasetError
from tests.tiny_entry import write_tiny_entry

FETCH_OPTIONS = (
    "--data-home",
    "--mirror",
    "--manual-dir",
    "--allow-unverified",
    "--max-expansion",
    "--progress",
)


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner(env=env).invoke(main, list(args), catch_exceptions=False)


def test_usage_error_has_a_distinct_name_and_the_old_alias_is_gone() -> None:
    import mudata.errors
    import mueval.errors

    assert MudataUsageError is not mueval.errors.UsageError
    assert not hasattr(mudata.errors, "UsageError")
    assert issubclass(UnknownDatasetError, MudataUsageError)


# --- global options before and after the command ---------------------------------


@pytest.fixture
def tiny_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_tiny_entry(tmp_path / "registry")
    monkeypatch.setenv("MUDATA_REGISTRY", str(tmp_path / "registry"))
    return tmp_path / "home"


@pytest.mark.parametrize("where", ["before", "after"])
def test_data_home_before_or_after_the_command(tiny_home: Path, where: str) -> None:
    args = ["--data-home", str(tiny_home)]
    result = run(*([*args, "fetch", "tiny"] if where == "before" else ["fetch", "tiny", *args]))
    assert result.exit_code == 0, result.output
    assert Path(result.stdout.strip()) == tiny_home / "tiny" / "tiny.parquet"
    assert (tiny_home / "tiny" / "tiny.parquet").is_file()


def test_data_home_after_the_command_wins_over_before(tiny_home: Path, tmp_path: Path) -> None:
    result = run(
        "--data-home", str(tmp_path / "ignored"), "fetch", "tiny", "--data-home", str(tiny_home)
    )
    assert result.exit_code == 0, result.output
    assert (tiny_home / "tiny" / "tiny.parquet").is_file()
    assert not (tmp_path / "ignored").exists()


def test_register_honours_a_data_home_given_before_the_command(tmp_path: Path) -> None:
    entry = write_tiny_entry(tmp_path / "own", name="mine")
    result = run("--data-home", str(tmp_path / "h"), "register", str(entry))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "h" / "registry" / "mine.toml").is_file()


@pytest.mark.parametrize(
    ("args", "level"),
    [
        (["-v", "list"], logging.INFO),
        (["list", "-v"], logging.INFO),
        (["-v", "list", "-v"], logging.DEBUG),
        (["list", "-vv"], logging.DEBUG),
    ],
)
def test_verbose_before_or_after_the_command_adds_up(args: list[str], level: int) -> None:
    root = logging.getLogger()
    before = root.level
    try:
        assert run(*args).exit_code == 0
        assert root.level == level
    finally:
        root.setLevel(before)


def test_verbose_after_the_command_shows_an_internal_errors_traceback() -> None:
    group = _toy_group()
    quiet = CliRunner().invoke(group, ["boom"])
    loud = CliRunner().invoke(group, ["boom", "-v"])
    assert quiet.exit_code == loud.exit_code == 1
    assert (
        "internal error in toy (ZeroDivisionError: division by zero); this is a bug" in quiet.output
    )
    assert "run with -v for the traceback" in quiet.output and "Traceback" not in quiet.output
    assert "Traceback (most recent call last)" in loud.output


# --- one mapping from error to exit code -------------------------------------------


def _toy_group() -> click.Group:
    class ToyGroup(ErrorMappingGroup):
        usage_errors = (MudataUsageError,)
        runtime_errors = (ChecksumError,)
        program = "toy"

    @click.group(cls=ToyGroup)
    @verbose_option
    def toy() -> None:
        """A group with one command per kind of failure."""

    @toy.command()
    def usage() -> None:
        raise MudataUsageError("bad name 'x'; valid: a, b")

    @toy.command()
    def runtime() -> None:
        raise ChecksumError("sha256 mismatch for f: expected 00, actual 11")

    @toy.command()
    def boom() -> None:
        1 / 0  # noqa: B018 - the bug this group must report

    return toy


@pytest.mark.parametrize(
    ("command", "code", "text"),
    [
        ("usage", 2, "Error: bad name 'x'; valid: a, b"),
        ("runtime", 1, "Error: sha256 mismatch for f: expected 00, actual 11"),
        ("boom", 1, "Error: internal error in toy (ZeroDivisionError"),
    ],
)
def test_error_families_map_to_exit_codes(command: str, code: int, text: str) -> None:
    result = CliRunner().invoke(_toy_group(), [command])
    assert result.exit_code == code
    assert text in result.output


def test_mudata_group_maps_its_own_family() -> None:
    assert MudataGroup.usage_errors == (MudataUsageError,)
    assert run("info", "nope").exit_code == 2  # UnknownDatasetError: a usage error
    assert isinstance(main, MudataGroup)


def test_no_command_maps_errors_itself() -> None:
    # The mapping is written once: no command module catches MudataError to pick a code.
    import inspect

    import mudata.cli

    source = inspect.getsource(mudata.cli)
    assert "except Mudata" not in source and "_fail(" not in source, (
        "commands must let the group map errors"
    )


# --- shared option groups ----------------------------------------------------------


def _options(command: click.Command) -> dict[str, click.Option]:
    return {opt: p for p in command.params if isinstance(p, click.Option) for opt in p.opts}


def test_fetch_options_are_the_same_wherever_they_are_used() -> None:
    @click.command()
    @fetch_options
    def other(**kwargs: object) -> None:
        """Another front end (mueval evaluate) taking the same options."""

    mine, theirs = _options(main.commands["fetch"]), _options(other)
    for name in FETCH_OPTIONS:
        a, b = mine[name], theirs[name]
        assert (a.name, a.is_flag, a.default, a.help) == (b.name, b.is_flag, b.default, b.help), (
            name
        )
        assert type(a.type) is type(b.type) and vars(a.type) == vars(b.type), name
    assert mine["--manual-dir"].type.exists is True  # the check mueval lacked


def test_manual_dir_is_checked_by_every_user_of_the_options(tmp_path: Path) -> None:
    @click.command()
    @fetch_options
    def other(**kwargs: object) -> None:
        click.echo("ran")

    missing = str(tmp_path / "nope")
    for command, args in (
        (main, ["fetch", "tiny", "--manual-dir", missing]),
        (other, ["--manual-dir", missing]),
    ):
        result = CliRunner().invoke(command, args)
        assert result.exit_code == 2 and "does not exist" in result.output
        assert "ran" not in result.output


def test_fetch_options_pass_fetch_keyword_arguments() -> None:
    import inspect

    import mudata

    seen: dict[str, object] = {}

    @click.command()
    @fetch_options
    def other(**kwargs: object) -> None:
        seen.update(kwargs)

    assert (
        CliRunner()
        .invoke(other, ["--mirror", "http://127.0.0.1:1/", "--max-expansion", "3"])
        .exit_code
        == 0
    )
    assert set(seen) <= set(inspect.signature(mudata.fetch).parameters)
    assert seen["mirror"] == "http://127.0.0.1:1/" and seen["max_expansion"] == 3.0
    bad = CliRunner().invoke(other, ["--max-expansion", "0"])
    assert bad.exit_code == 2 and "--max-expansion" in bad.output


def test_data_home_option_on_a_group_reaches_a_command(tmp_path: Path) -> None:
    @click.group()
    @data_home_option(expose_value=False)
    def group() -> None:
        """A group."""

    @group.command()
    @data_home_option
    def show(data_home: Path | None) -> None:
        click.echo(str(data_home))

    assert CliRunner().invoke(group, ["--data-home", str(tmp_path), "show"]).output.strip() == str(
        tmp_path
    )
    assert CliRunner().invoke(group, ["show"]).output.strip() == "None"


@pytest.mark.parametrize("value", ["inf", "nan", "-nan", "1e309"])
@pytest.mark.parametrize("flag", ["--window", "--sampling-rate", "--max-missing"])
def test_init_refuses_a_number_that_is_not_finite(tmp_path, flag: str, value: str) -> None:
    """click's ranges let nan and inf through; --window inf stopped the draft on
    OverflowError, --max-missing nan compared false with every fraction."""
    from click.testing import CliRunner

    from mudata.cli import main

    (tmp_path / "a.csv").write_text("t,x,label\n0,1,a\n")
    args = ["init", str(tmp_path / "a.csv"), "--name", "t", "-o", str(tmp_path / "t.toml")]
    result = CliRunner().invoke(main, [*args, flag, value])
    assert result.exit_code == 2
    assert f"Invalid value for '{flag}'" in result.output
    # Past the range's bound (--max-missing inf) click's own message says so.
    assert "not a finite number" in result.output or "not in the range" in result.output


@pytest.mark.parametrize("flag", ["--alpha", "--user-level", "--raps-lambda"])
def test_mueval_refuses_a_number_that_is_not_finite(flag: str) -> None:
    from click.testing import CliRunner

    from mueval.cli.main import main

    result = CliRunner().invoke(main, ["evaluate", "--dataset", "demo", flag, "nan"])
    assert result.exit_code == 2
    assert f"Invalid value for '{flag}'" in result.output and "not a finite number" in result.output
