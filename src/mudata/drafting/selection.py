"""``mudata init``, step 1a: which of the user's files are data, and the glob that says so.

Releases ship documentation and metadata beside the data (``README.txt``,
``MANUAL.pdf``, ``.zenodo.json``, a sheet describing the executions). Such
files are left out, each with the reason, so that a layout is proposed from
the data alone and the entry's ``glob`` selects exactly the data files:

1. ``--exclude GLOB`` leaves a file out; with ``--include GLOB``, only the
   files it matches are data (the rules below do not apply to them, but they
   must share one format);
2. documentation by name (README, MANUAL, LICENSE, CHANGELOG, ...) or by
   suffix (``.md``, ``.pdf``, ``.json``, ``.cff``, ...), and files in no data
   format;
3. data files of another format than the most common one (``.csv``,
   ``.csv.gz``, ``.csv.bz2`` and ``.csv.xz`` are one format, compressed or not);
4. delimited tables whose columns differ from the majority's (a metadata sheet).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from mudata.drafting.annotations import Annotation, find_annotation, find_class_names
from mudata.drafting.columns import LABEL_NAMES
from mudata.drafting.shapes import text_shape
from mudata.errors import MudataUsageError as UsageError
from mudata.readers.decode import COMPRESSIONS, data_suffix

#: Data file suffixes and the reader format each is read as; each may also be
#: compressed (``.csv.gz``, ``.txt.bz2``, ...).
FORMATS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".txt": "text",
    ".dat": "text",
    ".log": "text",
    ".mat": "mat",
}
DOC_NAMES = re.compile(
    r"^(readme|read_me|manual|licen[cs]e|copying|changelog|changes|history|news|citation|"
    r"authors|contributors|notice|install|contributing|description|info)([._ -].*)?$",
    re.IGNORECASE,
)
DOC_SUFFIXES = frozenset(
    {
        ".md", ".rst", ".pdf", ".json", ".cff", ".html", ".htm", ".doc", ".docx", ".odt",
        ".rtf", ".tex", ".bib", ".yml", ".yaml", ".xml", ".png", ".jpg", ".jpeg", ".gif",
        ".svg", ".py", ".r", ".m", ".ipynb", ".sh", ".xls", ".xlsx", ".ods", ".ini", ".cfg",
    }
)  # fmt: skip


@dataclass
class Selection:
    """The data files among the user's files, and the others with the reason each was left out.

    Attributes
    ----------
    members : list of str
        The data files, sorted.
    left_out : dict of str to str
        Every other file, with why it is not data.
    suffix : str
        The data files' most common suffix, compression included (``".csv.gz"``);
        others differ from it by their compression alone.
    glob : str
        An ``fnmatch`` glob (``*`` crosses folders) matching every data file and no other
        file but the annotation table.
    annotation : Annotation or None
        A table of labels by interval (:mod:`mudata.drafting.annotations`),
        pinned with the data files.
    side_files : list of str or None
        Every file pinned, when more than the data files are read: feature
        tables with their side files (:mod:`mudata.drafting.aligned_layout`).
    notes : list of str
        What the draft says of the files before those left out.
    """

    members: list[str]
    left_out: dict[str, str] = field(default_factory=dict)
    suffix: str = ""
    glob: str = "*"
    annotation: Annotation | None = None
    side_files: list[str] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def pinned(self) -> list[str]:
        """The files the entry pins under ``glob``: the data files and the annotation table
        (unless it is a file of its own, :attr:`Annotation.separate`), or those of the
        feature tables with side files."""
        if self.side_files is not None:
            return list(self.side_files)
        annotation = self.annotation
        together = annotation is not None and not annotation.separate
        return [*self.members, *([annotation.member] if annotation and together else [])]

    def report(self) -> list[str]:
        """One line per file left out, for the draft's report."""
        lines = list(self.notes)
        if self.annotation is not None:
            lines.append(f"labels: the annotation table {self.annotation.member}")
            lines += [f"  {note}" for note in self.annotation.notes]
        if self.left_out:
            lines.append(
                f"{len(self.left_out)} file(s) left out (not data; --include/--exclude override):"
            )
            lines += [f"  {name}: {why}" for name, why in sorted(self.left_out.items())]
        return lines


def format_of(suffix: str) -> str | None:
    """The reader format of a data suffix (``.csv.gz`` -> ``csv``), or None."""
    inner = suffix
    for ending in COMPRESSIONS:
        if suffix.endswith(ending) and suffix != ending:
            inner = suffix[: -len(ending)]
    return FORMATS.get(inner)


def plain_suffix(name: str) -> str:
    """The data suffix of ``name`` without its compression (``a.csv.gz`` -> ``.csv``)."""
    suffix = data_suffix(name)
    ending = PurePosixPath(suffix).suffix
    return suffix[: -len(ending)] if ending in COMPRESSIONS and suffix != ending else suffix


def _matches(name: str, globs: tuple[str, ...]) -> str | None:
    base = PurePosixPath(name).name
    return next(
        (g for g in globs if fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(base, g)), None
    )


def _documentation(name: str) -> str | None:
    path = PurePosixPath(name)
    if path.name.startswith(".") and path.suffix.lower() == ".json":
        return f"metadata ({path.name})"
    if DOC_NAMES.match(path.name):
        return f"documentation by its name ({path.name})"
    if path.suffix.lower() in DOC_SUFFIXES:
        return f"documentation or metadata ({path.suffix.lower()} file)"
    return None


def _by_name(
    names: list[str], include: tuple[str, ...], exclude: tuple[str, ...]
) -> tuple[list[str], dict[str, str]]:
    kept, left_out = [], {}
    for name in names:
        if glob := _matches(name, exclude):
            left_out[name] = f"--exclude {glob}"
        elif include:
            if _matches(name, include):
                kept.append(name)
            else:
                left_out[name] = "not matched by --include"
        elif why := _documentation(name):
            left_out[name] = why
        elif format_of(data_suffix(name)) is None:
            left_out[name] = f"not a data format read here ({data_suffix(name) or 'no suffix'})"
        else:
            kept.append(name)
    return kept, left_out


def _signature(head: bytes) -> tuple[str, ...] | None:
    """The header fields of a delimited table (or its field count when it has none)."""
    # After any preamble: comment blocks differing from file to file say nothing.
    shape = text_shape(head.decode("utf-8", "replace"))
    if not shape.fields:
        return None
    return tuple(shape.fields) if shape.header else (f"{len(shape.fields)} columns",)


def _by_columns(
    names: list[str],
    read_head: Callable[[str], bytes],
    left_out: dict[str, str],
    signatures: dict[str, tuple[str, ...] | None] | None = None,
) -> list[str]:
    """Leave out the tables whose columns differ from the majority's (``signatures``:
    those already read, by name)."""
    known = signatures or {}
    signatures = {
        name: known[name] if name in known else _signature(read_head(name)) for name in names
    }
    counts = Counter(signatures.values())
    if len(counts) < 2:
        return names
    # Of shapes equally common, the one with a label column: a labelled training
    # table beside its unlabelled test split (pml-training.csv, pml-testing.csv)
    # is the data; the first of the tie otherwise, as the files are sorted.
    majority = max(counts, key=lambda s: (counts[s], _label_column(s) is not None))
    n = counts[majority]
    label = _label_column(majority)
    kept = []
    for name in names:
        if signatures[name] == majority:
            kept.append(name)
            continue
        shown = ", ".join(signatures[name] or ("(empty)",))[:120]
        if not signatures[name]:
            # No header line at all: an empty (or cut) file, not another kind of table.
            left_out[name] = (
                f"no header line, where {n} of the {len(names)} tables have one: an empty "
                "or damaged file?"
            )
        elif label is not None and _label_column(signatures[name]) is None:
            left_out[name] = (
                f"its columns ({shown}) lack the label column {label!r} of {n} of the "
                f"{len(names)} tables: an unlabelled (test) table?"
            )
        else:
            left_out[name] = (
                f"its columns ({shown}) differ from those of {n} of the {len(names)} "
                f"tables ({', '.join(majority or ())[:120]}): a metadata sheet?"
            )
    return kept


def _label_column(signature: tuple[str, ...] | None) -> str | None:
    """The first header field named as a label (:data:`LABEL_NAMES`), if any."""
    return next((f for f in signature or () if LABEL_NAMES.match(f.strip())), None)


def select(
    names: list[str],
    read_head: Callable[[str], bytes],
    *,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    where: str = "",
) -> Selection:
    """Choose the data files among ``names`` and a glob matching exactly them.

    Parameters
    ----------
    names : list of str
        Every file, as a path inside the folder or archive.
    read_head : callable
        ``name -> bytes``: the first bytes of a file, decompressed
        (:func:`mudata.readers.decode.head`), to compare the columns of tables.
    include, exclude : tuple of str
        ``fnmatch`` globs, matched against the path or the file name.
    where : str
        The folder or archive, for messages.

    Returns
    -------
    Selection

    Raises
    ------
    UsageError
        No data file is left, or no glob separates the data files from the others.
    """
    candidates, left_out = _by_name(sorted(names), include, exclude)
    if not candidates:
        message = (
            f"{where}: no data file found (data formats: {', '.join(sorted(FORMATS))}, "
            f"optionally .gz/.bz2/.xz); left out: "
            + "; ".join(f"{n}: {w}" for n, w in sorted(left_out.items())[:10])
        )
        raise UsageError(message)
    # A format is a suffix without its compression: a release may compress
    # some files and not others, and the readers decompress each by its suffix.
    kinds = Counter(plain_suffix(n) for n in candidates)
    kind = max(kinds.items(), key=lambda item: (item[1], item[0]))[0]
    if include and len(kinds) > 1:
        shown = ", ".join(f"{k} ({n} file(s))" for k, n in sorted(kinds.items()))
        message = (
            f"{where}: --include matches data files of several formats ({shown}); "
            f"a dataset is read in one format: narrow --include"
        )
        raise UsageError(message)
    members = []
    for name in candidates:
        if plain_suffix(name) == kind:
            members.append(name)
        else:
            left_out[name] = f"another format ({data_suffix(name)}) than the data files ({kind})"
    annotation = None
    if not include and format_of(kind) in ("csv", "text") and len(members) > 1:
        signatures = {name: _signature(read_head(name)) for name in members}
        # A table of one shape of its own may be the labels of the others: found
        # first, so that one signal file and its table are not a tie of shapes.
        annotation = _annotation_of_a_kind(members, signatures, read_head)
        if annotation is not None:
            members = [m for m in members if m != annotation.member]
            left_out[annotation.member] = "the annotation table"
        members = _by_columns(members, read_head, left_out, signatures)
    if annotation is None and not include:
        annotation = _annotation(members, left_out, read_head)
    suffixes = Counter(data_suffix(n) for n in members)
    suffix = max(suffixes.items(), key=lambda item: (item[1], item[0]))[0]
    # Compressed or not, one glob: "*.csv*" matches .csv, .csv.gz, .csv.bz2...
    wide = suffix if len(suffixes) == 1 else f"{kind}*"
    if annotation is not None:
        # One glob for the data files and the annotation table (the reader
        # skips the table among its members), if one separates both from the rest.
        others = sorted(n for n in left_out if n != annotation.member)
        try:
            glob = data_glob([*members, annotation.member], others, wide, where, reasons=left_out)
        except UsageError:
            # Listed as a file of its own (another folder, another suffix).
            annotation.separate = True
            glob = data_glob(members, sorted(left_out), wide, where, reasons=left_out)
        del left_out[annotation.member]
        if annotation.names_file:
            left_out[annotation.names_file] = "the names of the classes (used in the draft)"
        return Selection(members, left_out, suffix, glob, annotation)
    glob = data_glob(members, sorted(left_out), wide, where, include, left_out)
    return Selection(members, left_out, suffix, glob)


#: Tables of a shape of their own tried as the annotation table of the others, at most.
_MAX_SINGLE_SHAPES = 8


def _annotation_of_a_kind(
    members: list[str],
    signatures: dict[str, tuple[str, ...] | None],
    read_head: Callable[[str], bytes],
) -> Annotation | None:
    """The annotation table among data files of one format, when it alone has its shape."""
    counts = Counter(signatures.values())
    single = [m for m in members if counts[signatures[m]] == 1 and _documentation(m) is None]
    for name in single[:_MAX_SINGLE_SHAPES]:
        others = [m for m in members if signatures[m] != signatures[name]]
        shapes = Counter(signatures[m] for m in others)
        if not shapes:
            continue
        majority = shapes.most_common(1)[0][0]
        data = [m for m in others if signatures[m] == majority]
        header = majority is not None and not (
            len(majority) == 1 and majority[0].endswith(" columns")
        )
        found = find_annotation([name], data, read_head, list(majority or ()) if header else [])
        if found is not None:
            find_class_names(found, [m for m in single if m != name], read_head)
            return found
    return None


def _annotation(
    members: list[str], left_out: dict[str, str], read_head: Callable[[str], bytes]
) -> Annotation | None:
    """An annotation table of labels among the delimited text files left out."""
    candidates = [
        n
        for n in sorted(left_out)
        if format_of(data_suffix(n)) in ("csv", "text")
        and _documentation(n) is None
        and not left_out[n].startswith("--exclude")
    ]
    if not candidates or not members:
        return None
    shape = text_shape(read_head(members[0]).decode("utf-8", "replace"))
    columns = list(shape.fields) if shape.header else []
    return find_annotation(candidates, members, read_head, columns)


def _shared_start(texts: list[str]) -> str:
    """The characters every text starts with (``min`` and ``max`` bound all the others)."""
    first, last = min(texts), max(texts)
    size = next(
        (i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b),
        min(len(first), len(last)),
    )
    return first[:size]


def _glob_candidates(members: list[str], suffix: str, given: tuple[str, ...]) -> list[str]:
    parents = [PurePosixPath(m).parent.as_posix() for m in members]
    common = os.path.commonpath(parents) if all(p != "." for p in parents) else ""
    folder = f"{common}/" if common else ""
    prefix = _shared_start(members)
    tail = _shared_start([m[::-1] for m in members])[::-1]
    candidates = [f"*{suffix}", f"{folder}*{suffix}"]
    if all("/" in m[len(folder) :] for m in members):
        candidates.append(f"{folder}*/*{suffix}")
    if len(prefix) + len(tail) <= len(min(members, key=len)):
        candidates.append(f"{prefix}*{tail}")
    if len(members) == 1:
        candidates.append(members[0])
    # The user's own --include globs come last: they may be written for file names only.
    return [glob.replace("[", "[[]") for glob in candidates] + [f"*{g}" for g in given]


def data_glob(
    members: list[str],
    others: list[str],
    suffix: str,
    where: str = "",
    given: tuple[str, ...] = (),
    reasons: Mapping[str, str] | None = None,
) -> str:
    """The simplest glob that matches every member and none of ``others``.

    ``given``: the user's ``--include`` globs, tried last; ``reasons``: why each
    of ``others`` was left out, said with the files in the way (an empty or
    unreadable data file is one, and the reason is what to repair).

    Raises
    ------
    UsageError
        No candidate separates them; the message names the files in the way.
    """
    for glob in _glob_candidates(members, suffix, given):
        if all(fnmatch.fnmatchcase(m, glob) for m in members) and not any(
            fnmatch.fnmatchcase(o, glob) for o in others
        ):
            return glob
    unlike = [m for m in members if not fnmatch.fnmatchcase(m, f"*{suffix}")]
    if unlike:
        # No glob can match them all: their names differ where a glob matches (a
        # copy 2.CSV beside 2.csv), not because other files are in the way.
        message = (
            f"{where}: no glob matches every data file: {unlike[:5]} do not end in "
            f"{suffix!r} as the others do (a copy under another case?); rename or remove "
            "them, or pass --include GLOB naming the data files"
        )
        raise UsageError(message)
    caught = [o for o in others if fnmatch.fnmatchcase(o, f"*{suffix}")]
    why = reasons or {}
    shown = "; ".join(f"{o!r}" + (f" (left out: {why[o]})" if o in why else "") for o in caught[:5])
    message = (
        f"{where}: no glob selects the data files without also selecting {shown or caught}; "
        f"repair those files or move them out of the folder, or pass --include GLOB naming "
        "the data files"
    )
    raise UsageError(message)


PATTERN_GROUPS = ("user", "label", "recording")
_FIELD = re.compile(r"\{(\w+)\}")


def compile_path_pattern(text: str) -> str:
    """A ``path_pattern`` regular expression from a regex or a template.

    A template such as ``a{label}_s{user}_t{recording}_*.mat`` names its
    fields in braces: each ``{name}`` matches one piece of a path segment
    (``[^/]+?``), ``*`` any characters but ``/``, ``**/`` any folders (or
    none), and the rest is literal; the
    whole is anchored at a path segment's start and at the end of the path.
    Text holding ``(?P<`` is taken as a regular expression as it is.

    Raises
    ------
    UsageError
        Not a valid regex, a group other than user, label and recording, or
        a template without fields.
    """
    if "(?P<" in text:
        pattern = text
    else:
        fields = _FIELD.findall(text)
        if not fields:
            message = f"--path-pattern {text!r}: neither a regular expression with named groups (?P<user>...) nor a template with {{user}}, {{label}} or {{recording}}"
            raise UsageError(message)
        parts = []
        for piece in re.split(r"(\{\w+\}|\*\*/|\*)", text):
            if piece == "**/":
                parts.append("(?:[^/]+/)*")  # any folders, or none
            elif piece == "*":
                parts.append("[^/]*")
            elif match := _FIELD.fullmatch(piece):
                parts.append(f"(?P<{match.group(1)}>[^/]+?)")
            else:
                parts.append(re.escape(piece))
        pattern = r"(?:^|/)" + "".join(parts) + "$"
    try:
        groups = set(re.compile(pattern).groupindex)
    except re.error as exc:
        message = f"--path-pattern {text!r} is not a valid regular expression ({exc})"
        raise UsageError(message) from None
    unknown = groups - set(PATTERN_GROUPS)
    if unknown:
        message = f"--path-pattern {text!r}: unknown field(s) {sorted(unknown)}; the fields are {list(PATTERN_GROUPS)}"
        raise UsageError(message)
    return pattern


__all__ = [
    "DOC_NAMES",
    "DOC_SUFFIXES",
    "FORMATS",
    "PATTERN_GROUPS",
    "Selection",
    "compile_path_pattern",
    "data_glob",
    "format_of",
    "plain_suffix",
    "select",
]
