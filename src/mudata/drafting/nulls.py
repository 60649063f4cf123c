"""``mudata init``, step 4b: classes that are not activities (null, unmarked, undocumented).

Many releases label the samples between activities with a code of their own:
``0`` ("null", "unmarked data", "not part of the experiment", "transient
activities"), ``transition``, ``unknown``, ``other``. Kept as a class, such a
code is usually the largest one, and it decides the window and calibration
checks; a study drops it. A class is flagged here when

1. its code or the name the documentation gives it says so (:data:`NULL_NAMES`):
   in a legend of the codes, one a line (``0 = unmarked data``) or several on
   one line (``Annotations: 0: not part of the experiment, 1: experiment, 2:
   freeze``), or in a single mention (``0 = transient/null/other``, ``Label (0
   for the null class)``);
2. its code is ``0`` and it holds more than half of the labelled rows;
3. the documentation has a legend of the codes (``1: Walking``, ``2 = Standing``,
   at least two of them matching codes in the data) and leaves it out, while
   documenting at least two thirds of the codes in the data;
4. its code is ``0``, the other codes are positive numbers, and its runs lie
   between the runs of other classes within the recordings, as the
   transitions between activities do (:func:`interleaved`): at least two of
   its runs sit between two activities, and at least half the changes from
   one activity to another pass through it. A numbered activity recorded in
   a session of its own (a file per activity) is never interleaved so.

The draft leaves flagged classes out of ``[[classes]]`` (``mudata fetch`` drops
the rows of codes the entry does not list, and counts them), says why for
each, and names the option that keeps it (``--keep-class CODE``);
``--drop-class CODE`` drops a class init did not flag.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mudata.records.classes import code_text

__all__ = ["NULL_NAMES", "Flagged", "class_runs", "interleaved", "legend", "null_classes"]

#: Names of classes that mark "no activity" rather than one.
NULL_NAMES = re.compile(
    r"(?<![a-z])(null|none|nothing|unmarked|unlabell?ed|not labell?ed|no label|unknown|"
    r"undefined|unclassified|transitions?|transitional|transients?|other|others|misc|"
    r"no activity|not an activity|void|background|discard(ed)?|"
    r"not part of (the |an? )?(experiment|protocol|study|recording|session|trial)s?|"
    r"outside (of )?(the |an? )?(experiment|protocol|study|recording|session|trial)s?)"
    r"(?![a-z])",
    re.IGNORECASE,
)
#: One entry of a legend inside a line: a code after the line's start, a space, a
#: comma, a semicolon or a bracket, then ``:``, ``=`` or a word saying so, then a name
#: up to the next entry or a closing bracket (``0: not part of the experiment, 1:
#: experiment``; ``Label (0 for the null class)``).
_SAYS = r"(?:\s*[:=]\s*|\s+[-\u2013]\s+|\s+(?:for|means|denotes|marks)\s+)"
_INLINE_ENTRY = re.compile(
    rf"(?:^|(?<=[\s,;(\[]))(?P<code>\d{{1,3}}){_SAYS}(?P<name>[A-Za-z].*?)"
    rf"(?=\s*[,;]?\s*\(?\d{{1,3}}{_SAYS}|\s*[;\])]|\s*$)"
)
#: Runs of the null code between two activities, at the least, for rule 4.
MIN_BETWEEN = 2
#: One legend line of a documentation file: a code, a separator, a name
#: (``1: Working at Computer``, ``--- 2 - Standing``, ``0 = unmarked data``).
_LEGEND_LINE = re.compile(
    r"^[\s\-*#>|.]*(?P<code>[A-Za-z]?\d{1,3}|[A-Za-z])\s*[:=)\-\u2013|]\s*(?P<name>[A-Za-z].{1,80}?)\s*$"
)


@dataclass(frozen=True)
class Flagged:
    """A class the draft proposes to drop, with the evidence."""

    code: str
    rows: int
    reason: str


def legend(documents: dict[str, str]) -> tuple[dict[str, str], str | None]:
    """The codes the documentation names, and the file naming them.

    Parameters
    ----------
    documents : dict of str to str
        Documentation file name to its text.

    Returns
    -------
    (dict of str to str, str or None)
        Code to name from the longest legend of the documentation (at least
        two entries, one a line or on one line), and its file; empty and None
        when none has one.
    """
    best: dict[str, str] = {}
    source = None
    for found, name in _legends(documents):
        if len(found) >= 2 and len(found) > len(best):
            best, source = found, name
    return best, source


def _inline_entries(text: str) -> list[tuple[str, str]]:
    """The ``(code, name)`` entries written inside the lines of ``text``."""
    entries = []
    for line in text.splitlines():
        for match in _INLINE_ENTRY.finditer(line):
            name = match["name"].strip()[:80]
            # The name stops at a closing bracket: its own, if it opened one.
            name += ")" * max(0, name.count("(") - name.count(")"))
            entries.append((_norm(match["code"]), name))
    return entries


def _legends(documents: dict[str, str]) -> list[tuple[dict[str, str], str]]:
    """Each documentation file's legend, one entry a line, and each line of several entries."""
    found = []
    for name, text in sorted(documents.items()):
        lines: dict[str, str] = {}
        for line in text.splitlines():
            match = _LEGEND_LINE.match(line)
            if match:
                lines.setdefault(_norm(match["code"]), match["name"].strip())
            inline: dict[str, str] = {}
            for code, entry in _inline_entries(line):
                inline.setdefault(code, entry)
            if len(inline) >= 2:
                found.append((inline, name))
        found.append((lines, name))
    return found


def _mentions(documents: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Code 0 where the documentation names it as no activity outside any legend, in
    one mention (``0 = transient/null/other``): the name given and the file. Other
    codes take their names from a legend only (:func:`legend`): a number in a sentence
    is more often something else than a class."""
    for source, text in sorted(documents.items()):
        for line in text.splitlines():
            match = _LEGEND_LINE.match(line)
            entries = _inline_entries(line)
            if match:
                entries.append((_norm(match["code"]), match["name"].strip()))
            for code, name in entries:
                if code == "0" and NULL_NAMES.search(name):
                    return {"0": (name, source)}
    return {}


def class_runs(labels: pd.Series, recordings: pd.Series | None = None) -> list[list[str]]:
    """The classes of each recording's runs, in file order (``[["0", "1", "0", "2"], ...]``).

    Parameters
    ----------
    labels : Series
        The label of every sample, as the reader read it.
    recordings : Series, optional
        The recording of every sample (rows of one recording consecutive);
        default one recording.
    """
    if len(labels) == 0:
        return []
    codes, uniques = pd.factorize(labels, use_na_sentinel=True)
    names = [code_text(v) for v in uniques]
    rec = pd.factorize(recordings)[0] if recordings is not None else np.zeros(len(codes), dtype=int)
    change = np.flatnonzero((codes[1:] != codes[:-1]) | (rec[1:] != rec[:-1])) + 1
    starts = np.concatenate([[0], change])
    runs: list[list[str]] = []
    previous = None
    for start in starts:
        if rec[start] != previous:
            runs.append([])
            previous = rec[start]
        code = codes[start]
        runs[-1].append(names[code] if code >= 0 else "<blank>")
    return runs


def interleaved(runs: Sequence[Sequence[str]], code: str = "0") -> tuple[int, int, int] | None:
    """How the runs of ``code`` lie between the other classes' runs (rule 4), or None.

    Returns
    -------
    (int, int, int) or None
        Runs of ``code`` between two runs of other classes, all its runs, and
        the changes from one other class to another straight, without it;
        None when ``code`` is never between two other classes.
    """
    between = total = straight = 0
    for recording in runs:
        # Blank samples are no class: the runs either side of them meet.
        seq = [_norm(c) for c in recording if c != "<blank>"]
        seq = [c for i, c in enumerate(seq) if i == 0 or c != seq[i - 1]]
        total += seq.count(code)
        between += sum(seq[j] == code for j in range(1, len(seq) - 1))
        straight += sum(code not in pair for pair in itertools.pairwise(seq))
    return (between, total, straight) if between else None


def _norm(code: str) -> str:
    """A code as compared with the legend: numbers without leading zeros."""
    return str(int(code)) if code.isdigit() else code.strip()


def null_classes(
    counts: dict[str, int],
    documents: dict[str, str] | None = None,
    runs: Sequence[Sequence[str]] | None = None,
) -> list[Flagged]:
    """The classes of ``counts`` that are not activities, by the rules of the module docstring.

    Parameters
    ----------
    counts : dict of str to int
        Rows per class code (as text; ``"<blank>"`` is ignored).
    documents : dict of str to str, optional
        Documentation file name to its text (legends are read from them).
    runs : sequence of sequences of str, optional
        The classes of each recording's runs (:func:`class_runs`), for rule 4.

    Returns
    -------
    list of Flagged
        In the order of ``counts``.
    """
    codes = {c: n for c, n in counts.items() if c != "<blank>"}
    total = sum(codes.values())
    names, source = legend(documents or {})
    # A legend counts only when it is about these codes.
    if sum(_norm(c) in names for c in codes) < 2:
        names, source = {}, None
    mentioned = _mentions(documents or {})
    # A legend that leaves out most codes is some other numbered list.
    undocumented = sum(_norm(c) not in names for c in codes)
    others_numbered = all(_norm(c).isdigit() for c in codes)
    flagged = []
    for code, rows in codes.items():
        documented = names.get(_norm(code))
        mention = mentioned.get(_norm(code))
        between = interleaved(runs, "0") if runs is not None and _norm(code) == "0" else None
        if NULL_NAMES.search(code):
            reason = f"its name, {code!r}, marks no activity"
        elif documented and NULL_NAMES.search(documented):
            reason = f"{source} documents it as {documented!r}"
        elif mention and (documented is None or mention[0] == documented):
            reason = f"{mention[1]} documents it as {mention[0]!r}"
        elif _norm(code) == "0" and total and rows > total / 2:
            reason = f"code 0 holds {100 * rows / total:.0f} % of the labelled rows"
        elif names and documented is None and undocumented <= len(codes) / 3:
            listed = ", ".join(sorted(names, key=_order)[:12])
            reason = f"the class legend of {source} ({listed}) does not document it"
        elif between and others_numbered and between[0] >= MIN_BETWEEN and between[0] >= between[2]:
            reason = (
                f"code 0 runs between the other classes, as transitions do: {between[0]} of "
                f"its {between[1]} runs lie between two activities, and {between[0]} of the "
                f"{between[0] + between[2]} changes of activity pass through it "
                f"({100 * rows / total:.0f} % of the labelled rows)"
            )
        else:
            continue
        flagged.append(Flagged(code, rows, reason))
    return flagged


def _order(code: str) -> tuple[int, int | str]:
    return (0, int(code)) if code.isdigit() else (1, code)


__all__ = ["NULL_NAMES", "Flagged", "legend", "null_classes"]
