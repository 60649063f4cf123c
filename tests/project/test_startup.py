"""The command lines start without the heavy libraries (issue 12, item 6).

Not timed: speed is measured by ``benchmarks/startup.py``. What is checked here is
the cause of a slow start, which a test can see exactly: which modules an import
of the command-line modules pulls in.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

HEAVY = ("sklearn", "mapie", "matplotlib", "pandera")


def _imported_after(code: str) -> list[str]:
    """Top-level packages of ``HEAVY`` in ``sys.modules`` after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "code",
    [
        "import mueval.cli.main",
        "import mudata.cli",
        "import mueval",
        "import mudata",
        # --help runs the group's formatting, which lists every command.
        "from mueval.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
        "from mudata.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    ],
)
def test_command_line_imports_no_heavy_library(code: str) -> None:
    assert _imported_after(code) == []


def test_the_probe_sees_a_heavy_import() -> None:
    # The check above would pass vacuously if the probe could not see imports.
    assert _imported_after("import mueval.evaluation.models") == ["sklearn"]


def test_library_names_still_resolve() -> None:
    import mudata
    import mueval
    from mueval.api import compare, evaluate
    from mueval.run import Run

    assert (mueval.evaluate, mueval.Run, mueval.compare) == (evaluate, Run, compare)
    assert {"Run", "compare", "evaluate"} <= set(dir(mueval))
    from mudata.api import fetch, load, provenance

    assert (mudata.fetch, mudata.load, mudata.provenance) == (fetch, load, provenance)
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = mueval.no_such_name
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = mudata.no_such_name


def test_lazy_commands_list_their_own_short_help() -> None:
    from mueval.cli.main import _LAZY_COMMANDS, main

    for name, (path, short) in _LAZY_COMMANDS.items():
        module, attribute = path.split(":")
        command = getattr(__import__(module, fromlist=[attribute]), attribute)
        assert command.name == name
        assert command.get_short_help_str(limit=200) == short
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in ("evaluate", "report", "compare"):
        assert f"  {name} " in result.output


def test_lazy_command_runs() -> None:
    from mueval.cli.main import main

    result = CliRunner().invoke(main, ["report", "--help"])
    assert result.exit_code == 0, result.output
    assert "report.html" in result.output
