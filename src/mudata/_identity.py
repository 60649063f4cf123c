"""Telling this ``mudata`` from scverse's ``mudata``, which has the same import name.

scverse's ``mudata`` (multimodal omics data, ``pip install mudata``) and this
package (distribution ``mudata-mueval``) both install a top-level ``mudata``
package. When both are installed in one environment, ``import mudata`` gives
whichever came first on ``sys.path``, or a mix of the two folders' files. Only
ours defines the attribute named by :data:`MARKER`; code that needs our
``mudata`` (mueval, our own submodules) checks it and fails with
:func:`wrong_mudata_message` instead of an ``AttributeError`` further on.
"""

from __future__ import annotations

import sys
from types import ModuleType

#: The attribute only mudata-mueval's ``mudata`` package defines; its value is
#: the distribution name.
MARKER = "__mudata_mueval__"
DISTRIBUTION = "mudata-mueval"


def wrong_mudata_message(module: ModuleType) -> str:
    """The error text for a ``mudata`` module that is not ours."""
    where = getattr(module, "__file__", None) or "an unknown location"
    version = getattr(module, "__version__", "unknown")
    return (
        f"the 'mudata' package imported from {where} (version {version}) is not the one "
        f"from {DISTRIBUTION}: it has no '{MARKER}' attribute. It is probably scverse's "
        f"'mudata' (multimodal omics data), which uses the same import name. Install "
        f"{DISTRIBUTION} in an environment without it (see `pip show mudata`), or "
        f"uninstall one of the two and reinstall the other."
    )


def check_ours(module: ModuleType | None = None) -> ModuleType:
    """Return the ``mudata`` module if it is ours; raise ImportError otherwise.

    Parameters
    ----------
    module : module, optional
        The module to check; default ``sys.modules["mudata"]``.

    Raises
    ------
    ImportError
        ``module`` lacks :data:`MARKER`: another package named ``mudata``.
    """
    module = module if module is not None else sys.modules.get("mudata")
    if module is None or getattr(module, MARKER, None) != DISTRIBUTION:
        message = (
            wrong_mudata_message(module) if module is not None else "no 'mudata' module is imported"
        )
        raise ImportError(message)
    return module


__all__ = ["DISTRIBUTION", "MARKER", "check_ours", "wrong_mudata_message"]
