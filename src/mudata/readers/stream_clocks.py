"""The clocks of multiplexed streams: which stream a file is windowed on, and at one rate.

Owns :data:`STEP_TOLERANCE` (median steps within it are one rate), the
reference stream of a file (the slowest, ties broken by name), the
:class:`Clock` of each file and the check that it agrees with the first
file's and with the entry's ``sampling_rate_hz``, and the check that
``align = "per-stream"`` streams keep one rate. Splitting the streams is
:mod:`mudata.readers.streams`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mudata.errors import ParseError, Reason, excerpt

__all__ = [
    "STEP_TOLERANCE",
    "Clock",
    "check_clock",
    "check_one_rate",
    "one_rate",
    "reference_stream",
]

#: Median time steps within this fraction of each other are one rate: of the
#: streams of a file (ties for the slowest; per-stream windows), of the
#: reference streams of two files, and of a file and ``sampling_rate_hz``.
STEP_TOLERANCE = 0.1


def reference_stream(steps: dict[str, float]) -> str:
    """The slowest stream: the largest median time step.

    Streams whose steps lie within :data:`STEP_TOLERANCE` of the largest are
    one rate, and the first of them by name is taken: so every file of a
    release takes the same reference whatever order its rows come in, and a
    clock's jitter does not swap it from file to file.
    """
    largest = max(steps.values())
    tied = [name for name, step in steps.items() if step * (1 + STEP_TOLERANCE) >= largest]
    return min(tied)


def one_rate(a: float, b: float) -> bool:
    """Whether two median steps (or rates) are one, within :data:`STEP_TOLERANCE`."""
    return max(a, b) <= (1 + STEP_TOLERANCE) * min(a, b)


@dataclass(frozen=True)
class Clock:
    """The clock a file is windowed on: its reference stream and that stream's median step.

    Attributes
    ----------
    member : str
        The file.
    stream : str
        The reference stream: the one resampled at (``"slowest"``), or the
        slowest of the streams (``"per-stream"``).
    step : float
        Its median time step, in the time column's units.
    unit : float or None
        The length of one unit in seconds (None: not known).
    same_stream : bool
        Whether every file must have this reference stream (``"slowest"``:
        the channels are aligned to it).
    """

    member: str
    stream: str
    step: float
    unit: float | None
    same_stream: bool


def check_clock(clock: Clock, first: Clock | None, rate_hz: float, entry: str) -> None:
    """A file's clock agrees with the first file's, and with the entry's rate when the unit is known.

    Raises
    ------
    ParseError
        The reference stream differs from the first file's (``"slowest"``),
        or its median step differs by more than :data:`STEP_TOLERANCE` from
        the first file's or from ``1 / rate_hz``; naming both files, the
        streams and their steps.
    """
    if first is not None and first.member != clock.member:
        if clock.same_stream and clock.stream != first.stream:
            message = (
                f"{clock.member}: its slowest stream is {excerpt(clock.stream)} (median time step "
                f"{clock.step:g}), where {first.member}'s is {excerpt(first.stream)} (step "
                f"{first.step:g}): its channels would be aligned to another clock; keep streams "
                f"every file holds at one rate with reader_options.streams.select"
            )
            raise ParseError(message, reason=Reason("differs", "streams.select"))
        if not one_rate(clock.step, first.step):
            message = (
                f"{clock.member}: stream {excerpt(clock.stream)} steps by {clock.step:g} "
                f"(median), where stream {excerpt(first.stream)} of {first.member} steps by "
                f"{first.step:g}: more than {100 * STEP_TOLERANCE:g} % apart, so its windows would "
                f"last another time; every file's streams must keep one rate: leave it out "
                f"(reader_options.members)"
            )
            raise ParseError(message, reason=Reason("differs", "members"))
    if clock.unit is not None and rate_hz > 0:
        seconds = clock.step * clock.unit
        if not one_rate(seconds, 1.0 / rate_hz):
            message = (
                f"{clock.member}: stream {excerpt(clock.stream)} steps by {clock.step:g} "
                f"(median; {seconds:g} s, {1.0 / seconds:.4g} Hz), where dataset '{entry}' "
                f"has sampling_rate_hz = {rate_hz:g} (a step of {1.0 / rate_hz:g} s): more "
                f"than {100 * STEP_TOLERANCE:g} % apart; correct sampling_rate_hz or "
                f"reader_options.streams.time_unit"
            )
            raise ParseError(message, reason=Reason("invalid", "streams.time_unit"))


def check_one_rate(steps: dict[str, float], member: str) -> None:
    """Per-stream windows: every stream kept at one rate (windows of one length in samples)."""
    slow, fast = max(steps, key=steps.__getitem__), min(steps, key=steps.__getitem__)
    if not one_rate(steps[slow], steps[fast]):
        shown = ", ".join(f"{name}: {step:g}" for name, step in steps.items())
        message = (
            f'{member}: align = "per-stream" windows every stream in one number of samples, '
            f"but the streams' median time steps differ by more than "
            f"{100 * STEP_TOLERANCE:g} % ({shown}): a window of {excerpt(slow)} would last "
            f"{steps[slow] / steps[fast]:.3g} times as long as one of {excerpt(fast)}; use "
            f'align = "slowest" (every stream resampled at the slowest one\'s timestamps), or '
            f"keep streams of one rate with reader_options.streams.select"
        )
        raise ParseError(message, reason=Reason("invalid", "streams.align"))
