"""Rich consoles: colour on a terminal, plain text when piped; errors on stderr."""

from __future__ import annotations

import json
import locale
import os
import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.segment import Segment

from attnkata.checker.textsafe import clean, json_text


class SafeConsole(Console):
    """A Console that never writes a control character it did not make itself: the text of
    every segment (a candidate's printed output, exception text, file name) is cleaned
    before rich adds its own colour codes, so `ESC[2J`, a `\r` that overwrites the verdict
    or an OSC 52 clipboard write in candidate text never reaches the terminal. rich's own
    control segments (cursor movement of a live display) pass as they are."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            seg if seg.control else Segment(clean(seg.text), seg.style, seg.control)
            for seg in buffer
        )

    def on_broken_pipe(self) -> None:
        """The reader went away (`kata check ... | head`): what was left to print is dropped and
        the command goes on to its own exit code. rich's default exits 1, turning a pass read
        through `head` into a failure."""
        if not self.quiet:
            drop_output(self.file)
            self.quiet = True


def drop_output(stream: Any) -> None:
    """Point a stream whose reader has gone at /dev/null: later writes and the flush at exit
    then succeed quietly instead of raising BrokenPipeError."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    except (OSError, ValueError, AttributeError):  # not a real descriptor (a test's buffer)
        pass
    finally:
        os.close(devnull)


# No emoji codes: ":name:" in a candidate's code or a message must print as written (and the
# emoji table costs ~3 ms to load).
out = SafeConsole(highlight=False, soft_wrap=False, emoji=False)
err = SafeConsole(stderr=True, highlight=False, emoji=False)


_warned: set[str] = set()


def _warn_once(text: str) -> None:
    if text not in _warned:
        _warned.add(text)
        err.print(f"warning: {text}", markup=False, highlight=False)


def default_lang() -> str:
    """KATA_LANG, else the locale: Chinese for zh_*, English otherwise."""
    env = os.environ.get("KATA_LANG")
    if env:
        if env.lower().startswith("zh"):
            return "zh"
        if not env.lower().startswith("en"):
            _warn_once(
                f"KATA_LANG={env!r} is not a language attnkata speaks (en, zh): using English"
            )
        return "en"
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    loc = locale.getlocale()[0] or ""
    return "zh" if loc.lower().startswith("zh") else "en"


def print_json(data: Any) -> None:
    """Write JSON to stdout and nothing else (for --json). JSON escapes C0 controls itself;
    DEL and C1 (`\\x9b`, a CSI to some terminals) are escaped too: the same data."""
    write_json_line(json.dumps(data, ensure_ascii=False, indent=2))


def write_json_line(text: str) -> None:
    """One JSON document on stdout, cleaned (json_text) and flushed."""
    write_text(json_text(text) + "\n")


def write_text(text: str) -> None:
    """Plain text on stdout, already cleaned by the caller, flushed; a closed pipe is no error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        drop_output(sys.stdout)
