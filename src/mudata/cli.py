"""The ``mudata`` command: list, describe, fetch and register datasets."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

import click

from mudata import api
from mudata._files import read_regular
from mudata._resources import builtin_registry_dir
from mudata.errors import MudataError, RegistryError, StorageError, UsageError
from mudata.paths import user_registry_dir
from mudata.readers import available_readers
from mudata.registry import DatasetEntry, get_entry, load_entry_file, load_registry

_DATA_HOME = click.option(
    "--data-home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Data directory (default: $MUDATA_HOME, else the OS cache folder for 'mudata').",
)


def _fail(exc: MudataError) -> None:
    """Map the error family to click's exit codes: 2 for usage, 1 for runtime."""
    if isinstance(exc, UsageError):
        raise click.UsageError(str(exc)) from None
    raise click.ClickException(str(exc)) from None


class _Group(click.Group):
    """The last line of defence: no command ends in a raw traceback.

    A :class:`MudataError` a command did not map becomes its clean message
    (exit 1, or 2 for usage errors); anything else is a bug in mudata and
    becomes one line saying so, with the traceback under ``-v`` only.
    """

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except MudataError as exc:
            _fail(exc)
        except Exception as exc:  # noqa: BLE001 - the point of this handler
            if ctx.meta.get("mudata.verbose"):
                traceback.print_exc()
            message = (
                f"internal error in mudata ({type(exc).__name__}: {str(exc)[:200]}); "
                f"this is a bug, please report it"
                + ("" if ctx.meta.get("mudata.verbose") else "; run with -v for the traceback")
            )
            raise click.ClickException(message) from None
        return None  # pragma: no cover - _fail always raises


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mudata-mueval", prog_name="mudata")
@click.option("-v", "--verbose", count=True, help="Log what each stage does (-v info, -vv debug).")
@click.pass_context
def main(ctx: click.Context, verbose: int) -> None:
    """Download public multi-user activity datasets, check them against known
    SHA-256 hashes, and publish them as validated Parquet feature tables.

    \b
    Typical use:
      mudata list                      the datasets known here
      mudata info wisdm                files, licence, citation, recipe
      mudata fetch wisdm               download, verify, build; prints the table path
      mudata fetch gestures --manual-dir ~/Downloads
      mudata register my_dataset.toml  add a dataset of your own
    """
    ctx.meta["mudata.verbose"] = verbose
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


@main.command("list")
@_DATA_HOME
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_command(data_home: Path | None, as_json: bool) -> None:
    """List the registered datasets."""
    broken: dict[str, RegistryError] = {}
    try:
        entries = load_registry(data_home, broken=broken)
    except MudataError as exc:
        _fail(exc)
    for exc in broken.values():
        # Said here rather than logged, so that it shows whatever the log set-up.
        click.echo(f"warning: skipped a registry entry: {exc}", err=True)
    if as_json:
        click.echo(json.dumps([_summary(e) for e in entries.values()], indent=2))
        return
    width = max((len(n) for n in entries), default=4)
    for name in sorted(entries):
        entry = entries[name]
        click.echo(f"{name:<{width}}  {entry.title}  [{entry.licence}]")


def _summary(entry: DatasetEntry) -> dict:
    return {
        "name": entry.name,
        "title": entry.title,
        "licence": entry.licence,
        "classes": len(entry.classes),
        "recipe": entry.recipe.name,
        "source": str(entry.source),
    }


@main.command("info")
@click.argument("name")
@_DATA_HOME
@click.option("--json", "as_json", is_flag=True, help="Print the whole entry as JSON.")
def info_command(name: str, data_home: Path | None, as_json: bool) -> None:
    """Describe dataset NAME: files and hashes, classes, recipe, licence, citation."""
    try:
        entry = get_entry(name, data_home)
    except MudataError as exc:
        _fail(exc)
    if as_json:
        click.echo(json.dumps(entry.to_dict(), indent=2))
        return
    lines = [
        f"{entry.name}: {entry.title} (version {entry.version})",
        f"homepage:  {entry.homepage}",
        f"licence:   {entry.licence}",
        f"reader:    {entry.reader}; recipe: {entry.recipe.name}"
        + (f", window {entry.recipe.window} samples" if entry.recipe.window else ""),
        f"sampling:  {entry.sampling_rate_hz:g} Hz",
        f"classes:   {', '.join(f'{c.name} ({c.code})' for c in entry.classes)}",
        f"filter:    users with at least {entry.min_per_class} rows of every class",
    ]
    if entry.sensors:
        lines.append("sensors:   " + "; ".join(f"{s.name} ({', '.join(s.channels)})" for s in entry.sensors))
    for f in entry.files:
        lines.append(f"file:      {f.name}  {f.url or f.path}")
        lines.append(f"           sha256 {f.sha256 or '(not published: needs --allow-unverified)'}")
        for m in f.members:
            lines.append(f"           member {m.path}  sha256 {m.sha256 or '-'}")
    lines.append("citation:  " + entry.citation.replace("\n", "\n           "))
    if entry.description:
        lines.append("")
        lines.append(entry.description)
    click.echo("\n".join(lines))


@main.command("fetch")
@click.argument("name")
@_DATA_HOME
@click.option("--mirror", metavar="URL", help="Fetch the same files (same names, same hashes) from this base address.")
@click.option(
    "--manual-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Use files you already have: the release archive, or its extracted members, in this folder.",
)
@click.option(
    "--allow-unverified",
    is_flag=True,
    help="Accept files whose SHA-256 the registry does not record (the hash seen is kept in the provenance).",
)
@click.option("--force", is_flag=True, help="Rebuild the table even if an up-to-date one exists.")
@click.option(
    "--max-expansion",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="RATIO",
    help="How far an archive may expand, in bytes per archive byte (default: "
    "$MUDATA_MAX_EXPANSION, else 100; archives may always reach 64 MiB). Raise it "
    "only for archives you trust.",
)
@click.option("--progress/--no-progress", default=None, help="Download progress bars (default: on a terminal only).")
@click.option("--min-users", type=click.IntRange(min=2), default=2, show_default=True, help="Fewest users the table must keep after the user filter.")
def fetch_command(
    name: str,
    data_home: Path | None,
    mirror: str | None,
    manual_dir: Path | None,
    allow_unverified: bool,
    force: bool,
    max_expansion: float | None,
    progress: bool | None,
    min_users: int,
) -> None:
    """Download (or take from --manual-dir), verify and build dataset NAME.

    Prints the path of the Parquet table. A table already built from the same
    registry entry is returned at once.
    """
    try:
        path = api.fetch(
            name,
            data_home=data_home,
            mirror=mirror,
            manual_dir=manual_dir,
            allow_unverified=allow_unverified,
            force=force,
            progress=progress,
            max_expansion=max_expansion,
            min_users=min_users,
        )
    except MudataError as exc:
        _fail(exc)
    record = api.provenance(name, data_home=data_home)
    counts = record["counts"]
    click.echo(
        f"{record['dataset']}: {counts['rows']} rows, {counts['users']} users, "
        f"{len(record['classes'])} classes, {counts['features']} features",
        err=True,
    )
    click.echo(str(path))


@main.command("register")
@click.argument("toml_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_DATA_HOME
@click.option("--replace", is_flag=True, help="Overwrite an installed entry with the same name.")
def register_command(toml_file: Path, data_home: Path | None, replace: bool) -> None:
    """Validate TOML_FILE and install it in your registry folder.

    The entry then works with `mudata fetch` and `mueval evaluate` like a
    built-in one. Local files named by `path` keys are resolved relative to
    TOML_FILE's folder and recorded as absolute paths.
    """
    try:
        entry = load_entry_file(toml_file)
        if entry.reader not in available_readers():
            message = (
                f"{toml_file}: field 'reader': unknown reader '{entry.reader}'; "
                f"available: {', '.join(sorted(available_readers()))}"
            )
            raise UsageError(message)
        target_dir = user_registry_dir(data_home)
        target = target_dir / f"{entry.name}.toml"
        if target.exists() and not replace:
            message = f"a dataset named '{entry.name}' is already registered at {target}; use --replace"
            raise UsageError(message)
        text = _absolutise_paths(toml_file)
        _install(text, entry, toml_file, target)
    except MudataError as exc:
        _fail(exc)
    click.echo(f"registered '{entry.name}' at {target}")
    if (builtin_registry_dir() / f"{entry.name}.toml").is_file():
        # User entries are searched first: say so, since every later command changes.
        click.echo(f"note: this entry now takes the place of the built-in '{entry.name}'", err=True)


def _install(text: str, entry: DatasetEntry, toml_file: Path, target: Path) -> None:
    """Write ``text`` to ``target`` atomically, once it validates as the same entry."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{entry.name}.", suffix=".toml.part", dir=target.parent)
    except OSError as exc:
        message = (
            f"cannot install '{entry.name}' in {target.parent}: expected a writable folder, "
            f"got {type(exc).__name__}: {exc}. Choose another data directory with "
            f"--data-home or $MUDATA_HOME."
        )
        raise StorageError(message) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        installed = load_entry_file(tmp)  # the installed text must validate too
        # A path left relative would be resolved from the registry folder, not TOML_FILE's.
        relative = [
            f.path
            for f, mine in zip(installed.files, entry.files, strict=True)
            if mine.path is not None and not Path(f.path or "").expanduser().is_absolute()
        ]
        if relative:
            message = (
                f"{toml_file}: field 'files.path': could not make {relative} absolute; "
                f"expected each relative path on its own line as path = \"...\" in a "
                f"[[files]] table. Write it as an absolute path instead."
            )
            raise RegistryError(message)
        shutil.move(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _absolutise_paths(toml_file: Path) -> str:
    """The entry's text with relative ``path`` values of ``[[files]]`` tables made absolute.

    Member paths (``[[files.members]]``) are paths inside a release and stay as they are.
    """
    base = toml_file.resolve().parent
    table = ""
    lines = []
    for line in read_regular(toml_file, "registry entry", RegistryError).decode("utf-8").splitlines():
        header = re.match(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$", line)
        if header:
            table = header.group(1)
        # A basic ("...") or literal ('...') string without escapes.
        value = re.match(r"""^(\s*path\s*=\s*)(["'])([^"'\\]*)\2(.*)$""", line)
        if table == "files" and value and not Path(value.group(3)).expanduser().is_absolute():
            resolved = (base / value.group(3)).resolve().as_posix()
            line = f"{value.group(1)}{value.group(2)}{resolved}{value.group(2)}{value.group(4)}"
        lines.append(line)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


from mudata import cli_init  # noqa: F401 - registers `mudata init` on the group
