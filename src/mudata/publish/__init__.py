"""The publish stage: a table's files on disk (Parquet with its provenance,
datapackage.json, croissant.json, the windows file) and its content hash.
"""

__all__: list[str] = []
