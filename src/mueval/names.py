"""Every name a run speaks: strategies, classifiers and metrics, in table order.

The one place these names are declared; evaluation, the run folder, the tables
and the report import them from here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from mueval.errors import UsageError
from mueval.strategies import (
    BUILTIN_STRATEGIES,
    STRATEGY_CODE,
    Strategy,
    load_strategy,
    register_strategy,
    registered_strategies,
)

__all__ = [
    "BACKENDS",
    "BASIC_DIAGNOSTICS",
    "CLASSIC_METRICS",
    "CLASSIFIERS",
    "CLASSIFIER_NAMES",
    "COMPARABLE_METRICS",
    "COMPARE_ADJUSTMENTS",
    "CONFORMAL_METRICS",
    "CRITERIA",
    "CURVE_USES",
    "DEFAULT_STRATEGIES",
    "DIAGNOSTIC_LEVELS",
    "FULL_DIAGNOSTICS",
    "METRICS",
    "MODEL_NAME_RULE",
    "PAPER_FORMATS",
    "PAPER_ROWS",
    "PERCENT_METRICS",
    "PVALUE_METRICS",
    "REPORT_SUMMARY_METRICS",
    "SCORES",
    "SMALL_CAL_POLICIES",
    "SPLIT_METHODS",
    "SPLIT_SEEDS",
    "STRATEGIES",
    "STRATEGY_ALIASES",
    "STRATEGY_NAMES",
    "TASK_KEY_DTYPES",
    "THRESHOLD_RULES",
    "UKM_ASSIGN_RULES",
    "USER_CORRECTIONS",
    "USER_FAMILIES",
    "USER_FAMILY_WORDS",
    "classifier_name",
    "classifier_rank",
    "is_model_name",
    "is_pooled",
    "is_strategy_code",
    "ordered_classifiers",
    "ordered_strategies",
    "parse_classifiers",
    "parse_strategies",
    "strategy_codes",
    "strategy_name",
    "strategy_rank",
]

#: The built-in strategy codes in report order (docs/protocol.md, "Splits"; ``uam``
#: and ``uxc`` are additions). A strategy of the user's is in the registry
#: (:mod:`mueval.strategies`): :func:`strategy_codes` lists every one known now.
STRATEGIES: tuple[str, ...] = tuple(s.code for s in BUILTIN_STRATEGIES)

#: Long or short names accepted for each built-in strategy code.
STRATEGY_ALIASES: dict[str, str] = {a: s.code for s in BUILTIN_STRATEGIES for a in s.aliases}

#: Display names of the built-in strategies (:func:`strategy_name` knows every one).
STRATEGY_NAMES: dict[str, str] = {s.code: s.name for s in BUILTIN_STRATEGIES}

#: The strategies a run evaluates when none is named: the reference protocol's four.
DEFAULT_STRATEGIES: tuple[str, ...] = STRATEGIES[:4]


def strategy_codes() -> tuple[str, ...]:
    """Every registered strategy code, in report order (the built-ins first)."""
    return tuple(s.code for s in registered_strategies())


def _known_first(code: str, known: Sequence[str]) -> tuple[int, str]:
    """Sort key of ``code``: its place in ``known``, else after every known one, by code."""
    if code in known:
        return known.index(code), ""
    return len(known), str(code)


def strategy_rank(code: str) -> tuple[int, str]:
    """Sort key of a strategy in every table: registered ones in report order,
    then codes no strategy of this process has (read from a run folder), by code.

    Examples
    --------
    >>> sorted(["zz", "ucm", "mm"], key=strategy_rank)
    ['mm', 'ucm', 'zz']
    """
    return _known_first(code, strategy_codes())


def ordered_strategies(codes: Iterable[str]) -> list[str]:
    """Unique ``codes`` in table order (:func:`strategy_rank`)."""
    return sorted(set(codes), key=strategy_rank)


def strategy_name(code: str) -> str:
    """Display name of a registered strategy, or the code itself."""
    record = {s.code: s for s in registered_strategies()}.get(code)
    return code if record is None else record.name


def is_pooled(code: str) -> bool:
    """Whether a registered strategy's splits have no target user (MM); False for a
    code no strategy of this process has.

    Examples
    --------
    >>> is_pooled("mm"), is_pooled("ucm")
    (True, False)
    """
    record = {s.code: s for s in registered_strategies()}.get(str(code).lower())
    return record is not None and record.pooled


def is_strategy_code(value: object) -> bool:
    """Whether ``value`` can name a strategy (:data:`~mueval.strategies.STRATEGY_CODE_RULE`;
    safe in a file name), registered here or not."""
    return isinstance(value, str) and STRATEGY_CODE.fullmatch(value) is not None


#: Column types of the keys that name an evaluation task's iteration in every table.
TASK_KEY_DTYPES: dict[str, type[object] | str] = {
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
    return _known_first(code, CLASSIFIERS)


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

#: Conformity scores accepted by ``--score`` (MAPIE's names), the keys of
#: :data:`mueval.conformal.scores.SCORE_REGISTRY` (a test checks they agree).
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

#: How an iteration's successive splits are seeded (``--split-seeds``): all
#: from the iteration's seed, as the reference code, or each role from its own
#: child of ``numpy.random.SeedSequence`` (:mod:`mueval.evaluation.split_seeds`).
SPLIT_SEEDS: tuple[str, ...] = ("protocol", "independent")

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
CURVE_USES: tuple[str, ...] = ("calibration", "adaptation", "both", "cluster")

#: ``--assign``: how a ukm target with fewer than ``--min-own`` own calibration
#: rows finds its cluster (:mod:`mueval.evaluation.clustered`).
UKM_ASSIGN_RULES: tuple[str, ...] = ("rank", "centroid")

#: ``--backend`` values: loky worker processes or a Dask cluster.
BACKENDS: tuple[str, ...] = ("loky", "dask")


def _parse_codes(
    values: Sequence[str],
    codes: tuple[str, ...],
    what: str,
    aliases: dict[str, str],
    every: tuple[str, ...] | None = None,
) -> list[str]:
    """Expand ``values`` (codes, aliases, ``all``, comma lists) into codes in ``codes``' order;
    ``all`` is ``every`` (default: ``codes``)."""
    valid = ", ".join([*codes, *aliases, "all"])
    wanted: set[str] = set()
    for value in values:
        for part in str(value).split(","):
            name = part.strip().lower()
            if not name:
                continue
            if name == "all":
                wanted.update(codes if every is None else every)
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


def parse_strategies(
    values: Sequence[str | Strategy] | str | Strategy, extra: Iterable[str] = ()
) -> list[str]:
    """Expand strategy names (codes, aliases, ``all``, comma lists) in report order.

    Parameters
    ----------
    values : sequence of str or Strategy
        E.g. ``["mm,ucm"]``, ``["mixed", "ui"]`` or ``["all"]``. A
        :class:`~mueval.strategies.Strategy` record is registered and stands for
        its code; so does the import path ``module:attribute`` of one (``-s`` on
        the command line). ``all`` means the built-ins.
    extra : iterable of str
        The strategy codes of a run folder, also accepted where this process
        has not registered them (a report of a run of a strategy of the user's).

    Returns
    -------
    list of str
        Unique codes in table order (:func:`strategy_rank`).

    Examples
    --------
    >>> parse_strategies(["ucm,mixed"])
    ['mm', 'ucm']
    """
    if isinstance(values, (str, Strategy)):
        values = [values]
    names: list[str] = []
    for value in values:
        if isinstance(value, Strategy):
            names.append(register_strategy(value).code)
            continue
        for part in str(value).split(","):
            # An import path keeps its case (module and attribute names).
            names.append(load_strategy(part.strip()).code if ":" in part else part)
    records = registered_strategies()
    known = tuple(s.code for s in records)
    found = [e for e in extra if e not in known and is_strategy_code(e)]
    codes = (*known, *ordered_strategies(found))
    aliases = {a: s.code for s in records for a in s.aliases}
    return _parse_codes(names, codes, "strategy", aliases, every=STRATEGIES)


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
