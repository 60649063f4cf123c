"""Exception family of :mod:`mueval`.

Every failure raised on purpose has its own class, subclassing the built-in it
resembles, so callers can catch it either way. The CLI maps :class:`UsageError`
(and its subclasses) to exit code 2 and every other :class:`MuevalError` to 1.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "DataError",
    "EvaluationError",
    "MuevalError",
    "NotRegularFileError",
    "OutputError",
    "SmallCalibrationError",
    "SplitError",
    "UsageError",
]


class MuevalError(Exception):
    """Base class of every error raised on purpose by :mod:`mueval`.

    Parameters
    ----------
    *args
        As for :class:`Exception`: the message first.
    cli : mapping of str to str, optional
        How the command line words what the message names as Python keywords,
        ``{text in the message: the CLI's text}``; the CLI prints the message
        through :func:`mudata.errors.cli_message`, which reads it from the
        attribute ``cli_words`` (the same one as mudata's errors: this module
        imports no mudata, which may be another package of that name).
    """

    def __init__(self, *args: object, cli: Mapping[str, str] | None = None) -> None:
        super().__init__(*args)
        if cli:
            self.cli_words = dict(cli)


class UsageError(MuevalError, ValueError):
    """The request itself is wrong (a name, an option value); exit code 2."""


class DataError(MuevalError, ValueError):
    """The input table cannot be evaluated (bad column, missing label, ...); exit 1."""


class SplitError(DataError):
    """A user or dataset is too small, or too uniform, for a strategy's split; exit 1."""


class EvaluationError(MuevalError, RuntimeError):
    """A model or conformal step failed for a given task; exit 1."""


class OutputError(MuevalError, OSError):
    """The run folder cannot be written; exit 1."""


class SmallCalibrationError(EvaluationError):
    """A calibration set is smaller than ``max(1/alpha, 1/(1-alpha))`` rows; exit 1
    unless ``--small-cal`` says to skip it or to answer with the full set."""


class NotRegularFileError(DataError):
    """An input path is a FIFO, device, socket or folder where a file was expected; exit 1.

    Reading such a path could block for ever (a FIFO with no writer) or never end
    (``/dev/zero``), so it is refused before it is opened.
    """
