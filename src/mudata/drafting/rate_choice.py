"""``mudata init``: the sampling rate of a draft, and the refusal when none is known.

Owns the choice of the rate (given, from the time column, 1 Hz for a feature
table, or previewed at the rate :mod:`mudata.drafting.rates` proposes) with
its note for the report, and the refusal of a draft previewed at a proposed
rate, which names the rate and what the preview found in one message.
"""

from __future__ import annotations

from mudata.drafting.rates import preview_rate
from mudata.drafting.records import Layout
from mudata.errors import MudataUsageError as UsageError

__all__ = ["refuse_unrated", "resolve_rate", "with_rate"]


def with_rate(pending: list[str], advice: UsageError) -> UsageError:
    """``advice``, after the refusal of the rate when the draft was previewed at one."""
    return _unrated(pending, [str(advice)]) or advice


def _unrated(pending: list[str], found: list[str]) -> UsageError | None:
    """The refusal of a draft previewed at a proposed rate (``pending`` holds its first
    line), with what the preview ``found``; None when the rate was known."""
    return UsageError("\n".join([pending[0], *found])) if pending else None


def refuse_unrated(pending: list[str], filter_lines: list[str], window_lines: list[str]) -> None:
    """Refuse a draft previewed at a proposed rate, naming the filter's verdict and the
    windows the preview advises: the rate and the window in one message."""
    advised = [f"  {line.strip()}" for line in window_lines if "--window" in line]
    refusal = _unrated(pending, [*(f"  {line}" for line in filter_lines[:1]), *advised])
    if refusal is not None:
        raise refusal


def resolve_rate(
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
