"""``mudata init``: the build previewed on the reader's samples, as the draft reports it.

Owns what the draft learns by running the build's steps on what the reader
read: the samples as the build names users and classes (:func:`as_built`),
the channels with missing values, the user filter's verdict on the feature
rows the build makes, the refusal of a label column that takes a class per
sample, and the window to advise when the build makes none.
"""

from __future__ import annotations

import pandas as pd

from mudata.building.labelled import labelled_features
from mudata.building.userfilter import user_report
from mudata.drafting.labelcheck import label_candidates, per_sample_label
from mudata.drafting.pathfields import hint
from mudata.drafting.records import Layout
from mudata.drafting.windows import window_report
from mudata.errors import EmptyResultError, Reason
from mudata.errors import MudataUsageError as UsageError
from mudata.readers.base import RawTable
from mudata.readers.sources import Sources
from mudata.records.classes import match_classes, user_names, user_sort_key
from mudata.records.entry import DatasetEntry

__all__ = ["as_built", "check_label", "filter_report", "missing_channels"]


def filter_report(
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


def check_label(
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


def _per_sample_key(frame: pd.DataFrame, entry: DatasetEntry) -> str | None:
    """Why no window can be made when the user or recording column takes a new value
    every few rows (a signal or a time named as one), or None.

    Fewer than 10 rows a value on average: no window of a recording that short
    is worth a feature row, and a column of users or recordings is not that fine.
    """
    rows = len(frame)
    for key, role in (("userid", "user"), ("recording", "recording")):
        if key not in frame.columns or rows < 20:
            continue
        values = int(frame[key].nunique())
        if values > rows / 10:
            column = entry.reader_options.get(f"{role}_col")
            named = f"column {column!r}" if isinstance(column, str) else "column"
            return (
                f"the {role} {named} takes {values:,} values in {rows:,} rows, a new {role} "
                f"every {rows / values:.1f} rows, so no {role} holds a window's rows; name the "
                f"column that holds a {role}'s id with --{role} COL"
            )
    return None


def _no_window(entry: DatasetEntry, raw: RawTable, exc: EmptyResultError) -> Exception:
    """The build made no window of any recording: the window is what to change, and the
    preview's counts (the recipe's, on the reader's samples) say to which length."""
    window = entry.recipe.window or 0
    rate = entry.sampling_rate_hz
    per_sample = _per_sample_key(raw.frame, entry)
    if per_sample is not None:
        return UsageError(f"mudata init: the build makes no window: {per_sample}")
    report = window_report(
        as_built(raw.frame, entry),
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


def as_built(frame: pd.DataFrame, entry: DatasetEntry) -> pd.DataFrame:
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
    # Object text, not numpy's fixed-width str: one 100,000-character class name
    # made every row 100,000 characters wide (minutes and gigabytes).
    named["label"] = matched.names[keep]
    gaps = missing_channels(frame, entry)
    if gaps:
        named["missing"] = frame.loc[keep, gaps].isna().any(axis=1).to_numpy()
        named.attrs["smoothing"] = int(entry.recipe.smoothing)  # a gap spreads over the span
    return named


def missing_channels(frame: pd.DataFrame, entry: DatasetEntry) -> list[str]:
    """The channels of ``entry``'s sensors with a missing value in ``frame``."""
    channels = [c for s in entry.sensors for c in s.channels if c in frame.columns]
    return [c for c in dict.fromkeys(channels) if frame[c].isna().any()]
