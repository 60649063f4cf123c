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
import sys
import tomllib
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import tomli_w

from mudata import config
from mudata._resources import builtin_registry_dir, schemas_dir
from mudata.errors import (
    MudataUsageError,
    RegistryError,
    StorageError,
    UnknownDatasetError,
    excerpt,
)
from mudata.files import atomic_write, read_regular
from mudata.readers import available_readers, check_reader_options
from mudata.records.entry import ClassSpec, DatasetEntry, Member, Recipe, RemoteFile, Sensor

log = logging.getLogger(__name__)

# Integers past int64 (TOML allows any size) overflow numpy later; refuse them here.
_INT_RANGE = (-(2**63), 2**63 - 1)
#: Classes an entry may hold: activity datasets have tens; the cap keeps a
#: hostile entry from spending minutes in the schema check.
MAX_CLASSES = 10_000
#: Files an entry may list (each may be an archive of many members).
MAX_FILES = 10_000


#: The values ``mudata init`` writes where only the user can know the answer;
#: ``mudata register`` refuses an entry still holding one (unless ``--draft-ok``).
PLACEHOLDERS = {
    "homepage": "https://example.org/replace-with-the-dataset-homepage",
    "licence": "LicenseRef-unchecked",
    "licence.title": "replace with the dataset's terms",
    "citation": "replace with how the dataset's authors ask to be cited",
}


def placeholder_fields(data: dict[str, Any]) -> list[str]:
    """The fields of a parsed entry document that still hold a placeholder of ``mudata init``.

    A field counts when it equals its placeholder or, for text, still starts
    with ``replace with`` (a partly edited citation).
    """
    licence = data.get("licence")
    values = {
        "homepage": data.get("homepage"),
        "citation": data.get("citation"),
        "licence": licence.get("name") if isinstance(licence, dict) else licence,
        "licence.title": licence.get("title") if isinstance(licence, dict) else None,
    }
    found = []
    for key, value in values.items():
        if not isinstance(value, str):
            continue
        text = value.strip()
        if (
            text == PLACEHOLDERS[key]
            or text.lower().startswith("replace with")
            or "replace-with" in text
        ):
            found.append(key)
    return found


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads((schemas_dir() / "registry.schema.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@lru_cache(maxsize=1)
def spdx_titles() -> dict[str, str]:
    """SPDX id -> SPDX name, for the ids the registry schema accepts."""
    schema = _validator().schema
    return {branch["const"]: branch["title"] for branch in schema["$defs"]["spdx_id"]["oneOf"]}


def _licence(value: str | dict[str, str]) -> tuple[str, str, str | None]:
    """(id, title, path) of a validated ``licence`` value."""
    if isinstance(value, str):
        return value, spdx_titles()[value], f"https://spdx.org/licenses/{value}.html"
    name = value["name"]
    default_path = f"https://spdx.org/licenses/{name}.html" if name in spdx_titles() else None
    return name, value["title"], value.get("path", default_path)


def _licence_message(value: object) -> str:
    known = spdx_titles()
    by_upper = {k.upper(): k for k in known}
    guess = str(value).strip().replace(" ", "-").upper()
    # Only the case or the spaces wrong: that id alone; else the nearest ones.
    close = (
        [guess]
        if guess in by_upper
        else difflib.get_close_matches(guess, list(by_upper), n=3, cutoff=0.6)
    )
    hint = f" Did you mean {', '.join(repr(by_upper[c]) for c in close)}?" if close else ""
    return (
        f"{excerpt(value, 80)} is not an SPDX licence id accepted here.{hint} Expected one of "
        f"{', '.join(sorted(known))}; or, for other terms, a table "
        f'{{ name = "LicenseRef-<short-name>", title = "<the terms>", path = "<address of the terms>" }}'
    )


# Validators that only say "no branch matched"; an error from a branch says more.
_BRANCHING = ("oneOf", "anyOf", "const", "enum", "type")


def _is_licence_id(error: jsonschema.ValidationError) -> bool:
    path = list(error.absolute_path)
    return path in (["licence"], ["licence", "name"]) and isinstance(error.instance, str)


def _describe(error: jsonschema.ValidationError) -> str:
    """The message for one schema error, with the path of the field that fails.

    For a value that matches no branch of a ``oneOf``/``anyOf``, the branch that
    got furthest (the deepest field, then a check other than "not this type")
    says what is wrong.
    """
    while True:
        if _is_licence_id(error) and error.validator in ("oneOf", "anyOf", "pattern"):
            return f"field '{_field_path(error)}': {_licence_message(error.instance)}"
        if error.validator not in ("oneOf", "anyOf") or not error.context:
            return f"field '{_field_path(error)}': {error.message}"
        error = max(
            error.context, key=lambda e: (len(e.absolute_path), e.validator not in _BRANCHING)
        )


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
        message = (
            f"invalid registry entry {source}:\n  field '{where}': {value} is not a finite number"
        )
        raise RegistryError(message)


def _check_counts(data: dict[str, Any], source: Path | str) -> None:
    """Refuse, before the schema walks them, more classes or files than an entry may hold."""
    for key, cap in (("classes", MAX_CLASSES), ("files", MAX_FILES)):
        items = data.get(key)
        if isinstance(items, list) and len(items) > cap:
            message = (
                f"invalid registry entry {source}:\n  field '{key}': {len(items):,} entries, "
                f"more than the {cap:,} an entry may hold"
            )
            raise RegistryError(message)


def _sensors(items: list[dict[str, Any]], source: Path | str) -> tuple[Sensor, ...]:
    """The ``[[sensors]]`` (checked by the schema), each channel in one sensor only."""
    sensors = tuple(Sensor(s["name"], tuple(s["channels"]), s.get("features", "")) for s in items)
    owner: dict[str, str] = {}
    for sensor in sensors:
        for channel in sensor.channels:
            if channel in owner:
                message = (
                    f"invalid registry entry {source}:\n  field 'sensors': channel {channel!r} "
                    f"is in sensor {owner[channel]!r} and in sensor {sensor.name!r}; "
                    f"a channel belongs to one sensor"
                )
                raise RegistryError(message)
            owner[channel] = sensor.name
    return sensors


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
    _check_counts(data, source)
    _check_integers(data, source)
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"  {_describe(e)}" for e in errors]
        message = f"invalid registry entry {source}:\n" + "\n".join(lines)
        raise RegistryError(message)
    recipe = Recipe(**data["recipe"])
    if recipe.name == "study-window" and recipe.window is None:
        message = f"invalid registry entry {source}:\n  field 'recipe.window': required by recipe 'study-window'"
        raise RegistryError(message)
    sensors = _sensors(data.get("sensors", []), source)
    if recipe.name != "precomputed" and not sensors:
        message = f"invalid registry entry {source}:\n  field 'sensors': recipe '{recipe.name}' needs at least one sensor"
        raise RegistryError(message)
    codes = [str(c["code"]) for c in data["classes"]]
    names = [c["name"] for c in data["classes"]]
    for what, values in (("code", codes), ("name", names)):
        # Counted once: list.count per value made 100,000 classes quadratic.
        duplicated = sorted(v for v, n in Counter(values).items() if n > 1)
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
    licence, licence_title, licence_path = _licence(data["licence"])

    where = f"invalid registry entry '{data['name']}' ({source})"
    check_reader_options(data["reader"], dict(data.get("reader_options", {})), where)
    return DatasetEntry(
        name=data["name"],
        title=data["title"],
        version=data["version"],
        homepage=data["homepage"],
        licence=licence,
        licence_title=licence_title,
        licence_path=licence_path,
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
        users=data.get("users"),
        source=Path(source) if not isinstance(source, Path) else source,
    )


def read_entry_toml(path: Path | str) -> dict[str, Any]:
    """The parsed TOML document of a registry file, not yet validated.

    Raises
    ------
    RegistryError
        The file is missing, unreadable, not a regular file, not UTF-8 or not TOML.
    """
    path = Path(path)
    try:
        raw = read_regular(path, "registry entry", RegistryError)
        return tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        message = f"registry file {path} does not exist"
        raise RegistryError(message) from None
    except UnicodeDecodeError as exc:
        message = f"invalid registry entry {path}: expected UTF-8 text (TOML), found byte {exc.object[exc.start]:#04x} at offset {exc.start}"
        raise RegistryError(message) from None
    except OSError as exc:
        message = (
            f"registry file {path} cannot be read ({type(exc).__name__}: {exc.strerror or exc})"
        )
        raise RegistryError(message) from None
    except tomllib.TOMLDecodeError as exc:
        message = f"invalid registry entry {path}: not valid TOML ({exc})"
        raise RegistryError(message) from None
    except RecursionError:
        # tomllib parses nested tables and arrays recursively: thousands of levels
        # exhaust Python's stack long before any entry could need them.
        message = (
            f"invalid registry entry {path}: tables or arrays nested too deep to parse "
            f"(more than Python's recursion limit of {sys.getrecursionlimit()}); a registry "
            f"entry nests a few levels at most"
        )
        raise RegistryError(message) from None


def load_entry_file(path: Path | str) -> DatasetEntry:
    """Read and validate one TOML registry file."""
    return parse_entry(read_entry_toml(path), source=Path(path))


def _absolute_file_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """A copy of the document with each relative ``files[].path`` made absolute from ``base``.

    Member paths (``files[].members[].path``) are paths inside a release and stay as they are.
    """
    files = []
    for spec in data.get("files", []):
        spec = dict(spec)
        path = spec.get("path")
        if isinstance(path, str) and not Path(path).expanduser().is_absolute():
            spec["path"] = (base / path).resolve().as_posix()
        files.append(spec)
    return {**data, "files": files}


def install_entry(
    toml_file: Path | str,
    *,
    data_home: Path | str | None = None,
    replace: bool = False,
    draft_ok: bool = False,
) -> tuple[DatasetEntry, Path]:
    """Validate ``toml_file`` and install it in the user's registry folder.

    The installed copy is written with a TOML library (``tomli_w``) from the
    parsed document, with relative ``files[].path`` values made absolute from
    ``toml_file``'s folder, so that the copy finds the same files. Comments and
    layout of the original are not kept (the original is left as it was).

    Parameters
    ----------
    toml_file : path-like
        The entry to install.
    data_home : path-like, optional
        Data directory whose ``registry`` folder receives the entry.
    replace : bool
        Overwrite an installed entry of the same name.
    draft_ok : bool
        Install a draft that still holds placeholders of ``mudata init``
        (homepage, citation, licence): a private entry, not one to share.

    Returns
    -------
    (DatasetEntry, Path)
        The installed entry and the file written.

    Raises
    ------
    RegistryError
        The file fails the registry schema (naming the field).
    MudataUsageError
        Its reader is unknown, the name is taken and ``replace`` is False, or
        a placeholder is left and ``draft_ok`` is False (each field named).
    StorageError
        The registry folder cannot be written.
    """
    # Here, not at the top: mudata.sources.paths imports pooch, slow to import for `mudata list`.
    from mudata.sources.paths import user_registry_dir

    toml_file = Path(toml_file)
    data = read_entry_toml(toml_file)
    entry = parse_entry(data, source=toml_file)
    if entry.reader not in available_readers():
        message = (
            f"{toml_file}: field 'reader': unknown reader '{entry.reader}'; "
            f"available: {', '.join(sorted(available_readers()))}"
        )
        raise MudataUsageError(message)
    unfilled = placeholder_fields(data)
    if unfilled and not draft_ok:
        message = (
            f"{toml_file}: still a draft of `mudata init`: field(s) "
            f"{', '.join(repr(f) for f in unfilled)} hold placeholders. Fill them in "
            f"(licence: an SPDX id such as 'CC-BY-4.0', or a LicenseRef table with the "
            f"terms), or pass --draft-ok to register the draft as it is"
        )
        raise MudataUsageError(message)
    target = user_registry_dir(data_home) / f"{entry.name}.toml"
    if target.exists() and not replace:
        message = f"a dataset named '{entry.name}' is already registered at {target}; use --replace"
        raise MudataUsageError(message)
    installed = _absolute_file_paths(data, toml_file.resolve().parent)
    # No path in the comment: a file name may hold characters a comment cannot.
    header = "# Installed by `mudata register`; relative file paths made absolute.\n"
    text = header + tomli_w.dumps(installed, multiline_strings=True)
    parse_entry(tomllib.loads(text), source=target)  # what is written must read back as valid
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, text)
    except OSError as exc:
        message = (
            f"cannot install '{entry.name}' in {target.parent}: expected a writable folder, "
            f"got {type(exc).__name__}: {exc}. Choose another data directory with "
            f"--data-home or $MUDATA_HOME."
        )
        raise StorageError(message) from None
    return entry, target


def registry_dirs(data_home: Path | str | None = None) -> list[Path]:
    """Folders searched for entries, highest priority first."""
    # Here, not at the top: mudata.sources.paths imports pooch, slow to import for `mudata list`.
    from mudata.sources.paths import user_registry_dir

    dirs = config.registry_path()
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
    message = (
        f"unknown dataset {excerpt(name)}.{hint} Known datasets: {', '.join(sorted(entries))}."
    )
    raise UnknownDatasetError(message)


__all__ = [
    "MAX_CLASSES",
    "MAX_FILES",
    "PLACEHOLDERS",
    "get_entry",
    "install_entry",
    "load_entry_file",
    "load_registry",
    "parse_entry",
    "placeholder_fields",
    "read_entry_toml",
    "registry_dirs",
    "spdx_titles",
]
