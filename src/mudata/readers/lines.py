"""Preambles and line shapes of delimited text, as published: :func:`prepare_lines`.

Four ``reader_options`` of the generic readers say how a file's lines are
written before pandas parses them:

* ``skip_lines`` (integer) -- lines at the top of the file that are not data
  (a title, ARFF's ``@relation`` ... ``@data`` markers);
* ``comment`` (``"#"``, ``"%"``, ``"//"``, ...) -- lines starting with it
  (after spaces) are not data, wherever they are;
* ``header_line`` -- where the column names are: a line number of the file
  (1-based, every line counted), or ``"last-comment"`` for the last comment
  line before the data (``#timestamp(ns),x,y,z``); its comment mark is
  removed, and the lines before it are not data;
* ``line_end`` (``";"``, ...) -- a terminator every line carries before its
  line break, removed (else ``1;2;3;`` would give an empty fourth column,
  or shift every row against a header without it).

A byte-order mark, CRLF line breaks and values padded with spaces need no
option: the parser reads them as published.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mudata.entry import DatasetEntry
from mudata.errors import ParseError, Reason, RegistryError, excerpt

#: ``header_line``'s value naming the last comment line before the data.
LAST_COMMENT = "last-comment"
_BOM = "\ufeff"


@dataclass(frozen=True)
class LineOptions:
    """The checked line options of an entry (see the module docstring)."""

    skip_lines: int = 0
    comment: str | None = None
    header_line: int | str | None = None
    line_end: str | None = None

    @property
    def preamble(self) -> bool:
        """Whether the data start after lines that are dropped (a file must be read whole)."""
        return bool(self.skip_lines or self.comment or self.header_line is not None)

    @property
    def any(self) -> bool:
        """Whether any line option is set."""
        return self.preamble or bool(self.line_end)


def line_options(entry: DatasetEntry) -> LineOptions:
    """The entry's line options, checked (:func:`checked_line_options`)."""
    where = f"invalid registry entry '{entry.name}'" + (
        f" ({entry.source})" if entry.source else ""
    )
    return checked_line_options(entry.reader_options, where)


def checked_line_options(options: Mapping[str, Any], where: str) -> LineOptions:
    """The line options among ``options`` (reader options), checked.

    Raises
    ------
    RegistryError
        A value of the wrong type or range, naming the field after ``where``;
        ``header_line`` with ``header = false``, or ``"last-comment"`` without
        ``comment``.
    """

    def fail(key: str, what: str) -> RegistryError:
        return RegistryError(
            f"{where}: field 'reader_options.{key}': {excerpt(options[key])} {what}",
            reason=Reason("invalid", key),
        )

    skip = options.get("skip_lines", 0)
    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
        raise fail("skip_lines", "is not a whole number of lines (0 or more)")
    texts = {}
    for key in ("comment", "line_end"):
        value = options.get(key)
        if value is not None and (
            not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value
        ):
            raise fail(key, "is not a mark of one or more characters on one line")
        texts[key] = value
    header_line = options.get("header_line")
    if header_line is not None:
        if header_line == LAST_COMMENT:
            if texts["comment"] is None:
                raise fail("header_line", "needs reader_options.comment (the comment mark)")
        elif isinstance(header_line, bool) or not isinstance(header_line, int) or header_line < 1:
            raise fail("header_line", f"is not a line number (1 or more) or {LAST_COMMENT!r}")
        if options.get("header", True) is False:
            raise fail("header_line", "names a header line, but header = false")
    return LineOptions(skip, texts["comment"], header_line, texts["line_end"])


def _comment_line(line: str, comment: str | None) -> bool:
    return comment is not None and line.lstrip(" \t").startswith(comment)


def _uncommented(line: str, comment: str | None) -> str:
    stripped = line.lstrip(" \t")
    if comment is not None and stripped.startswith(comment):
        return stripped[len(comment) :].strip()
    return line.strip()


def prepare_lines(
    text: str, member: str, options: LineOptions, separator: str | None = None
) -> str:
    """``text`` (a member's decoded lines) as plain delimited text: header (if any), then data.

    A header taken from ``header_line`` loses the spaces around its
    ``separator`` (``% TimeStamp; Sample No; X-Axis``: the names are
    ``TimeStamp``, ``Sample No`` and ``X-Axis``); values keep theirs (numbers
    padded with spaces read as numbers).

    Raises
    ------
    ParseError
        The file has fewer lines than ``header_line`` or ``skip_lines`` say, or
        no comment line before the data for ``header_line = "last-comment"``.
    """
    text = text.removeprefix(_BOM)
    if options.line_end:
        # The terminator before each line break (and at the very end), spaces after it allowed.
        text = re.sub(re.escape(options.line_end) + r"[ \t]*(?=\r?\n|\Z)", "", text)
    if not options.preamble:
        return text
    # The preamble, line by line: only its lines are split (the data may be large).
    position = 0
    number = 0  # lines passed
    header = None
    last_comment = None
    wanted = options.header_line if isinstance(options.header_line, int) else 0
    while position < len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end + 1
        line = text[position:end]
        is_comment = _comment_line(line, options.comment)
        if number + 1 == wanted:
            header = _uncommented(line, options.comment)
        elif number >= max(options.skip_lines, wanted) and not is_comment and line.strip():
            break  # the first data line
        if is_comment and number >= options.skip_lines:
            last_comment = line
        number += 1
        position = end
    if wanted and header is None:
        message = (
            f"{member}: reader_options.header_line is {wanted}, but the file has {number} line(s)"
        )
        raise ParseError(message, reason=Reason("invalid", "header_line"))
    if options.header_line == LAST_COMMENT:
        if last_comment is None:
            message = (
                f"{member}: reader_options.header_line is {LAST_COMMENT!r}, but no line "
                f"starting with {options.comment!r} comes before the data"
            )
            raise ParseError(message, reason=Reason("invalid", "header_line"))
        header = _uncommented(last_comment, options.comment)
    body = text[position:]
    if options.comment:
        body = re.sub(r"(?m)^[ \t]*" + re.escape(options.comment) + r"[^\n]*(?:\n|\Z)", "", body)
    if header is None:
        return body
    if separator:
        header = re.sub(r"[ \t]*" + re.escape(separator) + r"[ \t]*", separator, header)
    return header + "\n" + body
