"""``mudata init``: draft a complete registry entry from files a user has.

The draft is a starting point, not a guess hidden from the user: every choice
(files, layout, columns, path pattern, classes, sampling rate, window) is
written into the entry and printed with the evidence for it, and the user
edits the draft before registering it.

Steps, one module each where they grew:

1. :func:`~mudata.drafting.collect.collect` -- the files (a folder, an archive, or plain files);
   documentation and metadata are left out (:mod:`mudata.drafting.selection`), the
   data files hashed and written as *pinned on first use* (``hashes =
   "first-use"``): they prove the files did not change since, not that they
   are the published ones.
2. :func:`~mudata.drafting.first_table.sniff` -- CSV (comma, semicolon or tab; decimal point or comma),
   Parquet, whitespace-separated text or MATLAB; compressed or not; with or
   without a header.
3. :func:`~mudata.drafting.layout.propose_layout` -- feature table or raw signals; the role of each
   column (:mod:`mudata.drafting.columns`), or a path pattern holding user and
   label; or feature tables whose labels and users are in side files
   (:func:`~mudata.drafting.aligned_layout.aligned_layout`).
4. :func:`draft_entry` -- classes with their counts and those left out
   (:mod:`mudata.drafting.class_choice`), the sampling rate estimated from
   time (:mod:`mudata.drafting.rate_choice`), the recipe, the windows each user and class would
   give (:mod:`mudata.drafting.windows`) and what the user filter would keep
   (:mod:`mudata.drafting.preview`);
   the TOML (:mod:`mudata.drafting.toml_text`).

Every byte read for the draft goes through
:class:`~mudata.readers.sources.Sources` with the hashes just taken as pins, as
``mudata fetch`` will read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mudata.drafting.advice import INTERNAL_ERRORS, as_advice
from mudata.drafting.aligned_layout import aligned_layout, legend_names
from mudata.drafting.annotated_layout import (
    annotation_report,
    named_classes,
    propose_annotated_layout,
)
from mudata.drafting.class_choice import (
    classes_of_few_users,
    drafted_classes,
    left_out_classes,
    left_out_note,
)
from mudata.drafting.collect import Collected, collect
from mudata.drafting.counters import monotone_channels
from mudata.drafting.first_table import first_table
from mudata.drafting.layout import propose_layout
from mudata.drafting.preview import as_built, check_label, filter_report, missing_channels
from mudata.drafting.rate_choice import refuse_unrated, resolve_rate, with_rate
from mudata.drafting.records import Choices, Layout
from mudata.drafting.toml_text import to_toml
from mudata.drafting.windows import window_report
from mudata.errors import MudataUsageError as UsageError
from mudata.records.classes import code_text, fold_note
from mudata.records.entry import DatasetEntry
from mudata.registry.lookup import PLACEHOLDERS, parse_entry

__all__ = ["WINDOW_SECONDS", "Draft", "draft_entry"]

WINDOW_SECONDS = 3  # as HAR70+'s study windows (150 samples at 50 Hz)


@dataclass
class Draft:
    """A drafted entry: its TOML text, the parsed entry and the printed report."""

    toml: str
    entry: DatasetEntry
    report: list[str]


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
    collected = collect(paths, output.parent, choices, aligned=kind != "signals")
    aligned = collected.aligned
    try:
        sniffed, first = first_table(collected)
        window = choices.window if choices.window is not None else WINDOW_SECONDS

        def drafted(ruled_out: dict[str, str] | None = None) -> tuple[Any, ...]:
            if aligned is not None:
                layout = aligned_layout(aligned)
            elif collected.selection.annotation is not None and kind != "features":
                layout = propose_annotated_layout(
                    first, sniffed, collected.members, collected.selection, choices, ruled_out
                )
            else:
                layout = propose_layout(
                    first, sniffed, collected.members, collected.selection, kind, choices, ruled_out
                )
            rate, rate_note, missing = resolve_rate(layout, sampling_rate_hz, collected.documents)
            pending[:] = [missing] if missing else []
            entry_data = _skeleton(name, layout, collected, rate, min_per_class, window)
            return (
                layout,
                rate,
                rate_note,
                entry_data,
                *drafted_classes(entry_data, collected.sources),
            )

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
            check_label(layout, raw.frame, first, collected.members)
            classes = named_classes(classes, collected.selection.annotation)
            classes = legend_names(classes, aligned)
            left_out = left_out_classes(classes, counts, collected.documents, choices, raw.frame)
            all_classes = classes
            classes = [c for c in classes if code_text(c["code"]) not in left_out]
            entry_data["classes"] = classes
            entry = parse_entry(entry_data, source=output)
            few = classes_of_few_users(raw.frame, entry, rate, classes, choices)
            if few:
                left_out.update(few)
                classes = [c for c in classes if code_text(c["code"]) not in left_out]
                entry_data["classes"] = classes
                entry = parse_entry(entry_data, source=output)
            filter_lines, built = filter_report(entry, collected.sources, raw)
        except INTERNAL_ERRORS as exc:
            raise with_rate(pending, as_advice(exc)) from exc
        except UsageError as exc:  # init's own advice: with the rate when it was previewed
            if pending:
                raise with_rate(pending, exc) from exc
            raise
        frame = raw.frame
    finally:
        collected.sources.close()
    window_lines = []
    if entry.recipe.window:
        window_lines = window_report(
            as_built(frame, entry),
            entry.recipe.window,
            rate,
            entry.class_names,
            min_per_class,
            built=built,
            missing=missing_channels(frame, entry),
        ).lines
    refuse_unrated(pending, filter_lines, window_lines)
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
        _pinned_line(collected, origin),
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
            + left_out_note(left_out.get(code_text(c["code"])), c["code"])
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


def _pinned_line(collected: Collected, origin: str) -> str:
    """The report's first line: the data files found, and what the draft pins.

    The pins can cover more than the data files: an archive is pinned whole,
    and feature tables are pinned with the side files and every file beside
    them under the one glob (a folder of raw windows included).
    """
    data = f"{len(collected.members)} data file(s) in {origin}"
    pinned = sum(len(spec.get("members") or []) or 1 for spec in collected.files)
    if pinned == len(collected.members):
        return f"{data}, sha256 pinned on first use"
    if len(collected.files) == 1 and "sha256" in collected.files[0]:
        return f"{data}; the archive's own sha256 pinned on first use"
    return f"{data}; sha256 of {pinned} file(s) pinned on first use (the data files and those read with them)"
