"""Per-user guarantees of a run: what holds for each user, and what to warn about.

- :mod:`~mueval.guarantees.intervals`: per-user coverage with intervals that
  describe the observed rate;
- :mod:`~mueval.guarantees.user_level`: the exact per-user test "below target"
  (Beta-Binomial null, iterations combined, corrected across users);
- :mod:`~mueval.guarantees.validity`: a KS test of each user's true-label p-values;
- :mod:`~mueval.guarantees.run_warnings`: the warnings a reader should not miss;
- :mod:`~mueval.guarantees.checks`, :mod:`~mueval.guarantees.diagnostics`.
"""
