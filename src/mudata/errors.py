"""Exception family of :mod:`mudata`.

Every failure a user can cause or meet has its own class, subclassing the
built-in exception it resembles, so callers can catch it either way. The CLI
maps :class:`MudataUsageError` subclasses to exit code 2 and everything else to 1
(in one place: :class:`mudata.cli_options.ErrorMappingGroup`).

The names are distinct from :mod:`mueval.errors`, whose ``UsageError`` is a
different class: code that handles both packages can import both without
aliasing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mudata.display import shown

#: The attribute of an exception that says how a command line words what its
#: message says in Python's terms: ``{text in the message: the CLI's text}``,
#: e.g. ``{"allow_unverified=True": "--allow-unverified"}``. mudata's and
#: mueval's errors take it as ``cli=``; :func:`cli_message` applies it.
CLI_WORDS = "cli_words"


#: The codes of :class:`Reason`: what is wrong with the setting it names.
REASON_CODES = {
    "missing": "a setting the layout needs is not given",
    "invalid": "a setting's value is malformed or not one of its choices",
    "taken": "a column given for two roles",
    "absent": "a column or variable the setting names is not in the file",
    "not-numeric": "a column's values are not numbers (or not times)",
    "blank": "a key column (user, time, stream key) is blank at a row",
    "goes-back": "time goes back inside one recording or stream",
    "no-match": "a path or a stream matches nothing the setting selects",
    "unreadable": "a file's bytes are not readable in the format the entry gives",
    "differs": "the files do not hold the same columns or streams",
    "empty": "nothing is left to build (no interval, no window, no row)",
}


@dataclass(frozen=True)
class Reason:
    """What a refusal is about, for a program rather than a reader of the message.

    Raised with a :class:`ParseError` or :class:`RegistryError` (as ``reason=``)
    at the site that knows it, so that a caller (``mudata init``'s advice) can
    act on it without reading the message.

    Parameters
    ----------
    code : str
        One of :data:`REASON_CODES`.
    setting : str
        The entry setting that fixes it, as its field is named (``user_col``,
        ``path_pattern``, ``streams.select``, ``members`` for the files read,
        ``recipe.window``).
    """

    code: str
    setting: str

    def __post_init__(self) -> None:
        if self.code not in REASON_CODES:  # a typo at a raise site fails its test
            raise ValueError(f"unknown reason code {self.code!r}; the codes: {list(REASON_CODES)}")


def cli_message(exc: BaseException) -> str:
    """The message of ``exc`` as a command line prints it: flags, not Python keywords.

    Each exception down the chain of ``raise ... from`` adds its own words (an
    error that wraps another quotes the other's message), so a wrapped
    mudata error still names the flag in mueval's CLI.

    Examples
    --------
    >>> exc = MudataUsageError("pass allow_unverified=True to use it",
    ...                        cli={"allow_unverified=True": "--allow-unverified"})
    >>> str(exc), cli_message(exc)
    ('pass allow_unverified=True to use it', 'pass --allow-unverified to use it')
    """
    text = str(exc)
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        for python, cli in getattr(link, CLI_WORDS, {}).items():
            text = text.replace(python, cli)
        link = link.__cause__
    return text


class MudataError(Exception):
    """Base class of every error raised on purpose by :mod:`mudata`.

    Parameters
    ----------
    *args
        As for :class:`Exception`: the message first.
    cli : mapping of str to str, optional
        How the command line words what the message names as Python keywords
        (see :data:`CLI_WORDS`): a message is written for the Python API, and
        the CLI prints it through :func:`cli_message`.
    reason : Reason, optional
        What the refusal is about and the setting that fixes it, for programs
        (the attribute ``reason``, None when the raise site gives none).
    """

    reason: Reason | None = None

    def __init__(
        self,
        *args: object,
        cli: Mapping[str, str] | None = None,
        reason: Reason | None = None,
    ) -> None:
        super().__init__(*args)
        if cli:
            # In __dict__, so that it survives pickling (worker processes).
            setattr(self, CLI_WORDS, dict(cli))
        if reason is not None:
            self.reason = reason  # in __dict__ too, for the same reason


class MudataUsageError(MudataError, ValueError):
    """The request itself is wrong (a name, an option); exit code 2 in the CLI."""


class UnknownDatasetError(MudataUsageError, KeyError):
    """No registry entry has the requested name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class UnverifiedDataError(MudataUsageError):
    """A file or member the registry records no SHA-256 for, asked for without
    ``allow_unverified``; ``subject`` names it (``mudata verify`` says why it
    cannot check such a table in its own words). Its message names the keyword
    ``allow_unverified=True``, which the command line reads as ``--allow-unverified``
    unless ``cli`` says otherwise."""

    def __init__(
        self, *args: object, subject: str = "", cli: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(*args, cli=_ALLOW_UNVERIFIED_CLI if cli is None else cli)
        self.subject = subject


#: How the command line words the keyword every unverified-data message names.
_ALLOW_UNVERIFIED_CLI = {"allow_unverified=True": "--allow-unverified"}


class RegistryError(MudataError, ValueError):
    """A registry entry (TOML file) is malformed or fails the registry schema."""


class ChecksumError(MudataError, OSError):
    """A file's SHA-256 differs from the one the registry records."""


class DownloadError(MudataError, OSError):
    """A remote file could not be fetched."""


class StorageError(MudataError, OSError):
    """The data directory cannot hold what mudata writes (not a folder, read-only, full)."""


class MissingFileError(MudataError, FileNotFoundError):
    """A file or archive member the registry names is not where it should be."""


class ParseError(MudataError, ValueError):
    """A raw file does not have the format its reader expects."""


class EmptyResultError(MudataError, ValueError):
    """Preprocessing left nothing (no user passes the filter, no valid window)."""


class ValidationError(MudataError, ValueError):
    """The feature table fails its Pandera schema."""


class UnpinnedMemberError(ChecksumError):
    """A reader asked for a member the registry does not pin, in an entry that pins members."""


class LimitError(MudataError, ValueError):
    """Input past a size limit: a download beyond its registry size, an archive that
    expands too far, a member larger than declared."""


class CorruptTableError(StorageError):
    """A cached feature table no longer matches the hash recorded when it was built."""


class InternalError(MudataError, RuntimeError):
    """An unexpected failure inside mudata (a bug): reported as one line by the CLI."""


#: The one renderer of untrusted values in messages (escaped, cut to
#: :data:`mudata.display.EXCERPT_LIMIT` characters), under the name the readers have always used:
#: every error message that quotes file content goes through it, so that a hostile
#: file (a 256 MiB "header", a name with escape sequences) cannot blow up or
#: spoof a message, a log or a terminal.
excerpt = shown


__all__ = [
    "CLI_WORDS",
    "REASON_CODES",
    "ChecksumError",
    "CorruptTableError",
    "DownloadError",
    "EmptyResultError",
    "InternalError",
    "LimitError",
    "MissingFileError",
    "MudataError",
    "MudataUsageError",
    "ParseError",
    "Reason",
    "RegistryError",
    "StorageError",
    "UnknownDatasetError",
    "UnpinnedMemberError",
    "UnverifiedDataError",
    "ValidationError",
    "cli_message",
    "excerpt",
]
