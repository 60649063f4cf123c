"""mueval: multi-user evaluation strategies with split conformal prediction.

>>> import mueval
>>> run = mueval.evaluate("wisdm", strategies="ucm", iterations=5)   # doctest: +SKIP
>>> run.save("runs/wisdm-ucm")                                         # doctest: +SKIP

Subpackages and modules, from the command line down (imports run one way,
top to bottom; ``lint-imports`` checks it):

- ``cli/`` -- the ``mueval`` commands and their option tables;
- ``api`` -- :func:`evaluate`, :func:`compare`, :func:`compare_guarantees`;
- ``run`` -- :class:`Run`, one evaluation in memory, saved and loaded;
- ``report/`` -- the HTML report, its figures, sections and terminal tables;
- ``comparison/`` -- significance tests between strategies, guarantees side by side;
- ``runfolder/`` -- the run folder's format, writing, reading and consistency checks;
- ``guarantees/`` -- per-user coverage, verdicts, validity, conditional coverage, warnings;
- ``evaluation/`` -- records, splits per strategy, models, the runner, the label curve;
- ``conformal/`` -- scores, threshold rules, p-values, split and Mondrian sets;
- ``metrics/`` -- classic and conformal metrics, conditional-coverage diagnostics;
- ``data/`` -- the feature table, user ids as text, cohorts, synthetic users;
- ``files``, ``names``, ``strategies``, ``errors``, ``version`` -- safe files, the
  names a run speaks, the strategies' records (:func:`register_strategy` adds
  one), exceptions, the version.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mueval.strategies import Strategy, register_strategy
from mueval.version import __version__

if TYPE_CHECKING:
    from mueval.api import compare, compare_guarantees, evaluate
    from mueval.evaluation.labelcurve import curve
    from mueval.run import Run


__all__ = [
    "Run",
    "Strategy",
    "__version__",
    "compare",
    "compare_guarantees",
    "curve",
    "evaluate",
    "register_strategy",
]

#: Names served by :func:`__getattr__`, and their modules: :mod:`mueval.api` and
#: :mod:`mueval.run` import pandas and pyarrow, which ``mueval --help`` must not wait for.
_LAZY: dict[str, str] = {
    "Run": "mueval.run",
    "compare": "mueval.api",
    "compare_guarantees": "mueval.api",
    "evaluate": "mueval.api",
    "curve": "mueval.evaluation.labelcurve",
}


def __getattr__(name: str) -> Any:
    """Import :mod:`mueval.api` on first use of ``mueval.evaluate`` and the like (PEP 562)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    message = f"module 'mueval' has no attribute {name!r}"
    raise AttributeError(message)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
