"""mudata: public multi-user human-activity datasets as validated feature tables."""

from __future__ import annotations

__version__ = "0.1.0"
