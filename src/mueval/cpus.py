"""How many worker processes a run gets: the CPUs this process may use when nobody
says, and the one check of a number of workers asked for."""

from __future__ import annotations

import os

from mueval.errors import UsageError

__all__ = ["JOBS_RULE", "check_jobs", "resolve_jobs", "usable_cpus"]

#: What a number of worker processes may be, as every refusal of one words it.
JOBS_RULE = "a positive number of worker processes, or -1 for every core"


def usable_cpus() -> int:
    """The CPUs this process may run on.

    ``os.process_cpu_count()`` (Python 3.13 and later, which honours the
    process's affinity and ``PYTHON_CPU_COUNT``), else the affinity mask where
    the OS has one, else the machine's count: a container or ``taskset``
    limited to two of 64 cores gets two workers, not 64.

    Returns
    -------
    int
        At least 1.
    """
    counter = getattr(os, "process_cpu_count", None)
    if counter is not None:
        return counter() or 1
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def resolve_jobs(jobs: int | None) -> int:
    """The number of workers ``jobs`` asks for: None (the default) and -1 are every usable CPU.

    Any other value is returned as given (:func:`check_jobs` refuses 0 and values below -1).

    Examples
    --------
    >>> resolve_jobs(1)
    1
    >>> resolve_jobs(None) == resolve_jobs(-1) == usable_cpus()
    True
    """
    if jobs is None or jobs == -1:
        return usable_cpus()
    return jobs


def check_jobs(jobs: int | None) -> None:
    """Refuse a number of worker processes that is neither positive nor -1 (None passes).

    Raises
    ------
    UsageError
        ``jobs`` is 0 or below -1.

    Examples
    --------
    >>> check_jobs(-1)
    >>> check_jobs(0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mueval.errors.UsageError: jobs must be a positive number of worker processes, ... got 0
    """
    if jobs is not None and (jobs == 0 or jobs < -1):
        message = f"jobs must be {JOBS_RULE}, got {jobs}"
        raise UsageError(message)
