"""The dataset registry: one TOML file per dataset, validated on load.

Entries are data, not code. They are looked up, in this order, in the folders
of the ``MUDATA_REGISTRY`` path list, in the user's registry folder
(``<data home>/registry``, written by ``mudata register``) and in the built-in
``registry/`` folder; the first entry with a name wins.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import os
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from mudata._files import read_regular
from mudata._resources import builtin_registry_dir, schemas_dir
from mudata.errors import RegistryError, UnknownDatasetError

log = logging.getLogger(__name__)

REGISTRY_ENV = "MUDATA_REGISTRY"
# Integers past int64 (TOML allows any size) overflow numpy later; refuse them here.
_INT_RANGE = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class Member:
    """A file inside an archive (or inside a manual folder), with its own hash."""

    path: str
    sha256: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class RemoteFile:
    """One file of a release: an address (or local path) and its checksum."""

    name: str
    url: str | None = None
    path: str | None = None
    sha256: str | None = None
    size: int | None = None
    archive: str | None = None
    members: tuple[Member, ...] = ()
    glob: str | None = None
    hashes: str = "published"


@dataclass(frozen=True)
class ClassSpec:
    """A kept class: its code in the raw data and the name it gets in the table."""

    code: str | int
    name: str


@dataclass(frozen=True)
class Sensor:
    """A tri-axial sensor: a name and the three channel columns (x, y, z)."""

    name: str
    channels: tuple[str, str, str]


@dataclass(frozen=True)
class Recipe:
    """How raw signals become feature rows (see ``mudata.features``)."""

    name: str
    window: int | None = None
    smoothing: int = 10
    sd_ddof: int = 1
    auc: str = "sum"
    meandif: str = "net"
    second_sensor: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain dictionary, for provenance records."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class DatasetEntry:
    """A validated registry entry.

    Attributes mirror the TOML keys; ``source`` is the file the entry came from.
    """

    name: str
    title: str
    version: str
    homepage: str
    licence: str
    citation: str
    sampling_rate_hz: float
    reader: str
    recipe: Recipe
    classes: tuple[ClassSpec, ...]
    files: tuple[RemoteFile, ...]
    sensors: tuple[Sensor, ...] = ()
    reader_options: dict[str, Any] = field(default_factory=dict)
    min_per_class: int = 5
    description: str = ""
    source: Path | None = None

    @property
    def class_names(self) -> list[str]:
        """Names of the kept classes, in the registry's order."""
        return [c.name for c in self.classes]

    @property
    def class_map(self) -> dict[str, str]:
        """Raw class code (as text) to class name."""
        return {str(c.code): c.name for c in self.classes}

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain JSON-able data (what ``mudata info --json`` prints)."""
        return {
            "name": self.name,
            "title": self.title,
            "version": self.version,
            "description": self.description,
            "homepage": self.homepage,
            "licence": self.licence,
            "citation": self.citation,
            "sampling_rate_hz": self.sampling_rate_hz,
            "reader": self.reader,
            "reader_options": self.reader_options,
            "recipe": self.recipe.as_dict(),
            "min_per_class": self.min_per_class,
            "classes": [{"code": c.code, "name": c.name} for c in self.classes],
            "sensors": [{"name": s.name, "channels": list(s.channels)} for s in self.sensors],
            "files": [
                {
                    k: v
                    for k, v in {
                        "name": f.name,
                        "url": f.url,
                        "path": f.path,
                        "sha256": f.sha256,
                        "size": f.size,
                        "archive": f.archive,
                        "members": [m.__dict__ for m in f.members] or None,
                        "glob": f.glob,
                        "hashes": None if f.hashes == "published" else f.hashes,
                    }.items()
                    if v is not None
                }
                for f in self.files
            ],
            "source": str(self.source) if self.source else None,
        }


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads((schemas_dir() / "registry.schema.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _field_path(error: jsonschema.ValidationError) -> str:
    parts = []
    for part in error.absolute_path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(("." if parts else "") + str(part))
    return "".join(parts) or "(top level)"


def _check_integers(value: Any, source: Path | str, where: str = "") -> None:
    """Refuse integers outside int64 and non-finite numbers anywhere in the entry."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_integers(item, source, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_integers(item, source, f"{where}[{i}]")
    elif isinstance(value, bool):
        return
    elif isinstance(value, int) and not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
        shown = str(value) if len(str(value)) <= 30 else f"a {len(str(value))}-digit number"
        message = (
            f"invalid registry entry {source}:\n  field '{where}': {shown} is out of range "
            f"(expected an integer between {_INT_RANGE[0]} and {_INT_RANGE[1]})"
        )
        raise RegistryError(message)
    elif isinstance(value, float) and not math.isfinite(value):
        message = f"invalid registry entry {source}:\n  field '{where}': {value} is not a finite number"
        raise RegistryError(message)


def parse_entry(data: dict[str, Any], source: Path | str = "<memory>") -> DatasetEntry:
    """Validate raw TOML data against the registry schema and build the entry.

    Parameters
    ----------
    data : dict
        The parsed TOML document.
    source : path-like
        Where it came from; named in every error message.

    Raises
    ------
    RegistryError
        Naming the file, the field and what is wrong with it, for every failure.
    """
    _check_integers(data, source)
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"  field '{_field_path(e)}': {e.message}" for e in errors]
        message = f"invalid registry entry {source}:\n" + "\n".join(lines)
        raise RegistryError(message)
    recipe = Recipe(**data["recipe"])
    if recipe.name == "study-window" and recipe.window is None:
        message = f"invalid registry entry {source}:\n  field 'recipe.window': required by recipe 'study-window'"
        raise RegistryError(message)
    sensors = tuple(Sensor(s["name"], tuple(s["channels"])) for s in data.get("sensors", []))
    if recipe.name != "precomputed" and not sensors:
        message = f"invalid registry entry {source}:\n  field 'sensors': recipe '{recipe.name}' needs at least one sensor"
        raise RegistryError(message)
    codes = [str(c["code"]) for c in data["classes"]]
    names = [c["name"] for c in data["classes"]]
    for what, values in (("code", codes), ("name", names)):
        duplicated = sorted({v for v in values if values.count(v) > 1})
        if duplicated:
            message = f"invalid registry entry {source}:\n  field 'classes': duplicated class {what}s {duplicated}"
            raise RegistryError(message)
    files = tuple(
        RemoteFile(
            name=f["name"],
            url=f.get("url"),
            path=f.get("path"),
            sha256=f.get("sha256"),
            size=f.get("size"),
            archive=f.get("archive"),
            members=tuple(Member(**m) for m in f.get("members", []) if isinstance(m, dict)),
            glob=f["members"] if isinstance(f.get("members"), str) else f.get("glob"),
            hashes=f.get("hashes", "published"),
        )
        for f in data["files"]
    )
    return DatasetEntry(
        name=data["name"],
        title=data["title"],
        version=data["version"],
        homepage=data["homepage"],
        licence=data["licence"],
        citation=data["citation"].strip(),
        sampling_rate_hz=float(data["sampling_rate_hz"]),
        reader=data["reader"],
        recipe=recipe,
        classes=tuple(ClassSpec(c["code"], c["name"]) for c in data["classes"]),
        files=files,
        sensors=sensors,
        reader_options=dict(data.get("reader_options", {})),
        min_per_class=int(data.get("min_per_class", 5)),
        description=data.get("description", "").strip(),
        source=Path(source) if not isinstance(source, Path) else source,
    )


def load_entry_file(path: Path | str) -> DatasetEntry:
    """Read and validate one TOML registry file."""
    path = Path(path)
    try:
        raw = read_regular(path, "registry entry", RegistryError)
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        message = f"registry file {path} does not exist"
        raise RegistryError(message) from None
    except UnicodeDecodeError as exc:
        message = f"invalid registry entry {path}: expected UTF-8 text (TOML), found byte {exc.object[exc.start]:#04x} at offset {exc.start}"
        raise RegistryError(message) from None
    except OSError as exc:
        message = f"registry file {path} cannot be read ({type(exc).__name__}: {exc.strerror or exc})"
        raise RegistryError(message) from None
    except tomllib.TOMLDecodeError as exc:
        message = f"invalid registry entry {path}: not valid TOML ({exc})"
        raise RegistryError(message) from None
    return parse_entry(data, source=path)


def registry_dirs(data_home: Path | str | None = None) -> list[Path]:
    """Folders searched for entries, highest priority first."""
    from mudata.paths import user_registry_dir  # local import: paths imports pooch

    dirs = [Path(p) for p in os.environ.get(REGISTRY_ENV, "").split(os.pathsep) if p]
    dirs.append(user_registry_dir(data_home))
    dirs.append(builtin_registry_dir())
    return dirs


def load_registry(
    data_home: Path | str | None = None, *, broken: dict[str, RegistryError] | None = None
) -> dict[str, DatasetEntry]:
    """Every known entry, by name (first found wins, see module docstring).

    A broken entry file does not break the registry: it is logged as a warning
    naming the file and the field, and left out. Pass a dict as ``broken`` to
    receive those errors by dataset name (the file's stem) instead of the
    warnings, so that asking for that dataset gives its own error (see
    :func:`get_entry`).
    """
    entries: dict[str, DatasetEntry] = {}
    failures: dict[str, RegistryError] = {} if broken is None else broken
    for folder in registry_dirs(data_home):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            if path.stem in entries or path.stem in failures:
                continue  # a folder searched earlier already decided this name
            try:
                entry = _load_named(path)
            except RegistryError as exc:
                if broken is None:
                    log.warning("skipping registry entry %s: %s", path, exc)
                failures[path.stem] = exc
                continue
            entries.setdefault(entry.name, entry)
    return entries


def _load_named(path: Path) -> DatasetEntry:
    entry = load_entry_file(path)
    if path.stem != entry.name:
        message = (
            f"invalid registry entry {path}:\n  field 'name': the file must be named after "
            f"the dataset, '{entry.name}.toml'"
        )
        raise RegistryError(message)
    return entry


def get_entry(name: str, data_home: Path | str | None = None) -> DatasetEntry:
    """The entry called ``name``; an unknown name suggests the closest ones."""
    broken: dict[str, RegistryError] = {}
    entries = load_registry(data_home, broken=broken)
    key = name.strip().lower()
    if key in entries:
        for exc in broken.values():
            log.warning("skipping registry entry: %s", exc)
        return entries[key]
    if key in broken:
        raise RegistryError(str(broken[key]))
    for exc in broken.values():
        log.warning("skipping registry entry: %s", exc)
    close = difflib.get_close_matches(key, entries, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    message = f"unknown dataset '{name}'.{hint} Known datasets: {', '.join(sorted(entries))}."
    raise UnknownDatasetError(message)
