"""report.html: the report as one self-contained page (plots embedded, tables sortable).

The page is built from the Markdown of :func:`parcv.report.text.render_report`
(the subset it writes: headings, paragraphs, pipe tables, images, ``**bold**``,
``code`` and links), with the estimate and its standard error in a box at the top.
Every PNG is embedded as a ``data:`` URI, so the file opens with nothing beside it.

The page shows no file but the plots parcv drew for it, and links only to the web:
an image line embeds only a plot it is given (never a file it names), a link is one
only to an ``http(s)`` address, and a line escaped with a backslash (as a spec's
description is) is a paragraph of text.
"""

from __future__ import annotations

import base64
import html
import re
import string
from collections.abc import Mapping

__all__ = ["render_html"]

_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 70rem; margin: 2rem auto;
       padding: 0 1rem; color: #1a1a1a; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem;
     border-bottom: 1px solid #ccc; }
.headline { font-size: 1.3rem; background: #eef4fb; border-left: 5px solid #2a6fb0;
            padding: .7rem 1rem; margin: 1rem 0; }
.headline small { display: block; font-size: .85rem; color: #444; }
table { border-collapse: collapse; margin: .6rem 0; }
th, td { border: 1px solid #ccc; padding: .25rem .6rem; vertical-align: top; }
th { background: #f3f3f3; cursor: pointer; user-select: none; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #fafafa; }
code { font-size: .85em; background: #f3f3f3; padding: 0 .2em; word-break: break-all; }
img { max-width: 100%; display: block; margin: 1rem 0; border: 1px solid #ddd; }
"""

# Click a column header to sort its table by that column (numbers as numbers).
_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th, col) {
  th.title = "click to sort";
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0];
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var up = th.dataset.order !== "up";
    th.dataset.order = up ? "up" : "down";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[index].textContent, y = b.cells[index].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var r = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return up ? r : -r;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
"""


# A Markdown link to a web address; a quote or space ends the address, so that it cannot
# close the href attribute (the text is escaped before, with quote=False).
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^\s()\"']+)\)")


def _inline(text: str) -> str:
    """Escape, then render ``**bold**``, ```code``` spans and links to http(s) addresses."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    return _LINK.sub(r'<a href="\2">\1</a>', out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    head, align, *rows = lines
    right = [c.endswith(":") for c in _cells(align)]
    names = _cells(head)
    out = ['<table class="sortable">']
    if any(names):
        out.append(
            "<thead><tr>" + "".join(f"<th>{_inline(n)}</th>" for n in names) + "</tr></thead>"
        )
    out.append("<tbody>")
    for row in rows:
        cells = _cells(row)
        out.append(
            "<tr>"
            + "".join(
                f'<td class="num">{_inline(c)}</td>'
                if i < len(right) and right[i]
                else f"<td>{_inline(c)}</td>"
                for i, c in enumerate(cells)
            )
            + "</tr>"
        )
    return "\n".join([*out, "</tbody></table>"])


def _image(alt: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def render_html(
    markdown: str, images: Mapping[str, bytes], headline: tuple[str, str] = ("", "")
) -> str:
    """Render the report's Markdown as one HTML page with its plots embedded.

    Parameters
    ----------
    markdown : str
        report.md as :func:`parcv.report.text.render_report` writes it.
    images : mapping of str to bytes
        The PNG plots parcv drew for the report, by the file name the Markdown
        gives them. An image line naming anything else is shown as its text:
        the page never embeds a file it reads.
    headline : (str, str), default=("", "")
        The estimate ± se, and what it is, shown in a box at the top.

    Returns
    -------
    str

    Examples
    --------
    >>> page = render_html("# run\\n\\n| a | b |\\n| --- | ---: |\\n| x | 1.5 |\\n", {},
    ...                    ("score: 0.9 ± 0.01", "mean ± se over 5 outer folds"))
    >>> "<title>run</title>" in page, '<td class="num">1.5</td>' in page
    (True, True)
    >>> page = render_html("# run\\n\\n![secret](/etc/hostname)\\n", {})
    >>> "<p>![secret](/etc/hostname)</p>" in page
    True
    """
    lines = markdown.splitlines()
    title = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("# ") else "parcv run"
    body: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            body.append(_table(block))
            continue
        image = re.fullmatch(r"!\[([^\]]*)\]\(([^)]+)\)", line.strip())
        if image and image.group(2) in images:
            body.append(_image(image.group(1), images[image.group(2)]))
        elif line[:1] == "\\" and line[1:2] in string.punctuation:  # text, as it reads
            body.append(f"<p>{_inline(line[1:])}</p>")
        elif line.startswith("## "):
            body.append(f"<h2>{_inline(line[3:])}</h2>")
        elif line.startswith("# "):
            body.append(f"<h1>{_inline(line[2:])}</h1>")
            if headline[0]:
                body.append(
                    f'<div class="headline">{_inline(headline[0])}'
                    f"<small>{_inline(headline[1])}</small></div>"
                )
        elif line.startswith("- "):
            body.append(f"<ul><li>{_inline(line[2:])}</li></ul>")
        elif line.strip():
            body.append(f"<p>{_inline(line)}</p>")
        i += 1
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + f"\n<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )
