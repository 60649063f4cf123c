"""A self-contained HTML page: escaped text, tables and base64-embedded figures (SVG or PNG).

Nothing on the page refers to the network. A small inline script records, on the
``<body>``, whether every image decoded (``data-images-ok``, ``data-images``) and
any script error (``data-js-errors``), so a headless browser's ``--dump-dom`` can
check the page without a debugging protocol.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Section",
    "esc",
    "figure_html",
    "list_html",
    "note_html",
    "render_page",
    "table_html",
    "warning_html",
]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       max-width: 1200px; padding: 1em 2em; color: #222; line-height: 1.4; }
h1 { border-bottom: 2px solid #444; padding-bottom: .2em; }
h2 { border-bottom: 1px solid #aaa; margin-top: 2em; }
/* A wide table scrolls inside itself, and long unbroken text (hashes, paths, URLs)
   wraps: the page never grows wider than the window (no scrollbar at 1366 px). */
table { border-collapse: collapse; margin: .6em 0; font-size: 0.85em; display: block;
        max-width: 100%; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
p, li, figcaption, summary { overflow-wrap: anywhere; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { display: inline-block; margin: .5em; vertical-align: top; max-width: 100%; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.8em; color: #555; max-width: 640px; }
.warn { background: #fff4e5; border-left: 4px solid #e67e00; padding: .4em .8em; margin: .5em 0; }
.note { background: #eef4fb; border-left: 4px solid #4c72b0; padding: .4em .8em; margin: .5em 0; }
nav ul { columns: 2; font-size: 0.9em; }
details { margin: .4em 0; }
details.pair > summary { cursor: pointer; font-size: 1.2em; font-weight: bold; margin: .6em 0; }
table.grid td { min-width: 9em; }
table.grid td.bad { background: #fde8e8; }
ul.warnings li.error { color: #a00; }
table.warnings td.error { background: #f9d6d5; }
table.warnings td.warning { background: #fff4e5; }
table.warnings td details { margin: 0; }
table.warnings td summary { cursor: pointer; white-space: nowrap; }
table.warnings td details[open] { min-width: 24em; }
"""

_SCRIPT = """
(function () {
  var errors = [];
  var consoleError = console.error;
  console.error = function () {
    errors.push("console.error");
    if (document.body) { document.body.setAttribute("data-js-errors", String(errors.length)); }
    return consoleError.apply(console, arguments);
  };
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || (e.target && e.target.tagName) || "error"));
    if (document.body) { document.body.setAttribute("data-js-errors", String(errors.length)); }
  }, true);
  // A link to a collapsed section opens it (the grid links to every section).
  function openTarget() {
    var el = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (el && el.tagName === "DETAILS") { el.open = true; el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openTarget);
  window.addEventListener("load", openTarget);
  window.addEventListener("load", function () {
    var imgs = Array.prototype.slice.call(document.images);
    var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
    document.body.setAttribute("data-images", ok + "/" + imgs.length);
    document.body.setAttribute("data-images-ok", ok === imgs.length ? "true" : "false");
    document.body.setAttribute("data-js-errors", String(errors.length));
    // Where page one's grid ends, in CSS pixels from the top: a headless check
    // that the summary fits the first screen.
    // Whether the page is wider than the window (a horizontal scrollbar).
    document.body.setAttribute("data-page-width", String(document.documentElement.scrollWidth));
    var grid = document.querySelector("table.grid");
    if (grid) {
      var bottom = Math.ceil(grid.getBoundingClientRect().bottom + window.scrollY);
      document.body.setAttribute("data-grid-bottom", String(bottom));
    }
  });
})();
"""


def esc(text: object) -> str:
    """HTML-escape any value's text (quotes included)."""
    return html.escape(str(text), quote=True)


@dataclass
class Section:
    """A titled part of the page; ``body`` is a list of already-safe HTML fragments."""

    title: str
    anchor: str
    body: list[str] = field(default_factory=list)
    level: int = 2
    #: Rendered as a closed ``<details>`` whose id is ``anchor``.
    collapsible: bool = False


def _cell(value: object) -> str:
    if isinstance(value, float):
        text = "" if math.isnan(value) else f"{value:.4g}"  # NaN -> blank
        return f'<td class="num">{esc(text)}</td>'
    if isinstance(value, int) and not isinstance(value, bool):
        return f'<td class="num">{esc(value)}</td>'
    return f"<td>{esc(value)}</td>"


def table_html(
    headers: Sequence[str], rows: Iterable[Sequence[object]], *, caption: str = ""
) -> str:
    """A table; every header and cell escaped, floats printed to 4 significant digits."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


#: The media type of each figure format the page can embed.
_MEDIA_TYPES = {".svg": "image/svg+xml", ".png": "image/png"}


def figure_html(
    file: Path, *, alt: str, caption: str, shown: tuple[str, bytes] | None = None
) -> str:
    """An ``<img>`` with the figure embedded as base64, and its caption.

    Parameters
    ----------
    file : Path
        The figure's file (SVG or PNG: embedded as it is), named in the caption.
    shown : (suffix, bytes), optional
        What to embed instead, for a file no browser shows in an ``<img>`` (a
        PDF): the same figure as ``(".svg", bytes)`` or ``(".png", bytes)``.
    """
    path = Path(file)
    suffix, content = shown if shown is not None else (path.suffix, path.read_bytes())
    if suffix not in _MEDIA_TYPES:
        msg = (
            f"cannot embed a {suffix} figure in the page; expected one of {', '.join(_MEDIA_TYPES)}"
        )
        raise ValueError(msg)
    data = base64.b64encode(content).decode("ascii")
    return (
        f'<figure><img alt="{esc(alt)}" src="data:{_MEDIA_TYPES[suffix]};base64,{data}">'
        f"<figcaption>{esc(caption)} (file: {esc(path.name)})</figcaption></figure>"
    )


def warning_html(text: str) -> str:
    """A highlighted warning paragraph (text escaped)."""
    return f'<p class="warn">{esc(text)}</p>'


def note_html(text: str) -> str:
    """A highlighted explanatory note (text escaped)."""
    return f'<p class="note">{esc(text)}</p>'


def list_html(items: Iterable[str]) -> str:
    """A bulleted list of escaped items."""
    return "<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>"


def render_page(title: str, intro: Sequence[str], sections: Sequence[Section]) -> str:
    """The whole page: title, table of contents, sections.

    Parameters
    ----------
    title : str
    intro : sequence of str
        Safe HTML fragments placed before the contents list.
    sections : sequence of Section
    """
    toc = "".join(
        f'<li><a href="#{esc(s.anchor)}">{esc(s.title)}</a></li>' for s in sections if s.level == 2
    )
    parts = []
    for s in sections:
        if s.collapsible:
            parts.append(
                f'<details class="pair" id="{esc(s.anchor)}"><summary>{esc(s.title)}</summary>'
            )
            parts.extend(s.body)
            parts.append("</details>")
            continue
        tag = f"h{s.level}"
        parts.append(f'<section id="{esc(s.anchor)}"><{tag}>{esc(s.title)}</{tag}>')
        parts.extend(s.body)
        parts.append("</section>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{_STYLE}</style>"
        f"<script>{_SCRIPT}</script></head><body>"
        f"<h1>{esc(title)}</h1>{''.join(intro)}<nav><h2>Contents</h2><ul>{toc}</ul></nav>"
        f"{''.join(parts)}</body></html>\n"
    )
