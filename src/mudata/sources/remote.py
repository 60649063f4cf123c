"""The Pooch download: a release file fetched into the cache, bounded and hashed as it arrives.

Each file is downloaded through Pooch into ``raw_dir(entry.name, data_home)``
from the registry's ``url`` or a mirror (same name, same hashes), with retries
on network and server errors; a download is cut at the registry's size, its
SHA-256 taken as the bytes are written, and a cached file is checked again
before it is used.
"""

from __future__ import annotations

import ftplib
import hashlib
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pooch
import requests

from mudata.display import EscapingFormatter, plain
from mudata.errors import (
    ChecksumError,
    DownloadError,
    LimitError,
    MudataError,
    MudataUsageError,
    StorageError,
)
from mudata.files import sha256_file
from mudata.sources.pins import (
    FetchedFile,
    Origin,
    check_archive_members,
    pins_for,
)
from mudata.sources.release import ReleaseFile

log = logging.getLogger(__name__)


_CHUNK = 1 << 20


# Errors a downloader raises when the network, the server or the disk fails;
# the FTP ones are there because pooch picks FTPDownloader for ftp:// addresses.
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    requests.RequestException,
    OSError,
    EOFError,
    ftplib.Error,
)
# ... and pooch's own refusal of a file whose hash is not the one it was given.
_FAILED_DOWNLOAD: tuple[type[BaseException], ...] = (ValueError, *_NETWORK_ERRORS)


class _BoundedWriter:
    """A file-like sink that hashes what it is given and refuses bytes past ``limit``.

    Pooch's downloaders only call ``write`` and ``flush`` on the object they are
    handed; raising from ``write`` aborts the transfer, and Pooch then deletes
    its temporary file. So a server streaming 400 MB for a file registered at
    2 MB costs at most ``limit`` bytes of disk, one chunk more at worst.
    """

    def __init__(self, fh: IO[bytes], limit: int | None, what: str) -> None:
        self.fh = fh
        self.limit = limit
        self.what = what
        self.written = 0
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.written += len(data)
        if self.limit is not None and self.written > self.limit:
            message = (
                f"{self.what} is larger than the {self.limit:,} bytes the registry records "
                f"(size); the download was stopped after {self.written:,} bytes and discarded"
            )
            raise LimitError(message)
        self.digest.update(data)
        return self.fh.write(data)

    def flush(self) -> None:
        self.fh.flush()


def _choose_downloader(url: str, progressbar: bool) -> object:
    """Pooch's downloader for each scheme the registry schema allows (http, https, ftp, doi)."""
    if url.startswith(("http://", "https://")):
        return pooch.HTTPDownloader(progressbar=progressbar, chunk_size=1 << 16)
    if url.startswith("ftp://"):
        return pooch.FTPDownloader(progressbar=progressbar, timeout=30)
    if url.startswith("doi:"):
        return pooch.DOIDownloader(progressbar=progressbar, timeout=30)
    message = f"unsupported url scheme in {url!r}; expected http://, https://, ftp:// or doi:"
    raise MudataUsageError(message)


class _HashingDownloader:
    """Wraps a Pooch downloader: records the hash of what it wrote, stops past ``size``.

    Pooch's hash-mismatch error is a plain ValueError whose text is its only
    detail; recording the observed hash here lets us report expected and actual
    without parsing that text.
    """

    def __init__(
        self, url: str, progressbar: bool, limit: int | None = None, what: str = ""
    ) -> None:
        self.inner = _choose_downloader(url, progressbar)
        self.limit = limit
        self.what = what or url
        self.observed: str | None = None

    def __call__(
        self, url: str, output_file: str, pooch_: object, check_only: bool = False
    ) -> object:
        if check_only or not isinstance(output_file, str | Path):
            return self.inner(url, output_file, pooch_, check_only=check_only)  # type: ignore[operator]
        with open(output_file, "w+b") as fh:
            sink = _BoundedWriter(fh, self.limit, self.what)
            result = self.inner(url, sink, pooch_)  # type: ignore[operator]
        self.observed = sink.digest.hexdigest()
        return result


def _is_transient(exc: BaseException) -> bool:
    """Worth another attempt: network and server failures, not client errors."""
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        status = exc.response.status_code
        return status >= 500 or status in (408, 429)
    if isinstance(exc, ValueError):  # requests' InvalidURL, MissingSchema...
        return False
    # PermissionError or a full disk will not heal by waiting; a reset connection may.
    return isinstance(
        exc, requests.RequestException | ConnectionError | TimeoutError | EOFError | ftplib.Error
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code} {exc.response.reason}"
    return f"{type(exc).__name__}: {exc}"


@contextmanager
def _pooch_banner(*, show: bool) -> Iterator[None]:
    """Let Pooch's INFO lines ("Downloading data from ...") through only when ``show``.

    A filter rather than ``setLevel``: Pooch's logger is made with
    ``logging.Logger("pooch")``, outside the logging manager, so a new level
    would not clear the answer it cached for INFO at the first attempt.
    """
    logger = pooch.get_logger()
    for handler in logger.handlers:
        # Pooch's own handler prints its lines as they are, and they quote the
        # entry's URL and file name: escaped (each is one line, so line breaks
        # too), unless someone chose a formatter.
        if handler.formatter is None:
            handler.setFormatter(EscapingFormatter(keep=""))
    if show:
        yield
        return
    logger.addFilter(_warnings_only)
    try:
        yield
    finally:
        logger.removeFilter(_warnings_only)


def _warnings_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def _download(
    file: ReleaseFile,
    url: str,
    target: Path,
    progressbar: bool,
    n_retries: int,
    delay: float,
) -> str:
    """Download ``url`` to ``target`` through Pooch; return the observed sha256.

    Pooch 1.9 (``pooch.core.stream_download``) writes to a temporary file
    (``tempfile.NamedTemporaryFile`` in the target's folder), checks its hash,
    and only then ``shutil.move``s it onto the target name; on any exception the
    temporary file is deleted. So an interrupted or wrong download never
    leaves a file under the target name. Retries are our own loop (one Pooch
    attempt each) so that 404s are not retried and the delay is ours.

    What the user sees: Pooch's "Downloading data from ..." line once, for
    the first attempt (Pooch logs it at every ``retrieve``; it is silenced for
    the others), then one warning per failed attempt that will be retried,
    and the error after the last one.
    """
    remote = file.remote
    known_hash = f"sha256:{remote.sha256}" if remote.sha256 else None
    # The address comes from the entry or --mirror: escaped in every message.
    address = plain(url)
    what = f"the file downloaded from {address} ({file.label})"
    downloader = _HashingDownloader(url, progressbar, remote.size, what)
    attempts = 1 + max(0, n_retries)
    for attempt in range(1, attempts + 1):
        downloader.observed = None
        try:
            with _pooch_banner(show=attempt == 1):
                pooch.retrieve(
                    url,
                    known_hash=known_hash,
                    fname=target.name,
                    path=target.parent,
                    downloader=downloader,
                )
        except MudataError:
            raise
        except _FAILED_DOWNLOAD as exc:
            actual = downloader.observed
            if remote.sha256 is not None and actual is not None and actual != remote.sha256:
                message = (
                    f"sha256 mismatch for the file downloaded from {address} "
                    f"({file.label}): expected {remote.sha256}, actual {actual}. "
                    f"The download was discarded (Pooch's temporary file); {plain(target)} was not "
                    f"written. The file "
                    f"may have changed upstream, or the server (mirror) sends another file."
                )
                raise ChecksumError(message) from None
            if attempt < attempts and _is_transient(exc):
                log.warning(
                    "download of %s failed (%s); attempt %d of %d in %.1f s",
                    address,
                    _reason(exc),
                    attempt + 1,
                    attempts,
                    delay,
                )
                time.sleep(delay)
                continue
            message = (
                f"could not download {address} ({file.label}) after {attempt} "
                f"attempt{'s' if attempt > 1 else ''}: {_reason(exc)}. Try another "
                f"address with --mirror URL, or download the file yourself and pass "
                f"--manual-dir DIR."
            )
            raise DownloadError(message) from None
        else:
            break
    return downloader.observed if downloader.observed is not None else sha256_file(target)


def fetch_remote(
    file: ReleaseFile,
    url: str | None,
    target: Path,
    progressbar: bool,
    n_retries: int,
    delay: float,
    allow_unverified: bool,
    max_expansion: float | None = None,
    *,
    download: bool = True,
    verifiable: bool,
) -> FetchedFile:
    """Use the cached download of ``file`` at ``target``, or download it from ``url``; check it.

    ``verifiable`` is :func:`~mudata.sources.pins.archive_verifiable` of
    ``file.remote``, asked by the caller, which has refused an unverifiable file
    already (:func:`mudata.sources.download.fetch_sources` does, before any
    download, unless ``allow_unverified``).
    """
    remote = file.remote
    observed = sha256_file(target) if target.is_file() else None
    # A cached file with the right hash (or any cached file when the registry has
    # no archive hash) is used without touching the network.
    if observed is not None and (remote.sha256 is None or observed == remote.sha256):
        origin: Origin = "cache"
    elif not download:
        message = (
            f"sha256 mismatch for the cached {plain(target)} ({file.label}): expected "
            f"{remote.sha256}, actual {observed}, and downloading is off; the file was left "
            f"untouched"
        )
        raise ChecksumError(message)
    else:
        if url is None:
            message = f"{file.label} has no url in the registry and no mirror was given"
            raise MudataUsageError(message)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            # Otherwise Pooch fails on it and the error reads like a network failure.
            message = (
                f"cannot download {file.label} into {target.parent}: expected a "
                f"writable folder, got {type(exc).__name__}: {exc}. Choose another data "
                f"directory with --data-home or $MUDATA_HOME."
            )
            raise StorageError(message) from None
        observed = _download(file, url, target, progressbar, n_retries, delay)
        origin = "download"
    members = check_archive_members(file, target, cached=True, max_expansion=max_expansion)
    pins = pins_for(file, allow_unverified)
    return FetchedFile(remote.name, target, observed, verifiable, members, origin, url, pins)


__all__ = ["fetch_remote"]
