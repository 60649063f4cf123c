"""Significance tests between evaluation strategies, each labelled with what it is.

Three tests, because they answer different questions and make different mistakes:

* **the study's test** -- the paper writes only "t-test"; its star symbols (ns, *,
  ..., ****) are the defaults of R ``ggpubr::stat_compare_means``, whose
  ``method = "t.test"`` calls ``t.test(x, y)`` unpaired with ``var.equal = FALSE``:
  Welch's two-sample t-test over the per-iteration values. The iterations reuse
  overlapping data, so it overstates significance; it is kept to reproduce the
  study's figures.
* **Nadeau and Bengio's corrected resampled t-test** -- paired by iteration (the
  same seed), with the variance of the differences inflated by
  ``1/J + n_test/n_train`` instead of ``1/J`` (Nadeau & Bengio 2003, Machine
  Learning 52:239-281), which accounts for the overlap of the training sets.
* **Wilcoxon signed-rank over users** -- paired by user on each user's mean over
  iterations: the unit of replication is the user, which is what a multi-user
  claim is about.

:func:`compare_strategies` runs the three on every pair of strategies of one
table of splits and adjusts nothing (the report's tests); the runs are merged
into that table by :mod:`mueval.comparison.runs`, and the p-values adjusted and
shaped for a terminal by :mod:`mueval.comparison.tables`.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

from mueval.errors import DataError

__all__ = [
    "CORRECTED_TEST",
    "MIN_ITERATIONS",
    "STUDY_TEST",
    "WILCOXON_TEST",
    "TestResult",
    "compare_strategies",
    "corrected_resampled_t_test",
    "per_iteration_values",
    "per_user_values",
    "resampling_ratio",
    "star_label",
    "study_t_test",
    "wilcoxon_over_users",
]

STUDY_TEST = "Welch t-test over iterations (the study's; uncorrected)"
CORRECTED_TEST = "Nadeau-Bengio corrected resampled t-test (paired by iteration)"
WILCOXON_TEST = "Wilcoxon signed-rank over users (paired by user)"

#: A t-test over fewer iterations (1-3 degrees of freedom) is shown with a caution:
#: its p-value rests on a variance estimated from a handful of values.
MIN_ITERATIONS = 5

# (upper bound on p, symbol), the study's levels: p <= bound gives the symbol.
STAR_LEVELS: tuple[tuple[float, str], ...] = (
    (0.0001, "****"),
    (0.001, "***"),
    (0.01, "**"),
    (0.05, "*"),
)


def star_label(p_value: float) -> str:
    """The study's significance symbol: ns p > 0.05, * <= 0.05, ..., **** <= 0.0001.

    A NaN p-value (test undefined) gives ``"n/a"``.
    """
    if not np.isfinite(p_value):
        return "n/a"
    for bound, symbol in STAR_LEVELS:
        if p_value <= bound:
            return symbol
    return "ns"


@dataclass(frozen=True)
class TestResult:
    """Outcome of one test; ``test`` names which test it was."""

    test: str
    statistic: float
    df: float
    p_value: float
    stars: str
    n: int
    note: str = ""
    #: What a library (scipy) warned while computing the test, kept out of ``note``:
    #: tables show one note about it, not the library's sentence in every row.
    library_warning: str = ""

    def as_dict(self) -> dict[str, object]:
        """The fields as a plain dict (a table row)."""
        return asdict(self)


def _clean(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    return arr[np.isfinite(arr)]


def study_t_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> TestResult:
    """Welch's unpaired two-sample t-test, as the study ran it.

    Parameters
    ----------
    a, b : sequence of float, shape (J_a,), (J_b,)
        Per-iteration values of the two strategies.
    """
    x, y = _clean(a, "a"), _clean(b, "b")
    if x.size < 2 or y.size < 2:
        return TestResult(
            STUDY_TEST,
            np.nan,
            np.nan,
            np.nan,
            "n/a",
            min(x.size, y.size),
            "fewer than 2 iterations",
        )
    if np.var(x) == 0 and np.var(y) == 0:
        note = "both samples constant"
        return TestResult(STUDY_TEST, np.nan, np.nan, np.nan, "n/a", min(x.size, y.size), note)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = stats.ttest_ind(x, y, equal_var=False)
    df = float(getattr(res, "df", np.nan))
    p = float(res.pvalue)
    # scipy warns of precision loss on near-identical samples: kept with the result,
    # summarised once by table_notes.
    caught_text = "; ".join(sorted({str(w.message).split(".")[0] for w in caught}))
    return TestResult(
        STUDY_TEST,
        float(res.statistic),
        df,
        p,
        star_label(p),
        min(x.size, y.size),
        library_warning=caught_text,
    )


def corrected_resampled_t_test(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, test_train_ratio: float
) -> TestResult:
    """Nadeau and Bengio's corrected resampled t-test, paired by iteration.

    With ``d_j = a_j - b_j`` over J iterations,
    ``t = mean(d) / sqrt((1/J + n_test/n_train) * var(d))`` (sample variance,
    ddof=1), referred to Student's t with J - 1 degrees of freedom, two-sided.

    Parameters
    ----------
    a, b : sequence of float, shape (J,)
        Per-iteration values, position j of both from the same iteration (seed).
    test_train_ratio : float
        n_test / n_train of the resampling.
    """
    x = np.asarray(a, dtype=float).ravel()
    y = np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        msg = (
            f"corrected t-test: expected paired values of equal length, found {x.size} and {y.size}"
        )
        raise DataError(msg)
    if not np.isfinite(test_train_ratio) or test_train_ratio < 0:
        msg = f"corrected t-test: expected n_test/n_train >= 0, found {test_train_ratio}"
        raise DataError(msg)
    d = x - y
    d = d[np.isfinite(d)]
    j = d.size
    if j < 2:
        return TestResult(
            CORRECTED_TEST, np.nan, np.nan, np.nan, "n/a", j, "fewer than 2 paired iterations"
        )
    var = float(np.var(d, ddof=1))
    # Rounding leaves a tiny variance on equal differences; that is no evidence.
    if var == 0 or np.allclose(d, d[0], rtol=1e-9, atol=1e-12):
        return TestResult(
            CORRECTED_TEST,
            np.nan,
            j - 1,
            np.nan,
            "n/a",
            j,
            "differences constant across iterations",
        )
    t = float(d.mean() / np.sqrt((1.0 / j + test_train_ratio) * var))
    p = float(2.0 * stats.t.sf(abs(t), df=j - 1))
    note = f"n_test/n_train = {test_train_ratio:.3g}"
    return TestResult(CORRECTED_TEST, t, float(j - 1), p, star_label(p), j, note)


def wilcoxon_over_users(a: Mapping[object, float], b: Mapping[object, float]) -> TestResult:
    """Wilcoxon signed-rank test on per-user values, paired by user.

    Parameters
    ----------
    a, b : mapping user -> float
        Each user's mean over iterations under the two strategies; only users
        present (and finite) in both are used.
    """
    users = [u for u in a if u in b and np.isfinite(a[u]) and np.isfinite(b[u])]
    x = np.array([a[u] for u in users], dtype=float)
    y = np.array([b[u] for u in users], dtype=float)
    n = len(users)
    if n < 2:
        return TestResult(
            WILCOXON_TEST, np.nan, np.nan, np.nan, "n/a", n, "fewer than 2 users in both"
        )
    if np.all(x == y):
        return TestResult(
            WILCOXON_TEST,
            np.nan,
            np.nan,
            np.nan,
            "n/a",
            n,
            "every user has the same value under both",
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = stats.wilcoxon(x, y)
    p = float(res.pvalue)
    note = "exact" if n <= 50 else "normal approximation"
    caught_text = "; ".join(sorted({str(w.message).split(".")[0] for w in caught}))
    return TestResult(
        WILCOXON_TEST, float(res.statistic), np.nan, p, star_label(p), n, note, caught_text
    )


def resampling_ratio(strategy: str, splits: pd.DataFrame, n_rows: int) -> tuple[float, str]:
    """n_test / n_train of one strategy's resampling, and how it was obtained.

    Uses a ``n_train`` column of ``splits`` if present. Otherwise n_train is
    derived from the protocol's split fractions: MM trains on the rows left after
    calibration and test; UDM on 60% of a user's rows (test + calibration are the
    other 40%); UIM and UCM on 60% of the other users' rows (the target user's
    size estimated as 2 n_test for UIM, n_test + n_cal for UCM). For any other
    strategy n_train is taken as all rows but test and calibration, an upper
    bound that makes the correction smaller than it should be; the note says so.

    Parameters
    ----------
    strategy : str
    splits : DataFrame
        The strategy's rows of ``splits.parquet`` (columns n_test, n_cal[, n_train]).
    n_rows : int
        Rows of the dataset (run.json ``dataset.n_rows``).
    """
    n_test = splits["n_test"].to_numpy(dtype=float)
    n_cal = splits["n_cal"].to_numpy(dtype=float)
    if "n_train" in splits.columns:
        n_train = splits["n_train"].to_numpy(dtype=float)
        how = "n_train from splits.parquet"
    elif strategy == "mm":
        n_train = n_rows - n_test - n_cal
        how = "n_train = n_rows - n_test - n_cal"
    elif strategy == "udm":
        n_train = 1.5 * (n_test + n_cal)
        how = "n_train = 1.5 (n_test + n_cal), the protocol's 60/20/20 per user"
    elif strategy == "uim":
        n_train = 0.6 * (n_rows - 2.0 * n_test)
        how = "n_train = 0.6 (n_rows - 2 n_test), the protocol's UIM split"
    elif strategy == "ucm":
        n_train = 0.6 * (n_rows - n_test - n_cal)
        how = "n_train = 0.6 (n_rows - n_test - n_cal), the protocol's UCM split"
    else:
        n_train = n_rows - n_test - n_cal
        how = "n_train = n_rows - n_test - n_cal (upper bound: correction may be too small)"
    ok = n_train > 0
    if not ok.any():
        msg = f"splits of {strategy!r}: expected a positive training size, found none"
        raise DataError(msg)
    return float(n_test[ok].sum() / n_train[ok].sum()), how


def per_iteration_values(splits: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per-iteration value of a metric, users averaged as the protocol does.

    Returns
    -------
    DataFrame
        Columns strategy, classifier, iteration (and seed, when ``splits`` has
        it), value: for MM the one row per iteration; for per-user strategies the
        mean over users (NaN skipped).
    """
    if metric not in splits.columns:
        msg = (
            f"splits.parquet: expected a column for metric {metric!r}, found {list(splits.columns)}"
        )
        raise DataError(msg)
    keys = ["strategy", "classifier", "iteration"]
    if "seed" in splits.columns:
        keys.append("seed")  # one seed per iteration; kept so that pairing can use it
    grouped = splits.groupby(keys, sort=True)[metric]
    return grouped.mean().rename("value").reset_index()


def per_user_values(
    splits: pd.DataFrame, predictions: pd.DataFrame | None, metric: str
) -> pd.DataFrame:
    """Each user's mean of a metric over iterations, per strategy and classifier.

    Coverage and set size come from the predictions grouped by each row's own
    user (``userid``), so MM -- which has no user in its splits -- gets per-user
    values too; other metrics come from the per-user rows of the splits.

    Returns
    -------
    DataFrame
        Columns strategy, classifier, user, value (mean over iterations), sd, n.
    """
    row_metric = {"coverage": "covered", "setsize": "set_size"}
    if predictions is not None and metric in ("coverage", "setsize"):
        col = row_metric[metric]
        per_it = (
            predictions.groupby(["strategy", "classifier", "userid", "iteration"])[col]
            .mean()
            .astype(float)
            .rename("v")
            .reset_index()
            .rename(columns={"userid": "user"})
        )
    else:
        sub = splits[splits["user"].notna()]
        per_it = sub[["strategy", "classifier", "user", "iteration", metric]].rename(
            columns={metric: "v"}
        )
    out = (
        per_it.groupby(["strategy", "classifier", "user"])["v"]
        .agg(value="mean", sd="std", n="count")
        .reset_index()
    )
    if pd.api.types.is_numeric_dtype(out["user"]):
        out["user"] = out["user"].astype("int64")
    return out


def compare_strategies(
    splits: pd.DataFrame,
    predictions: pd.DataFrame | None,
    n_rows: int,
    *,
    metric: str = "coverage",
    strategies: Sequence[str] | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> pd.DataFrame:
    """Every pair of strategies, per classifier, under all three tests.

    Parameters
    ----------
    splits, predictions : DataFrame
        ``splits.parquet`` and ``predictions.parquet`` rows (predictions may be None).
    n_rows : int
        Rows of the dataset.
    metric : str
        A per-split metric.
    strategies : sequence of str, optional
        The strategies, in order; default every one in ``splits``.
    pairs : sequence of (str, str), optional
        Only these pairs (strategy_a, strategy_b); default every pair of ``strategies``.

    Returns
    -------
    DataFrame
        One row per (classifier, strategy_a, strategy_b, test) with columns
        classifier, strategy_a, strategy_b, mean_a, mean_b, test, statistic, df,
        p_value, stars, n, note, library_warning (what scipy warned, if anything)
        and caution (``"fewer than 5 iterations"`` on a t-test over fewer than
        :data:`MIN_ITERATIONS` iterations).
    """
    it = per_iteration_values(splits, metric)
    # The corrected test pairs the iterations that share a seed (the same resampling).
    # Runs merged by `mueval compare` may use different --seed-base values, so the
    # iteration number alone does not say which values belong together.
    pair_on = "seed" if "seed" in it.columns else "iteration"
    users = per_user_values(splits, predictions, metric)
    if strategies is None:
        strategies = list(dict.fromkeys(splits["strategy"]))
    ratios = {
        s: resampling_ratio(s, splits[splits["strategy"] == s], n_rows)
        for s in strategies
        if (splits["strategy"] == s).any()
    }
    rows: list[dict[str, object]] = []
    if pairs is None:
        pairs = list(itertools.combinations([s for s in strategies if s in ratios], 2))
    pairs = [(sa, sb) for sa, sb in pairs if sa in ratios and sb in ratios]
    # Each (strategy, classifier)'s values, grouped once: a pair looks them up
    # instead of filtering the whole tables again.
    by_cell = {
        key: group.set_index(pair_on)["value"]
        for key, group in it.groupby(["strategy", "classifier"], sort=False)
    }
    user_values = {
        key: dict(zip(group.user, group.value, strict=True))
        for key, group in users.groupby(["strategy", "classifier"], sort=False)
    }
    empty = pd.Series(dtype=float)
    for clf in dict.fromkeys(splits["classifier"]):
        for sa, sb in pairs:
            va, vb = by_cell.get((sa, clf), empty), by_cell.get((sb, clf), empty)
            if va.empty or vb.empty:
                continue
            common = va.index.intersection(vb.index)
            # The larger overlap of the two strategies: the conservative choice.
            ratio = max(ratios[sa][0], ratios[sb][0])
            results = [
                study_t_test(va.to_numpy(), vb.to_numpy()),
                corrected_resampled_t_test(
                    va.loc[common].to_numpy(), vb.loc[common].to_numpy(), ratio
                ),
                wilcoxon_over_users(user_values.get((sa, clf), {}), user_values.get((sb, clf), {})),
            ]
            how = ratios[sa][1] if ratios[sa][0] >= ratios[sb][0] else ratios[sb][1]
            results[1] = replace(
                results[1],
                note=f"{results[1].note}; larger of the two "
                f"strategies' ratios; {sa}/{sb} ratios "
                f"{ratios[sa][0]:.3g}/{ratios[sb][0]:.3g}; {how}",
            )
            for res in results:
                row = {
                    "classifier": clf,
                    "strategy_a": sa,
                    "strategy_b": sb,
                    "mean_a": float(va.mean()),
                    "mean_b": float(vb.mean()),
                }
                row.update(res.as_dict())
                few = res.test != WILCOXON_TEST and np.isfinite(res.p_value)
                row["caution"] = (
                    f"fewer than {MIN_ITERATIONS} iterations"
                    if few and res.n < MIN_ITERATIONS
                    else ""
                )
                rows.append(row)
    columns = [
        "classifier",
        "strategy_a",
        "strategy_b",
        "mean_a",
        "mean_b",
        "test",
        "statistic",
        "df",
        "p_value",
        "stars",
        "n",
        "note",
        "library_warning",
        "caution",
    ]
    return pd.DataFrame(rows, columns=columns)
