"""How a table is built or found: the one settings object of a build, checked once.

:func:`mudata.fetch` and :func:`mudata.load` take these settings as keywords (their
public signatures); each makes one :class:`BuildOptions` from them, and the
pipeline (:func:`mudata.building.pipeline.build_frame`), the windows
(:func:`mudata.building.window_build.build_windows`) and the download of the raw
files read their settings from it, under their own names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mudata.errors import MudataUsageError

#: Fewest users a table may hold: a multi-user evaluation needs two at least.
MIN_USERS = 2


@dataclass(frozen=True)
class BuildOptions:
    """The settings of one build of a dataset's table (see :func:`mudata.fetch`).

    Attributes
    ----------
    data_home : path-like, optional
        Data directory; default ``$MUDATA_HOME`` or Pooch's OS cache folder.
    mirror : str, optional
        Base address serving the same files under the same names.
    manual_dir : path-like, optional
        Folder holding the release (archive or extracted members) already.
    allow_unverified : bool
        Accept files for which the registry records no SHA-256.
    progress : bool, optional
        Show download progress bars; default: only on a terminal.
    force : bool
        Rebuild even when an up-to-date table exists.
    download : bool
        When False, a raw file missing from the cache is a
        :class:`~mudata.errors.MissingFileError` instead of a download
        (``download_if_missing`` of :func:`mudata.fetch`).
    max_expansion : float, optional
        Expansion cap of archives (see :func:`mudata.config.max_expansion`).
    min_users : int
        Fewest users the table may keep after the user filter (at least
        :data:`MIN_USERS`); a built table with fewer is built again, so that
        the error says why.
    verify : bool
        Hash the rows of a table built before even when its file is unchanged
        since it was written (``mudata fetch --verify``).

    Raises
    ------
    MudataUsageError
        ``min_users`` below :data:`MIN_USERS`.
    """

    data_home: Path | str | None = None
    mirror: str | None = None
    manual_dir: Path | str | None = None
    allow_unverified: bool = False
    progress: bool | None = None
    force: bool = False
    download: bool = True
    max_expansion: float | None = None
    min_users: int = MIN_USERS
    verify: bool = False

    def __post_init__(self) -> None:
        if self.min_users < MIN_USERS:
            message = f"min_users must be at least {MIN_USERS}, got {self.min_users}"
            raise MudataUsageError(message, cli={"min_users must": "--min-users must"})

    @property
    def manual_path(self) -> Path | None:
        """``manual_dir`` as a path (None without one)."""
        return None if self.manual_dir is None else Path(self.manual_dir)


__all__ = ["MIN_USERS", "BuildOptions"]
