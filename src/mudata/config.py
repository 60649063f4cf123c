"""Every environment variable mudata reads: its name, its default and how it is parsed.

One function per setting, so that each variable is read in one place, checked
the same way, and refused with one message naming the variable and the value.
A caller that also takes the setting as an option passes the option's value
first; only when it is None is the environment read.

=========================  ============================  ===========================
variable                   read by                       default
=========================  ============================  ===========================
``MUDATA_HOME``            :func:`home`                  Pooch's OS cache folder
``MUDATA_REGISTRY``        :func:`registry_path`         no extra folder
``MUDATA_MAX_EXPANSION``   :func:`max_expansion`         :data:`DEFAULT_MAX_EXPANSION`
``MUDATA_MAX_MEMBERS``     :func:`max_members`           :data:`DEFAULT_MAX_MEMBERS`
``MUDATA_MAX_READ_BYTES``  :func:`max_read_bytes`        :data:`DEFAULT_MAX_READ_BYTES`
=========================  ============================  ===========================

The values are read at each call, not at import: a test or a long-running
process that changes the environment sees the change at the next call.
"""

from __future__ import annotations

import os
from pathlib import Path

from mudata.errors import MudataUsageError as UsageError
from mudata.errors import excerpt

__all__ = [
    "DEFAULT_MAX_EXPANSION",
    "DEFAULT_MAX_MEMBERS",
    "DEFAULT_MAX_READ_BYTES",
    "EXPANSION_ENV",
    "HOME_ENV",
    "MEMBERS_ENV",
    "READ_ENV",
    "REGISTRY_ENV",
    "home",
    "max_expansion",
    "max_members",
    "max_read_bytes",
    "parse_cap",
    "registry_path",
]

#: The data directory (downloads, built tables, the user's registry).
HOME_ENV = "MUDATA_HOME"
#: Extra registry folders, searched first, separated by :data:`os.pathsep`.
REGISTRY_ENV = "MUDATA_REGISTRY"
#: The expansion cap of archives and Parquet inputs (bytes out per byte held).
EXPANSION_ENV = "MUDATA_MAX_EXPANSION"
#: The cap on the members of one archive.
MEMBERS_ENV = "MUDATA_MAX_MEMBERS"
#: The cap on the bytes of one member read whole.
READ_ENV = "MUDATA_MAX_READ_BYTES"

#: Bytes an archive may expand to per byte it holds.
DEFAULT_MAX_EXPANSION = 100.0
#: Members (files and folders) an archive may hold. The largest release known
#: here has about 3,500; each member costs time and memory in every reader.
DEFAULT_MAX_MEMBERS = 50_000
#: Bytes a member read whole may hold (decompressed). The largest member of a
#: built-in release is an OPPORTUNITY recording of 51,803,164 bytes; a member
#: read whole is parsed in memory at several times its size, so five times that
#: already asks for gigabytes. The HAR70+ reader streams its members instead;
#: the others (long-signals included) read whole and stop here.
DEFAULT_MAX_READ_BYTES = 256 * 2**20


def home() -> Path | None:
    """The data directory named by ``$MUDATA_HOME``, ``~`` expanded; None when unset or empty.

    Any path is taken as it is: whether it can be written is for the first
    write there to say, with the folder in its message.
    """
    value = os.environ.get(HOME_ENV)
    return Path(value).expanduser() if value else None


def registry_path() -> list[Path]:
    """The folders listed by ``$MUDATA_REGISTRY``, in order; empty parts are skipped.

    A folder that does not exist holds no entry; it is not an error, so that one
    setting can serve machines that have only some of the folders.
    """
    return [Path(p) for p in os.environ.get(REGISTRY_ENV, "").split(os.pathsep) if p]


def parse_cap(
    value: float | str | None,
    *,
    option: str,
    env: str,
    default: float,
    unit: str,
    whole: bool = False,
) -> float:
    """A positive cap given as an option, else by an environment variable, else its default.

    The one parser of mudata's caps (:func:`max_expansion`, :func:`max_members`
    and :func:`max_read_bytes`), so that each reads the option and the
    environment the same way and words a bad value the same way.

    Parameters
    ----------
    value : float or str, optional
        The option's value; None reads ``$env``, and an unset or empty
        variable gives ``default``.
    option, env : str
        The option's and the variable's names, for the message.
    default : float
        The cap when neither is given.
    unit : str
        What the cap counts, for the message ("archive members").
    whole : bool
        The cap must be a whole number (``inf`` is then refused too).

    Raises
    ------
    UsageError
        The value is not a positive number (a whole one when ``whole``).

    Examples
    --------
    >>> parse_cap("inf", option="max_expansion", env="X", default=100.0, unit="bytes")
    inf
    >>> parse_cap(None, option="max_members", env="UNSET_X", default=5, unit="members", whole=True)
    5
    """
    source = option
    if value is None:
        value = os.environ.get(env) or default
        source = f"${env}"
    try:
        cap = float(value)
        if whole:
            cap = (
                int(value) if isinstance(value, (int, str)) else int(cap) if cap.is_integer() else 0
            )
    except (TypeError, ValueError, OverflowError):
        cap = float("nan")
    if not cap > 0:
        kind = "positive whole number" if whole else "positive number"
        message = f"{source} must be a {kind} of {unit}; got {excerpt(str(value))}"
        raise UsageError(message)
    return cap


def max_expansion(value: float | str | None = None) -> float:
    """The expansion cap: how many bytes an archive may expand to per byte it holds.

    Parameters
    ----------
    value : float or str, optional
        The cap; default ``$MUDATA_MAX_EXPANSION``, else
        :data:`DEFAULT_MAX_EXPANSION`. ``inf`` lifts it.

    Raises
    ------
    UsageError
        The value is not a positive number.
    """
    return parse_cap(
        value,
        option="max_expansion",
        env=EXPANSION_ENV,
        default=DEFAULT_MAX_EXPANSION,
        unit="bytes out per archive byte (or inf)",
    )


def max_members(value: int | str | None = None) -> int:
    """The member cap: how many members (files and folders) an archive may hold.

    Parameters
    ----------
    value : int or str, optional
        The cap; default ``$MUDATA_MAX_MEMBERS``, else :data:`DEFAULT_MAX_MEMBERS`.

    Raises
    ------
    UsageError
        The value is not a positive integer.
    """
    return int(
        parse_cap(
            value,
            option="max_members",
            env=MEMBERS_ENV,
            default=DEFAULT_MAX_MEMBERS,
            unit="archive members",
            whole=True,
        )
    )


def max_read_bytes(value: int | str | None = None) -> int:
    """The cap on the bytes of a member read whole.

    Parameters
    ----------
    value : int or str, optional
        The cap; default ``$MUDATA_MAX_READ_BYTES``, else
        :data:`DEFAULT_MAX_READ_BYTES`.

    Raises
    ------
    UsageError
        The value is not a positive whole number.
    """
    return int(
        parse_cap(
            value,
            option="max_read_bytes",
            env=READ_ENV,
            default=DEFAULT_MAX_READ_BYTES,
            unit="bytes of a member read whole",
            whole=True,
        )
    )
