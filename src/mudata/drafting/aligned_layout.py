"""``mudata init``: feature tables whose labels and users sit in side files, as UCI-HAR's.

Owns the finding of that shape among a release's files, before the other
rules of :mod:`mudata.drafting.selection` apply: a headerless table of numbers
(``train/X_train.txt``) beside files of one integer a line with as many lines
as it has rows (``y_train.txt``, ``subject_train.txt``). Which side file is the
label and which the user is read from their names (``y_``, ``label``,
``activity`` against ``subject``, ``user``), else from a legend whose codes
are the label's (``activity_labels.txt``), else from the users, who are never
in two tables; init refuses when none of these tells, naming
``--label-file``/``--user-file``. A file of as many names as the tables have
columns names them (``features.txt``). Tables of the same rows but other
columns (``Inertial Signals/``: raw windows of 128 samples) are another kind
of data and are left out, each with its reason.

:func:`find_aligned` returns an :class:`AlignedDraft`, which gives the
selection (:meth:`AlignedDraft.selection`), the reader options and the notes
(:func:`aligned_layout`), and the classes' names (:func:`legend_names`).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from mudata.drafting.columns import Roles
from mudata.drafting.records import Choices, Layout
from mudata.drafting.selection import DOC_NAMES, Selection, data_glob, plain_suffix
from mudata.errors import MudataUsageError as UsageError
from mudata.readers.aligned import SPLIT, split_of
from mudata.readers.side_files import line_count

__all__ = ["AlignedDraft", "aligned_layout", "find_aligned", "legend_names"]

#: Names of a file of class codes, and of a file of users (the stem, case aside).
LABEL_NAME = re.compile(r"^(y|labels?|activit(y|ies)|class(es)?|targets?)([_\-. ]|$)", re.I)
USER_NAME = re.compile(r"^(subjects?|users?|participants?|persons?|people)([_\-. ]|$)", re.I)
#: Lines looked at in a file's first bytes to tell its shape.
_HEAD_LINES = 20
_INT = re.compile(r"[+-]?\d{1,18}")
#: Lines of a legend, at most, for init to take a file for one.
_LEGEND_LINES = 1_000


def _head_lines(head: bytes) -> list[list[str]]:
    text = head.decode("utf-8", "replace")
    lines = text.splitlines()
    if len(head) >= 1 << 16 and lines:
        lines = lines[:-1]  # cut inside the last line
    return [line.split() for line in lines[:_HEAD_LINES] if line.strip()]


def _number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _shape(head: bytes) -> tuple[str, int]:
    """``("integers", 1)``, ``("numbers", k)`` (k columns), ``("pairs", 0)`` (``N name``
    lines) or ``("other", 0)``, from a file's first lines."""
    lines = _head_lines(head)
    if not lines:
        return "other", 0
    if all(len(p) == 1 and _INT.fullmatch(p[0]) for p in lines):
        return "integers", 1
    widths = {len(p) for p in lines}
    delimited = b"," in head[:4096] or b";" in head[:4096]
    numbers = all(_number(t) for p in lines for t in p)
    if len(widths) == 1 and min(widths) >= 2 and numbers and not delimited:
        return "numbers", widths.pop()
    if all(len(p) >= 2 and _INT.fullmatch(p[0]) for p in lines):
        return "pairs", 0
    return "other", 0


class _Cached:
    """A file reader that keeps the line counts it took, and the small files it read."""

    #: Files at most this large are kept once read (side, names and legend files).
    KEEP = 1 << 22

    def __init__(self, read: Callable[[str], bytes]) -> None:
        self.read = read
        self.kept: dict[str, bytes] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, name: str) -> bytes:
        if name in self.kept:
            return self.kept[name]
        data = self.read(name)
        self.counts[name] = line_count(data)
        if len(data) <= self.KEEP:
            self.kept[name] = data
        return data

    def lines(self, name: str) -> int:
        """The lines of a file (:func:`mudata.readers.side_files.line_count`)."""
        if name not in self.counts:
            self(name)
        return self.counts[name]


def _template(side: str, table: str) -> str:
    """A side file's name with the table's split as ``{split}`` (``y_train.txt`` -> ``y_{split}.txt``)."""
    name = PurePosixPath(side).name
    split = split_of(table)
    if split and split != PurePosixPath(table).stem and split in name:
        head, _, tail = name.rpartition(split)
        return head + SPLIT + tail
    return name


@dataclass
class AlignedDraft:
    """What :func:`find_aligned` found: the tables, their side files and the files beside them."""

    tables: list[str]
    columns: int
    rows: dict[str, int]
    label_file: str
    user_file: str
    why: list[str]
    feature_names_file: str | None = None
    label_names_file: str | None = None
    legend: dict[int, str] = field(default_factory=dict)
    read: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)
    #: Files of the same rows as a table but other columns: raw windows, not read.
    windows: list[str] = field(default_factory=list)
    window_columns: dict[str, int] = field(default_factory=dict)
    pinned: list[str] = field(default_factory=list)
    glob: str = "*"
    members: str = "*"

    def selection(self, names: list[str], where: str) -> Selection:
        """The selection of the release: the tables as data, every file read pinned.

        The glob of the files is the simplest that matches the files read and no
        other; when none does (the windows lie in the tables' folders), the
        files' folder is pinned whole and the windows are pinned, not read.
        """
        others = sorted(n for n in names if n not in self.read)
        suffix = max({plain_suffix(t) for t in self.tables}, key=len)
        try:
            self.glob = data_glob(self.read, others, suffix, where)
            self.pinned = list(self.read)
        except UsageError:
            common = os.path.commonpath([PurePosixPath(n).parent.as_posix() for n in self.read])
            self.glob = (f"{common}/" if common not in ("", ".") else "") + "*"
            self.glob = self.glob.replace("[", "[[]")
            self.pinned = [n for n in names if fnmatch.fnmatchcase(n, self.glob)]
        # The tables among the files pinned: the reader's members.
        pinned_others = [n for n in self.pinned if n not in self.tables]
        self.members = _members_glob(self.tables, pinned_others, suffix, where)
        left_out = {n: why for n, why in self.left_out.items() if n not in self.read}
        return Selection(
            list(self.tables),
            left_out,
            suffix,
            self.glob,
            side_files=self.pinned,
            notes=self.report(),
        )

    def _widths(self) -> str:
        return "/".join(str(w) for w in sorted(set(self.window_columns.values())))

    def report(self) -> list[str]:
        """Lines for the draft's report and its comments: what was chosen and why."""
        lines = [
            f"feature tables with side files: {len(self.tables)} table(s) of {self.columns} "
            f"columns ({', '.join(f'{t}: {self.rows[t]} rows' for t in self.tables)})",
            *(f"  {line}" for line in self.why),
        ]
        if self.windows:
            folders = sorted({PurePosixPath(w).parent.as_posix() for w in self.windows})
            lines.append(
                f"  left out: {len(self.windows)} file(s) in {', '.join(folders)} hold rows "
                f"aligned with the tables but other columns ({self._widths()} values a row: "
                f"raw windows, another kind of data than features; pinned with the release, "
                f"not read; --kind signals --include GLOB drafts them apart)"
            )
        return lines


def _members_glob(tables: list[str], others: list[str], suffix: str, where: str) -> str:
    """The reader's ``members``: a glob of the tables (the split as ``*``), or the simplest."""
    parents = {PurePosixPath(t).parent.as_posix() for t in tables}
    shapes = {_template(t, t).replace(SPLIT, "*") for t in tables}
    candidates = []
    if len(shapes) == 1:
        common = os.path.commonpath(list(parents)) if "." not in parents else ""
        name = shapes.pop()
        if len(parents) == 1:
            candidates.append((f"{common}/" if common else "") + name)
        else:
            candidates.append((f"{common}/" if common else "") + "*/" + name)
    for glob in candidates:
        glob = glob.replace("[", "[[]")
        if all(fnmatch.fnmatchcase(t, glob) for t in tables) and not any(
            fnmatch.fnmatchcase(o, glob) for o in others
        ):
            return glob
    return data_glob(tables, others, suffix, where)


def _role_of(template: str) -> str | None:
    stem = PurePosixPath(template).name
    if LABEL_NAME.match(stem):
        return "label"
    if USER_NAME.match(stem):
        return "user"
    return None


def _values(read: Callable[[str], bytes], name: str) -> set[int]:
    return {int(t) for t in read(name).split()}


def _legends(
    read: Callable[[str], bytes], shapes: dict[str, tuple[str, int]], names_file: str | None
) -> dict[str, dict[int, str]]:
    """Every file that reads as a legend of class codes: ``code NAME`` lines, names not
    numbers; the fewest codes first (a legend names the classes, not the columns)."""
    found = {}
    for name, (shape, _) in shapes.items():
        if shape != "pairs" or name == names_file:
            continue
        data = read(name)
        if line_count(data) > _LEGEND_LINES:
            continue
        legend: dict[int, str] = {}
        for line in data.decode("utf-8", "replace").splitlines():
            part = line.split(None, 1)
            if not part:
                continue
            if len(part) != 2 or not _INT.fullmatch(part[0]) or int(part[0]) in legend:
                legend = {}
                break
            legend[int(part[0])] = part[1].strip()
        if legend and not all(_number(v) for v in legend.values()):
            found[name] = legend
    return dict(sorted(found.items(), key=lambda item: (len(item[1]), item[0])))


def _choose_roles(
    templates: dict[str, list[str]],
    tables: list[str],
    read: Callable[[str], bytes],
    legends: dict[str, dict[int, str]],
    choices: Choices,
) -> tuple[str, str, list[str], str | None]:
    """The label's and the user's template, why, and the legend of the label (or None)."""
    shown = ", ".join(sorted(templates))
    given = {"label": choices.label_file, "user": choices.user_file}
    for role, template in given.items():
        if template is not None and template not in templates:
            message = (
                f"mudata init: --{role}-file {template!r} is not a side file of the tables "
                f"{', '.join(tables)}; their side files (one integer a line, as many lines as "
                f"rows): {shown}"
            )
            raise UsageError(message)
    values = {t: [_values(read, side) for side in sides] for t, sides in templates.items()}
    legend_of = {
        t: next((n for n, lg in legends.items() if set().union(*v) <= set(lg)), None)
        for t, v in values.items()
    }
    chosen: dict[str, str] = {}
    why: list[str] = []
    for role, template in given.items():
        if template is not None:
            chosen[role] = template
            why.append(f"{role}: {template} (--{role}-file)")
    for role in ("label", "user"):
        if role in chosen:
            continue
        rest = [t for t in templates if t not in chosen.values()]
        named = [t for t in rest if _role_of(t) == role]
        if len(named) == 1 and _role_of(named[0]) == role:
            chosen[role] = named[0]
            why.append(f"{role}: {named[0]}, by its name")
            continue
        if role == "label":
            coded = [t for t in rest if legend_of[t] is not None and _role_of(t) != "user"]
            if len(coded) == 1:
                chosen[role] = coded[0]
                why.append(f"label: {coded[0]}, its codes are those of {legend_of[coded[0]]}")
                continue
        if role == "user" and len(tables) > 1:
            apart = [t for t in rest if _disjoint(values[t])]
            if len(apart) == 1:
                chosen[role] = apart[0]
                why.append(f"user: {apart[0]}, no value of it is in two tables")
                continue
        if len(rest) == 1 and len(chosen) == 1:
            chosen[role] = rest[0]
            why.append(f"{role}: {rest[0]}, the other side file")
            continue
        message = (
            f"mudata init: the tables {', '.join(tables)} have side files of one integer a "
            f"line, as many lines as rows ({shown}), but which holds the {role} is not told "
            f"by their names, a legend of the classes, or users kept apart by table; give "
            f"--label-file NAME and --user-file NAME (as in --label-file 'y_{SPLIT}.txt' "
            f"--user-file 'subject_{SPLIT}.txt', relative to each table's folder)"
        )
        raise UsageError(message)
    if chosen["label"] == chosen["user"]:
        message = f"mudata init: {chosen['label']!r} is given as both the label and the user file"
        raise UsageError(message)
    return chosen["label"], chosen["user"], why, legend_of[chosen["label"]]


def _disjoint(sets: list[set[int]]) -> bool:
    """Whether no value is in two of ``sets``."""
    return sum(len(s) for s in sets) == len(set().union(*sets))


def _names_file(
    read: Callable[[str], bytes], shapes: dict[str, tuple[str, int]], columns: int, used: set[str]
) -> str | None:
    """The one file of ``N name`` lines numbering 1 .. ``columns`` (one named ``feature*``
    of several)."""
    found = []
    for name, (shape, _) in shapes.items():
        if shape != "pairs" or name in used:
            continue
        lines = [ln.split(None, 1) for ln in read(name).decode("utf-8", "replace").splitlines()]
        lines = [p for p in lines if p]
        if len(lines) == columns and all(
            len(p) == 2 and p[0] == str(i) for i, p in enumerate(lines, 1)
        ):
            found.append(name)
    if len(found) > 1:
        found = [n for n in found if PurePosixPath(n).name.lower().startswith("feature")]
    return found[0] if len(found) == 1 else None


def find_aligned(
    names: list[str],
    read_head: Callable[[str], bytes],
    read: Callable[[str], bytes],
    choices: Choices,
) -> AlignedDraft | None:
    """Feature tables with side files among ``names``, or None when the release is of
    another shape (or ``--include`` chose its files).

    ``read_head`` gives a file's first bytes, ``read`` the whole file.

    Raises
    ------
    UsageError
        Which side file is the label and which the user cannot be told, or
        ``--label-file``/``--user-file`` name no side file.
    """
    if choices.include:
        return None
    read = _Cached(read)
    texts = [
        n
        for n in names
        if plain_suffix(n) in (".txt", ".dat")
        and not DOC_NAMES.match(PurePosixPath(n).name)
        and not any(fnmatch.fnmatchcase(n, g) for g in choices.exclude)
    ]
    shapes = {n: _shape(read_head(n)) for n in texts}
    by_folder: dict[str, list[str]] = {}
    for name, (shape, _) in shapes.items():
        if shape == "integers":
            by_folder.setdefault(PurePosixPath(name).parent.as_posix(), []).append(name)
    rows: dict[str, int] = {}
    sides: dict[str, list[str]] = {}
    for name, (shape, _) in shapes.items():
        siblings = by_folder.get(PurePosixPath(name).parent.as_posix(), [])
        if shape != "numbers" or not siblings:
            continue
        rows[name] = read.lines(name)
        aligned = [s for s in siblings if read.lines(s) == rows[name]]
        if aligned:
            sides[name] = aligned
    if not sides:
        return None
    tables = sorted(sides)
    widths = {shapes[t][1] for t in tables}
    if len(widths) > 1:
        shown = ", ".join(f"{t} ({shapes[t][1]} columns)" for t in tables)
        message = (
            f"mudata init: the tables with side files hold different columns ({shown}); "
            f"read one kind with --include GLOB"
        )
        raise UsageError(message)
    columns = widths.pop()
    templates: dict[str, list[str]] = {}
    for table in tables:
        for side in sides[table]:
            templates.setdefault(_template(side, table), []).append(side)
    # A side file is one every table has.
    templates = {t: s for t, s in templates.items() if len(s) == len(tables)}
    names_file = _names_file(read, shapes, columns, set(tables))
    legends = _legends(read, shapes, names_file)
    label, user, why, legend = _choose_roles(templates, tables, read, legends, choices)
    used = {*tables, *templates[label], *templates[user]}
    draft = AlignedDraft(tables, columns, {t: rows[t] for t in tables}, label, user, why)
    draft.label_names_file = legend
    draft.legend = legends.get(legend, {}) if legend else {}
    draft.feature_names_file = names_file
    if names_file:
        draft.why.append(f"column names: {names_file} ({columns} names, repeats get _2, _3 ...)")
    else:
        draft.why.append("column names: no file names the columns: c1, c2 ...")
    if legend:
        draft.why.append(f"class names: {legend} ({len(draft.legend)} classes)")
    draft.read = sorted(used | {n for n in (names_file, legend) if n})
    lengths = set(rows.values())
    for name in names:
        if name in draft.read:
            continue
        if shapes.get(name, ("", 0))[0] == "numbers" and read.lines(name) in lengths:
            draft.windows.append(name)  # told in one line of the report
            draft.window_columns[name] = shapes[name][1]
        elif name in shapes:
            draft.left_out[name] = "not a feature table, nor one of its side, names or legend files"
        elif DOC_NAMES.match(PurePosixPath(name).name):
            draft.left_out[name] = f"documentation by its name ({PurePosixPath(name).name})"
        else:
            draft.left_out[name] = "not data (documentation or another format)"
    return draft


def aligned_layout(draft: AlignedDraft) -> Layout:
    """The layout of a draft of feature tables with side files: reader options and notes."""
    options: dict[str, Any] = {
        "format": "text",
        "header": False,
        "members": draft.members,
        "label_file": draft.label_file,
        "user_file": draft.user_file,
    }
    if draft.feature_names_file:
        options["feature_names_file"] = draft.feature_names_file
    if draft.label_names_file:
        options["label_names_file"] = draft.label_names_file
    comments = {
        "members": f"the feature tables, one per split ({', '.join(draft.tables)})",
        "label_file": next(w for w in draft.why if w.startswith("label:")),
        "user_file": next(w for w in draft.why if w.startswith("user:")),
    }
    if draft.windows:
        comments["members"] += (
            f"; the {len(draft.windows)} file(s) of raw windows beside them (as Inertial "
            f"Signals/) are another kind of data, not read"
        )
    notes = [
        "format: text, without a header line (whitespace-separated numbers)",
        "layout: a feature table (its labels and users in side files aligned row by row)",
    ]
    return Layout("features", "text", False, options, [], None, notes, "", Roles(), comments)


def legend_names(classes: list[dict[str, Any]], draft: AlignedDraft | None) -> list[dict[str, Any]]:
    """``classes`` with the legend's names, where it names their codes."""
    if draft is None or not draft.legend:
        return classes
    return [
        {**c, "name": draft.legend.get(int(c["code"]), c["name"])}
        if isinstance(c["code"], int)
        else c
        for c in classes
    ]
