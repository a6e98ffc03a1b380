"""The spinner shown on a terminal while a check runs: the current test and the time used
against the limits. Never used on a pipe or with --json (the caller decides)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from attnkata.checker.messages import msg


class _Line:
    """Rendered on every refresh, so the clock moves while one slow test runs."""

    def __init__(self, owner: CheckProgress) -> None:
        self.owner = owner

    def __rich__(self) -> Text:
        o = self.owner
        current = msg("progress.diagnosis", o.lang) if o.current == "diagnosis" else o.current
        text = Text(f"{msg('progress.checking', o.lang)} {current}  ")
        text.append(f"{time.monotonic() - o.t0:.1f}s", style="bold")
        text.append(
            "  (" + msg("progress.limit", o.lang, call=o.call, total=o.total) + ")", style="dim"
        )
        return text


class CheckProgress:
    def __init__(
        self, console: Console, call_timeout: float, total_timeout: float, lang: str = "en"
    ) -> None:
        self.call, self.total, self.lang = call_timeout, total_timeout, lang
        self.current = "…"
        self.t0 = time.monotonic()
        self._live = Live(
            Spinner("dots", text=_Line(self)), console=console, refresh_per_second=8, transient=True
        )

    def update(self, test: str) -> None:
        self.current = test

    def __enter__(self) -> CheckProgress:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)
