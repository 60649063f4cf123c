"""Metrics of :mod:`mueval`: small pure functions over arrays.

Classes are integers ``0..K-1`` (indices into the sorted class names);
``y_true``/``y_pred`` are int arrays ``(n,)``, prediction ``sets`` bool arrays
``(n, K)``, ``pvalues`` float arrays ``(n, K)``. Every metric returns Python
floats (``nan`` where undefined) and raises :class:`MetricInputError`, a
``ValueError``, on malformed input.

- :mod:`~mueval.metrics.classic`: accuracy and caret-style macro metrics.
- :mod:`~mueval.metrics.conformal`: the study's conformal criteria of sets
  and p-values, and Vovk's textbook ones (the sets and p-values themselves
  are built in :mod:`mueval.conformal`).
- :mod:`~mueval.metrics.array_checks`: the input checks of every metric.
- :mod:`~mueval.metrics.diagnostics`: conditional-coverage diagnostics
  (size-stratified coverage, CovGap, HSIC, worst-slab coverage, ERT).
- :mod:`~mueval.metrics.set_sizes`: the set-size table of a run's test rows,
  per (strategy, classifier) (pandas; not imported here).
- :mod:`~mueval.metrics.frame_checks`: the input checks of the tables that
  it and :mod:`mueval.guarantees` take.
"""

from __future__ import annotations

from mueval.metrics.classic import MetricInputError, classification_metrics
from mueval.metrics.conformal import (
    conformal_metrics,
    study_conformal_metrics,
    textbook_criteria,
)
from mueval.metrics.diagnostics import (
    coverage_gap,
    excess_risk_target_coverage,
    hsic,
    size_stratified_coverage,
    weighted_coverage_gap,
    worst_slab_coverage,
)

__all__ = [
    "MetricInputError",
    "classification_metrics",
    "conformal_metrics",
    "coverage_gap",
    "excess_risk_target_coverage",
    "hsic",
    "size_stratified_coverage",
    "study_conformal_metrics",
    "textbook_criteria",
    "weighted_coverage_gap",
    "worst_slab_coverage",
]
