"""How untrusted text is shown on terminals and in logs: escaped and capped.

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
"""

from __future__ import annotations

import logging
import os

__all__ = ["EXCERPT_LIMIT", "MESSAGE_LIMIT", "EscapingFormatter", "shown"]

#: At most this many characters of one untrusted value in a message.
EXCERPT_LIMIT = 200

#: At most this many characters of a whole message printed by a command line or a
#: log line: the last bound when a message quotes something no builder cut.
MESSAGE_LIMIT = 10_000


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


class EscapingFormatter(logging.Formatter):
    """A log formatter whose lines carry no raw control or bidi character.

    The record is formatted as usual, then every unprintable character except
    the line breaks and tabs of the message itself is escaped, and the line is
    cut to :data:`MESSAGE_LIMIT` characters (a traceback keeps its lines).
    """

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record), MESSAGE_LIMIT, quote=False, keep="\n\t")
