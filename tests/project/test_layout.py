"""The rooms of the code: private names stay home, lazy imports say why (issue 17).

import-linter (``lint-imports``, configured in pyproject.toml) holds the
direction of imports between subpackages; these checks hold what it cannot see.
The tests' own tree mirrors the modules', so that a module's tests are where a
reader looks for them.
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


#: A module longer than this holds one concept, named by a docstring line ``One concept: ...``.
MAX_LINES = 600


def _bound_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level (inside ``if`` and ``try`` too, not
    inside functions or classes): definitions, assignments, imports."""
    names: set[str] = set()
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                pending.append(child)
            elif isinstance(child, ast.ExceptHandler):
                pending.extend(child.body)
            else:
                names.update(
                    n.id
                    for n in ast.walk(child)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                )
    return names


def _declared_all(tree: ast.Module) -> list[str] | None:
    """The literal ``__all__`` of a module's top level, or None when it has none."""
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value
            assert isinstance(value, (ast.List, ast.Tuple)), "__all__ is a literal list"
            return [ast.literal_eval(e) for e in value.elts]
    return None


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_every_module_declares_its_public_names(module: str, path: Path) -> None:
    """Each module says what it offers, and offers only what it binds."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    declared = _declared_all(tree)
    assert declared is not None, f"{module} declares no __all__"
    unbound = sorted(set(declared) - _bound_names(tree))
    assert not unbound, f"{module}.__all__ names what it does not bind: {unbound}"


def test_the_all_checker_sees_a_missing_and_a_stale_name(tmp_path: Path) -> None:
    """Both failures of the check above are seen on a hand-written module."""
    missing = ast.parse("def f():\n    pass\n")
    stale = ast.parse('__all__ = ["f", "gone"]\n\ndef f():\n    pass\n')
    assert _declared_all(missing) is None
    assert sorted(set(_declared_all(stale) or []) - _bound_names(stale)) == ["gone"]


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_a_long_module_names_its_one_concept(module: str, path: Path) -> None:
    """No module passes MAX_LINES lines unless its docstring names the one concept it holds."""
    text = path.read_text(encoding="utf-8")
    n_lines = len(text.splitlines())
    if n_lines <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert any(line.startswith("One concept:") for line in doc.splitlines()), (
        f"{module} has {n_lines} lines (over {MAX_LINES}) and no 'One concept:' docstring line"
    )


def test_mudata_top_level_stays_small() -> None:
    """mudata's modules live in its stage subpackages; its top level keeps the kernel."""
    top = sorted(p.name for p in (SRC / "mudata").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= 12, f"mudata's top level holds {len(top)} modules: {top}"


TESTS = PROJECT_ROOT / "tests"
# The one folder under tests/ that mirrors no package: what crosses the project.
ACROSS = "project"


def _misplaced_tests(tests: Path, src: Path) -> list[str]:
    """Each test file not under ``tests/<a folder of src>/`` or ``tests/project/``,
    and each folder of a test file that is not a package (pytest imports tests as
    packages: two folders may then hold the same file name)."""
    out = []
    for path in sorted(tests.rglob("test_*.py")):
        name = path.relative_to(tests).as_posix()
        folder = path.parent.relative_to(tests)
        if not folder.parts:
            out.append(f"{name}: at the top of tests/, which mirrors no module")
        elif folder.parts[0] != ACROSS and not (src / folder).is_dir():
            out.append(f"{name}: no folder src/{folder.as_posix()} to mirror")
        for package in [path.parent, *path.parent.parents]:
            if package == tests.parent:
                break
            if not (package / "__init__.py").is_file():
                where = package.relative_to(tests.parent).as_posix()
                out.append(f"{name}: {where} lacks __init__.py")
    return out


def test_the_tests_mirror_the_modules() -> None:
    # tests/<package>/<subpackage>/test_<module>.py holds the tests of
    # src/<package>/<subpackage>/<module>.py; tests/project/ what crosses both tools.
    assert _misplaced_tests(TESTS, SRC) == []


def test_the_checker_sees_a_misplaced_test(tmp_path: Path) -> None:
    src, tests = tmp_path / "src", tmp_path / "tests"
    for folder in ("mudata/readers", "mudata/nopackage"):
        (src / folder).mkdir(parents=True)
    for folder in ("", "mudata", "mudata/readers", "mudata/gone", "project", "project/deeper"):
        (tests / folder).mkdir(parents=True, exist_ok=True)
        (tests / folder / "__init__.py").write_text("")
    (tests / "mudata" / "nopackage").mkdir()
    for name in (
        "test_flat.py",
        "mudata/readers/test_ok.py",
        "mudata/gone/test_old.py",
        "mudata/nopackage/test_x.py",
        "project/test_both.py",
        "project/deeper/test_both.py",
    ):
        (tests / name).write_text("")
    assert _misplaced_tests(tests, src) == [
        "mudata/gone/test_old.py: no folder src/mudata/gone to mirror",
        "mudata/nopackage/test_x.py: tests/mudata/nopackage lacks __init__.py",
        "test_flat.py: at the top of tests/, which mirrors no module",
    ]
