"""``mudata init``: draft a complete registry entry from files a user has.

The draft is a starting point, not a guess hidden from the user: every choice
(files, layout, columns, path pattern, classes, sampling rate, window) is
written into the entry and printed with the evidence for it, and the user
edits the draft before registering it.

Steps, one module each where they grew:

1. :func:`collect` -- the files (a folder, an archive, or plain files);
   documentation and metadata are left out (:mod:`mudata.drafting.selection`), the
   data files hashed and written as *pinned on first use* (``hashes =
   "first-use"``): they prove the files did not change since, not that they
   are the published ones.
2. :func:`sniff` -- CSV (comma, semicolon or tab; decimal point or comma),
   Parquet, whitespace-separated text or MATLAB; compressed or not; with or
   without a header.
3. :func:`propose_layout` -- feature table or raw signals; the role of each
   column (:mod:`mudata.drafting.columns`), or a path pattern holding user and
   label.
4. :func:`draft_entry` -- classes with their counts, the sampling rate
   estimated from time, the recipe, the windows each user and class would
   give (:mod:`mudata.drafting.windows`) and what the user filter would keep;
   the TOML (:mod:`mudata.drafting.toml_text`).

Every byte read for the draft goes through
:class:`~mudata.readers.sources.Sources` with the hashes just taken as pins, as
``mudata fetch`` will read it.
"""

from __future__ import annotations

import io
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from mudata.bounds.archive import ArchiveIndex, sniff_kind
from mudata.bounds.parquet import check_parquet
from mudata.building.labelled import labelled_features
from mudata.building.userfilter import user_report
from mudata.display import shown
from mudata.drafting.advice import INTERNAL_ERRORS, as_advice
from mudata.drafting.annotated_layout import (
    annotation_report,
    named_classes,
    propose_annotated_layout,
)
from mudata.drafting.counters import monotone_channels
from mudata.drafting.labelcheck import label_candidates, per_sample_label
from mudata.drafting.layout import propose_layout
from mudata.drafting.nulls import Flagged, class_runs, null_classes
from mudata.drafting.pathfields import hint
from mudata.drafting.rates import preview_rate
from mudata.drafting.records import Choices, Layout, Sniffed
from mudata.drafting.selection import Selection, format_of, select
from mudata.drafting.shapes import text_shape
from mudata.drafting.toml_text import to_toml
from mudata.drafting.windows import classes_of_too_few_users, window_report
from mudata.errors import EmptyResultError, LimitError, ParseError, Reason
from mudata.errors import MudataUsageError as UsageError
from mudata.files import describe_kind, sha256_file
from mudata.readers import get_reader
from mudata.readers.base import RawTable
from mudata.readers.decode import head
from mudata.readers.delimited import SPREADSHEET_MISSING
from mudata.readers.lines import checked_line_options, prepare_lines
from mudata.readers.matlab import read_mat
from mudata.readers.pins import Pin, Pins
from mudata.readers.sources import Sources
from mudata.records.classes import (
    code_text,
    fold_note,
    folded_codes,
    is_numeric_column,
    match_classes,
    user_names,
    user_sort_key,
)
from mudata.records.entry import DatasetEntry
from mudata.registry.lookup import PLACEHOLDERS, parse_entry

WINDOW_SECONDS = 3  # as HAR70+'s study windows (150 samples at 50 Hz)


@dataclass
class Collected:
    """The user's data files as registry ``files`` specs, and Sources reading them under their pins."""

    files: list[dict[str, Any]]
    sources: Sources
    members: list[str]
    suffix: str
    selection: Selection = field(default_factory=lambda: Selection([]))
    documents: dict[str, str] = field(default_factory=dict)


@dataclass
class Draft:
    """A drafted entry: its TOML text, the parsed entry and the printed report."""

    toml: str
    entry: DatasetEntry
    report: list[str]


# ----------------------------------------------------------------- 1. files

#: Documentation files read for a class legend: text only, at most this many bytes each.
DOC_READ_BYTES = 1 << 18
_DOC_TEXT = (".txt", ".md", ".rst", "")


def _is_text_doc(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in _DOC_TEXT


def _doc_text(data: bytes) -> str:
    return data[:DOC_READ_BYTES].decode("utf-8", "replace")


def _relative(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), base.resolve()).replace(os.sep, "/")
    except ValueError:  # another drive on Windows
        return str(path.resolve())


def _hidden(name: str) -> bool:
    # ".zenodo.json" is not hidden from the selection: it is reported as metadata.
    parts = PurePosixPath(name).parts
    return any((p.startswith(".") and p != parts[-1]) or p == "__MACOSX" for p in parts) or (
        parts[-1].startswith(".") and not parts[-1].endswith(".json")
    )


def _file_head(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return head(fh, path.name)


def _folder_files(folder: Path) -> list[str]:
    """The regular files of ``folder`` (relative names, hidden ones left out).

    A symbolic link (to a file or a folder) or a FIFO, socket or device among
    them is refused, naming each: a link would pin and build whatever it points
    to (another user's rows, ``/proc/self/environ``), and a FIFO would hang.
    """
    names, refused = [], []
    for p in sorted(folder.rglob("*")):  # rglob never descends into a folder link
        name = p.relative_to(folder).as_posix()
        if _hidden(name):
            continue
        mode = os.lstat(p).st_mode
        if stat.S_ISREG(mode):
            names.append(name)
        elif not stat.S_ISDIR(mode):
            refused.append(f"{p} ({describe_kind(mode)})")
    if refused:
        more = f" and {len(refused) - 10} more" if len(refused) > 10 else ""
        message = (
            f"mudata init reads only regular files inside {folder}, and no links; found "
            f"{', '.join(refused[:10])}{more}. Copy the files themselves into the folder."
        )
        raise UsageError(message)
    return names


def _check_names(names: list[str], where: object) -> None:
    """Refuse names a registry entry cannot hold, or could not tell apart, naming them.

    A control character (a line break, an escape) has no place in a member path
    of an entry, and two names equal once Unicode-normalised (``é`` as one code
    point and as ``e`` plus an accent, from two file systems) are one member to
    the readers, which would refuse the draft at ``fetch``.
    """
    odd = [n for n in names if not n.isprintable()]
    if odd:
        message = (
            f"mudata init: {len(odd)} file name(s) in {shown(where, quote=False)} hold control "
            f"or invisible characters a registry entry cannot hold, such as {shown(odd[0])}; "
            f"rename them, or leave them out with --exclude"
        )
        raise UsageError(message)
    seen: dict[str, str] = {}
    for name in names:
        key = unicodedata.normalize("NFC", name)
        if key in seen:
            message = (
                f"mudata init: {shown(seen[key])} and {shown(name)} in {shown(where, quote=False)} "
                f"(code points {seen[key][:200]!a} and {name[:200]!a}) "
                f"are the same name once Unicode-normalised (NFC), so the readers cannot tell "
                f"them apart; rename one of them, or leave one out with --exclude"
            )
            raise UsageError(message)
        seen[key] = name


def _collect_folder(folder: Path, base: Path, choices: Choices) -> Collected:
    names = _folder_files(folder)
    selection = select(
        names,
        lambda n: _file_head(folder / n),
        include=choices.include,
        exclude=choices.exclude,
        where=str(folder),
    )
    members = selection.members
    _check_names(selection.pinned, folder)
    pins = {n: sha256_file(folder / n) for n in selection.pinned}
    spec = {
        "name": folder.name or "data",
        "path": _relative(folder, base),
        "glob": selection.glob,
        "hashes": "first-use",
        "members": [{"path": n, "sha256": h} for n, h in pins.items()],
    }
    source_pins = Pins(
        members={n: Pin(h) for n, h in pins.items()},
        located={n: folder / n for n in selection.pinned},
        label=f"folder {folder}",
        glob=selection.glob,
    )
    files, roots = [spec], [folder]
    root_pins: list[Pins | None] = [source_pins]
    if selection.annotation is not None and selection.annotation.separate:
        # No glob selects the annotation table with the data files: a file of its own.
        path = folder / selection.annotation.member
        digest = sha256_file(path)
        files.append(
            {
                "name": path.name,
                "path": _relative(path, base),
                "sha256": digest,
                "hashes": "first-use",
            }
        )
        roots.append(path)
        root_pins.append(Pins(sha256=digest, label=f"file {path}"))
    documents = {}
    for doc in selection.left_out:
        if _is_text_doc(doc):
            with open(folder / doc, "rb") as fh:
                documents[doc] = _doc_text(fh.read(DOC_READ_BYTES))
    return Collected(
        files, Sources(roots, root_pins), members, selection.suffix, selection, documents
    )


def _collect_archive(archive: Path, kind: str, base: Path, choices: Choices) -> Collected:
    with ArchiveIndex(archive, kind) as index:
        names = [n for n in index.names() if not _hidden(n)]
        selection = select(
            names,
            lambda n: head(io.BytesIO(index.read(n)), n),
            include=choices.include,
            exclude=choices.exclude,
            where=str(archive),
        )
        documents = {
            doc: _doc_text(index.read(doc))
            for doc in selection.left_out
            if _is_text_doc(doc) and doc in index.members and index.size(doc) <= DOC_READ_BYTES
        }
    _check_names(selection.pinned, archive)
    digest = sha256_file(archive)
    # The archive is pinned whole; an annotation table no glob selects with the
    # data files is read from it all the same (the reader's members select the data).
    separate = selection.annotation is not None and selection.annotation.separate
    glob = None if separate else selection.glob
    spec = {
        "name": archive.name,
        "path": _relative(archive, base),
        "sha256": digest,
        **({"glob": glob} if glob else {}),
        "hashes": "first-use",
    }
    sources = Sources([archive], [Pins(sha256=digest, label=f"archive {archive}", glob=glob)])
    return Collected([spec], sources, selection.members, selection.suffix, selection, documents)


def collect(paths: list[Path], base: Path, choices: Choices | None = None) -> Collected:
    """The data files of ``paths`` (one folder, one archive, or plain files), hashed.

    Parameters
    ----------
    paths : list of Path
        What the user has.
    base : Path
        The folder the entry will be written to: paths are written relative to it.
    choices : Choices, optional
        ``include`` and ``exclude`` globs.

    Returns
    -------
    Collected
    """
    choices = choices or Choices()
    paths = [Path(p).expanduser() for p in paths]
    if len(paths) == 1 and paths[0].is_dir():
        return _collect_folder(paths[0], base, choices)
    if len(paths) == 1 and paths[0].is_file() and (kind := sniff_kind(paths[0])):
        return _collect_archive(paths[0], kind, base, choices)
    odd = [str(p) for p in paths if not p.is_file()]
    if odd:
        message = f"mudata init takes one folder, one archive, or regular files; not {odd}"
        raise UsageError(message)
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        message = f"mudata init: two files share a name ({sorted(n for n in names if names.count(n) > 1)}); put them in one folder and pass the folder"
        raise UsageError(message)
    by_name = dict(zip(names, paths, strict=True))
    selection = select(
        names,
        lambda n: _file_head(by_name[n]),
        include=choices.include,
        exclude=choices.exclude,
        where=str(paths[0].parent),
    )
    chosen = [by_name[n] for n in selection.pinned]
    digests = [sha256_file(p) for p in chosen]
    files = [
        {"name": p.name, "path": _relative(p, base), "sha256": d, "hashes": "first-use"}
        for p, d in zip(chosen, digests, strict=True)
    ]
    pins: list[Pins | None] = [
        Pins(sha256=d, label=f"file {p}") for p, d in zip(chosen, digests, strict=True)
    ]
    return Collected(files, Sources(chosen, pins), selection.members, selection.suffix, selection)


# ----------------------------------------------------------------- 2. format


def sniff(data: bytes, suffix: str) -> Sniffed:
    """How a (decompressed) data file is written, from its suffix and first lines:
    format, separator, decimal mark, header, and any preamble or line terminator
    (:func:`mudata.drafting.shapes.text_shape`)."""
    fmt = format_of(suffix) or "text"
    if fmt == "parquet" or data[:4] == b"PAR1":
        return Sniffed("parquet", True)
    if fmt == "mat":
        return Sniffed("mat", False)
    shape = text_shape(data[: 1 << 16].decode("utf-8", "replace"))
    fmt = "text" if shape.separator is None else "csv"
    return Sniffed(fmt, shape.header, shape.separator, shape.decimal, shape.options(), shape.notes)


def _read(data: bytes, sniffed: Sniffed, member: str) -> pd.DataFrame:
    if sniffed.fmt == "parquet":
        check_parquet(data, member)
        return pd.read_parquet(io.BytesIO(data))
    if sniffed.fmt == "mat":
        table = read_mat(data, member)
    else:
        if sniffed.lines:
            lines = checked_line_options(sniffed.lines, "mudata init")
            text = data.decode("utf-8", "replace")
            data = prepare_lines(text, member, lines, sniffed.separator).encode()
        table = pd.read_csv(
            io.BytesIO(data),
            sep=sniffed.separator or r"\s+",
            decimal=sniffed.decimal,
            header=0 if sniffed.header else None,
            na_values=list(SPREADSHEET_MISSING),
            low_memory=False,  # typed at once: no mixed-type column, no DtypeWarning
        )
    if not sniffed.header:
        table.columns = [f"c{i + 1}" for i in range(table.shape[1])]
    return table


# ----------------------------------------------------------------- 4. the entry


def _code_value(text: str, numeric: bool) -> str | int:
    if numeric and re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def _skeleton(
    name: str, layout: Layout, collected: Collected, rate: float, min_per_class: int, window: float
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": name,
        "title": name,
        "version": "1",
        "homepage": PLACEHOLDERS["homepage"],
        # The registry accepts SPDX ids or LicenseRef terms; the draft cannot know
        # which, so it names the terms as unchecked for the user to replace
        # (`mudata register` refuses them until then).
        "licence": {"name": PLACEHOLDERS["licence"], "title": PLACEHOLDERS["licence.title"]},
        "citation": PLACEHOLDERS["citation"],
        "sampling_rate_hz": rate,
        "reader": layout.reader
        or ("long-signals" if layout.kind == "signals" else "feature-table"),
        "min_per_class": min_per_class,
        "reader_options": layout.options,
        "recipe": (
            {
                "name": "study-window",
                "window": max(2, round(window * rate)),
                "smoothing": 10,
            }
            if layout.kind == "signals"
            else {"name": "precomputed"}
        ),
        "files": collected.files,
    }
    if layout.kind == "signals":
        data["sensors"] = [group.as_entry() for group in layout.sensors]
    return data


def _classes(
    entry_data: dict[str, Any], sources: Sources
) -> tuple[list[dict[str, Any]], dict[str, int], RawTable, dict[str, list[str]]]:
    """Every label the reader sees, with its count, as ``[[classes]]`` (code = name);
    the reader's table (the reader reads the same whatever the classes); and the labels
    written differently that one code stands for (:func:`mudata.records.classes.folded_codes`)."""
    probe = parse_entry(
        {**entry_data, "classes": [{"code": "_a", "name": "_a"}, {"code": "_b", "name": "_b"}]}
    )
    raw = get_reader(probe.reader)(probe, sources)
    labels = raw.frame["label"]
    numeric = is_numeric_column(labels)
    # Each distinct label named once (a release has millions of rows, a few labels).
    codes, uniques = pd.factorize(labels)
    names = [
        code_text(v) if not (numeric and isinstance(v, str)) else code_text(float(v))
        for v in uniques
    ]
    texts = pd.Series(np.array([*names, code_text(None)], dtype=object)[codes])
    counts = texts.value_counts()
    order = user_sort_key([c for c in counts.index if c != "<blank>"])
    classes = [{"code": _code_value(c, numeric), "name": c} for c in order]
    folded = folded_codes(uniques, numeric)
    return classes, {str(k): int(v) for k, v in counts.items()}, raw, folded


def _filter_report(
    entry: DatasetEntry, sources: Sources, raw: RawTable
) -> tuple[list[str], pd.DataFrame]:
    """The user filter's verdict on the feature rows the build makes, and those rows."""
    try:
        labelled, _ = labelled_features(entry, sources, raw=raw)
    except EmptyResultError as exc:
        if exc.reason is not None or not entry.recipe.window:
            raise
        raise _no_window(entry, raw, exc) from exc
    report = user_report(labelled, entry.class_names, entry.min_per_class, dataset=entry.name)
    unit = "windows" if entry.recipe.window else "rows"
    # A user all of whose windows (or rows) were dropped is in no feature row: still named.
    read = [str(u) for u in dict.fromkeys(user_names(raw.frame["userid"]))]
    for user in [u for u in read if u not in report.kept + list(report.dropped)]:
        report.dropped[user] = f"no {unit} of a kept class left"
    report.dropped = {u: report.dropped[u] for u in user_sort_key(list(report.dropped))}
    lines = [
        f"user filter (at least {entry.min_per_class} {unit} of every class): {len(report.kept)} kept, {len(report.dropped)} dropped"
    ]
    lines.append(f"  kept: {', '.join(report.kept) or '(none)'}")
    lines += [f"  dropped {u}: {why}" for u, why in report.dropped.items()]
    if len(report.kept) < 2:
        lines.append(
            "  fewer than 2 users pass: `mudata fetch` would fail; lower min_per_class or drop rare classes"
        )
    return lines, labelled[["userid", "label"]]


def _check_label(
    layout: Layout, frame: pd.DataFrame, first: pd.DataFrame, members: list[str]
) -> None:
    """Refuse a label column that takes a class per sample, naming the columns that look like one.

    Raises
    ------
    UsageError
        The label column (given or found) changes at nearly every row, takes
        nearly as many classes as a recording has rows, or holds fractional
        numbers: windows of it would each hold many classes.
    """
    column = layout.roles.label
    if layout.kind != "signals" or column is None or "label" not in frame.columns:
        return
    why = per_sample_label(frame, str(column))
    if why is None:
        return
    roles = {layout.roles.user, layout.roles.time, layout.roles.recording, column}
    candidates = label_candidates(first, {str(r) for r in roles if r is not None})
    if candidates:
        shown = ", ".join(repr(c) for c in candidates[:5])
        advice = (
            f"name the label column with --label COL; columns that hold a label's runs: {shown}"
        )
    else:
        # The user too when the paths give it: a template of the label alone would
        # give the user's token to the label.
        template = hint(members, ("label",) if layout.roles.user else ("user", "label"))
        advice = (
            "no column holds a label's runs of rows: give where the label sits in the "
            f"file names, e.g. --path-pattern '{template}'"
        )
    raise UsageError(f"mudata init: {why}; {advice}")


def _no_window(entry: DatasetEntry, raw: RawTable, exc: EmptyResultError) -> Exception:
    """The build made no window of any recording: the window is what to change, and the
    preview's counts (the recipe's, on the reader's samples) say to which length."""
    window = entry.recipe.window or 0
    rate = entry.sampling_rate_hz
    report = window_report(
        _as_built(raw.frame, entry),
        window,
        rate,
        entry.class_names,
        entry.min_per_class,
        missing=missing_channels(raw.frame, entry),
    )
    if report.proposed_seconds is None:
        return EmptyResultError(str(exc), reason=Reason("empty", "recipe.window"))
    advised = next(line.strip() for line in report.lines if "--window" in line)
    lost = next((line for line in report.lines if "dropped for missing values" in line), None)
    why = lost or "no recording of a class is that long"
    return UsageError(
        f"mudata init: the build makes no window of {window / rate:g} s ({why}); {advised}"
    )


def _as_built(frame: pd.DataFrame, entry: DatasetEntry) -> pd.DataFrame:
    """The reader's samples with the build's users and classes: ``userid`` named by
    :func:`mudata.records.classes.user_names`, ``label`` the class name the build gives
    (:func:`mudata.records.classes.match_classes`; ``01`` and ``1`` are one class in a
    numeric column), samples of classes not kept dropped. So that windows
    counted on it are the build's, whatever way a code is written; ``missing``
    marks the samples with a missing value in a channel (:func:`missing_channels`),
    whose windows the build drops."""
    matched = match_classes(frame["label"], entry, check_seen=False)
    keep = matched.rank >= 0
    columns = ["userid", "label"] + (["recording"] if "recording" in frame.columns else [])
    named = frame.loc[keep, columns].reset_index(drop=True)
    named["userid"] = user_names(named["userid"])
    named["label"] = matched.names[keep].astype(str)
    gaps = missing_channels(frame, entry)
    if gaps:
        named["missing"] = frame.loc[keep, gaps].isna().any(axis=1).to_numpy()
        named.attrs["smoothing"] = int(entry.recipe.smoothing)  # a gap spreads over the span
    return named


def missing_channels(frame: pd.DataFrame, entry: DatasetEntry) -> list[str]:
    """The channels of ``entry``'s sensors with a missing value in ``frame``."""
    channels = [c for s in entry.sensors for c in s.channels if c in frame.columns]
    return [c for c in dict.fromkeys(channels) if frame[c].isna().any()]


def draft_entry(
    paths: list[Path],
    name: str,
    *,
    output: Path,
    kind: str = "auto",
    sampling_rate_hz: float | None = None,
    min_per_class: int = 5,
    choices: Choices | None = None,
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
        The user filter's minimum rows (windows) per (user, class).
    choices : Choices, optional
        What the files cannot say: columns, path pattern, files, window.

    Returns
    -------
    Draft

    Raises
    ------
    UsageError
        When the files do not reveal a user or a label, an option names a
        column that does not exist, or a sampling rate is needed and cannot
        be estimated.
    """
    choices = choices or Choices()
    collected = collect(paths, output.parent, choices)
    try:
        sniffed, first = _first_table(collected)
        window = choices.window if choices.window is not None else WINDOW_SECONDS

        def drafted(ruled_out: dict[str, str] | None = None) -> tuple:
            if collected.selection.annotation is not None and kind != "features":
                layout = propose_annotated_layout(
                    first, sniffed, collected.members, collected.selection, choices, ruled_out
                )
            else:
                layout = propose_layout(
                    first, sniffed, collected.members, collected.selection, kind, choices, ruled_out
                )
            rate, rate_note, missing = _resolve_rate(layout, sampling_rate_hz, collected.documents)
            pending[:] = [missing] if missing else []
            entry_data = _skeleton(name, layout, collected, rate, min_per_class, window)
            return layout, rate, rate_note, entry_data, *_classes(entry_data, collected.sources)

        # No rate in the files: the draft is previewed at a proposed rate, and init
        # refuses at the end, naming the rate and what the preview found (a window).
        pending: list[str] = []
        # The readers and the registry check the draft in an entry's words; the
        # user of init has options, so each refusal is told as the option to give.
        try:
            layout, rate, rate_note, entry_data, classes, counts, raw, folded = drafted()
            if layout.kind == "signals" and not choices.channels:
                # The first file said these were signals; a channel that never goes back
                # within any recording of all the files is a time or a counter.
                late = monotone_channels(raw.frame, layout.channels)
                if late:
                    layout, rate, rate_note, entry_data, classes, counts, raw, folded = drafted(
                        late
                    )
            _check_label(layout, raw.frame, first, collected.members)
            classes = named_classes(classes, collected.selection.annotation)
            left_out = _left_out_classes(classes, counts, collected.documents, choices, raw.frame)
            all_classes = classes
            classes = [c for c in classes if code_text(c["code"]) not in left_out]
            entry_data["classes"] = classes
            entry = parse_entry(entry_data, source=output)
            few = _classes_of_too_few_users(raw.frame, entry, rate, classes, choices)
            if few:
                left_out.update(few)
                classes = [c for c in classes if code_text(c["code"]) not in left_out]
                entry_data["classes"] = classes
                entry = parse_entry(entry_data, source=output)
            filter_lines, built = _filter_report(entry, collected.sources, raw)
        except INTERNAL_ERRORS as exc:
            raise _with_rate(pending, as_advice(exc)) from exc
        except UsageError as exc:  # init's own advice: with the rate when it was previewed
            if pending:
                raise _with_rate(pending, exc) from exc
            raise
        frame = raw.frame
    finally:
        collected.sources.close()
    window_lines = []
    if entry.recipe.window:
        window_lines = window_report(
            _as_built(frame, entry),
            entry.recipe.window,
            rate,
            entry.class_names,
            min_per_class,
            built=built,
            missing=missing_channels(frame, entry),
        ).lines
    _refuse_unrated(pending, filter_lines, window_lines)
    repeats = frame.attrs.get("time_repeats", {})
    origin = ", ".join(str(p) for p in paths)
    width = max(len(str(c["code"])) for c in [*all_classes, {"code": "(blank)"}])
    evidence = [*collected.selection.report(), *layout.roles.report(len(first))]
    toml = to_toml(
        entry_data,
        counts,
        {
            "from": origin,
            "rate": rate_note,
            "options": layout.option_notes,
            "evidence": evidence,
            "sensors": [group.why for group in layout.sensors],
            "left_out": [
                {"code": c["code"], "name": c["name"], "why": left_out[code_text(c["code"])]}
                for c in all_classes
                if code_text(c["code"]) in left_out
            ],
        },
    )
    report = [
        f"{len(collected.members)} data file(s) in {origin}, sha256 pinned on first use",
        *collected.selection.report(),
        *layout.notes,
        *layout.roles.report(len(first)),  # also in the draft, as comments
        rate_note,
        *(
            [
                f"repeated times: {sum(repeats.values())} samples share the time of the previous "
                f"one in {len(repeats)} file(s); kept in file order"
            ]
            if repeats
            else []
        ),
        *annotation_report(frame),
        "classes (rows of raw samples or feature rows):",
        *[
            f"  {c['code']!s:>{width}}: {counts[code_text(c['code'])]}"
            + _left_out_note(left_out.get(code_text(c["code"])), c["code"])
            for c in all_classes
        ],
        *(
            [f"  {'(blank)':>{width}}: {counts['<blank>']} (never kept)"]
            if "<blank>" in counts
            else []
        ),
        *[f"  note: {line}" for line in fold_note(folded)],
        *window_lines,
        *filter_lines,
    ]
    return Draft(toml, entry, report)


def _given_codes(given: tuple[str, ...], seen: list[str], option: str) -> list[str]:
    """The codes named by ``--drop-class``/``--keep-class``, as the draft writes them."""
    codes = []
    for code in given:
        text = code_text(_code_value(code.strip(), True))
        if text not in seen:
            shown_codes = ", ".join(seen)
            message = (
                f"mudata init: {option} {code!r}: no class has this code; the classes the "
                f"files hold: {shown_codes}"
            )
            raise UsageError(message)
        codes.append(text)
    return codes


def _left_out_classes(
    classes: list[dict[str, Any]],
    counts: dict[str, int],
    documents: dict[str, str],
    choices: Choices,
    frame: pd.DataFrame | None = None,
) -> dict[str, str]:
    """Code (as text) to why the draft leaves the class out of ``[[classes]]``.

    Flagged classes (:func:`mudata.drafting.nulls.null_classes`) are left out
    unless ``--keep-class`` names them; ``--drop-class`` leaves out any other.
    """
    seen = [code_text(c["code"]) for c in classes]
    keep = _given_codes(choices.keep_class, seen, "--keep-class")
    drop = _given_codes(choices.drop_class, seen, "--drop-class")
    both = sorted(set(keep) & set(drop))
    if both:
        message = f"mudata init: class {both[0]} is given to both --keep-class and --drop-class"
        raise UsageError(message)
    kept_counts = {code: counts[code] for code in seen}
    # The reader's samples in file order: the runs of each class, per recording.
    runs = class_runs(frame["label"], frame.get("recording")) if frame is not None else None
    flagged: list[Flagged] = null_classes(kept_counts, documents, runs)
    left_out = {f.code: f.reason for f in flagged if f.code not in keep}
    if len(set(seen) - set(left_out)) < 2:
        # A guess that would leave no two classes to tell apart is not taken
        # (a two-class release whose code 0 holds most rows is not a null class);
        # only what the user asked for can then refuse the draft.
        left_out = {}
    left_out.update(dict.fromkeys(drop, "--drop-class"))
    if len(seen) - len(left_out) < 2:
        message = (
            f"mudata init: leaving out class(es) {', '.join(left_out)} keeps fewer than 2 "
            f"classes of {', '.join(seen)}; keep one with --keep-class CODE"
        )
        raise UsageError(message)
    return left_out


#: How the reason of a class left out by :func:`_classes_of_too_few_users` begins.
FEW_USERS = "fewer than 2 users have"


def _classes_of_too_few_users(
    frame: pd.DataFrame,
    entry: DatasetEntry,
    rate: float,
    classes: list[dict[str, Any]],
    choices: Choices,
) -> dict[str, str]:
    """Code (as text) to why: the classes no window lets 2 users keep.

    The user filter keeps a user only with ``min_per_class`` windows of every
    class, and the build needs 2 users: a class that fewer than 2 users have
    enough windows of, even of 0.5 s (:func:`classes_of_too_few_users`),
    makes every table fail, whatever the window. Such classes are left out
    (``--keep-class`` keeps one), if at least 2 classes remain; an activity
    that one volunteer alone recorded cannot be tested on another user.
    """
    if not entry.recipe.window or entry.min_per_class < 1:
        return {}
    names = {c["name"]: code_text(c["code"]) for c in classes}
    keep = set(_given_codes(choices.keep_class, list(names.values()), "--keep-class"))
    few = classes_of_too_few_users(
        _as_built(frame, entry), rate, entry.class_names, entry.min_per_class
    )
    few = {name: users for name, users in few.items() if names[name] not in keep}
    if not few or len(classes) - len(few) < 2:
        return {}
    return {
        names[name]: (
            f"{FEW_USERS} {entry.min_per_class} windows of it, even of 0.5 s "
            f"({'only ' + users[0] if users else 'no user'}): no window lets 2 users pass "
            f"the filter with it"
        )
        for name, users in few.items()
    }


def _left_out_note(reason: str | None, code: object) -> str:
    if reason is None:
        return ""
    if reason == "--drop-class":
        return " (left out: --drop-class)"
    if reason.startswith(FEW_USERS):
        return f" (left out: {reason}; --keep-class {code} keeps it)"
    return f" (left out, not an activity: {reason}; --keep-class {code} keeps it)"


def _first_table(collected: Collected) -> tuple[Sniffed, pd.DataFrame]:
    """How the first data file is written, and its table."""
    first_member = collected.members[0]
    data = collected.sources.read_decoded(first_member)
    sniffed = sniff(data, collected.suffix)
    try:
        return sniffed, _read(data, sniffed, first_member)
    except (ValueError, OSError) as exc:
        if isinstance(exc, ParseError | LimitError):
            raise
        message = f"{first_member}: cannot be read as {sniffed.fmt} ({type(exc).__name__}: {str(exc)[:200]})"
        raise ParseError(message) from None


def _with_rate(pending: list[str], advice: UsageError) -> UsageError:
    """``advice``, after the refusal of the rate when the draft was previewed at one."""
    return _unrated(pending, [str(advice)]) or advice


def _unrated(pending: list[str], found: list[str]) -> UsageError | None:
    """The refusal of a draft previewed at a proposed rate (``pending`` holds its first
    line), with what the preview ``found``; None when the rate was known."""
    return UsageError("\n".join([pending[0], *found])) if pending else None


def _refuse_unrated(pending: list[str], filter_lines: list[str], window_lines: list[str]) -> None:
    """Refuse a draft previewed at a proposed rate, naming the filter's verdict and the
    windows the preview advises: the rate and the window in one message."""
    advised = [f"  {line.strip()}" for line in window_lines if "--window" in line]
    refusal = _unrated(pending, [*(f"  {line}" for line in filter_lines[:1]), *advised])
    if refusal is not None:
        raise refusal


def _resolve_rate(
    layout: Layout, given: float | None, documents: dict[str, str]
) -> tuple[float, str, str | None]:
    """The rate, its note, and, when neither the files nor the user give one, the refusal
    to make once the draft is previewed at the rate returned (:mod:`mudata.drafting.rates`)."""
    if given is not None:
        note = f"sampling rate: {given} Hz, as given"
        if layout.sampling_rate_hz is not None:
            agree = abs(layout.sampling_rate_hz - given) <= 0.05 * given
            note += " (the time column agrees)" if agree else f"; but {layout.rate_note}"
        return float(given), note, None
    if layout.sampling_rate_hz is not None:
        return layout.sampling_rate_hz, layout.rate_note, None
    if layout.kind == "features":
        return 1.0, "sampling rate: not used by a feature table (1 Hz written)", None
    rate, source = preview_rate(documents)
    message = (
        "mudata init: the files have no time column to estimate the sampling rate from; "
        "give it with --sampling-rate HZ (samples are read in file order at that rate). "
        f"{source[0].upper()}{source[1:]}; previewed at --sampling-rate {rate:g}:"
    )
    return rate, f"sampling rate: {rate:g} Hz, previewed", message


__all__ = [
    "DOC_READ_BYTES",
    "FEW_USERS",
    "WINDOW_SECONDS",
    "Choices",
    "Collected",
    "Draft",
    "collect",
    "draft_entry",
    "sniff",
]
