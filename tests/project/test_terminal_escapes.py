"""Every command of both tools prints hostile text escaped: no control byte reaches a terminal.

The hostile values are real: a registry entry whose title, version, licence,
citation, description and classes carry terminal escapes (clear screen, colour,
an OSC 8 link, BEL, CR, NUL, C1, DEL, bidi overrides and isolates), a data table
whose user ids and labels carry them (through ``mudata init``, ``register``,
``fetch`` and ``mueval evaluate``), and run folders written by real ``mueval
evaluate`` runs from that table, one of them under a hostile folder name.

The commands are enumerated from the click groups: each gets two generic
hostile calls (a hostile file name as its argument, a hostile unknown option)
and the calls listed in :data:`SCENARIOS`; a command added to a group without
scenarios fails :func:`test_every_command_has_hostile_scenarios`. The network
path downloads a hostile file name from the local server (``http_server``).
Output is captured with ``color=True``, so that click does not strip the CSI
sequences a terminal would receive; only the tool's own line breaks and tabs
(and, with ``--progress``, the CR of tqdm's bar) may remain.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner, Result

from mudata.cli import main as mudata_main
from mueval.cli.main import main as mueval_main
from tests.user_tables import make_frame

#: Clear screen, colour, an OSC 8 hyperlink ended by BEL, CR, LF, NUL, a C1 CSI,
#: DEL, backspace, right-to-left override, isolates and marks, a line separator.
HOSTILE = (
    "\x1b[2J\x1b[31mred\x1b]8;;http://evil.example/\x07link\x1b]8;;\x07\r\nforged"
    "\x00\x9b\x7f\x08\u202eevil\u2066\u2069\u200e\u200f\u061c\u2028end"
)

#: :data:`HOSTILE` for fields of several lines (a citation, a description) and for
#: file names, which error messages quote within their own lines: no line break.
HOSTILE_LINE = HOSTILE.replace("\n", "")

#: How the start of :data:`HOSTILE` reads once escaped.
ESCAPED = "\\x1b[2J\\x1b[31mred\\x1b]8;;http"

TOOLS: dict[str, click.Group] = {"mudata": mudata_main, "mueval": mueval_main}


def _raw_controls(text: str) -> list[str]:
    """Controls (C0 but the tool's own line breaks and tabs, DEL, C1), format
    characters (bidi overrides, isolates and marks) and line separators in ``text``."""
    return [
        c for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")
    ]


def _commands(tool: str) -> list[str]:
    group = TOOLS[tool]
    return group.list_commands(click.Context(group))


ALL_COMMANDS = [(tool, name) for tool in TOOLS for name in _commands(tool)]

# ------------------------------------------------------------------ hostile inputs


def _hostile_frame() -> pd.DataFrame:
    """:func:`make_frame`'s learnable table, its user ids and labels made hostile."""
    frame = make_frame(n_users=4)
    frame["userid"] = frame["userid"].map(lambda u: f"u{u}{HOSTILE}")
    frame["label"] = frame["label"].map(lambda name: f"{name}{HOSTILE}")
    return frame


#: A title a spreadsheet would run (the classic DDE payload).
FORMULA_TITLE = "=cmd|' /C calc'!A0"


def _entry_toml(
    table: Path,
    classes: list[str],
    name: str = "evil",
    title: str = "",
    *,
    url: str | None = None,
    sha256: str | None = None,
) -> str:
    """A valid entry reading ``table`` (or downloading it from ``url``, under a
    hostile file name), every free-text field hostile (TOML escapes)."""
    text = json.dumps  # a JSON string is a TOML basic string, controls escaped
    lines = [
        f"name = {text(name)}",
        f"title = {text(title or 'Title ' + HOSTILE)}",
        f"version = {text('1' + HOSTILE)}",
        f"homepage = {text('https://example.invalid/' + HOSTILE)}",
        f"description = {text('Line one ' + HOSTILE_LINE + chr(10) + 'two ' + HOSTILE_LINE)}",
        f"citation = {text('Someone (2026). ' + HOSTILE_LINE + chr(10) + HOSTILE_LINE)}",
        "sampling_rate_hz = 50",
        'reader = "feature-table"',
        "min_per_class = 5",
        "[licence]",
        'name = "LicenseRef-evil"',
        f"title = {text('Terms ' + HOSTILE)}",
        f"path = {text('https://example.invalid/terms' + HOSTILE)}",
        "[reader_options]",
        'format = "csv"',
        'user_col = "userid"',
        'label_col = "label"',
        '[recipe]\nname = "precomputed"',
        "[[files]]",
        *(
            [f"name = {text(_file_name(HOSTILE) + '.csv')}", f"url = {text(url)}"]
            if url
            else ['name = "table.csv"', f"path = {text(str(table))}"]
        ),
        f"sha256 = {text(sha256 or hashlib.sha256(table.read_bytes()).hexdigest())}",
    ]
    for code in classes:
        lines += ["[[classes]]", f"code = {text(code)}", f"name = {text('Name ' + code)}"]
    return "\n".join(lines) + "\n"


def _file_name(text: str) -> str:
    """``text`` as a file name: without NUL and ``/``."""
    return text.replace("\x00", "").replace("/", "")


class Hostile:
    """Every hostile input, written once per module."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.data = base / "data"
        self.data.mkdir()
        self.frame = _hostile_frame()
        self.table = self.data / "table.csv"
        self.frame.to_csv(self.table, index=False)
        # The same table as Parquet, for `mudata init` (whose CSV sniffing reads lines).
        self.parquet_data = base / "parquet"
        self.parquet_data.mkdir()
        self.frame.to_parquet(self.parquet_data / "table.parquet", index=False)
        classes = sorted(self.frame["label"].unique())
        self.registry = base / "registry"
        self.registry.mkdir()
        (self.registry / "evil.toml").write_text(_entry_toml(self.table, classes), "utf-8")
        formula = _entry_toml(self.table, classes, "formula", FORMULA_TITLE)
        (self.registry / "formula.toml").write_text(formula, "utf-8")
        # An entry the registry skips, with a warning quoting it.
        broken = f"name = {json.dumps('broken')}\ntitle = {json.dumps(HOSTILE)}\n"
        (self.registry / "broken.toml").write_text(broken, "utf-8")
        # A file whose name and bytes are hostile: the generic argument of every command.
        self.file = base / f"file{_file_name(HOSTILE_LINE)}.csv"
        self.file.write_text(f"{HOSTILE},{HOSTILE}\n{HOSTILE},1\n", "utf-8")
        self.bad_toml = base / "bad.toml"
        self.bad_toml.write_text(f"name = {json.dumps(HOSTILE)}\n", "utf-8")
        self.runs = base / "runs"
        self.runs.mkdir()
        self.run = self.runs / "run"
        self.run_evil = self.runs / f"run{_file_name(HOSTILE_LINE)}"
        self.env = {"MUDATA_REGISTRY": str(self.registry), "MUDATA_HOME": str(base / "home")}

    def evaluate_args(self, out: Path | None = None, *extra: str) -> list[str]:
        args = ["evaluate", "--data", str(self.table), "-s", "mm,uim", "-c", "nb"]
        args += ["--iterations", "2", "--no-progress", *extra]
        return [*args, "--out", str(out)] if out is not None else args


def invoke(tool: str, args: list[str], env: dict[str, str]) -> Result:
    """One call, its output as a terminal would receive it (no ANSI stripping)."""
    return CliRunner().invoke(TOOLS[tool], args, env=env, color=True)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    inputs = Hostile(tmp_path_factory.mktemp("hostile"))
    for out in (inputs.run, inputs.run_evil):
        result = invoke("mueval", inputs.evaluate_args(out), inputs.env)
        assert result.exit_code == 0, result.output
    return inputs


# ------------------------------------------------------------------- the scenarios

#: One call: the tool's arguments, the exit codes allowed, and whether the
#: output must show the hostile text escaped (the command printed it).
Call = tuple[list[str], tuple[int, ...], bool]


def _mudata_list(h: Hostile) -> list[Call]:
    return [
        (["list"], (0,), True),
        (["list", "--table", "csv"], (0,), True),
        (["list", "--table", "markdown"], (0,), True),
        (["list", "--json"], (0,), False),
    ]


def _mudata_info(h: Hostile) -> list[Call]:
    return [
        (["info", "evil"], (0,), True),
        (["info", "evil", "--json"], (0,), False),
        (["info", HOSTILE], (1, 2), True),
    ]


def _mudata_fetch(h: Hostile) -> list[Call]:
    return [(["fetch", "evil", "--no-progress"], (0,), False), (["fetch", HOSTILE], (1, 2), True)]


def _mudata_verify(h: Hostile) -> list[Call]:
    return [(["fetch", "evil", "--no-progress"], (0,), False), (["verify", "evil"], (0,), False)]


def _init_call(h: Hostile, name: str) -> Call:
    draft = h.base / f"{name}.toml"
    args = ["init", str(h.parquet_data), "--name", name, "-o", str(draft), "--force"]
    return ([*args, "--kind", "features", "--sampling-rate", "50"], (0,), True)


def _mudata_init(h: Hostile) -> list[Call]:
    return [_init_call(h, "drafted")]


def _mudata_register(h: Hostile) -> list[Call]:
    # Class names from data labels: through init and register to info and list.
    draft = str(h.base / "mine.toml")
    return [
        _init_call(h, "mine"),
        (["register", draft, "--draft-ok", "--replace"], (0,), False),
        (["info", "mine"], (0,), True),
        (["list"], (0,), True),
        (["register", str(h.bad_toml)], (1, 2), True),
    ]


def _mueval_evaluate(h: Hostile) -> list[Call]:
    out = h.base / "evaluated"
    return [
        (h.evaluate_args(None), (0,), False),
        (h.evaluate_args(None, "--table", "csv"), (0,), False),
        (h.evaluate_args(out, "--table", "markdown", "--overwrite"), (0,), False),
        (["evaluate", "--data", str(h.file), "--no-progress"], (1, 2), True),
    ]


def _mueval_report(h: Hostile) -> list[Call]:
    return [(["report", str(h.run_evil), "--figures", "none", "--overwrite"], (0,), False)]


def _mueval_compare(h: Hostile) -> list[Call]:
    one, two = str(h.run), str(h.run_evil)
    return [(["compare", one, two, "--table", f], (0,), True) for f in ("text", "csv", "markdown")]


def _mueval_compare_guarantees(h: Hostile) -> list[Call]:
    one, two = str(h.run), str(h.run_evil)
    calls: list[Call] = [
        (["compare", one, "--guarantees", "--table", f], (0,), True)
        for f in ("text", "csv", "markdown")
    ]
    out = str(h.base / "guarantees.csv")
    calls.append((["compare", one, two, "--guarantees", "--all-pairs", "--out", out], (0,), True))
    return calls


def _mueval_table(h: Hostile) -> list[Call]:
    # A run folder with a hostile name, in every format: the tables print no
    # name of it (the folder name is not shown), but nothing raw may pass.
    return [
        (["table", str(h.run_evil), "--format", f, "--rows", "all"], (0,), False)
        for f in ("latex", "csv", "markdown")
    ]


def _mueval_curve(h: Hostile) -> list[Call]:
    args = ["curve", "--data", str(h.table), "-c", "nb", "--k", "0,5", "--iterations", "1"]
    args += ["--min-test", "5"]
    return [(args, (0,), False), ([*args, "--table", "csv"], (0,), False)]


#: Each command's scenarios, in parts small enough for a test each.
SCENARIOS: dict[tuple[str, str], tuple[Callable[[Hostile], list[Call]], ...]] = {
    ("mudata", "list"): (_mudata_list,),
    ("mudata", "info"): (_mudata_info,),
    ("mudata", "fetch"): (_mudata_fetch,),
    ("mudata", "verify"): (_mudata_verify,),
    ("mudata", "init"): (_mudata_init,),
    ("mudata", "register"): (_mudata_register,),
    ("mueval", "evaluate"): (_mueval_evaluate,),
    ("mueval", "report"): (_mueval_report,),
    ("mueval", "compare"): (_mueval_compare, _mueval_compare_guarantees),
    ("mueval", "curve"): (_mueval_curve,),
    ("mueval", "table"): (_mueval_table,),
}

#: (tool, command, part): every command at least once, for its generic calls.
ALL_CASES = [
    (tool, command, part)
    for tool, command in ALL_COMMANDS
    for part in range(max(1, len(SCENARIOS.get((tool, command), ()))))
]


def test_every_command_has_hostile_scenarios() -> None:
    missing = sorted(set(ALL_COMMANDS) - set(SCENARIOS))
    assert missing == [], f"add hostile calls to SCENARIOS for {missing}"


def _check(result: Result, args: list[str], codes: tuple[int, ...], escaped: bool) -> None:
    shown = f"{args}: exit {result.exit_code}\n{result.output}"
    assert result.exit_code in codes, shown
    # Not a traceback: an exception left to click's runner would print nothing of its own.
    assert (
        result.exit_code != 1
        or result.exception is None
        or isinstance(result.exception, SystemExit)
    ), shown
    for stream in (result.stdout_bytes, result.stderr_bytes):
        text = stream.decode("utf-8")
        assert _raw_controls(text) == [], shown
        # A line break inside a value is escaped too: no line of its own.
        assert not any(line.startswith("forged") for line in text.split("\n")), shown
    if escaped:
        assert ESCAPED in result.output, shown


@pytest.mark.parametrize(("tool", "command", "part"), ALL_CASES)
def test_hostile_calls_print_no_control_character(
    hostile: Hostile, tool: str, command: str, part: int, tmp_path: Path
) -> None:
    env = {**hostile.env, "MUDATA_HOME": str(tmp_path / "home")}
    if part == 0:
        # A hostile file name (and bytes) where the command takes its argument.
        generic = invoke(tool, [command, str(hostile.file)], env)
        _check(generic, [command, "<hostile file>"], (0, 1, 2), False)
        # click's own parse error quoting what it was given, line break and all.
        unknown = invoke(tool, [command, f"--{HOSTILE}"], env)
        _check(unknown, [command, "--<hostile>"], (2,), True)
    parts = SCENARIOS.get((tool, command), ())
    for args, codes, escaped in parts[part](hostile) if parts else []:
        _check(invoke(tool, args, env), args, codes, escaped)


def test_csv_on_stdout_neutralises_formulas_as_the_out_file_does(
    hostile: Hostile, tmp_path: Path
) -> None:
    # User ids that a spreadsheet would run: the worst user's id is one of them.
    frame = make_frame(n_users=4)
    frame["userid"] = frame["userid"].map(lambda u: f'=HYPERLINK("http://x/{u}")')
    data = tmp_path / "table.csv"
    frame.to_csv(data, index=False)
    run = tmp_path / "run"
    args = ["evaluate", "--data", str(data), "-s", "mm", "-c", "nb", "--iterations", "2"]
    assert invoke("mueval", [*args, "--no-progress", "--out", str(run)], {}).exit_code == 0
    out = tmp_path / "g.csv"
    args = ["compare", str(run), "--guarantees", "--table", "csv", "--out", str(out)]
    result = invoke("mueval", args, {})
    assert result.exit_code == 0, result.output
    printed = list(csv.reader(io.StringIO(result.stdout.split("\n\n")[0])))
    written = list(csv.DictReader(out.open(encoding="utf-8")))
    header, rows = printed[0], printed[1:]
    worst = [dict(zip(header, r))["worst_user"] for r in rows]
    assert worst and all(w.startswith("'=HYPERLINK(") for w in worst), worst
    assert worst == [w["worst_user"] for w in written]


def test_list_as_csv_neutralises_a_formula_title(hostile: Hostile) -> None:
    result = invoke("mudata", ["list", "--table", "csv"], hostile.env)
    assert result.exit_code == 0, result.output
    header, *body = csv.reader(io.StringIO(result.stdout))
    rows = {r[0]: r for r in body}
    assert rows["formula"][header.index("title")] == "'" + FORMULA_TITLE
    # The text form shows the title as it is: no spreadsheet reads it.
    text = invoke("mudata", ["list"], hostile.env)
    line = next(line for line in text.stdout.splitlines() if line.startswith("formula "))
    assert f"  {FORMULA_TITLE}  [" in line, line


#: Every character the escaping must cover: C0 (tab and line feed included),
#: DEL, C1, the bidi embeddings, overrides and isolates, the marks LRM, RLM and
#: ALM, the line and paragraph separators.
MUST_ESCAPE = [
    *map(chr, range(0x00, 0x20)),
    "\x7f",
    *map(chr, range(0x80, 0xA0)),
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
    "\u200e",
    "\u200f",
    "\u061c",
    "\u2028",
    "\u2029",
]


def test_plain_shows_every_control_and_bidi_character_as_a_visible_escape() -> None:
    # Here, not at the top: the one function under test, beside the commands.
    from mudata.display import plain

    for char in MUST_ESCAPE:
        escaped = plain(f"a{char}b")
        # The escape is Python's own (repr), written out independently here.
        code = ord(char)
        expected = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}.get(char) or (
            f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        )
        assert escaped == f"a{expected}b", (hex(code), escaped)
        assert plain(escaped) == escaped  # escaping twice changes nothing


def test_a_download_under_a_hostile_name_prints_escaped(
    hostile: Hostile, http_server, tmp_path: Path
) -> None:
    """The network path: a hostile file name downloaded from the local server,
    with progress bars, then with a wrong hash, then from a hostile mirror."""
    (http_server.root / "table.csv").write_bytes(hostile.table.read_bytes())
    classes = sorted(hostile.frame["label"].unique())
    registry = tmp_path / "registry"
    registry.mkdir()
    url = f"{http_server.url}/table.csv"
    (registry / "served.toml").write_text(_entry_toml(hostile.table, classes, "served", url=url))
    wrong = _entry_toml(hostile.table, classes, "wrong", url=url, sha256="0" * 64)
    (registry / "wrong.toml").write_text(wrong)
    env = {"MUDATA_REGISTRY": str(registry), "MUDATA_HOME": str(tmp_path / "home")}
    # In its own process, so that Pooch's handler writes to this stderr. With
    # --progress, tqdm redraws its bar after a CR of its own: that CR is allowed.
    shown = subprocess.run(
        [sys.executable, "-m", "mudata.cli", "fetch", "served", "--progress"],
        env={**os.environ, **env},
        capture_output=True,
        timeout=120,
        check=False,
    )
    err = shown.stderr.decode("utf-8")
    assert shown.returncode == 0, err
    assert "%|" in err  # the bar was drawn
    assert set(_raw_controls(err)) == {"\r"}, err
    assert _raw_controls(shown.stdout.decode("utf-8")) == []
    assert ESCAPED.replace("http", "http:evil") in err  # Pooch's line, escaped
    assert not any(line.startswith("forged") for line in err.split("\n")), err
    calls: list[Call] = [
        (["fetch", "served", "--no-progress", "--force"], (0,), False),
        (["info", "served"], (0,), True),
        (["fetch", "wrong", "--no-progress"], (1,), False),
        # A 404 is not retried: the address quoted at once.
        (["fetch", "wrong", "--mirror", f"{http_server.url}/{HOSTILE}"], (1,), True),
    ]
    for args, codes, escaped in calls:
        _check(invoke("mudata", args, env), args, codes, escaped)
    assert http_server.count("/table.csv") == 2  # the second fetch reuses the raw file
