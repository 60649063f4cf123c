"""Drawing the (strategy, classifier) sections in worker processes.

This module owns the process pool of ``figures="all"``: each pair's rows are
cut from the run's arrays once (:mod:`mueval.runfolder.arrays`), handed to loky
workers largest first, and their sections collected in grid order; with one
worker they are drawn in this process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import matplotlib
import numpy as np
import pandas as pd
from joblib.executor import get_memmapping_executor
from tqdm import tqdm

from mueval.cpus import resolve_jobs
from mueval.report.figure_set import FigureSet, FigureStyle
from mueval.report.html import Section
from mueval.report.pair_section import pair_section
from mueval.runfolder import RunFolder
from mueval.runfolder.arrays import PairRows, pair_rows, run_arrays

__all__ = ["PairDrawing", "pair_positions"]


def pair_positions(predictions: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """Row positions of each (strategy, classifier) in ``predictions``, found in one
    pass (comparing the text columns once per pair costs seconds on a large run)."""
    groups = predictions.groupby(["strategy", "classifier"], sort=False, observed=True)
    # Keyed by (strategy, classifier) tuples, grouped by two columns.
    indices = cast(dict[tuple[object, object], np.ndarray], groups.indices)
    return {(str(s), str(c)): rows for (s, c), rows in indices.items()}


def _pair_task(
    rows: PairRows, out: Path, s: str, c: str, options: dict[str, int], style: FigureStyle
) -> tuple[Section, list[str], list[Path]]:
    """One (strategy, classifier) section with its figures, in this process or a worker."""
    # Workers start a fresh interpreter: the non-interactive backend, and the same
    # settings build_report sets around the build.
    matplotlib.use("Agg")
    with matplotlib.rc_context({"text.parse_math": False}):
        figs = FigureSet(out, style=style)
        sec, warnings = pair_section(rows, figs, s, c, **options)
    return sec, warnings, figs.paths


class PairDrawing:
    """The (strategy, classifier) sections with their figures (``figures="all"``).

    With more than one worker, every section is handed to the worker processes
    (loky) when this is made, largest first so that no worker is left alone with
    a long one at the end, each with its own rows only; the main process builds
    the rest of the page meanwhile, then :meth:`collect` takes the sections in
    grid order. With one, :meth:`collect` draws them in this process.
    """

    def __init__(
        self,
        run: RunFolder,
        out: Path,
        pairs: dict[tuple[str, str], np.ndarray],
        *,
        jobs: int,
        options: dict[str, int],
        style: FigureStyle,
    ) -> None:
        self.run, self.out, self.pairs = run, out, pairs
        self.options, self.style = options, style
        workers = min(len(pairs), resolve_jobs(jobs))
        self.futures: dict[tuple[str, str], Any] = {}
        self.arrays = run_arrays(run) if pairs else None
        if workers > 1:
            # joblib's own factory of loky's one reusable executor: one made by
            # loky directly lacks what joblib's Parallel (the evaluation's tasks)
            # reads when it reuses it. No memmapping: the rows go pickled, as before.
            executor = get_memmapping_executor(workers, max_nbytes=None)
            for s, c in sorted(pairs, key=lambda pair: -len(pairs[pair])):
                rows = pair_rows(run, pairs[(s, c)], self.arrays)
                self.futures[(s, c)] = executor.submit(_pair_task, rows, out, s, c, options, style)

    def collect(self, bar: tqdm) -> list[tuple[Section, list[str], list[Path]]]:
        """Every pair's section, its notes and figure files, in grid order."""
        found = []
        for s, c in self.pairs:
            if self.futures:
                found.append(self.futures[(s, c)].result())
            else:
                rows = pair_rows(self.run, self.pairs[(s, c)], self.arrays)
                found.append(_pair_task(rows, self.out, s, c, self.options, self.style))
            bar.update()
        return found

    def cancel(self) -> None:
        """Drop the sections no worker has started (the build failed)."""
        for future in self.futures.values():
            future.cancel()
