"""Statements rendered in the terminal: rich's Markdown, with table cells that fold.

rich crops a table cell's word that is wider than its column (a signature such as
`GroupedQueryAttention(d_model, ...)` at 80 columns loses its end); folding keeps every
character, and CJK text (no spaces to wrap at) folds by character."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Markdown, MarkdownElement, TableElement


class _FoldingTable(TableElement):
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = ([self.header.row] if self.header and self.header.row else []) + (self.body.rows if self.body else [])
        for row in rows:
            for cell in row.cells:
                cell.content.overflow = "fold"
        yield from super().__rich_console__(console, options)


class Statement(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {**Markdown.elements, "table_open": _FoldingTable}
