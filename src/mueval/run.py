"""The record of one evaluation, :class:`Run`: its run folder in memory, saved, loaded, reported."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mueval.comparison.runs import UNSAVED
from mueval.report.tables import format_table
from mueval.runfolder import RunFolder, read_run_csv, read_run_folder, write_run
from mueval.runfolder.columns import run_file_frame

__all__ = ["Run"]


class _Predictions:
    """``Run.predictions``: the frame given, or else the run folder's
    ``predictions.parquet``, read the first time it is asked for (a run that
    streamed its predictions there never built their whole table)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_frame"

    def __get__(self, run: Run | None, owner: type | None = None) -> pd.DataFrame | None:
        if run is None:
            return None  # the field's default
        frame = run.__dict__.get(self._slot)
        if frame is None and run._predictions_file is not None:
            frame = pq.read_table(run._predictions_file).to_pandas()
            run.__dict__[self._slot] = frame
        return frame

    def __set__(self, run: Run, value: pd.DataFrame | None) -> None:
        run.__dict__[self._slot] = value


#: The optional tables a run holds under the same names as its folder
#: (:class:`~mueval.runfolder.RunFolder`) and :func:`~mueval.runfolder.write_run`.
_OPTIONAL_TABLES = (
    "diagnostics",
    "user_coverage",
    "coverage_summary",
    "conditional_coverage",
    "user_validity",
    "user_cohorts",
)


@dataclass
class Run:
    """Everything one evaluation produced: the run folder, in memory.

    Attributes
    ----------
    summary : DataFrame
        Mean and sample SD over iterations: ``strategy, classifier, metric, mean,
        sd, n``.
    splits : DataFrame
        One row per (strategy, classifier, iteration, target user) with every metric.
    predictions : DataFrame
        One row per test row per split: true class, prediction, set, p-values,
        probabilities (``predictions.parquet``). A run evaluated with ``out``
        reads it from its folder when first used.
    diagnostics : DataFrame or None
        The conditional-coverage diagnostics per (strategy, classifier, iteration).
    size_coverage : DataFrame or None
        Coverage by set size.
    user_coverage : DataFrame or None
        Each user's coverage over all test rows and iterations with its
        Clopper-Pearson interval (a description of the observed rate) and the
        exact per-user test: ``p_value``, ``p_adjusted`` and the verdict
        ``below`` (``user_coverage.csv``; see
        :func:`mueval.guarantees.run_verdicts.user_coverage_table`).
    coverage_summary : DataFrame or None
        Per (strategy, classifier): the share of users below target (the
        verdicts, at ``config["user_level"]`` after
        ``config["user_correction"]``), the worst user and the pooled coverage,
        with intervals (``coverage_summary.csv``).
    conditional_coverage : DataFrame or None
        Coverage per class and, when the run had cohorts, per cohort of users,
        with Clopper-Pearson intervals (``conditional_coverage.csv``).
    user_validity : DataFrame or None
        The one-sided KS test of each user's true-label p-values,
        Benjamini-Hochberg adjusted (``user_validity.csv``; see
        :mod:`mueval.guarantees.validity`).
    user_cohorts : DataFrame or None
        ``user, cohort`` when the run had cohorts (``user_cohorts.csv``).
    info : dict
        The content of ``run.json``: ``dataset``, ``classes``, ``config``,
        ``versions``, ``skipped`` (notes), ``timings`` (wall seconds per phase),
        ``stage_timings`` (task seconds per stage for each strategy/classifier),
        ``warnings`` (see :attr:`warnings`), ``created``.
    path : Path or None
        The folder it was saved to or loaded from.
    """

    summary: pd.DataFrame
    splits: pd.DataFrame
    predictions: pd.DataFrame = _Predictions()  # type: ignore[assignment]
    diagnostics: pd.DataFrame | None = None
    size_coverage: pd.DataFrame | None = None
    user_coverage: pd.DataFrame | None = None
    coverage_summary: pd.DataFrame | None = None
    conditional_coverage: pd.DataFrame | None = None
    user_validity: pd.DataFrame | None = None
    user_cohorts: pd.DataFrame | None = None
    info: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    _arrow: pa.Table | None = field(default=None, repr=False)
    _predictions_file: Path | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # User ids as text in every table, as in the run folder and in mudata's
        # tables (a run in memory holds them as integers where they were numbers).
        self.splits = run_file_frame("splits.parquet", self.splits)
        for name in ("user_coverage", "coverage_summary", "user_validity", "user_cohorts"):
            frame = getattr(self, name)
            if frame is not None:
                setattr(self, name, run_file_frame(name, frame))

    @property
    def config(self) -> dict[str, Any]:
        """What was evaluated and how (``run.json``'s ``config``)."""
        return self.info.get("config", {})

    @property
    def provenance(self) -> dict[str, Any]:
        """The dataset: name, source, row and user counts, the table's hash."""
        return self.info.get("dataset", {})

    @property
    def classes(self) -> list[str]:
        """Class names in index order."""
        return list(self.info.get("classes", []))

    @property
    def notes(self) -> list[str]:
        """What the run skipped or answered conservatively, one line each."""
        return list(self.info.get("skipped", []))

    @property
    def warnings(self) -> list[dict[str, Any]]:
        """Interval-driven warnings, one dict each (``strategy, classifier, kind,
        message, severity``; see :mod:`mueval.guarantees.run_warnings`)."""
        return list(self.info.get("warnings", []))

    def table(self) -> str:
        """The study-style mean ± SD tables, one block per strategy.

        Returns
        -------
        str
            The text ``mueval evaluate`` prints: metrics as rows, classifiers
            as columns.
        """
        return format_table(self.summary)

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the run folder atomically (see :mod:`mueval.runfolder`).

        Parameters
        ----------
        path : str or Path
            The run folder to write.
        overwrite : bool
            Replace an existing run folder (never anything else).

        Returns
        -------
        Path
            The folder written (also kept in :attr:`path`).
        """
        arrow = self._arrow
        if (
            arrow is None
            and self.__dict__.get("_predictions_frame") is None
            and (self._predictions_file is not None)
        ):
            arrow = pq.read_table(self._predictions_file)
        if arrow is None:
            arrow = pa.Table.from_pandas(self.predictions, preserve_index=False)
        self.path = write_run(path, predictions=arrow, overwrite=overwrite, **self._files())
        return self.path

    def _files(self) -> dict[str, Any]:
        """What a run folder holds besides the predictions (see :func:`write_run`)."""
        return {
            "run_info": {k: v for k, v in self.info.items() if k not in ("format", "files")},
            "summary": self.summary,
            "splits": self.splits,
            "size_coverage": self.size_coverage,
            **{name: getattr(self, name) for name in _OPTIONAL_TABLES},
        }

    @classmethod
    def load(cls, path: str | Path) -> Run:
        """Read a run folder, checking every file and their consistency.

        Parameters
        ----------
        path : str or Path
            A folder written by :meth:`save` or ``mueval evaluate --out``.

        Returns
        -------
        Run
            The run, its :attr:`path` the folder.

        Raises
        ------
        mueval.runfolder.RunFolderError
            Naming the missing file, the malformed field or the first contradiction.
        """
        folder = read_run_folder(path)
        size_coverage = None
        if (folder.path / "size_coverage.csv").exists() or (
            folder.path / "size_coverage.csv"
        ).is_symlink():
            size_coverage = read_run_csv(folder.path, "size_coverage.csv")
        return cls(
            summary=folder.summary,
            splits=folder.splits,
            predictions=folder.predictions,
            size_coverage=size_coverage,
            **{name: getattr(folder, name) for name in _OPTIONAL_TABLES},
            info={**folder.run, "warnings": folder.warnings or []},
            path=folder.path,
        )

    def folder(self) -> RunFolder:
        """This run as the report reads a run folder."""
        path = self.path if self.path is not None else UNSAVED
        return RunFolder(
            path,
            self.info,
            self.classes,
            self.summary,
            self.splits,
            self.predictions,
            self.diagnostics,
            self.user_coverage,
            self.coverage_summary,
            self.warnings,
            conditional_coverage=self.conditional_coverage,
            user_validity=self.user_validity,
            user_cohorts=self.user_cohorts,
        )

    def report(self, path: str | Path, *, overwrite: bool = False, **options: Any) -> Path:
        """Build the HTML report and its figures under ``path``.

        Parameters
        ----------
        path : str or Path
            Output folder: new, empty, or (with ``overwrite``) an earlier
            report and nothing else, as for ``mueval report``.
        overwrite : bool, default False
            Replace an earlier report in ``path``.
        **options
            ``strategies``, ``classifiers``, ``n_boot``, ``seed``, ``top_sets``,
            ``min_count``, ``progress``, ``figures``, ``figure_format`` (``"svg"``,
            ``"pdf"``, ``"png"``), ``dpi``, ``titles`` (see
            :func:`mueval.report.build.build_report`).

        Returns
        -------
        Path
            The ``report.html`` written.
        """
        # Here, not at the top: matplotlib, only when a report is drawn.
        from mueval.report.build import build_report

        return build_report(self.folder(), path, overwrite=overwrite, **options).html
