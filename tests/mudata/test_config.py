"""mudata.config: every environment variable read in one place, each bad value named (issue 31)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from mudata import config
from mudata.errors import MudataUsageError as UsageError
from tests.conftest import PROJECT_ROOT

MUDATA_SRC = PROJECT_ROOT / "src" / "mudata"


def test_home_is_the_variable_expanded_or_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUDATA_HOME", "~/somewhere")
    assert config.home() == Path.home() / "somewhere"
    monkeypatch.setenv("MUDATA_HOME", "")
    assert config.home() is None
    monkeypatch.delenv("MUDATA_HOME")
    assert config.home() is None


def test_registry_path_keeps_order_and_skips_empty_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUDATA_REGISTRY", os.pathsep.join(["/b", "", "/a", ""]))
    assert config.registry_path() == [Path("/b"), Path("/a")]
    monkeypatch.delenv("MUDATA_REGISTRY")
    assert config.registry_path() == []


@pytest.mark.parametrize(
    ("function", "variable", "default"),
    [
        (config.max_expansion, "MUDATA_MAX_EXPANSION", 100.0),
        (config.max_members, "MUDATA_MAX_MEMBERS", 50_000),
        (config.max_read_bytes, "MUDATA_MAX_READ_BYTES", 256 * 2**20),
    ],
)
def test_each_cap_reads_its_variable_and_names_it_when_bad(
    function, variable: str, default: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(variable, raising=False)
    assert function() == default
    monkeypatch.setenv(variable, "")
    assert function() == default  # empty is unset
    monkeypatch.setenv(variable, "7")
    assert function() == 7
    assert function("9") == 9  # the option wins over the variable
    monkeypatch.setenv(variable, "-3")
    with pytest.raises(UsageError, match=rf"^\${variable} must be a positive .*got '?-3"):
        function()
    with pytest.raises(UsageError, match=r"must be a positive .*got '?0"):
        function("0")


def test_the_readers_take_their_cap_from_config() -> None:
    """The readers hold no copy of the read cap: its names are config's own objects."""
    from mudata.bounds import archive
    from mudata.readers import member_bytes, sources

    assert sources.max_read_bytes is config.max_read_bytes
    assert member_bytes.READ_ENV is config.READ_ENV
    assert not hasattr(archive, "parse_cap")  # the alias kept for readers/base.py is gone


def _environment_reads(tree: ast.AST) -> list[int]:
    """Lines that read ``os.environ`` / ``os.getenv`` or spell a ``MUDATA_`` name as a whole string."""
    lines = []
    for node in ast.walk(tree):
        reads = isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb")
        names = (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("MUDATA_")
            and node.value.replace("_", "").isalnum()
        )
        if reads or names:
            lines.append(node.lineno)
    return lines


def test_no_mudata_module_but_config_reads_the_environment() -> None:
    found = {}
    for path in sorted(MUDATA_SRC.rglob("*.py")):
        name = path.relative_to(MUDATA_SRC).as_posix()
        if name == "config.py":
            continue
        lines = _environment_reads(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[name] = lines
    assert found == {}


def test_the_scan_sees_a_read() -> None:
    """The check above can fail: it finds both kinds of read in a module's source."""
    source = 'import os\nX = "MUDATA_HOME"\nY = os.environ.get(X)\n'
    assert sorted(_environment_reads(ast.parse(source))) == [2, 3]
    assert _environment_reads(ast.parse((MUDATA_SRC / "config.py").read_text())) != []


def test_mueval_takes_the_variable_names_from_config_not_archive() -> None:
    src = PROJECT_ROOT / "src" / "mueval"
    offenders = [
        path.relative_to(src).as_posix()
        for path in src.rglob("*.py")
        if "from mudata.bounds.archive import" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
