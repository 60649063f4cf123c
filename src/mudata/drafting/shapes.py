"""``mudata init``, step 2': the preamble and line shape of delimited text, from its head.

What comes before the data is found line by line from the top: blank lines,
comment blocks (lines starting with ``#``, ``%`` or ``//``) and marker lines
(``@relation``, ``@attribute``, ``@DATA``: ARFF's and the like). Then:

* a terminator every data line carries before its line break (``1;2;3;``)
  is ``line_end``;
* the separator and decimal mark are sniffed on the data lines alone;
* the header is the first data line when it holds words, or else the last
  comment line when it splits into as many fields as a data line and holds
  words (``#timestamp(ns),x,y,z``; ``% TimeStamp; Sample No; X-Axis; ...``).

The result names the reader options (:mod:`mudata.readers.lines`) that read
the file as published, with a note for each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mudata.readers.delimited import sniff_delimited
from mudata.readers.lines import LAST_COMMENT

COMMENT_MARKS = ("//", "#", "%")
_MARKER = re.compile(r"^@[A-Za-z]")
_TERMINATORS = (";", ",", "|")


@dataclass
class Shape:
    """How a delimited text is laid out (:func:`text_shape`)."""

    separator: str | None = None
    decimal: str = "."
    header: bool = False
    fields: list[str] = field(default_factory=list)  # the header's, or the first data line's
    skip_lines: int = 0
    comment: str | None = None
    header_line: str | None = None
    line_end: str | None = None
    notes: dict[str, str] = field(default_factory=dict)

    def options(self) -> dict[str, object]:
        """The line options that differ from the defaults."""
        pairs = {
            "skip_lines": self.skip_lines or None,
            "comment": self.comment,
            "header_line": self.header_line,
            "line_end": self.line_end,
        }
        return {k: v for k, v in pairs.items() if v is not None}


def _comment_mark(line: str) -> str | None:
    stripped = line.lstrip(" \t")
    return next((m for m in COMMENT_MARKS if stripped.startswith(m)), None)


def _split(line: str, separator: str | None) -> list[str]:
    parts = line.split(separator) if separator else line.split()
    return [p.strip().strip('"') for p in parts]


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", "."))
    except ValueError:
        return False
    return True


def _numbers_only(fields: list[str]) -> bool:
    return all(_is_number(f) for f in fields if f)


def _names(candidate: list[str], row: list[str] | None) -> bool:
    """Whether ``candidate`` names the columns of ``row`` (the next data line, if any):
    a word where the row holds a number (a text column such as a label has
    words on every line, so words alone do not make a header)."""
    if row is None or len(row) != len(candidate):
        return not _numbers_only(candidate)
    return any(
        c and not _is_number(c) and _is_number(v) for c, v in zip(candidate, row, strict=True)
    )


def _ending(lines: list[str]) -> str | None:
    """The terminator every one of ``lines`` ends with, if any."""
    ends = {line.rstrip(" \t")[-1:] for line in lines}
    return ends.pop() if len(ends) == 1 and ends <= set(_TERMINATORS) and len(lines) > 1 else None


def text_shape(text: str) -> Shape:
    """The shape of delimited text from its first lines (``text``: a head, decoded).

    The last line of a head may be cut: it is not looked at.
    """
    lines = text.removeprefix("\ufeff").splitlines()[:400]
    if len(lines) > 1:
        lines = lines[:-1]
    shape = Shape()
    markers = 0
    comments: list[tuple[int, str]] = []
    start = 0
    for start, line in enumerate(lines):
        mark = _comment_mark(line)
        if _MARKER.match(line.strip()):
            markers = start + 1
        elif mark is not None and shape.comment in (None, mark):
            shape.comment = mark
            comments.append((start, line))
        elif line.strip():
            break
    else:
        start = len(lines)
    data = [line for line in lines[start:] if line.strip() and _comment_mark(line) is None]
    comments = [(i, c) for i, c in comments if i >= markers]
    if markers:
        shape.skip_lines = markers
        shape.notes["skip_lines"] = (
            f"{markers} line(s) before the data, marker lines among them "
            f"({lines[markers - 1].strip()[:40]!r} the last)"
        )
    if comments:
        shape.notes["comment"] = (
            f"{len(comments)} comment line(s) before the data, starting with {shape.comment!r}"
        )
    else:
        shape.comment = None
    shape.line_end = _ending(data[:50])
    if shape.line_end:
        shape.notes["line_end"] = f"every line ends with {shape.line_end!r} before its line break"
        data = [re.sub(re.escape(shape.line_end) + r"[ \t]*$", "", line) for line in data]
    shape.separator, shape.decimal = sniff_delimited("\n".join(data[:21]) + "\n")
    first = _split(data[0], shape.separator) if data else []
    second = _split(data[1], shape.separator) if len(data) > 1 else None
    shape.fields = first
    # The header line twice at the top (files joined with their headers) is a
    # header: the read then names its repeat (readers.delimited).
    twice = first == second and not _numbers_only(first)
    shape.header = bool(first) and (_names(first, second) or twice)
    if not shape.header and comments and first:
        last = comments[-1][1].lstrip(" \t")[len(shape.comment or "") :].strip()
        if shape.line_end:
            last = re.sub(re.escape(shape.line_end) + r"\s*$", "", last)
        names = _split(last, shape.separator)
        raw = _split(comments[-1][1], shape.separator)
        if len(names) == len(first) and _names(names, first) and all(names):
            shape.header, shape.fields, shape.header_line = True, names, LAST_COMMENT
            shape.notes["header_line"] = (
                f"the column names are on the last comment line ({last[:60]!r})"
            )
        elif len(comments) == 1 and len(raw) == len(first) and _names(raw, first):
            # "#,x,y,z": a header whose first column the mark names, not a comment.
            shape.header, shape.fields, shape.comment = True, raw, None
            shape.notes.pop("comment")
    return shape


__all__ = ["COMMENT_MARKS", "Shape", "text_shape"]
