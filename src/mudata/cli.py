"""The ``mudata`` command: list, describe, fetch and register datasets.

Each command parses its options and calls one library function; the exit
codes of mudata's errors are chosen once, in :class:`MudataGroup`. The options
shared with other front ends live in :mod:`mudata.cli_options`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from mudata._identity import check_ours
from mudata._resources import builtin_registry_dir
from mudata.cli_init import init_command
from mudata.cli_options import (
    ErrorMappingGroup,
    FiniteFloatRange,
    build_options,
    data_home_option,
    fetch_options,
    manual_dir_option,
    printable,
    render_table,
    table_option,
    verbose_option,
)
from mudata.display import plain
from mudata.errors import MudataError, MudataUsageError, RegistryError
from mudata.records.entry import DatasetEntry, RemoteFile
from mudata.registry.lookup import get_entry, install_entry, load_registry

check_ours()  # `mudata` may resolve to scverse's package (same import name)


class MudataGroup(ErrorMappingGroup):
    """mudata's errors: :class:`MudataUsageError` exits 2, any other :class:`MudataError` 1."""

    usage_errors = (MudataUsageError,)
    runtime_errors = (MudataError,)
    program = "mudata"


@click.group(cls=MudataGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mudata-mueval", prog_name="mudata")
@verbose_option
@data_home_option(expose_value=False)
def main() -> None:
    """Download public multi-user activity datasets, check them against known
    SHA-256 hashes, and publish them as validated Parquet feature tables.

    \b
    Typical use:
      mudata list                      the datasets known here
      mudata info wisdm                files, licence, citation, recipe
      mudata fetch wisdm               download, verify, build; prints the table path
      mudata fetch gestures --manual-dir ~/Downloads
      mudata verify wisdm              rebuild from the pinned raw files and compare
      mudata init ~/my-files --name mine   draft an entry from files you have
      mudata register mine.toml        add a dataset of your own

    -v and --data-home may come before or after the command, as in mueval;
    see docs/cli.md for the conventions both tools share.
    """


main.add_command(init_command)


@main.command("list")
@data_home_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON (more fields per dataset) instead of a table.",
)
@table_option
def list_command(data_home: Path | None, as_json: bool, table_format: str) -> None:
    """List the registered datasets: built here or not, download size, users."""
    if as_json and table_format != "text":
        raise click.UsageError("give --json or --table, not both")
    # Here, not at the top: is a table built, and its provenance, need pyarrow.
    from mudata.registry.catalog import dataset_info, size_text, users_text

    broken: dict[str, RegistryError] = {}
    entries = load_registry(data_home, broken=broken)
    for exc in broken.values():
        # Said here rather than logged, so that it shows whatever the log set-up.
        click.echo(printable(f"warning: skipped a registry entry: {exc}"), err=True)
    infos = [dataset_info(name, data_home=data_home) for name in sorted(entries)]
    if as_json:
        click.echo(json.dumps([_summary(i) for i in infos], indent=2))
        return
    rows = [
        (
            i.name,
            "yes" if i.built else "no",
            size_text(i.download_bytes),
            users_text(i),
            i.title,
            i.licence,
        )
        for i in infos
    ]
    header = ("name", "built", "download", "users", "title", "licence")
    if table_format != "text":
        click.echo(render_table(header, rows, table_format))
        return
    widths = [max(len(str(r[k])) for r in [header, *rows]) for k in range(4)]
    for row in [header, *rows]:
        cells = "  ".join(f"{row[k]:<{widths[k]}}" for k in range(4))
        click.echo(plain(f"{cells}  {row[4]}" + (f"  [{row[5]}]" if row is not header else "")))


def _summary(info: Any) -> dict:
    entry = info.entry
    return {
        "name": entry.name,
        "title": entry.title,
        "licence": entry.licence,
        "licence_title": entry.licence_title,
        "classes": len(entry.classes),
        "recipe": entry.recipe.name,
        "source": str(entry.source),
        **_status(info),
    }


def _status(info: Any) -> dict:
    """What the data home has of a dataset, for ``--json``."""
    return {
        "built": info.built,
        "path": str(info.path),
        "download_bytes": info.download_bytes,
        "users": info.users,
        "users_from": info.users_from,
        "users_dropped": info.users_dropped,
        "rows": info.rows,
    }


@main.command("info")
@click.argument("name")
@data_home_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the whole entry as JSON, with what the data home has of it under 'status'.",
)
def info_command(name: str, data_home: Path | None, as_json: bool) -> None:
    """Describe dataset NAME: built or not, download size, users, files and hashes,
    classes, recipe, licence, citation."""
    # Here, not at the top: is a table built, and its provenance, need pyarrow.
    from mudata.registry.catalog import dataset_info, size_text

    info = dataset_info(name, data_home=data_home)
    entry = info.entry
    if as_json:
        click.echo(json.dumps({**entry.to_dict(), "status": _status(info)}, indent=2))
        return
    # Every field comes from a registry file: each is escaped (display.plain) where
    # it is put in, the multi-line ones line by line, so that none forges a line.
    p = plain
    lines = [
        f"{entry.name}: {p(entry.title)} (version {p(entry.version)})",
        f"built:     {_built_text(info)}",
        f"download:  {size_text(info.download_bytes)}"
        + (f" ({info.download_bytes:,} bytes)" if info.download_bytes else ""),
        f"users:     {_users_detail(info)}",
        f"homepage:  {p(entry.homepage)}",
        f"licence:   {p(entry.licence)} ({p(entry.licence_title)})"
        + (f", {p(entry.licence_path)}" if entry.licence_path else ""),
        f"reader:    {p(entry.reader)}; recipe: {entry.recipe.name}"
        + (f", window {entry.recipe.window} samples" if entry.recipe.window else ""),
        f"sampling:  {entry.sampling_rate_hz:g} Hz",
        f"classes:   {', '.join(f'{p(c.name)} ({p(c.code)})' for c in entry.classes)}",
        f"filter:    users with at least {entry.min_per_class} rows of every class",
    ]
    if entry.sensors:
        lines.append(
            "sensors:   "
            + "; ".join(
                f"{p(s.name)} ({', '.join(map(p, s.channels))}"
                + ("" if s.tri_axial else f"; {len(s.channels)} channel(s), per-channel features")
                + ")"
                for s in entry.sensors
            )
        )
    for f in entry.files:
        lines.append(f"file:      {p(f.name)}  {p(f.url or f.path)}")
        lines.append(f"           {_pin_note(f)}")
        for m in f.members:
            lines.append(f"           member {p(m.path)}  sha256 {p(m.sha256 or '-')}")
    lines.append("citation:  " + "\n           ".join(map(p, entry.citation.split("\n"))))
    if entry.description:
        lines.append("")
        lines.append("\n".join(map(p, entry.description.split("\n"))))
    click.echo("\n".join(lines))


def _built_text(info: Any) -> str:
    if info.built:
        return f"yes, {info.path}"
    return f"no (`mudata fetch {info.name}` builds it at {info.path})"


def _users_detail(info: Any) -> str:
    """Users of ``mudata info``: the built table's (with those dropped), the registry's, or unknown."""
    if info.users_from == "table":
        dropped = "" if info.users_dropped is None else f", {info.users_dropped} dropped"
        return f"{info.users} kept by the filter{dropped} (the built table)"
    if info.users_from == "registry":
        return f"{info.users} kept by the filter (the registry's count; not built here)"
    return "unknown until the table is built"


def _pin_note(remote: RemoteFile) -> str:
    """What the entry pins of one file, in the words of what fetching it needs."""
    first_use = " (pinned on first use by `mudata init`)" if remote.hashes == "first-use" else ""
    if remote.sha256:
        return f"sha256 {remote.sha256}{first_use}"
    if remote.pinned:
        return (
            "sha256 of the file: none recorded; every member below is pinned"
            + (first_use or "")
            + ", so it is verified without --allow-unverified"
        )
    return "sha256 (not recorded for the file nor for every member: needs --allow-unverified)"


@main.command("fetch")
@click.argument("name")
@fetch_options
@build_options
@click.option(
    "--windows",
    is_flag=True,
    help=(
        "Also build the windows of samples, row for row beside the feature table, "
        "and print their path (recipe study-window only)."
    ),
)
@click.option(
    "--verify",
    is_flag=True,
    help=(
        "Hash the rows of a table built before even when its file is unchanged since "
        "it was written (by default its size and times are compared, and the rows "
        "hashed only when they changed)."
    ),
)
def fetch_command(name: str, data_home: Path | None, **options: Any) -> None:
    """Download (or take from --manual-dir), verify and build dataset NAME.

    Prints the path of the Parquet table (with --windows, of the windows file:
    one fixed-size list column of float32 samples per channel). A table
    already built from the same registry entry is returned at once, its rows
    hashed again only when its file changed since it was written or with
    --verify; a table that fails is rebuilt, and a datapackage.json that
    disagrees with it is repaired.
    """
    # Here, not at the top: pandas, pyarrow and Pandera: only for this command.
    from mudata import api

    # The options are mudata.fetch's keyword arguments, of the same names.
    path = api.fetch(name, data_home=data_home, **options)
    record = api.provenance(name, data_home=data_home)
    counts = record["counts"]
    click.echo(
        f"{record['dataset']}: {counts['rows']} rows, {counts['users']} users, "
        f"{len(record['classes'])} classes, {counts['features']} features",
        err=True,
    )
    if options["windows"]:
        layout = api.window_layout(path)
        click.echo(
            f"windows: {counts['rows']} of {layout['length']} samples x "
            f"{len(layout['channels'])} channels ({', '.join(layout['channels'])})",
            err=True,
        )
    click.echo(printable(users_line(record, get_entry(name, data_home))), err=True)
    click.echo(str(path))


def users_line(record: dict[str, Any], entry: DatasetEntry) -> str:
    """One line of the users the filter kept and dropped, from a table's provenance.

    A build under ``-v`` logs each dropped user with its counts; this line is
    said without it, and again when the table was built before.
    """
    counts = record["counts"]
    dropped = counts.get("users_dropped")
    kept = f"{record['dataset']}: {counts['users']} users kept"
    if dropped is None:  # a record written before the filter's report was kept
        return kept
    if not dropped:
        return f"{kept}, none dropped (each has {entry.min_per_class} rows of every class or more)"
    return f"{kept}, {len(dropped)} dropped (fewer than {entry.min_per_class} rows of some class)"


@main.command("verify")
@click.argument("name")
@data_home_option
@manual_dir_option
@click.option(
    "--max-expansion",
    type=FiniteFloatRange(min=0, min_open=True),
    default=None,
    metavar="RATIO",
    help="How far an archive may expand, in bytes per archive byte (default: "
    "$MUDATA_MAX_EXPANSION, else 100).",
)
@click.pass_context
def verify_command(
    ctx: click.Context,
    name: str,
    data_home: Path | None,
    manual_dir: Path | None,
    max_expansion: float | None,
) -> None:
    """Check the cached table of NAME against a rebuild from its pinned raw files.

    The raw files (downloaded into the data home, or in the --manual-dir the
    table was built from) are hashed again against the registry entry, the
    table is built again in memory and compared with the cached one, row by
    row, and so are the classes, licence, citation and counts its provenance
    serves. Nothing is downloaded and the table is not rewritten; a table
    that verifies has a datapackage.json that disagrees with it repaired.

    Exit codes: 0 verified; 1 the cached table differs (the first differing
    row or provenance field is named); 2 unverifiable (no table, raw files
    missing or unpinned, a table hash of the old kind, or no build record
    from this data home) or a usage error.
    """
    # Here, not at the top: pandas, pyarrow and Pandera: only for this command.
    from mudata import api

    result = api.verify(
        name, data_home=data_home, manual_dir=manual_dir, max_expansion=max_expansion
    )
    if result.status == "verified":
        click.echo(printable(result.message))
    else:
        click.echo(printable(f"error: {result.message}"), err=True)
    ctx.exit(result.exit_code)


@main.command("register")
@click.argument("toml_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@data_home_option
@click.option("--replace", is_flag=True, help="Overwrite an installed entry with the same name.")
@click.option(
    "--draft-ok",
    is_flag=True,
    help="Register a draft that still holds the placeholders of `mudata init` (homepage, citation, licence).",
)
def register_command(
    toml_file: Path, data_home: Path | None, replace: bool, draft_ok: bool
) -> None:
    """Validate TOML_FILE and install it in your registry folder.

    The entry then works with `mudata fetch` and `mueval evaluate` like a
    built-in one. Local files named by `path` keys are resolved relative to
    TOML_FILE's folder and recorded as absolute paths. A draft still holding
    the placeholders of `mudata init` is refused unless --draft-ok.
    """
    entry, target = install_entry(
        toml_file, data_home=data_home, replace=replace, draft_ok=draft_ok
    )
    click.echo(f"registered '{entry.name}' at {target}")
    if (builtin_registry_dir() / f"{entry.name}.toml").is_file():
        # User entries are searched first: say so, since every later command changes.
        click.echo(f"note: this entry now takes the place of the built-in '{entry.name}'", err=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


__all__ = [
    "MudataGroup",
    "fetch_command",
    "info_command",
    "list_command",
    "main",
    "register_command",
    "users_line",
    "verify_command",
]
