"""Comparing strategies and runs: significance tests, and who falls below target.

Modules:

- :mod:`.significance`: the tests between strategies (corrected resampled
  t-test, Wilcoxon, ...), each labelled with what it is, over one table of splits;
- :mod:`.runs`: one or more run folders merged into that table, their strategies
  paired, and what is left out (:func:`~mueval.comparison.runs.compare_runs`);
- :mod:`.tables`: the p-values adjusted within each test, the notes below the
  table, and the terminal's one line per pair;
- :mod:`.guarantees`: the per-user guarantees of strategies side by side, and
  whether the same users fall below target.

:func:`mueval.compare` and :func:`mueval.compare_guarantees` call them.
"""

__all__: list[str] = []
