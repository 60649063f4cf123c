"""What the conformal threshold is conditioned on: nothing, the class, a cohort of users, or both.

``condition`` (``docs/per-user-guarantees.md``, section 4):

- ``None`` (the protocol): one threshold per calibration set;
- ``"class"``: one per class (Mondrian, the same as ``mondrian=True``);
- ``"cohort:COLUMN"``: one per cohort of users, a cohort being the users who
  share a value of a user-level attribute (age band, device, placement);
- ``"class+cohort:COLUMN"``: one per (cohort, class);
- ``"cohorts:COL1,COL2,..."``: a threshold per test row from a quantile
  regression of the scores on the indicators of every cohort of every column
  (Gibbs, Cherian and Candès 2023; :mod:`mueval.conformal.conditional_quantile`),
  which covers every cohort of every column at once; a term ``COL1*COL2``
  adds the cells of their intersection.

("groups", in scikit-learn's sense, are the user ids of the rows; a cohort is
a set of users.)

:func:`mueval.conformal.sets.conformalize` takes the two parts as its
``mondrian`` and ``bins`` arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from mueval.errors import UsageError

__all__ = ["Condition", "parse_condition"]

_FORMS = "none, class, cohort[:COLUMN], class+cohort[:COLUMN] or cohorts:COL1,COL2,..."

#: The most terms a ``cohorts:`` condition may name.
MAX_TERMS = 16


@dataclass(frozen=True)
class Condition:
    """What the conformal threshold is conditioned on.

    Attributes
    ----------
    per_class : bool
        One threshold per class.
    by_cohort : bool
        One threshold per cohort of users.
    column : str or None
        The user attribute (None: the only column of the cohorts file, or
        several under ``terms``).
    terms : tuple of tuple of str
        ``cohorts:`` only: the groups of the quantile regression, each term the
        columns whose joint values are its cohorts (``("sex",)``,
        ``("sex", "age")`` for ``sex*age``); empty otherwise.
    """

    per_class: bool = False
    by_cohort: bool = False
    column: str | None = None
    terms: tuple[tuple[str, ...], ...] = ()

    @property
    def regression(self) -> bool:
        """Whether the thresholds come from the conditional quantile regression."""
        return bool(self.terms)

    @property
    def columns(self) -> tuple[str, ...]:
        """The cohort columns the terms use, in order of first use."""
        return tuple(dict.fromkeys(c for term in self.terms for c in term))

    @property
    def text(self) -> str | None:
        """The canonical spelling (``run.json``'s ``condition``), None for none."""
        if self.terms:
            return "cohorts:" + ",".join("*".join(term) for term in self.terms)
        parts = (["class"] if self.per_class else []) + (["cohort"] if self.by_cohort else [])
        if not parts:
            return None
        text = "+".join(parts)
        return f"{text}:{self.column}" if self.by_cohort and self.column else text


def parse_condition(value: str | None, *, mondrian: bool = False) -> Condition:
    """Parse a ``condition`` text; ``mondrian=True`` is ``"class"``.

    Examples
    --------
    >>> parse_condition("class+cohort:age").text
    'class+cohort:age'
    >>> parse_condition(None, mondrian=True).text
    'class'
    """
    text = "" if value is None else str(value).strip()
    if text in ("", "none"):
        return Condition(per_class=mondrian)
    kind, _, column = text.partition(":")
    if kind.strip() == "cohorts":
        return _cohorts(text, column, mondrian)
    if kind not in ("class", "cohort", "class+cohort") or (kind == "class" and column):
        message = f"unknown condition {value!r}; valid: {_FORMS}"
        raise UsageError(message)
    if ":" in text and not column.strip():
        message = f"condition {value!r} names no column after ':'; valid: {_FORMS}"
        raise UsageError(message)
    cond = Condition(
        per_class=kind != "cohort", by_cohort="cohort" in kind, column=column.strip() or None
    )
    if mondrian and not cond.per_class:
        message = (
            f"mondrian (one threshold per class) and condition {value!r} disagree; give "
            f"condition 'class+{text}' for both"
        )
        cli = (
            f"--mondrian (one threshold per class) and --condition {value!r} disagree; give "
            f"--condition 'class+{text}' for both"
        )
        raise UsageError(message, cli={message: cli})
    return cond


def _cohorts(value: str, spec: str, mondrian: bool) -> Condition:
    """``cohorts:COL1,COL2*COL3,...``: the terms of the quantile regression."""
    if mondrian:
        message = (
            f"condition {value!r} (the conditional quantile regression) has no per-class form; "
            "drop mondrian or use class+cohort:COLUMN"
        )
        raise UsageError(message, cli={message: message.replace("mondrian", "--mondrian")})
    terms = []
    for part in spec.split(","):
        term = tuple(c.strip() for c in part.split("*"))
        if not all(term):
            message = (
                f"condition {value!r}: an empty column name in term {part.strip()!r}; "
                "give cohorts:COL1,COL2,... (COL1*COL2 for their intersection)"
            )
            raise UsageError(message)
        if len(set(term)) != len(term):
            message = f"condition {value!r}: term {part.strip()!r} names a column twice"
            raise UsageError(message)
        terms.append(term)
    if len(set(terms)) != len(terms):
        message = f"condition {value!r} names a term twice"
        raise UsageError(message)
    if len(terms) > MAX_TERMS:
        message = f"condition {value!r}: {len(terms)} terms, more than the {MAX_TERMS} allowed"
        raise UsageError(message)
    return Condition(by_cohort=True, terms=tuple(terms))
