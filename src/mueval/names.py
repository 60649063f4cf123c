"""Every name a run speaks: strategies, classifiers and metrics, in table order.

The one place these names are declared; evaluation, the run folder, the tables
and the report import them from here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from mueval.errors import UsageError

#: Strategy codes in report order (docs/protocol.md, "Splits"; ``uam`` and ``uxc``
#: are additions).
STRATEGIES: tuple[str, ...] = ("mm", "udm", "uim", "ucm", "uam", "uxc")

#: Long or short names accepted for each strategy code.
STRATEGY_ALIASES: dict[str, str] = {
    "mixed": "mm",
    "ud": "udm",
    "ui": "uim",
    "uc": "ucm",
    "ua": "uam",
    "ux": "uxc",
}

#: Display names of the strategies.
STRATEGY_NAMES: dict[str, str] = {
    "mm": "MM (mixed)",
    "udm": "UDM (user-dependent)",
    "uim": "UIM (user-independent)",
    "ucm": "UCM (user-calibrated)",
    "uam": "UAM (user-adaptive)",
    "uxc": "UXC (user cross-conformal)",
}

#: Column types of the keys that name an evaluation task's iteration in every table.
TASK_KEY_DTYPES: dict[str, object] = {
    "strategy": str,
    "classifier": str,
    "iteration": "int64",
    "seed": "int64",
}

#: Classifier codes in the protocol's (and every table's) column order.
CLASSIFIERS: tuple[str, ...] = ("nb", "rf", "svm", "knn")

#: Display names of the classifiers.
CLASSIFIER_NAMES: dict[str, str] = {
    "nb": "Naive Bayes",
    "rf": "RF",
    "svm": "SVM",
    "knn": "KNN",
}

#: What a model of the user's may be called: the report builds file names from it.
MODEL_NAME_RULE = (
    "a name of 1 to 48 letters, digits, '_' or '-', starting with a letter (and no built-in code)"
)
_MODEL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,47}")


def is_model_name(value: object) -> bool:
    """Whether ``value`` can name a classifier: a built-in code or a user model's name
    (:data:`MODEL_NAME_RULE`; safe in a file name)."""
    return isinstance(value, str) and (
        value in CLASSIFIERS or _MODEL_NAME.fullmatch(value) is not None
    )


def classifier_rank(code: str) -> tuple[int, str]:
    """Sort key of a classifier in every table: the built-ins in :data:`CLASSIFIERS`'
    order, then the user's models by name.

    Examples
    --------
    >>> sorted(["LogReg", "knn", "nb"], key=classifier_rank)
    ['nb', 'knn', 'LogReg']
    """
    if code in CLASSIFIERS:
        return CLASSIFIERS.index(code), ""
    return len(CLASSIFIERS), str(code)


def ordered_classifiers(codes: Iterable[str]) -> list[str]:
    """Unique ``codes`` in table order (:func:`classifier_rank`)."""
    return sorted(set(codes), key=classifier_rank)


def classifier_name(code: str) -> str:
    """Display name: the built-ins' of :data:`CLASSIFIER_NAMES`, a user model's own."""
    return CLASSIFIER_NAMES.get(code, code)


#: Non-conformal metrics, in table order (fractions).
CLASSIC_METRICS: tuple[str, ...] = (
    "accuracy",
    "sensitivity",
    "specificity",
    "F1",
    "weighted_F1",
)

#: Vovk et al.'s efficiency criteria as the study computes them, in table order.
CRITERIA: tuple[str, ...] = ("MCriterion", "FCriterion", "OM", "OF", "OU", "OE")

#: Conformal metrics, in table order: the study's ten, then the textbook OF/OU.
CONFORMAL_METRICS: tuple[str, ...] = (
    "coverage",
    "jaccard",
    "setsize",
    "pctempty",
    *CRITERIA,
    "OF_textbook",
    "OU_textbook",
)

#: The conformal metrics computed from p-values rather than from the sets.
PVALUE_METRICS: tuple[str, ...] = ("FCriterion", "OF", "OU", "OF_textbook", "OU_textbook")

#: Every metric a run reports, in table order.
METRICS: tuple[str, ...] = CLASSIC_METRICS + CONFORMAL_METRICS

#: Metrics printed in percent by tables (the rest as fractions or counts).
PERCENT_METRICS: frozenset[str] = frozenset(
    {"accuracy", "sensitivity", "specificity", "F1", "weighted_F1", "coverage", "pctempty"}
)

#: The study's metrics a report's summary table shows, in its order.
REPORT_SUMMARY_METRICS: tuple[str, ...] = (
    "accuracy",
    "coverage",
    "setsize",
    "pctempty",
    "jaccard",
    *CRITERIA,
)

#: The per-split metrics ``mueval compare`` tests between strategies.
COMPARABLE_METRICS: tuple[str, ...] = (
    "coverage",
    "setsize",
    "accuracy",
    "jaccard",
    "pctempty",
    "weighted_F1",
    "F1",
    "sensitivity",
    "specificity",
    *CRITERIA,
)

# The option values below are declared here, not in the modules that use them,
# so that the command line can offer them without importing scikit-learn or MAPIE.

#: ``mueval compare --adjust``: Holm's step-down within each test, or no correction.
COMPARE_ADJUSTMENTS: tuple[str, ...] = ("holm", "none")

#: ``mueval table --format`` (:mod:`mueval.report.paper`).
PAPER_FORMATS: tuple[str, ...] = ("latex", "csv", "markdown")

#: ``mueval table --rows``: the study's rows, or every row the terminal table prints.
PAPER_ROWS: tuple[str, ...] = ("study", "all")

#: Conformity scores accepted by ``--score`` (MAPIE's names; :mod:`mueval.conformal.sets`).
SCORES: tuple[str, ...] = ("lac", "aps", "raps", "top_k")

#: Threshold rules of :func:`mueval.conformal.thresholds.lac_threshold`: the reference
#: study's (MAPIE 0.8.6) and MAPIE 1.x's finite-sample rule.
THRESHOLD_RULES: tuple[str, ...] = ("study", "mapie")

#: Levels of ``--diagnostics``: nothing, the cheap ones, the cheap ones plus WSC and ERT.
DIAGNOSTIC_LEVELS: tuple[str, ...] = ("none", "basic", "full")

#: The conditional-coverage diagnostics of each level, in table order
#: (:mod:`mueval.guarantees.run_diagnostics` computes them).
BASIC_DIAGNOSTICS: tuple[str, ...] = (
    "covgap_user",
    "wcovgap_user",
    "covgap_class",
    "wcovgap_class",
    "hsic_size_coverage",
)
FULL_DIAGNOSTICS: tuple[str, ...] = (*BASIC_DIAGNOSTICS, "wsc", "ert")

#: Within-user split methods: the study's stratified random split, or contiguous
#: blocks in time order with a gap (``--split``).
SPLIT_METHODS: tuple[str, ...] = ("random", "blocked")

#: ``--small-cal`` policies for a calibration set too small for a threshold.
SMALL_CAL_POLICIES: tuple[str, ...] = ("error", "skip", "full-set")

#: ``--user-correction``: how the per-user verdicts "below target" are adjusted
#: across the users of one strategy and classifier (Holm's step-down,
#: Benjamini-Hochberg's step-up, none); :mod:`mueval.guarantees.user_level`.
USER_CORRECTIONS: tuple[str, ...] = ("holm", "bh", "none")

#: ``--user-family``: over which users that correction runs. ``run``: every
#: user of every strategy and classifier of the run at once (the level holds
#: for the run a reader sees); ``pair``: the users of each (strategy,
#: classifier) apart, the level holding per pair.
USER_FAMILIES: tuple[str, ...] = ("run", "pair")

#: How a verdict names its family: "... after Holm over every user of the run".
USER_FAMILY_WORDS: dict[str, str] = {
    "run": "every user of the run",
    "pair": "the users of each strategy and classifier",
}

#: What ``mueval curve`` does with the target user's k labelled windows.
CURVE_USES: tuple[str, ...] = ("calibration", "adaptation", "both")

#: ``--backend`` values: loky worker processes or a Dask cluster.
BACKENDS: tuple[str, ...] = ("loky", "dask")


def _parse_codes(
    values: Sequence[str], codes: tuple[str, ...], what: str, aliases: dict[str, str]
) -> list[str]:
    """Expand ``values`` (codes, aliases, ``all``, comma lists) into codes in ``codes``' order."""
    valid = ", ".join([*codes, *aliases, "all"])
    wanted: set[str] = set()
    for value in values:
        for part in str(value).split(","):
            name = part.strip().lower()
            if not name:
                continue
            if name == "all":
                wanted.update(codes)
            elif name in codes:
                wanted.add(name)
            elif name in aliases:
                wanted.add(aliases[name])
            else:
                message = f"unknown {what} {part.strip()!r}; valid: {valid}"
                raise UsageError(message)
    if not wanted:
        message = f"no {what} given; valid: {valid}"
        raise UsageError(message)
    return [c for c in codes if c in wanted]


def parse_strategies(values: Sequence[str]) -> list[str]:
    """Expand strategy names (codes, aliases, ``all``, comma lists) in report order.

    Parameters
    ----------
    values : sequence of str
        E.g. ``["mm,ucm"]``, ``["mixed", "ui"]`` or ``["all"]``.

    Returns
    -------
    list of str
        Unique codes ordered as :data:`STRATEGIES`.

    Examples
    --------
    >>> parse_strategies(["ucm,mixed"])
    ['mm', 'ucm']
    """
    return _parse_codes(values, STRATEGIES, "strategy", STRATEGY_ALIASES)


def parse_classifiers(values: Sequence[str], extra: Iterable[str] = ()) -> list[str]:
    """Expand classifier codes (``all`` included, comma lists allowed), in table order.

    Parameters
    ----------
    values : sequence of str
        Codes as given on the command line, e.g. ``["nb,rf", "knn"]`` or ``["all"]``.
    extra : iterable of str
        The names of user models also accepted (those of a run folder), exactly
        as spelled; ``all`` still means the four built-ins.

    Returns
    -------
    list of str
        Unique codes, in table order (:func:`classifier_rank`).

    Examples
    --------
    >>> parse_classifiers(["knn", "nb"])
    ['nb', 'knn']
    """
    extra = [e for e in extra if e not in CLASSIFIERS]
    if not extra:
        return _parse_codes(values, CLASSIFIERS, "classifier", {})
    own = set(extra)
    parts = [p.strip() for v in values for p in str(v).split(",")]
    builtins = [p for p in parts if p and p not in own]
    named = [p for p in parts if p in own]
    codes = _parse_codes(builtins, CLASSIFIERS, "classifier", {}) if builtins or not named else []
    return ordered_classifiers([*codes, *named])
