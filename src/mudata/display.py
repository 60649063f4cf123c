"""How untrusted text is shown on terminals, in logs and in CSV: escaped and capped.

File names, labels, user ids, paths and file excerpts come from files a user
was given, not from the user: a member named ``"\\x1b[2J"`` would clear the
screen, one with ``"\\r"`` or ``"\\n"`` would forge a line, one with U+202E would
print its text reversed. :func:`shown` renders such a value with every character
that is not printable (C0 and C1 controls, DEL, CR/LF, NUL, bidi overrides and
isolates, the other Unicode format characters, unassigned code points) as a
visible escape (``\\x1b``, ``\\n``, ``\\u202e``) and cut to a bounded length.

Both packages use it where they put such values into messages (mueval through
:mod:`mudata.errors`'s ``excerpt`` or directly), and both command lines pass
every message they print through it once more (keeping the message's own line
breaks and tabs), so that a value no message builder escaped is still escaped.
:func:`plain` is the same escaping for a value printed as it is, uncut and
unquoted: an entry's title, a class name, a user id in a table cell.

A CSV cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a CR is run as a
formula by a spreadsheet (CSV injection): :func:`formula_safe` prefixes ``'`` to
it, the one rule of CSV written to a file (mueval's ``--out``) and to stdout
(``--table csv``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

__all__ = [
    "EXCERPT_LIMIT",
    "FORMULA_LEADS",
    "FORMULA_QUOTE",
    "MESSAGE_LIMIT",
    "EscapingFormatter",
    "formula_safe",
    "plain",
    "shown",
]

#: At most this many characters of one untrusted value in a message.
EXCERPT_LIMIT = 200

#: At most this many characters of a whole message printed by a command line or a
#: log line: the last bound when a message quotes something no builder cut.
MESSAGE_LIMIT = 10_000

#: Leading characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_LEADS: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")

#: What :func:`formula_safe` prefixes (mueval's ``restore_formulas`` removes it).
FORMULA_QUOTE = "'"


def _escaped(text: str, keep: str) -> str:
    if text.isprintable():  # the common case, checked at C speed
        return text
    # repr's own escapes (\\n, \\r, \\x1b, \\u202e), so both forms read alike.
    parts = [c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text]
    return "".join(parts)


def shown(
    value: object, limit: int | None = EXCERPT_LIMIT, *, quote: bool = True, keep: str = ""
) -> str:
    """``value`` as safe text for a terminal or a log line: escaped, cut, quoted.

    Parameters
    ----------
    value : object
        A name, label, id, path or file excerpt. Strings and paths are shown as
        their text; anything else (a list of column names, a number) as its
        ``repr``, whose strings are escaped in the same way.
    limit : int or None, default 200
        At most this many characters of the value are shown, followed by how
        many were left out; ``None`` for no cut.
    quote : bool, default True
        In quotes, with backslashes escaped too, exactly as ``repr`` shows a
        string (so the text shown is unambiguous); ``False`` for the bare text
        with only its unprintable characters escaped.
    keep : str, default ""
        Characters shown as they are even though unprintable: a whole message
        keeps its own ``"\\n"`` and ``"\\t"``.

    Returns
    -------
    str
        Text of printable characters only (except those in ``keep``).

    Examples
    --------
    >>> shown("walk\\x1b[2J")
    "'walk\\\\x1b[2J'"
    >>> shown("abc\\u202edef", quote=False)
    'abc\\\\u202edef'
    >>> shown("x" * 300, limit=5)
    "'xxxxx'... (295 more characters)"
    """
    if isinstance(value, str | os.PathLike):
        text = os.fsdecode(value) if isinstance(value, os.PathLike) else value
    else:
        # Here the repr is built whole: values given are short (a list of column
        # names is cut by its reader, a header by the limit below).
        text = repr(value)
        quote = False
    more = len(text) - limit if limit is not None and len(text) > limit else 0
    if more:
        text = text[:limit]
    body = repr(text) if quote else text
    body = _escaped(body, keep)
    return f"{body}... ({more:,} more characters)" if more else body


def plain(value: object) -> str:
    """``value`` as it is printed in a line, a field or a table cell: escaped, whole.

    :func:`shown` without quotes or cut: every unprintable character (controls,
    ESC and so every terminal escape sequence, BEL, CR and LF, bidi overrides and
    isolates, the other format characters) becomes a visible escape; the rest
    is kept. Escaping twice changes nothing (an escape is printable text).

    Examples
    --------
    >>> plain("walk\\x1b]8;;http://x\\x07link\\r")
    'walk\\\\x1b]8;;http://x\\\\x07link\\\\r'
    >>> plain(plain("\\u202e")) == plain("\\u202e") == "\\\\u202e"
    True
    """
    return shown(value, None, quote=False)


def formula_safe(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet will not run: ``'`` before a formula lead.

    Text that starts with ``'`` already is prefixed too, so that the prefix can
    be undone exactly (mueval's ``restore_formulas``).

    Examples
    --------
    >>> [formula_safe(t) for t in ["=1+1", "walk", "'q", "@SUM(A1)"]]
    ["'=1+1", 'walk', "''q", "'@SUM(A1)"]
    """
    return FORMULA_QUOTE + text if text.startswith((*FORMULA_LEADS, FORMULA_QUOTE)) else text


class EscapingFormatter(logging.Formatter):
    """A log formatter whose lines carry no raw control or bidi character.

    The record is formatted as usual, then every unprintable character except
    the line breaks and tabs of the message itself is escaped, and the line is
    cut to :data:`MESSAGE_LIMIT` characters (a traceback keeps its lines).

    Parameters
    ----------
    *args, **kwargs
        As for :class:`logging.Formatter`.
    keep : str, default "\\n\\t"
        The characters left as they are; ``""`` for a logger whose messages are
        one line each (Pooch's), so that a line break a value holds is escaped.
    """

    def __init__(self, *args: Any, keep: str = "\n\t", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.keep = keep

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record), MESSAGE_LIMIT, quote=False, keep=self.keep)
