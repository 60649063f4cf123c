"""The Python API: :func:`evaluate` a dataset into a :class:`~mueval.run.Run`, :func:`compare` runs.

The command line is a thin layer over these functions; a notebook gets the same
numbers::

    import mueval

    run = mueval.evaluate("wisdm", strategies=["mm", "ucm"], iterations=5)
    run.summary                      # mean and SD over iterations
    run.save("runs/wisdm")           # the run folder (mueval.runfolder)
    again = mueval.Run.load("runs/wisdm")
    again.report("runs/wisdm/report")

:mod:`.evaluating` turns the keywords into the settings and the table,
:mod:`.pipeline` evaluates a table into a run, :mod:`.comparing` compares runs.
"""

from mueval.api.comparing import compare, compare_guarantees
from mueval.api.evaluating import evaluate
from mueval.api.pipeline import evaluate_table

__all__ = ["compare", "compare_guarantees", "evaluate", "evaluate_table"]
