"""``mudata init``: draft a complete registry entry from files a user has.

The draft is a starting point, not a guess hidden from the user: every choice
(layout, columns, path pattern, classes, sampling rate) is written into the
entry and printed with the evidence for it, and the user edits the draft
before registering it.

Steps, one function each:

1. :func:`collect` -- the files (a folder, an archive, or plain files), each
   hashed; the hashes are written as *pinned on first use* (``hashes =
   "first-use"``): they prove the files did not change since, not that they
   are the published ones.
2. :func:`sniff` -- CSV, Parquet or whitespace-separated text; with or
   without a header.
3. :func:`propose_layout` -- feature table or raw signals; user, label,
   time, recording and channel columns, or a path pattern holding user and
   label.
4. :func:`draft_entry` -- classes with their counts, the sampling rate
   estimated from time, the recipe, and what the user filter would keep.

Every byte read goes through :class:`~mudata.readers.base.Sources` with the
hashes just taken as pins, as ``mudata fetch`` will read it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from mudata.archive import ArchiveIndex, sniff_kind
from mudata.classes import code_text, is_numeric_column, user_sort_key
from mudata.errors import ParseError, UsageError
from mudata.readers.base import Pin, Pins, Sources
from mudata.registry import DatasetEntry, parse_entry

DATA_SUFFIXES = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".txt": "text",
    ".dat": "text",
    ".log": "text",
    ".tsv": "text",
}
USER_NAMES = re.compile(
    r"^(user|users|userid|user_id|subject|subject_id|subjectid|participant|person|uid|sub|volunteer)$",
    re.IGNORECASE,
)
LABEL_NAMES = re.compile(
    r"^(label|labels|activity|activity_id|activityid|class|act|gt|target|y|activity_label)$",
    re.IGNORECASE,
)
TIME_NAMES = re.compile(
    r"^(time|timestamp|ts|t|datetime|date_time|time_s|seconds|epoch)$", re.IGNORECASE
)
RECORDING_NAMES = re.compile(
    r"^(trial|session|recording|run|repetition|rep|experiment|exp_id)$", re.IGNORECASE
)
# A user id in a file or folder name: letters then digits ("f1", "S01", "subject101") or digits.
USER_TOKEN = re.compile(r"^[A-Za-z]{0,12}\d+$")
WINDOW_SECONDS = 3  # as HAR70+'s study windows (150 samples at 50 Hz)


@dataclass
class Collected:
    """The user's files as registry ``files`` specs, and Sources reading them under their pins."""

    files: list[dict[str, Any]]
    sources: Sources
    members: list[str]
    suffix: str


@dataclass
class Layout:
    """What :func:`propose_layout` found, with the evidence to print."""

    kind: str
    fmt: str
    header: bool
    options: dict[str, Any]
    channels: list[str]
    sampling_rate_hz: float | None
    notes: list[str] = field(default_factory=list)
    rate_note: str = ""


@dataclass
class Draft:
    """A drafted entry: its TOML text, the parsed entry and the printed report."""

    toml: str
    entry: DatasetEntry
    report: list[str]


# ----------------------------------------------------------------- 1. files


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _data_suffix(names: list[str], where: Path) -> str:
    counts = Counter(PurePosixPath(n).suffix.lower() for n in names)
    known = [(n, s) for s, n in counts.items() if s in DATA_SUFFIXES]
    if not known:
        message = f"{where}: no data file found (looked for {', '.join(sorted(DATA_SUFFIXES))}; found suffixes {dict(counts)})"
        raise UsageError(message)
    return max(known)[1]


def _relative(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), base.resolve()).replace(os.sep, "/")
    except ValueError:  # another drive on Windows
        return str(path.resolve())


def _hidden(name: str) -> bool:
    return any(part.startswith(".") or part == "__MACOSX" for part in PurePosixPath(name).parts)


def _collect_folder(folder: Path, base: Path) -> Collected:
    names = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not _hidden(p.relative_to(folder).as_posix())
    )
    suffix = _data_suffix(names, folder)
    members = [n for n in names if PurePosixPath(n).suffix.lower() == suffix]
    pins = {n: _sha256(folder / n) for n in members}
    spec = {
        "name": folder.name or "data",
        "path": _relative(folder, base),
        "glob": f"*{suffix}",
        "hashes": "first-use",
        "members": [{"path": n, "sha256": h} for n, h in pins.items()],
    }
    source_pins = Pins(
        members={n: Pin(h) for n, h in pins.items()},
        located={n: folder / n for n in members},
        label=f"folder {folder}",
        glob=f"*{suffix}",
    )
    return Collected([spec], Sources([folder], [source_pins]), members, suffix)


def _collect_archive(archive: Path, kind: str, base: Path) -> Collected:
    with ArchiveIndex(archive, kind) as index:
        names = [n for n in index.names() if not _hidden(n)]
    suffix = _data_suffix(names, archive)
    digest = _sha256(archive)
    spec = {
        "name": archive.name,
        "path": _relative(archive, base),
        "sha256": digest,
        "glob": f"*{suffix}",
        "hashes": "first-use",
    }
    sources = Sources(
        [archive], [Pins(sha256=digest, label=f"archive {archive}", glob=f"*{suffix}")]
    )
    members = [n for n in names if PurePosixPath(n).suffix.lower() == suffix]
    return Collected([spec], sources, members, suffix)


def collect(paths: list[Path], base: Path) -> Collected:
    """The files of ``paths`` (one folder, one archive, or plain files), hashed.

    Parameters
    ----------
    paths : list of Path
        What the user has.
    base : Path
        The folder the entry will be written to: paths are written relative to it.

    Returns
    -------
    Collected
    """
    paths = [Path(p).expanduser() for p in paths]
    if len(paths) == 1 and paths[0].is_dir():
        return _collect_folder(paths[0], base)
    if len(paths) == 1 and paths[0].is_file() and (kind := sniff_kind(paths[0])):
        return _collect_archive(paths[0], kind, base)
    odd = [str(p) for p in paths if not p.is_file()]
    if odd:
        message = f"mudata init takes one folder, one archive, or regular files; not {odd}"
        raise UsageError(message)
    suffix = _data_suffix([p.name for p in paths], paths[0].parent)
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        message = f"mudata init: two files share a name ({sorted(n for n in names if names.count(n) > 1)}); put them in one folder and pass the folder"
        raise UsageError(message)
    digests = [_sha256(p) for p in paths]
    files = [
        {"name": p.name, "path": _relative(p, base), "sha256": d, "hashes": "first-use"}
        for p, d in zip(paths, digests, strict=True)
    ]
    pins = [Pins(sha256=d, label=f"file {p}") for p, d in zip(paths, digests, strict=True)]
    return Collected(files, Sources(paths, pins), names, suffix)


# ----------------------------------------------------------------- 2. format


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def sniff(data: bytes, suffix: str) -> tuple[str, bool]:
    """The format (``csv``, ``parquet``, ``text``) and whether the first line is a header."""
    if suffix == ".parquet" or data[:4] == b"PAR1":
        return "parquet", True
    first = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
    fmt = "csv" if "," in first else "text"
    fields = first.split(",") if fmt == "csv" else first.split()
    header = not all(_is_number(f.strip().strip('"')) for f in fields if f.strip())
    return fmt, header


def _read(data: bytes, fmt: str, header: bool) -> pd.DataFrame:
    if fmt == "parquet":
        return pd.read_parquet(io.BytesIO(data))
    table = pd.read_csv(
        io.BytesIO(data), sep="," if fmt == "csv" else r"\s+", header=0 if header else None
    )
    if not header:
        table.columns = [f"c{i + 1}" for i in range(table.shape[1])]
    return table


# ----------------------------------------------------------------- 3. layout


def _find(columns: list[str], pattern: re.Pattern[str]) -> str | None:
    return next((c for c in columns if pattern.match(str(c).strip())), None)


def _user_token(stems: list[str]) -> tuple[str, str] | None:
    """Where a user id sits in file names: ``("start"|"end", example)`` or None."""
    for side in ("end", "start"):
        tokens = [re.split(r"[-_ ]", s)[-1 if side == "end" else 0] for s in stems]
        if all(USER_TOKEN.match(t) for t in tokens) and len(set(tokens)) > 1:
            return side, tokens[0]
    return None


def _path_pattern(
    members: list[str], suffix: str, need_user: bool, need_label: bool
) -> tuple[str | None, list[str]]:
    """A ``path_pattern`` giving what the columns lack, and the evidence for it."""
    notes: list[str] = []
    ext = re.escape(suffix) + "$"
    stems = [PurePosixPath(m).stem for m in members]
    folders = [PurePosixPath(m).parent.name for m in members]
    label_part = ""
    if need_label:
        if len(set(folders)) < 2 or "" in folders:
            return None, ["no label column, and the files are not in one folder per label"]
        if all(re.fullmatch(r"[A-Za-z]+[-_]\d+", f) for f in folders):
            # "dws_1": the activity and the trial number, as MotionSense names its folders
            label_part = r"(?P<label>[A-Za-z]+)[-_](?P<recording>\d+)/"
            labels = {re.split(r"[-_]", f)[0] for f in folders}
            notes.append(
                f"label and recording: the folder holding each file, as <label>_<trial> "
                f"({len(labels)} labels, {len(set(folders))} folders)"
            )
        else:
            label_part = r"(?P<label>[^/]+)/"
            notes.append(f"label: the folder holding each file ({len(set(folders))} folders)")
    user_part = r"[^/]*"
    if need_user:
        where = _user_token(stems)
        if where is None:
            return None, [
                *notes,
                "no user column, and no user id (like f1, S01, subject101) at the start or end of the file names",
            ]
        side, example = where
        users = {re.split(r"[-_ ]", s)[-1 if side == "end" else 0] for s in stems}
        if side == "end":
            user_part = r"(?:[^/]*[-_ ])?(?P<user>[A-Za-z]*\d+)"
        else:
            user_part = r"(?P<user>[A-Za-z]*\d+)(?:[-_ ][^/]*)?"
        notes.append(
            f"user: the id at the {side} of each file name (e.g. {example!r}; {len(users)} users)"
        )
    pattern = r"(?:^|/)" + label_part + user_part + ext
    return pattern, notes


def _lag1(table: pd.DataFrame, columns: list[str]) -> float:
    values = table[columns].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)[:2000]
    if len(values) < 3:
        return 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        r = [np.corrcoef(v[:-1], v[1:])[0, 1] for v in values.T if np.nanstd(v) > 0]
    r = [x for x in r if np.isfinite(x)]
    return float(np.mean(r)) if r else 0.0


def _rate(table: pd.DataFrame, time_col: str, member: str) -> tuple[float | None, str]:
    from mudata.readers.tabular import _time_values

    values = _time_values(table[time_col], member, time_col)
    steps = np.diff(values)
    steps = steps[steps > 0]
    if steps.size == 0:
        return None, f"time column '{time_col}' does not advance"
    step = float(np.median(steps))
    texty = not pd.api.types.is_numeric_dtype(table[time_col]) and not is_numeric_column(
        table[time_col]
    )
    # Numbers carry no unit: below 1 they are read as seconds, up to 1e4 as
    # milliseconds, beyond as nanoseconds; the note says which was assumed.
    if texty:
        seconds, unit = step / 1e9, "between date/times"
    elif step < 1:
        seconds, unit = step, "read as seconds"
    elif step < 1e4:
        seconds, unit = step / 1e3, "read as milliseconds"
    else:
        seconds, unit = step / 1e9, "read as nanoseconds"
    rate = round(1.0 / seconds, 3)
    shown = f"{seconds:g} s {unit}" if texty else f"{step:g}, {unit}"
    return rate, f"sampling rate: {rate} Hz, from the median step of '{time_col}' ({shown})"


def _code_column(table: pd.DataFrame) -> tuple[str | None, str]:
    """In a file without a header: the last (or first) column, when it looks like class codes.

    Class codes are whole numbers with few distinct values; sensor values are not.
    """
    for column in (table.columns[-1], table.columns[0]):
        values = pd.to_numeric(table[column], errors="coerce")
        distinct = values.dropna().unique()
        whole = values.notna().all() and bool(np.all(np.mod(distinct, 1) == 0))
        if whole and 2 <= distinct.size <= 100 and table.shape[1] > 3:
            note = (
                f"label: column {str(column)[1:]} ({column}), whole numbers with "
                f"{distinct.size} distinct values -- check it"
            )
            return str(column), note
    return None, ""


def propose_layout(
    first: pd.DataFrame, fmt: str, header: bool, members: list[str], suffix: str, kind: str = "auto"
) -> Layout:
    """Propose the reader options from the first file and the member paths."""
    columns = [str(c) for c in first.columns]
    roles = {
        "user_col": _find(columns, USER_NAMES),
        "label_col": _find(columns, LABEL_NAMES),
        "time_col": _find(columns, TIME_NAMES),
        "recording_col": _find(columns, RECORDING_NAMES),
    }
    options: dict[str, Any] = {"format": fmt, "members": f"*{suffix}"}
    notes = [f"format: {fmt}, {'with' if header else 'without'} a header line"]
    if not header and roles["label_col"] is None:
        roles["label_col"], note = _code_column(first)
        notes += [note] if note else []
    pattern, path_notes = (None, [])
    if not (roles["user_col"] and roles["label_col"]):
        pattern, path_notes = _path_pattern(
            members, suffix, not roles["user_col"], not roles["label_col"]
        )
        notes += path_notes
        if pattern is None:
            message = (
                "mudata init: " + "; ".join(path_notes) + f". Columns of {members[0]}: {columns}"
            )
            raise UsageError(message)
        options["path_pattern"] = pattern
    used = {v for v in roles.values() if v}
    numeric = [c for c in columns if c not in used and pd.api.types.is_numeric_dtype(first[c])]
    if kind == "auto":
        signals = bool(roles["time_col"]) or not header or _lag1(first, numeric) > 0.5
        kind = "signals" if signals else "features"
        if roles["time_col"]:
            why = f"time column '{roles['time_col']}'"
        elif not header:
            why = "numbers only, no header line"
        else:
            why = f"lag-1 correlation of successive rows {_lag1(first, numeric):.2f}"
        notes.append(
            f"layout: {'raw signals' if signals else 'a feature table'} ({why}); --kind overrides"
        )
    options.update(
        {
            k: v
            for k, v in roles.items()
            if v and (kind == "signals" or k in ("user_col", "label_col"))
        }
    )
    if not header:
        options["header"] = False
        options["columns"] = {c: int(c[1:]) for c in [*sorted(used), *numeric]}
    channels = numeric[: 3 * (len(numeric) // 3)] if kind == "signals" else numeric
    if kind == "signals" and not channels:
        raise UsageError(
            f"mudata init: {members[0]} has fewer than 3 numeric columns to use as a sensor: {columns}"
        )
    if kind == "signals":
        options["channels"] = channels
        if len(options.get("members", "")) and len(members) > 1 and not roles["user_col"]:
            notes.append(
                f"recordings: one per file ({len(members)} files); windows never cross one"
            )
    else:
        options["feature_cols"] = channels
    rate, rate_note = (
        _rate(first, roles["time_col"], members[0])
        if kind == "signals" and roles["time_col"]
        else (None, "")
    )
    return Layout(kind, fmt, header, options, channels, rate, notes, rate_note)


# ----------------------------------------------------------------- 4. the entry


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def _toml_key(key: str) -> str:
    return key if re.match(r"^[A-Za-z0-9_-]+$", key) else json.dumps(key)


def _table(
    header: str, values: dict[str, Any], comments: dict[str, str] | None = None
) -> list[str]:
    lines = [header] if header else []
    for key, value in values.items():
        note = f"  # {comments[key]}" if comments and key in comments else ""
        lines.append(f"{_toml_key(key)} = {_toml_value(value)}{note}")
    return lines


def to_toml(data: dict[str, Any], counts: dict[str, int], notes: dict[str, str]) -> str:
    """The entry as TOML, with comments carrying the evidence for each choice."""
    top = {k: v for k, v in data.items() if not isinstance(v, dict | list)}
    licence = data["licence"]
    lines = [
        f"# Drafted by `mudata init` from {notes['from']}. Check every value, edit, then:",
        f"#   mudata register {data['name']}.toml",
        *_table(
            "",
            top,
            {
                "sampling_rate_hz": notes["rate"],
                "min_per_class": "the user filter keeps users with this many rows of every class",
            },
        ),
        'licence = {{ name = "{}", title = "{}" }}'.format(licence["name"], licence["title"])
        + '  # an SPDX id such as "CC-BY-4.0", or the terms as a LicenseRef table',
        "",
        *_table("[reader_options]", data["reader_options"]),
        "",
        *_table("[recipe]", data["recipe"]),
    ]
    for sensor in data.get("sensors", []):
        lines += ["", *_table("[[sensors]]", sensor)]
    for spec in data["classes"]:
        lines += [
            "",
            *_table("[[classes]]", spec, {"name": f"{counts[code_text(spec['code'])]} rows"}),
        ]
    for spec in data["files"]:
        members = spec.get("members", [])
        plain = {k: v for k, v in spec.items() if k != "members"}
        lines += [
            "",
            *_table(
                "[[files]]",
                plain,
                {"hashes": "pinned on first use by mudata init, not published hashes"},
            ),
        ]
        for member in members:
            lines += ["", *_table("[[files.members]]", member)]
    return "\n".join(lines) + "\n"


def _code_value(text: str, numeric: bool) -> str | int:
    if numeric and re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def _skeleton(
    name: str, layout: Layout, collected: Collected, rate: float, min_per_class: int
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": name,
        "title": name,
        "version": "1",
        "homepage": "https://example.org/replace-with-the-dataset-homepage",
        # The registry accepts SPDX ids or LicenseRef terms; the draft cannot know
        # which, so it names the terms as unchecked for the user to replace.
        "licence": {"name": "LicenseRef-unchecked", "title": "replace with the dataset's terms"},
        "citation": "replace with how the dataset's authors ask to be cited",
        "sampling_rate_hz": rate,
        "reader": "long-signals" if layout.kind == "signals" else "feature-table",
        "min_per_class": min_per_class,
        "reader_options": layout.options,
        "recipe": (
            {
                "name": "study-window",
                "window": max(2, round(WINDOW_SECONDS * rate)),
                "smoothing": 10,
            }
            if layout.kind == "signals"
            else {"name": "precomputed"}
        ),
        "files": collected.files,
    }
    if layout.kind == "signals":
        chans = layout.channels
        data["sensors"] = [
            {"name": f"sensor{i // 3 + 1}", "channels": chans[i : i + 3]}
            for i in range(0, len(chans), 3)
        ]
    return data


def _classes(
    entry_data: dict[str, Any], sources: Sources
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every label the reader sees, with its count, as ``[[classes]]`` (code = name)."""
    from mudata.readers import get_reader

    probe = parse_entry(
        {**entry_data, "classes": [{"code": "_a", "name": "_a"}, {"code": "_b", "name": "_b"}]}
    )
    labels = get_reader(probe.reader)(probe, sources).frame["label"]
    numeric = is_numeric_column(labels)
    texts = pd.Series(
        [
            code_text(v) if not (numeric and isinstance(v, str)) else code_text(float(v))
            for v in labels
        ]
    )
    counts = texts.value_counts()
    order = user_sort_key([c for c in counts.index if c != "<blank>"])
    classes = [{"code": _code_value(c, numeric), "name": c} for c in order]
    return classes, {str(k): int(v) for k, v in counts.items()}


def _filter_report(entry: DatasetEntry, sources: Sources) -> tuple[list[str], dict[str, Any]]:
    from mudata.pipeline import labelled_features
    from mudata.userfilter import user_report

    labelled, counts = labelled_features(entry, sources)
    report = user_report(labelled, entry.class_names, entry.min_per_class, dataset=entry.name)
    lines = [
        f"user filter (at least {entry.min_per_class} rows of every class): {len(report.kept)} kept, {len(report.dropped)} dropped"
    ]
    lines.append(f"  kept: {', '.join(report.kept) or '(none)'}")
    lines += [f"  dropped {u}: {why}" for u, why in report.dropped.items()]
    if len(report.kept) < 2:
        lines.append(
            "  fewer than 2 users pass: `mudata fetch` would fail; lower min_per_class or drop rare classes"
        )
    return lines, counts


def draft_entry(
    paths: list[Path],
    name: str,
    *,
    output: Path,
    kind: str = "auto",
    sampling_rate_hz: float | None = None,
    min_per_class: int = 5,
) -> Draft:
    """Draft a complete entry for the files in ``paths``.

    Parameters
    ----------
    paths : list of Path
        One folder, one archive (zip or tar), or plain files.
    name : str
        The dataset's registry name.
    output : Path
        Where the entry will be written; file paths are written relative to its folder.
    kind : {"auto", "signals", "features"}
        Force the layout instead of detecting it.
    sampling_rate_hz : float, optional
        The sampling rate, when there is no time column to estimate it from.
    min_per_class : int
        The user filter's minimum rows per (user, class).

    Returns
    -------
    Draft

    Raises
    ------
    UsageError
        When the files do not reveal a user or a label, or a sampling rate
        is needed and cannot be estimated.
    """
    collected = collect(paths, output.parent)
    try:
        first_member = collected.members[0]
        data = collected.sources.read_bytes(first_member)
        fmt, header = sniff(data, collected.suffix)
        try:
            first = _read(data, fmt, header)
        except (ValueError, OSError) as exc:
            message = (
                f"{first_member}: cannot be read as {fmt} ({type(exc).__name__}: {str(exc)[:200]})"
            )
            raise ParseError(message) from None
        layout = propose_layout(first, fmt, header, collected.members, collected.suffix, kind)
        rate, rate_note = _resolve_rate(layout, sampling_rate_hz)
        entry_data = _skeleton(name, layout, collected, rate, min_per_class)
        classes, counts = _classes(entry_data, collected.sources)
        entry_data["classes"] = classes
        entry = parse_entry(entry_data, source=output)
        filter_lines, _ = _filter_report(entry, collected.sources)
    finally:
        collected.sources.close()
    origin = ", ".join(str(p) for p in paths)
    width = max(len(str(c["code"])) for c in [*classes, {"code": "(blank)"}])
    toml = to_toml(entry_data, counts, {"from": origin, "rate": rate_note})
    report = [
        f"{len(collected.members)} data file(s) in {origin}, sha256 pinned on first use",
        *layout.notes,
        rate_note,
        "classes (rows of raw samples or feature rows):",
        *[f"  {c['code']!s:>{width}}: {counts[code_text(c['code'])]}" for c in classes],
        *(
            [f"  {'(blank)':>{width}}: {counts['<blank>']} (never kept)"]
            if "<blank>" in counts
            else []
        ),
        *filter_lines,
    ]
    return Draft(toml, entry, report)


def _resolve_rate(layout: Layout, given: float | None) -> tuple[float, str]:
    if given is not None:
        note = f"sampling rate: {given} Hz, as given"
        if layout.sampling_rate_hz is not None:
            agree = abs(layout.sampling_rate_hz - given) <= 0.05 * given
            note += " (the time column agrees)" if agree else f"; but {layout.rate_note}"
        return float(given), note
    if layout.sampling_rate_hz is not None:
        return layout.sampling_rate_hz, layout.rate_note
    if layout.kind == "features":
        return 1.0, "sampling rate: not used by a feature table (1 Hz written)"
    message = (
        "mudata init: the files have no time column to estimate the sampling rate from; "
        "give it with --sampling-rate HZ (samples are read in file order at that rate)"
    )
    raise UsageError(message)
