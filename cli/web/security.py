"""The web server's guard, in front of every request (an ASGI middleware):

- the token: a random secret printed with the URL, as Jupyter does. A request carrying it
  (`?token=`, or `Authorization: token ...`) is let in, and a page opened with it sets a cookie
  for this server (HttpOnly, SameSite=Strict) and drops it from the address bar; without the
  token or the cookie every page and endpoint answers 403;
- the Host header must name this server (127.0.0.1, localhost or [::1] with its port): a page
  of another site whose name was re-pointed at 127.0.0.1 (DNS rebinding) is refused;
- a request that changes anything (POST, PUT, PATCH, DELETE) must come from this server's own
  pages: its Origin (or, without one, its Referer) must be this server's;
- bodies are capped (the checker grades files of at most 1 MiB);
- every response says the page may load nothing from anywhere else (Content-Security-Policy:
  'self' only), may not be framed, and sends no Referer.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from attnkata.checker.messages import msg

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_BODY = 2 * 1024 * 1024  # a 1 MiB file as JSON, with room for escapes
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; worker-src 'self' blob:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def cookie_name(port: int) -> str:
    return f"attnkata-token-{port}"


class Guard:
    def __init__(self, app: Any, token: str, port: int, lang: str) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.lang = lang
        self.hosts = {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]")}
        self.origins = {f"http://{h}" for h in self.hosts}

    def _valid(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(str(value).encode(), self.token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if headers.get("host", "").lower() not in self.hosts:
            await self._refuse(send, 403, "web.bad_host")
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        auth = headers.get("authorization", "")
        cookies = _cookies(headers.get("cookie", ""))
        from_query = self._valid(query.get("token"))
        if not (
            from_query
            or self._valid(cookies.get(cookie_name(self.port)))
            or (auth.lower().startswith("token ") and self._valid(auth[6:].strip()))
        ):
            await self._refuse(send, 403, "web.no_token")
            return
        method = scope["method"]
        if method not in SAFE_METHODS and not self._same_origin(headers):
            await self._refuse(send, 403, "web.cross_origin")
            return
        if from_query and method == "GET":
            # Into the cookie, out of the address bar (and of the history and bookmarks).
            rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
            await self._redirect(send, scope["path"] + (f"?{rest}" if rest else ""))
            return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            # Read it to the end first: a client cut off mid-send sees a broken pipe, not the
            # message (a page shows "the paste is too large", the file stays as it was).
            more = True
            while more:
                message = await receive()
                more = message.get("more_body", False) and message["type"] == "http.request"
            await self._refuse(send, 413, "web.too_large", limit=MAX_BODY // (1024 * 1024))
            return
        static = scope["path"].startswith("/static/")
        await self.app(scope, _capped(receive), _with_headers(send, static))

    def _same_origin(self, headers: dict[str, str]) -> bool:
        origin = headers.get("origin")
        if origin is None and headers.get("referer"):
            parts = urlsplit(headers["referer"])
            origin = f"{parts.scheme}://{parts.netloc}"
        return origin is not None and origin.lower() in self.origins

    async def _redirect(self, send: Send, location: str) -> None:
        cookie = f"{cookie_name(self.port)}={self.token}; Path=/; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1")),
                    (b"set-cookie", cookie.encode("latin-1")),
                    (b"content-length", b"0"),
                    *HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    async def _refuse(self, send: Send, status: int, key: str, **params: Any) -> None:
        body = json.dumps(
            {"error": msg(key, self.lang, **params), "status": status}, ensure_ascii=False
        ).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    *HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _cookies(raw: str) -> dict[str, str]:
    out = {}
    for part in raw.split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            out[name] = value
    return out


class BodyTooLarge(Exception):
    """A request body past MAX_BODY (sent without a Content-Length)."""


def _capped(receive: Receive) -> Receive:
    seen = 0

    async def wrapped() -> dict[str, Any]:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:
                raise BodyTooLarge()
        return message

    return wrapped


def _with_headers(send: Send, static: bool) -> Send:
    # Pages and answers are never cached (they hold the candidate's code); the bundled assets,
    # whose URLs carry attnkata's version, are.
    cache = b"private, max-age=86400" if static else b"no-store"

    async def wrapped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            extra = [*HEADERS, (b"cache-control", cache)]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return wrapped
