"""Rendering for `kata web`: the Jinja2 templates (autoescaped), Markdown (statements,
scorecards) without raw HTML, and the texts of the page in its language (the message
catalogue, `msg`)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from string import Formatter
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from attnkata.checker.messages import MESSAGES, msg
from attnkata.checker.version import __version__

HERE = Path(__file__).parent
STATIC = HERE / "static"


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["version"] = __version__
    env.filters["markdown"] = markdown
    return env


@cache
def _markdown_it() -> Any:
    from markdown_it import MarkdownIt

    # "commonmark" with tables; html=False: a statement or an answer cannot inject markup.
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def markdown(text: str) -> Markup:
    return Markup(_markdown_it().render(text or ""))


def render(template: str, lang: str, **context: Any) -> str:
    """A page in `lang`: templates call `t(key, ...)` for every text; `data` becomes the
    page's JSON block (read by its script; CSP allows no inline script)."""

    def t(key: str, **params: Any) -> str:
        return msg(key, lang, **params)

    data = context.pop("data", {})
    page_data = Markup(
        json.dumps({"lang": lang, **data}, ensure_ascii=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
    return (
        environment().get_template(template).render(t=t, lang=lang, page_data=page_data, **context)
    )


def texts(lang: str, *keys: str) -> dict[str, str]:
    """Catalogue texts a page's script shows (status lines, confirmations), their {names}
    left for the script to fill."""
    out = {}
    for key in keys:
        names = {n for text in MESSAGES[key] for _, n, _, _ in Formatter().parse(text) if n}
        out[key] = msg(key, lang, **{n: "{" + n + "}" for n in names})
    return out
