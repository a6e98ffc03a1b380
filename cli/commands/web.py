"""`kata web`: the browser front end (practice, mock interviews, the instructor's class report).
A thin typer layer: the web stack (attnkata[web]) is imported only when this command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from attnkata.checker.errors import UsageError
from attnkata.cli.options import LangOption, resolve_lang


def web(
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            help="Port on 127.0.0.1 (default: 8370, or the next free one).",
            show_default=False,
        ),
    ] = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL without opening a browser.")
    ] = False,
    set_dir: Annotated[
        Path | None,
        typer.Option(
            "--set",
            help="A problem set (kata set create) for the instructor page.",
            show_default=False,
        ),
    ] = None,
    grades: Annotated[
        Path | None,
        typer.Option(
            "--grades",
            help="Its results folder (kata set grade) for the instructor page.",
            show_default=False,
        ),
    ] = None,
    lang: LangOption = None,
) -> None:
    """Practise and sit mock interviews in the browser (a local server on 127.0.0.1 with a
    token in its URL; Ctrl-C stops it)."""
    lang = resolve_lang(lang)
    if port is not None and not 0 <= port <= 65535:
        raise UsageError("--port must be between 0 and 65535")
    try:
        from attnkata.cli.web.server import serve
    except ImportError as exc:
        raise UsageError(
            f"the web front end needs packages that are not installed ({exc.name})",
            'pip install "attnkata[web]"',
        ) from None
    serve(port=port, open_browser=not no_browser, lang=lang, set_dir=set_dir, grades_dir=grades)


def register(app: typer.Typer) -> None:
    app.command()(web)
