"""The Python API: :func:`evaluate` a dataset into a :class:`~mueval.run.Run`, :func:`compare` runs.

The command line is a thin layer over these functions; a notebook gets the same
numbers::

    import mueval

    run = mueval.evaluate("wisdm", strategies=["mm", "ucm"], iterations=5)
    run.summary                      # mean and SD over iterations
    run.save("runs/wisdm")           # the run folder (mueval.runfolder)
    again = mueval.Run.load("runs/wisdm")
    again.report("runs/wisdm/report")
"""

from __future__ import annotations

import datetime as dt
import platform
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mueval.comparison.guarantees import compare_guarantees as compare_folders
from mueval.comparison.significance import compare_runs
from mueval.cpus import resolve_jobs
from mueval.data.cohorts import RowCohorts, resolve_cohorts
from mueval.data.table import Table, load_data, natural_key
from mueval.data.users import user_text
from mueval.errors import UsageError
from mueval.evaluation.aggregate import splits_frame, summary_frame, user_dtype
from mueval.evaluation.estimators import SCALINGS, UserModel, user_models
from mueval.evaluation.hooks import fit_predict_models
from mueval.evaluation.inputs import check_input
from mueval.evaluation.models import model_records
from mueval.evaluation.records import EvalConfig
from mueval.evaluation.runner import run, stage_timings
from mueval.evaluation.stages import StageProgress
from mueval.guarantees.compute import (
    compute_guarantees,
    compute_guarantees_by_block,
    true_pvalues,
)
from mueval.guarantees.run_diagnostics import (
    ERT_FOLDS,
    WSC_DELTA,
    WSC_DIRECTIONS,
    PoolDiagnostics,
    diagnose,
    diagnostic_names,
)
from mueval.guarantees.user_level import default_combine
from mueval.names import (
    CLASSIFIERS,
    DEFAULT_STRATEGIES,
    STRATEGIES,
    classifier_rank,
    is_pooled,
    parse_classifiers,
    parse_strategies,
)
from mueval.run import Run
from mueval.runfolder import (
    PredictionStream,
    finish_run_folder,
    open_run_folder,
    predictions_table,
    read_run_folder,
)
from mueval.strategies import Strategy, get_strategy
from mueval.version import __version__

if TYPE_CHECKING:
    from mueval.comparison.guarantees import GuaranteeComparison

__all__ = ["compare", "compare_guarantees", "evaluate", "evaluate_table"]

#: The prediction columns the per-user guarantees, coverage per class and cohort and
#: the validity test need (not the sets nor the probabilities).
_GUARANTEE_COLUMNS = [
    "strategy",
    "classifier",
    "iteration",
    "target_user",
    "userid",
    "y_true",
    "covered",
    "set_size",
    "p_values",
]


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version(), "mueval": __version__}
    for key, dist in (
        ("mudata", "mudata-mueval"),
        ("numpy", "numpy"),
        ("pandas", "pandas"),
        ("scikit-learn", "scikit-learn"),
        ("mapie", "mapie"),
    ):
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    return out


def _diagnostics_config(level: str) -> dict[str, Any]:
    config: dict[str, Any] = {"diagnostics": level}
    if level == "full":
        # Flat keys: the report prints the configuration one setting a line.
        config.update(
            {
                "diagnostics_features": "MinMaxScaler fitted on the whole table",
                "diagnostics_wsc_directions": WSC_DIRECTIONS,
                "diagnostics_wsc_delta": WSC_DELTA,
                "diagnostics_ert_model": "LogisticRegression(max_iter=1000)",
                "diagnostics_ert_loss": "brier",
                "diagnostics_ert_folds": ERT_FOLDS,
                "diagnostics_random_state": "the iteration's seed",
            }
        )
    return config


def evaluate_table(
    table: Table,
    config: EvalConfig,
    *,
    diagnostics: str = "basic",
    cohorts: str | Path | pd.DataFrame | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    **execution: Any,
) -> Run:
    """Evaluate a loaded :class:`~mueval.data.table.Table` under ``config``.

    ``execution`` holds where the tasks run (``jobs``, default every usable
    CPU, ``backend``, ``scheduler``, ``workers``, ``progress``, and on Dask
    ``in_flight``, the most tasks submitted and not yet gathered), passed to
    :func:`mueval.evaluation.runner.run`; see :func:`evaluate` for every
    parameter. ``progress`` also shows the stages after the tasks
    (:class:`~mueval.evaluation.stages.StageProgress`).
    """
    diagnostic_names(diagnostics)  # an unknown level fails before any work
    # Every usable CPU unless told: the results are the same for any count.
    execution = {**execution, "jobs": resolve_jobs(execution.get("jobs"))}
    table, row_cohorts = resolve_cohorts(
        table,
        cohorts,
        by_cohort=config.conditioning.by_cohort,
        column=config.conditioning.column,
        terms=config.conditioning.terms,
    )
    stages = StageProgress(
        [*_STAGES, *(["saving"] if out is not None else [])], execution.get("progress")
    )
    try:
        result = _evaluate_into(
            table, config, row_cohorts, diagnostics, execution, stages, out, overwrite
        )
    except BaseException:
        stages.close(done=False)  # the bar keeps the name of the stage that failed
        raise
    stages.close()
    return result


#: The stages after the tasks, as the progress bar names them (and ``saving`` with ``out``).
_STAGES = ("diagnostics", "summary", "predictions", "guarantees")


def _evaluate_into(
    table: Table,
    config: EvalConfig,
    row_cohorts: RowCohorts | None,
    diagnostics: str,
    execution: dict[str, Any],
    stages: StageProgress,
    out: str | Path | None,
    overwrite: bool,
) -> Run:
    """:func:`evaluate_table` once its arguments are checked: in memory, or into ``out``."""
    if out is None:
        return _evaluate(table, config, None, row_cohorts, diagnostics, execution, stages)
    target, tmp = open_run_folder(out, overwrite)
    stream = PredictionStream(
        tmp,
        table.classes,
        table.users,
        table.y,
        target_dtype=_target_dtype(table, config),
        pooled=True,
    )
    try:
        result = _evaluate(table, config, stream, row_cohorts, diagnostics, execution, stages)
    except BaseException:
        stream.abort()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    with stages.stage("saving"):
        result.path = finish_run_folder(
            target, tmp, predictions=None, overwrite=overwrite, **result._files()
        )
    result._predictions_file = result.path / "predictions.parquet"
    return result


def _strategy_records(strategies: Sequence[str]) -> dict[str, Any]:
    """``strategy_records``: the records of the run's strategies of the user's (none
    for the built-ins, whose records are mueval's), so that the folder says what
    they were and a report made without them gives no verdict where none exists."""
    own = {s: get_strategy(s).record() for s in strategies if s not in STRATEGIES}
    return {"strategy_records": own} if own else {}


def _target_dtype(table: Table, config: EvalConfig) -> str:
    """``target_user``'s type for the whole run, as :func:`predictions_table` picks it
    from all the run's results at once."""
    per_user = [s for s in config.strategies if not is_pooled(s)]
    return user_dtype(np.unique(table.users).tolist() if per_user else [])


def _evaluate(
    table: Table,
    config: EvalConfig,
    stream: PredictionStream | None,
    row_cohorts: RowCohorts | None,
    diagnostics: str,
    execution: dict[str, Any],
    stages: StageProgress,
) -> Run:
    """The body of :func:`evaluate_table`; with ``stream``, the predictions go
    there as tasks finish and their whole table is never built here: the
    diagnostics take each task's rows and sets as it arrives
    (:class:`PoolDiagnostics`, one iteration's pools at a time), then its
    arrays are dropped once written."""
    condition = config.conditioning
    start = time.perf_counter()
    pooled = None
    on_task = None
    # The same diagnostics whether pooled as tasks finish or computed at the end.
    diagnostic_options = {
        "alpha": config.alpha,
        "level": diagnostics,
        "jobs": execution["jobs"],
    }
    if stream is not None:
        pooled = PoolDiagnostics(table.X, table.y, table.users, **diagnostic_options)

        def on_task(results: list) -> None:
            # The diagnostics first: the stream lets go of what they read.
            pooled.add(results)
            stream.add(results)

    output = run(
        table.X,
        table.y,
        table.users,
        table.classes,
        config,
        cohorts=row_cohorts,
        on_task=on_task,
        **execution,
    )
    t0 = time.perf_counter()
    with stages.stage("diagnostics"):
        if pooled is not None:
            diag = pooled.finish()
        else:
            diag = diagnose(output.results, table.X, table.y, table.users, **diagnostic_options)
    # Streamed, most pools were diagnosed while the tasks ran: count those seconds.
    output.timings["diagnostics_s"] = time.perf_counter() - t0 if pooled is None else pooled.seconds
    with stages.stage("summary"):
        splits = splits_frame(output.results)
        summary = summary_frame(splits, diag.frame if diag.names else None)
    with stages.stage("predictions"):
        if stream is None:
            arrow = predictions_table(output.results, table.classes, table.users, table.y)
            predictions = rows = arrow.to_pandas()
        else:
            arrow = predictions = rows = None
            path = stream.close()
            output.timings["predictions_write_s"] = stream.seconds
    user_cohorts = _user_cohorts_frame(table, row_cohorts)
    recorded = {
        **config.record(),
        "condition": condition.text,
        "cohort_column": None if row_cohorts is None else row_cohorts.column,
        # How each strategy's iterations are combined in the per-user verdicts.
        "user_combine": {s: default_combine(s, config.split) for s in config.strategies},
        **_strategy_records(config.strategies),
        "jobs": execution["jobs"],
        "backend": execution.get("backend", "loky"),
        **_diagnostics_config(diagnostics),
    }
    t0 = time.perf_counter()
    options: dict[str, Any] = {
        "alpha": config.alpha,
        "n_classes": len(table.classes),
        "classes": table.classes,
        "condition": condition,
        "user_cohorts": user_cohorts,
        "config": recorded,
    }
    with stages.stage("guarantees"):
        blocks = None if rows is not None else _blocks_of(path)
        if blocks is not None and blocks[0]:
            # One (strategy, classifier)'s rows at a time, read back from the file.
            def read_block(strategy: str, classifier: str) -> pd.DataFrame:
                return _guarantee_rows(path, table.classes, block=(strategy, classifier))

            found = compute_guarantees_by_block(
                read_block, *blocks, splits, on_step=stages.detail, **options
            )
        else:
            if rows is None:
                rows = _guarantee_rows(path, table.classes)
            found = compute_guarantees(rows, splits, on_step=stages.detail, **options)
    # Intervals, verdicts, validity tests and warnings: after the tasks, so
    # timed apart (the exact KS tests of the validity check dominate it).
    output.timings["guarantees_s"] = time.perf_counter() - t0
    # Per stage and strategy/classifier, with what came after the tasks (the
    # last row group of the stream is written after the runner returned).
    per_stage = stage_timings(output.results)
    for key, seconds in diag.seconds.items():
        per_stage.setdefault(key, {})["diagnostics_s"] = round(seconds, 6)
    info: dict[str, Any] = {
        "dataset": table.info,
        "classes": list(table.classes),
        "config": recorded,
        "models": model_records(config.classifiers, config.user_models),
        "versions": _versions(),
        "skipped": output.notes,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "timings": {**output.timings, "total_s": time.perf_counter() - start},
        "stage_timings": per_stage,
        "warnings": found.warnings,
    }
    return Run(
        summary=summary,
        splits=splits,
        predictions=predictions,
        diagnostics=diag.frame if diag.names else None,
        size_coverage=diag.size_coverage if diag.names else None,
        user_coverage=found.user_coverage,
        coverage_summary=found.coverage_summary,
        conditional_coverage=found.conditional_coverage,
        user_validity=found.user_validity,
        user_cohorts=user_cohorts,
        info=info,
        _arrow=arrow,
    )


def _guarantee_rows(
    path: Path, classes: Sequence[str], block: tuple[str, str] | None = None
) -> pd.DataFrame:
    """The prediction columns the guarantees read, one row group at a time.

    Each row's list of p-values (an object per row once in pandas) is reduced
    to that of its true class (``p_true``, :func:`true_pvalues`) as its row
    group is read, so the whole ``p_values`` column is never held in memory.
    With ``block`` (strategy, classifier), only that block's rows.
    """
    file = pq.ParquetFile(path)
    if file.num_row_groups == 0:
        return pq.read_table(path, columns=_GUARANTEE_COLUMNS).to_pandas()
    parts = []
    for i in range(file.num_row_groups):
        if block is not None:
            keys = file.read_row_group(i, columns=["strategy", "classifier"])
            mask = pc.and_(
                pc.equal(keys["strategy"], block[0]), pc.equal(keys["classifier"], block[1])
            )
            if not pc.any(mask).as_py():
                continue
            arrow = file.read_row_group(i, columns=_GUARANTEE_COLUMNS).filter(mask)
        else:
            arrow = file.read_row_group(i, columns=_GUARANTEE_COLUMNS)
        group = arrow.to_pandas()
        group["p_true"] = true_pvalues(group, classes)
        parts.append(group.drop(columns="p_values"))
    if not parts:
        empty = file.read_row_group(0, columns=_GUARANTEE_COLUMNS).slice(0, 0).to_pandas()
        return empty.assign(p_true=np.zeros(0)).drop(columns="p_values")
    return pd.concat(parts, ignore_index=True)


def _blocks_of(path: Path) -> tuple[list[str], list[str]]:
    """The strategies and the classifiers of a predictions file, each in the
    order of its first row, read one row group at a time."""
    file = pq.ParquetFile(path)
    strategies: dict[str, None] = {}
    classifiers: dict[str, None] = {}
    for i in range(file.num_row_groups):
        keys = file.read_row_group(i, columns=["strategy", "classifier"])
        for found, column in ((strategies, "strategy"), (classifiers, "classifier")):
            for value in pc.unique(keys[column]).to_pylist():
                found.setdefault(value, None)
    return list(strategies), list(classifiers)


def _user_cohorts_frame(table: Table, row_cohorts: RowCohorts | None) -> pd.DataFrame | None:
    """``user, cohort`` for the run folder, users as the table spells them."""
    if row_cohorts is None:
        return None
    users = pd.unique(table.users)
    cohorts = [row_cohorts.users[user_text(u)] for u in users]
    frame = pd.DataFrame({"user": users, "cohort": cohorts})
    return frame.sort_values("user", key=lambda c: c.map(natural_key)).reset_index(drop=True)


def evaluate(
    data: str | Path | pd.DataFrame,
    *,
    strategies: Sequence[str | Strategy] | str | Strategy = DEFAULT_STRATEGIES,
    classifiers: Any = None,
    models: Mapping[str, Callable[..., Any]] | None = None,
    classifier_params: dict[str, Any] | None = None,
    scale: str = "none",
    alpha: float = 0.05,
    iterations: int = 20,
    seed_base: int = 100,
    score: str | Callable[..., Any] = "lac",
    threshold: str = "study",
    randomized: bool = False,
    raps_lambda: float | None = None,
    raps_k_reg: int | None = None,
    mondrian: bool = False,
    adapt_frac: float = 0.5,
    min_own: int | None = None,
    clusters: int | None = None,
    own_rows: int | None = None,
    assign: str = "rank",
    small_cal: str = "error",
    split: str = "random",
    gap: int = 1,
    split_seeds: str = "protocol",
    user_folds: int | None = None,
    condition: str | None = None,
    cohorts: str | Path | pd.DataFrame | None = None,
    diagnostics: str = "basic",
    user_level: float = 0.05,
    user_correction: str = "holm",
    user_family: str = "run",
    jobs: int | None = None,
    backend: str = "loky",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    user_col: str = "userid",
    label_col: str = "label",
    input: str = "features",
    **source: Any,
) -> Run:
    """Evaluate classifiers (the four built-ins, or models of your own) under the
    multi-user strategies with split conformal prediction. The defaults are the
    reference protocol (``docs/protocol.md``).

    Parameters
    ----------
    data : str, Path or DataFrame
        A registered mudata dataset (``"wisdm"``), a ``.csv``/``.parquet`` file,
        or a DataFrame with a user column, a label column and numeric features.
    strategies : sequence of str or Strategy, str or Strategy
        Codes ``mm``, ``udm``, ``uim``, ``ucm``, ``uam``, ``uxc``, aliases, comma lists or
        ``"all"`` (the built-ins); the code of a strategy registered with
        :func:`mueval.strategies.register_strategy`, its
        :class:`~mueval.strategies.Strategy` record (registered here) or the
        import path ``"module:attribute"`` of one.
    classifiers : str, estimator, sequence or dict
        Built-in codes ``nb``, ``rf``, ``svm``, ``knn`` or ``"all"``; import
        paths ``"module:attribute"`` (a classifier class or factory); unfitted
        scikit-learn estimators or Pipelines with ``predict_proba``; a list
        mixing them; or a dict of name -> any of these. A model of your own is
        named by its dict key or its class name (``-2``, ``-3`` ... when taken).
        Each split fits a :func:`sklearn.base.clone` of it with every
        ``*random_state`` parameter (nested ones too) set to the iteration's seed.
        None (the default): the four built-ins, or none when ``models`` is given.
    models : dict of str to callable, optional
        Models of any framework, by name: ``fit_predict(X_train, y_train,
        X_eval, seed) -> proba``, with ``proba`` of shape (n_eval, m), one
        column per class of ``y_train`` (class indices ``0 .. K-1`` of the sorted
        labels) in increasing order, finite, in [0, 1], rows summing to 1
        within 1e-6 (:mod:`mueval.evaluation.hooks` states the contract). They
        get raw features unless ``scale="minmax"``, and ``seed`` is the
        iteration's. ``jobs > 1`` and Dask send them pickled (cloudpickle when
        pickle fails); one that neither can pickle is refused before the run.
    classifier_params : dict, optional
        Keyword arguments of the import-path models (``--classifier-param``).
    scale : {"none", "minmax"}
        Your own models: the protocol's min-max scaling first, or none (the
        default: your Pipeline decides). The built-ins are always scaled.
    alpha : float
        Miscoverage level (0.05 = 95 % confidence).
    iterations, seed_base : int
        Iteration *i* uses seed ``seed_base + i`` for every split and model.
    score : {"lac", "aps", "raps", "top_k"} or callable
        The conformity score, larger = stranger
        (:data:`mueval.conformal.scores.SCORE_REGISTRY`), or a function
        ``score(proba, y) -> scores``: ``proba`` (n, K), ``y`` class indices
        (n,), one float per row (recorded under its ``__name__``).
        ``"raps"`` needs ``raps_lambda`` and ``raps_k_reg`` unless
        ``threshold="mapie"`` (MAPIE 1.x's own RAPS, which tunes them).
    threshold : {"study", "mapie"}
        The reference study's threshold rule (MAPIE 0.8.6) or MAPIE 1.x's.
    randomized : bool
        ``aps`` and ``raps``: break ties at random (subtract ``u * p(y)``, ``u``
        uniform, seeded by the iteration); default deterministic.
    raps_lambda, raps_k_reg : float and int, optional
        RAPS's penalty ``lambda * max(0, rank(y) - k_reg)``: both or neither.
    mondrian : bool
        One threshold per class.
    adapt_frac : float
        ``uam``: share of the target user's rows added to training.
    min_own, clusters, own_rows : int, optional
        UKM (:mod:`mueval.evaluation.clustered`): the own calibration rows from
        which a target calibrates on them (default: 20 at ``alpha = 0.05``),
        the number of k-means clusters of users (default: Ding et al.'s
        heuristic), and how many of the target's calibration rows to keep
        (default: all).
    assign : {"rank", "centroid"}
        UKM: how a target below ``min_own`` finds its cluster
        (:data:`~mueval.evaluation.clustered.ASSIGN_RULES`).
    small_cal : {"error", "skip", "full-set"}
        What a calibration set too small for ``alpha`` gets.
    split : {"random", "blocked"}
        Within-user split of UDM, UCM and UAM; ``gap`` rows between blocks.
    gap : int
        ``split="blocked"``: rows left out between two blocks.
    split_seeds : {"protocol", "independent"}
        ``protocol`` (the study's numbers) seeds every split of an iteration with
        its one seed, so the other users' split (the model's training rows) and
        the target user's own split under UIM, UCM and UKM draw from one seed;
        ``independent`` derives one seed per role from it with
        ``numpy.random.SeedSequence`` (:mod:`mueval.evaluation.split_seeds`).
        Recorded in ``run.json``.
    user_folds : int, optional
        UIM and UCM fit one model per fold of users (``K`` grouped folds)
        instead of one per user, and UXC calibrates on ``K`` grouped folds of
        the non-target users; None (default) is leave-one-user-out.
    condition : str, optional
        What the threshold is conditioned on: None (the protocol), ``"class"``
        (as ``mondrian=True``), ``"cohort:COLUMN"`` or ``"class+cohort:COLUMN"``
        (one per cohort of users, or per cohort and class), or
        ``"cohorts:COL1,COL2,..."`` (coverage in every cohort of every column
        at once, by the conditional quantile regression of Gibbs, Cherian and
        Candès; ``COL1*COL2`` adds their intersections); see
        ``docs/per-user-guarantees.md``.
    cohorts : path or DataFrame, optional
        Where the cohorts come from: a CSV or table with ``userid`` and the
        cohort column(s). Without it the columns are taken from ``data`` (and
        are then no features).
    diagnostics : {"none", "basic", "full"}
        Conditional-coverage diagnostics to compute.
    user_level : float
        Level of the per-user verdicts "below target" (the exact test of
        :mod:`mueval.guarantees.user_level`); changes no set.
    user_correction : {"holm", "bh", "none"}
        Their correction across the users of ``user_family``.
    user_family : {"run", "pair"}
        ``"run"`` (default): one family of every user of every strategy and
        classifier, so the level (family-wise error under Holm, false
        discovery rate under BH) holds for the whole run, and the pooled
        coverage tests are corrected across the run's strategies and
        classifiers; ``"pair"``: each strategy and classifier apart.
    jobs : int, optional
        Worker processes (loky); the results do not depend on it. None (the
        default) or -1: every CPU this process may use
        (:func:`mueval.cpus.usable_cpus`); never more workers than tasks.
    backend : {"loky", "dask"}
        ``dask``: the cluster at ``scheduler``, or a local one of ``workers``
        processes.
    scheduler : str, optional
        ``backend="dask"``: the address of a running scheduler.
    workers : int, optional
        ``backend="dask"`` without ``scheduler``: processes of the local cluster.
    progress : bool, optional
        Progress on stderr (default: a bar on a terminal, log lines elsewhere).
    out : str or Path, optional
        Write the run folder there (atomically, as :meth:`Run.save`), streaming
        the predictions to ``predictions.parquet`` in row groups as tasks finish,
        so their whole table is never built in memory; ``Run.predictions`` then reads
        them from the folder when first used. Their rows come in task order
        (iteration first), not sorted by strategy as in memory; each split's
        rows stay together.
    overwrite : bool
        Replace an existing run folder at ``out``.
    user_col, label_col : str
        Columns of a file or DataFrame.
    input : {"features", "windows"}
        What the models are fed: the feature table's rows (the protocol), or a
        registered dataset's windows of samples, float32 of shape ``(n, T, C)``
        with the same rows, users and order (:func:`mudata.load` with
        ``windows=True``). Windows are for models that take such arrays (``cnn``
        of ``mueval[deep]``, or your own); the built-ins take features and are
        refused on windows, as is ``scale="minmax"``.
    **source
        For a registered dataset, where its files come from: ``data_home``,
        ``manual_dir``, ``mirror``, ``allow_unverified``, ``max_expansion``
        (see ``mudata fetch``).

    Returns
    -------
    Run

    Raises
    ------
    mueval.errors.UsageError
        An unknown name or a bad option value.
    mueval.errors.MuevalError
        Data that cannot be evaluated, or a split or conformal step that fails.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> frame = pd.DataFrame({"userid": np.repeat([1, 2, 3], 60),
    ...                       "label": np.tile(np.repeat(["sit", "walk"], 30), 3),
    ...                       "x": rng.normal(size=180)})
    >>> frame.loc[frame.label == "walk", "x"] += 3
    >>> run = evaluate(frame, strategies="mm", classifiers="nb", iterations=2,
    ...                progress=False)
    >>> row = run.summary.query("metric == 'coverage'")
    >>> row[["strategy", "classifier", "n"]].to_dict("records")
    [{'strategy': 'mm', 'classifier': 'nb', 'n': 2}]
    """
    names, own = _all_models(classifiers, models, classifier_params, scale)
    check_input(input, names, own)
    config = EvalConfig(
        strategies=tuple(parse_strategies(strategies)),
        classifiers=names,
        models=own,
        alpha=alpha,
        iterations=iterations,
        seed_base=seed_base,
        score=score,
        threshold=threshold,
        randomized=randomized,
        raps_lambda=raps_lambda,
        raps_k_reg=raps_k_reg,
        mondrian=mondrian,
        adapt_frac=adapt_frac,
        min_own=min_own,
        clusters=clusters,
        own_rows=own_rows,
        assign=assign,
        small_cal=small_cal,
        split=split,
        gap=gap,
        split_seeds=split_seeds,
        user_folds=user_folds,
        condition=condition,
        user_level=user_level,
        user_correction=user_correction,
        user_family=user_family,
    )
    if isinstance(data, pd.DataFrame) and cohorts is None and config.conditioning.by_cohort:
        # A cohort column of any type (text too) is taken out before the features
        # are checked to be numeric.
        data, cohorts = _split_cohort_column(
            data, config.conditioning.columns or config.conditioning.column, user_col
        )
    table = load_data(data, user_col=user_col, label_col=label_col, input=input, **source)
    return evaluate_table(
        table,
        config,
        jobs=jobs,
        backend=backend,
        scheduler=scheduler,
        workers=workers,
        progress=progress,
        diagnostics=diagnostics,
        cohorts=cohorts,
        out=out,
        overwrite=overwrite,
    )


def _all_models(
    classifiers: Any,
    hooks: Mapping[str, Callable[..., Any]] | None,
    params: dict[str, Any] | None,
    scale: str,
) -> tuple[tuple[str, ...], tuple[UserModel, ...]]:
    """The run's classifier names and user models: the estimators and codes of
    ``classifiers``, then the ``fit_predict`` functions of ``models``."""
    if classifiers is None:
        classifiers = () if hooks else CLASSIFIERS
    names: tuple[str, ...] = ()
    own: tuple[UserModel, ...] = ()
    empty = isinstance(classifiers, (tuple, list)) and not classifiers
    if not empty or not hooks:
        names, own = user_models(classifiers, params=params, scale=scale)
    if not hooks:
        return names, own
    if scale not in SCALINGS:
        message = f"unknown scaling {scale!r}; valid: {', '.join(SCALINGS)}"
        raise UsageError(message)
    taken = {c.casefold() for c in (*CLASSIFIERS, *names)}
    added = fit_predict_models(hooks, taken=taken, scale=scale == "minmax")
    every = sorted([*names, *(m.name for m in added)], key=classifier_rank)
    return tuple(every), (*own, *added)


def _split_cohort_column(
    frame: pd.DataFrame, column: str | tuple[str, ...] | None, user_col: str
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """A DataFrame's cohort column (or columns, all present) as a cohorts table,
    and the frame without them."""
    columns = [column] if isinstance(column, str) else list(column or ())
    if not columns or any(c not in frame.columns for c in columns):
        return frame, None
    cohorts = pd.DataFrame({"userid": frame[user_col], **{c: frame[c] for c in columns}})
    return frame.drop(columns=columns), cohorts


def _as_list(value: Sequence[str] | str) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def compare(
    runs: Sequence[Run | str | Path],
    *,
    metric: str = "coverage",
    strategies: str | Sequence[str] | None = None,
    classifiers: str | Sequence[str] | None = None,
    all_pairs: bool = False,
    adjust: str = "holm",
) -> pd.DataFrame:
    """Test the differences between strategies in one or more runs of one dataset.

    One run: every pair of its strategies, per classifier. Several runs: each
    strategy against itself in the other runs (``all_pairs=True``: every pair).
    Three labelled tests per pair: the study's Welch t-test over iterations
    (uncorrected), Nadeau and Bengio's corrected resampled t-test (paired by
    seed) and a Wilcoxon signed-rank test over users. A strategy found in
    several runs is prefixed with its run's label.

    Parameters
    ----------
    runs : sequence of Run, str or Path
        Runs in memory or run folders.
    metric : str
        A per-split metric (a column of ``Run.splits``).
    strategies, classifiers : str or sequence of str, optional
        Codes (comma lists and aliases allowed) to compare; default every one in the runs.
    all_pairs : bool, default False
        Several runs: also the mismatched pairs (``a/uim`` against ``b/mm``).
    adjust : {"holm", "none"}, default "holm"
        Multiple-comparison correction of the p-values within each test, over
        all its pairs and classifiers (``p_adjusted``; ``p_value`` stays raw).

    Returns
    -------
    DataFrame
        One row per (classifier, strategy_a, strategy_b, test): means, statistic,
        df, p_value, stars, n, note, library_warning, caution, and adjust,
        family_size, p_adjusted, stars_adjusted.

    Raises
    ------
    mueval.errors.UsageError
        A strategy or classifier that is no code, or that no run holds.
    mueval.errors.DataError
        The runs evaluate different datasets, or hold nothing to compare.
    """
    folders = [r.folder() if isinstance(r, Run) else read_run_folder(r) for r in runs]
    present = {c for f in folders for c in pd.unique(f.splits["classifier"])}
    known = {s for f in folders for s in pd.unique(f.splits["strategy"])}
    return compare_runs(
        folders,
        metric=metric,
        strategies=None if strategies is None else parse_strategies(strategies, known),
        classifiers=None
        if classifiers is None
        else parse_classifiers(_as_list(classifiers), extra=present),
        all_pairs=all_pairs,
        adjust=adjust,
    ).table


def compare_guarantees(runs: Sequence[Run | str | Path]) -> GuaranteeComparison:
    """Per-user coverage guarantees of strategies in one or more runs, side by side.

    For each (strategy, classifier): pooled coverage and the worst user, each
    with a Clopper-Pearson interval, and the share of users below target (each
    run's verdicts, :mod:`mueval.guarantees.user_level`). For each pair of
    strategies of one classifier, McNemar's exact test of whether they leave
    different users below target.
    Runs with the same strategies (a random and a blocked split) stay apart,
    prefixed with their labels.

    Parameters
    ----------
    runs : sequence of Run, str or Path
        Runs in memory or run folders, of one dataset and one alpha.

    Returns
    -------
    GuaranteeComparison
        ``.summary`` and ``.tests`` (DataFrames), ``.labels``, ``.warnings``.

    Raises
    ------
    mueval.errors.DataError
        The runs evaluate different datasets or use different alpha.
    """
    folders = [r.folder() if isinstance(r, Run) else read_run_folder(r) for r in runs]
    return compare_folders(folders)
