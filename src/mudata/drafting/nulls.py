"""``mudata init``, step 4b: classes that are not activities (null, unmarked, undocumented).

Many releases label the samples between activities with a code of their own:
``0`` ("null", "unmarked data"), ``transition``, ``unknown``, ``other``. Kept
as a class, such a code is usually the largest one, and it decides the
window and calibration checks; a study drops it. A class is flagged here when

1. its code or the name the documentation gives it says so (:data:`NULL_NAMES`);
2. its code is ``0`` and it holds more than half of the labelled rows;
3. the documentation has a legend of the codes (``1: Walking``, ``2 = Standing``,
   at least two of them matching codes in the data) and leaves it out, while
   documenting at least two thirds of the codes in the data.

The draft leaves flagged classes out of ``[[classes]]`` (``mudata fetch`` drops
the rows of codes the entry does not list, and counts them), says why for
each, and names the option that keeps it (``--keep-class CODE``);
``--drop-class CODE`` drops a class init did not flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Names of classes that mark "no activity" rather than one.
NULL_NAMES = re.compile(
    r"(?<![a-z])(null|none|nothing|unmarked|unlabell?ed|not labell?ed|no label|unknown|"
    r"undefined|unclassified|transitions?|transitional|other|others|misc|no activity|"
    r"not an activity|void|background)(?![a-z])",
    re.IGNORECASE,
)
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
        Code to name from the documentation file with the longest legend
        (at least two lines), and that file; empty and None when none has one.
    """
    best: dict[str, str] = {}
    source = None
    for name, text in sorted(documents.items()):
        found: dict[str, str] = {}
        for line in text.splitlines():
            match = _LEGEND_LINE.match(line)
            if match:
                found.setdefault(_norm(match["code"]), match["name"].strip())
        if len(found) >= 2 and len(found) > len(best):
            best, source = found, name
    return best, source


def _norm(code: str) -> str:
    """A code as compared with the legend: numbers without leading zeros."""
    return str(int(code)) if code.isdigit() else code.strip()


def null_classes(counts: dict[str, int], documents: dict[str, str] | None = None) -> list[Flagged]:
    """The classes of ``counts`` that are not activities, by the rules of the module docstring.

    Parameters
    ----------
    counts : dict of str to int
        Rows per class code (as text; ``"<blank>"`` is ignored).
    documents : dict of str to str, optional
        Documentation file name to its text (legends are read from them).

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
    # A legend that leaves out most codes is some other numbered list.
    undocumented = sum(_norm(c) not in names for c in codes)
    flagged = []
    for code, rows in codes.items():
        documented = names.get(_norm(code))
        if NULL_NAMES.search(code):
            reason = f"its name, {code!r}, marks no activity"
        elif documented and NULL_NAMES.search(documented):
            reason = f"{source} documents it as {documented!r}"
        elif _norm(code) == "0" and total and rows > total / 2:
            reason = f"code 0 holds {100 * rows / total:.0f} % of the labelled rows"
        elif names and documented is None and undocumented <= len(codes) / 3:
            listed = ", ".join(sorted(names, key=_order)[:12])
            reason = f"the class legend of {source} ({listed}) does not document it"
        else:
            continue
        flagged.append(Flagged(code, rows, reason))
    return flagged


def _order(code: str) -> tuple[int, int | str]:
    return (0, int(code)) if code.isdigit() else (1, code)


__all__ = ["NULL_NAMES", "Flagged", "legend", "null_classes"]
