"""What the conformal threshold is conditioned on: nothing, the class, a group of users, or both.

``condition`` (``docs/per-user-guarantees.md``, section 4):

- ``None`` (the protocol): one threshold per calibration set;
- ``"class"``: one per class (Mondrian, the same as ``mondrian=True``);
- ``"group:COLUMN"``: one per group of users, a group being a value of a
  user-level attribute (age band, device, placement);
- ``"class+group:COLUMN"``: one per (group, class).

:func:`mueval.conformal.sets.conformalize` takes the two parts as its
``mondrian`` and ``bins`` arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from mueval.errors import UsageError

__all__ = ["Condition", "parse_condition"]

_FORMS = "none, class, group[:COLUMN] or class+group[:COLUMN]"


@dataclass(frozen=True)
class Condition:
    """What the conformal threshold is conditioned on.

    Attributes
    ----------
    per_class : bool
        One threshold per class.
    by_group : bool
        One threshold per group of users.
    column : str or None
        The group attribute (None: the only column of the groups file).
    """

    per_class: bool = False
    by_group: bool = False
    column: str | None = None

    @property
    def text(self) -> str | None:
        """The canonical spelling (``run.json``'s ``condition``), None for none."""
        parts = (["class"] if self.per_class else []) + (["group"] if self.by_group else [])
        if not parts:
            return None
        text = "+".join(parts)
        return f"{text}:{self.column}" if self.by_group and self.column else text


def parse_condition(value: str | None, *, mondrian: bool = False) -> Condition:
    """Parse a ``condition`` text; ``mondrian=True`` is ``"class"``.

    Examples
    --------
    >>> parse_condition("class+group:age").text
    'class+group:age'
    >>> parse_condition(None, mondrian=True).text
    'class'
    """
    text = "" if value is None else str(value).strip()
    if text in ("", "none"):
        return Condition(per_class=mondrian)
    kind, _, column = text.partition(":")
    if kind not in ("class", "group", "class+group") or (kind == "class" and column):
        message = f"unknown condition {value!r}; valid: {_FORMS}"
        raise UsageError(message)
    if ":" in text and not column.strip():
        message = f"condition {value!r} names no column after ':'; valid: {_FORMS}"
        raise UsageError(message)
    cond = Condition(
        per_class=kind != "group", by_group="group" in kind, column=column.strip() or None
    )
    if mondrian and not cond.per_class:
        message = (
            f"mondrian (one threshold per class) and condition {value!r} disagree; give "
            f"condition 'class+{text}' for both"
        )
        raise UsageError(message)
    return cond
