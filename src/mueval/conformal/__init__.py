"""Conformal prediction: scores, thresholds, p-values and prediction sets.

Modules:

- :mod:`.scores`: the registry of conformity scores (LAC, APS, RAPS, top-k) and
  score functions of the user's;
- :mod:`.thresholds`: the two threshold rules (the study's and MAPIE 1.x's),
  LAC sets at a threshold, and the smallest calibration set;
- :mod:`.pvalues`: split and cross-conformal p-values;
- :mod:`.sets`: :func:`~mueval.conformal.sets.conformalize`, split and Mondrian
  sets from one mechanism (``mondrian`` for the class, ``bins`` for cohorts of
  users), and the full set;
- :mod:`.condition`: what the threshold is conditioned on, as ``run.json``
  spells it;
- :mod:`.conditional_quantile`: thresholds over overlapping cohorts of users
  (``cohorts:``), from the conditional quantile regression of Gibbs, Cherian
  and Candès, solved with HiGHS;
- :mod:`.settings`: :class:`~mueval.conformal.settings.ConformalSettings`, the
  level, score, rule, condition and small-calibration policy, checked once;
- :mod:`.step`: :func:`~mueval.conformal.step.conformal_step`, one split's sets
  under those settings, ``--small-cal`` applied.
"""

__all__: list[str] = []
