"""Drafting a registry entry from files a user has (``mudata init``).

Modules, in the order the draft is made:

- :mod:`~mudata.drafting.selection` -- which files are data (documentation and
  metadata left out, each with its reason) and the glob that selects them,
  with :mod:`~mudata.drafting.annotations` for a table of labels by interval
  among the files it would leave out;
- :mod:`~mudata.drafting.aligned_layout` -- feature tables whose labels and
  users are in side files aligned row by row (UCI-HAR's shape), found before
  the rules of the selection apply;
- :mod:`~mudata.drafting.shapes` -- the preamble and line shape of delimited
  text (comment blocks, marker lines, a header on the last comment line, a
  terminator on every line);
- :mod:`~mudata.drafting.columns` -- the role of every column, and the columns
  that are not signals (counters, times, window ids, constant, mostly empty,
  probable label leaks), with :mod:`~mudata.drafting.counters` for row
  counters in any notation and columns that never go back;
- :mod:`~mudata.drafting.layout` -- feature table or raw signals, and the
  reader options with their evidence (:mod:`~mudata.drafting.annotated_layout`
  for signals labelled by an annotation table);
- :mod:`~mudata.drafting.sensors` -- the channels grouped into sensors of any
  arity from their names (``acc_x acc_y acc_z``, ``channel1`` .. ``channel8``);
- :mod:`~mudata.drafting.windows` -- windows per user and class, the user
  filter on windows, and each strategy's calibration size;
- :mod:`~mudata.drafting.toml_text` -- the draft as TOML, evidence as comments;
- :mod:`~mudata.drafting.records` -- the record types these stages pass on;
- :mod:`~mudata.drafting.collect` -- the user's files, hashed and pinned on
  first use; :mod:`~mudata.drafting.first_table` -- how the first is written;
- :mod:`~mudata.drafting.preview` -- the build previewed on the reader's samples;
  :mod:`~mudata.drafting.class_choice` -- the classes drafted and left out;
  :mod:`~mudata.drafting.rate_choice` -- the sampling rate, or its refusal;
- :mod:`~mudata.drafting.draft` -- :func:`~mudata.drafting.draft.draft_entry`,
  the steps above in order.
"""

__all__: list[str] = []
