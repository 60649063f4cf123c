"""The build stage: raw samples to the validated feature table and its windows,
wired by the pipeline over the sources and publish stages, and the rebuild
that verifies a cached table.
"""

__all__: list[str] = []
