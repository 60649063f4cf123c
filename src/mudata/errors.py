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

from mudata.display import shown

#: The attribute of an exception that says how a command line words what its
#: message says in Python's terms: ``{text in the message: the CLI's text}``,
#: e.g. ``{"allow_unverified=True": "--allow-unverified"}``. mudata's and
#: mueval's errors take it as ``cli=``; :func:`cli_message` applies it.
CLI_WORDS = "cli_words"


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
    """

    def __init__(self, *args: object, cli: Mapping[str, str] | None = None) -> None:
        super().__init__(*args)
        if cli:
            # In __dict__, so that it survives pickling (worker processes).
            setattr(self, CLI_WORDS, dict(cli))


class MudataUsageError(MudataError, ValueError):
    """The request itself is wrong (a name, an option); exit code 2 in the CLI."""


class UnknownDatasetError(MudataUsageError, KeyError):
    """No registry entry has the requested name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class UnverifiedDataError(MudataUsageError):
    """A file or member the registry records no SHA-256 for, asked for without
    ``allow_unverified``; ``subject`` names it (``mudata verify`` says why it
    cannot check such a table in its own words)."""

    def __init__(
        self, *args: object, subject: str = "", cli: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(*args, cli=cli)
        self.subject = subject


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
