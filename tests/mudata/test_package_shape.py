"""The shape of src/mudata: docstrings point inside the repository, functions stay small."""

from __future__ import annotations

import ast
import re

from tests.conftest import PROJECT_ROOT

SOURCES = sorted((PROJECT_ROOT / "src" / "mudata").rglob("*.py"))
MAX_STATEMENTS = 60


def test_no_reference_to_files_outside_the_repository() -> None:
    outside = re.compile(r"\.\./shared|shared/spec|DATASETS\.md")
    found = [
        f"{path.relative_to(PROJECT_ROOT)}:{n}"
        for path in SOURCES
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if outside.search(line)
    ]
    assert found == []


def test_every_docs_file_cited_exists() -> None:
    cited = {
        match
        for path in SOURCES
        for match in re.findall(r"docs/[\w./-]+\.md", path.read_text(encoding="utf-8"))
    }
    assert cited, "the docstrings cite docs/datasets.md"
    assert [c for c in sorted(cited) if not (PROJECT_ROOT / c).is_file()] == []


def _statements(node: ast.AST) -> int:
    """Statements in a function, nested blocks included, its docstring not.

    Close to ruff's PLR0915 count (equal or a little higher: ruff weighs some
    compound statements differently), so the limit holds for both.
    """
    body = getattr(node, "body", [])
    docstring = (
        bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    )
    return sum(isinstance(child, ast.stmt) for child in ast.walk(node)) - 1 - docstring


def test_no_function_over_about_60_statements() -> None:
    long = [
        f"{path.relative_to(PROJECT_ROOT)}:{node.lineno} {node.name} ({_statements(node)})"
        for path in SOURCES
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and _statements(node) > MAX_STATEMENTS
    ]
    assert long == []


def test_the_statement_count_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    (tree,) = ast.parse(f'def f():\n    """Doc."""\n{body}\n').body
    assert _statements(tree) == 61
