"""The terminal's lines for a run's warnings: one line a warning, and the few
lines that close ``mueval evaluate``.

The warnings themselves, their severities and their order are
:mod:`mueval.guarantees.run_warnings`'s; this module only words them for the
command line (the HTML report words them in :mod:`mueval.report.page_one`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mueval.guarantees.run_warnings import SEVERITIES, by_severity

__all__ = ["warning_line", "warnings_summary"]


def warning_line(warning: Mapping[str, Any]) -> str:
    """One warning on one line, as the terminal prints it: ``severity (kind): message``."""
    return f"{warning['severity']} ({warning['kind']}): {warning['message']}"


def warnings_summary(
    warnings: Sequence[Mapping[str, Any]], *, where: str, top: int = 3
) -> list[str]:
    """A few lines that close a run: the count by severity, the ``top`` most severe
    warnings one line each, and where to read all of them.

    Parameters
    ----------
    warnings : sequence of dict
        ``run.json``'s ``warnings`` (``strategy, classifier, kind, message, severity``).
    where : str
        Where the rest can be read, e.g. ``"mueval report runs/mm, or run.json's warnings"``.
    top : int, default 3
        How many warnings to print in full.

    Returns
    -------
    list of str
        One line when there is no warning.

    Examples
    --------
    >>> w = [{"strategy": "uim", "classifier": "rf", "kind": "degenerate-sets",
    ...       "message": "uim / rf: sets hold every class.", "severity": "warning"}]
    >>> print("\\n".join(warnings_summary(w, where="run.json")))
    warnings: 0 errors, 1 warning
      warning (degenerate-sets): uim / rf: sets hold every class.
    all of them: run.json
    """
    if not warnings:
        return ["warnings: none"]
    counts = {s: sum(w["severity"] == s for w in warnings) for s in SEVERITIES}
    other = len(warnings) - sum(counts.values())
    parts = [f"{n} {s}{'' if n == 1 else 's'}" for s, n in counts.items()]
    if other:
        parts.append(f"{other} of another severity")
    lines = [f"warnings: {', '.join(parts)}"]
    ordered = by_severity(warnings)
    lines += [f"  {warning_line(w)}" for w in ordered[:top]]
    rest = len(ordered) - top
    lines.append(f"{'the other ' + str(rest) if rest > 0 else 'all of them'}: {where}")
    return lines
