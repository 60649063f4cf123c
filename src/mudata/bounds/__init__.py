"""What a raw file may cost once read: the bounded index of an archive's members
and the check of a Parquet file's footer, both under the one expansion cap.
"""

__all__: list[str] = []
