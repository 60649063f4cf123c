"""``mudata init``, step 3b: user, label and recording read from the file paths, reasoned.

A path holds fields: the folders above each file, and the tokens of its name
(split at ``_``, ``-`` and spaces). A field that is the same in every file
(``raw``, ``data``, ``inertial``) says nothing; the others are weighed as a
user, a label or a recording by what they are, not by where they sit:

* a folder whose name reappears inside the file names (``SA01/D01_SA01_R01.txt``)
  is the user, that token of the names being the folder again, no field of its
  own (so ``walking/walking_s1.csv`` gives its role to the folder alone);
* a field that takes the same few values in every folder (a series number
  ``1_raw_data_...``, a trial ``_R01``, a segment ``s01``) is a recording,
  not a user;
* a field with one value per file is a file id or a time, not a user;
* a prefix says what a coded field is: ``a01``/``act``/``d``/``f`` a label,
  ``s``/``sub``/``subject``/``p``/``u``/``user`` a user, ``t``/``trial``/``r``/
  ``rep``/``run``/``seg`` a recording; words (``walking``) are labels.

The reading chosen is written as a template (``a{label}/{user}/*.txt``) built
from the actual names and extension, checked to match every file; when a
second reading scores close to it, it is named with the template that takes
it (:attr:`PathReading.other`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from mudata.drafting.selection import compile_path_pattern
from mudata.readers.decode import data_suffix

_SPLIT = re.compile(r"([-_ ])")
_CODED = re.compile(r"^([A-Za-z]*)(\d+)$")
LABEL_PREFIXES = frozenset(
    {"a", "act", "activity", "action", "c", "class", "d", "f", "g", "gesture", "label", "task"}
)
USER_PREFIXES = frozenset(
    {
        "s", "sub", "subj", "subject", "u", "user", "usr", "p", "part", "participant",
        "person", "pid", "id", "volunteer", "sa", "se",
    }
)  # fmt: skip
RECORDING_PREFIXES = frozenset(
    {"t", "trial", "r", "rep", "run", "rec", "recording", "session", "seg", "segment", "series",
     "take", "n", "e", "exp", "experiment", "execution"}
)  # fmt: skip
#: How much closer than this a second reading must score to be named.
CLOSE = 2


@dataclass
class Field:
    """One varying piece of the paths: a folder level or a token of the file names."""

    where: str  # "folder" or "name"
    index: int
    values: list[str]
    prefix: str | None = None  # the letters before the digits, when all share them
    kind: str = "mixed"  # "number", "coded", "text" or "mixed"
    reappears: bool = False  # a folder whose value is also a token of the file name
    copy: bool = False  # a token of the names equal to a folder in every file: that folder
    repeats: bool = False  # the same few values in every folder above it
    per_file: bool = False  # one value per file
    from_top: bool = False  # a folder level counted from the top (files at several depths)

    #: The number of folder levels every file has (set with ``from_top``).
    depth: int = 0

    @property
    def level(self) -> int:
        """A folder field's level counted from the top (0: the first folder)."""
        return self.index + self.depth

    def describe(self) -> str:
        distinct = sorted(set(self.values), key=_natural)
        shown = (
            f"{distinct[0]}..{distinct[-1]}" if len(distinct) > 2 else ", ".join(distinct)
        ) + f", {len(distinct)} values"
        place = (
            "the folder holding each file"
            if self.where == "folder"
            else "a token of the file names"
        )
        if self.where == "folder" and self.from_top:
            place = f"the folder at level {self.level + 1} from the top"
        elif self.where == "folder" and self.index < -1:
            place = f"the folder {-self.index - 1} level(s) above each file's folder"
        return f"{place} ({shown})"


@dataclass
class PathReading:
    """Where user, label and recording sit in the paths, as a template and a regex."""

    template: str
    pattern: str
    notes: list[str] = field(default_factory=list)
    other: tuple[str, str] | None = None  # (what it reads, the template taking it)

    def comment(self) -> str:
        """The draft's comment on ``path_pattern``: the template, and the other reading."""
        text = f"read from the paths as '{self.template}'"
        if self.other is not None:
            text += f"; another reading, {self.other[0]}: '{self.other[1]}'"
        return text


def _natural(text: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def _split(stem: str) -> list[str]:
    return _SPLIT.split(stem)


def _fields(
    members: list[str],
) -> tuple[list[Field], list[list[str]], list[list[str]], bool] | None:
    """The varying fields of ``members``' paths, their folders and name tokens, and
    whether the folders were aligned from the top (files at several depths)."""
    folders = [list(PurePosixPath(m).parts[:-1]) for m in members]
    names = [PurePosixPath(m).name for m in members]
    stems = [_split(n[: len(n) - len(data_suffix(n))]) for n in names]
    if len({len(s) for s in stems}) != 1:
        return None
    # Separators must sit at the same places for the tokens to line up.
    if len({tuple(s[1::2]) for s in stems}) != 1:
        return None
    # Files at several depths (subject03/walk/1_raw.csv beside subject04/1_raw.csv,
    # or data at the top beside data in folders): the levels every file has, counted
    # from the top, line up; the deeper ones, some files' only, are no field.
    deeper = len({len(f) for f in folders}) > 1
    if deeper:
        shallowest = min(len(f) for f in folders)
        folders = [f[:shallowest] for f in folders]
    found = []
    depth = len(folders[0])
    for level in range(depth):
        values = [f[level] for f in folders]
        if len(set(values)) > 1:
            found.append(Field("folder", level - depth, values, from_top=deeper, depth=depth))
    for i in range(0, len(stems[0]), 2):
        values = [s[i] for s in stems]
        if len(set(values)) > 1:
            found.append(Field("name", i, values))
    for f in found:
        _characterise(f, len(members))
    for f in found:
        if f.where == "folder":
            f.reappears = all(v in s[0::2] for v, s in zip(f.values, stems, strict=True))
    for f in found:
        # walking/walking_user1.csv: the name repeats the folder, one field, not two
        f.copy = f.where == "name" and any(
            g.where == "folder" and g.values == f.values for g in found
        )
    folder_fields = [f for f in found if f.where == "folder"]
    for f in found:
        above = [
            g for g in folder_fields if g is not f and (f.where == "name" or g.index < f.index)
        ]
        f.repeats = _repeats(f, above)
    return found, folders, stems, deeper


def _characterise(f: Field, n_files: int) -> None:
    coded = [_CODED.match(v) for v in f.values]
    if all(coded):
        prefixes = {m.group(1).lower() for m in coded if m}
        f.kind = "number" if prefixes == {""} else "coded"
        f.prefix = prefixes.pop() if len(prefixes) == 1 else None
    elif all(v.isalpha() for v in f.values):
        f.kind = "text"
    f.per_file = n_files > 3 and len(set(f.values)) > n_files / 2


def _repeats(f: Field, above: list[Field]) -> bool:
    """The same value set, of 2 or more values, in every group of the folders above."""
    if not above:
        return False
    groups: dict[tuple, set[str]] = defaultdict(set)
    for i, value in enumerate(f.values):
        groups[tuple(g.values[i] for g in above)].add(value)
    sets = {frozenset(s) for s in groups.values()}
    return len(groups) > 1 and len(sets) == 1 and len(next(iter(sets))) >= 2


def _prefixes(f: Field) -> set[str]:
    return {m.group(1).lower() for v in f.values if (m := _CODED.match(v))}


def _label_score(f: Field) -> int:
    prefixes = _prefixes(f)
    score = 3 if f.kind == "text" else 0
    score += 2 if prefixes and prefixes <= LABEL_PREFIXES else 0
    score -= 3 if prefixes and prefixes <= RECORDING_PREFIXES else 0
    score -= 3 if f.per_file or f.reappears else 0
    return score + (1 if f.where == "folder" else 0)


def _user_score(f: Field) -> int:
    prefixes = _prefixes(f)
    score = 4 if f.reappears else 0
    score += 2 if prefixes and prefixes <= USER_PREFIXES else 0
    score -= 3 if prefixes and prefixes <= RECORDING_PREFIXES else 0
    score -= 3 if f.kind in ("text", "mixed") or f.per_file else 0
    score -= 2 if f.repeats else 0
    return score + (1 if f.where == "folder" else 0)


def _template(
    roles: dict[int, str],
    found: list[Field],
    folders: list[str],
    stem: list[str],
    suffix: str,
    deeper: bool = False,
) -> str:
    """The template of one member's path with the fields of ``roles`` (by position in ``found``).

    ``deeper``: files sit at several depths and ``folders`` are the levels all
    share, from the top; the template then names them from the first (a field
    found from the top must be matched from there) and takes the deeper folders
    of some files with ``**/``.
    """
    parts = []
    by_place = {(f.where, f.index): (i, f) for i, f in enumerate(found)}
    depth = len(folders)
    first_varying = min((f.index + depth for f in found if f.where == "folder"), default=depth)
    for level in range(0 if deeper else first_varying, depth):
        hit = by_place.get(("folder", level - depth))
        parts.append(_piece(hit, roles, folders[level]))
    if deeper:
        parts.append("**")
    name = []
    for i, token in enumerate(stem):
        if i % 2:
            name.append(token)  # a separator
            continue
        hit = by_place.get(("name", i))
        name.append(_piece(hit, roles, token))
    return "/".join([*parts, "".join(name) + suffix])


def _piece(hit: tuple[int, Field] | None, roles: dict[int, str], literal: str) -> str:
    if hit is None:
        return literal  # the same in every file
    i, f = hit
    role = roles.get(i)
    if role is None:
        return "*"
    if f.prefix and not f.reappears and role != "user":
        # a01 -> a{label}: the letters are the field's name, the number its value;
        # a user keeps its whole id (f1, p1, subject101), as it is published
        return f"{_CODED.match(literal).group(1)}{{{role}}}"  # type: ignore[union-attr]
    return f"{{{role}}}"


def read_paths(members: list[str], need_user: bool, need_label: bool) -> PathReading | None:
    """User and label (and a recording) from the paths, or None when the paths do not line up.

    Parameters
    ----------
    members : list of str
        The data files' paths.
    need_user, need_label : bool
        What the columns do not give.

    Returns
    -------
    PathReading or None
        None when the names do not split into the same tokens (each file its
        own shape) or no field can be the role needed; the caller then tries
        simpler rules.
    """
    parsed = _fields(members)
    if parsed is None:
        return None
    found, folders, stems, deeper = parsed
    if not found or (len(found) == 1 and found[0].where == "name"):
        return None  # one token of the names: the simpler rules say it as well
    roles: dict[int, str] = {}
    notes: list[str] = []
    other: tuple[str, str] | None = None
    free = [i for i, f in enumerate(found) if not f.copy]
    runner_up: tuple[str, int, int] | None = None
    for role, score in (("label", _label_score), ("user", _user_score)):
        if not (need_label if role == "label" else need_user):
            continue
        ranked = sorted(free, key=lambda i: -score(found[i]))
        if not ranked or score(found[ranked[0]]) < 0:
            return None
        best = ranked[0]
        roles[best] = role
        free.remove(best)
        why = _why(found[best], role)
        notes.append(f"{role}: {found[best].describe()}{why}")
        if len(ranked) > 1 and score(found[ranked[0]]) - score(found[ranked[1]]) < CLOSE:
            runner_up = runner_up or (role, best, ranked[1])
    recordings = [
        i
        for i in free
        if found[i].repeats or (_prefixes(found[i]) and _prefixes(found[i]) <= RECORDING_PREFIXES)
    ]
    if len(recordings) == 1 and not found[recordings[0]].per_file:
        roles[recordings[0]] = "recording"
        notes.append(
            f"recording: {found[recordings[0]].describe()}; the same few values in every "
            f"folder or a trial's name: a recording, not a user"
        )
    elif need_user:
        notes += [
            f"not the user: {found[i].describe()}, the same values in every folder (a series, "
            f"trial or repetition)"
            for i in recordings
            if found[i].repeats
        ]
    suffix = data_suffix(members[0])
    template = _template(roles, found, folders[0], stems[0], suffix, deeper)
    pattern = _checked(template, members)
    if pattern is None:
        return None
    if runner_up is not None:
        role, chosen, second = runner_up
        swapped = {i: r for i, r in roles.items() if i not in (chosen, second)}
        swapped[second] = role
        if roles.get(second):
            swapped[chosen] = roles[second]
        alternative = _template(swapped, found, folders[0], stems[0], suffix, deeper)
        if _checked(alternative, members) is not None:
            other = (f"{role} from {found[second].describe()}", alternative)
            notes.append(
                f"  another reading: {role} from {found[second].describe()}; "
                f"--path-pattern '{alternative}' takes it"
            )
    notes.append(f"path pattern: '{template}' (--path-pattern overrides)")
    return PathReading(template, pattern, notes, other)


def _why(f: Field, role: str) -> str:
    if role == "user" and f.reappears:
        return "; its name reappears inside the file names"
    if f.repeats and role == "label":
        return "; the same values in every folder above it"
    return ""


def _checked(template: str, members: list[str]) -> str | None:
    """The regex of ``template`` when it matches every member, else None."""
    pattern = compile_path_pattern(template)
    regex = re.compile(pattern)
    return pattern if all(regex.search(m) for m in members) else None


def hint(members: list[str], need: tuple[str, ...]) -> str:
    """A ``--path-pattern`` template made from the first member's own name and extension.

    Coded tokens of the name take the role their prefix says (``a1``: label,
    ``s1``: user), then the folder holding the file takes a label, then the
    remaining tokens take what is left; the hint always matches that file.
    """
    path = PurePosixPath(members[0])
    suffix = data_suffix(path.name)
    stem = _split(path.name[: len(path.name) - len(suffix)])
    pieces = list(stem)
    wanted = list(need)
    coded = {i: m for i in range(0, len(stem), 2) if (m := _CODED.match(stem[i]))}

    def take(i: int, role: str) -> None:
        letters = coded[i].group(1) if i in coded and role != "user" else ""
        pieces[i] = letters + "{" + role + "}"
        wanted.remove(role)

    for i, match in coded.items():
        prefix = match.group(1).lower()
        for role, known in (("label", LABEL_PREFIXES), ("user", USER_PREFIXES)):
            if role in wanted and prefix in known and pieces[i] == stem[i]:
                take(i, role)
    folder = None
    if path.parent.name and "label" in wanted and (len(wanted) > 1 or not coded):
        folder = "label"
        wanted.remove("label")
    for i in [*coded, *range(0, len(stem), 2)]:
        if wanted and pieces[i] == stem[i]:
            take(i, wanted[0])
    if wanted and path.parent.name and folder is None:
        folder = wanted.pop(0)
    name = "".join(pieces) + suffix
    return f"{{{folder}}}/{name}" if folder else name
