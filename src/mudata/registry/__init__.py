"""The registry stage: entries looked up and validated, and what the data home
holds of them (``mudata.list()``, ``mudata.info()``).
"""

__all__: list[str] = []
