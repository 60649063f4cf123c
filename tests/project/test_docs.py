"""The documentation's sources stay complete; the build itself (sphinx -W) runs in .ci/run.

Building the site runs the gallery (a minute or more), too slow for the suite;
these checks are the cheap half: every public name has its API entry, every
example its title, every schema field its row, and the report names pages
that exist.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

import mudata
import mueval
from tests.conftest import PROJECT_ROOT

DOCS = PROJECT_ROOT / "docs"
EXAMPLES = PROJECT_ROOT / "examples"
API = DOCS / "reference" / "api.rst"


def _documented_names(text: str) -> set[str]:
    """``package.name`` for each autosummary entry (under its currentmodule) and each autodata."""
    names: set[str] = set()
    module = ""
    in_summary = False
    for line in text.splitlines():
        if m := re.match(r"\.\. currentmodule:: (\S+)", line):
            module = m.group(1)
        elif m := re.match(r"\.\. (?:autodata|data):: (\S+)", line):
            names.add(m.group(1))
        elif line.startswith(".. autosummary::"):
            in_summary = True
        elif in_summary and (m := re.fullmatch(r" {3}(\w+)", line)):
            names.add(f"{module}.{m.group(1)}")
        elif in_summary and line and not line.startswith(" "):
            in_summary = False
    return names


@pytest.mark.parametrize("package", [mudata, mueval], ids=lambda p: p.__name__)
def test_every_public_name_is_in_the_api_reference(package: ModuleType) -> None:
    documented = _documented_names(API.read_text(encoding="utf-8"))
    missing = [n for n in package.__all__ if f"{package.__name__}.{n}" not in documented]
    assert not missing, f"{package.__name__}.__all__ names missing from {API}: {missing}"


def test_the_api_reference_names_only_public_names() -> None:
    public = {f"{p.__name__}.{n}" for p in (mudata, mueval) for n in p.__all__}
    extra = _documented_names(API.read_text(encoding="utf-8")) - public
    assert not extra, f"{API} documents names that are not in __all__: {sorted(extra)}"


def test_the_api_reference_renders_no_module_docstring_and_no_inherited_one() -> None:
    """The packages' docstrings list their internal modules, and ``autodata`` on a
    string shows ``str``'s own docstring: the page uses neither."""
    text = API.read_text(encoding="utf-8")
    assert ".. automodule::" not in text
    assert ".. autodata::" not in text
    assert "|release|" in text  # the version string itself, from conf.py


def _examples() -> list[Path]:
    found = sorted(EXAMPLES.glob("plot_*.py"))
    assert len(found) >= 4, f"the gallery needs at least four examples, found {found}"
    return found


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.name)
def test_every_example_has_a_title_docstring(path: Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
    assert docstring, f"{path.name} has no module docstring (sphinx-gallery needs its title)"
    lines = docstring.strip("\n").splitlines()
    assert len(lines) >= 3, f"{path.name}: a title, its underline and a paragraph"
    title, underline = lines[0], lines[1]
    assert title.strip(), f"{path.name}: empty title"
    assert re.fullmatch(r"=+", underline) and len(underline) == len(title), (
        f"{path.name}: the title {title!r} needs an '=' underline of its length"
    )


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.name)
def test_every_example_uses_a_temporary_data_home(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert "tempfile.mkdtemp" in source and "shutil.rmtree(home)" in source, path.name
    assert "MUDATA_SHARED_DATA" in source, path.name


def _schema_extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "registry_schema", DOCS / "_ext" / "registry_schema.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _field_paths(node: dict, schema: dict, prefix: str = "") -> list[tuple[str, dict]]:
    """Every (TOML path, field schema) of the schema, an independent walk of the file."""
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    out = []
    for name, child in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        out.append((path, child))
        out += _field_paths(child, schema, f"{path}.")
        if isinstance(child.get("items"), dict):
            out += _field_paths(child["items"], schema, f"{path}[].")
        for choice in child.get("oneOf", []):
            out += _field_paths(choice, schema, f"{path}.")
    return out


def test_the_registry_reference_has_a_row_per_schema_field() -> None:
    schema = json.loads((PROJECT_ROOT / "schemas" / "registry.schema.json").read_text())
    rst = "\n".join(_schema_extension().schema_rst(schema))
    rows = re.findall(r"^ {3}\* - ``([^`]+)``$", rst, flags=re.MULTILINE)
    expected = [path for path, _ in _field_paths(schema, schema)]
    assert rows == expected
    for path, field in _field_paths(schema, schema):
        if "description" in field:
            first_words = " ".join(field["description"].split()[:4])
            assert first_words in rst, f"the description of {path} is missing"
    required = set(schema["required"])
    for line, nxt in zip(rst.splitlines(), rst.splitlines()[2:], strict=False):
        if m := re.fullmatch(r" {3}\* - ``(\w+)``", line):
            assert (nxt == "     - yes") == (m.group(1) in required), m.group(1)


def test_the_report_names_documentation_pages_that_exist() -> None:
    mentions = []
    for path in sorted((PROJECT_ROOT / "src" / "mueval" / "report").glob("*.py")):
        text = re.sub(r'"\s*\n\s*"', "", path.read_text(encoding="utf-8"))  # join literals
        mentions += [(path.name, m) for m in re.finditer(r"[\w./]*per-user-guarantees[^)]*", text)]
    assert mentions, "the report no longer names the guarantees page: update this test"
    page = DOCS / "per-user-guarantees.md"
    headings = re.findall(r"^## (\d+)\. ", page.read_text(encoding="utf-8"), flags=re.MULTILINE)
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert shipped.get("docs/per-user-guarantees.md") == "mueval/_data/docs/per-user-guarantees.md"
    # A page name (per-user-guarantees.html in the built docs) or the installed copy.
    allowed = {
        "per-user-guarantees",
        "per-user-guarantees.md",
        shipped["docs/per-user-guarantees.md"],
    }
    for name, mention in mentions:
        for path in re.findall(r"[\w./]*per-user-guarantees(?:\.md)?", mention.group(0)):
            assert path in allowed, f"{name}: {path} is not shipped with the package"
        if section := re.search(r"section (\d+)", mention.group(0)):
            assert section.group(1) in headings, f"{name}: {mention.group(0)}"


def test_the_readme_s_second_command_is_the_test_command_ci_runs() -> None:
    """The README's "Two commands": the second installs the [test] extra and runs the
    default suite with the very command .ci/run times; .ci/run also runs the first
    one, as written, through .ci/readme-commands."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)
    assert len(blocks) == 2, "README.md: 'Two commands' should hold two bash blocks"
    steps = [step.strip() for step in blocks[1].split("&&")]
    assert 'pip install -e ".[test]"' in steps
    assert steps[-1] == "python -m pytest -q -n auto"
    ci = (PROJECT_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"\n{steps[-1]}\n" in ci
    assert "bash .ci/readme-commands 1" in ci
