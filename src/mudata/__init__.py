"""mudata: public multi-user human-activity datasets as validated feature tables.

Not to be confused with scverse's ``mudata`` (multimodal omics data), which has
the same import name; only this one has the attribute ``__mudata_mueval__``.

>>> import mudata
>>> bunch = mudata.load("wisdm")                            # doctest: +SKIP
>>> bunch.frame.columns[:2].tolist()                        # doctest: +SKIP
['userid', 'label']
>>> X, y, groups = mudata.load("wisdm", return_X_y=True)    # doctest: +SKIP

Modules, one stage each, from the command line down (imports run one way,
top to bottom; ``lint-imports`` checks it):

- ``cli``, ``cli_init``, ``cli_options`` -- the ``mudata`` commands and options;
- ``api`` -- :func:`fetch`, :func:`load`, :func:`provenance`, :func:`verify`;
  ``catalog`` -- :func:`list` and :func:`info`: the registry and what is built;
- ``drafting/`` -- ``mudata init``: a registry entry drafted from a user's files;
  ``audit`` -- a cached table compared with a rebuild from its pinned raw files;
- ``registry`` -- entries read, checked and installed; ``pipeline`` -- read,
  featurize, filter, validate, publish;
- ``download``, ``features``, ``validate``, ``store``, ``userfilter`` -- the
  pipeline's stages;
- ``readers/`` -- one reader per release format; ``paths``, ``windowing``;
  ``croissant`` -- the ``croissant.json`` descriptor of a table;
- ``classes``, ``archive`` -- class codes and user names; archives read safely;
- ``entry`` -- the registry entry's record types; ``files`` -- safe reading,
  atomic writing, a file's SHA-256; ``_resources``, ``_identity``, ``version``;
- ``errors`` -- the exceptions.
"""

from __future__ import annotations

# The marker first: the submodules imported next check it (see mudata._identity).
import builtins
import importlib
from typing import TYPE_CHECKING, Any

from mudata._identity import DISTRIBUTION as __mudata_mueval__
from mudata.version import __version__

if TYPE_CHECKING:
    from mudata.api import fetch, load, provenance, verify
    from mudata.catalog import dataset_info as info
    from mudata.catalog import list_datasets as list


__all__ = [
    "__mudata_mueval__",
    "__version__",
    "fetch",
    "info",
    "list",
    "load",
    "provenance",
    "verify",
]

#: Names served by :func:`__getattr__`: the loaders import pandas, pyarrow and
#: Pandera, which ``import mudata`` never needs. Name -> (module, attribute).
_LAZY = {
    "fetch": ("mudata.api", "fetch"),
    "load": ("mudata.api", "load"),
    "provenance": ("mudata.api", "provenance"),
    "verify": ("mudata.api", "verify"),
    # ``list`` and ``info`` are functions of mudata.catalog under names that do
    # not shadow the builtin ``list`` inside it.
    "list": ("mudata.catalog", "list_datasets"),
    "info": ("mudata.catalog", "dataset_info"),
}


def __getattr__(name: str) -> Any:
    """Import :mod:`mudata.api` on first use of ``mudata.load`` and the like (PEP 562)."""
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name == "api":
        return importlib.import_module("mudata.api")
    message = f"module 'mudata' has no attribute {name!r}"
    raise AttributeError(message)


def __dir__() -> builtins.list[str]:  # ``list`` is mudata.list here
    return sorted({*globals(), *_LAZY})
