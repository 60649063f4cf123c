"""``reader_options.streams``: the options of a multiplexed file, and the names of its streams.

Owns :class:`StreamOptions` (``keys``, ``select``, ``align``, ``time_unit``,
each checked with an error naming the field), the selectors ``KEY=VALUE,...``
and how a stream's key text matches one, and the names a stream and its
aligned channels take (``"Sensor ID=1,Sensor Type=0"``, ``"x [Sensor ID=1]"``).
How the streams are split and aligned is :mod:`mudata.readers.streams`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mudata.errors import Reason, RegistryError, excerpt
from mudata.records.classes import is_numeric_column, number_text
from mudata.records.entry import DatasetEntry

__all__ = [
    "ALIGNS",
    "TIME_UNITS",
    "StreamOptions",
    "key_text",
    "parse_selector",
    "selector_matches",
    "stream_channel",
    "stream_name",
    "stream_options",
]

ALIGNS = ("slowest", "per-stream")
#: ``time_unit``: the length of one unit of a numeric time column, in seconds.
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class StreamOptions:
    """``reader_options.streams``, checked.

    Attributes
    ----------
    keys : tuple of str
        The columns naming a stream.
    select : tuple of dict
        Selectors, each key column to the text value it must hold (a subset of ``keys``).
    align : {"slowest", "per-stream"}
    time_unit : str or None
        A key of :data:`TIME_UNITS`: the unit of a numeric time column.
    """

    keys: tuple[str, ...]
    select: tuple[dict[str, str], ...] = ()
    align: str = "slowest"
    time_unit: str | None = None


def stream_name(keys: Sequence[str], values: Sequence[str]) -> str:
    """A stream's name, as a selector would give it: ``"Sensor ID=1,Sensor Type=0"``."""
    return ",".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))


def stream_channel(channel: str, stream: str) -> str:
    """The name of ``channel`` of ``stream`` once the streams are aligned (``"x [Sensor ID=1]"``)."""
    return f"{channel} [{stream}]"


def parse_selector(text: str, keys: Sequence[str] | None, where: str) -> dict[str, str]:
    """A selector ``KEY=VALUE,KEY=VALUE`` as a dict; every key one of ``keys`` (when given).

    Raises
    ------
    ValueError
        (a :class:`RegistryError`) a part without ``=``, a key given twice, or a
        key that is not a stream key, naming the selector and the keys.
    """
    selector: dict[str, str] = {}
    for part in str(text).split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            message = (
                f"{where}: {excerpt(text)} is not KEY=VALUE[,KEY=VALUE...] (part {excerpt(part)})"
            )
            raise RegistryError(message, reason=Reason("invalid", "streams.select"))
        if key in selector:
            message = f"{where}: {excerpt(text)} gives {excerpt(key)} twice"
            raise RegistryError(message, reason=Reason("invalid", "streams.select"))
        if keys is not None and key not in keys:
            message = f"{where}: {excerpt(text)} names {excerpt(key)}, not a stream key; the keys: {list(keys)}"
            raise RegistryError(message, reason=Reason("invalid", "streams.select"))
        selector[key] = value
    return selector


def stream_options(entry: DatasetEntry) -> StreamOptions | None:
    """``reader_options.streams`` checked (None when absent)."""
    value = entry.reader_options.get("streams")
    if value is None:
        return None
    where = f"invalid registry entry '{entry.name}'" + (
        f" ({entry.source})" if entry.source else ""
    )
    field_ = f"{where}: field 'reader_options.streams"
    if not isinstance(value, dict):
        message = f"{field_}': expected a table {{ keys = [...], select = [...], align = ... }}, found {excerpt(value)}"
        raise RegistryError(message, reason=Reason("invalid", "streams"))
    unknown = sorted(set(value) - {"keys", "select", "align", "time_unit"})
    if unknown:
        message = (
            f"{field_}': unknown key(s) {unknown}; the keys are keys, select, align and time_unit"
        )
        raise RegistryError(message, reason=Reason("invalid", "streams"))
    keys = value.get("keys")
    if (
        not isinstance(keys, list)
        or not keys
        or not all(isinstance(k, str) and k for k in keys)
        or len(set(keys)) != len(keys)
    ):
        message = f"{field_}.keys': expected a list of distinct column names, found {excerpt(keys)}"
        raise RegistryError(message, reason=Reason("invalid", "streams.keys"))
    select = value.get("select", [])
    if not isinstance(select, list) or not all(isinstance(s, str) for s in select):
        message = (
            f"{field_}.select': expected a list of 'KEY=VALUE,...' texts, found {excerpt(select)}"
        )
        raise RegistryError(message, reason=Reason("invalid", "streams.select"))
    selectors = tuple(parse_selector(s, keys, f"{field_}.select'") for s in select)
    align = value.get("align", "slowest")
    if align not in ALIGNS:
        message = f"{field_}.align': {excerpt(align)} is not one of {list(ALIGNS)}"
        raise RegistryError(message, reason=Reason("invalid", "streams.align"))
    time_unit = value.get("time_unit")
    if time_unit is not None and time_unit not in TIME_UNITS:
        message = f"{field_}.time_unit': {excerpt(time_unit)} is not one of {list(TIME_UNITS)}"
        raise RegistryError(message, reason=Reason("invalid", "streams.time_unit"))
    if not entry.reader_options.get("time_col"):
        message = f"{where}: reader_options.streams needs reader_options.time_col (each stream's time is checked, and aligned by it)"
        raise RegistryError(message, reason=Reason("missing", "time_col"))
    return StreamOptions(tuple(keys), selectors, align, time_unit)


def key_text(values: pd.Series) -> np.ndarray:
    """A key column's values as the text naming streams.

    In a column of numbers, values compare as numbers and are named in their
    shortest form (``1``, ``1.0`` and ``01`` are one stream, ``"1"``), as class
    codes are; so a file read as text and the same file read as numbers (by
    ``mudata init``, or from Parquet) name their streams alike. Text is
    stripped of spaces.
    """
    text = values.astype(str).str.strip()
    if is_numeric_column(values):
        numbers = pd.to_numeric(text, errors="coerce")
        uniques = pd.unique(numbers.dropna())
        names = {u: number_text(u) for u in uniques}
        return np.array([names.get(v, t) for v, t in zip(numbers, text, strict=True)], dtype=object)
    return text.to_numpy(dtype=object)


def selector_matches(value: str, want: str) -> bool:
    """Whether a stream's key text matches a selector's value (numbers as numbers: ``01`` is ``1``)."""
    if value == want:
        return True
    try:
        return number_text(float(want)) == value
    except ValueError:
        return False
