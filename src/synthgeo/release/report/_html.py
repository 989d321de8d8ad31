"""HTML building blocks of the report: tables, embedded figures, the page shell (jinja2).

Every piece is a template in ``synthgeo/release/templates/report/`` rendered by the autoescaped
environment of :mod:`synthgeo.release._templates`: a value (a caption, a column name, an id, a
record id) is escaped wherever it lands; only HTML rendered by another template
(:class:`markupsafe.Markup`) goes in as it is. No external resource is ever referenced (no
scripts, fonts, stylesheets or images by URL): the page must open on an air-gapped machine and
cannot leak that it was opened.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

__all__ = ["Section", "table", "img", "page", "esc", "render", "CONFIDENTIAL_LINE"]

#: First line of every report (a test checks it).
CONFIDENTIAL_LINE = "<!-- CONFIDENTIAL: for the disclosure review board only; do not publish -->"


def esc(value: object) -> str:
    """HTML-escape ``str(value)``.

    Examples
    --------
    >>> esc("<b>'x'</b>")
    '&lt;b&gt;&#x27;x&#x27;&lt;/b&gt;'
    """
    return html.escape(str(value))


def render(template: str, **context: Any) -> Markup:
    """Render ``report/<template>`` with ``table`` and ``figure`` available to it.

    Parameters
    ----------
    template : str
        File name under ``synthgeo/release/templates/report/``, e.g. ``"risk.html.j2"``.
    **context
        The template's values; strings are escaped when printed.

    Returns
    -------
    markupsafe.Markup
        Safe HTML (it is not escaped again when another template prints it), without
        trailing newlines (a section's last part may be left out).
    """
    from synthgeo.release._templates import html_env

    out = html_env().get_template(f"report/{template}").render(table=table, figure=img,
                                                                 **context)
    return Markup(out.rstrip("\n"))


@dataclass(frozen=True)
class Section:
    """One report section: anchor ``id``, heading ``title``, HTML ``body`` (rendered)."""

    id: str
    title: str
    body: str


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


def _header(name: object) -> Markup:
    """Escaped column name; long snake_case names may wrap after their underscores."""
    text = Markup(esc(name))
    return text.replace("_", Markup("_<wbr>")) if len(str(name)) > 12 else text


def _numeric(v: object) -> bool:
    numeric = isinstance(v, (int, float, np.integer, np.floating))
    return numeric and not isinstance(v, (bool, np.bool_))


def table(df: pd.DataFrame, *, id: str, floatfmt: str = "{:.4g}", header: bool = True) -> Markup:  # noqa: A002
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
    markupsafe.Markup

    Examples
    --------
    >>> import pandas as pd
    >>> print(table(pd.DataFrame({"a<b": ["<i>"], "v": [0.5]}), id="t"))
    <div class='tablewrap'><table id='t'><tr><th>a&lt;b</th><th>v</th></tr>
    <tr><td>&lt;i&gt;</td><td class='num'>0.5</td></tr></table></div>
    """
    rows = []
    if header:
        rows.append([{"header": True, "text": _header(c)} for c in df.columns])
    for rec in df.itertuples(index=False):
        rows.append([{"header": False, "num": _numeric(v), "text": _fmt(v, floatfmt)}
                     for v in rec])
    return render("table.html.j2", id=id, rows=rows)


def img(uri: str, *, alt: str, id: str, caption: str = "") -> Markup:  # noqa: A002
    """Return an embedded figure: ``<figure><img src="data:..."></figure>`` with a caption.

    The caption is text (escaped), like ``alt`` and ``id``.

    Raises
    ------
    ValueError
        If ``uri`` is not a ``data:image/`` URI (the report never links out).

    Examples
    --------
    >>> html = img("data:image/png;base64,AA", alt="a", id="f", caption="<i>")
    >>> str(html).endswith("<figcaption>&lt;i&gt;</figcaption></figure>")
    True
    """
    if not uri.startswith("data:image/"):
        raise ValueError("report images must be embedded data: URIs")
    return render("figure.html.j2", uri=uri, alt=alt, id=id, caption=caption)


def page(*, title: str, sections: list[Section], skipped: list[str], source: object,
         n_records: int, n_implicates: int, failed: list[str],
         verdict_failed: list[str] = (), cross_fit: bool = False,
         signing: str | None = None, released_label: str | None = None) -> str:
    """Return the whole document: confidential first line, banner, contents, sections.

    Parameters
    ----------
    title : str
        Window title.
    sections : list of Section
        In order.
    skipped : list of str
        Titles of sections whose stage did not run (listed, not shown).
    source : path or None
        The spec file, shown under the heading.
    n_records, n_implicates : int
        N and L, shown under the heading.
    failed : list of str
        Fits that did not converge: the page then says it is a preview only.
    verdict_failed : list of str, default=()
        The verdicts that are FAIL ("location", "risk"): the heading says so, in words.
    cross_fit : bool, default=False
        ``[synthesis] predictive = "cross_fit"``: the page says that no restricted model was
        fitted and that "restricted" means the released, cross-fitted implicates.
    signing : str, optional
        Whether release.json is signed (HMAC) or unsigned and why, and the register, in words
        (under the heading).
    released_label : str, optional
        How the released implicates were made
        (:func:`synthgeo.pipeline.released.released_label`), under the heading; default: "the
        restricted model".

    Returns
    -------
    str
    """
    return str(render("page.html.j2", signing=signing,
                      confidential_line=Markup(CONFIDENTIAL_LINE), title=title,
                      sections=sections, skipped=skipped, source=source, n_records=n_records,
                      n_implicates=n_implicates, failed=failed,
                      verdict_failed=list(verdict_failed), cross_fit=cross_fit,
                      released_label=released_label))
