"""Build ``embedded/demo.parquet``, the table of the ``demo`` dataset, from the MotionSense release.

The table is the one ``mudata`` builds with the built-in entry ``motionsense``
(its reader, the study's 16 features per sensor over 3 s windows, its class
and user filters) from participants 1-4 of the release, the file
``motionsense_sub1-4.tar.gz``: the members of the official
``A_DeviceMotion_data.zip``, extracted. Their bytes are packed back into a
zip of that name (stored, in name order) and built by ``mudata.load`` with
``manual_dir`` in a temporary data home, so nothing is computed here that the
pipeline does not compute.

The rows are then written without the build's provenance (times and folders
of this machine), as Parquet with zstd compression and no schema metadata,
so the same release and the same pyarrow version give the same bytes::

    python scripts/build_demo.py --release ../shared/data/releases/motionsense_sub1-4.tar.gz
    python scripts/build_demo.py --release ... --check   # exit 1 when the file would change

After a change of the file, ``registry/demo.toml`` takes its new ``sha256``
and ``size`` (the script prints them) and ``embedded/README.md`` its hash.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "embedded" / "demo.parquet"

#: SHA-256 of the release file the table is built from; another file is refused.
RELEASE_SHA256 = "5a7c4c2dd824e3cf50a6db5db90967141a781dd064d6aa26503ef28a2263fd91"
#: The members the ``motionsense`` entry reads (its ``reader_options.members``).
MEMBER = re.compile(r"A_DeviceMotion_data/[a-z]+_\d+/sub_\d+\.csv")
#: A fixed time for every zip member: the zip's bytes do not depend on the tar's.
ZIP_TIME = (2019, 1, 1, 0, 0, 0)


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def release_zip(release: Path, folder: Path) -> Path:
    """Write ``folder/A_DeviceMotion_data.zip`` from the release's members.

    Raises
    ------
    ValueError
        The release is not the file this table is built from (its SHA-256 differs).
    """
    observed = sha256_bytes(release.read_bytes())
    if observed != RELEASE_SHA256:
        message = (
            f"{release}: expected the MotionSense release with sha256 {RELEASE_SHA256}, "
            f"actual {observed}"
        )
        raise ValueError(message)
    target = folder / "A_DeviceMotion_data.zip"
    with tarfile.open(release, "r:gz") as tar, zipfile.ZipFile(target, "w") as out:
        members = sorted(
            (m for m in tar.getmembers() if m.isfile() and MEMBER.fullmatch(m.name)),
            key=lambda m: m.name,
        )
        for member in members:
            handle = tar.extractfile(member)
            assert handle is not None  # a regular file always has one
            out.writestr(zipfile.ZipInfo(member.name, ZIP_TIME), handle.read())
    return target


def build_frame(release: Path) -> pd.DataFrame:
    """The ``motionsense`` table of the release, as ``mudata.load`` serves it."""
    # Here, not at the top: ``--help`` needs no pipeline.
    import mudata

    with tempfile.TemporaryDirectory(prefix="mudata-demo-") as tmp:
        folder = Path(tmp)
        (folder / "release").mkdir()
        release_zip(release, folder / "release")
        bunch = mudata.load(
            "motionsense",
            data_home=folder / "home",
            manual_dir=folder / "release",
            # The release's own hash is checked above; the entry pins no hash of the zip.
            allow_unverified=True,
            progress=False,
        )
        frame = bunch.frame
    frame.attrs = {}
    return frame


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    """The table as Parquet: text ids and labels, float64 features, zstd, no schema metadata."""
    columns = {
        "userid": pa.array(frame["userid"].astype(str).tolist(), pa.string()),
        "label": pa.array(frame["label"].astype(str).tolist(), pa.string()),
    }
    for name in frame.columns[2:]:
        columns[str(name)] = pa.array(frame[name].to_numpy(dtype="float64"), pa.float64())
    table = pa.table(columns)
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", compression_level=3)
    return buffer.getvalue()


def build(release: Path) -> bytes:
    """The bytes of ``embedded/demo.parquet`` built from ``release``."""
    return parquet_bytes(build_frame(release))


def main(argv: list[str] | None = None) -> int:
    """Command line: build (or ``--check``) the embedded table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--release", type=Path, required=True, help="motionsense_sub1-4.tar.gz")
    parser.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT}")
    parser.add_argument(
        "--check", action="store_true", help="compare with --out instead of writing it"
    )
    args = parser.parse_args(argv)
    data = build(args.release)
    print(f'sha256 = "{sha256_bytes(data)}"\nsize = {len(data)}\npyarrow {pa.__version__}')
    if args.check:
        same = args.out.is_file() and args.out.read_bytes() == data
        print(f"{args.out}: {'identical' if same else 'DIFFERS'}")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
