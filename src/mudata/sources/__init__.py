"""The sources stage: where the data home keeps each dataset, and how every raw
file of an entry is obtained (a registered path, a manual folder or a download)
and checked against its pins before a reader sees it.
"""

__all__: list[str] = []
