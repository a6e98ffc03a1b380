"""`kata web`: bind 127.0.0.1, make the token, print the URL (and open it), serve until Ctrl-C,
then end the grading process and every sandboxed process it started."""

from __future__ import annotations

import errno
import secrets
import socket
import sys
import threading
import webbrowser
from pathlib import Path

from attnkata.checker.errors import UsageError
from attnkata.checker.messages import msg
from attnkata.checker.store import data_dir
from attnkata.cli.web.app import Config, build
from attnkata.cli.web.grader import Grader

DEFAULT_PORT = 8370  # tried first, then the next nine, then any free port


def bind(port: int | None) -> socket.socket:
    """A listening socket on 127.0.0.1 only: never another interface."""
    tries = [port] if port is not None else [*range(DEFAULT_PORT, DEFAULT_PORT + 10), 0]
    for p in tries:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", p))
        except OSError as exc:
            sock.close()
            if port is not None or exc.errno != errno.EADDRINUSE:
                raise UsageError(
                    f"cannot listen on 127.0.0.1:{p}: {exc.strerror}", "try another --port"
                ) from None
            continue
        sock.listen(128)
        return sock
    raise UsageError("no free port on 127.0.0.1", "pass --port N")


def serve(
    *,
    port: int | None,
    open_browser: bool,
    lang: str,
    set_dir: Path | None = None,
    grades_dir: Path | None = None,
) -> None:
    import uvicorn

    if (set_dir is None) != (grades_dir is None):
        raise UsageError("--set and --grades go together", "kata web --set SETDIR --grades DIR")
    if set_dir is not None and grades_dir is not None:
        from attnkata.checker.sets import report

        report.load(set_dir, grades_dir)  # a wrong folder is said now, not on the page
    sock = bind(port)
    actual = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    url = f"http://127.0.0.1:{actual}/?token={token}"
    config = Config(
        token=token,
        port=actual,
        lang=lang,
        grader=Grader(data_dir() / "web" / f"grader-{actual}.log"),
        set_dir=set_dir,
        grades_dir=grades_dir,
    )

    def ready() -> None:
        print(msg("web.serving", lang, url=url), flush=True)
        if config.instructor:
            print(
                msg("web.serving_instructor", lang, url=url.replace("/?", "/instructor?")),
                flush=True,
            )
        print(msg("web.stop_hint", lang), flush=True)
        if open_browser:
            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    config.on_ready = ready
    server = uvicorn.Server(
        uvicorn.Config(
            build(config),
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=3,
            access_log=False,
        )
    )
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    print(msg("web.stopped", lang), file=sys.stderr, flush=True)
