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

:func:`compare_runs` adjusts the p-values for multiple comparisons within each
test (Holm's step-down over every pair and classifier of that test, by default;
:func:`adjust_table`): a comparison runs dozens of tests at once, and the study,
which corrected nothing, read its stars from raw p-values. The raw p-value and
its stars stay in the table beside the adjusted ones. :func:`compare_strategies`
alone (the report's tests) adjusts nothing.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mudata.display import plain
from mueval.errors import DataError, UsageError
from mueval.names import COMPARE_ADJUSTMENTS
from mueval.runfolder import RunFolder

#: The path of a run that was never saved (:meth:`mueval.Run.folder`).
UNSAVED = Path("<unsaved run>")

__all__ = [
    "CORRECTED_TEST",
    "MIN_ITERATIONS",
    "STUDY_TEST",
    "UNSAVED",
    "WILCOXON_TEST",
    "Comparison",
    "TestResult",
    "adjust_statement",
    "adjust_table",
    "compare_runs",
    "compare_strategies",
    "corrected_resampled_t_test",
    "holm",
    "labels_of",
    "merge_runs",
    "per_iteration_values",
    "per_user_values",
    "resampling_ratio",
    "run_labels",
    "star_label",
    "study_t_test",
    "table_notes",
    "unmatched_lines",
    "wide_table",
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


def study_t_test(a: Sequence[float], b: Sequence[float]) -> TestResult:
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
    a: Sequence[float], b: Sequence[float], test_train_ratio: float
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
    row_metric = {"coverage": "covered", "setsize": "set_size", "pctempty": None}
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


def table_notes(table: pd.DataFrame) -> list[str]:
    """The few sentences a comparison table needs below it, each said once.

    A caution when t-tests rest on fewer than :data:`MIN_ITERATIONS` iterations,
    and one note per kind of library warning (scipy's "catastrophic cancellation"
    on near-identical samples, say) with the number of tests it concerns: the
    tables themselves never carry a library's sentence.

    Parameters
    ----------
    table : DataFrame
        :func:`compare_strategies` output.

    Returns
    -------
    list of str
    """
    notes: list[str] = []
    if "caution" in table.columns:
        few = table[table["caution"].astype(str) != ""]
        if len(few):
            n_it = sorted({int(n) for n in few["n"]})
            notes.append(
                f"caution (!): {len(few)} t-tests rest on {', '.join(map(str, n_it))} iterations "
                f"(fewer than {MIN_ITERATIONS}; 1-3 degrees of freedom): their variance comes "
                "from a handful of values and their p-values are unreliable; run more "
                "--iterations before reading them."
            )
    undefined = table[~np.isfinite(table["p_value"].astype(float))]
    reasons = undefined["note"].astype(str).str.split(";").str[0].replace("", "undefined")
    for reason, group in undefined.groupby(reasons, sort=True):
        tests = ", ".join(sorted(set(group["test"].str.split(" ").str[0])))
        notes.append(f"n/a in {len(group)} tests ({tests}): {reason}.")
    if "library_warning" in table.columns:
        said = table[table["library_warning"].astype(str) != ""]
        for text, group in said.groupby("library_warning", sort=True):
            tests = ", ".join(sorted(set(group["test"].str.split(" ").str[0])))
            notes.append(
                f"note: scipy warned in {len(group)} tests ({tests}): {text}. This happens "
                "when the two samples are nearly identical; the p-values of those rows are "
                "not to be trusted beyond 'no detectable difference'."
            )
    return notes


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values of one family.

    With the m defined p-values sorted, ``p_(1) <= ... <= p_(m)``, the i-th
    adjusted value is ``max over j <= i of min(1, (m - j + 1) p_(j))``:
    rejecting where it is at most ``level`` is Holm's procedure at ``level``
    (reject ``p_(i)`` while every ``p_(j) <= level / (m - j + 1)``, j <= i).
    The same rule as the per-user verdicts'
    (:func:`mueval.guarantees.user_level.adjust_pvalues`), written here so that
    ``mueval compare`` does not load the verdicts' modules (scikit-learn among them).

    Parameters
    ----------
    pvalues : array of float, shape (m,)
        NaN entries (undefined tests) stay NaN and are not counted in the family.

    Returns
    -------
    ndarray of float, shape (m,)

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(4).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = order.size
    # Step-down: the i-th smallest is scaled by m - i + 1; an adjusted value never
    # falls below an earlier one, nor rises above 1.
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def adjust_table(table: pd.DataFrame, adjust: str = "holm") -> pd.DataFrame:
    """The table with its p-values adjusted for multiple comparisons, per test.

    The family of a test (the study's Welch test, the corrected t-test, the
    Wilcoxon test) is every row of that test: all its pairs of strategies and
    classifiers. The three tests ask one question of the same pairs in three
    ways, so they are three families, not one. Undefined (NaN) p-values are not
    counted in a family and stay NaN.

    Parameters
    ----------
    table : DataFrame
        :func:`compare_strategies` output.
    adjust : {"holm", "none"}
        Holm's step-down (:func:`holm`: family-wise error at most the level,
        whatever the dependence between the tests), or none (the adjusted
        p-value is the raw one).

    Returns
    -------
    DataFrame
        A copy with the columns ``adjust``, ``family_size`` (the defined p-values
        of the row's test), ``p_adjusted`` and ``stars_adjusted`` added;
        ``p_value`` and ``stars`` are still the raw ones.

    Raises
    ------
    UsageError
        ``adjust`` is not one of :data:`mueval.names.COMPARE_ADJUSTMENTS`.

    Examples
    --------
    >>> t = pd.DataFrame({"test": ["w", "w", "w", "c"], "p_value": [0.01, 0.04, np.nan, 0.03]})
    >>> adjust_table(t)[["family_size", "p_adjusted"]].values.tolist()
    [[2.0, 0.02], [2.0, 0.04], [2.0, nan], [1.0, 0.03]]
    """
    if adjust not in COMPARE_ADJUSTMENTS:
        msg = f"adjust must be one of {', '.join(COMPARE_ADJUSTMENTS)}; found {adjust!r}"
        raise UsageError(msg)
    out = table.copy()
    p = out["p_value"].to_numpy(dtype=float)
    adjusted = np.full(p.shape, np.nan)
    size = np.zeros(p.shape, dtype=np.int64)
    for rows in out.groupby("test", sort=False).indices.values():
        adjusted[rows] = holm(p[rows]) if adjust == "holm" else p[rows]
        size[rows] = np.isfinite(p[rows]).sum()
    out["adjust"] = adjust
    out["family_size"] = size
    out["p_adjusted"] = adjusted
    out["stars_adjusted"] = [star_label(v) for v in adjusted]
    return out


_SHORT_TESTS = {STUDY_TEST: "welch", CORRECTED_TEST: "corrected", WILCOXON_TEST: "wilcoxon"}


def adjust_statement(table: pd.DataFrame) -> str:
    """One sentence on the correction of an :func:`adjust_table` output: which,
    and the size of each test's family.

    Examples
    --------
    >>> t = pd.DataFrame({"test": [STUDY_TEST] * 2, "p_value": [0.01, 0.2],
    ...                   "classifier": ["nb", "rf"], "strategy_a": ["mm"] * 2,
    ...                   "strategy_b": ["ucm"] * 2})
    >>> adjust_statement(adjust_table(t))
    "p-values: raw/Holm-adjusted within each test, the stars the adjusted p-value's; family sizes (defined p-values of 1 pairs x 2 classifiers): welch 2."
    """
    adjust = str(table["adjust"].iloc[0]) if len(table) else "none"
    n_pairs = len(table.drop_duplicates(["strategy_a", "strategy_b"]))
    n_clf = table["classifier"].nunique()
    sizes = table.groupby("test", sort=False)["family_size"].first()
    family = ", ".join(f"{_SHORT_TESTS.get(t, t)} {int(n)}" for t, n in sizes.items())
    where = f"(defined p-values of {n_pairs} pairs x {n_clf} classifiers): {family}."
    if adjust == "none":
        return (
            "p-values: raw, not adjusted for multiple comparisons (--adjust none); "
            f"tests per family {where}"
        )
    name = {"holm": "Holm"}.get(adjust, adjust)
    return (
        f"p-values: raw/{name}-adjusted within each test, the stars the adjusted "
        f"p-value's; family sizes {where}"
    )


def _p_cell(row: pd.Series) -> str:
    if not np.isfinite(row["p_value"]):
        return "n/a"
    mark = "!" if str(row.get("caution", "")) else ""
    if str(row.get("adjust", "none")) != "none":
        # Both p-values; the stars are the adjusted one's.
        return f"{row['p_value']:.3g}/{row['p_adjusted']:.3g} {row['stars_adjusted']}{mark}"
    return f"{row['p_value']:.3g} {row['stars']}{mark}"


def wide_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (classifier, strategy_a, strategy_b), the three tests side by side.

    Each test's cell is ``p stars``, with ``!`` when the row carries a caution
    (a t-test over fewer than :data:`MIN_ITERATIONS` iterations); in a table
    adjusted by :func:`adjust_table` (other than ``none``), ``p/p_adjusted
    stars``, the stars of the adjusted p-value. The terminal's form of
    :func:`compare_strategies`'s table (three times shorter).

    Parameters
    ----------
    table : DataFrame
        :func:`compare_strategies` or :func:`adjust_table` output.

    Returns
    -------
    DataFrame
        Columns classifier, strategy_a, strategy_b, mean_a, mean_b, then one per
        test (``welch``, ``corrected``, ``wilcoxon``) and ``n_users``.
    """
    short = _SHORT_TESTS
    keys = ["classifier", "strategy_a", "strategy_b"]
    rows = []
    for key, group in table.groupby(keys, sort=False):
        first = group.iloc[0]
        row = dict(zip(keys, key, strict=True))
        row["mean_a"] = f"{first['mean_a']:.4g}"
        row["mean_b"] = f"{first['mean_b']:.4g}"
        for _, r in group.iterrows():
            row[short.get(r["test"], r["test"])] = _p_cell(r)
            if r["test"] == WILCOXON_TEST:
                row["n_users"] = int(r["n"])
        rows.append(row)
    columns = [*keys, "mean_a", "mean_b", "welch", "corrected", "wilcoxon", "n_users"]
    return pd.DataFrame(rows).reindex(columns=columns).fillna("")


def run_labels(paths: Sequence[Path]) -> list[str]:
    """One distinct label per run folder: its name, with as many parent folders as it
    takes to tell it from the others (``a/run`` and ``b/run``, not ``run`` twice).

    Parameters
    ----------
    paths : sequence of Path

    Returns
    -------
    list of str

    Raises
    ------
    UsageError
        The same folder is given twice.

    Examples
    --------
    >>> run_labels([Path("/x/a/run"), Path("/x/b/run"), Path("/x/other")])
    ['a/run', 'b/run', 'other']
    """
    real = [p.resolve() for p in paths]
    for i, r in enumerate(real):
        if r in real[:i]:
            msg = f"{paths[i]} is given twice (it is {r}); give each run folder once"
            raise UsageError(msg)
    depth = [1] * len(real)
    while True:
        labels = [
            _label("/".join(r.parts[-d:]).lstrip("/") or "/")
            for r, d in zip(real, depth, strict=True)
        ]
        clashes = {label for label in labels if labels.count(label) > 1}
        if not clashes:
            return labels
        for i, label in enumerate(labels):
            if label in clashes:
                depth[i] += 1


def _label(text: str) -> str:
    """A folder name as a label: escaped (``\\x1b``, ``\\u202e``) wherever it is shown,
    its own backslashes doubled so that two names never give one label (distinct
    folders reach distinct labels, and :func:`run_labels` ends)."""
    return plain(text.replace("\\", "\\\\"))


@dataclass
class Comparison:
    """The result of :func:`compare_runs`.

    Attributes
    ----------
    table : DataFrame
        As :func:`compare_strategies` returns it.
    labels : list of str
        One label per run.
    warnings : list of str
        Settings in which the runs differ (alpha, score, threshold, Mondrian).
    unmatched : list of str
        One line per strategy, classifier or pair left out of the table because
        the other side lacks it (:func:`unmatched_lines`).
    """

    table: pd.DataFrame
    labels: list[str]
    warnings: list[str]
    unmatched: list[str] = field(default_factory=list)


def labels_of(runs: Sequence[RunFolder]) -> list[str]:
    """A short label per run: its folder's distinguishing name, or ``run N`` unsaved."""
    saved = [r for r in runs if r.path != UNSAVED]
    labels = iter(run_labels([r.path for r in saved]))
    unsaved = iter(range(1, len(runs) + 1))
    return [next(labels) if r.path != UNSAVED else f"run {next(unsaved)}" for r in runs]


def merge_runs(
    runs: Sequence[RunFolder],
    labels: Sequence[str],
    *,
    strategies: Sequence[str] | None = None,
    classifiers: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, int, list[str]]:
    """Stack several runs of one dataset; a strategy found in more than one run is
    prefixed by its run's label, so that two runs never merge into one.

    ``strategies`` and ``classifiers`` (codes), when given, keep only those rows.

    Returns
    -------
    splits, predictions : DataFrame
    n_rows : int
        Rows of the dataset.
    warnings : list of str
        The settings in which the runs differ.

    Raises
    ------
    DataError
        The runs evaluate different datasets.
    """
    hashes = {r.run["dataset"].get("provenance_sha256") for r in runs}
    if len(hashes) > 1:
        names = ", ".join(
            f"{label}: {r.run['dataset'].get('name')}"
            for label, r in zip(labels, runs, strict=True)
        )
        msg = f"runs evaluate different datasets ({names}); compare runs of one dataset"
        raise DataError(msg)
    # Runs at other levels or with other scores answer other questions; comparing
    # them is allowed (that may be the point) but must not go unnoticed.
    notes = []
    for key in (
        "alpha",
        "score",
        "score_function",
        "randomized",
        "raps_lambda",
        "raps_k_reg",
        "threshold",
        "mondrian",
        "condition",
        "split",
    ):
        # Run folders written before --randomized existed ran deterministic scores.
        default = False if key == "randomized" else None
        values = {str(r.run.get("config", {}).get(key, default)) for r in runs}
        if len(values) > 1:
            found = ", ".join(
                f"{label}: {r.run.get('config', {}).get(key)}"
                for label, r in zip(labels, runs, strict=True)
            )
            notes.append(f"the runs differ in {key} ({found})")
    kept = [_filtered(r, strategies, classifiers) for r in runs]
    seen: dict[str, int] = {}
    for sp, _ in kept:
        for s in set(sp["strategy"]):
            seen[s] = seen.get(s, 0) + 1
    splits, preds = [], []
    for label, (sp, pr) in zip(labels, kept, strict=True):
        if len(runs) > 1:
            rename = {s: f"{label}/{s}" for s in seen if seen[s] > 1}
            sp["strategy"] = sp["strategy"].replace(rename)
            pr["strategy"] = pr["strategy"].replace(rename)
        splits.append(sp)
        preds.append(pr)
    merged = pd.concat(splits, ignore_index=True), pd.concat(preds, ignore_index=True)
    return merged[0], merged[1], runs[0].n_rows, notes


def _filtered(
    run: RunFolder, strategies: Sequence[str] | None, classifiers: Sequence[str] | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run's splits and the prediction columns the tests read, filtered by code."""
    columns = ["strategy", "classifier", "iteration", "userid", "covered", "set_size"]
    sp, pr = run.splits, run.predictions[columns]
    if strategies is not None:
        sp, pr = sp[sp.strategy.isin(strategies)], pr[pr.strategy.isin(strategies)]
    if classifiers is not None:
        sp, pr = sp[sp.classifier.isin(classifiers)], pr[pr.classifier.isin(classifiers)]
    return sp.copy(), pr.copy()


def _matched_pairs(
    runs: Sequence[RunFolder],
    labels: Sequence[str],
    strategies: Sequence[str] | None,
    classifiers: Sequence[str] | None,
) -> list[tuple[str, str]]:
    """Each strategy against itself in every other run (labels as :func:`merge_runs`
    gives them), in the runs' order and the first run's strategy order."""
    present = [list(_held(r, strategies, classifiers)) for r in runs]
    order = list(dict.fromkeys(s for codes in present for s in codes))
    pairs = []
    for s in order:
        having = [label for label, codes in zip(labels, present, strict=True) if s in codes]
        pairs += [(f"{a}/{s}", f"{b}/{s}") for a, b in itertools.combinations(having, 2)]
    return pairs


def _held(
    run: RunFolder, strategies: Sequence[str] | None, classifiers: Sequence[str] | None
) -> dict[str, set[str]]:
    """strategy -> its classifiers in one run, after the filters."""
    pairs = run.splits[["strategy", "classifier"]].drop_duplicates()
    if strategies is not None:
        pairs = pairs[pairs.strategy.isin(strategies)]
    if classifiers is not None:
        pairs = pairs[pairs.classifier.isin(classifiers)]
    held: dict[str, set[str]] = {}
    for strategy, classifier in zip(pairs.strategy, pairs.classifier, strict=True):
        held.setdefault(strategy, set()).add(classifier)
    return held


def _only_in(what: str, code: str, having: list[str], labels: Sequence[str]) -> str:
    missing = [label for label in labels if label not in having]
    if len(having) == 1:
        return f"not compared: {what} {code} only in {having[0]}"
    return f"not compared: {what} {code} with {', '.join(missing)} (only in {', '.join(having)})"


def unmatched_lines(
    runs: Sequence[RunFolder],
    labels: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    *,
    strategies: Sequence[str] | None = None,
    classifiers: Sequence[str] | None = None,
    all_pairs: bool = False,
) -> list[str]:
    """What a comparison leaves out, one line each, instead of dropping it silently.

    Several runs: a classifier some run lacks (``not compared: classifier rf only
    in a``), and unless ``all_pairs``, a strategy some run lacks (it has nothing
    to be matched with there). Any number of runs: a pair of strategies whose
    two sides do not share a classifier the runs otherwise hold (``a/mm`` with
    ``nb``, ``b/mm`` without).

    Parameters
    ----------
    runs : sequence of RunFolder
    labels : sequence of str
        One per run, as :func:`labels_of` gives them.
    pairs : sequence of (str, str)
        The pairs compared, strategies named as :func:`merge_runs` names them.
    strategies, classifiers : sequence of str, optional
        The filters of the comparison.
    all_pairs : bool, default False

    Returns
    -------
    list of str
    """
    held = [_held(r, strategies, classifiers) for r in runs]
    lines: list[str] = []
    absent: set[tuple[str, str]] = set()  # (run label, classifier) said already
    if len(runs) > 1:
        every_c = list(dict.fromkeys(c for h in held for cs in h.values() for c in sorted(cs)))
        for c in every_c:
            having = [
                lab for lab, h in zip(labels, held, strict=True) if any(c in v for v in h.values())
            ]
            if len(having) < len(runs):
                lines.append(_only_in("classifier", c, having, labels))
                absent |= {(lab, c) for lab in labels if lab not in having}
        if not all_pairs:
            every_s = list(dict.fromkeys(s for h in held for s in h))
            for s in every_s:
                having = [lab for lab, h in zip(labels, held, strict=True) if s in h]
                if len(having) < len(runs):
                    line = _only_in("strategy", s, having, labels)
                    if len(having) == 1:
                        line += " (--all-pairs tests it against the other runs' strategies)"
                    lines.append(line)
    # The name merge_runs gives each (run, strategy), and the run it belongs to.
    seen: dict[str, int] = {}
    for h in held:
        for s in h:
            seen[s] = seen.get(s, 0) + 1
    owner: dict[str, tuple[str, set[str]]] = {}
    for label, h in zip(labels, held, strict=True):
        for s, cs in h.items():
            name = f"{label}/{s}" if len(runs) > 1 and seen[s] > 1 else s
            owner[name] = (label, cs)
    for sa, sb in pairs:
        if sa not in owner or sb not in owner:
            continue
        (la, ca), (lb, cb) = owner[sa], owner[sb]
        for c in sorted(ca ^ cb):
            lacking, having = (sb, sa) if c in ca else (sa, sb)
            if ((lb if c in ca else la), c) in absent:
                continue  # the run lacks the classifier altogether: said above
            lines.append(
                f"not compared: {sa} against {sb} with classifier {c} "
                f"(evaluated under {having}, not under {lacking})"
            )
    return lines


def compare_runs(
    runs: Sequence[RunFolder],
    *,
    metric: str = "coverage",
    strategies: Sequence[str] | None = None,
    classifiers: Sequence[str] | None = None,
    all_pairs: bool = False,
    adjust: str = "holm",
) -> Comparison:
    """:func:`compare_strategies` over one or more runs of one dataset.

    With one run, every pair of its strategies. With several, each strategy is
    matched with itself in the other runs (``a/uim`` against ``b/uim``), per
    classifier; ``all_pairs`` adds every mismatched pair (``a/uim`` against
    ``b/mm``, and the pairs within each run). What has nothing to be compared
    with (a classifier or strategy of one run only) is listed in
    :attr:`Comparison.unmatched`; the p-values are adjusted within each test
    (:func:`adjust_table`).

    Parameters
    ----------
    runs : sequence of RunFolder
    metric : str
        A per-split metric.
    strategies, classifiers : sequence of str, optional
        Codes to keep; default every one in the runs.
    all_pairs : bool, default False
        Several runs: every pair of strategies, not only the matched ones.
    adjust : {"holm", "none"}, default "holm"
        Multiple-comparison correction within each test: a comparison runs many
        tests at once, and Holm's keeps the chance of any false "significant"
        at the level whatever their dependence. The raw p-values stay in
        ``p_value`` and ``stars``.

    Raises
    ------
    UsageError
        A run folder given twice, a metric the runs do not hold, a strategy or
        classifier no run holds, or an unknown ``adjust``.
    DataError
        The runs evaluate different datasets, or hold nothing to compare (several
        runs without a strategy in common need ``all_pairs``).
    """
    labels = labels_of(runs)
    for what, asked, column in (
        ("strategy", strategies, "strategy"),
        ("classifier", classifiers, "classifier"),
    ):
        present = list(dict.fromkeys(v for r in runs for v in r.splits[column]))
        unknown = [a for a in asked or () if a not in present]
        if unknown:
            msg = f"{what} {', '.join(unknown)} not in the runs; they hold {', '.join(present)}"
            raise UsageError(msg)
    splits, preds, n_rows, notes = merge_runs(
        runs, labels, strategies=strategies, classifiers=classifiers
    )
    if metric not in splits.columns:
        msg = f"the runs have no per-split metric {metric!r}"
        raise UsageError(msg)
    pairs = (
        None
        if len(runs) == 1 or all_pairs
        else _matched_pairs(runs, labels, strategies, classifiers)
    )
    if adjust not in COMPARE_ADJUSTMENTS:
        msg = f"adjust must be one of {', '.join(COMPARE_ADJUSTMENTS)}; found {adjust!r}"
        raise UsageError(msg)
    table = compare_strategies(splits, preds, n_rows, metric=metric, pairs=pairs)
    if table.empty and pairs is not None:
        held = "; ".join(
            f"{label}: {', '.join(dict.fromkeys(r.splits['strategy']))}"
            for label, r in zip(labels, runs, strict=True)
        )
        msg = (
            f"nothing to compare: the runs share no strategy evaluated with one classifier "
            f"({held}); give all_pairs=True to compare different strategies across runs"
        )
        raise DataError(msg, cli={"all_pairs=True": "--all-pairs"})
    if table.empty:
        found = ", ".join(dict.fromkeys(splits["strategy"])) or "none"
        where = [
            label if r.path == UNSAVED else str(r.path)
            for label, r in zip(labels, runs, strict=True)
        ]
        msg = (
            f"nothing to compare: expected at least two strategies evaluated with one "
            f"classifier in {', '.join(where)}, found strategies: {found} "
            "(run `mueval evaluate` with more than one --strategy, or give several runs)"
        )
        raise DataError(msg)
    if pairs is None:
        pairs = list(itertools.combinations(dict.fromkeys(splits["strategy"]), 2))
    unmatched = unmatched_lines(
        runs, labels, pairs, strategies=strategies, classifiers=classifiers, all_pairs=all_pairs
    )
    return Comparison(
        table=adjust_table(table, adjust), labels=labels, warnings=notes, unmatched=unmatched
    )
