"""HTML building blocks of the report: escaped tables, embedded images, the page shell.

No external resource is ever referenced (no scripts, fonts, stylesheets or images by URL):
the page must open on an air-gapped machine and cannot leak that it was opened.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Section", "table", "img", "page", "esc", "CONFIDENTIAL_LINE"]

#: First line of every report (a test checks it).
CONFIDENTIAL_LINE = "<!-- CONFIDENTIAL: for the disclosure review board only; do not publish -->"

_CSS = """
body{font-family:system-ui,sans-serif;max-width:78em;margin:1.5em auto;padding:0 1em;
line-height:1.45;color:#222}
h1{margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.8em 0;font-size:.9em}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.tablewrap{overflow-x:auto;max-width:100%}
.conf{background:#fee;border:2px solid #c00;padding:.5em .8em;font-weight:bold}
.keyfig{background:#f6f9fc;border:1px solid #9bb;padding:.6em 1em;margin:1em 0}
.keyfig td{border:none;padding:.1em .8em .1em 0}
.warn{color:#a00;font-weight:bold}.ok{color:#070;font-weight:bold}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.85em;color:#444;max-width:60em}
nav ol{columns:2;font-size:.9em}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;
font-size:.8em}.note{font-size:.9em;color:#555}
"""


def esc(value: object) -> str:
    """HTML-escape ``str(value)``."""
    return html.escape(str(value))


@dataclass(frozen=True)
class Section:
    """One report section: anchor ``id``, heading ``title``, HTML ``body``."""

    id: str
    title: str
    body: str

    def to_html(self) -> str:
        """Return the section as ``<section>`` HTML."""
        return (f"<section id='{esc(self.id)}'><h2>{esc(self.title)}</h2>\n{self.body}\n"
                "</section>")


def _fmt(v: object, floatfmt: str) -> str:
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return "—"
        if np.isinf(v):
            return "∞" if v > 0 else "−∞"
        return floatfmt.format(v)
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    return str(v)


def _header(name: object) -> str:
    """Escaped column name; long snake_case names may wrap after their underscores."""
    text = esc(name)
    return text.replace("_", "_<wbr>") if len(str(name)) > 12 else text


def _cls(v: object) -> str:
    numeric = isinstance(v, (int, float, np.integer, np.floating))
    return " class='num'" if numeric and not isinstance(v, (bool, np.bool_)) else ""


def table(df: pd.DataFrame, *, id: str, floatfmt: str = "{:.4g}", header: bool = True) -> str:  # noqa: A002
    """Render ``df`` as an escaped HTML table with ``id`` (no index).

    Parameters
    ----------
    df : pandas.DataFrame
    id : str
        The table's HTML id (tests and readers find tables by it).
    floatfmt : str, default="{:.4g}"
        Format of floats; NaN shows as an em dash, infinity as ∞.
    header : bool, default=True
        Show the column names.

    Returns
    -------
    str
    """
    rows = []
    if header:
        rows.append("<tr>" + "".join(f"<th>{_header(c)}</th>" for c in df.columns) + "</tr>")
    for rec in df.itertuples(index=False):
        rows.append("<tr>" + "".join(
            f"<td{_cls(v)}>{esc(_fmt(v, floatfmt))}</td>" for v in rec) + "</tr>")
    return (f"<div class='tablewrap'><table id='{esc(id)}'>" + "\n".join(rows)
            + "</table></div>")


def img(uri: str, *, alt: str, id: str, caption: str = "") -> str:  # noqa: A002
    """Return an embedded figure: ``<figure><img src="data:..."></figure>`` with a caption.

    Raises
    ------
    ValueError
        If ``uri`` is not a ``data:image/`` URI (the report never links out).
    """
    if not uri.startswith("data:image/"):
        raise ValueError("report images must be embedded data: URIs")
    cap = f"<figcaption>{caption}</figcaption>" if caption else ""
    return f"<figure><img id='{esc(id)}' src='{uri}' alt='{esc(alt)}'>{cap}</figure>"


def page(*, title: str, subtitle: str, sections: list[Section], skipped: list[str]) -> str:
    """Return the whole document: confidential first line, banner, contents, sections.

    Parameters
    ----------
    title : str
        Window title.
    subtitle : str
        HTML shown under the heading.
    sections : list of Section
        In order.
    skipped : list of str
        Titles of sections whose stage did not run (listed, not shown).

    Returns
    -------
    str
    """
    toc = "".join(f"<li><a href='#{esc(s.id)}'>{esc(s.title)}</a></li>" for s in sections)
    skip = ("<p class='note'>Not in this report (their stage did not run): "
            + esc(", ".join(skipped)) + ".</p>") if skipped else ""
    return "\n".join([
        CONFIDENTIAL_LINE,
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
        "<p class='conf' id='confidential-banner'>CONFIDENTIAL — contains true values and "
        "figures computed from them. For the disclosure review board only; not part of the "
        "release and never to be published.</p>",
        f"<h1>synthgeo release report</h1><p>{subtitle}</p>",
        f"<nav><ol>{toc}</ol></nav>{skip}",
        *(s.to_html() for s in sections),
        "</body></html>",
    ])
