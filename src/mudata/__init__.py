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

__version__ = "0.1.0"
# Set before any submodule is imported: they check it (see mudata._identity).
__mudata_mueval__ = "mudata-mueval"

from mudata.api import fetch, load, provenance  # noqa: E402

__all__ = ["__mudata_mueval__", "__version__", "fetch", "load", "provenance"]
