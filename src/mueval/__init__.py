"""mueval: multi-user evaluation strategies with split conformal prediction.

>>> import mueval
>>> run = mueval.evaluate("wisdm", strategies="ucm", iterations=5)   # doctest: +SKIP
>>> run.save("runs/wisdm-ucm")                                         # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"

from mueval.api import Run, compare, evaluate

__all__ = ["Run", "__version__", "compare", "evaluate"]
