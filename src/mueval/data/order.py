"""The order of names a person reads: ``"S2"`` before ``"S10"``, in any script.

Classes, users, cohorts and model names are sorted by :func:`natural_key`
wherever a table or figure lists them.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["natural_key"]


def natural_key(value: object) -> tuple[tuple[int, int, str, str], ...]:
    """Sort key putting ``"S2"`` before ``"S10"``: digit runs compare as numbers.

    Examples
    --------
    >>> sorted(["n10", "n2", "n1"], key=natural_key)
    ['n1', 'n2', 'n10']
    """
    # Runs of decimal digits (any script: "\d" is str.isdecimal) compare by
    # their value: by length once leading zeros go, then digit by digit, so no
    # run is too long for int() and "²" or "①" (digits, not decimals) are text.
    parts = _DIGIT_RUN.split(str(value))
    return tuple(
        (0, len(digits := _ascii_digits(p).lstrip("0")), digits, p) if i % 2 else (1, 0, "", p)
        for i, p in enumerate(parts)
    )


_DIGIT_RUN = re.compile(r"(\d+)")


def _ascii_digits(run: str) -> str:
    """A run of decimal digits of any script as ASCII digits (``"٣"`` -> ``"3"``)."""
    return run if run.isascii() else "".join(str(unicodedata.decimal(c)) for c in run)
