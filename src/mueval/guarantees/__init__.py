"""Per-user guarantees of a run: verdicts, coverage intervals, validity, conditional coverage, warnings.

Modules:

- :mod:`.intervals`: per-user coverage with Clopper-Pearson intervals (a
  description of the observed rate), and its summary per (strategy, classifier);
- :mod:`.user_level`: the exact per-user test "below target" (the covered
  count against its Beta-Binomial null, iterations combined, corrected across
  users), the meaning of every "below target" of a run;
- :mod:`.covered_law`: the exact null law of a covered count (threshold ranks,
  the Beta-Binomial, its convolution over cells and iterations);
- :mod:`.adjustment`: the corrections across users (Holm, Benjamini-Hochberg)
  and the words of a flag;
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
- :mod:`.verdict_settings`: the verdicts' settings from a run's configuration,
  and why a strategy gets none;
- :mod:`.run_cells`: the cells of those tests (one per user, iteration and
  class cell, with its threshold rank), from a run's prediction rows and splits;
- :mod:`.run_verdicts`: a run's per-user verdicts and pooled tests on those
  cells, joined to each user's coverage;
- :mod:`.compute`: all of the above from a run's prediction rows;
- :mod:`.records`: the :class:`~mueval.guarantees.records.Guarantees` record and
  the columns of its tables.

Their tables' input checks are :mod:`mueval.metrics.frame_checks`.
"""

__all__: list[str] = []
