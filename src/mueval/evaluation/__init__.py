"""The evaluation: splits per strategy, model fits, conformalization, aggregation.

Modules:

- :mod:`.config`: ``EvalConfig``, what a run evaluates (its conformal settings held);
- :mod:`.records`: the record types (``Split``, ``EvalResult``...);
- :mod:`.splits`: the row splits of every strategy, UXC's folds included;
- :mod:`.models`: the four classifiers and their training step;
- :mod:`.runner`: the run: its tasks, one fit per (split, classifier), handed to
  :mod:`.backends` (this process, loky or Dask);
- :mod:`.task`: one task's fit and predictions, and :mod:`.task_sets` the
  conformal step of every strategy the split serves;
- :mod:`.crossconformal`: UXC's fold models and cross-conformal sets;
- :mod:`.aggregate`: per-split metrics into the study's summary;
- :mod:`.labelcurve`: coverage, set size and accuracy against the number of
  labelled windows of a new user (``mueval curve``).
"""

__all__: list[str] = []
