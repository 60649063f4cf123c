"""Readers: one function per raw format, looked up by the name a registry entry gives.

Built-in readers are listed in :data:`BUILTIN_READERS` as ``module:function``
strings, imported on first use. Other packages add readers through the
``mudata.readers`` entry-point group::

    [project.entry-points."mudata.readers"]
    my-format = "my_package.readers:read_my_format"

A reader is a callable ``(entry, sources) -> FeatureTable | SignalTable``
(see :mod:`mudata.readers.base`).
"""

from __future__ import annotations

import difflib
import importlib
from importlib.metadata import entry_points

from mudata.errors import RegistryError
from mudata.readers.base import FeatureTable, Reader, SignalTable, Sources

ENTRY_POINT_GROUP = "mudata.readers"

BUILTIN_READERS: dict[str, str] = {
    "wisdm-arff": "mudata.readers.wisdm:read_wisdm_arff",
    "har70-csv": "mudata.readers.har70:read_har70",
    "opportunity-dat": "mudata.readers.opportunity:read_opportunity",
    "gestures-txt": "mudata.readers.gestures:read_gestures",
    "feature-table": "mudata.readers.tabular:read_feature_table",
    "long-signals": "mudata.readers.tabular:read_long_signals",
}


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
        raise RegistryError(message)
    module_name, _, attr = readers[name].partition(":")
    return getattr(importlib.import_module(module_name), attr)


__all__ = ["FeatureTable", "Reader", "SignalTable", "Sources", "available_readers", "get_reader"]
