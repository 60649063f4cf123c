"""``mudata init``: the sampling rate to preview with when the files give none.

Files without a time column (a MATLAB array, whitespace integers) hold no rate;
the user must give it (``--sampling-rate``). Refusing at once hid the rest of
the draft's advice, so that a release needing a rate and a shorter window took
two refusals to say so. init now previews the draft at a rate it proposes, and
its refusal names both options at once: the rate the documentation beside the
data states (``32 Hz`` in a manual), or, when none does, :data:`PREVIEW_RATE`,
said to be an assumption. The rate is never written into a draft unless given.
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["PREVIEW_RATE", "documented_rate", "preview_rate"]

#: The rate previewed when no documentation states one: the most common rate of
#: the releases mudata registers (HAR70+, MotionSense, UTD-MHAD: 50 Hz).
PREVIEW_RATE = 50.0

#: "32 Hz", "52Hz", "sampling frequency of 100 Hz", "50 hz"; not "5 kHz" (the unit
#: must follow the number).
_HZ = re.compile(r"(?<![\w.])(\d{1,4}(?:\.\d+)?)\s?Hz\b", re.IGNORECASE)


def documented_rate(documents: dict[str, str]) -> tuple[float, str] | None:
    """The sampling rate the documentation states, and where, or None.

    The rate mentioned most often across ``documents`` (file name to text)
    wins; a tie between rates is no answer.

    Examples
    --------
    >>> documented_rate({"MANUAL.txt": "sampling rate: 32 Hz; range +-1.5g (32Hz)"})
    (32.0, 'MANUAL.txt')
    >>> documented_rate({"a.txt": "acc at 50 Hz, gyro at 100 Hz"}) is None
    True
    """
    counts: Counter[float] = Counter()
    where: dict[float, str] = {}
    for name, text in sorted(documents.items()):
        for match in _HZ.finditer(text):
            value = float(match.group(1))
            if value <= 0:
                continue
            counts[value] += 1
            where.setdefault(value, name)
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    value = ranked[0][0]
    return value, where[value]


def preview_rate(documents: dict[str, str]) -> tuple[float, str]:
    """The rate to preview with, and how init says where it came from."""
    found = documented_rate(documents)
    if found is not None:
        value, name = found
        return value, f"{name} states {value:g} Hz"
    return (
        PREVIEW_RATE,
        f"no file here states a rate ({PREVIEW_RATE:g} Hz, the most common, assumed)",
    )
