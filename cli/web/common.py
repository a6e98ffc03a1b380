"""What every handler of `kata web` shares: the page's language, JSON bodies and answers,
errors as clear messages (never a traceback), and a result laid out for the page."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from attnkata.checker.errors import KataError, UnknownKataError
from attnkata.checker.messages import msg
from attnkata.cli.web import pages
from attnkata.cli.web.files import SaveRefused
from attnkata.cli.web.security import MAX_BODY, BodyTooLarge

log = logging.getLogger("attnkata.web")
LANG_COOKIE = "attnkata-lang"
MAX_DIAGNOSES = 4


def lang_of(request: Request) -> str:
    asked = request.query_params.get("lang") or request.cookies.get(LANG_COOKIE)
    return asked if asked in ("en", "zh") else request.app.state.config.lang


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    lang = lang_of(request)
    config = request.app.state.config
    response = HTMLResponse(
        pages.render(
            template, lang, instructor=config.instructor, path=request.url.path, **context
        ),
        status_code=status,
    )
    if request.query_params.get("lang") in ("en", "zh"):
        response.set_cookie(LANG_COOKIE, lang, samesite="strict", httponly=True)
    return response


def error_page(
    request: Request, status: int, message: str, hint: str | None = None
) -> HTMLResponse:
    return page(request, "error.html", status=status, message=message, hint=hint)


def answer(data: dict[str, Any], status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)


def refuse(request: Request, status: int, key: str, **params: Any) -> JSONResponse:
    return answer({"error": msg(key, lang_of(request), **params)}, status)


async def body(request: Request) -> dict[str, Any]:
    """The request's JSON object; BadInput when it is not one."""
    try:
        raw = await request.body()
    except BodyTooLarge:
        raise BadInput("web.too_large", 413, limit=MAX_BODY // (1024 * 1024)) from None
    try:
        data = json.loads(raw or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadInput("web.bad_json", 400) from None
    if not isinstance(data, dict):
        raise BadInput("web.bad_json", 400)
    return data


def text_field(data: dict[str, Any], name: str = "text") -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise BadInput("web.bad_json", 400)
    return value


class BadInput(Exception):
    def __init__(self, key: str, status: int = 400, **params: Any) -> None:
        super().__init__(key)
        self.key, self.status, self.params = key, status, params


Handler = Callable[[Request], Awaitable[Response]]


def api(handler: Handler) -> Handler:
    """An endpoint answering JSON: bad input and the checker's errors become a message with a
    4xx status; anything else a 500 with its one line (the log has the traceback). The server
    goes on serving."""

    @wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except (BadInput, SaveRefused) as exc:
            return refuse(request, exc.status, exc.key, **exc.params)
        except KataError as exc:
            return answer(
                {"error": exc.message, "hint": exc.hint},
                404 if isinstance(exc, UnknownKataError) else 400,
            )
        except Exception as exc:  # noqa: BLE001 - one request failed; the server keeps serving
            log.exception("request failed: %s", request.url.path)
            return answer(
                {
                    "error": msg(
                        "web.internal", lang_of(request), error=f"{type(exc).__name__}: {exc}"
                    )
                },
                500,
            )

    return wrapped


def html_page(handler: Handler) -> Handler:
    """A page: the checker's errors (an unknown kata, with the closest ids) as an error page."""

    @wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except KataError as exc:
            status = 404 if isinstance(exc, UnknownKataError) else 400
            return error_page(request, status, exc.message, exc.hint)
        except Exception as exc:  # noqa: BLE001
            log.exception("page failed: %s", request.url.path)
            return error_page(
                request,
                500,
                msg("web.internal", lang_of(request), error=f"{type(exc).__name__}: {exc}"),
            )

    return wrapped


def result_view(result: dict[str, Any], source: str, lang: str) -> dict[str, Any]:
    """A Result (as JSON) laid out for templates/_result.html: the verdict, the tiers, the
    failing tests, the diagnosis cards with the candidate's lines and pictures."""
    from attnkata.checker.html import pictures_html
    from attnkata.checker.models import SEVERITIES, Result, excerpt_blocks
    from attnkata.checker.textsafe import clean, clean_data

    r = clean_data(Result.from_dict(result))
    lines = clean(source).splitlines()
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    diags = sorted(r.diagnostics, key=lambda d: rank.get(d.severity, 9))[:MAX_DIAGNOSES]
    cards = []
    for d in diags:
        excerpt = [
            [(n, lines[n - 1], n in marked) for n in range(lo, hi + 1)]
            for lo, hi, marked in excerpt_blocks(d.source[:3], len(lines))
        ]
        cards.append(
            {
                "d": d,
                "lines": sorted({ref.line for ref in d.source if 0 < ref.line <= len(lines)}),
                "excerpt": excerpt,
                "pictures": Markup(pictures_html(d, lang)),
            }
        )
    counts = r.tier_counts()
    failing = [t for t in r.tests if t.status not in ("pass", "skip")]
    return {
        "r": r,
        "tiers": [(tier, p, n) for tier, (p, n) in counts.items()],
        "passed": sum(p for p, _ in counts.values()),
        "total": sum(n for _, n in counts.values()),
        "failing": failing,
        "explained": any(c["d"].severity in ("essential", "actionable") for c in cards),
        "cards": cards,
        "marks": [
            {"line": n, "id": c["d"].id, "title": c["d"].title}
            for c in cards
            if c["d"].severity in ("essential", "actionable")
            for n in c["lines"]
        ],
    }
