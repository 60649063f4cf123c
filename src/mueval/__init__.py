"""mueval: multi-user evaluation strategies with split conformal prediction.

>>> import mueval
>>> run = mueval.evaluate("wisdm", strategies="ucm", iterations=5)   # doctest: +SKIP
>>> run.save("runs/wisdm-ucm")                                         # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mueval.version import __version__

if TYPE_CHECKING:
    from mueval.api import Run, compare, compare_guarantees, evaluate
    from mueval.evaluation.labelcurve import curve


__all__ = ["Run", "__version__", "compare", "compare_guarantees", "curve", "evaluate"]

#: Names served by :func:`__getattr__`: :mod:`mueval.api` imports pandas and
#: pyarrow, which ``mueval --help`` must not wait for.
_FROM_API = frozenset({"Run", "compare", "compare_guarantees", "evaluate"})

#: Served the same way from :mod:`mueval.evaluation.labelcurve`.
_FROM_CURVE = frozenset({"curve"})


def __getattr__(name: str) -> Any:
    """Import :mod:`mueval.api` on first use of ``mueval.evaluate`` and the like (PEP 562)."""
    if name in _FROM_API or name in _FROM_CURVE:
        module = "mueval.api" if name in _FROM_API else "mueval.evaluation.labelcurve"
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    message = f"module 'mueval' has no attribute {name!r}"
    raise AttributeError(message)


def __dir__() -> list[str]:
    return sorted({*globals(), *_FROM_API, *_FROM_CURVE})
