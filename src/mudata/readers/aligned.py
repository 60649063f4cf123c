"""A feature table whose labels and users sit in side files aligned with it row by row.

The shape of UCI-HAR and of many releases after it: ``train/X_train.txt``
holds only numbers (561 features a row, no header), ``train/y_train.txt`` the
class code of each row and ``train/subject_train.txt`` its user, one integer a
line; ``features.txt`` names the columns and ``activity_labels.txt`` the
classes. Owns the ``reader_options`` of reader ``feature-table`` that say so
(:data:`SIDE_OPTIONS`), where each side file of a table is
(:func:`side_path`), and :func:`read_aligned_features`, which
:func:`mudata.readers.tabular.read_feature_table` hands such an entry to. The
files themselves are parsed, and refused, by :mod:`mudata.readers.side_files`.

A user found in the tables of two splits is one user: the ids of a release
name its people, whichever table their rows are in. mudata splits rows by user
itself and does not keep a release's own split; the reader logs such users.
"""

from __future__ import annotations

import logging
import posixpath
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from mudata.errors import MissingFileError, ParseError, Reason, RegistryError, excerpt
from mudata.readers._text import list_option, str_option
from mudata.readers.base import FeatureTable
from mudata.readers.column_values import numeric_columns, text_users
from mudata.readers.decode import data_suffix
from mudata.readers.long_options import path_groups
from mudata.readers.members import check_columns, matching_members, parse_member
from mudata.readers.roles import path_pattern
from mudata.readers.side_files import feature_names, label_legend, side_column
from mudata.readers.sources import Sources
from mudata.records.classes import user_names
from mudata.records.entry import DatasetEntry

__all__ = [
    "SIDE_OPTIONS",
    "SPLIT",
    "SideOptions",
    "read_aligned_features",
    "side_options",
    "side_path",
    "split_of",
]

log = logging.getLogger(__name__)

#: The options of reader ``feature-table`` for side files.
SIDE_OPTIONS = frozenset({"feature_names_file", "label_file", "label_names_file", "user_file"})

#: The placeholder of a side file's name that stands for the table's split (:func:`split_of`).
SPLIT = "{split}"
_PLACEHOLDER = re.compile(r"\{[^}]*\}")


@dataclass(frozen=True)
class SideOptions:
    """The side files of an entry's feature tables (each None when not given).

    Attributes
    ----------
    label_file, user_file : str or None
        Each table's file of class codes and of users: a path relative to
        the table's folder, where ``{split}`` stands for the table's split.
    feature_names_file : str or None
        The member naming the tables' columns (a bare file name finds it in any folder).
    label_names_file : str or None
        The member naming the classes, ``code name`` a line.
    """

    label_file: str | None = None
    user_file: str | None = None
    feature_names_file: str | None = None
    label_names_file: str | None = None


def _where(entry: DatasetEntry, key: str) -> str:
    source = f" ({entry.source})" if entry.source else ""
    return f"invalid registry entry '{entry.name}'{source}: field 'reader_options.{key}'"


def side_options(entry: DatasetEntry) -> SideOptions | None:
    """The entry's side files, checked; None when it names no label or user file.

    Raises
    ------
    RegistryError
        An option that is not text, a side file's name with a placeholder other
        than ``{split}`` or an absolute path, or a names or legend file without
        a label or user file.
    """
    values = {key: str_option(entry, key, None) for key in sorted(SIDE_OPTIONS)}
    for key in ("label_file", "user_file"):
        value = values[key]
        if value is None:
            continue
        odd = [p for p in _PLACEHOLDER.findall(value) if p != SPLIT]
        if odd or value.startswith("/") or not value.strip():
            why = f"unknown placeholder {odd[0]}" if odd else "an empty or absolute path"
            message = (
                f"{_where(entry, key)}: {excerpt(value)} holds {why}; give the file's path "
                f"relative to its table's folder, with {SPLIT} for the table's split "
                f"(as in 'y_{SPLIT}.txt')"
            )
            raise RegistryError(message, reason=Reason("invalid", key))
    if values["label_file"] is None and values["user_file"] is None:
        given = [k for k, v in values.items() if v is not None]
        if given:
            message = (
                f"{_where(entry, given[0])}: names the columns or classes of tables whose "
                f"labels and users are in side files, but neither label_file nor user_file "
                f"is given"
            )
            raise RegistryError(message, reason=Reason("missing", "label_file"))
        return None
    return SideOptions(**values)


def split_of(table: str) -> str:
    """The split of a table, for ``{split}``: its file name's stem after the last ``_`` or ``-``.

    The stem is the name without its data suffix (``.txt``, ``.csv.gz``); a stem
    without ``_`` or ``-`` is its own split.

    Examples
    --------
    >>> split_of("UCI HAR Dataset/train/X_train.txt")
    'train'
    >>> split_of("data/features.csv.gz")
    'features'
    """
    name = PurePosixPath(table).name
    stem = name[: len(name) - len(data_suffix(name))] or name
    return re.split(r"[_-]", stem)[-1] or stem


def side_path(template: str, table: str, setting: str = "label_file") -> str:
    """The member path of a table's side file: ``template`` (``{split}`` filled in) in the
    table's folder.

    Raises
    ------
    ParseError
        The path leaves the release (``..`` above its top); ``setting`` names the option.
    """
    name = template.replace(SPLIT, split_of(table))
    folder = PurePosixPath(table).parent.as_posix()
    path = posixpath.normpath(posixpath.join(folder, name) if folder != "." else name)
    if path == ".." or path.startswith("../"):
        message = (
            f"{table}: its side file {excerpt(template)} is {excerpt(path)}, outside the release"
        )
        raise ParseError(message, reason=Reason("invalid", setting))
    return path


def _read(sources: Sources, path: str, why: str, setting: str) -> tuple[str, bytes]:
    """A member the options name, with its bytes; missing, an error saying which option named it."""
    try:
        name = sources.find(path)
    except MissingFileError as exc:
        message = f"{why} ({setting}): {exc}; the entry's files must hold and pin it"
        raise MissingFileError(message) from None
    return name, sources.read_decoded(name)


def _role_sources(entry: DatasetEntry, side: SideOptions) -> dict[str, str]:
    """Where each role comes from: ``"file"``, ``"column"`` or ``"path"``; exactly one each."""
    pattern = path_pattern(entry)
    groups = set(pattern.groupindex) if pattern else set()
    found = {}
    for role in ("user", "label"):
        given = [
            how
            for how, yes in (
                ("file", getattr(side, f"{role}_file") is not None),
                ("column", f"{role}_col" in entry.reader_options),
                ("path", role in groups),
            )
            if yes
        ]
        if len(given) != 1:
            how = "both " + " and ".join(given) if given else "neither"
            message = (
                f"dataset '{entry.name}': reader 'feature-table' takes the {role} from one of "
                f"reader_options.{role}_file, reader_options.{role}_col or a '{role}' group of "
                f"path_pattern; {how} given"
            )
            setting = f"{role}_file" if given else f"{role}_col"
            raise RegistryError(message, reason=Reason("taken" if given else "missing", setting))
        found[role] = given[0]
    return found


def _names(entry: DatasetEntry, side: SideOptions, sources: Sources) -> tuple[str, bytes] | None:
    """The names file and its bytes, when the entry gives one (checked to name headerless tables)."""
    if side.feature_names_file is None:
        return None
    if entry.reader_options.get("header", True) is not False or "columns" in entry.reader_options:
        message = (
            f"{_where(entry, 'feature_names_file')}: names the columns of tables without a "
            f"header line; give header = false and no reader_options.columns with it"
        )
        raise RegistryError(message, reason=Reason("invalid", "feature_names_file"))
    return _read(sources, side.feature_names_file, "the names of the columns", "feature_names_file")


def _check_legend(codes: np.ndarray, legend: dict[int, str], path: str, names: str) -> None:
    """Every code of a label file must be a class of the legend."""
    absent = np.flatnonzero(~np.isin(codes, np.fromiter(legend, dtype=np.int64)))
    if absent.size:
        missing = sorted({int(c) for c in codes[absent]})
        message = (
            f"{path}, line {int(absent[0]) + 1}: code {int(codes[absent[0]])} is not a class of "
            f"{names} (codes {excerpt(sorted(legend))}); codes absent from it: {excerpt(missing)}"
        )
        raise ParseError(message, reason=Reason("absent", "label_names_file"))


def read_aligned_features(entry: DatasetEntry, sources: Sources) -> FeatureTable:
    """Read feature tables whose labels and users are in side files, aligned row by row.

    Parameters
    ----------
    entry : DatasetEntry
        ``reader_options``: those of ``feature-table`` (``members`` selects the
        tables, one per split; ``format``, ``header`` ...), with

        * ``label_file``, ``user_file``: each table's side file of class codes
          and of users, one integer a line, as many lines as the table has
          rows; a path relative to the table's folder, where ``{split}``
          stands for the table's split (:func:`split_of`: ``X_train.txt`` ->
          ``train``). A role may come from a column or ``path_pattern`` instead;
        * ``feature_names_file`` (optional): the tables' column names, for
          tables without a header (:func:`mudata.readers.side_files.feature_names`;
          a name repeated gets ``_2``, ``_3`` ...); without it the columns are
          ``c1``, ``c2`` ...;
        * ``label_names_file`` (optional): the classes, ``code name`` a line:
          every code of the label files must be one of them;
        * ``feature_cols`` (optional): the features kept, by name (default every column).
    sources : Sources
        The verified files.

    Returns
    -------
    FeatureTable
        ``userid`` (text), ``label`` (the code), then the features as float64,
        the tables' rows in the order of their names.

    Raises
    ------
    RegistryError
        A role given two ways or none, or a names file with tables that have a header.
    ParseError
        A side file whose lines are not the table's rows (both files and
        counts named) or not one whole number each, a names file of another
        count than the table's columns, a code absent from the legend, tables
        of different columns.
    MissingFileError
        A side, names or legend file the release does not hold.
    """
    side = side_options(entry)
    assert side is not None  # read_feature_table hands over only such entries
    roles = _role_sources(entry, side)
    pattern = path_pattern(entry)
    columns = {
        r: str_option(entry, f"{r}_col", None) for r, how in roles.items() if how == "column"
    }
    named = _names(entry, side, sources)
    legend, legend_name = None, ""
    if side.label_names_file is not None:
        legend_name, data = _read(sources, side.label_names_file, "the classes", "label_names_file")
        legend = label_legend(data, legend_name)
    feature_cols = (
        list_option(entry, "feature_cols", []) if "feature_cols" in entry.reader_options else None
    )
    fmt, members = matching_members(entry, sources)
    names: list[str] | None = None
    frames: list[tuple[str, pd.DataFrame]] = []
    tables_of: dict[str, set[str]] = {}
    text = [c for c in (columns.get("user"),) if c]
    for member in members:
        data = sources.read_decoded(member)
        table = parse_member(
            data, member, fmt, entry, text, sources.max_expansion, every_column=True
        )
        if named is not None:
            names = names or feature_names(named[1], named[0], table.shape[1], member)
            if len(names) != table.shape[1]:
                message = (
                    f"{member}: holds {table.shape[1]:,} columns; {named[0]} names {len(names):,}"
                )
                raise ParseError(message, reason=Reason("differs", "feature_names_file"))
            table.columns = pd.Index(names)
        check_columns(
            table, member, [str(c) for c in (*columns.values(), *(feature_cols or [])) if c]
        )
        values: dict[str, np.ndarray] = {}
        for role, how in roles.items():
            if how == "file":
                template = str(getattr(side, f"{role}_file"))
                path, side_data = _read(
                    sources,
                    side_path(template, member, f"{role}_file"),
                    f"{member}: its {role}s",
                    f"{role}_file",
                )
                values[role] = side_column(side_data, path, len(table), member, f"{role}_file")
                if role == "label" and legend is not None:
                    _check_legend(values[role], legend, path, legend_name)
            elif how == "column":
                values[role] = table[columns[role]].to_numpy()
            else:
                assert pattern is not None
                values[role] = np.full(len(table), path_groups(pattern, member)[role], dtype=object)
        users = (
            text_users(table[columns["user"]], member, str(columns["user"]))
            if roles["user"] == "column"
            else user_names(values["user"])
        )
        for user in pd.unique(users):
            tables_of.setdefault(str(user), set()).add(member)
        chosen = feature_cols or [c for c in table.columns if c not in columns.values()]
        frame = pd.DataFrame({"userid": users, "label": values["label"]})
        features = numeric_columns(table, chosen, member, setting="feature_cols")
        frames.append((member, pd.concat([frame, features.reset_index(drop=True)], axis=1)))
    first = list(frames[0][1].columns)
    for member, frame in frames[1:]:
        if list(frame.columns) != first:
            message = f"{member}: feature columns {excerpt(list(frame.columns)[2:])} differ from {frames[0][0]}'s {excerpt(first[2:])}"
            raise ParseError(message, reason=Reason("differs", "members"))
    shared = sorted(u for u, tables in tables_of.items() if len(tables) > 1)
    if shared:
        log.warning(
            "%s: user(s) %s have rows in more than one table; each id is one user, whichever "
            "table holds the rows",
            entry.name,
            excerpt(shared),
        )
    table = pd.concat([f for _, f in frames], ignore_index=True)
    table.attrs["users_in_several_tables"] = shared
    return FeatureTable(table)
