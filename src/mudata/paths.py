"""Where mudata keeps downloads, built tables and the user's registry."""

from __future__ import annotations

import os
from pathlib import Path

import pooch

HOME_ENV = "MUDATA_HOME"


def data_home(data_home: Path | str | None = None) -> Path:
    """The data directory: the argument, else ``$MUDATA_HOME``, else Pooch's OS cache."""
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    return Path(pooch.os_cache("mudata"))


def raw_dir(name: str, home: Path | str | None = None) -> Path:
    """Where the verified raw files of dataset ``name`` are kept."""
    return data_home(home) / name / "raw"


def table_dir(name: str, home: Path | str | None = None) -> Path:
    """Where the built feature table of dataset ``name`` and its datapackage live."""
    return data_home(home) / name


def user_registry_dir(home: Path | str | None = None) -> Path:
    """Where ``mudata register`` installs user entries."""
    return data_home(home) / "registry"
