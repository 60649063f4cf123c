"""``mudata init``, step 3a: the role of every column, and the columns that are not signals.

A column becomes a channel (raw signals) or a feature (a feature table) only
when nothing says it is something else. Each column left out is reported with
the reason:

* more than ``max_missing`` of its cells empty (spreadsheet error cells such
  as ``#DIV/0!`` read as empty, and are counted per column);
* text: yes/no flags, date/time strings, other words;
* constant;
* an index or row counter: by its name (``Unnamed: 0``, ``Sample No``), or
  values tracking the row number within the rounding of their printed
  digits (``99999``, ``1e+05``, ``1.0001e+05``: :mod:`mudata.drafting.counters`);
* time: by its name, with or without a unit (``timestamp(ns)``, ``TimeStamp``,
  ``time_ms``, ``t [s]``), or epoch seconds, milliseconds, microseconds or
  nanoseconds by its values; in a file without a header, also a clock
  relative to the recording's start (``5.64, 5.65, ...`` seconds at 100 Hz;
  ``15, 31, 46, ...`` milliseconds at 64 Hz): a column that never decreases,
  steps by one near-constant step (:func:`clock_step`) and, read in seconds,
  milliseconds, microseconds or nanoseconds, implies a rate in
  :data:`CLOCK_RATES` (:func:`relative_clock`). A row counter (whole numbers
  stepping by 1, in any rounding) is a counter, never a clock;
* a counter of windows or segments: by its name, or whole numbers that never
  decrease and hold each value in one run;
* any other column that never decreases (or never increases) through the
  file: a time or a counter, never a signal.

Finally, a column whose values alone tell the classes apart (one value range
per class, no two overlapping) is a probable leak: it is left out, and the
ranges are the evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mudata.drafting.counters import counter_evidence, monotone_evidence
from mudata.errors import MudataUsageError as UsageError

USER_NAMES = re.compile(
    r"^(user|users|userid|user_id|user_name|username|subject|subject_id|subjectid|"
    r"participant|participant_id|person|uid|sub|volunteer)$",
    re.IGNORECASE,
)
LABEL_NAMES = re.compile(
    r"^(label|labels|activity|activity_id|activityid|activity_name|class|classe|classes|"
    r"act|gt|target|activity_label|class_label)$",
    re.IGNORECASE,
)
#: Units a time column's name may carry, in seconds: ``timestamp(ns)``, ``time_ms``, ``t [s]``.
TIME_UNITS = {
    "ns": 1e-9, "nsec": 1e-9, "nanoseconds": 1e-9,
    "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "usec": 1e-6, "microseconds": 1e-6,
    "ms": 1e-3, "msec": 1e-3, "millis": 1e-3, "milliseconds": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0,
}  # fmt: skip
_UNIT = "|".join(sorted(map(re.escape, TIME_UNITS), key=len, reverse=True))
# The unit follows a separator (time_ms) or sits in brackets (timestamp(ns), t [s]).
TIME_NAMES = re.compile(
    r"^(?:time|timestamp|time_stamp|ts|t|datetime|date_time|seconds|epoch|elapsed|elapsed_time)"
    rf"(?:[_ .-]+(?P<unit>{_UNIT})|\s*[\[(]\s*(?P<bracketed>{_UNIT})\s*[\])])?$",
    re.IGNORECASE,
)
RECORDING_NAMES = re.compile(
    r"^(trial|session|recording|run|repetition|rep|experiment|exp_id|execution)$", re.IGNORECASE
)
# Names that say "time" or "index" or "window" without being the role columns above.
TIME_WORDS = re.compile(r"(^|[_ .-])(time|timestamp|date|datetime|epoch)([_ .(\[-]|$)", re.I)
INDEX_NAMES = re.compile(
    r"^(|unnamed: ?\d+|index|idx|row|row[_ ]?(id|num|number|no)|seq|sequence|counter|"
    r"sample[_ ]?(id|no|nr|num|number|index)\.?)$",
    re.IGNORECASE,
)
WINDOW_WORDS = re.compile(r"(^|[_ .-])(window|win|segment|seg|frame|chunk)s?([_ .-]|$)", re.I)
FLAG_VALUES = frozenset({"yes", "no", "y", "n", "true", "false", "t", "f"})
#: Epoch ranges (2000-01-01 to 2040-01-01) in each unit: a column there is a clock.
EPOCH_UNITS = {
    "seconds": 1.0,
    "milliseconds": 1e3,
    "microseconds": 1e6,
    "nanoseconds": 1e9,
}
_EPOCH_RANGE = (946684800.0, 2208988800.0)
MAX_MISSING = 0.9
#: Sampling rates (Hz) a clock without a unit may imply; a column implying none is no clock.
CLOCK_RATES = (1.0, 2000.0)
#: Units a clock without a unit is read in, in seconds, tried in this order.
CLOCK_UNITS = {"seconds": 1.0, "milliseconds": 1e-3, "microseconds": 1e-6, "nanoseconds": 1e-9}
#: Fraction of a relative clock's steps within half a step of its step: the rest
#: are gaps (dropped samples) and repeats.
STEADY_STEPS = 0.9
#: A median step this far (relatively) from the mean of the steady steps is the
#: rounding of a clock printed in ticks near its step (15 and 16 ms for 15.625).
_ROUNDED_STEP = 0.01
#: Fraction of the steady steps two adjacent tick values must hold for the mean step
#: to be taken (:func:`clock_step`).
_TWO_TICKS = 0.95


@dataclass
class Roles:
    """The columns of a table by role, and why every other column was left out.

    Attributes
    ----------
    user, label, time, recording : str or None
        The role columns found or given.
    signals : list of str
        Columns to use as channels or features, in table order.
    left_out : dict of str to str
        Every other column, with the reason.
    missing : dict of str to int
        Empty cells per column (spreadsheet error cells included), where any.
    leaks : dict of str to str
        Columns that predict the label alone, with the evidence.
    notes : list of str
        How each role was found.
    """

    user: str | None = None
    label: str | None = None
    time: str | None = None
    recording: str | None = None
    signals: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    leaks: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def report(self, n_rows: int) -> list[str]:
        """Lines for the draft's report: columns left out, missing cells, leaks."""
        lines = []
        if self.left_out:
            lines.append(f"{len(self.left_out)} column(s) left out of the signals:")
            shown = list(self.left_out.items())
            lines += [f"  {c or '(unnamed)'}: {why}" for c, why in shown[:30]]
            if len(shown) > 30:
                lines.append(f"  ... and {len(shown) - 30} more")
        # Kept: the signals and the role columns. A column left out by --features or
        # --channels is in neither, though no reason for it is in left_out.
        kept = {*self.signals, self.user, self.label, self.time, self.recording}
        kept_missing = {c: n for c, n in self.missing.items() if c in kept}
        if self.missing:
            lines.append(
                f"missing cells (empty, NA, #N/A, #DIV/0!, ...) in {len(self.missing)} "
                f"column(s) of {n_rows} rows; in kept columns: "
                + (", ".join(f"{c}: {n}" for c, n in kept_missing.items()) or "none")
            )
        for column, evidence in self.leaks.items():
            lines.append(
                f"probable label leak: column {column!r} alone tells the classes apart ({evidence})"
            )
        return lines


def time_unit(name: str) -> tuple[str, float] | None:
    """The unit a time column's name carries and its length in seconds (``t [s]``: ``("s", 1.0)``)."""
    match = TIME_NAMES.match(str(name).strip())
    unit = match and (match.group("unit") or match.group("bracketed"))
    return (unit, TIME_UNITS[unit.lower()]) if unit else None


def _numbers(values: pd.Series) -> pd.Series:
    if pd.api.types.is_bool_dtype(values):
        return pd.Series(np.nan, index=values.index)
    return pd.to_numeric(values, errors="coerce")


def _whole(values: np.ndarray) -> bool:
    return values.size > 0 and bool(np.all(np.mod(values, 1) == 0))


def epoch_unit(values: np.ndarray) -> str | None:
    """``"seconds"``, ``"milliseconds"``, ... when ``values`` lie in 2000-2040 in that unit."""
    if values.size == 0:
        return None
    middle = float(np.median(values))
    for unit, scale in EPOCH_UNITS.items():
        low, high = _EPOCH_RANGE[0] * scale, _EPOCH_RANGE[1] * scale
        if low <= middle <= high and low <= float(np.min(values)) and float(np.max(values)) <= high:
            return unit
    return None


def clock_step(values: np.ndarray) -> float | None:
    """The step of a clock: the median of its positive steps, or the mean of its steady
    steps where the rounding of whole ticks moves the median.

    A clock printed in whole ticks near its step (milliseconds at 64 Hz:
    ``15, 31, 46, 62``) steps by 15 and 16 only, and the median says 16: when
    the steps within half a step of the median (gaps and repeats left out)
    take two values next to each other (at least :data:`_TWO_TICKS` of them)
    and their mean differs from the median by more than 1 %, the mean is the
    step. A clock that jitters (a phone's timestamps, steps of 5 to 14 ms
    around a nominal 10) keeps the median: its nominal rate. None when the
    values never advance.
    """
    steps = np.diff(values[np.isfinite(values)])
    positive = steps[steps > 0]
    if positive.size == 0:
        return None
    median = float(np.median(positive))
    steady = positive[(positive >= 0.5 * median) & (positive <= 1.5 * median)]
    mean = float(np.mean(steady))
    if abs(mean - median) <= _ROUNDED_STEP * median:
        return median
    ticks, counts = np.unique(steady, return_counts=True)
    top = np.sort(ticks[np.argsort(counts)[-2:]])
    two = counts[np.isin(ticks, top)].sum() >= _TWO_TICKS * steady.size
    tick = _printed_tick(values[np.isfinite(values)])
    rounded = two and top.size == 2 and tick is not None and np.isclose(top[1] - top[0], tick)
    if not rounded or tick is None:
        return median
    # The mean of n steps of whole ticks is known to a tick / n: no digit finer.
    return round(mean, max(0, int(np.ceil(-np.log10(tick / steady.size)))))


def _printed_tick(values: np.ndarray) -> float | None:
    """The last printed digit's unit of ``values`` (1 for whole numbers, 0.01 for
    ``5.64``), up to 9 decimals; None beyond."""
    for decimals in range(10):
        scaled = values * 10.0**decimals
        if np.allclose(scaled, np.round(scaled), rtol=0, atol=1e-6):
            return 10.0**-decimals
    return None


def _plausible(seconds: float) -> bool:
    return CLOCK_RATES[0] <= 1.0 / seconds <= CLOCK_RATES[1]


def unitless_seconds(step: float) -> tuple[float, str]:
    """A step of a time column without a unit, in seconds, and how it was read.

    Below 1 it is read as seconds, up to 1e4 as milliseconds, beyond as
    nanoseconds; where that reading implies a rate outside :data:`CLOCK_RATES`
    and another unit (microseconds among them) implies one inside, that unit.
    """
    ladder = "seconds" if step < 1 else "milliseconds" if step < 1e4 else "nanoseconds"
    unit = ladder
    if not _plausible(step * CLOCK_UNITS[ladder]):
        unit = next((u for u, k in CLOCK_UNITS.items() if _plausible(step * k)), ladder)
    return step * CLOCK_UNITS[unit], f"read as {unit}"


def relative_clock(values: pd.Series | np.ndarray) -> str | None:
    """Why ``values`` is a clock relative to the recording's start, or None.

    It never decreases, at least :data:`STEADY_STEPS` of its steps lie within
    half a step of its step (:func:`clock_step`), the step implies a rate in
    :data:`CLOCK_RATES` in one of :data:`CLOCK_UNITS`, and it is no row
    counter: not whole numbers stepping by 1 (:func:`counter_evidence`), which
    would be 1 Hz in seconds as well as 1000 Hz in milliseconds.
    """
    numbers = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    numbers = numbers[np.isfinite(numbers)]
    if numbers.size < 3 or np.any(np.diff(numbers) < 0) or counter_evidence(numbers):
        return None
    step = clock_step(numbers)
    if step is None or (_whole(numbers) and step == 1):
        return None
    steps = np.diff(numbers)
    if np.mean((steps >= 0.5 * step) & (steps <= 1.5 * step)) < STEADY_STEPS:
        return None
    seconds, how = unitless_seconds(step)
    if not _plausible(seconds):
        return None
    return (
        f"a clock from the recording's start (step {step:.6g}, {how}: {round(1 / seconds, 3):g} Hz; "
        f"{_shown_number(numbers[0])} to {_shown_number(numbers[-1])})"
    )


def _shown_number(value: float) -> str:
    return f"{value:.10g}"


def _text_reason(values: pd.Series) -> str:
    words = values.dropna().astype(str).str.strip()
    distinct = set(words.str.lower().unique()[:50])
    if distinct and distinct <= FLAG_VALUES:
        return f"a text flag (values {', '.join(sorted(distinct))})"
    sample = words.iloc[:: max(1, len(words) // 50)].iloc[:50]
    # utc=True: times with several UTC offsets (a daylight-saving change) parse too.
    parsed = pd.to_datetime(sample, errors="coerce", format="mixed", utc=True)
    if len(sample) and parsed.notna().all() and sample.str.contains(r"\d[-/:.]\d").all():
        return f"date/time strings (e.g. {sample.iloc[0]!r})"
    return f"text, not numbers (e.g. {words.iloc[0][:30]!r})" if len(words) else "empty"


def non_signal_reason(name: str, values: pd.Series, max_missing: float = MAX_MISSING) -> str | None:
    """Why column ``name`` is not a signal, or None when nothing says so.

    Parameters
    ----------
    name : str
        The column's name (``c3`` in a file without a header).
    values : Series
        Its values, as read (spreadsheet error cells already missing).
    max_missing : float
        Fraction of empty cells above which the column is left out.
    """
    n = len(values)
    empty = int(values.isna().sum())
    if n and empty / n > max_missing:
        return f"{100 * empty / n:.0f} % of its cells are empty (more than {100 * max_missing:g} %; --max-missing)"
    numbers = _numbers(values)
    present = values.notna()
    texts = numbers.isna() & present
    if texts.mean() > 0.5 * present.mean():
        return _text_reason(values)
    if texts.any():
        # The readers refuse a channel or feature holding text: never draft one.
        example = str(values[texts].iloc[0])[:30]
        return f"{int(texts.sum())} of its cells are text, not numbers (e.g. {example!r})"
    finite = numbers.dropna().to_numpy(dtype=float)
    if finite.size and np.ptp(finite) == 0:
        return f"constant ({finite[0]:g})"
    if INDEX_NAMES.match(str(name).strip()):
        return f"an index column by its name ({name or 'unnamed'!r})"
    if TIME_NAMES.match(str(name).strip()) or TIME_WORDS.search(str(name)):
        return f"time, by its name ({name!r})"
    if WINDOW_WORDS.search(str(name)):
        return f"a window or segment counter, by its name ({name!r})"
    if finite.size < 3:
        return None
    if unit := epoch_unit(finite):
        return f"time (epoch {unit})"
    if len(finite) == n and (why := counter_evidence(finite)):
        return why
    steps = np.diff(finite)
    distinct = np.unique(finite).size
    runs = 1 + int(np.count_nonzero(steps))
    if (
        _whole(finite)
        and np.all(steps >= 0)
        and runs == distinct
        and 2 <= distinct <= finite.size / 5
    ):
        return (
            f"a counter of windows or segments (whole numbers that never decrease, "
            f"each of its {distinct} values in one run)"
        )
    return monotone_evidence(finite)


def leak_evidence(values: pd.Series, labels: pd.Series) -> str | None:
    """The value range of each class when no two overlap (the column predicts the label), else None."""
    numbers = _numbers(values)
    keep = numbers.notna().to_numpy() & labels.notna().to_numpy()
    if keep.sum() < 10:
        return None
    ranges = (
        pd.DataFrame({"v": numbers[keep].to_numpy(), "y": labels[keep].astype(str).to_numpy()})
        .groupby("y")["v"]
        .agg(["min", "max"])
        .sort_values("min")
    )
    if len(ranges) < 2 or not np.all(ranges["max"].to_numpy()[:-1] < ranges["min"].to_numpy()[1:]):
        return None
    shown = "; ".join(f"{y}: {lo:.12g} to {hi:.12g}" for y, (lo, hi) in ranges.iloc[:6].iterrows())
    return f"one value range per class, none overlapping: {shown}"


def resolve(name: str | int, columns: list[str], header: bool, what: str) -> str:
    """The column a user named: a name, or a 1-based number (``3`` is ``c3`` without a header).

    Raises
    ------
    UsageError
        No such column; the message lists the columns.
    """
    text = str(name).strip()
    if text in columns:
        return text
    # isdecimal, not isdigit: int() refuses "²" (and runs of 4,300 digits).
    if text.isdecimal() and len(text) <= 18 and 1 <= int(text) <= len(columns):
        return columns[int(text) - 1]
    shown = (
        ", ".join(columns)
        if header
        else f"{', '.join(columns)} (or their numbers 1 to {len(columns)})"
    )
    message = f"mudata init: {what} {text!r} is not a column of the data files; columns: {shown}"
    raise UsageError(message)


def _by_name(columns: list[str], pattern: re.Pattern[str], taken: set[str]) -> str | None:
    return next((c for c in columns if c not in taken and pattern.match(c.strip())), None)


def find_roles(
    table: pd.DataFrame,
    header: bool,
    given: dict[str, str | None],
    *,
    max_missing: float = MAX_MISSING,
    ruled_out: dict[str, str] | None = None,
) -> Roles:
    """The role columns of ``table`` (given ones first, then by name), and the others' reasons.

    Parameters
    ----------
    table : DataFrame
        One data file, as read (columns ``c1 ...`` without a header).
    header : bool
        Whether the file has a header line.
    given : dict
        ``user``, ``label``, ``time``, ``recording``: columns the user named (or None).
    max_missing : float
        See :func:`non_signal_reason`.
    ruled_out : dict of str to str, optional
        Columns known not to be signals from more than this table (a counter
        in every file the reader read), with the reason.

    Returns
    -------
    Roles
        ``signals`` holds every column nothing rules out; the caller checks leaks
        once the label is known (:func:`check_leaks`).
    """
    columns = [str(c) for c in table.columns]
    roles = Roles()
    patterns = {
        "user": USER_NAMES,
        "label": LABEL_NAMES,
        "time": TIME_NAMES,
        "recording": RECORDING_NAMES,
    }
    taken: set[str] = set()
    for role, pattern in patterns.items():
        named = given.get(role)
        column: str | None
        if named:
            column = resolve(named, columns, header, f"--{role}")
            roles.notes.append(f"{role}: column {column!r}, as given")
        else:
            column = _by_name(columns, pattern, taken) if header else None
            if column:
                roles.notes.append(f"{role}: column {column!r}, by its name")
        setattr(roles, role, column)
        if column:
            taken.add(column)
    roles.missing = {str(c): int(n) for c, n in table.isna().sum().items() if n}
    for column in columns:
        if column in taken:
            continue
        why = (ruled_out or {}).get(column) or non_signal_reason(column, table[column], max_missing)
        if why is None:
            roles.signals.append(column)
        else:
            roles.left_out[column] = why
    if roles.time is None and not given.get("time"):
        # A clock without a time-like name, or with one (raw_timestamp_part_1): epoch values.
        clock = next(
            (
                c
                for c, why in roles.left_out.items()
                if why.startswith("time")
                and epoch_unit(_numbers(table[c]).dropna().to_numpy(dtype=float))
            ),
            None,
        )
        if clock:
            roles.time = clock
            roles.notes.append(f"time: column {clock!r}, {roles.left_out.pop(clock)}")
    if roles.time is None and not given.get("time") and not header:
        # Without a header, the first column that never goes back with a steady step
        # at a plausible rate is the clock (PAMAP2's seconds, Daphnet's milliseconds).
        for column, why in roles.left_out.items():
            evidence = why.startswith("a time or a counter") and relative_clock(table[column])
            if evidence:
                roles.time = column
                del roles.left_out[column]
                roles.notes.append(f"time: column {column!r}, {evidence}")
                break
    return roles


def check_leaks(roles: Roles, table: pd.DataFrame, labels: pd.Series) -> None:
    """Move the signal columns that predict ``labels`` alone to ``left_out``, with the evidence.

    Columns already left out (a row counter of a file sorted by class) are
    checked too: the evidence tells the user why they must stay out.
    """
    for column in [*roles.signals, *roles.left_out]:
        evidence = leak_evidence(table[column], labels)
        if evidence is None:
            continue
        roles.leaks[column] = evidence
        if column in roles.signals:
            roles.signals.remove(column)
            roles.left_out[column] = (
                "a probable label leak (see below); name it in --channels/--features to keep it"
            )


__all__ = [
    "EPOCH_UNITS",
    "FLAG_VALUES",
    "INDEX_NAMES",
    "LABEL_NAMES",
    "MAX_MISSING",
    "RECORDING_NAMES",
    "TIME_NAMES",
    "TIME_UNITS",
    "TIME_WORDS",
    "USER_NAMES",
    "WINDOW_WORDS",
    "Roles",
    "check_leaks",
    "epoch_unit",
    "find_roles",
    "leak_evidence",
    "non_signal_reason",
    "resolve",
    "time_unit",
]
