"""Exception family of :mod:`mudata`.

Every failure a user can cause or meet has its own class, subclassing the
built-in exception it resembles, so callers can catch it either way. The CLI
maps :class:`UsageError` subclasses to exit code 2 and everything else to 1.
"""

from __future__ import annotations


class MudataError(Exception):
    """Base class of every error raised on purpose by :mod:`mudata`."""


class UsageError(MudataError, ValueError):
    """The request itself is wrong (a name, an option); exit code 2 in the CLI."""


class UnknownDatasetError(UsageError, KeyError):
    """No registry entry has the requested name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


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
