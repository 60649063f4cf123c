"""The one rule for class codes and user ids: how raw values meet the registry.

Class codes
    A registry entry lists each kept class as ``{code, name}``. Raw labels are
    compared with those codes by one rule, here and nowhere else:

    * in a numeric label column (every non-blank value is a number), codes
      compare as numbers: ``"1"``, ``"1.0"``, ``"01"`` and ``1`` are one code;
    * in a text column, codes compare exactly; a code that matches a listed
      one only when case is ignored is named in the error, as a hint;
    * a blank label (missing value) is never a kept class.

    Every row whose label is not kept is counted per label (as the label is
    written in the data); a listed class that never occurs is an error naming
    it and the codes that were seen.

User ids
    Any integer or text id stays the user's name, as text; ``1.0`` read from
    a float column is ``"1"``. Ids sort numerically when all are numbers,
    otherwise as text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mudata.errors import ParseError, Reason, RegistryError, excerpt
from mudata.records.entry import DatasetEntry

if TYPE_CHECKING:
    from collections.abc import Iterable

log = logging.getLogger(__name__)

BLANK = "<blank>"


def _as_number(value: object) -> float | None:
    """``value`` as a finite float, or None when it is not a number."""
    if isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None


def number_text(number: float) -> str:
    """A number as its shortest text: ``1.0`` -> ``"1"``, ``2.5`` -> ``"2.5"``."""
    if float(number).is_integer():
        return str(int(number))
    return repr(float(number))


def code_text(value: object) -> str:
    """How a raw code is named in messages and counts (numbers in shortest form)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return BLANK
    number = _as_number(value) if not isinstance(value, str) else None
    return number_text(number) if number is not None else str(value)


def _blank(values: pd.Series) -> np.ndarray:
    blank = values.isna().to_numpy().copy()
    if values.dtype == object or pd.api.types.is_string_dtype(values):
        blank |= values.astype(str).str.strip().eq("").to_numpy(dtype=bool)
    return blank


def is_numeric_column(values: pd.Series) -> bool:
    """True when every non-blank value of ``values`` is a number."""
    if pd.api.types.is_bool_dtype(values):
        return False
    if pd.api.types.is_numeric_dtype(values):
        return True
    present = values[~_blank(values)]
    uniques = pd.unique(present)
    return len(uniques) > 0 and all(_as_number(u) is not None for u in uniques)


@dataclass
class Labelled:
    """The outcome of matching one label column with the registry's classes.

    Attributes
    ----------
    rank : ndarray of int, shape (n,)
        Position of each row's class in ``entry.classes``; -1 when not kept.
    names : ndarray of object, shape (n,)
        The class name of each kept row; None elsewhere.
    dropped : dict of str to int
        Rows of each label that is not kept, by the label as written
        (:func:`code_text`); blank labels under ``"<blank>"``.
    seen : list of str
        Every distinct label, as written.
    folded : dict of str to list of str
        Labels written differently that one number stands for, in a numeric
        label column (``{"1": ["01", "1"]}``): :func:`fold_note` says so.
    """

    rank: np.ndarray
    names: np.ndarray
    dropped: dict[str, int] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    folded: dict[str, list[str]] = field(default_factory=dict)


def folded_codes(uniques: Iterable[object], numeric: bool) -> dict[str, list[str]]:
    """The distinct labels ``uniques`` that one number stands for, by that number's text.

    In a numeric label column ``"01"``, ``"1"`` and ``"1.0"`` are one code
    (:func:`match_classes`): one class, never two. Text columns fold nothing.
    """
    if not numeric:
        return {}
    forms: dict[str, set[str]] = {}
    for value in uniques:
        number = _as_number(value)
        if number is not None:
            written = value if isinstance(value, str) else code_text(value)
            forms.setdefault(number_text(number), set()).add(written)
    return {k: sorted(v) for k, v in sorted(forms.items()) if len(v) > 1}


def fold_note(folded: dict[str, list[str]]) -> list[str]:
    """One line per class code that labels written differently share."""
    return [
        f"labels {', '.join(repr(f) for f in forms)} are one class code, {code}: "
        f"a label column of numbers compares codes as numbers"
        for code, forms in folded.items()
    ]


def log_folded(dataset: str, folded: dict[str, list[str]]) -> None:
    """A warning per class code that labels written differently share (:func:`folded_codes`)."""
    for line in fold_note(folded):
        log.warning("%s: %s", dataset, line)


def _registry_keys(entry: DatasetEntry, numeric: bool) -> dict[object, int]:
    """Each listed code as a lookup key (a float in a numeric column) to its rank."""
    keys: dict[object, int] = {}
    for rank, spec in enumerate(entry.classes):
        key: object = _as_number(spec.code) if numeric else str(spec.code)
        if key is None:
            continue  # a text code cannot match a numeric column; reported as never seen
        if key in keys:
            other = entry.classes[keys[key]]
            message = (
                f"dataset '{entry.name}': class codes {other.code!r} ({other.name}) and "
                f"{spec.code!r} ({spec.name}) are the same number, and the label column "
                f"holds numbers; give each class a different code"
            )
            raise RegistryError(message, reason=Reason("invalid", "classes"))
        keys[key] = rank
    return keys


def match_classes(
    labels: pd.Series, entry: DatasetEntry, *, where: str = "", check_seen: bool = True
) -> Labelled:
    """Match raw labels with the entry's class codes by the module's rule.

    Parameters
    ----------
    labels : Series, shape (n,)
        Raw class codes, as the reader gives them.
    entry : DatasetEntry
        Gives the classes (codes, names, order).
    where : str
        Names the data in errors (e.g. the files read).
    check_seen : bool
        Whether a listed class that never occurs is an error.

    Returns
    -------
    Labelled

    Raises
    ------
    RegistryError
        When a listed class is never seen (naming it, the codes seen, and
        a code differing only in case), or two listed codes are one number.
    """
    numeric = is_numeric_column(labels)
    blank = _blank(labels)
    codes, uniques = pd.factorize(labels, sort=False, use_na_sentinel=True)
    keys = _registry_keys(entry, numeric)
    unique_keys = [_as_number(u) if numeric else str(u) for u in uniques]
    lookup = np.array([keys.get(k, -1) for k in unique_keys] + [-1], dtype=np.int64)
    rank = lookup[codes]  # code -1 (missing) indexes the trailing -1
    rank[blank] = -1
    seen_text = [number_text(k) if isinstance(k, float) else str(k) for k in unique_keys]
    row_keys = np.array([*seen_text, BLANK], dtype=object)[codes]
    row_keys[blank] = BLANK
    counts = pd.Series(row_keys[rank < 0]).value_counts(sort=False)
    dropped = {str(k): int(v) for k, v in counts.items()}
    names = np.array([c.name for c in entry.classes] + [None], dtype=object)[rank]
    seen = sorted(set(row_keys[~blank].tolist()))
    if check_seen:
        _check_all_seen(entry, rank, seen, numeric, where)
    folded = folded_codes(uniques, numeric)
    return Labelled(rank, names, dict(sorted(dropped.items())), seen, folded)


def _check_all_seen(
    entry: DatasetEntry,
    rank: np.ndarray,
    seen_text: list[str],
    numeric: bool,
    where: str,
) -> None:
    present = set(np.unique(rank[rank >= 0]).tolist())
    absent = [c for rank, c in enumerate(entry.classes) if rank not in present]
    if not absent:
        return
    lines = []
    for spec in absent:
        hint = ""
        same_case = [
            s for s in seen_text if s.lower() == str(spec.code).lower() and s != str(spec.code)
        ]
        if same_case and not numeric:
            hint = f" (the data has {same_case[0]!r}: text codes compare exactly, and case differs)"
        elif numeric and _as_number(spec.code) is None:
            hint = " (the label column holds numbers, so a text code can never match)"
        lines.append(f"class '{spec.name}' (code {spec.code!r}){hint}")
    shown = seen_text[:30]
    more = f" and {len(seen_text) - 30} more" if len(seen_text) > 30 else ""
    message = (
        f"dataset '{entry.name}': {'; '.join(lines)} listed in [[classes]] "
        f"{'is' if len(absent) == 1 else 'are'} never seen in the data{where and ' (' + where + ')'}; "
        f"codes seen: {excerpt(shown)}{more}. Fix the code in the registry entry "
        f"(or remove the class)."
    )
    raise RegistryError(message, reason=Reason("no-match", "classes"))


def log_dropped(dataset: str, dropped: dict[str, int], total: int, what: str = "rows") -> None:
    """One info line per label not kept: how many rows it lost."""
    for code, n in dropped.items():
        log.info(
            "%s: %d of %d %s with label %r dropped (not a kept class)",
            dataset,
            n,
            total,
            what,
            code,
        )


# ----------------------------------------------------------------- user ids


def user_names(
    values: pd.Series | pd.Index | np.ndarray, *, seen: dict[str, object] | None = None
) -> np.ndarray:
    """User ids as text: integers and integral floats without a decimal part.

    Two raw ids that would get one name (``" 1"`` and ``"1"``, ``1`` and ``"1"``)
    are an error naming both, never a merge of two people.

    Parameters
    ----------
    values : Series or ndarray, shape (n,)
    seen : dict, optional
        Names already given to raw ids (name to raw id), for ids read in
        parts: a raw id of an earlier part that gets the same name as one of
        ``values`` is the same error. Updated in place.

    Returns
    -------
    ndarray of object (str), shape (n,)

    Raises
    ------
    ParseError
        Two different ids would get the same name.
    """
    series = pd.Series(values)
    codes, uniques = pd.factorize(series, sort=False, use_na_sentinel=False)
    texts = np.array(
        [code_text(u) if not isinstance(u, str) else u.strip() for u in uniques], dtype=object
    )
    if seen is not None or len(set(texts)) < len(texts):
        # Two raw ids with one name ("1" and " 1", or 1 and "1") would merge two
        # people silently: name both rather than guess.
        first: dict[str, object] = seen if seen is not None else {}
        for raw, text in zip(uniques, texts, strict=True):
            if text in first and first[text] != raw:
                message = (
                    f"user ids {excerpt(first[text])} and {excerpt(raw)} would both become "
                    f"user {excerpt(text)}; user ids are text and must differ as text"
                )
                raise ParseError(message, reason=Reason("invalid", "user_col"))
            first[text] = raw
    return texts[codes]


def user_sort_key(names: Iterable[str]) -> list[str]:
    """``names`` sorted: numerically when every one is a number, else as text."""
    names = list(dict.fromkeys(names))
    numbers = [_as_number(n) for n in names]
    if names and all(n is not None for n in numbers):
        return [n for _, n in sorted(zip(numbers, names, strict=True), key=lambda p: (p[0], p[1]))]
    return sorted(names)


__all__ = [
    "BLANK",
    "Labelled",
    "code_text",
    "fold_note",
    "folded_codes",
    "is_numeric_column",
    "log_dropped",
    "log_folded",
    "match_classes",
    "number_text",
    "user_names",
    "user_sort_key",
]
