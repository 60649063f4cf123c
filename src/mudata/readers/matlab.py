"""MATLAB files as tables: :func:`read_mat`, under the expansion cap.

Owns the reading of a MATLAB ``.mat`` file (v4 to v7.2, through
:func:`scipy.io.loadmat`) as a table of numbered columns; v7.3 files are
HDF5 and refused with a message naming the format. The arrays' declared
shapes (:func:`scipy.io.whosmat`, which decompresses no array) are checked
against the expansion cap before any is decompressed: a 700 KB file can hold
a compressed array of 720 MB. Arrays inside a MATLAB struct (``save(...,
struct)`` of a ``data`` struct) are named by their dotted path
(``data.sensor_readings``); a struct declares no field shapes, so the file is
inflated once, counting bytes and keeping none, against the same cap before a
struct is read.
"""

from __future__ import annotations

import contextlib
import io
import zlib
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Literal

from mudata.bounds.archive import expansion_budget, max_expansion
from mudata.errors import LimitError, ParseError, Reason, excerpt

if TYPE_CHECKING:
    # The registry imports the readers to check their options and must not
    # pay for numpy and pandas, so they are imported where used.
    import numpy as np
    import pandas as pd

__all__ = [
    "MAT_NUMERIC_CLASSES",
    "MAT_STRUCT_DEPTH",
    "mat_arrays",
    "mat_directory",
    "mat_struct_fields",
    "read_mat",
]

#: The pieces a struct's compressed elements are inflated in, to be counted.
_CHUNK = 1 << 20
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
#: The MATLAB classes (as :func:`scipy.io.whosmat` names them) read as numbers.
MAT_NUMERIC_CLASSES = frozenset(
    ("double", "single", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
)
# Bytes per value of a MATLAB array once read: read_mat makes every array float64.
_MAT_VALUE_BYTES = 8
#: How deep structs inside structs are searched for arrays (``a.b.c.d``).
MAT_STRUCT_DEPTH = 4
# MATLAB v5 data element types: a compressed element, and an array (matrix).
_MI_COMPRESSED, _MI_MATRIX = 15, 14


def _is_hdf5(data: bytes) -> bool:
    # MATLAB v7.3 writes a 512-byte text header, then an HDF5 file; plain HDF5 starts with it.
    return data[:8] == _HDF5_SIGNATURE or data[512:520] == _HDF5_SIGNATURE


class _ShortReads(io.BytesIO):
    """Bytes read at most ``limit`` at a time: scipy decompresses what each read gives.

    scipy's zlib stream asks for 128 KiB of compressed bytes at once and
    inflates them whole: zeros inflate about 1,000 times, so one read of a
    hostile array's header would make 128 MB. Short reads keep that to
    ``limit`` times the ratio.
    """

    def __init__(self, data: bytes, limit: int) -> None:
        super().__init__(data)
        self.limit = limit

    def read(self, size: int | None = -1, /) -> bytes:
        if size is None or size < 0:
            return super().read()
        return super().read(min(size, self.limit))


@contextlib.contextmanager
def _scipy_reads(member: str) -> Iterator[None]:
    """What :mod:`scipy.io` raises on a file it cannot read, as the ParseError naming ``member``.

    ``MatReadError`` (an empty or truncated file) is no ValueError: named too.
    """
    # Here, not at the top: scipy.io, only when a .mat file is read.
    from scipy.io.matlab import MatReadError

    try:
        yield
    except (ValueError, TypeError, OSError, NotImplementedError, zlib.error, MatReadError) as exc:
        message = f"{member}: cannot be read as a MATLAB .mat file ({type(exc).__name__}: {str(exc)[:200]})"
        raise ParseError(message, reason=Reason("unreadable", "members")) from None


def mat_directory(data: bytes, member: str) -> list[tuple[str, tuple[int, ...], str]]:
    """The numeric 2-D arrays a ``.mat`` file declares: name, shape and MATLAB class.

    Read with :func:`scipy.io.whosmat`, which decompresses no array (only the
    first few KiB of each, for its header).

    Raises
    ------
    ParseError
        The file is MATLAB v7.3 (HDF5), or not a MATLAB file scipy can read.
    """
    if _is_hdf5(data):
        message = (
            f"{member}: a MATLAB v7.3 (HDF5) file; only MATLAB v4 to v7.2 files are read. "
            f"Save it again in MATLAB with save(name, '-v7'), or export the array as CSV"
        )
        raise ParseError(message, reason=Reason("unreadable", "members"))
    # Here, not at the top: scipy.io is slow to import; only MATLAB files need it.
    from scipy.io import whosmat

    with _scipy_reads(member):
        directory = whosmat(_ShortReads(data, 1 << 12))
    return [
        (name, tuple(shape), kind)
        for name, shape, kind in directory
        if kind in MAT_NUMERIC_CLASSES and len(shape) == 2
    ]


def mat_arrays(
    data: bytes,
    member: str,
    names: Collection[str] | None = None,
    *,
    ratio: float | None = None,
) -> dict[str, np.ndarray]:
    """The numeric 2-D arrays of a ``.mat`` file, by variable name.

    The file's directory (names, declared shapes and classes, through
    :func:`scipy.io.whosmat`) is read first; only numeric 2-D arrays are
    decompressed, and only once their declared size as float64 fits the
    expansion cap of the file.

    Parameters
    ----------
    data : bytes
        The file content.
    member : str
        Its path, for messages.
    names : collection of str, optional
        The variables to read (others are skipped unread); default all.
    ratio : float, optional
        Expansion cap (bytes out per byte of the file); default as for archives.

    Raises
    ------
    ParseError
        The file is MATLAB v7.3 (HDF5), or not a MATLAB file scipy can read.
    LimitError
        The arrays to read declare more bytes (as float64) than the cap allows.
    """
    # Here, not at the top: numpy and scipy.io are slow to import, and the registry
    # imports the readers to check their options; only MATLAB files need them.
    import numpy as np
    from scipy.io import loadmat

    wanted = [entry for entry in mat_directory(data, member) if names is None or entry[0] in names]
    _check_mat_size(wanted, len(data), member, ratio)
    with _scipy_reads(member):
        content = (
            # Short reads: the headers of the arrays skipped inflate a little only.
            loadmat(_ShortReads(data, 1 << 16), variable_names=[name for name, _, _ in wanted])
            if wanted
            else {}
        )
    return {
        key: value
        for key, value in content.items()
        if not key.startswith("__")
        and isinstance(value, np.ndarray)
        and value.ndim == 2
        and np.issubdtype(value.dtype, np.number)
    }


def _check_mat_size(
    arrays: list[tuple[str, tuple[int, ...], str]], size: int, member: str, ratio: float | None
) -> None:
    """Refuse arrays whose declared shapes, as float64, pass the expansion cap of the file."""
    cap = max_expansion(ratio)
    budget = expansion_budget(size, cap)
    declared = 0
    for name, shape, kind in arrays:
        declared += _MAT_VALUE_BYTES * shape[0] * shape[1]
        if declared > budget:
            dims = "x".join(map(str, shape))
            message = (
                f"{member}: variable {excerpt(name)} declares a {dims} {kind} array; the arrays "
                f"to read take at least {declared:,} bytes as float64 from a {size:,}-byte "
                f"file, past the cap of {budget:,.0f} bytes ({cap:g} bytes per file byte, at "
                f"least {expansion_budget(0, cap):,.0f}). Refusing it before decompressing; "
                f"raise the cap with $MUDATA_MAX_EXPANSION or --max-expansion if the file is "
                f"trusted"
            )
            raise LimitError(message)


def _inflated_size(data: bytes, member: str, budget: float) -> int:
    """Bytes the data elements of a MATLAB v5 file take once inflated, counted without
    keeping them; past ``budget`` a :class:`LimitError` (before scipy reads a struct,
    whose fields declare no shape the directory shows)."""
    if len(data) < 128 or data[126:128] not in (b"IM", b"MI"):
        return len(data)  # v4 files hold no struct
    order: Literal["little", "big"] = "little" if data[126:128] == b"IM" else "big"
    total, at = 0, 128
    while at + 8 <= len(data):
        kind = int.from_bytes(data[at : at + 4], order)
        size = int.from_bytes(data[at + 4 : at + 8], order)
        body = data[at + 8 : at + 8 + size]
        if kind == _MI_COMPRESSED:
            inflater = zlib.decompressobj()
            chunk = body
            while chunk and not inflater.eof:
                total += len(inflater.decompress(chunk, _CHUNK))
                chunk = inflater.unconsumed_tail
                if total > budget:
                    break
            at += 8 + size
        else:
            total += size
            at += 8 + size + (-size % 8)
        if total > budget:
            message = (
                f"{member}: its MATLAB variables inflate past {budget:,.0f} bytes (the "
                f"expansion cap of a {len(data):,}-byte file); refusing to read its structs. "
                f"Raise the cap with $MUDATA_MAX_EXPANSION or --max-expansion if the file is "
                f"trusted"
            )
            raise LimitError(message)
    return total


def _leaves(value: object, path: str, depth: int) -> Iterator[tuple[str, object]]:
    """Every field of a 1x1 struct (as :func:`scipy.io.loadmat` returns it), by dotted
    path, structs inside it searched to :data:`MAT_STRUCT_DEPTH`."""
    # Here, not at the top: numpy is slow to import (see mat_arrays).
    import numpy as np

    if (
        not isinstance(value, np.ndarray)
        or value.dtype.names is None
        or value.size != 1
        or depth > MAT_STRUCT_DEPTH
    ):
        yield path, value
        return
    for name in value.dtype.names:
        yield from _leaves(value.reshape(-1)[0][name], f"{path}.{name}", depth + 1)


def _describe(value: object) -> str:
    """What a struct field holds, for messages: ``1000x6 double``, ``text``, ..."""
    # Here, not at the top: numpy is slow to import (see mat_arrays).
    import numpy as np

    if not isinstance(value, np.ndarray):
        return type(value).__name__
    if value.dtype.kind in "US":
        return "text"
    shape = "x".join(map(str, value.shape))
    if value.dtype.names is not None:
        return f"{shape} struct"
    return f"{shape} {value.dtype.name if value.dtype.kind != 'O' else 'cell'}"


def _is_sample_array(value: object) -> bool:
    """A numeric 2-D array of two rows or more: one a table can be read from."""
    # Here, not at the top: numpy is slow to import (see mat_arrays).
    import numpy as np

    return (
        isinstance(value, np.ndarray)
        and value.ndim == 2
        and value.shape[0] >= 2
        and np.issubdtype(value.dtype, np.number)
    )


def mat_struct_fields(
    data: bytes, member: str, *, ratio: float | None = None
) -> dict[str, np.ndarray]:
    """The fields of the file's 1x1 structs, by dotted path (``data.sensor_readings``).

    Parameters
    ----------
    data : bytes
        The file content.
    member : str
        Its path, for messages.
    ratio : float, optional
        Expansion cap (bytes out per byte of the file); default as for archives.

    Returns
    -------
    dict of str to ndarray
        Every field (numbers, text, cells), in the order the file declares them;
        empty when the file declares no struct.

    Raises
    ------
    ParseError
        Not a MATLAB file scipy can read.
    LimitError
        The file inflates past the expansion cap.
    """
    if _is_hdf5(data):
        mat_directory(data, member)  # the message naming v7.3
    # Here, not at the top: numpy and scipy.io are slow to import; only MATLAB files need them.
    import numpy as np
    from scipy.io import loadmat, whosmat

    with _scipy_reads(member):
        structs = [
            name for name, _, kind in whosmat(_ShortReads(data, 1 << 12)) if kind == "struct"
        ]
    if not structs:
        return {}
    _inflated_size(data, member, expansion_budget(len(data), max_expansion(ratio)))
    with _scipy_reads(member):
        content = loadmat(_ShortReads(data, 1 << 16), variable_names=structs)
    fields: dict[str, np.ndarray] = {}
    for name in structs:
        for path, value in _leaves(content[name], name, 1):
            if path != name and isinstance(value, np.ndarray):
                fields[path] = value
    return fields


def _choose_mat(
    data: bytes, member: str, variable: str | None, ratio: float | None
) -> tuple[str, np.ndarray | None]:
    """The array :func:`read_mat` reads: its name, and its values when read from a struct."""
    directory = mat_directory(data, member)
    shapes = {name: "x".join(map(str, shape)) for name, shape, _ in directory}
    if variable is not None and variable in shapes:
        return variable, None
    if variable is None and len(shapes) == 1:
        return next(iter(shapes)), None
    fields = mat_struct_fields(data, member, ratio=ratio)
    listed = ", ".join(f"{path} ({_describe(value)})" for path, value in list(fields.items())[:20])
    inside = f"; struct fields: {listed}" if fields else ""
    if variable is not None:
        if variable in fields and _is_sample_array(fields[variable]):
            return variable, fields[variable]
        message = (
            f"{member}: no numeric 2-D variable {excerpt(variable)} (of two rows or more, "
            f"in a struct); found {shapes or 'none'}{inside}"
        )
        raise ParseError(message, reason=Reason("absent", "variable"))
    arrays = [path for path, value in fields.items() if _is_sample_array(value)]
    if not shapes and len(arrays) == 1:
        return arrays[0], fields[arrays[0]]
    how = (
        f"name the one to read as reader_options.variable (a struct's field by its dotted "
        f"path: variable = {arrays[0]!r})"
        if arrays
        else "name the one to read as reader_options.variable"
    )
    message = (
        f"{member}: {'no' if not shapes else len(shapes)} numeric 2-D variables "
        f"({shapes or 'none'}){inside}; {how}"
    )
    raise ParseError(message, reason=Reason("missing", "variable"))


def read_mat(
    data: bytes, member: str, variable: str | None = None, *, ratio: float | None = None
) -> pd.DataFrame:
    """One numeric 2-D array of a ``.mat`` file as a table, one row per sample.

    Parameters
    ----------
    data : bytes
        The file content.
    member : str
        Its path, for messages.
    variable : str, optional
        The array to read, or a struct's field by its dotted path
        (``data.sensor_readings``); default the file's only numeric 2-D array
        or, when there is none, the only numeric 2-D array of two rows or more
        inside its structs.
    ratio : float, optional
        Expansion cap (bytes out per byte of the file); default as for archives.

    Returns
    -------
    DataFrame
        Columns ``0 .. n-1`` (as a file without a header), float64.

    Raises
    ------
    ParseError
        v7.3 file, unreadable file, ``variable`` absent, or no single array to
        choose (the message lists the arrays and the structs' fields).
    LimitError
        The array(s) to read declare (or a struct inflates to) more bytes than
        the expansion cap allows.
    """
    # Here, not at the top: numpy and pandas are slow to import, and the registry
    # imports the readers to check their options; only MATLAB files need them.
    import numpy as np
    import pandas as pd

    chosen, values = _choose_mat(data, member, variable, ratio)
    if values is None:
        arrays = mat_arrays(data, member, {chosen}, ratio=ratio)
        if chosen not in arrays:  # declared numeric, but scipy read it as something else
            message = f"{member}: variable {excerpt(chosen)} is not a numeric 2-D array once read"
            raise ParseError(message, reason=Reason("not-numeric", "variable"))
        values = arrays[chosen]
    return pd.DataFrame(np.asarray(values, dtype=np.float64))
