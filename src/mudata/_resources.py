"""Where the built-in registry entries and schemas live.

In a wheel they are shipped inside the package as ``mudata/_data``; in a source
checkout (editable install, tests) they are the top-level ``registry/`` and
``schemas/`` folders.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DATA = Path(__file__).resolve().parent / "_data"
_CHECKOUT_ROOT = Path(__file__).resolve().parents[2]


def _locate(folder: str) -> Path:
    for candidate in (_PACKAGE_DATA / folder, _CHECKOUT_ROOT / folder):
        if candidate.is_dir():
            return candidate
    message = f"mudata's built-in '{folder}' folder is missing (looked in {_PACKAGE_DATA} and {_CHECKOUT_ROOT})"
    raise FileNotFoundError(message)


def builtin_registry_dir() -> Path:
    """Folder holding the built-in dataset entries (one TOML file each)."""
    return _locate("registry")


def schemas_dir() -> Path:
    """Folder holding the registry JSON Schema."""
    return _locate("schemas")


__all__ = ["builtin_registry_dir", "schemas_dir"]
