"""Comparing strategies and runs: significance tests, and who falls below target.

Modules:

- :mod:`.significance`: the tests between strategies (corrected resampled
  t-test, Wilcoxon, ...), each labelled with what it is, over one or more runs;
- :mod:`.guarantees`: the per-user guarantees of strategies side by side, and
  whether the same users fall below target.

:func:`mueval.compare` and :func:`mueval.compare_guarantees` call them.
"""
