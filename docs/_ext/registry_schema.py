"""Sphinx directive ``registry-schema``: the registry entry format, read from its JSON Schema.

``.. registry-schema:: ../../schemas/registry.schema.json`` (a path relative to the
page) renders every field of the schema, nested tables and arrays of tables
included, as one table: the field's TOML path, its type and allowed values,
whether it is required, its default and its description. The schema is read
at build time, so the page cannot drift from the file ``mudata`` validates
entries against.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: JSON Schema keywords shown as constraints, with how to say them.
_BOUNDS = {
    "minimum": ">= {}",
    "exclusiveMinimum": "> {}",
    "maximum": "<= {}",
    "exclusiveMaximum": "< {}",
    "minLength": "at least {} characters",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
}


def _literal(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return f"``{text}``"


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not ref:
        return node
    if not ref.startswith("#/"):
        message = f"registry-schema: only local $ref are supported, found {ref!r}"
        raise ValueError(message)
    target: Any = schema
    for part in ref[2:].split("/"):
        target = target[part]
    return target


def _type_text(schema: dict[str, Any], node: dict[str, Any]) -> str:
    """The type and allowed values of one field, in words."""
    node = _resolve(schema, node)
    if "const" in node:
        return _literal(node["const"])
    if "enum" in node:
        return "one of " + ", ".join(_literal(v) for v in node["enum"])
    for key, word in (("oneOf", "one of"), ("anyOf", "any of")):
        if key in node and "type" not in node:
            options = [_type_text(schema, option) for option in node[key]]
            if len(options) > 6:
                return f"{word} {len(options)} values: " + ", ".join(options)
            return " or ".join(options)
    kind = node.get("type", "any")
    text = " or ".join(kind) if isinstance(kind, list) else kind
    if text == "array" and "items" in node:
        items = _resolve(schema, node["items"])
        text = (
            "array of tables"
            if items.get("type") == "object"
            else f"array of {items.get('type', 'values')}"
        )
    if text == "object":
        text = "table"
    parts = [text]
    if "pattern" in node:
        parts.append(f"matching ``{node['pattern']}``")
    parts += [form.format(node[key]) for key, form in _BOUNDS.items() if key in node]
    if "not" in node and "enum" in node["not"]:
        parts.append("not " + ", ".join(_literal(v) for v in node["not"]["enum"]))
    return ", ".join(parts)


def _rows(schema: dict[str, Any], node: dict[str, Any], prefix: str) -> list[list[str]]:
    """One row per field below ``node``, depth first, in the schema's order."""
    node = _resolve(schema, node)
    required = set(node.get("required", []))
    rows: list[list[str]] = []
    for name, child in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        resolved = _resolve(schema, child)
        description = resolved.get("description", child.get("description", ""))
        default = _literal(resolved["default"]) if "default" in resolved else ""
        rows.append(
            [
                f"``{path}``",
                _type_text(schema, child),
                "yes" if name in required else "",
                default,
                " ".join(description.split()),
            ]
        )
        if "properties" in resolved:
            rows += _rows(schema, resolved, f"{path}.")
        items = resolved.get("items")
        if isinstance(items, dict) and "properties" in _resolve(schema, items):
            rows += _rows(schema, items, f"{path}[].")
        for choice in resolved.get("oneOf", []):
            if "properties" in _resolve(schema, choice):
                rows += _rows(schema, choice, f"{path}.")
    return rows


def _alternatives(schema: dict[str, Any], node: dict[str, Any], prefix: str) -> list[str]:
    """Sentences for ``oneOf`` lists of required fields (``url`` or ``path``)."""
    node = _resolve(schema, node)
    lines = []
    for name, child in node.get("properties", {}).items():
        resolved = _resolve(schema, child)
        items = resolved.get("items")
        inner = _resolve(schema, items) if isinstance(items, dict) else resolved
        choices = [c.get("required") for c in inner.get("oneOf", []) if "required" in c]
        if choices and all(len(c) == 1 for c in choices):
            names = " or ".join(f"``{c[0]}``" for c in choices)
            where = f"{prefix}{name}[]" if isinstance(items, dict) else f"{prefix}{name}"
            lines.append(f"Each ``{where}`` has exactly one of {names}.")
    return lines


def schema_rst(schema: dict[str, Any]) -> list[str]:
    """The reStructuredText of the reference: an introduction and one list-table."""
    lines = [" ".join(schema.get("description", "").split()), ""]
    if schema.get("additionalProperties") is False:
        lines += ["A field not listed here is an error.", ""]
    lines += [*_alternatives(schema, schema, ""), ""]
    lines += [
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 18 27 7 8 40",
        "",
        "   * - field",
        "     - type and allowed values",
        "     - required",
        "     - default",
        "     - description",
    ]
    for row in _rows(schema, schema, ""):
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {cell}" if cell else "     -" for cell in row[1:]]
    return lines


class RegistrySchema(SphinxDirective):
    """Render a registry JSON Schema file as a reference table."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        _, absolute = self.env.relfn2path(self.arguments[0])
        path = Path(absolute)
        self.env.note_dependency(str(path))
        schema = json.loads(path.read_text(encoding="utf-8"))
        container = nodes.section()
        container.document = self.state.document
        self.state.nested_parse(StringList(schema_rst(schema), str(path)), 0, container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("registry-schema", RegistrySchema)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
