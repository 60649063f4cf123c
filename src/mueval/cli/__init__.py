"""The ``mueval`` command line: thin commands over :mod:`mueval.api` and the subpackages.

Modules:

- :mod:`.main`: the ``mueval`` group (``main``), ``evaluate``, and the lazily
  loaded commands;
- :mod:`.options`: every option table of ``evaluate``, ``report`` and
  ``compare``, declared once;
- :mod:`.base`: the one mapping from mueval's errors to exit codes, and the
  lazily loading group;
- :mod:`.report`: ``mueval report`` and ``mueval compare``;
- :mod:`.curve`: ``mueval curve``;
- :mod:`.warning_text`: a run's warnings as the terminal prints them.

The commands start without pandas, scikit-learn or matplotlib: each imports
what it needs when it runs.
"""

__all__: list[str] = []
