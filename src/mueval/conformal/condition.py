"""What the conformal threshold is conditioned on: nothing, the class, a cohort of users, or both.

``condition`` (``docs/per-user-guarantees.md``, section 4):

- ``None`` (the protocol): one threshold per calibration set;
- ``"class"``: one per class (Mondrian, the same as ``mondrian=True``);
- ``"cohort:COLUMN"``: one per cohort of users, a cohort being the users who
  share a value of a user-level attribute (age band, device, placement);
- ``"class+cohort:COLUMN"``: one per (cohort, class).

("groups", in scikit-learn's sense, are the user ids of the rows; a cohort is
a set of users.)

:func:`mueval.conformal.sets.conformalize` takes the two parts as its
``mondrian`` and ``bins`` arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from mueval.errors import UsageError

__all__ = ["Condition", "parse_condition"]

_FORMS = "none, class, cohort[:COLUMN] or class+cohort[:COLUMN]"


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
        The user attribute (None: the only column of the cohorts file).
    """

    per_class: bool = False
    by_cohort: bool = False
    column: str | None = None

    @property
    def text(self) -> str | None:
        """The canonical spelling (``run.json``'s ``condition``), None for none."""
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
