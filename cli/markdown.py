"""Statements rendered in the terminal: rich's Markdown, with table cells that fold, and a cache
of the rendered page.

rich crops a table cell's word that is wider than its column (a signature such as
`GroupedQueryAttention(d_model, ...)` at 80 columns loses its end); folding keeps every
character, and CJK text (no spaces to wrap at) folds by character.

rich.markdown needs markdown-it and pygments (~70 ms of imports): a statement is rendered once
per (text, language, width, colours) and read back afterwards, as man's catman pages are, so
`kata show` starts as fast as the commands that print a table. rich.markdown is imported only
to render."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from rich.console import Console


@cache
def statement_class() -> type:
    """rich's Markdown with folding table cells (built on first use: see the module docstring)."""
    from rich.markdown import Markdown, TableElement

    class FoldingTable(TableElement):
        def __rich_console__(self, console: Console, options: Any) -> Any:
            rows = ([self.header.row] if self.header and self.header.row else []) + (
                self.body.rows if self.body else []
            )
            for row in rows:
                for cell in row.cells:
                    cell.content.overflow = "fold"
            yield from super().__rich_console__(console, options)

    class Statement(Markdown):
        elements = {**Markdown.elements, "table_open": FoldingTable}  # noqa: RUF012 - rich's own layout

    return Statement


def render(text: str) -> Any:
    """A statement as a rich renderable."""
    return statement_class()(text)


def print_statement(console: Console, kata_id: str, lang: str, text: str) -> None:
    """Print a statement, from the cache when this exact page was rendered before."""
    import zlib

    from attnkata.checker.store import data_dir
    from attnkata.checker.version import __version__

    key = f"{__version__}|{lang}|{console.width}|{console.color_system}|{console.is_terminal}|{len(text)}"
    cached = data_dir() / "rendered" / f"{kata_id}-{zlib.crc32((key + text).encode()):08x}.txt"
    try:
        console.file.write(cached.read_text(encoding="utf-8"))
        return
    except (OSError, UnicodeDecodeError):
        pass
    with console.capture() as capture:
        console.print(render(text))
    rendered = capture.get()
    console.file.write(rendered)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        tmp.write_text(rendered, encoding="utf-8")
        os.replace(tmp, cached)  # never a half-written page for a concurrent `kata show`
    except OSError:
        pass  # a read-only data dir only costs the speed-up
