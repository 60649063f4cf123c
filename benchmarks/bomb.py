r"""Benchmark: peak memory and time of mudata and mueval against hostile inputs.

Each fetch case serves one hostile file from a local HTTP server on 127.0.0.1
as the release file of a built-in dataset and runs ``mudata fetch NAME
--mirror URL``; other cases run ``mudata register`` or a ``mueval`` command.
Each runs in a fresh subprocess; the benchmark reports its peak resident
memory, its exit code, wall time and the last line of its error. The cases:

* ``zip-bomb``: ``har70.zip`` of about 1 MB whose subject CSV inflates to
  1 GiB of zeros (the issue's "1.3 MB zip expanding to 1 GiB");
* ``zip-liar``: the same bomb with headers that declare 1 MB for the member;
* ``tar-bomb``: the WISDM ``.tar.gz`` with a 1 GiB member, for an entry
  without the archive hash (as a hostile registry copy would have);
* ``oversize``: a mirror streaming 400 MB for the gestures archive, which the
  registry records at 2,156,283 bytes;
* ``zip-inf``: the zip bomb with ``--max-expansion inf``, as the Smartwatch
  Gestures archive of an entry without its hash and size (the gestures
  reader reads each member whole: refused by the whole-read cap,
  ``MUDATA_MAX_READ_BYTES``);
* ``tar-inf``: the ``.tar.gz`` bomb with ``--max-expansion inf``, for a WISDM
  entry without any hash (the ARFF member is read whole);
* ``gz-inf``: ``mudata init`` on a folder holding a ``.csv.gz`` that
  decompresses to ``--size-mib``, with ``MUDATA_MAX_EXPANSION=inf`` (the
  decompressed stream goes to a spool on disk, refused at the whole-read cap);
* ``stream-inf``: the same ``.csv.gz`` read as a stream
  (``Sources.open_decoded``) with the expansion cap lifted: decompressed into
  a spool on disk, then read through in 1 MiB chunks (a correct result, exit 0);
* ``har70-inf``: the zip bomb as ``har70.zip`` with ``--max-expansion inf``
  (through the HAR70+ reader);
* ``zip-many``: ``har70.zip`` of 20,000 tiny members (``--members``);
* ``tar-many``: the WISDM ``.tar.gz`` holding 100,000 tiny members;
* ``data-parquet``: ``mueval evaluate --data`` on a Parquet file of 30 million
  equal rows (a few hundred KB);
* ``run-parquet``: ``mueval report`` on a run folder whose
  ``predictions.parquet`` is 30 million copies of one real row;
* ``path-pattern``: a ``long-signals`` entry whose ``path_pattern``
  ``(?P<user>(?:[a-z]+\d*)+)`` backtracks on a 35-character file name;
* ``jobs-64``: ``mueval evaluate --jobs 64`` on a small table;
* ``classes-8k``, ``classes-100k``: ``mudata register`` of an entry with that
  many classes;
* ``mat-bomb``: a ``long-signals`` entry of ``format = "mat"`` whose 700 KB
  file holds a compressed 30,000,000 x 3 double array (720 MB);
* ``data-classes``: ``mueval evaluate --data`` on a CSV of 10,001 classes of
  5 rows each;
* ``csv-200k``, ``csv-700k``: ``mueval evaluate --data`` on a one-row CSV of
  200,000 columns, and of 700,000 columns (a 6.9 MB header);
* ``csv-700k-fetch``: the 700,000-column CSV as a ``feature-table`` file;
* ``run-ncal``: ``mueval report`` on a real run folder whose
  ``splits.parquet`` says ``n_cal`` = 200,000,000;
* ``ft-members``: a ``feature-table`` zip of 49,000 one-row members;
* ``ls-members``: a ``long-signals`` zip of 20,000 three-row members;
* ``baseline``: ``mudata list``, the memory of the interpreter and imports.

Each child's CPU time (user and system, its waited-for children included) is
reported beside its wall time. Each child runs in its own process group; the group's summed resident memory
and the largest high-water mark (``VmHWM``) of any one of its processes are
sampled every 0.1 s (so that ``--jobs`` workers count), and the group is
killed past ``--kill-mb`` or ``--timeout`` (reported as such). ``--cases``
picks cases by name.

Run::

    python benchmarks/bomb.py [--size-mib 1024] [--cases zip-many,jobs-64]

Target: every case under 500 MB peak and 30 s of CPU, exit code 1 (a clean
error) or 0 (a correct result: jobs-64, classes-8k), and no file left in the
raw folder.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

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


def gzip_bomb(path: Path, size: int) -> None:
    """A gzip file at ``path`` that decompresses to ``size`` bytes of ``0``, written in chunks."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"0" * MIB
    with open(path, "wb") as out:
        for _ in range(size // MIB):
            out.write(packer.compress(block))
        out.write(packer.flush())


def _open_copy(text: str, name: str) -> str:
    """A registry entry renamed ``name``, without any sha256 or size line (a hostile copy)."""
    text = re.sub(r"^(sha256|size) = .*\n", "", text, flags=re.M)
    return re.sub(r'^name = ".*"$', f'name = "{name}"', text, count=1, flags=re.M)


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


def many_zip(count: int) -> bytes:
    """``har70.zip`` of ``count`` one-row subject files."""
    buffer = io.BytesIO()
    row = b"timestamp,back_x,back_y,back_z,thigh_x,thigh_y,thigh_z,label\n2019-01-01 00:00:00.000,0,0,0,0,0,0,1\n"
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(count):
            zf.writestr(zipfile.ZipInfo(f"har70plus/{i}.csv", (2020, 1, 1, 0, 0, 0)), row)
    return buffer.getvalue()


def many_tar(count: int) -> bytes:
    """The WISDM ``.tar.gz`` holding ``count`` one-byte members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tf:
        for i in range(count):
            info = tarfile.TarInfo(f"WISDM_ar_v1.1/m{i}.txt")
            info.size = 1
            tf.addfile(info, io.BytesIO(b"x"))
    return buffer.getvalue()


def constant_parquet(path: Path, row: pa.Table, rows: int, group: int = 1_000_000) -> None:
    """``rows`` copies of the one-row table ``row``, written a row group at a time."""
    block = row.take(pa.array(np.zeros(group, dtype=np.int64)))
    with pq.ParquetWriter(path, block.schema) as writer:
        for _ in range(rows // group):
            writer.write_table(block)


def _group_memory_mb(pgid: int) -> tuple[float, float]:
    """Summed resident memory and largest high-water mark of group ``pgid`` (Linux /proc).

    ``VmHWM`` is reset by ``exec``, unlike ``ru_maxrss``, which a child forked
    from this (large) benchmark process inherits.
    """
    total = largest = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat_fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            if int(stat_fields[2]) != pgid:
                continue
            status = Path(f"/proc/{entry}/status").read_text()
        except (OSError, IndexError, ValueError):
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        total += int(fields.get("VmRSS", "0 kB").split()[0])
        largest = max(largest, int(fields.get("VmHWM", "0 kB").split()[0]))
    return total / 1024, largest / 1024


def run(
    command: list[str], env: dict[str, str], kill_mb: float, timeout: float
) -> tuple[str, float, float, float, str]:
    """Exit (or why killed), peak MB, wall and CPU seconds and last stderr line of ``command``."""
    started = time.perf_counter()
    err_file = tempfile.TemporaryFile()  # noqa: SIM115 - read and closed below
    child = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=err_file,
        start_new_session=True,
    )
    peak, killed = 0.0, ""
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, *_group_memory_mb(child.pid))
        elapsed = time.perf_counter() - started
        if not killed and (peak > kill_mb or elapsed > timeout):
            killed = f"killed>{kill_mb:.0f}MB" if peak > kill_mb else f"killed>{timeout:.0f}s"
            os.killpg(child.pid, signal.SIGKILL)
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)  # workers left behind
    wall = time.perf_counter() - started
    err_file.seek(0)
    err = err_file.read().decode(errors="replace")
    err_file.close()
    last = err.strip().splitlines()[-1] if err.strip() else ""
    code = killed or str(os.waitstatus_to_exitcode(status))
    return code, peak, wall, usage.ru_utime + usage.ru_stime, last


def _classes_entry(folder: Path, count: int) -> Path:
    """``tiny`` entry (tests/tiny_entry.py) with ``count`` classes."""
    sys.path.insert(0, str(ROOT))
    # Here, not at the top: the test helper is only needed by the classes cases.
    from tests.tiny_entry import write_tiny_entry

    toml = write_tiny_entry(folder, name=f"c{count}")
    extra = "".join(f'\n[[classes]]\ncode = "k{i}"\nname = "k{i}"\n' for i in range(count - 2))
    toml.write_text(toml.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return toml


_PATTERN_ENTRY = """\
name = "pattern"
title = "Backtracking path pattern"
version = "1"
homepage = "https://example.org/p"
licence = "CC0-1.0"
citation = "Someone (2026)."
sampling_rate_hz = 50
reader = "long-signals"
min_per_class = 1

[reader_options]
format = "csv"
label_col = "label"
time_col = "t"
members = "*.csv"
path_pattern = '^(?P<user>(?:[a-z]+\\d*)+)\\.csv$'

[recipe]
name = "study-window"
window = 2

[[files]]
name = "{name}"
path = "{path}"

[[sensors]]
name = "acc"
channels = ["x", "y", "z"]

[[classes]]
code = "walk"
name = "walk"

[[classes]]
code = "run"
name = "run"
"""


def _mueval_cases(folder: Path) -> dict[str, list[str]]:
    """The run folder, the data files and the mueval commands of the mueval cases."""
    sys.path.insert(0, str(ROOT))
    # Here, not at the top: the test helper is only needed by the mueval cases.
    from tests.mueval.evaluation.test_runner import make_frame

    data = folder / "table.csv"
    make_frame(n_users=4).to_csv(data, index=False)
    run_folder = folder / "run"
    subprocess.run(
        [sys.executable, "-m", "mueval.cli.main", "evaluate", "--data", str(data), "-s", "mm",
         "-c", "nb", "--iterations", "2", "--out", str(run_folder), "--no-progress"],
        check=True, capture_output=True, cwd=ROOT,
    )  # fmt: skip
    real = pq.read_table(run_folder / "predictions.parquet")
    (run_folder / "predictions.parquet").unlink()
    constant_parquet(run_folder / "predictions.parquet", real.slice(0, 1), 30_000_000)
    bomb = folder / "bomb.parquet"
    one = pa.Table.from_pandas(make_frame(n_users=1).head(1), preserve_index=False)
    constant_parquet(bomb, one, 30_000_000)
    print(f"run-parquet: predictions.parquet {os.path.getsize(run_folder / 'predictions.parquet') / 1024:.0f} KB; "
          f"data-parquet: {os.path.getsize(bomb) / 1024:.0f} KB, 30,000,000 rows")  # fmt: skip
    mueval = [sys.executable, "-m", "mueval.cli.main"]
    return {
        "data-parquet": [*mueval, "evaluate", "--data", str(bomb), "-s", "mm", "-c", "nb",
                         "--iterations", "1", "--no-progress"],
        "run-parquet": [*mueval, "report", str(run_folder), "--out", str(folder / "report")],
        "jobs-64": [*mueval, "evaluate", "--data", str(data), "-s", "mm,udm,uim,ucm", "-c", "rf",
                    "--iterations", "4", "--jobs", "64", "--no-progress"],
    }  # fmt: skip


_STREAM_SCRIPT = """
import sys
from pathlib import Path
from mudata.readers.sources import Sources

sources = Sources([Path(sys.argv[1])], max_expansion=float("inf"))
with sources.open_decoded("subject1.csv.gz") as fh:
    total = sum(len(chunk) for chunk in iter(lambda: fh.read(2**20), b""))
print(f"{total:,} bytes streamed", file=sys.stderr)
"""


def _write_registry(folder: Path) -> Path:
    """The registry folder of the cases: hostile copies of built-in entries and the pattern entry."""
    registry = folder / "registry"
    registry.mkdir()
    wisdm = (ROOT / "registry" / "wisdm.toml").read_text(encoding="utf-8")
    # A hostile registry copy: no archive hash, so the tar must be opened.
    wisdm = re.sub(r'(name = "WISDM_ar_v1.1.tar.gz"\nurl = .*\n)sha256 = .*\n', r"\1", wisdm)
    (registry / "wisdm.toml").write_text(wisdm, encoding="utf-8")
    for builtin, copy in (("wisdm", "wisdm-open"), ("gestures", "gestures-open")):
        text = (ROOT / "registry" / f"{builtin}.toml").read_text(encoding="utf-8")
        (registry / f"{copy}.toml").write_text(_open_copy(text, copy), encoding="utf-8")
    named = folder / "pattern"
    named.mkdir()
    signals = named / ("a" * 35 + "!.csv")
    signals.write_text("t,x,y,z,label\n0,1,1,1,walk\n1,2,2,2,walk\n", encoding="utf-8")
    (registry / "pattern.toml").write_text(
        _PATTERN_ENTRY.format(name=signals.name, path=signals.as_posix()), encoding="utf-8"
    )
    return registry


_BOUNDED_COMMON = """\
name = "{name}"
title = "Bounded input {name}"
version = "1"
homepage = "https://example.org/{name}"
licence = "CC0-1.0"
citation = "Someone (2026)."
sampling_rate_hz = 50
reader = "{reader}"
min_per_class = 1

[[files]]
name = "{file}"
path = "{path}"

[[classes]]
code = "walk"
name = "walk"

[[classes]]
code = "run"
name = "run"
"""

_SIGNALS = """
[recipe]
name = "study-window"
window = 2

[[sensors]]
name = "acc"
channels = ["x", "y", "z"]
"""

_OPTIONS = {
    "mat": """
[reader_options]
format = "mat"
header = false
members = "*.mat"
path_pattern = '(?P<user>u\\d+)_(?P<label>walk|run)\\.mat$'

[reader_options.columns]
x = 1
y = 2
z = 3
"""
    + _SIGNALS,
    "signals": """
[reader_options]
format = "csv"
members = "*.csv"
user_col = "user"
label_col = "label"
time_col = "t"
"""
    + _SIGNALS,
    "features": """
[reader_options]
format = "csv"
members = "*.csv"
user_col = "userid"
label_col = "label"

[recipe]
name = "precomputed"
""",
}


def _bounded_entry(registry: Path, name: str, reader: str, options: str, data: Path) -> None:
    text = (
        _BOUNDED_COMMON.format(name=name, reader=reader, file=data.name, path=data.as_posix())
        + _OPTIONS[options]
    )
    (registry / f"{name}.toml").write_text(text, encoding="utf-8")


def _bounded_cases(
    folder: Path, registry: Path, wanted: Callable[..., bool]
) -> dict[str, list[str]]:
    """The hostile files, entries and commands of the bounded-input cases."""
    sys.path.insert(0, str(ROOT))
    # Here, not at the top: the test helpers are only needed by these cases.
    from tests.hostile_inputs import (
        many_classes_csv,
        many_member_zip,
        mat_bomb,
        wide_csv,
    )
    from tests.mueval.evaluation.test_runner import make_frame

    mudata = [sys.executable, "-m", "mudata.cli"]
    mueval = [sys.executable, "-m", "mueval.cli.main"]
    evaluate = [*mueval, "evaluate", "-s", "mm", "-c", "nb", "--iterations", "1", "--no-progress"]
    homes = folder / "homes"
    common = ["--allow-unverified", "--no-progress"]
    files = folder / "bounded"
    files.mkdir()
    cases: dict[str, list[str]] = {}
    if wanted("mat-bomb"):
        mat = files / "u1_walk.mat"
        mat_bomb(mat, 30_000_000, columns=3)
        _bounded_entry(registry, "matbomb", "long-signals", "mat", mat)
        print(f"mat-bomb: {mat.stat().st_size / 1024:.0f} KB .mat -> 720,000,000 bytes declared")
        cases["mat-bomb"] = [
            *mudata,
            "fetch",
            "matbomb",
            "--data-home",
            str(homes / "mat-bomb"),
            *common,
        ]
    if wanted("data-classes"):
        data = files / "classes.csv"
        many_classes_csv(data, 10_001, per_class=5)
        cases["data-classes"] = [*evaluate, "--data", str(data)]
    for columns, case in ((200_000, "csv-200k"), (700_000, "csv-700k")):
        if wanted(case, "csv-700k-fetch"):
            data = files / f"wide{columns}.csv"
            wide_csv(data, columns, prefix="fea")
            header = len(data.read_bytes().split(b"\n", 1)[0])
            print(f"{case}: {columns:,} columns, a {header / 1e6:.1f} MB header")
            cases[case] = [*evaluate, "--data", str(data)]
    if wanted("csv-700k-fetch"):
        _bounded_entry(registry, "wide", "feature-table", "features", files / "wide700000.csv")
        cases["csv-700k-fetch"] = [
            *mudata,
            "fetch",
            "wide",
            "--data-home",
            str(homes / "csv-700k-fetch"),
            *common,
        ]
    if wanted("run-ncal"):
        data = files / "table.csv"
        make_frame(n_users=4).to_csv(data, index=False)
        run_folder = files / "run"
        subprocess.run([*evaluate, "--data", str(data), "--out", str(run_folder)],
                       check=True, capture_output=True, cwd=ROOT)  # fmt: skip
        splits = pq.read_table(run_folder / "splits.parquet")
        column = splits.schema.get_field_index("n_cal")
        splits = splits.set_column(
            column, "n_cal", pa.array([200_000_000] * len(splits), pa.int64())
        )
        pq.write_table(splits, run_folder / "splits.parquet")
        cases["run-ncal"] = [*mueval, "report", str(run_folder), "--out", str(files / "report")]
    if wanted("ft-members"):
        archive = files / "features.zip"
        many_member_zip(archive, 49_000, b"userid,label,f\n1,walk,0.5\n")
        _bounded_entry(registry, "ftmembers", "feature-table", "features", archive)
        print(f"ft-members: {archive.stat().st_size / MIB:.2f} MiB zip, 49,000 members")
        cases["ft-members"] = [
            *mudata,
            "fetch",
            "ftmembers",
            "--data-home",
            str(homes / "ft-members"),
            *common,
        ]
    if wanted("ls-members"):
        archive = files / "signals.zip"
        rows = b"user,label,t,x,y,z\nu1,walk,0,1,1,1\nu1,walk,20,1,1,1\nu1,walk,40,1,1,1\n"
        many_member_zip(archive, 20_000, rows)
        _bounded_entry(registry, "lsmembers", "long-signals", "signals", archive)
        print(f"ls-members: {archive.stat().st_size / MIB:.2f} MiB zip, 20,000 members")
        cases["ls-members"] = [
            *mudata,
            "fetch",
            "lsmembers",
            "--data-home",
            str(homes / "ls-members"),
            *common,
        ]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="bytes a bomb expands to")
    parser.add_argument("--cases", default="all", help="comma list of case names, or all")
    parser.add_argument("--kill-mb", type=float, default=2500, help="kill a case past this")
    parser.add_argument("--timeout", type=float, default=150, help="kill a case past this (s)")
    options = parser.parse_args()
    size = options.size_mib * MIB
    chosen = None if options.cases == "all" else set(options.cases.split(","))

    def wanted(*names: str) -> bool:
        return chosen is None or bool(chosen & set(names))

    bomb = zip_bomb(size) if wanted("zip-bomb", "zip-liar", "har70-inf") else b""
    gestures_bomb = zip_bomb(size, "gestures-dataset/U01/01/01.txt") if wanted("zip-inf") else b""
    tarred = tar_bomb(size) if wanted("tar-bomb", "tar-inf") else b""
    _Handler.files = {
        "har70.zip": bomb,
        "inf/gestures-dataset.zip": gestures_bomb,
        "liar/har70.zip": zip_liar(bomb, MIB) if bomb else b"",
        "WISDM_ar_v1.1.tar.gz": tarred,
        "gestures-dataset.zip": 400 * MIB,
        "many/har70.zip": many_zip(20_000) if wanted("zip-many") else b"",
        "many/WISDM_ar_v1.1.tar.gz": many_tar(100_000) if wanted("tar-many") else b"",
    }
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    with tempfile.TemporaryDirectory() as folder:
        registry = _write_registry(Path(folder))
        gz_folder = Path(folder) / "gz-inf"
        gz_folder.mkdir()
        if wanted("gz-inf", "stream-inf"):
            gzip_bomb(gz_folder / "subject1.csv.gz", size)
        # The children's spools go here, so that one left behind shows.
        spools = Path(folder) / "tmp"
        spools.mkdir()
        env = {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1", "MUDATA_REGISTRY": str(registry),
               "TMPDIR": str(spools)}  # fmt: skip
        common = ["--allow-unverified", "--no-progress"]
        mudata = [sys.executable, "-m", "mudata.cli"]

        def fetch(case: str, name: str, *args: str) -> list[str]:
            home = Path(folder) / "homes" / case
            return [*mudata, "fetch", name, "--data-home", str(home), *args]

        inf = ("--max-expansion", "inf")
        cases = {
            "zip-bomb": fetch("zip-bomb", "har70", "--mirror", url, *common),
            "zip-liar": fetch("zip-liar", "har70", "--mirror", url + "/liar", *common),
            "zip-inf": fetch("zip-inf", "gestures-open", "--mirror", url + "/inf", *common, *inf),
            "tar-inf": fetch("tar-inf", "wisdm-open", "--mirror", url, *common, *inf),
            "gz-inf": [
                *mudata,
                "init",
                str(gz_folder),
                "--name",
                "gz",
                "-o",
                str(Path(folder) / "gz.toml"),
            ],
            "stream-inf": [sys.executable, "-c", _STREAM_SCRIPT, str(gz_folder)],
            "har70-inf": fetch("har70-inf", "har70", "--mirror", url, *common, *inf),
            "zip-many": fetch("zip-many", "har70", "--mirror", url + "/many", *common),
            "tar-bomb": fetch("tar-bomb", "wisdm", "--mirror", url, *common),
            "tar-many": fetch("tar-many", "wisdm", "--mirror", url + "/many", *common),
            "oversize": fetch("oversize", "gestures", "--mirror", url, "--no-progress"),
            "path-pattern": fetch("path-pattern", "pattern", *common),
            **_bounded_cases(Path(folder), registry, wanted),
        }
        if wanted("data-parquet", "run-parquet", "jobs-64"):
            cases.update(_mueval_cases(Path(folder)))
        for count, name in ((8_000, "classes-8k"), (100_000, "classes-100k")):
            if wanted(name):
                toml = _classes_entry(Path(folder) / name, count)
                home = Path(folder) / "homes" / name
                cases[name] = [*mudata, "register", str(toml), "--data-home", str(home)]
        cases["baseline"] = [*mudata, "list"]
        if bomb or gestures_bomb:
            zipped = len(bomb or gestures_bomb) / MIB
            print(f"bomb archives: zip {zipped:.2f} MiB -> {options.size_mib} MiB")
        if tarred:
            print(f"tar bomb: .tar.gz {len(tarred) / MIB:.2f} MiB -> {options.size_mib} MiB")
        if wanted("gz-inf", "stream-inf"):
            packed = (gz_folder / "subject1.csv.gz").stat().st_size / MIB
            print(f"gz-inf: .csv.gz {packed:.2f} MiB -> {options.size_mib} MiB")
        if _Handler.files["many/har70.zip"]:
            print(
                f"zip-many: {len(_Handler.files['many/har70.zip']) / MIB:.2f} MiB, 20,000 members"
            )
        print(f"{'case':<14} {'exit':>11} {'peak MB':>8} {'wall s':>7} {'CPU s':>6}  error")
        worst = 0.0
        for name, command in cases.items():
            if not wanted(name) and name != "baseline":
                continue
            extra = {"MUDATA_MAX_EXPANSION": "inf"} if name == "gz-inf" else {}
            code, peak, wall, cpu, last = run(
                command, {**env, **extra}, options.kill_mb, options.timeout
            )
            leftovers = sorted(p.name for p in (Path(folder) / "homes" / name).glob("*/raw/*"))
            leftovers += sorted(p.name for p in spools.iterdir())
            worst = max(worst, peak)
            print(f"{name:<14} {code:>11} {peak:>8.0f} {wall:>7.2f} {cpu:>6.2f}  {last[:160]}"
                  + (f"  LEFT: {leftovers}" if leftovers else ""), flush=True)  # fmt: skip
    server.shutdown()
    print(f"worst peak: {worst:.0f} MB (target: under 500 MB)")


if __name__ == "__main__":
    main()
