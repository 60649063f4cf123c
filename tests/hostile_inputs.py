"""Small files that declare, or expand to, far more than they hold: for tests and benchmarks/bomb.py."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

_MIB = 2**20
# MATLAB v5 data types and the double array class (the MAT-file format's own numbers).
_MI_INT8, _MI_INT32, _MI_UINT32, _MI_DOUBLE, _MI_MATRIX, _MI_COMPRESSED = 1, 5, 6, 9, 14, 15
_MX_DOUBLE_CLASS = 6


def mat_bomb(
    path: Path, rows: int, *, columns: int = 1, written: int | None = None, name: str = "x"
) -> None:
    """A MATLAB v5 file at ``path`` holding one compressed ``rows`` x ``columns`` double array of zeros.

    The array's values are compressed a MiB at a time, never held whole; a
    ``written`` below ``rows`` stops after that many values (a file whose
    directory declares the full shape, but which cannot be read: nothing may
    decompress it before checking the shape).
    """
    label = name.encode()
    padded = label + bytes(-len(label) % 8)
    values = rows * columns * 8
    header = (
        struct.pack("<II", _MI_UINT32, 8)
        + struct.pack("<II", _MX_DOUBLE_CLASS, 0)
        + struct.pack("<II", _MI_INT32, 8)
        + struct.pack("<ii", rows, columns)
        + struct.pack("<II", _MI_INT8, len(label))
        + padded
        + struct.pack("<II", _MI_DOUBLE, values)
    )
    packer = zlib.compressobj(9)
    parts = [packer.compress(struct.pack("<II", _MI_MATRIX, len(header) + values) + header)]
    left = values if written is None else written * 8
    block = bytes(_MIB)
    while left > 0:
        parts.append(packer.compress(block[: min(left, _MIB)]))
        left -= _MIB
    parts.append(packer.flush())
    body = b"".join(parts)
    text = b"MATLAB 5.0 MAT-file, written by tests/hostile_inputs.py".ljust(116, b" ")
    with open(path, "wb") as out:
        out.write(text + bytes(8) + struct.pack("<H", 0x0100) + b"IM")
        out.write(struct.pack("<II", _MI_COMPRESSED, len(body)) + body)


def wide_csv(path: Path, columns: int, *, prefix: str = "f") -> None:
    """A CSV whose header holds ``userid``, ``label`` and ``columns - 2`` features, and one row."""
    names = ["userid", "label", *(f"{prefix}{i}" for i in range(columns - 2))]
    row = ["1", "a", *("0" for _ in range(columns - 2))]
    path.write_text(",".join(names) + "\n" + ",".join(row) + "\n", encoding="utf-8")


def many_classes_csv(path: Path, classes: int, per_class: int = 2) -> None:
    """A CSV of two users with ``per_class`` rows of each of ``classes`` classes (``k0``, ...)."""
    lines = ["userid,label,f1,f2"]
    lines += [f"{1 + i % 2},k{i % classes},{i % 7}.5,{i % 3}" for i in range(per_class * classes)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def many_member_zip(path: Path, count: int, body: bytes, *, suffix: str = ".csv") -> None:
    """A zip at ``path`` of ``count`` members ``part{i}{suffix}``, each holding ``body``."""
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(count):
            zf.writestr(zipfile.ZipInfo(f"parts/part{i}{suffix}", (2020, 1, 1, 0, 0, 0)), body)
