""":func:`evaluate`: a dataset, a file or a DataFrame and the run's keywords, into
the conformal settings, an :class:`~mueval.evaluation.config.EvalConfig` and the
table that :func:`~mueval.api.pipeline.evaluate_table` evaluates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mueval.conformal.settings import ConformalSettings
from mueval.data.table import load_data
from mueval.errors import UsageError
from mueval.evaluation.config import EvalConfig
from mueval.evaluation.estimators import SCALINGS, UserModel, user_models
from mueval.evaluation.hooks import fit_predict_models
from mueval.evaluation.inputs import check_input
from mueval.names import (
    CLASSIFIERS,
    DEFAULT_STRATEGIES,
    classifier_rank,
    parse_strategies,
)
from mueval.run import Run
from mueval.strategies import Strategy

if TYPE_CHECKING:
    pass

from mueval.api.pipeline import evaluate_table

__all__ = ["evaluate"]


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
    settings = ConformalSettings(
        alpha=alpha,
        score=score,
        mondrian=mondrian,
        threshold=threshold,
        randomized=randomized,
        raps_lambda=raps_lambda,
        raps_k_reg=raps_k_reg,
        small_cal=small_cal,
        condition=condition,
    )
    config = EvalConfig(
        strategies=tuple(parse_strategies(strategies)),
        classifiers=names,
        models=own,
        conformal=settings,
        iterations=iterations,
        seed_base=seed_base,
        adapt_frac=adapt_frac,
        min_own=min_own,
        clusters=clusters,
        own_rows=own_rows,
        assign=assign,
        split=split,
        gap=gap,
        split_seeds=split_seeds,
        user_folds=user_folds,
        user_level=user_level,
        user_correction=user_correction,
        user_family=user_family,
    )
    condition_of = settings.conditioning
    if isinstance(data, pd.DataFrame) and cohorts is None and condition_of.by_cohort:
        # A cohort column of any type (text too) is taken out before the features
        # are checked to be numeric.
        data, cohorts = _split_cohort_column(
            data, condition_of.columns or condition_of.column, user_col
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
