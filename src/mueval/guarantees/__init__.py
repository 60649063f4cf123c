"""Per-user guarantees of a run: verdicts, coverage intervals, validity, conditional coverage, warnings.

Modules:

- :mod:`.intervals`: per-user coverage with Clopper-Pearson intervals (a
  description of the observed rate), and its summary per (strategy, classifier);
- :mod:`.user_level`: the exact per-user test "below target" (the covered
  count against its Beta-Binomial null, iterations combined, corrected across
  users), the meaning of every "below target" of a run;
- :mod:`.stratified_null`: the exact null of that count under the
  class-stratified split of UDM, UCM and UAM, used in place of the Beta-Binomial;
- :mod:`.validity`: are a user's true-label p-values as large as
  exchangeability implies (KS tests, Benjamini-Hochberg);
- :mod:`.conditional_coverage`: coverage per class and per cohort of users;
- :mod:`.conditional_verdicts`: their exact test "below target" (per cohort,
  and per class under class-conditional calibration);
- :mod:`.run_warnings`: the warnings those intervals and tests drive;
- :mod:`.run_diagnostics`: conditional-coverage diagnostics of a run (the array
  functions are in :mod:`mueval.metrics.diagnostics`);
- :mod:`.run_verdicts`: a run's per-user verdicts, from its prediction rows and
  splits (the cells of :mod:`.user_level`), joined to each user's coverage;
- :mod:`.compute`: all of the above from a run's prediction rows;
- :mod:`.records`: the :class:`~mueval.guarantees.records.Guarantees` record and
  the columns of its tables;
- :mod:`.frame_checks`: the input checks of the tables these modules take.
"""
