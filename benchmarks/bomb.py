"""Benchmark: peak memory of ``mudata fetch`` against hostile mirrors.

Each case serves one hostile file from a local HTTP server on 127.0.0.1 as the
release file of a built-in dataset, runs ``mudata fetch NAME --mirror URL`` in
a fresh subprocess, and reports the child's peak resident memory
(``ru_maxrss`` from ``os.wait4``), its exit code, wall time and the last line
of its error. The cases:

* ``zip-bomb``: ``har70.zip`` of about 1 MB whose subject CSV inflates to
  1 GiB of zeros (the issue's "1.3 MB zip expanding to 1 GiB");
* ``zip-liar``: the same bomb with headers that declare 1 MB for the member;
* ``tar-bomb``: the WISDM ``.tar.gz`` with a 1 GiB member, for an entry
  without the archive hash (as a hostile registry copy would have);
* ``oversize``: a mirror streaming 400 MB for the gestures archive, which the
  registry records at 2,156,283 bytes;
* ``baseline``: ``mudata list``, the memory of the interpreter and imports.

Run::

    python benchmarks/bomb.py [--size-mib 1024]

Target: every case under 500 MB peak, exit code 1 (a clean error), and no file
left in the raw folder.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

MIB = 2**20
ROOT = Path(__file__).resolve().parents[1]


def zip_bomb(size: int, name: str = "har70plus/501.csv") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w") as fh:  # under 2 GiB: no zip64 fields
            block = b"0" * MIB
            for _ in range(size // MIB):
                fh.write(block)
    return buffer.getvalue()


def zip_liar(bomb: bytes, declared: int) -> bytes:
    """The bomb with its local and central headers declaring ``declared`` bytes."""
    payload = bytearray(bomb)
    local = payload.index(b"PK\x03\x04")
    central = payload.index(b"PK\x01\x02")
    struct.pack_into("<I", payload, local + 22, declared)
    struct.pack_into("<I", payload, central + 24, declared)
    return bytes(payload)


def tar_bomb(size: int) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tf:
        info = tarfile.TarInfo("WISDM_ar_v1.1/WISDM_ar_v1.1_transformed.arff")
        info.size = size

        class Zeros(io.RawIOBase):
            left = size

            def readable(self) -> bool:
                return True

            def readinto(self, b):  # type: ignore[override]
                n = min(len(b), self.left)
                b[:n] = bytes(n)
                self.left -= n
                return n

        tf.addfile(info, io.BufferedReader(Zeros(), MIB))
    return buffer.getvalue()


class _Handler(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes | int]] = {}

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        body = self.files.get(self.path.lstrip("/"))
        if body is None:
            self.send_error(404)
            return
        length = body if isinstance(body, int) else len(body)
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        try:
            if isinstance(body, int):  # stream zeros without holding them
                chunk = bytes(MIB)
                for _ in range(body // MIB):
                    self.wfile.write(chunk)
            else:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what we want


def run(args: list[str], env: dict[str, str]) -> tuple[int, float, float, str]:
    """Exit code, peak RSS (MB), wall seconds and last stderr line of ``mudata ARGS``."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "mudata.cli", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert child.stderr is not None
    err = child.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return child.returncode, usage.ru_maxrss / 1024, wall, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="bytes a bomb expands to")
    options = parser.parse_args()
    size = options.size_mib * MIB

    bomb = zip_bomb(size)
    _Handler.files = {
        "har70.zip": bomb,
        "liar/har70.zip": zip_liar(bomb, MIB),
        "WISDM_ar_v1.1.tar.gz": tar_bomb(size),
        "gestures-dataset.zip": 400 * MIB,
    }
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    with tempfile.TemporaryDirectory() as folder:
        registry = Path(folder) / "registry"
        registry.mkdir()
        wisdm = (ROOT / "registry" / "wisdm.toml").read_text(encoding="utf-8")
        # A hostile registry copy: no archive hash, so the tar must be opened.
        wisdm = re.sub(r'(name = "WISDM_ar_v1.1.tar.gz"\nurl = .*\n)sha256 = .*\n', r"\1", wisdm)
        (registry / "wisdm.toml").write_text(wisdm, encoding="utf-8")
        env = {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1", "MUDATA_REGISTRY": str(registry)}
        common = ["--allow-unverified", "--no-progress"]
        cases = {
            "zip-bomb": ["fetch", "har70", "--mirror", url, *common],
            "zip-liar": ["fetch", "har70", "--mirror", url + "/liar", *common],
            "tar-bomb": ["fetch", "wisdm", "--mirror", url, *common],
            "oversize": ["fetch", "gestures", "--mirror", url, "--no-progress"],
            "baseline": ["list"],
        }
        print(f"bomb archives: zip {len(bomb) / MIB:.2f} MiB -> {options.size_mib} MiB; "
              f"tar.gz {len(_Handler.files['WISDM_ar_v1.1.tar.gz']) / MIB:.2f} MiB")  # fmt: skip
        print(f"{'case':<10} {'exit':>4} {'peak MB':>8} {'wall s':>7}  error")
        worst = 0.0
        for name, args in cases.items():
            home = Path(folder) / name
            code, peak, wall, last = run([*args[:2], "--data-home", str(home), *args[2:]]
                                         if args[0] == "fetch" else args, env)  # fmt: skip
            leftovers = sorted(p.name for p in (home.glob("*/raw/*")))
            worst = max(worst, peak)
            print(f"{name:<10} {code:>4} {peak:>8.0f} {wall:>7.2f}  {last[:150]}"
                  + (f"  LEFT: {leftovers}" if leftovers else ""))  # fmt: skip
    server.shutdown()
    print(f"worst peak: {worst:.0f} MB (target: under 500 MB)")


if __name__ == "__main__":
    main()
