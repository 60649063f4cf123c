"""How many labelled windows does a new user need? Coverage, set size and
accuracy against ``k`` labelled windows of the target user.

For each target user and iteration (seed ``seed_base + i``):

1. **Test rows first.** The target's rows are split once (stratified when every
   class allows it) into the test rows and a pool of ``max(k)`` rows; the test
   rows are the same for every ``k``, so the curve compares like with like.
   The pool is put in a random order (the iteration's seed) and the ``k``
   labelled windows are its first ``k``: the windows of a smaller ``k`` are
   among those of a larger one.
2. **The other users** are split as UIM splits them (``train_size=0.6``,
   stratified): 60 % train the model, 40 % are the "others" calibration set.
3. **What the k windows do** (``use``):

   - ``calibration``: they are the calibration set (UCM-like); the model is
     the same for every ``k``, so accuracy does not move;
   - ``adaptation``: they join the training rows (UAM-like); calibration
     stays on the others' 40 %;
   - ``both``: the first ``k // 2`` join the training rows, the other
     ``k - k // 2`` calibrate.
   - ``cluster``: as ``calibration`` from ``min_calibration_size(alpha)``
     windows on; below, the target calibrates on the other users of its
     cluster, as the ``ukm`` strategy does with ``--own-rows k``
     (:func:`~mueval.evaluation.clustered.choose_calibration`, its defaults:
     Ding et al.'s number of clusters, the rank rule).

   ``k = 0`` is UIM for every use: train on the others' 60 %, calibrate on
   their 40 %.
4. A calibration set below ``max(1/alpha, 1/(1-alpha))`` rows (20 at
   alpha = 0.05) gets the ``small_cal`` policy: ``full-set`` (the default
   here: every class, valid and uninformative), ``skip`` (NaN) or ``error``;
   the ``n_small_cal`` column counts the (user, iteration) pairs it hit.

Each (user, iteration, use, k) gives coverage and mean set size over the test
rows, and accuracy (the share of test rows whose ``predict()`` is right). A
user's value is its mean over iterations; the curve's point is the mean over
users (each user weighs the same), with a Student-t 95 % interval over users,
clipped to the metric's range.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy import stats
from sklearn.model_selection import train_test_split

from mueval.conformal.scores import check_score_options, get_score
from mueval.conformal.sets import conformalize, full_sets
from mueval.conformal.thresholds import min_calibration_size
from mueval.data.order import natural_key
from mueval.data.table import Table, load_data
from mueval.errors import DataError, EvaluationError, OutputError, SmallCalibrationError, UsageError
from mueval.evaluation.clustered import choose_calibration, true_class_scores
from mueval.evaluation.models import fit_scaled, full_proba
from mueval.evaluation.splits import split_rows
from mueval.files import neutralise_formulas, write_atomic
from mueval.names import CLASSIFIERS, CURVE_USES, SCORES, SMALL_CAL_POLICIES, THRESHOLD_RULES

__all__ = [
    "CurveConfig",
    "CurveResult",
    "auto_ks",
    "curve",
    "curve_figure",
    "curve_label",
    "curve_run",
    "informative_notes",
    "parse_ks",
    "parse_uses",
    "summarise",
]

#: The metrics of the curve, with the range their intervals are clipped to
#: (set size: up to the number of classes).
CURVE_METRICS: tuple[str, ...] = ("coverage", "setsize", "accuracy")


def parse_ks(value: str | Sequence[int]) -> tuple[int, ...]:
    """Numbers of labelled windows, ascending.

    Parameters
    ----------
    value : str or sequence of int
        ``"0,5,10,20,50"`` or ``[0, 5, 10]``.

    Returns
    -------
    tuple of int

    Raises
    ------
    UsageError
        Empty, not whole numbers, negative or repeated values.

    Examples
    --------
    >>> parse_ks("10, 0,5")
    (0, 5, 10)
    """
    parts = value.split(",") if isinstance(value, str) else list(value)
    ks = []
    for part in parts:
        if isinstance(part, str):
            text = part.strip()
            if not text:
                continue
            # isdecimal, not isdigit: int() refuses "²"; and it refuses 4,300 digits and more.
            number = int(text) if text.isdecimal() and len(text) <= 18 else None
        else:
            whole = isinstance(part, int | np.integer) and not isinstance(part, bool)
            text, number = repr(part), int(part) if whole else None
        if number is None:
            message = f"k values must be whole numbers of windows (0 or more), got {text!r}"
            raise UsageError(message)
        if number < 0:
            message = f"k values must be 0 or more windows, got {number}"
            raise UsageError(message)
        ks.append(number)
    if not ks:
        message = "no k given; e.g. 0,5,10,20,50"
        raise UsageError(message)
    repeated = sorted({k for k in ks if ks.count(k) > 1})
    if repeated:
        message = f"k values repeated: {', '.join(map(str, repeated))}"
        raise UsageError(message)
    return tuple(sorted(ks))


def parse_uses(value: str | Sequence[str]) -> tuple[str, ...]:
    """Uses of the k windows (comma lists allowed), in :data:`CURVE_USES` order.

    Examples
    --------
    >>> parse_uses("both,calibration")
    ('calibration', 'both')
    """
    parts = [value] if isinstance(value, str) else list(value)
    wanted = {u.strip().lower() for part in parts for u in str(part).split(",") if u.strip()}
    bad = sorted(wanted - set(CURVE_USES))
    if bad or not wanted:
        message = f"unknown use {', '.join(bad) or '(none)'}; valid: {', '.join(CURVE_USES)}"
        raise UsageError(message)
    return tuple(u for u in CURVE_USES if u in wanted)


@dataclass(frozen=True)
class CurveConfig:
    """What the curve sweeps and how (see the module docstring)."""

    classifier: str = "rf"
    ks: tuple[int, ...] = (0, 5, 10, 20, 50)
    uses: tuple[str, ...] = ("calibration",)
    iterations: int = 5
    alpha: float = 0.05
    seed_base: int = 100
    score: str = "lac"
    threshold: str = "study"
    small_cal: str = "full-set"
    min_test: int = 20

    def __post_init__(self) -> None:
        checks = (
            (self.classifier in CLASSIFIERS, "classifier", self.classifier, CLASSIFIERS),
            (self.score in SCORES, "score", self.score, SCORES),
            (self.threshold in THRESHOLD_RULES, "threshold rule", self.threshold, THRESHOLD_RULES),
            (
                self.small_cal in SMALL_CAL_POLICIES,
                "small-cal policy",
                self.small_cal,
                SMALL_CAL_POLICIES,
            ),
        )
        for ok, what, value, valid in checks:
            if not ok:
                message = f"unknown {what} {value!r}; valid: {', '.join(valid)}"
                raise UsageError(message)
        # The curve takes no RAPS penalty: raps is MAPIE's own tuned one or nothing.
        check_score_options(get_score(self.score), self.threshold)
        if self.score == "raps" and self.small_cal == "full-set":
            message = (
                "the label curve's raps is MAPIE 1.x's own (--threshold mapie), which has no "
                "--small-cal full-set form; use --small-cal skip"
            )
            raise UsageError(message)
        if "cluster" in self.uses and self.score == "raps":
            message = (
                "the label curve's raps is MAPIE 1.x's own, tuned on one calibration set: the "
                "cluster use needs scores of its own; use another --score"
            )
            raise UsageError(message)
        if parse_uses(list(self.uses)) != tuple(self.uses):
            message = f"uses must be unique and ordered as {', '.join(CURVE_USES)}, got {self.uses}"
            raise UsageError(message)
        if tuple(parse_ks(list(self.ks))) != tuple(self.ks):
            message = f"ks must be ascending whole numbers, got {self.ks}"
            raise UsageError(message)
        if not 0.0 < self.alpha < 1.0:
            message = f"alpha must be strictly between 0 and 1, got {self.alpha}"
            raise UsageError(message)
        if self.iterations < 1 or self.min_test < 1:
            message = (
                f"iterations and min_test must be at least 1, got {self.iterations} "
                f"and {self.min_test}"
            )
            raise UsageError(message)


def _smallest_informative_k(use: str, alpha: float) -> int:
    """The fewest labelled windows whose calibration set the threshold rule takes.

    Below :func:`~mueval.conformal.thresholds.min_calibration_size` rows (20 at alpha
    0.05) the conformal quantile is infinite: every set holds every class (or,
    with ``--small-cal skip``, there is no set). Adaptation calibrates on the
    other users, so one window is already informative; ``both`` calibrates on
    ``k - k // 2`` of them.
    """
    need = min_calibration_size(alpha)
    return {"calibration": need, "adaptation": 1, "both": 2 * need - 1, "cluster": 1}[use]


def auto_ks(
    users: Sequence[object] | np.ndarray,
    uses: Sequence[str],
    alpha: float,
    min_test: int,
    *,
    points: int = 4,
) -> tuple[int, ...]:
    """k values for the curve from the data: 0 and ``points`` values from the
    smallest informative k to the largest most users can give.

    The lower end is the smallest k whose calibration set is large enough for
    the threshold rule for every use asked (:func:`_smallest_informative_k`):
    below it a set is the full set of classes, which says nothing about k. The
    upper end is the largest k that leaves every user ``min_test`` test rows
    (a user who cannot give max(k) is left out of the whole curve); when the
    smallest user cannot give the lower end, the largest k the median user
    can give. In between, the values are spaced geometrically (the curve
    changes fastest at small k) and rounded to multiples of 5.

    Parameters
    ----------
    users : sequence
        Each row's user.
    uses : sequence of str
    alpha : float
    min_test : int
    points : int, default 4
        Values above 0.

    Returns
    -------
    tuple of int
        Ascending, starting at 0.

    Raises
    ------
    DataError
        The median user has too few rows for one informative k.

    Examples
    --------
    >>> auto_ks(["a"] * 170 + ["b"] * 150 + ["c"] * 120, ["calibration"], 0.05, 20)
    (0, 20, 35, 60, 100)
    >>> auto_ks(["a"] * 170 + ["b"] * 150 + ["c"] * 30, ["calibration"], 0.05, 20)
    (0, 20, 35, 70, 130)
    """
    counts = np.sort(pd.Series(list(users)).value_counts().to_numpy())
    low = max(_smallest_informative_k(use, alpha) for use in uses)
    if not len(counts):
        message = "no informative k: the table has no rows"
        raise DataError(message)
    # Every user when the smallest can give an informative k (a user with fewer
    # rows than max(k) + min_test is left out of the whole curve), else half of them.
    high = int(counts[0]) - min_test
    if high < low:
        high = int(counts[len(counts) // 2]) - min_test
    if high < low:
        message = (
            f"no informative k: at alpha {alpha:g} the curve's calibration needs k >= {low} "
            f"windows (a smaller calibration set gives every class), but the median user "
            f"has {high + min_test} rows, {high} beside --min-test {min_test}; give --k "
            "yourself, or lower --min-test or raise --alpha"
        )
        raise DataError(message)
    grid = np.geomspace(low, high, points) if high > low else np.array([low])
    rounded = [low] + [int(5 * round(v / 5)) for v in grid[1:-1]] + [high]
    return tuple(sorted({0, *(k for k in rounded if low <= k <= high)}))


def informative_notes(curve_frame: pd.DataFrame, n_classes: int) -> list[str]:
    """A note for every point whose sets say nothing: mean size ``n_classes``
    (every set holds every class) or at most 1 (a single guess, or empty sets).

    Parameters
    ----------
    curve_frame : DataFrame
        :func:`summarise`'s rows.
    n_classes : int
    """
    notes = []
    for row in curve_frame.itertuples():
        size = row.setsize
        if not np.isfinite(size):
            continue
        if size >= n_classes - 1e-9:
            why = " (its calibration sets are too small for alpha)" if row.n_small_cal else ""
            notes.append(
                f"use {row.use}, k={row.k}: every set holds all {n_classes} classes{why}: "
                "this point says nothing about k"
            )
        elif size <= 1.0:
            notes.append(
                f"use {row.use}, k={row.k}: mean set size {size:.2f} <= 1: the sets are no "
                "more than a single guess"
            )
    return notes


def _test_and_pool(own: np.ndarray, y: np.ndarray, size: int, seed: int) -> tuple:
    """The target's test rows and its pool of ``size`` labelled candidates, in
    the random order in which they are labelled."""
    if size == 0:
        return own, own[:0]
    labels = y[own]
    _, counts = np.unique(labels, return_counts=True)
    # Stratify when both parts can hold every class (scikit-learn's condition).
    strat = counts.min() >= 2 and min(size, len(own) - size) >= len(counts)
    test, pool = train_test_split(
        own, test_size=size, stratify=labels if strat else None, random_state=seed
    )
    pool = np.random.default_rng(seed).permutation(np.asarray(pool))
    return np.sort(np.asarray(test)), pool


def _parts(use: str, k: int) -> int:
    """How many of the k labelled windows join the training rows."""
    return {"calibration": 0, "adaptation": k, "both": k // 2, "cluster": 0}[use]


def _conformal(proba_cal, y_cal, proba_test, config: CurveConfig, seed: int, where: str):
    """Sets of the test rows, the small-cal flag; sets None when skipped."""
    try:
        out = conformalize(
            proba_cal,
            y_cal,
            proba_test,
            alpha=config.alpha,
            score=config.score,
            threshold=config.threshold,
            seed=seed,
        )
    except SmallCalibrationError as exc:
        if config.small_cal == "error":
            message = (
                f"{where}: {exc} (use --small-cal full-set to answer every class, "
                "or skip to record NaN)"
            )
            raise EvaluationError(message) from exc
        if config.small_cal == "skip":
            return None, True
        return full_sets(proba_cal, y_cal, proba_test, score=config.score).sets, True
    return out.sets, False


def _cluster_rows(
    X: np.ndarray,
    y: np.ndarray,
    users: np.ndarray,
    fitted: tuple,
    rows: tuple[np.ndarray, np.ndarray],
    config: CurveConfig,
    seed: int,
) -> tuple[np.ndarray, str]:
    """The ``cluster`` use's calibration rows and their source (``target``,
    ``cluster`` or ``others``): the ``ukm`` rule on the model's scores of the
    target's ``k`` windows and of the other users' calibration rows."""
    scaler, model, n_classes = fitted
    own_cal, cal_others = rows
    score = get_score(config.score)

    def scores(part: np.ndarray) -> np.ndarray:
        if not len(part):  # k = 0: no window of the target to score
            return np.empty(0)
        return true_class_scores(
            full_proba(model, scaler.transform(X[part]), n_classes), y[part], score
        )

    choice = choose_calibration(
        scores(own_cal),
        scores(cal_others),
        users[cal_others],
        alpha=config.alpha,
        min_own=None,
        n_clusters=None,
        seed=seed,
    )
    if choice.how == "own":
        return own_cal, "target"
    source = "cluster" if choice.how == "cluster" else "others"
    return cal_others[choice.rows - len(own_cal)], source


def _user_rows(X, y, users, n_classes, user, iteration, config: CurveConfig) -> list[dict]:
    """Every (use, k) of one target user and iteration."""
    seed = config.seed_base + iteration
    own = np.flatnonzero(users == user)
    others = np.flatnonzero(users != user)
    test, pool = _test_and_pool(own, y, max(config.ks), seed)
    train, cal_others = split_rows(others, y, 0.6, seed, what=f"curve, user {user}")
    fits: dict[int, tuple] = {}  # the model for each number of adaptation rows
    rows = []
    for use in config.uses:
        for k in config.ks:
            n_adapt = _parts(use, k)
            if n_adapt not in fits:
                rows_fit = np.concatenate([train, pool[:n_adapt]])
                scaler, model = fit_scaled(config.classifier, seed, X[rows_fit], y[rows_fit])
                X_test = scaler.transform(X[test])
                fits[n_adapt] = (scaler, model, full_proba(model, X_test, n_classes))
                fits[n_adapt] += (np.asarray(model.predict(X_test), dtype=int),)
            scaler, model, proba_test, y_pred = fits[n_adapt]
            own_cal = pool[n_adapt:k]
            cal = own_cal if len(own_cal) else cal_others
            source = "target" if len(own_cal) else "others"
            if use == "cluster":
                fitted = (scaler, model, n_classes)
                cal, source = _cluster_rows(
                    X, y, users, fitted, (own_cal, cal_others), config, seed
                )
            proba_cal = full_proba(model, scaler.transform(X[cal]), n_classes)
            where = f"curve, user {user}, seed {seed}, use {use}, k {k}"
            sets, small = _conformal(proba_cal, y[cal], proba_test, config, seed, where)
            y_test = y[test]
            covered = sets[np.arange(len(test)), y_test] if sets is not None else None
            rows.append(
                {
                    "user": user.item() if isinstance(user, np.generic) else user,
                    "iteration": iteration,
                    "seed": seed,
                    "use": use,
                    "k": k,
                    "n_adapt": n_adapt,
                    "n_cal": len(cal),
                    "cal_source": source,
                    "n_test": len(test),
                    "coverage": float(covered.mean()) if sets is not None else math.nan,
                    "setsize": float(sets.sum(axis=1).mean()) if sets is not None else math.nan,
                    "accuracy": float(np.mean(y_pred == y_test)),
                    "small_cal": small,
                }
            )
    return rows


def _t_interval(values: np.ndarray, low: float, high: float) -> tuple[float, float, float]:
    """Mean and Student-t 95 % interval over users, clipped to [low, high]."""
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return math.nan, math.nan, math.nan
    mean = float(values.mean())
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    return mean, max(low, mean - half), min(high, mean + half)


def summarise(per_user: pd.DataFrame, n_classes: int) -> pd.DataFrame:
    """The curve: one row per (use, k), users weighing the same.

    Parameters
    ----------
    per_user : DataFrame
        One row per (user, iteration, use, k), as :func:`curve_run` makes it.
    n_classes : int
        Upper bound of the set-size interval.

    Returns
    -------
    DataFrame
        ``use, k, n_users, coverage, coverage_low, coverage_high, setsize,
        setsize_low, setsize_high, accuracy, accuracy_low, accuracy_high,
        n_cal, n_adapt, n_small_cal, n_tasks``.
    """
    limits = {"coverage": (0.0, 1.0), "setsize": (0.0, float(n_classes)), "accuracy": (0.0, 1.0)}
    out = []
    order = {u: i for i, u in enumerate(CURVE_USES)}
    for (use, k), group in sorted(
        per_user.groupby(["use", "k"]), key=lambda item: (order[item[0][0]], item[0][1])
    ):
        by_user = group.groupby("user")[list(CURVE_METRICS)].mean()
        row: dict[str, Any] = {"use": use, "k": int(k)}
        row["n_users"] = int(by_user["coverage"].notna().sum())
        for metric in CURVE_METRICS:
            mean, low, high = _t_interval(by_user[metric].to_numpy(float), *limits[metric])
            row.update({metric: mean, f"{metric}_low": low, f"{metric}_high": high})
        row["n_cal"] = float(group["n_cal"].mean())
        row["n_adapt"] = float(group["n_adapt"].mean())
        row["n_small_cal"] = int(group["small_cal"].sum())
        row["n_tasks"] = len(group)
        out.append(row)
    return pd.DataFrame(out)


@dataclass
class CurveResult:
    """The curve, its per-user rows and what the run did.

    Attributes
    ----------
    curve : DataFrame
        One row per (use, k) (:func:`summarise`).
    per_user : DataFrame
        One row per (user, iteration, use, k).
    info : dict
        ``dataset``, ``classes``, ``config``, ``skipped_users`` and ``notes``
        (the content of ``run.json``).
    """

    curve: pd.DataFrame
    per_user: pd.DataFrame
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def notes(self) -> list[str]:
        """Skipped users and small calibration sets, one line each."""
        return list(self.info.get("notes", []))

    def save(
        self,
        out: str | Path,
        *,
        overwrite: bool = False,
        figure_format: str = "svg",
        dpi: int = 300,
        titles: bool = False,
    ) -> Path:
        """Write ``curve.csv``, ``curve_users.csv``, ``curve.svg`` and ``run.json``.

        Parameters
        ----------
        out : str or Path
            A new or empty folder (any folder with ``overwrite``).
        overwrite : bool
            Replace the files of an existing folder.
        figure_format : {"svg", "pdf", "png"}
            The figure's file: ``curve.svg`` (vector, the default), ``curve.pdf``
            or ``curve.png`` at ``dpi``.
        dpi : int
            Resolution of a PNG.
        titles : bool
            Draw the dataset, classifier and alpha as a title too (they are in
            the legend's title either way).

        Returns
        -------
        Path
        """
        folder = Path(out)
        if folder.exists() and not folder.is_dir():
            message = f"cannot write the curve to {folder}: it exists and is not a folder"
            raise OutputError(message)
        if folder.is_dir() and any(folder.iterdir()) and not overwrite:
            message = f"{folder} is not empty; give --overwrite to replace its curve files"
            raise OutputError(message)
        folder.mkdir(parents=True, exist_ok=True)
        for name, frame in (("curve.csv", self.curve), ("curve_users.csv", self.per_user)):
            safe = neutralise_formulas(frame)
            write_atomic(folder, name, lambda p, f=safe: f.to_csv(p, index=False))
        figure = curve_figure(
            self.curve, self.info["config"]["alpha"], label=curve_label(self.info), title=titles
        )
        write_curve_figure(figure, folder, fmt=figure_format, dpi=dpi)
        text = json.dumps(self.info, indent=2, default=str) + "\n"
        write_atomic(folder, "run.json", lambda p: p.write_text(text, encoding="utf-8"))
        return folder


#: What ``--figure-format`` accepts for the curve's figure (as for ``mueval report``).
CURVE_FIGURE_FORMATS = ("svg", "pdf", "png")


def curve_label(info: dict[str, Any]) -> str:
    """What the curve is of, for its figure: dataset, classifier and alpha.

    Parameters
    ----------
    info : dict
        ``run.json``'s content (:attr:`CurveResult.info`).
    """
    config = info["config"]
    name = info.get("dataset", {}).get("name") or "data"
    return f"{name}, classifier {config['classifier']}, alpha = {config['alpha']:g}"


def curve_figure(curve_frame: pd.DataFrame, alpha: float, *, label: str = "", title: bool = False):
    """Coverage, set size and accuracy against k, one line per use.

    Points answered by the small-cal policy for some user are drawn hollow. The
    legend stands right of the last panel (it never covers a point) and its
    title names what the curve is of (``label``: dataset, classifier and alpha,
    see :func:`curve_label`); each panel's metric is its y label. ``title``
    puts ``label`` above the panels as well.

    Returns
    -------
    matplotlib.figure.Figure
    """
    # Here, not at the top: matplotlib, only when a curve is drawn.
    import matplotlib

    matplotlib.use("Agg")  # never open a window: servers and CI have none
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 3.8), layout="constrained")
    axes = figure.subplots(1, 3)
    names = {"coverage": "coverage", "setsize": "mean set size", "accuracy": "accuracy"}
    with matplotlib.rc_context({"text.parse_math": False}):
        for ax, metric in zip(axes, CURVE_METRICS, strict=True):
            for i, (use, group) in enumerate(curve_frame.groupby("use", sort=False)):
                colour = f"C{i}"
                ax.fill_between(
                    group["k"],
                    group[f"{metric}_low"],
                    group[f"{metric}_high"],
                    color=colour,
                    alpha=0.2,
                )
                ax.plot(group["k"], group[metric], color=colour, label=use)
                flagged = group["n_small_cal"] > 0
                ax.scatter(group["k"][~flagged], group[metric][~flagged], color=colour, zorder=3)
                ax.scatter(
                    group["k"][flagged],
                    group[metric][flagged],
                    facecolors="white",
                    edgecolors=colour,
                    zorder=3,
                )
            if metric == "coverage":
                ax.axhline(
                    1 - alpha,
                    color="grey",
                    linestyle="--",
                    linewidth=1,
                    label=f"target 1 - alpha = {1 - alpha:g}",
                )
            ax.set_xlabel("labelled windows of the target user (k)")
            ax.set_ylabel(names[metric])
        handles, labels = axes[0].get_legend_handles_labels()
        head = f"{label}\n" if label else ""
        # Right of the last panel, top level with it: never over a point.
        axes[-1].legend(
            handles,
            labels,
            title=f"{head}use (hollow: small calibration set)",
            fontsize="small",
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
        )
        if title and label:
            figure.suptitle(label)
    return figure


def write_curve_figure(figure, folder: Path, *, fmt: str = "svg", dpi: int = 300) -> Path:
    """Write ``figure`` as ``curve.svg`` (or ``.pdf``, ``.png`` at ``dpi``) in ``folder``.

    SVG and PDF keep text as text and carry no date: the same curve gives the
    same file.
    """
    if fmt not in CURVE_FIGURE_FORMATS:
        message = f"figure format must be one of {', '.join(CURVE_FIGURE_FORMATS)}, not {fmt!r}"
        raise UsageError(message)
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 10 <= dpi <= 2400:
        message = f"dpi must be a whole number from 10 to 2400, not {dpi!r}"
        raise UsageError(message)
    # Here, not at the top: matplotlib only when a curve figure is drawn.
    import matplotlib

    settings = {"svg.fonttype": "none", "pdf.fonttype": 42, "svg.hashsalt": "mueval"}
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)

    def draw(path: Path) -> None:
        with matplotlib.rc_context({**settings, "text.parse_math": False}):
            figure.savefig(path, format=fmt, dpi=dpi, metadata=metadata)

    return write_atomic(folder, f"curve.{fmt}", draw)


def curve_run(table: Table, config: CurveConfig, *, jobs: int = 1) -> CurveResult:
    """Sweep ``config.ks`` for every target user with enough rows.

    Parameters
    ----------
    table : Table
    config : CurveConfig
    jobs : int
        Parallel worker processes (loky), one (user, iteration) a task; the
        results do not depend on it.

    Returns
    -------
    CurveResult

    Raises
    ------
    DataError
        No user has ``max(k) + min_test`` rows.
    """
    users = np.asarray(table.users)
    need = max(config.ks) + config.min_test
    counts = pd.Series(users).value_counts()
    keep = sorted((u for u in counts.index if counts[u] >= need), key=natural_key)
    skipped = sorted((u for u in counts.index if counts[u] < need), key=natural_key)
    notes = [
        f"user {u} skipped: {counts[u]} rows, fewer than max(k) + min_test = {need}"
        for u in skipped
    ]
    if not keep:
        message = (
            f"no user has max(k) + min_test = {max(config.ks)} + {config.min_test} rows "
            f"(largest user: {counts.max()} rows); lower the largest k or --min-test"
        )
        raise DataError(message)
    if len(counts) < 2:
        message = "the curve trains on the other users: the table needs at least 2 users"
        raise DataError(message)
    tasks = [(u, i) for u in keep for i in range(1, config.iterations + 1)]
    args = (np.ascontiguousarray(table.X, dtype=float), np.asarray(table.y, dtype=int), users)
    n_classes = len(table.classes)
    if jobs == 1:
        nested = [_user_rows(*args, n_classes, u, i, config) for u, i in tasks]
    else:
        nested = Parallel(n_jobs=jobs, backend="loky")(
            delayed(_user_rows)(*args, n_classes, u, i, config) for u, i in tasks
        )
    per_user = pd.DataFrame([row for rows in nested for row in rows])
    curve_frame = summarise(per_user, n_classes)
    notes += informative_notes(curve_frame, n_classes)
    for row in curve_frame.itertuples():
        if row.n_small_cal:
            notes.append(
                f"use {row.use}, k={row.k}: {row.n_small_cal} of {row.n_tasks} calibration "
                f"sets below {math.ceil(max(1 / config.alpha, 1 / (1 - config.alpha)) - 1e-9)} "
                f"rows, answered by --small-cal {config.small_cal}"
            )
    info = {
        "kind": "mueval curve",
        "dataset": table.info,
        "classes": list(table.classes),
        "config": asdict(config),
        "skipped_users": [str(u) for u in skipped],
        "notes": notes,
    }
    return CurveResult(curve=curve_frame, per_user=per_user, info=info)


def curve(
    data: str | Path | pd.DataFrame,
    *,
    classifier: str = "rf",
    ks: str | Sequence[int] = "auto",
    use: str | Sequence[str] = "calibration",
    iterations: int = 5,
    alpha: float = 0.05,
    seed_base: int = 100,
    score: str = "lac",
    threshold: str = "study",
    small_cal: str = "full-set",
    min_test: int = 20,
    jobs: int = 1,
    user_col: str = "userid",
    label_col: str = "label",
    **source: Any,
) -> pd.DataFrame:
    """Coverage, set size and accuracy against k labelled windows of the target.

    Parameters
    ----------
    data : str, Path or DataFrame
        A registered dataset, a ``.csv``/``.parquet`` file or a DataFrame
        (as for :func:`mueval.evaluate`; ``**source`` as there).
    classifier : {"nb", "rf", "svm", "knn"}
    ks : str or sequence of int, default "auto"
        Numbers of labelled windows, e.g. ``"0,5,10,20,50"``; ``"auto"``: 0 and
        four values chosen from the data (:func:`auto_ks`), from the smallest
        k whose calibration set gives informative sets.
    use : str or sequence of str
        ``calibration``, ``adaptation``, ``both``, ``cluster``, or several
        (comma list).
    iterations, seed_base : int
        Iteration *i* uses seed ``seed_base + i``.
    alpha : float
        Miscoverage level, as for :func:`mueval.evaluate`.
    score, threshold : str
        The conformity score and threshold rule, as for :func:`mueval.evaluate`.
    small_cal : {"full-set", "skip", "error"}
        Calibration sets too small for ``alpha``.
    min_test : int
        Fewest test rows a user must keep beside ``max(ks)``; smaller users
        are skipped (:attr:`CurveResult.notes`).
    jobs : int
        Worker processes.
    user_col, label_col : str
        Columns of a file or DataFrame.
    **source
        Where a registered dataset's files come from, as for :func:`mueval.evaluate`.

    Returns
    -------
    DataFrame
        One row per (use, k): see :func:`summarise`. :func:`curve_run` also
        gives the per-user rows and the notes.
    """
    table = load_data(data, user_col=user_col, label_col=label_col, **source)
    uses = parse_uses(use)
    if isinstance(ks, str) and ks.strip().lower() == "auto":
        chosen = auto_ks(table.users, uses, alpha, min_test)
    else:
        chosen = parse_ks(ks)
    config = CurveConfig(
        classifier=classifier,
        ks=chosen,
        uses=uses,
        iterations=iterations,
        alpha=alpha,
        seed_base=seed_base,
        score=score,
        threshold=threshold,
        small_cal=small_cal,
        min_test=min_test,
    )
    return curve_run(table, config, jobs=jobs).curve
