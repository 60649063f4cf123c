"""Reports of a run folder: the study's pictures, per-user coverage and honest diagnostics.

``mueval report RUN_DIR`` builds one self-contained HTML page plus the figures as
PNG and SVG files. Modules:

- :mod:`.build`: the report of one run folder, figures on disk plus the page;
- :mod:`.page_one`: the strategy x classifier grid, the warnings, the first figures;
- :mod:`.run_sections`: the run-wide sections after page one;
- :mod:`.pair_section`: one (strategy, classifier) section, with or without figures;
- :mod:`.drawing`: the worker processes that draw the (strategy, classifier) sections;
- :mod:`.labels`: strategy and classifier names as file-name tokens and as labels;
- :mod:`.figure_set`: how figures are written, and the figures one page collects;
- :mod:`.conditional`: the sections on coverage per class and cohort, and validity;
- :mod:`.side_by_side`: this run's per-user guarantees beside other runs';
- :mod:`.setstats`: statistics of prediction sets (the study's matrices);
- :mod:`.figures`: the figures, drawn with matplotlib;
- :mod:`.html`: escaped text, tables and embedded figures;
- :mod:`.tables`: the study-style terminal tables ``mueval evaluate`` prints.
"""

__all__: list[str] = []
