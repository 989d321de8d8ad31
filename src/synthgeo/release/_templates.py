r"""The jinja2 environments of the release's documents, and the escaping each one needs.

Two environments over the templates in ``synthgeo/release/templates/`` (package data):

- :func:`html_env` for the board's report: **autoescaped**. Every value a template prints is
  escaped unless it is :class:`markupsafe.Markup` (a table or figure rendered by another
  template). Values are escaped as :func:`html.escape` does (quotes as ``&quot;``/``&#x27;``),
  the encoding the report has always used, so its bytes do not depend on the templating.
- :func:`markdown_env` for the data users' README: no HTML escaping (it is Markdown), but no
  value can break out of its place either: the filters ``md_code`` (an inline code span that
  stays one span whatever backticks the value holds), ``md_text`` (backslash-escapes the
  characters that would start HTML, a link, emphasis, code or a table cell), ``md_cell``
  (escapes ``|`` inside a table cell), ``one_line`` (a value inside a code block cannot
  start a line, so it cannot close the block) and ``pyrepr`` (a Python string literal).

Examples
--------
>>> from synthgeo.release._templates import md_code, md_text
>>> md_code("log_price")
'`log_price`'
>>> md_code("a`b")
'``a`b``'
>>> md_text("<script>|[x](y)")
'\\<script\\>\\|\\[x\\](y)'
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup

__all__ = ["html_env", "markdown_env", "md_code", "md_text", "md_cell", "one_line"]

_LINE_BREAK = re.compile(r"\s*[\r\n]+\s*")
#: Markdown characters a value must not use as syntax: HTML, links/images, emphasis, code,
#: table cells, escapes. An intraword "_" is left alone (CommonMark makes no emphasis of it).
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>&|])")


def one_line(value: Any) -> str:
    """Return ``str(value)`` with every line break (and the blanks around it) as one space."""
    return _LINE_BREAK.sub(" ", str(value))


def md_text(value: Any) -> str:
    """Return ``value`` as literal Markdown text: syntax characters backslash-escaped."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(value))


def md_code(value: Any) -> str:
    """Return ``value`` as one inline code span (CommonMark: a longer fence if it has backticks).

    The fence is one backtick longer than the longest run of backticks in the value; a value
    that starts or ends with a backtick is padded with a space, which CommonMark strips.
    """
    text = one_line(value)
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_cell(value: Any) -> str:
    """Return ``value`` for a Markdown table cell: ``|`` escaped (also inside code spans, GFM)."""
    return str(value).replace("|", r"\|")


def _html_escape(value: Any) -> Any:
    """Escape a printed value as :func:`html.escape` does; Markup passes unchanged."""
    if hasattr(value, "__html__"):
        return value
    return Markup(html.escape(str(value)))


def _loader() -> jinja2.BaseLoader:
    return jinja2.PackageLoader("synthgeo.release", "templates")


@lru_cache(maxsize=1)
def html_env() -> jinja2.Environment:
    """Return the report's environment: autoescaped HTML, undefined names are errors."""
    return jinja2.Environment(
        loader=_loader(), autoescape=True, finalize=_html_escape,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )


@lru_cache(maxsize=1)
def markdown_env() -> jinja2.Environment:
    """Return the README's environment: Markdown, no HTML escaping, the ``md_*`` filters."""
    env = jinja2.Environment(
        loader=_loader(), autoescape=False, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    env.filters.update(md_code=md_code, md_text=md_text, md_cell=md_cell, one_line=one_line,
                       pyrepr=repr)
    return env
