"""mudata: public multi-user human-activity datasets as validated feature tables.

>>> import mudata
>>> frame = mudata.load("wisdm")                            # doctest: +SKIP
>>> X, y, groups = mudata.load("wisdm", return_X_y=True)    # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"

from mudata.api import fetch, load, provenance

__all__ = ["__version__", "fetch", "load", "provenance"]
