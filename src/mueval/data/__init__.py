"""The data an evaluation reads: the feature table, user ids, cohorts of users.

Modules:

- :mod:`.table`: :class:`~mueval.data.table.Table`, loaded from a mudata
  dataset, a CSV or Parquet file, or a DataFrame (:func:`~mueval.data.table.load_data`);
- :mod:`.users`: a user id as the user's own name, and as text, the key every
  file and table joins on;
- :mod:`.order`: the natural order of names (``S2`` before ``S10``);
- :mod:`.cohorts`: each user's value of a user-level attribute (its cohort),
  and the cohort of every row;
- :mod:`.synthetic`: synthetic multi-user tables for tests and benchmarks.
"""

__all__: list[str] = []
