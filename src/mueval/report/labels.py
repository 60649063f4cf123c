"""The names of strategies and classifiers as the report spells them.

This module owns two things: the tokens that file names and anchors are built
from (a run folder's value only selects one of mueval's own codes, or a code the
reader has checked), and the labels shown on the page.
"""

from __future__ import annotations

from collections.abc import Sequence

from mueval.names import (
    CLASSIFIER_NAMES,
    CLASSIFIERS,
    STRATEGIES,
    is_model_name,
    is_strategy_code,
    strategy_name,
)
from mueval.runfolder import RunFolderError

__all__ = ["classifier_label", "classifier_token", "strategy_label", "strategy_token"]


def _token(code: str, known: Sequence[str], kind: str) -> str:
    """The code as it is spelled in mueval's own list, for use in a file name.

    File names are never built from text read from a run folder: the run folder's
    value only selects an entry of ``known``.
    """
    for candidate in known:
        if code == candidate:
            return candidate
    msg = f"{kind} {code!r} is not a {kind} code of mueval (expected one of {', '.join(known)})"
    raise RunFolderError(msg[:300])


def strategy_token(code: str) -> str:
    """A built-in code as mueval spells it, or a strategy of the user's, whose code
    :func:`~mueval.names.is_strategy_code` keeps to lower-case letters, digits, ``_``
    and ``-`` (the reader has checked it: :mod:`mueval.runfolder.checks`)."""
    if code not in STRATEGIES and is_strategy_code(code):
        return code
    return _token(code, STRATEGIES, "strategy")


def classifier_token(code: str) -> str:
    """A built-in code as mueval spells it, or a user model's name, which
    :func:`~mueval.names.is_model_name` keeps to letters, digits, ``_`` and ``-``
    (the reader has checked it: :mod:`mueval.runfolder.checks`)."""
    if code not in CLASSIFIERS and is_model_name(code):
        return code
    return _token(code, CLASSIFIERS, "classifier")


def strategy_label(code: str) -> str:
    """A strategy's name on the page (mixed model, user-dependent, ...)."""
    return strategy_name(code)


def classifier_label(code: str) -> str:
    """A classifier's name on the page; a model of the user's keeps its own."""
    return CLASSIFIER_NAMES.get(code, code)
