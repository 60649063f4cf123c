"""The evaluation strategies as records: one :class:`Strategy` per strategy, in one registry.

A strategy is a splitter plus a record. The record says what the code, the
tables, the report, the command line and the per-user verdicts need to know
(its code, display name, help line, how a user's iterations combine, whether
a verdict exists); the splitter turns one iteration's rows into
:class:`~mueval.evaluation.records.Split` records. Everything that used to
branch on a strategy's code (:mod:`mueval.names`, :func:`make_splits
<mueval.evaluation.splits.make_splits>`, :func:`default_combine
<mueval.guarantees.user_level.default_combine>`, the ``-s`` help) reads these
records, so a new strategy is one :func:`register_strategy` call
(CONTRIBUTING.md, "Adding an evaluation strategy", has a worked example that
``tests/project/test_contributing_strategy.py`` runs).

This module sits below :mod:`mueval.names` and imports nothing heavy: the
built-in records name their splitters by import path
(``"mueval.evaluation.splits:split_mixed"``), resolved when a run makes its
splits, so that ``mueval --help`` lists the strategies without loading
scikit-learn. A strategy of the user's gives its splitter as a callable or as
such a path.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mueval.errors import UsageError

__all__ = [
    "BUILTIN_STRATEGIES",
    "COMBINES",
    "STRATEGY_CODE",
    "STRATEGY_CODE_RULE",
    "Strategy",
    "get_strategy",
    "load_strategy",
    "register_strategy",
    "registered_strategies",
    "unregister_strategy",
]

#: How a user's iterations are combined in the exact per-user test
#: (:mod:`mueval.guarantees.user_level`).
COMBINES: tuple[str, ...] = ("convolution", "bonferroni")

#: What a strategy's code may be: it names files of the report and columns' values.
STRATEGY_CODE_RULE = "1 to 16 lower-case letters, digits, '_' or '-', starting with a letter"
#: :data:`STRATEGY_CODE_RULE` as a pattern.
STRATEGY_CODE = re.compile(r"[a-z][a-z0-9_-]{0,15}")

#: Words that ``-s`` reads itself and no strategy may be called.
_RESERVED = frozenset({"all"})


@dataclass(frozen=True)
class Strategy:
    """One evaluation strategy: its names, its splitter, and its per-user verdict rule.

    Parameters
    ----------
    code : str
        The code ``-s`` and ``strategies=`` take and every table shows
        (:data:`STRATEGY_CODE_RULE`), e.g. ``"ucm"``.
    name : str
        Display name in tables and the report, e.g. ``"UCM (user-calibrated)"``.
    help : str
        One line for ``mueval evaluate --help``: how the strategy splits.
    splitter : callable or str
        ``splitter(request) -> list[Split]``: the splits of one iteration
        (:class:`~mueval.evaluation.records.SplitRequest` in,
        :class:`~mueval.evaluation.records.Split` records out, each with its
        calibration rows under ``calibrations[code]``), or the import path
        ``"module:attribute"`` of such a function. Records that name the same
        splitter share its splits: one call per iteration serves every one of
        them that a run asks for (``request.strategies``), as UIM and UCM
        share training and test rows and so one model fit.
    combine : {"convolution", "bonferroni"}
        How a user's per-iteration verdicts combine under a random split:
        ``"convolution"`` (the exact law of the summed counts) only where each
        iteration draws the user's calibration and test rows afresh from the
        user's own rows, so that iterations are independent (UDM, UCM, UAM);
        ``"bonferroni"`` (valid under any dependence) where the user's test rows
        come back against the same kind of calibration rows (MM, UIM). Under
        ``--split blocked`` every strategy takes ``"bonferroni"``.
    no_verdict : str or None
        Why the strategy's users get no per-user verdict (no single rank-k
        threshold exists, as for UXC's cross-conformal p-values); None, the
        default, when the exact per-user test applies.
    aliases : tuple of str
        Other names ``-s`` accepts for the code.
    pooled : bool
        Whether the splits have no target user (MM: one split over every
        user's rows, ``Split.user`` None); False for a strategy that tests on
        one target user's rows per split.

    Examples
    --------
    >>> get_strategy("ucm").combine, get_strategy("uxc").has_verdict
    ('convolution', False)
    """

    code: str
    name: str
    help: str
    splitter: Callable[..., Any] | str
    combine: str = "bonferroni"
    no_verdict: str | None = None
    aliases: tuple[str, ...] = ()
    pooled: bool = False

    def __post_init__(self) -> None:
        # Aliases given as a list still make a hashable, frozen record.
        object.__setattr__(self, "aliases", tuple(self.aliases))
        _check(self)

    @property
    def has_verdict(self) -> bool:
        """Whether the exact per-user test gives this strategy's users a verdict."""
        return self.no_verdict is None

    def record(self) -> dict[str, Any]:
        """The record as ``run.json`` keeps it for a strategy of the user's: every
        field, the splitter as its import path ``module:qualified name``."""
        splitter = self.splitter
        if callable(splitter):
            module = getattr(splitter, "__module__", None) or "?"
            splitter = f"{module}:{getattr(splitter, '__qualname__', repr(splitter))}"
        return {
            "name": self.name,
            "help": self.help,
            "splitter": splitter,
            "combine": self.combine,
            "no_verdict": self.no_verdict,
            "aliases": list(self.aliases),
            "pooled": self.pooled,
        }

    def split_function(self) -> Callable[..., Any]:
        """The splitter as a function (an import path is imported here)."""
        if callable(self.splitter):
            return self.splitter
        value = _import(self.splitter, f"strategy {self.code!r}: splitter")
        if not callable(value):
            message = (
                f"strategy {self.code!r}: splitter {self.splitter!r} is a "
                f"{type(value).__name__}, not a function"
            )
            raise UsageError(message)
        return value


def _check(record: Strategy) -> None:
    """Every field of ``record`` has the right kind of value, each error naming the field."""
    where = f"strategy {record.code!r}"
    if not isinstance(record.code, str) or STRATEGY_CODE.fullmatch(record.code) is None:
        message = f"strategy code {record.code!r} must be {STRATEGY_CODE_RULE}"
        raise UsageError(message)
    if record.code in _RESERVED:
        message = f"strategy code {record.code!r} is reserved (-s {record.code} means every one)"
        raise UsageError(message)
    for field in ("name", "help"):
        value = getattr(record, field)
        if not isinstance(value, str) or not value.strip() or "\n" in value:
            message = f"{where}: {field} must be one non-empty line of text, got {value!r}"
            raise UsageError(message)
    if not (callable(record.splitter) or isinstance(record.splitter, str)):
        message = (
            f"{where}: splitter must be a function splitter(request) -> list of Split "
            f"or its import path 'module:attribute', got {type(record.splitter).__name__}"
        )
        raise UsageError(message)
    if record.combine not in COMBINES:
        message = f"{where}: combine must be one of {', '.join(COMBINES)}, got {record.combine!r}"
        raise UsageError(message)
    if record.no_verdict is not None and (
        not isinstance(record.no_verdict, str) or not record.no_verdict.strip()
    ):
        message = (
            f"{where}: no_verdict must be None or the reason as text, got {record.no_verdict!r}"
        )
        raise UsageError(message)
    if not isinstance(record.pooled, bool):
        message = f"{where}: pooled must be True or False, got {record.pooled!r}"
        raise UsageError(message)
    for alias in record.aliases:
        if (
            not isinstance(alias, str)
            or STRATEGY_CODE.fullmatch(alias) is None
            or alias in _RESERVED
        ):
            message = f"{where}: alias {alias!r} must be {STRATEGY_CODE_RULE}, and not 'all'"
            raise UsageError(message)


def _import(path: str, what: str) -> Any:
    """The object at ``module:attribute``."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        message = f"{what} {path!r} is no import path module:attribute"
        raise UsageError(message)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        message = f"{what} {path!r}: cannot import {module_name!r}: {exc}"
        raise UsageError(message) from exc
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            message = f"{what} {path!r}: {module_name!r} has no attribute {attribute!r}"
            raise UsageError(message)
        value = getattr(value, part)
    return value


_SPLITS = "mueval.evaluation.splits"

#: The built-in strategies in report order (docs/protocol.md, "Splits"; ``uam``
#: and ``uxc`` are additions to the reference protocol).
BUILTIN_STRATEGIES: tuple[Strategy, ...] = (
    Strategy(
        "mm",
        "MM (mixed)",
        "mixed model (60/20/20 over all rows).",
        f"{_SPLITS}:split_mixed",
        combine="bonferroni",
        aliases=("mixed",),
        pooled=True,
    ),
    Strategy(
        "udm",
        "UDM (user-dependent)",
        "user-dependent (the same split within each user).",
        f"{_SPLITS}:split_user_dependent",
        combine="convolution",
        aliases=("ud",),
    ),
    Strategy(
        "uim",
        "UIM (user-independent)",
        "user-independent (train and calibrate on the other users, test on half of the "
        "target user).",
        f"{_SPLITS}:split_user_independent",
        combine="bonferroni",
        aliases=("ui",),
    ),
    Strategy(
        "ucm",
        "UCM (user-calibrated)",
        "user-calibrated (train on the other users, calibrate on the target user's other half).",
        f"{_SPLITS}:split_user_independent",
        combine="convolution",
        aliases=("uc",),
    ),
    Strategy(
        "uam",
        "UAM (user-adaptive)",
        "user-adaptive (train on the other users plus --adapt-frac of the target user).",
        f"{_SPLITS}:split_user_adaptive",
        combine="convolution",
        aliases=("ua",),
    ),
    Strategy(
        "uxc",
        "UXC (user cross-conformal)",
        "user cross-conformal (the other users are the folds; every other user's "
        "out-of-fold scores calibrate the target; sets are {y : p > alpha}).",
        f"{_SPLITS}:split_cross_user",
        combine="bonferroni",
        no_verdict="cross-conformal p-values pooled over fold models, no rank-k threshold",
        aliases=("ux",),
    ),
    Strategy(
        "ukm",
        "UKM (user-clustered)",
        "user-clustered (as ucm; a target with fewer than --min-own own calibration rows "
        "calibrates on the other users of its k-means cluster of score quantiles).",
        # UIM's and UCM's splitter: one fit serves all three, and UKM's own
        # calibration rows are UCM's.
        f"{_SPLITS}:split_user_independent",
        combine="bonferroni",
        no_verdict=(
            "a user below --min-own calibrates on other users' rows, with which its test "
            "rows are not exchangeable; users at or above it have ucm's thresholds and "
            "ucm's verdicts"
        ),
        aliases=("uk",),
    ),
)

_BUILTIN_CODES = frozenset(s.code for s in BUILTIN_STRATEGIES)

#: Code -> record, built-ins first, then the user's in the order registered.
_REGISTRY: dict[str, Strategy] = {s.code: s for s in BUILTIN_STRATEGIES}


def registered_strategies() -> tuple[Strategy, ...]:
    """Every strategy known now, in report order: the built-ins, then the user's
    in the order they were registered."""
    return tuple(_REGISTRY.values())


def get_strategy(code: str) -> Strategy:
    """The record of a registered strategy code.

    Parameters
    ----------
    code : str
        A registered strategy code (an alias is not one).

    Returns
    -------
    Strategy

    Raises
    ------
    UsageError
        For a code no strategy has, naming the registered ones.
    """
    record = _REGISTRY.get(code) if isinstance(code, str) else None
    if record is None:
        message = f"unknown strategy {code!r}; registered: {', '.join(_REGISTRY)}"
        raise UsageError(message)
    return record


def register_strategy(record: Strategy, *, replace: bool = False) -> Strategy:
    """Add a strategy, so that ``-s``, ``strategies=``, the tables and the verdicts know it.

    Parameters
    ----------
    record : Strategy
        The strategy's record (its splitter included).
    replace : bool
        Replace a strategy of the user's registered before under the same
        code. A built-in strategy is never replaced: the study's numbers
        come from them.

    Returns
    -------
    Strategy
        ``record``, so that a module can write ``LTO = register_strategy(Strategy(...))``.

    Raises
    ------
    UsageError
        ``record`` is no :class:`Strategy`; its code or an alias is taken by
        another strategy (a built-in, or one of the user's without
        ``replace``).

    Notes
    -----
    Registering the same record twice (a module imported again, the command
    line's ``-s module:attribute`` after an import) is allowed and changes
    nothing. The registry is this process's: worker processes (``--jobs``,
    Dask) never need it, since the splits are made in the main process and
    sent to them whole.

    Examples
    --------
    >>> from mueval.strategies import Strategy, register_strategy, unregister_strategy
    >>> def no_splits(request):
    ...     return []
    >>> record = register_strategy(Strategy("nothing", "Nothing", "makes no split.", no_splits))
    >>> record.combine
    'bonferroni'
    >>> unregister_strategy("nothing")
    """
    if not isinstance(record, Strategy):
        message = (
            f"register_strategy takes a mueval.strategies.Strategy record, got "
            f"{type(record).__name__}"
        )
        raise UsageError(message)
    old = _REGISTRY.get(record.code)
    if old == record:
        return old
    if record.code in _BUILTIN_CODES:
        message = (
            f"strategy {record.code!r} is built in and cannot be replaced; choose another code"
        )
        raise UsageError(message)
    if old is not None and not replace:
        message = (
            f"strategy {record.code!r} is registered already (as {old.name!r}); "
            "pass replace=True to replace it"
        )
        raise UsageError(message)
    for other in _REGISTRY.values():
        if other.code == record.code:
            continue
        clash = {other.code, *other.aliases} & {record.code, *record.aliases}
        if clash:
            message = (
                f"strategy {record.code!r}: the name {sorted(clash)[0]!r} is taken by "
                f"strategy {other.code!r}"
            )
            raise UsageError(message)
    _REGISTRY[record.code] = record
    return record


def unregister_strategy(code: str) -> None:
    """Remove a strategy of the user's (a built-in stays).

    Parameters
    ----------
    code : str
        The strategy's code.

    Raises
    ------
    UsageError
        For a built-in or an unknown code.
    """
    if code in _BUILTIN_CODES:
        message = f"strategy {code!r} is built in and cannot be removed"
        raise UsageError(message)
    if code not in _REGISTRY:
        message = f"no strategy {code!r} is registered"
        raise UsageError(message)
    del _REGISTRY[code]


def load_strategy(path: str) -> Strategy:
    """Import the :class:`Strategy` at ``module:attribute`` and register it.

    How ``-s module:attribute`` takes a strategy of the user's on the command
    line (the module must be importable: on ``PYTHONPATH`` or installed).

    Parameters
    ----------
    path : str
        ``module:attribute``, e.g. ``"l2o:L2O"``.

    Returns
    -------
    Strategy
        The record, now registered.

    Raises
    ------
    UsageError
        The path does not import, or names no :class:`Strategy` record.
    """
    value = _import(path, "strategy")
    if not isinstance(value, Strategy):
        message = (
            f"strategy {path!r} is a {type(value).__name__}, not a mueval.strategies.Strategy "
            "record"
        )
        raise UsageError(message)
    return register_strategy(value)
