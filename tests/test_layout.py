"""The rooms of the code: private names stay home, lazy imports say why (issue 17).

import-linter (``lint-imports``, configured in pyproject.toml) holds the
direction of imports between subpackages; these checks hold what it cannot see.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

SRC = PROJECT_ROOT / "src"
PACKAGES = ("mudata", "mueval")


def _modules() -> list[tuple[str, Path]]:
    """(dotted name, path) of every module under src/."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_module(dotted: str) -> bool:
    base = SRC.joinpath(*dotted.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")[: len(module.split(".")) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _crossings(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, ``X._name``) for each ``from X import _name`` and ``X._name`` where
    ``X`` is another of our modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            if source.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                target = f"{source}.{alias.name}"
                if _is_module(target):
                    aliases[alias.asname or alias.name] = target
                elif _private(alias.name) and source != module:
                    found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            found.append((node.lineno, f"{aliases[node.value.id]}.{node.attr}"))
    return found


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_no_private_name_crosses_modules(module: str, path: Path) -> None:
    found = [f"line {line}: {name}" for line, name in _crossings(module, path)]
    assert found == [], f"{module} reaches into another module's private names: {found}"


def test_the_checker_sees_a_crossing(tmp_path: Path) -> None:
    # The test above would pass vacuously if the walk missed the import forms.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from mueval.evaluation.splits import _plain\nimport mueval.files as f\nf._refusal\n"
    )
    assert _crossings("probe", probe) == [
        (1, "mueval.evaluation.splits._plain"),
        (3, "mueval.files._refusal"),
    ]


def _lazy_imports(path: Path) -> list[tuple[int, str]]:
    """(line, previous lines) of every import inside a function."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    above = "\n".join(lines[max(0, sub.lineno - 6) : sub.lineno])
                    out.append((sub.lineno, above))
    return out


@pytest.mark.parametrize(
    "path",
    sorted(p for package in PACKAGES for p in (SRC / package).rglob("*.py")),
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_imports_inside_functions_say_why(path: Path) -> None:
    # Imports inside functions hide cycles from a reader; the only ones left keep
    # the start fast (heavy or optional libraries, lazily loaded commands) and
    # open with a comment "Here, not at the top: <why>" at most five lines above.
    silent = [line for line, above in _lazy_imports(path) if "not at the top" not in above]
    assert silent == [], f"{path.name}: imports inside functions without a reason, lines {silent}"


def test_the_checker_sees_a_silent_lazy_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f():\n    import json\n\n\n"
        "def g():\n    # Here, not at the top: a heavy library.\n    import json\n"
    )
    assert [line for line, above in _lazy_imports(probe) if "not at the top" not in above] == [2]
