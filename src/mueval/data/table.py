"""The feature table to evaluate: from a :mod:`mudata` dataset or a user's file.

Whatever the source, the evaluation sees a :class:`Table`: unscaled features
``X``, class indices ``y`` into the sorted class names (a label encoder's order,
as in the protocol), one user id per row, and a description for ``run.json``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from mudata.bounds.parquet import (
    MAX_PARQUET_COLUMNS,
    check_csv_header,
    check_first_row,
    check_parquet,
)
from mudata.config import EXPANSION_ENV
from mudata.display import shown
from mudata.errors import LimitError as MudataLimitError
from mudata.errors import ParseError as MudataParseError
from mueval.data.classes import label_classes
from mueval.data.users import user_ids
from mueval.errors import DataError, UsageError
from mueval.files import open_input

__all__ = [
    "MAX_CLASSES",
    "MAX_COLUMNS",
    "MAX_SCORE_CELLS",
    "SCORES_ENV",
    "Table",
    "frame_sha256",
    "import_mudata",
    "load_data",
    "load_file",
    "load_registered",
    "load_registered_windows",
    "max_score_cells",
    "table_from_frame",
]


@dataclass
class Table:
    """A validated feature table.

    Attributes
    ----------
    X : ndarray of float, shape (n_rows, n_features)
    y : ndarray of int, shape (n_rows,)
        Index into ``classes``.
    users : ndarray of int64 or of str, shape (n_rows,)
        Each row's user id, as the user's own name (:func:`~mueval.data.users.user_ids`).
    classes : list of str
        Sorted unique labels.
    features : list of str
    info : dict
        ``name, source, provenance_sha256, n_rows, n_users, licence`` and more,
        the ``dataset`` entry of ``run.json``.
    """

    X: np.ndarray
    y: np.ndarray
    users: np.ndarray
    classes: list[str]
    features: list[str]
    info: dict[str, Any] = field(default_factory=dict)


def frame_sha256(df: pd.DataFrame) -> str:
    """Deterministic content hash of a DataFrame (values, index and column names)."""
    digest = hashlib.sha256()
    digest.update("\x1f".join(map(str, df.columns)).encode())
    digest.update(pd.util.hash_pandas_object(df, index=True).to_numpy().tobytes())
    return digest.hexdigest()


#: Classes a table may hold, as a mudata registry entry (``mudata.registry.lookup.MAX_CLASSES``):
#: activity datasets have tens; every row's scores take one value per class.
MAX_CLASSES = 10_000
#: Columns a table may hold, as a Parquet or CSV input of mudata.
MAX_COLUMNS = MAX_PARQUET_COLUMNS
#: Rows x classes a table may hold by default: the evaluation keeps a float64
#: score per row and class (128 MiB at the cap) and several arrays of that
#: shape. The largest built-in table (HAR70+, about 15,000 rows of 7 classes)
#: takes 0.6 %. ``$MUEVAL_MAX_SCORES`` sets another (:func:`max_score_cells`).
MAX_SCORE_CELLS = 2**24
SCORES_ENV = "MUEVAL_MAX_SCORES"


def max_score_cells() -> int:
    """The cap on rows x classes: ``$MUEVAL_MAX_SCORES``, else :data:`MAX_SCORE_CELLS`.

    Raises
    ------
    UsageError
        The variable is set to something other than a positive whole number.
    """
    text = os.environ.get(SCORES_ENV, "").strip()
    if not text:
        return MAX_SCORE_CELLS
    if not text.isdigit() or int(text) < 1:
        message = f"${SCORES_ENV} is {text[:40]!r}; expected a positive whole number"
        raise UsageError(message)
    return int(text)


#: At most this many characters of file content in a message, as in mudata.
_EXCERPT = 200


def _first_text_cell(df: pd.DataFrame, column: object) -> str:
    """Where ``column`` holds text that is no number, for the message (a stray
    ``"n/a"``, or the header line again), or ``""``."""
    if not pd.api.types.is_string_dtype(df[column].dtype):
        return ""
    cells = df[column]
    text = cells.notna() & pd.to_numeric(cells, errors="coerce").isna()
    if not text.any():
        return ""
    row = int(np.flatnonzero(text.to_numpy())[0])
    value = cells.iloc[row]
    header = (
        ": the header line again, as files joined with their headers hold it?"
        if value == str(column)
        else ""
    )
    return f"; {shown(column)} holds {shown(value)} at row position {row}{header}"


def _listed(names: Sequence[object]) -> str:
    """Column names for a message, cut to :data:`_EXCERPT` characters: a file's
    header is its content (a link to ``/proc/self/environ`` has the environment
    as its one column name), and a message must never echo more than a glimpse."""
    text = ", ".join(map(str, names))
    if len(text) <= _EXCERPT:
        return text
    return f"{text[:_EXCERPT]}... ({len(text) - _EXCERPT:,} more characters)"


def table_from_frame(
    df: pd.DataFrame,
    *,
    user_col: str = "userid",
    label_col: str = "label",
    info: dict[str, Any] | None = None,
) -> Table:
    """Validate a DataFrame and turn it into a :class:`Table`.

    Parameters
    ----------
    df : DataFrame
        One row per sample: a user column, a label column, every other column a
        numeric feature.
    user_col, label_col : str
        Names of the user and label columns.
    info : dict, optional
        Description merged into ``Table.info``.

    Returns
    -------
    Table

    Raises
    ------
    UsageError
        A named column does not exist.
    DataError
        Missing labels or users, non-numeric or missing features, fewer than two
        classes.
    """
    source = (info or {}).get("name", "the table")
    _refuse_repeated_names([str(c) for c in df.columns], source)
    for option, col in (("user", user_col), ("label", label_col)):
        if col not in df.columns:
            message = (
                f"{source}: no {option} column {col!r}; columns are: {_listed(list(df.columns))}"
            )
            if len(df.columns) == 1 and any(sep in str(df.columns[0]) for sep in ";\t|"):
                message += " (one column: is the file separated by ';', tabs or '|'? a CSV "
                message += "file's columns are separated by commas)"
            raise UsageError(message)
    if user_col == label_col:
        message = f"the user and label columns must differ; both are {user_col!r}"
        raise UsageError(message)
    if len(df) == 0:
        message = f"{source}: the table has no rows"
        raise DataError(message)
    _check_size(df, label_col, source)

    labels = df[label_col]
    n_missing = int(labels.isna().sum())
    if n_missing:
        rows = np.flatnonzero(labels.isna().to_numpy())[:5].tolist()
        message = (
            f"{source}: label column {label_col!r} has {n_missing} missing value(s) "
            f"of {len(df)} rows (first at row positions {rows}); drop or fill them"
        )
        raise DataError(message)
    raw_users = df[user_col]
    n_missing = int(raw_users.isna().sum())
    if n_missing:
        message = f"{source}: user column {user_col!r} has {n_missing} missing value(s)"
        raise DataError(message)

    features = [c for c in df.columns if c not in (user_col, label_col)]
    if not features:
        message = f"{source}: no feature columns besides {user_col!r} and {label_col!r}"
        raise DataError(message)
    bad = [
        c
        for c in features
        if not pd.api.types.is_numeric_dtype(df[c])
        or pd.api.types.is_bool_dtype(df[c])
        # A complex number is numeric to pandas; as a float it would lose its imaginary part.
        or pd.api.types.is_complex_dtype(df[c])
    ]
    if bad:
        message = (
            f"{source}: feature columns must be numeric; not numeric: {_listed(bad)}"
            f"{_first_text_cell(df, bad[0])} (name the user and label columns with "
            "--user-col/--label-col, or drop these columns)"
        )
        raise DataError(message)
    X = df[features].to_numpy(dtype=float)
    missing = ~np.isfinite(X)
    if missing.any():
        per_col = missing.sum(axis=0)
        worst = [f"{features[i]}: {per_col[i]}" for i in np.flatnonzero(per_col)[:5]]
        message = (
            f"{source}: {int(missing.any(axis=1).sum())} row(s) have missing or "
            f"infinite feature values ({', '.join(worst)}); the classifiers need "
            "complete rows"
        )
        raise DataError(message)

    y, classes = label_classes(labels, label_col, source)
    if len(classes) < 2:
        message = f"{source}: label column {label_col!r} has one class only ({classes[0]!r})"
        raise DataError(message)

    users = user_ids(raw_users)
    out_info = dict(info or {})
    out_info.update(
        n_rows=len(df),
        n_users=len(np.unique(users)),
        n_features=len(features),
        user_col=user_col,
        label_col=label_col,
    )
    return Table(X, y, users, classes, [str(f) for f in features], out_info)


def _check_size(df: pd.DataFrame, label_col: str, source: str) -> None:
    """Refuse, before any array is made, a table past the caps on columns, classes and scores."""
    if df.shape[1] > MAX_COLUMNS:
        message = (
            f"{source}: {df.shape[1]:,} columns, more than the {MAX_COLUMNS:,} a table may hold"
        )
        raise DataError(message)
    n_classes = int(df[label_col].nunique(dropna=True))
    if n_classes > MAX_CLASSES:
        message = (
            f"{source}: label column {label_col!r} holds {n_classes:,} classes, more than the "
            f"{MAX_CLASSES:,} a table may hold (as a mudata registry entry)"
        )
        raise DataError(message)
    cap = max_score_cells()
    if len(df) * n_classes > cap:
        message = (
            f"{source}: {len(df):,} rows x {n_classes:,} classes make {len(df) * n_classes:,} "
            f"scores per classifier, more than the {cap:,} an evaluation may hold "
            f"({cap * 8 / 2**20:,.0f} MiB of float64); evaluate fewer rows or classes, or "
            f"raise the cap with ${SCORES_ENV} if the memory is there"
        )
        raise DataError(message)


def import_mudata() -> ModuleType:
    """This project's ``mudata``, or a clear error when another one is installed.

    scverse's ``mudata`` (multimodal omics data) has the same import name; only
    ours carries ``__mudata_mueval__``.
    """
    # Here, not at the top: mueval starts without it, and scverse's package, if
    # that is the one installed, imports anndata and h5py.
    import mudata

    if getattr(mudata, "__mudata_mueval__", None) != "mudata-mueval":
        where = getattr(mudata, "__file__", None) or "an unknown location"
        message = (
            f"the 'mudata' imported from {where} is not the one of mudata-mueval "
            "(scverse's multimodal-data package has the same import name); install "
            "mudata-mueval in an environment without scverse's mudata"
        )
        raise UsageError(message)
    return mudata


def load_registered(name: str, **source: Any) -> Table:
    """A :mod:`mudata` dataset by name (built or read from its cache).

    Parameters
    ----------
    name : str
        Registry name, e.g. ``"wisdm"``.
    **source
        Where the dataset's files come from, passed to :func:`mudata.load`:
        ``data_home``, ``manual_dir``, ``mirror``, ``allow_unverified``,
        ``max_expansion``, ``progress``.

    Returns
    -------
    Table
        Made by :func:`table_from_frame`, with the table's provenance in ``info``.

    Raises
    ------
    UsageError
        An unknown dataset, or a ``mudata`` that is not this project's (scverse's
        multimodal-data package has the same import name).
    """
    mudata = import_mudata()
    # Here, not at the top: after the check above, which names another mudata.
    from mudata.errors import MudataError, MudataUsageError

    try:
        df = mudata.load(name, **source).frame
    except MudataUsageError as exc:
        raise UsageError(str(exc)) from exc
    except MudataError as exc:
        message = f"cannot load dataset {name!r}: {exc}"
        raise DataError(message) from exc
    try:
        prov = mudata.provenance(name, data_home=source.get("data_home"))
    except (MudataError, OSError):
        prov = {}
    sha = prov.get("sha256") or frame_sha256(df)
    info = {
        "name": name,
        "source": "registry",
        "provenance_sha256": sha,
        "licence": prov.get("licence"),
        "title": prov.get("title"),
        "citation": prov.get("citation"),
    }
    return table_from_frame(df, user_col="userid", label_col="label", info=info)


def load_registered_windows(name: str, **source: Any) -> Table:
    """A :mod:`mudata` dataset's windows of samples, for models that take ``(n, T, C)``.

    The rows, users, classes and their order are those of the feature table
    (:func:`mudata.load` with ``windows=True``), so ``y`` and ``users`` equal
    :func:`load_registered`'s and a run on windows compares with a run on features.

    Returns
    -------
    Table
        ``X`` of float32, shape ``(n_rows, window, n_channels)``; ``features``
        names the channels; ``info["input"]`` is ``"windows"`` and
        ``info["window_shape"]`` ``[window, n_channels]``; ``provenance_sha256``
        is the feature table's (the same rows), ``windows_sha256`` the windows'.

    Raises
    ------
    UsageError
        An unknown dataset, or one without windows (a recipe other than
        ``study-window``: mudata's message says why).
    """
    mudata = import_mudata()
    # Here, not at the top: after the check above, which names another mudata.
    from mudata.errors import MudataError, MudataUsageError

    try:
        bunch = mudata.load(name, windows=True, **source)
    except MudataUsageError as exc:
        raise UsageError(str(exc)) from exc
    except MudataError as exc:
        message = f"cannot load the windows of dataset {name!r}: {exc}"
        raise DataError(message) from exc
    X = bunch.data
    if not np.isfinite(X).all():
        message = f"{name}: its windows hold missing or infinite samples; they cannot be evaluated"
        raise DataError(message)
    labels = bunch.target.astype(str).to_numpy()
    classes = sorted(np.unique(labels).tolist())  # a label encoder's order, as for features
    index = {c: i for i, c in enumerate(classes)}
    y = np.fromiter((index[v] for v in labels), dtype=int, count=len(labels))
    users = user_ids(bunch.groups)
    record = bunch.provenance
    info = {
        "name": name,
        "source": "registry",
        "input": "windows",
        "provenance_sha256": record.get("features_table_sha256"),
        "windows_sha256": record.get("sha256"),
        "window_shape": [int(X.shape[1]), int(X.shape[2])],
        "licence": record.get("licence"),
        "title": record.get("title"),
        "citation": record.get("citation"),
        "n_rows": int(X.shape[0]),
        "n_users": len(np.unique(users)),
        "n_features": int(X.shape[1] * X.shape[2]),
        "user_col": "userid",
        "label_col": "label",
    }
    return Table(X, y, users, classes, list(bunch.channel_names), info)


class _PandasMetadataError(Exception):
    """The pandas metadata inside a Parquet file could not be applied."""


def _check_parquet_footer(content: bytes, path: Path) -> None:
    """Refuse, unread, a Parquet file whose footer declares more than the expansion cap."""
    try:
        check_parquet(content, str(path), hint=f"${EXPANSION_ENV}")
    except MudataLimitError as exc:
        raise DataError(str(exc)) from None
    except MudataParseError:
        pass  # not Parquet: the read says what pyarrow found


def _refuse_repeated_names(names: list[str], source: str) -> None:
    """Every column needs a name of its own: a repeated one is the user's, the label's
    or a feature's twice, and a reader would rename the second (``f0.1``), or fail."""
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        message = (
            f"{source}: column name(s) {_listed(twice)} appear more than once; give every "
            "column a name of its own"
        )
        raise DataError(message)


def _csv_header(content: bytes) -> list[str]:
    """The column names of a CSV file's first line (a BOM dropped), as written."""
    end = content.find(b"\n")
    line = (content if end < 0 else content[:end]).decode("utf-8-sig", errors="replace")
    return next(csv.reader([line.rstrip("\r")]), [])


def _parquet_frame(content: bytes, source: str) -> pd.DataFrame:
    _refuse_repeated_names(pq.read_schema(io.BytesIO(content)).names, source)
    table = pq.read_table(io.BytesIO(content))
    try:
        return table.to_pandas()
    except Exception as exc:  # damaged metadata fails with whatever pandas raises
        raise _PandasMetadataError from exc


def load_file(path: str | Path, *, user_col: str = "userid", label_col: str = "label") -> Table:
    """A user's own table from a Parquet or CSV file.

    Parameters
    ----------
    path : path
        ``.parquet``/``.pq`` or ``.csv`` file.
    user_col, label_col : str
        Names of the user and label columns; every other column is a feature.

    Returns
    -------
    Table
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv"):
        message = f"{path}: unsupported file type {suffix!r}; expected .parquet or .csv"
        raise UsageError(message)
    # Read once, through a check that refuses FIFOs and devices (which would hang
    # or never end): the same bytes are parsed and hashed.
    with open_input(path, "--data") as handle:
        try:
            content = handle.read()
        except OSError as exc:
            message = f"cannot read {path}: {exc.strerror or exc}"
            raise DataError(message) from exc
    kind = "CSV (utf-8)" if suffix == ".csv" else "Parquet"
    if suffix != ".csv":
        # The footer first: a small file of constant columns can declare millions of rows.
        _check_parquet_footer(content, path)
    else:
        # The header first: 700,000 columns take gigabytes once parsed.
        try:
            check_csv_header(content, str(path))
            check_first_row(content, path.name)
        except (MudataLimitError, MudataParseError) as exc:
            raise DataError(str(exc)) from None
        # Before pandas reads it: it would rename a second "label" to "label.1",
        # a feature holding the label.
        _refuse_repeated_names(_csv_header(content), path.name)
    try:
        if suffix == ".csv":
            # The user column as text: read as numbers, "01" and "1" (two people)
            # would become one user (a Parquet file keeps its own types).
            df = pd.read_csv(io.BytesIO(content), encoding="utf-8", dtype={user_col: str})
        else:
            df = _parquet_frame(content, path.name)
    except DataError:
        raise
    except (OSError, ValueError, pa.ArrowException, _PandasMetadataError) as exc:
        # UnicodeDecodeError, pandas' ParserError and pyarrow's ArrowInvalid are
        # ValueErrors; their text can quote the file, so it is cut short.
        cause = exc.__cause__ if isinstance(exc, _PandasMetadataError) else exc
        found = " ".join(str(cause).split())[:200] or type(cause).__name__
        message = f"cannot read {path} as {kind}: {type(cause).__name__}: {found}"
        raise DataError(message) from exc
    sha = hashlib.sha256(content).hexdigest()
    info = {
        "name": path.name,
        "source": "file",
        "path": str(path.resolve()),
        "provenance_sha256": sha,
        "licence": None,
    }
    return table_from_frame(df, user_col=user_col, label_col=label_col, info=info)


#: Suffixes that make a string name a file rather than a registered dataset.
_TABLE_SUFFIXES = (".csv", ".parquet")


def load_data(
    data: str | Path | pd.DataFrame,
    *,
    user_col: str = "userid",
    label_col: str = "label",
    input: str = "features",
    **source: Any,
) -> Table:
    """The table to evaluate, from a dataset name, a file or a DataFrame.

    A :class:`~pathlib.Path`, or a string ending in ``.csv`` or ``.parquet``, is
    a file; any other string is a registered mudata dataset, and ``source``
    (``data_home``, ``manual_dir``, ``mirror``, ``allow_unverified``,
    ``max_expansion``) says where its files come from
    (:func:`mueval.data.table.load_registered`). ``input="windows"`` takes a
    registered dataset's windows of samples instead of its features
    (:func:`load_registered_windows`).
    """
    registered = isinstance(data, str) and not data.lower().endswith(_TABLE_SUFFIXES)
    if input == "windows":
        if not registered:
            message = (
                "input windows (--input windows) needs a registered mudata dataset "
                f"(--dataset NAME), whose windows mudata stores; got {type(data).__name__} data"
            )
            raise UsageError(message)
        return load_registered_windows(data, **source)  # type: ignore[arg-type]
    if registered:
        return load_registered(data, **source)  # type: ignore[arg-type]
    given = sorted(k for k, v in source.items() if v not in (None, False))
    if given:
        message = f"{', '.join(given)} only apply to a registered dataset, not to {type(data).__name__} data"
        raise UsageError(message)
    if isinstance(data, pd.DataFrame):
        return table_from_frame(
            data,
            user_col=user_col,
            label_col=label_col,
            info={"name": "DataFrame", "source": "DataFrame"},
        )
    if isinstance(data, str | Path):
        return load_file(data, user_col=user_col, label_col=label_col)
    message = (
        f"data must be a dataset name, a .csv or .parquet path or a DataFrame; "
        f"got {type(data).__name__}"
    )
    raise UsageError(message)
