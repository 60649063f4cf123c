"""A real HTTP server on 127.0.0.1 for download tests, with switchable faults.

Use the ``http_server`` fixture (import it into a test module, or list this
module in ``pytest_plugins``)::

    def test_x(http_server):
        (http_server.root / "a.zip").write_bytes(b"...")
        url = http_server.url + "/a.zip"
        http_server.fail_first = 2      # two 503 answers, then the file
        ...
        assert http_server.count("/a.zip") == 3

Faults apply to every GET until changed: ``fail_first`` (the next N requests
get ``fail_status``), ``truncate_to`` (a short body with a matching
Content-Length: the response looks complete), ``drop_after`` (the full
Content-Length is announced, then the connection is closed after N bytes),
``status`` (answer every request with that status), ``stall_after`` (send N
bytes, set ``stalled``, then hang until the server stops: a download in flight,
for tests that kill the client).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath

import pytest


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self.server.owner._serve(self)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: HTTPTestServer


class HTTPTestServer:
    """Serves the files of ``root`` at ``url``; records every request path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[str] = []
        self.fail_first = 0
        self.fail_status = HTTPStatus.SERVICE_UNAVAILABLE
        self.truncate_to: int | None = None
        self.drop_after: int | None = None
        self.status: int | None = None
        self.stall_after: int | None = None
        self.stalled = threading.Event()
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host}:{port}"
        # A short poll interval: shutdown() waits for it, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def start(self) -> HTTPTestServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def count(self, path: str | None = None) -> int:
        """Number of GET requests received, for ``path`` only when given."""
        with self._lock:
            return sum(1 for p in self.requests if path is None or p == path)

    def _serve(self, handler: _Handler) -> None:
        with self._lock:
            self.requests.append(handler.path)
            failing = self.fail_first > 0
            if failing:
                self.fail_first -= 1
        if failing or self.status is not None:
            status = self.fail_status if failing else self.status
            handler.send_error(int(status))
            return
        relative = PurePosixPath(handler.path.split("?", 1)[0].lstrip("/"))
        file = self.root.joinpath(*relative.parts)
        # Symlinks into other folders are served (tests link official files in).
        if ".." in relative.parts or not file.is_file():
            handler.send_error(HTTPStatus.NOT_FOUND)
            return
        body = file.read_bytes()
        announced = len(body)
        if self.truncate_to is not None:
            body = body[: self.truncate_to]
            announced = len(body)
        elif self.drop_after is not None:
            body = body[: self.drop_after]
        elif self.stall_after is not None:
            body = body[: self.stall_after]
        handler.send_response(HTTPStatus.OK)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(announced))
        handler.end_headers()
        handler.wfile.write(body)
        handler.wfile.flush()
        if self.stall_after is not None:
            self.stalled.set()
            self._release.wait(timeout=30)
        if len(body) < announced:
            # Close mid-body: the client sees fewer bytes than announced.
            handler.close_connection = True


@pytest.fixture
def http_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HTTPTestServer]:
    """A started :class:`HTTPTestServer` serving ``tmp_path / "served"``."""
    # A proxy configured in the environment must not intercept 127.0.0.1.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    root = tmp_path / "served"
    root.mkdir()
    server = HTTPTestServer(root).start()
    try:
        yield server
    finally:
        server.stop()
