"""Table pictures for a diagnosis (`Diagnostic.data["pictures"]`, drawn by cli/render.py and
checker/html.py): a caption, column headers, rows of cells, the rows to mark and the cells
that differ from the contract. Texts are {"en": ..., "zh": ...} or plain strings."""

from __future__ import annotations

from typing import Any

ROWS_SHOWN = 12


def table(
    caption: dict[str, str],
    columns: list[dict[str, str]],
    rows: list[list[Any]],
    differs: list[list[int]],
    limit: int = ROWS_SHOWN,
) -> dict[str, Any]:
    """One picture: at most `limit` rows; `differs` holds [row, column] cells, and the rows
    that hold one are marked."""
    kept = [c for c in differs if c[0] < limit]
    return {
        "caption": caption,
        "columns": columns,
        "rows": rows[:limit],
        "marked": sorted({r for r, _ in kept}),
        "differs": kept,
    }
