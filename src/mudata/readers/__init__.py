"""Readers: one function per raw format, looked up by the name a registry entry gives.

Built-in readers are listed in :data:`BUILTIN_READERS` as ``module:function``
strings, imported on first use. Other packages add readers through the
``mudata.readers`` entry-point group::

    [project.entry-points."mudata.readers"]
    my-format = "my_package.readers:read_my_format"

A reader is a callable ``(entry, sources) -> FeatureTable | SignalTable``
(see :mod:`mudata.readers.base`).

Modules: ``base`` (the tables readers return), ``sources`` (the verified
:class:`Sources` they read through), ``pins`` (what the registry pins of a
source), ``member_bytes`` (a member's bytes as they are read: bounded, hashed,
checked), ``stream`` (the chunks of a reader that reads its files piece by
piece, :data:`STREAM_READERS`), ``decode`` (compressed files), ``matlab``
(MATLAB arrays), ``delimited`` (separators and missing cells), ``_text``
(helpers of the text readers), ``linear_regex`` (``path_pattern`` matched in
linear time), and one module per format: ``wisdm``, ``har70``,
``opportunity``, ``gestures``, ``tabular`` (CSV, Parquet and text tables:
feature tables and long signals, read with ``members``, ``roles``,
``column_values``, ``time_columns`` and ``long_options``; ``aligned`` and
``side_files`` for a feature table whose labels and users are in side files
aligned with it row by row), ``annotations``
(signals labelled by an annotation table of intervals).
"""

from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points

from mudata.errors import Reason, RegistryError
from mudata.readers.base import FeatureTable, Reader, SignalTable
from mudata.readers.sources import Sources
from mudata.readers.stream import SignalStream, StreamReader

ENTRY_POINT_GROUP = "mudata.readers"

BUILTIN_READERS: dict[str, str] = {
    "wisdm-arff": "mudata.readers.wisdm:read_wisdm_arff",
    "har70-csv": "mudata.readers.har70:read_har70",
    "opportunity-dat": "mudata.readers.opportunity:read_opportunity",
    "gestures-txt": "mudata.readers.gestures:read_gestures",
    "feature-table": "mudata.readers.tabular:read_feature_table",
    "long-signals": "mudata.readers.tabular:read_long_signals",
    "annotated-signals": "mudata.readers.annotations:read_annotated_signals",
}


#: Readers that also read their files in chunks, for releases larger than memory
#: (:mod:`mudata.readers.stream`): reader name to ``module:function`` of a
#: ``(entry, sources, *, chunk_bytes) -> SignalStream`` whose chunks laid end to
#: end are the reader's table.
STREAM_READERS: dict[str, str] = {
    "har70-csv": "mudata.readers.har70:stream_har70",
    "long-signals": "mudata.readers.long_stream:stream_long_signals",
}


_TABULAR_OPTIONS = frozenset(
    {
        "channels",
        "columns",
        "comment",
        "decimal",
        "encoding",
        "feature_cols",
        "format",
        "header",
        "header_line",
        "label_col",
        "line_end",
        "members",
        "path_pattern",
        "recording_col",
        "segment_col",
        "separator",
        "skip_lines",
        "streams",
        "time_col",
        "time_order",
        "user_col",
        "variable",
    }
)

#: The ``reader_options`` keys each built-in reader reads. A key outside its
#: reader's set is a typo that would otherwise fall back to a default silently.
#: A plug-in reader may declare its own as a ``reader_options`` attribute (a set).
READER_OPTIONS: dict[str, frozenset[str]] = {
    "wisdm-arff": frozenset({"drop_columns", "encoding", "label_column", "member", "user_column"}),
    "har70-csv": frozenset({"channels", "encoding", "label_column", "members"}),
    "opportunity-dat": frozenset(
        {
            "columns",
            "encoding",
            "label_column",
            "member_pattern",
            "members",
            "n_columns",
            "runs",
            "subjects",
        }
    ),
    "gestures-txt": frozenset(
        {"columns", "encoding", "members", "n_columns", "repetitions", "root"}
    ),
    # With the side files of a table whose labels and users are in files of their own.
    "feature-table": _TABULAR_OPTIONS
    | {"feature_names_file", "label_file", "label_names_file", "user_file"},
    "long-signals": _TABULAR_OPTIONS,
    # long-signals' options for the signal files, with the labels from an annotation table.
    "annotated-signals": (
        _TABULAR_OPTIONS
        - {"feature_cols", "label_col", "recording_col", "segment_col", "time_order"}
    )
    | {"labels"},
}


def check_reader_options(reader: str, options: dict, where: str) -> None:
    """Refuse an option key the reader does not read, naming it and the valid keys.

    Parameters
    ----------
    reader : str
        The entry's reader name.
    options : dict
        The entry's ``reader_options``.
    where : str
        Names the entry in the message (e.g. "invalid registry entry 'x' (file.toml)").

    Raises
    ------
    RegistryError
        An unknown key, with the closest valid ones.
    """
    allowed = READER_OPTIONS.get(reader)
    if allowed is None and reader in available_readers() and reader not in BUILTIN_READERS:
        declared = getattr(get_reader(reader), "reader_options", None)
        allowed = frozenset(declared) if declared is not None else None
    if allowed is None:
        return  # an unknown reader is reported by get_reader; a plug-in may declare none
    unknown = sorted(set(options) - allowed)
    if unknown:
        close = difflib.get_close_matches(unknown[0], allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        message = (
            f"{where}: field 'reader_options.{unknown[0]}' is not an option of reader "
            f"'{reader}'{hint}; its options: {', '.join(sorted(allowed))}"
        )
        raise RegistryError(message, reason=Reason("invalid", unknown[0]))


def available_readers() -> dict[str, str]:
    """Reader names mapped to their ``module:function`` target (built-ins and plug-ins)."""
    readers = dict(BUILTIN_READERS)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        readers.setdefault(ep.name, ep.value)
    return readers


def get_reader(name: str) -> Reader:
    """Import and return the reader called ``name``."""
    readers = available_readers()
    if name not in readers:
        close = difflib.get_close_matches(name, readers, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        message = f"unknown reader '{name}'.{hint} Available readers: {', '.join(sorted(readers))}."
        raise RegistryError(message, reason=Reason("invalid", "reader"))
    module_name, _, attr = readers[name].partition(":")
    return getattr(importlib.import_module(module_name), attr)


def get_stream_reader(name: str) -> StreamReader | None:
    """The chunked reader of the reader called ``name``; None when it has none."""
    target = STREAM_READERS.get(name)
    if target is None:
        return None
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


__all__ = [
    "READER_OPTIONS",
    "STREAM_READERS",
    "FeatureTable",
    "Reader",
    "SignalStream",
    "SignalTable",
    "Sources",
    "StreamReader",
    "available_readers",
    "check_reader_options",
    "get_reader",
    "get_stream_reader",
]
