"""mudata: public multi-user human-activity datasets as validated feature tables.

Not to be confused with scverse's ``mudata`` (multimodal omics data), which has
the same import name; only this one has the attribute ``__mudata_mueval__``.

>>> import mudata
>>> bunch = mudata.load("wisdm")                            # doctest: +SKIP
>>> bunch.frame.columns[:2].tolist()                        # doctest: +SKIP
['userid', 'label']
>>> X, y, groups = mudata.load("wisdm", return_X_y=True)    # doctest: +SKIP
"""

from __future__ import annotations

# The marker first: the submodules imported next check it (see mudata._identity).
from mudata._identity import DISTRIBUTION as __mudata_mueval__
from mudata.api import fetch, load, provenance

__version__ = "0.1.0"

__all__ = ["__mudata_mueval__", "__version__", "fetch", "load", "provenance"]
