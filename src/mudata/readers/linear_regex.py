"""Regular expressions from a registry entry, matched in linear time.

A ``path_pattern`` comes from an entry anyone may write; Python's :mod:`re`
backtracks, and a pattern such as ``(?P<user>(?:[a-z]+\\d*)+)`` takes minutes
on a 35-character name. :func:`compile_linear` checks the pattern with
:mod:`re` (so its syntax errors read as Python's), then compiles it with RE2
(``google-re2``), whose matching time is linear in the name's length. A pattern
RE2 cannot run in linear time (back-references, look-ahead and look-behind) is
refused by name.

RE2's ``\\d``, ``\\w`` and ``\\s`` are ASCII; Python's are Unicode. They are
rewritten as Unicode classes so that a member named ``Jürgen/walk.csv`` matches
as it would with :mod:`re`. Word boundaries (``\\b``) stay ASCII.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import re2

# Python's class shorthands as RE2 Unicode classes: outside a [...] set, and
# the body to splice inside one. Negated ones have no body inside a set.
_OUTSIDE = {
    "d": r"\p{Nd}",
    "D": r"\P{Nd}",
    "w": r"[\p{L}\p{N}\p{M}_]",
    "W": r"[^\p{L}\p{N}\p{M}_]",
    "s": r"[\s\p{Z}]",
    "S": r"[^\s\p{Z}]",
}
_INSIDE = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": r"\p{L}\p{N}\p{M}_", "s": r"\s\p{Z}"}
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print its refusal on stderr; ours is the message


class PatternError(ValueError):
    """The pattern is not a regular expression, or cannot be matched in linear time."""


def _unicode_classes(text: str) -> str:
    """``text`` with ``\\d``, ``\\w``, ``\\s`` (and negations) as RE2 Unicode classes."""
    out: list[str] = []
    i, in_set = 0, False
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            code = text[i + 1]
            table = _INSIDE if in_set else _OUTSIDE
            if code in table:
                out.append(table[code])
            elif in_set and code in "WS":
                message = (
                    f"\\{code} inside a [...] set has no linear-time equivalent; write the set out"
                )
                raise PatternError(message)
            else:
                out.append(text[i : i + 2])
            i += 2
            continue
        if char == "[" and not in_set:
            in_set = True
            out.append(char)
            # A ']' first in a set (after an optional '^') is a literal.
            j = i + 1
            if j < len(text) and text[j] == "^":
                out.append("^")
                j += 1
            if j < len(text) and text[j] == "]":
                out.append("]")
                j += 1
            i = j
            continue
        if char == "]" and in_set:
            in_set = False
        out.append(char)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class LinearPattern:
    """A pattern as the entry wrote it (``pattern``) and its RE2 form, matched in linear time."""

    pattern: str
    regex: re2._Regexp

    @property
    def groupindex(self) -> Mapping[str, int]:
        """Group name to group number, as :attr:`re.Pattern.groupindex`."""
        return self.regex.groupindex

    def search(self, text: str) -> re2._Match | None:
        """The first match in ``text`` (not anchored), as :meth:`re.Pattern.search`."""
        return self.regex.search(text)


def compile_linear(text: str) -> LinearPattern:
    """``text`` compiled for linear-time matching.

    Raises
    ------
    PatternError
        Not a regular expression (Python's message), or using a construct that
        needs backtracking (back-references, look-around), named.
    """
    try:
        re.compile(text)
    except re.error as exc:
        message = f"is not a regular expression ({exc})"
        raise PatternError(message) from None
    try:
        return LinearPattern(text, re2.compile(_unicode_classes(text), options=_OPTIONS))
    except re2.error as exc:
        found = (
            exc.args[0].decode(errors="replace")
            if exc.args and isinstance(exc.args[0], bytes)
            else str(exc)
        )
        message = (
            f"cannot be matched in linear time ({found}); back-references and look-ahead or "
            f"look-behind need backtracking, which a name of a few dozen characters can "
            f"make run for hours"
        )
        raise PatternError(message) from None


__all__ = ["LinearPattern", "PatternError", "compile_linear"]
